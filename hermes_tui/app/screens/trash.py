"""TrashScreen: the store's trash entries (what each delete and prune removed); restore or empty.

Entries are few (retention keeps 30 days), so a DataTable holds them all. An entry whose files
are damaged (cut short, edited, forged) is a row that says why: it cannot be restored and can be
emptied; a trash folder that was not read (a link) is named in the status line. Listing reads the
trash folder only; restoring writes the store and emptying removes files, so both refuse on a
store opened read-only, and both ask first: a restore shows what will come back, emptying says
that it is for good. Every store call runs in a thread worker; titles are agent text and go
through the sanitizer (`one_line`).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, DataTable, Static

from hermes_tui.app.render import clock_time, format_size, relative_time
from hermes_tui.app.screens.dialog_base import READ_ONLY_MESSAGE, ActionDialog, error_text, plural
from hermes_tui.app.undo import restore_summary, undo_entries
from hermes_tui.safe_text import inert, one_line

if TYPE_CHECKING:
    from hermes_tui.app.session_context import SessionContext
    from hermes_tui.state import SessionDB

#: Sessions listed by name in a restore confirmation; the count above is exact.
SHOWN_SESSIONS = 12
#: Statuses of entries that hold nothing to restore.
NOT_RESTORABLE = ("damaged", "incomplete")
HINT = "Enter restore · x empty this entry · X empty the whole trash · r reload · Esc close"


class ConfirmDialog(ModalScreen[bool]):
    """Yes or no over the trash screen: `KEY` (shown on the `BUTTON`) confirms, Esc declines.
    Each question is a subclass that binds its own key (`RestoreConfirm`, `EmptyConfirm`)."""

    BUTTON: ClassVar[str]
    KEY: ClassVar[str]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Each question binds its `KEY` (priority: it works from the buttons too) and Esc."""
        if "KEY" in cls.__dict__:
            confirm = Binding(cls.KEY, "confirm", cls.BUTTON, show=False, priority=True)
            cls.BINDINGS = [confirm, Binding("escape", "cancel", "Cancel", show=False)]
        super().__init_subclass__(**kwargs)

    def __init__(self, title: str, body: Text, *, danger: bool = False) -> None:
        super().__init__(classes="trash-confirm")
        self.title_text = title
        self.body = body
        self.button = self.BUTTON
        self.key = self.KEY
        self.danger = danger

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="confirm"):
            yield Static(Text(self.title_text, style="bold"), id="dialog-title")
            with VerticalScroll(id="dialog-body"):
                yield Static(self.body, id="confirm-body")
            with Horizontal(id="buttons"):
                yield Button(
                    f"{self.button} ({self.key})", id="confirm", variant="error" if self.danger else "primary"
                )
                yield Button("Cancel (esc)", id="cancel")

    def on_mount(self) -> None:
        self.query_one("#cancel", Button).focus()

    def action_confirm(self) -> None:
        self.dismiss(True)

    def action_cancel(self) -> None:
        self.dismiss(False)

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id == "confirm")


class RestoreConfirm(ConfirmDialog):
    """Restore an entry: y."""

    BUTTON = "Restore"
    KEY = "y"


class EmptyConfirm(ConfirmDialog):
    """Empty the trash: ctrl+d (a key not typed by chance)."""

    BUTTON = "Empty"
    KEY = "ctrl+d"


def entries_word(n: int) -> str:
    """``1 entry``, ``3 entries``."""
    return f"{n:,} entry" if n == 1 else f"{n:,} entries"


def entry_row(entry: dict[str, Any], now: float) -> tuple[Text, ...]:
    """One table row: when, what, sessions, messages, size, status, the first titles."""
    created = entry.get("created_at")
    when = f"{clock_time(created)} ({relative_time(created, now)})" if created else "—"
    titles = ", ".join(one_line(t, 30) for t in entry.get("titles") or [] if t)
    status = str(entry.get("status") or "—")
    if status == "damaged":
        return (
            Text(when),
            Text("—"),
            Text("—", justify="right"),
            Text("—", justify="right"),
            Text(format_size(int(entry.get("bytes") or 0)), justify="right"),
            Text(status, style="bold red"),
            Text(one_line(entry.get("reason"), 200), style="red", no_wrap=True, overflow="ellipsis"),
        )
    return (
        Text(when),
        Text(str(entry.get("what") or "—")),
        Text(f"{entry.get('sessions') or 0:,}", justify="right"),
        Text(f"{entry.get('messages') or 0:,}", justify="right"),
        Text(format_size(int(entry.get("bytes") or 0)), justify="right"),
        Text(status, style="bold" if status == "deleted" else ""),
        Text(titles or "(untitled)", no_wrap=True, overflow="ellipsis"),
    )


