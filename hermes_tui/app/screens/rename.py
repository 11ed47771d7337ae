"""RenameDialog: a title input validated on every keystroke by `SessionDB.check_title`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Input, Static
from textual.worker import get_current_worker

from hermes_tui.app.render import one_line
from hermes_tui.app.screens.dialog_base import GAVE_UP_WAITING, ActionDialog, error_text
from hermes_tui.state import TitleError

if TYPE_CHECKING:
    from hermes_tui.app.session_context import SessionContext
    from hermes_tui.state import SessionDB


#: The status when the title was taken between the check and the write: the check line (run
#: again) says by which session, so the status does not name it a second time.
TAKEN = "Not renamed, nothing was written: the title was taken meanwhile."


class RenameDialog(ActionDialog[str | None]):
    """Returns the new title ("" when cleared) after a successful write, else None."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "rename", "Rename: save the title", show=False),
        Binding("ctrl+s", "suggest", "Rename: suggest a numbered title", show=False, priority=True),
        Binding("escape", "close", "Rename: cancel", show=False),
    ]
    BUTTON_ACTIONS: ClassVar[dict[str, str]] = {"ok": "rename", "suggest": "suggest", "cancel": "close"}

    def __init__(self, context: SessionContext, db: SessionDB, session_id: str) -> None:
        super().__init__(context, db)
        self.session_id = session_id
        self.current: str | None = None
        self.preview: str | None = None
        self.last_check: dict[str, Any] | None = None
        self._loaded = False

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="rename"):
            yield Static(Text(f"Rename session {self.session_id}", style="bold"), id="dialog-title")
            yield Input(placeholder="title (empty clears it)", id="rename-input", select_on_focus=False)
            yield Static(Text(""), id="rename-check")
            with Vertical(id="dialog-keys"):
                yield Static(Text(""), id="status", classes="-empty")
                with Horizontal(id="buttons"):
                    yield Button("Rename (enter)", id="ok", variant="primary")
                    yield Button("Suggest (ctrl+s)", id="suggest")
                    yield Button("Cancel (esc)", id="cancel")

    def on_mount(self) -> None:
        self.query_one("#rename-input", Input).disabled = True
        self.load_worker()

    # ------------------------------------------------------------------ load
    @work(thread=True, exit_on_error=False, group="rename-load", description="load the title")
    def load_worker(self) -> None:
        try:
            row = self.db.get_session(self.session_id)
            rows = self.db.list_rows([self.session_id])
        except Exception as exc:
            self.app.call_from_thread(self.status, error_text(exc), "bold")
            return
        preview = rows[0].get("preview") if rows else None
        self.app.call_from_thread(self._loaded_title, (row or {}).get("title"), preview)

    def _loaded_title(self, title: str | None, preview: str | None) -> None:
        self.current, self.preview = title, preview
        field = self.query_one("#rename-input", Input)
        field.disabled = False
        field.value = title or ""
        field.cursor_position = len(field.value)
        field.focus()
        self._loaded = True
        self.check_worker(field.value)

    # ------------------------------------------------------------------ validation
    @on(Input.Changed, "#rename-input")
    def _changed(self, event: Input.Changed) -> None:
        event.stop()
        if self._loaded:
            self.check_worker(event.value)

    @work(thread=True, exclusive=True, exit_on_error=False, group="rename-check", description="check a title")
    def check_worker(self, text: str) -> None:
        worker = get_current_worker()
        try:
            result = self.db.check_title(self.session_id, text)
        except Exception as exc:
            result = {
                "ok": False,
                "title": None,
                "error": error_text(exc),
                "holder": None,
                "transfer_from": None,
                "released_from": None,
            }
        if not worker.is_cancelled:
            self.app.call_from_thread(self._show_check, text, result)

    def _show_check(self, text: str, result: dict[str, Any]) -> None:
        if self.query_one("#rename-input", Input).value != text:
            return  # a newer keystroke's check is on its way
        self.last_check = result
        shown = Text()
        if not result.get("ok"):
            shown.append("✗ ", style="bold")
            shown.append(one_line(result.get("error")) or "invalid title")
            self.set_class(True, "-invalid")
        else:
            self.set_class(False, "-invalid")
            title = result.get("title")
            if not title:
                shown.append("empty: the title will be cleared")
            else:
                shown.append("✓ will be saved as: ")
                shown.append(title, style="bold")
                if result.get("transfer_from"):
                    shown.append(
                        f"\ntitle moves over from compression ancestor {one_line(result['transfer_from'])}"
                    )
                if result.get("released_from"):
                    # Today's Hermes frees a title held by a session its lists never show (an
                    # ended empty one, or an archived Bot Chat): that session loses it.
                    shown.append(
                        f"\nthe title is released from session {one_line(result['released_from'])},"
                        " which Hermes' lists never show (its title is cleared)"
                    )
        self.query_one("#rename-check", Static).update(shown)
        self.query_one("#ok", Button).disabled = not result.get("ok")

    # ------------------------------------------------------------------ suggest
    def action_suggest(self) -> None:
        base = (
            self.query_one("#rename-input", Input).value.strip() or self.current or one_line(self.preview, 60)
        )
        if base:
            self.suggest_worker(base)
        else:
            self.status("nothing to base a suggestion on")

    @work(
        thread=True,
        exclusive=True,
        exit_on_error=False,
        group="rename-suggest",
        description="suggest a title",
    )
    def suggest_worker(self, base: str) -> None:
        try:
            title = self.db.get_next_title_in_lineage(base)
        except Exception as exc:
            self.app.call_from_thread(self.status, error_text(exc))
            return
        self.app.call_from_thread(self._suggested, title)

    def _suggested(self, title: str) -> None:
        field = self.query_one("#rename-input", Input)
        field.value = title
        field.cursor_position = len(title)

    # ------------------------------------------------------------------ apply
    @on(Input.Submitted, "#rename-input")
    def _apply(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_rename()

    def action_rename(self) -> None:
        """Enter (in the field or anywhere in the dialog) saves the title once it checks out."""
        if self.busy or not self._loaded:
            return
        if self.last_check is not None and not self.last_check.get("ok"):
            self.status("fix the title first", style="bold")
            return
        self.start_write("saving…", "ok")
        self.apply_worker(self.query_one("#rename-input", Input).value)

    @work(thread=True, exclusive=True, exit_on_error=False, group="rename-apply", description="rename")
    def apply_worker(self, text: str) -> None:
        refused: list[str] = []

        def write() -> tuple[bool, str] | None:
            try:
                ok = self.db.set_session_title(self.session_id, text.strip() or None)
            except TitleError as exc:
                # Taken since the check (the check line, run again, names the holder), or a
                # refusal in Hermes' words (the canonical Bot Chat keeps its name).
                refused.append(str(exc))
                return None
            return ok, self.db.get_session_title(self.session_id) or ""

        result, error = self.watched_write(write, gave_up=f"{GAVE_UP_WAITING}; nothing was written")
        if result is None:
            reason = refused[0] if refused else ""
            taken = not refused or "already in use" in reason
            self.app.call_from_thread(
                self._failed, error or (TAKEN if taken else f"Not renamed, nothing was written: {reason}")
            )
            return
        ok, title = result
        if not ok:
            self.app.call_from_thread(self._failed, f"session {self.session_id} no longer exists")
            return
        self.app.call_from_thread(self._done, title)

    def _failed(self, error: str) -> None:
        self.busy = False
        self.query_one("#ok", Button).disabled = False
        self.status(Text(error, style="bold"))
        self.check_worker(self.query_one("#rename-input", Input).value)

    def _done(self, title: str) -> None:
        self.busy = False
        self.changed((self.session_id,))
        self.dismiss(title)
