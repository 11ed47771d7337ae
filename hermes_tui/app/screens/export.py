"""ExportDialog: this session, its compression lineage, or every session matching the list's filter."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Input, Label, RadioSet, Static

from hermes_tui.app.screens.dialog_base import ActionDialog, error_text
from hermes_tui.app.widgets.marked import MarkedCheckbox, MarkedRadioButton
from hermes_tui.exporting import markdown_filename, to_json, to_jsonl, to_markdown, write_export
from hermes_tui.html_export import to_html

if TYPE_CHECKING:
    from hermes_tui.app.session_context import SessionContext
    from hermes_tui.state import SessionDB

SCOPES = (("session", "this session"), ("lineage", "its lineage"), ("filter", "all sessions in the list"))
FORMATS = ("json", "jsonl", "md", "html")
#: The HTML page for sharing: the CLI's `--redact` (`hermes_tui.redact`; README says what it
#: does not catch). The other formats are copies of the store, never redacted.
REDACT_LABEL = "redact: hide home paths, e-mail addresses and keys (html)"
#: Formats read by a person: the messages as Hermes shows them.
DISPLAY_FORMATS = ("md", "html")
#: HTML is one page per session (the CLI writes a folder for many).
HTML_ONE_PAGE = "HTML is one page per session: choose this session or its lineage"
HINT = "Enter or ctrl+s export · Tab next field · arrows/space choose · Esc cancel"


class ExportCancelled(Exception):  # noqa: N818 - raised to abandon a write, caught below
    """Esc during an export: raised between two sessions, so `write_export` removes its temp file."""


def cancellable(sessions: Iterable[dict[str, Any]], cancel: threading.Event) -> Iterator[dict[str, Any]]:
    """``sessions`` one by one, stopping with `ExportCancelled` once ``cancel`` is set."""
    for session in sessions:
        if cancel.is_set():
            raise ExportCancelled
        yield session
    if cancel.is_set():
        raise ExportCancelled


class ExportDialog(ActionDialog[Path | None]):
    """Writes through `hermes_tui.exporting.write_export`; an existing file needs "overwrite".

    Esc while exporting stops between two sessions and leaves no file (the write goes to a
    temp file that is removed).
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "ctrl+s", "export", "Export: write the file (Enter in the path too)", show=False, priority=True
        ),
        Binding("escape", "close", "Export: cancel, or stop a running export (no file left)", show=False),
    ]
    BUTTON_ACTIONS: ClassVar[dict[str, str]] = {"confirm": "export", "cancel": "close"}

    def __init__(self, context: SessionContext, db: SessionDB, session_id: str) -> None:
        super().__init__(context, db)
        self.session_id = session_id
        self.scope = "session"
        self.fmt = "json"
        self._path_edited = False

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="export"):
            yield Static(Text(f"Export — session {self.session_id}", style="bold"), id="dialog-title")
            with Horizontal(id="export-form"):
                with RadioSet(id="export-scope"):
                    for i, (key, label) in enumerate(SCOPES):
                        yield MarkedRadioButton(label, value=i == 0, name=key)
                with RadioSet(id="export-format"):
                    for i, fmt in enumerate(FORMATS):
                        yield MarkedRadioButton(fmt, value=i == 0, name=fmt)
            yield Label("path")
            yield Input(self.default_path(), id="export-path")
            yield MarkedCheckbox("overwrite an existing file", id="export-overwrite", compact=True)
            yield MarkedCheckbox(REDACT_LABEL, id="export-redact", compact=True, disabled=True)
            with Vertical(id="dialog-keys"):
                yield Static(Text(""), id="status", classes="-empty")
                yield Static(Text(HINT), id="hint")
                with Horizontal(id="buttons"):
                    yield Button("Export (ctrl+s)", id="confirm", variant="primary")
                    yield Button("Cancel (esc)", id="cancel")

    def on_mount(self) -> None:
        self.query_one("#export-path", Input).focus()

    def default_path(self) -> str:
        stem = markdown_filename({"id": self.session_id}).removesuffix(".md")
        name = {"session": stem, "lineage": f"{stem}-lineage", "filter": "hermes-sessions"}[self.scope]
        return f"~/{name}.{self.fmt}"

    @on(RadioSet.Changed)
    def _radio(self, event: RadioSet.Changed) -> None:
        event.stop()
        name = event.pressed.name or ""
        if event.radio_set.id == "export-scope":
            self.scope = name
        else:
            self.fmt = name
            self.query_one("#export-redact", MarkedCheckbox).disabled = name != "html"
        if not self._path_edited:
            field = self.query_one("#export-path", Input)
            field.value = self.default_path()
            self._path_edited = False

    @on(Input.Changed, "#export-path")
    def _path_changed(self, event: Input.Changed) -> None:
        event.stop()
        self._path_edited = event.value != self.default_path()

    @on(Input.Submitted, "#export-path")
    def _confirm(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_export()

    def action_export(self) -> None:
        """Enter in the path, ctrl+s anywhere, or the Export button."""
        if self.busy:
            return
        raw = self.query_one("#export-path", Input).value.strip()
        if not raw:
            self.status("enter a path", style="bold")
            return
        if self.fmt == "html" and self.scope == "filter":
            self.status(HTML_ONE_PAGE, style="bold")
            return
        self.start_write("exporting… (Esc stops, no file is left)")
        force = self.query_one("#export-overwrite", MarkedCheckbox).value
        redact = self.fmt == "html" and self.query_one("#export-redact", MarkedCheckbox).value
        self.export_worker(Path(raw).expanduser(), self.scope, self.fmt, force, redact)

    @work(thread=True, exclusive=True, exit_on_error=False, group="export", description="export sessions")
    def export_worker(self, path: Path, scope: str, fmt: str, force: bool, redact: bool = False) -> None:
        db = self.db
        try:
            if path.exists() and not force:
                raise FileExistsError(f"{path.name} exists: tick “overwrite” to replace it")
            display = fmt in DISPLAY_FORMATS  # read by a person: the messages Hermes shows
            if scope == "session":
                one = db.export_session(self.session_id, display)
                sessions: Iterable[dict[str, Any]] = [one] if one else []
            elif scope == "lineage":
                one = db.export_session_lineage(self.session_id, display)
                sessions = [one] if one else []
            else:
                flt, order = self.context.list_view()
                ids = list(db.session_order(flt, order).ids)
                sessions = (s for s in (db.export_session(i, display) for i in ids) if s)
            sessions = cancellable(sessions, self.cancel_event)
            if fmt == "json":
                content: str | Iterator[str] = to_json(sessions)
            elif fmt == "jsonl":
                content = to_jsonl(sessions)
            elif fmt == "html":
                # One session (the scope is checked above); redacted as `sessions export --redact`.
                content = (to_html(s, redact=redact) for s in sessions)
            else:
                content = (to_markdown(s) + "\n" for s in sessions)
            written = write_export(path, content, force=force)
        except ExportCancelled:
            self.app.call_from_thread(self._cancelled)
            return
        except Exception as exc:
            self.app.call_from_thread(self._failed, error_text(exc).replace(str(path.parent), "…"))
            return
        self.app.call_from_thread(self._done, written)

    def _cancelled(self) -> None:
        self.busy = False
        self.context.notify("Export cancelled: no file was written.", title="Export", markup=False)
        self.dismiss(None)

    def _failed(self, error: str) -> None:
        self.busy = False
        self.status(Text(error, style="bold"))

    def _done(self, path: Path) -> None:
        self.busy = False
        self.context.notify(f"Exported to {self.context.display_path(path)}", title="Exported", markup=False)
        self.dismiss(path)