def restore_preview(entry: dict[str, Any]) -> Text:
    """What a restore of `entry` (a `trash_entry` manifest) brings back, before it runs."""
    deleted = entry.get("deleted_ids")
    sessions = entry.get("sessions") or []
    if isinstance(deleted, list):
        keep = set(deleted)
        sessions = [s for s in sessions if s.get("id") in keep]
    counts = entry.get("counts") or {}
    text = Text()
    what = entry.get("what") or "delete"
    text.append(f"From the {what} of {clock_time(entry.get('created_at'))} UTC: ", style="bold")
    text.append(
        f"{plural(len(sessions), 'session')}, {plural(int(counts.get('messages') or 0), 'message')}.\n"
    )
    if entry.get("status") == "interrupted":
        text.append("The delete was interrupted: sessions it never reached are still in the store.\n")
    for s in sessions[:SHOWN_SESSIONS]:
        text.append(f"  {one_line(s.get('id'), 40)}  ")
        title = one_line(s.get("title"), 60)
        text.append(title or "(untitled)", style="" if title else "dim")
        text.append("\n")
    if len(sessions) > SHOWN_SESSIONS:
        text.append(f"  … and {len(sessions) - SHOWN_SESSIONS:,} more\n", style="dim")
    text.append(
        "\nA session whose id exists again is not restored (a conflict); live data is never overwritten."
    )
    return text


class TrashScreen(ActionDialog[None]):
    """The trash of the open store: restore an entry (Enter) or empty one (x) or all (X)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Trash: close", show=False),
        Binding("x", "empty_one", "Trash: empty the highlighted entry", show=False),
        Binding("X", "empty_all", "Trash: empty the whole trash", show=False),
        Binding("r", "reload", "Trash: reload", show=False),
    ]

    def __init__(self, context: SessionContext, db: SessionDB) -> None:
        super().__init__(context, db)
        self.entries: list[dict[str, Any]] = []

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="trash"):
            yield Static(Text("Trash: deleted and pruned sessions", style="bold"), id="dialog-title")
            yield DataTable(id="trash-table", cursor_type="row", zebra_stripes=True)
            yield Static(Text(""), id="trash-result")
            yield Static(Text("reading the trash…"), id="status")
            yield Static(Text(HINT), id="hint")

    def on_mount(self) -> None:
        table = self.query_one("#trash-table", DataTable)
        table.add_columns("When (UTC)", "What", "Sessions", "Messages", "Size", "Status", "Sessions' titles")
        table.focus()
        self.load_worker()

    # ------------------------------------------------------------------ listing
    def action_reload(self) -> None:
        if not self.busy:
            self.load_worker()

    @work(thread=True, exclusive=True, exit_on_error=False, group="trash-list", description="list the trash")
    def load_worker(self) -> None:
        try:
            report = self.db.trash_report()
        except Exception as exc:
            self.app.call_from_thread(self.status, inert(error_text(exc)), "bold")
            return
        folders = [s for s in report["skipped"] if s["id"] is None]
        self.app.call_from_thread(self._show_entries, report["entries"], folders)

    def _show_entries(
        self, entries: list[dict[str, Any]], folders: list[dict[str, Any]] | None = None
    ) -> None:
        table = self.query_one("#trash-table", DataTable)
        keep = self.highlighted_id()
        self.entries = entries
        table.clear()
        now = time.time()  # entries carry the real clock's time (the store writes them)
        for entry in entries:
            table.add_row(*entry_row(entry, now), key=entry["id"])
        if keep is not None and any(e["id"] == keep for e in entries):
            table.move_cursor(row=table.get_row_index(keep))
        if not entries:
            line = "The trash is empty: nothing deleted or pruned is kept."
        else:
            total = sum(int(e.get("bytes") or 0) for e in entries)
            damaged = sum(e.get("status") == "damaged" for e in entries)
            line = f"{entries_word(len(entries))}, {format_size(total)}. Retention: 30 days."
            if damaged:
                line += f" {damaged:,} damaged: cannot be restored, x empties."
        for folder in folders or []:
            line += f" Not read: {one_line(folder.get('path'), 80)}: {one_line(folder.get('reason'), 120)}."
        self.status(line, "bold" if folders else "")

    def highlighted_id(self) -> str | None:
        table = self.query_one("#trash-table", DataTable)
        if not self.entries or table.cursor_row < 0 or table.cursor_row >= len(self.entries):
            return None
        return str(table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value)

    def _refuse(self, what: str) -> bool:
        if self.db.read_only:
            self.app.notify(
                READ_ONLY_MESSAGE.format(what=what), title="Read-only", severity="warning", markup=False
            )
            return True
        if self.busy:
            self.status("busy: wait for the current step (Esc stops a lock wait)", style="bold")
            return True
        return False

    # ------------------------------------------------------------------ restore
    @on(DataTable.RowSelected, "#trash-table")
    def _row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.action_restore()

    def action_restore(self) -> None:
        """Enter: show what the highlighted entry brings back, then restore it on confirmation."""
        entry_id = self.highlighted_id()
        if entry_id is None or self._refuse("restore"):
            return
        entry = next((e for e in self.entries if e["id"] == entry_id), {})
        if entry.get("status") in NOT_RESTORABLE:
            why = entry.get("reason") or "it has no manifest: nothing was deleted with it"
            self.status(f"Entry {entry_id} cannot be restored: {one_line(why, 200)}", "bold")
            return
        self.preview_worker(entry_id)

    @work(
        thread=True, exclusive=True, exit_on_error=False, group="trash-preview", description="read an entry"
    )
    def preview_worker(self, entry_id: str) -> None:
        try:
            entry = self.db.trash_entry(entry_id)
        except Exception as exc:
            self.app.call_from_thread(self.status, inert(error_text(exc)), "bold")
            return
        self.app.call_from_thread(self._confirm_restore, entry)

    def _confirm_restore(self, entry: dict[str, Any]) -> None:
        def answered(yes: bool | None) -> None:
            if yes:
                self.start_write("restoring…")
                self.restore_worker(entry["id"])

        self.app.push_screen(RestoreConfirm("Restore from the trash?", restore_preview(entry)), answered)

    @work(thread=True, exclusive=True, exit_on_error=False, group="trash-restore", description="restore")
    def restore_worker(self, entry_id: str) -> None:
        result, error = self.watched_write(lambda: self.db.restore_trash(entry_id))
        self.app.call_from_thread(self._restored, entry_id, result, error)

    def _restored(self, entry_id: str, result: dict[str, Any] | None, error: str | None) -> None:
        self.busy = False
        shown = self.query_one("#trash-result", Static)
        if result is None:
            shown.update(Text(inert(f"Restore failed: {error}. Nothing of this entry was overwritten.")))
            self.load_worker()
            return
        pending = undo_entries(self.app)
        if entry_id in pending:
            pending.remove(entry_id)  # `u` must not restore it a second time
        line, details = restore_summary(result)
        text = Text(line + ".", style="bold")
        for detail in details:
            text.append("\n  " + one_line(detail, 200), style="")
        shown.update(text)
        self.changed(tuple(r["id"] for r in result["sessions"]))
        self.load_worker()

    # ------------------------------------------------------------------ emptying
    def action_empty_one(self) -> None:
        entry_id = self.highlighted_id()
        if entry_id is None or self._refuse("emptying the trash"):
            return
        entry = next(e for e in self.entries if e["id"] == entry_id)
        body = Text()
        body.append(f"Trash entry {entry_id}: ", style="bold")
        if entry.get("status") == "damaged":
            body.append(f"damaged, {format_size(int(entry.get('bytes') or 0))}.\n")
        else:
            body.append(f"{plural(int(entry.get('sessions') or 0), 'session')}, ")
            body.append(
                f"{plural(int(entry.get('messages') or 0), 'message')}, "
                f"{format_size(int(entry.get('bytes') or 0))}.\n"
            )
        body.append("They can no longer be restored afterwards. The store itself is not touched.")
        self._confirm_empty("Empty this trash entry for good?", body, entry_id)

    def action_empty_all(self) -> None:
        if not self.entries or self._refuse("emptying the trash"):
            return
        sessions = sum(int(e.get("sessions") or 0) for e in self.entries)
        size = sum(int(e.get("bytes") or 0) for e in self.entries)
        body = Text()
        body.append(f"All {entries_word(len(self.entries))}: ", style="bold")
        body.append(f"{plural(sessions, 'session')}, {format_size(size)}.\n")
        body.append("None of them can be restored afterwards. The store itself is not touched.")
        self._confirm_empty("Empty the whole trash for good?", body, None)

    def _confirm_empty(self, title: str, body: Text, entry_id: str | None) -> None:
        def answered(yes: bool | None) -> None:
            if yes:
                self.busy = True
                self.status("emptying…")
                self.empty_worker(entry_id)

        self.app.push_screen(EmptyConfirm(title, body, danger=True), answered)

    @work(
        thread=True, exclusive=True, exit_on_error=False, group="trash-empty", description="empty the trash"
    )
    def empty_worker(self, entry_id: str | None) -> None:
        try:
            result = self.db.empty_trash(entry_id=entry_id)
        except Exception as exc:
            self.app.call_from_thread(self._emptied, None, error_text(exc))
            return
        self.app.call_from_thread(self._emptied, result, None)

    def _emptied(self, result: dict[str, Any] | None, error: str | None) -> None:
        self.busy = False
        shown = self.query_one("#trash-result", Static)
        if result is None:
            shown.update(Text(inert(f"Emptying failed: {error}")))
        else:
            gone = set(result["removed"])
            pending = undo_entries(self.app)
            pending[:] = [e for e in pending if e not in gone]
            removed = entries_word(len(result["removed"]))
            shown.update(Text(f"Removed {removed} of the trash ({format_size(result['bytes'])})."))
        self.load_worker()
