"""Session actions (rename, delete, prune, undo, trash, export, statistics) on the main screen.

`register_actions()` (called by the app) registers one `ActionSpec` per action
(`hermes_tui.app.actions`). Each handler runs on the event loop and only pushes a dialog; every
store call happens in a thread worker of that dialog. Writing actions refuse up front on a store
opened read-only, and act on exactly the session the user has selected (`target_session`).

Shared pieces for the dialogs live here too: `ActionDialog` (a modal with a status line) and
`LockWatch`, which shows "waiting for the write lock… (attempt N)" while a write worker retries
and lets the user abandon the wait.

Delete and prune move what they remove to the store's trash (`SessionDB.trash_sessions`); each
entry they write is remembered per app (`remember_trash_entry`), and `u` restores the last one.
"""

from __future__ import annotations

import threading
import weakref
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from rich.text import Text
from textual.app import App
from textual.binding import Binding, BindingType
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Checkbox, RadioButton, Static

from hermes_tui.app import actions
from hermes_tui.app.actions import ActionSpec
from hermes_tui.app.messages import SessionsChanged
from hermes_tui.safe_text import inert

if TYPE_CHECKING:
    from collections.abc import Iterator

    from hermes_tui.app.screens.main import MainScreen
    from hermes_tui.state import SessionDB

R = TypeVar("R")

READ_ONLY_MESSAGE = "This database was opened read-only: {what} refused, nothing was written."

#: Trash entries written by this app's deletes and prunes, oldest first (`u` takes the last).
_UNDO: weakref.WeakKeyDictionary[App[Any], list[str]] = weakref.WeakKeyDictionary()
#: Apps with a restore running (a second `u` meanwhile would restore the entry before it).
_UNDOING: weakref.WeakSet[App[Any]] = weakref.WeakSet()


def remember_trash_entry(app: App[Any], entry_id: str | None) -> None:
    """A delete or prune wrote `entry_id`: `u` will restore it (the newest first)."""
    if entry_id:
        _UNDO.setdefault(app, []).append(entry_id)


def undo_entries(app: App[Any]) -> list[str]:
    """The entries `u` can still restore in this app, oldest first (the list itself)."""
    return _UNDO.setdefault(app, [])


def plural(n: int, word: str) -> str:
    """``1 session``, ``12 sessions``."""
    return f"{n:,} {word}" if n == 1 else f"{n:,} {word}s"


def restore_summary(result: dict[str, Any]) -> tuple[str, list[str]]:
    """What a `restore_trash` result says: one line, then one line per session that did not
    come back as it was (conflicts, cleared titles, roots). Ids are the store's; titles are not
    shown here, so nothing needs sanitizing beyond the caller's `Text`."""
    line = f"Restored {plural(result['restored'], 'session')} ({plural(result['messages'], 'message')})"
    if result["conflicts"]:
        line += f", {plural(result['conflicts'], 'conflict')}: kept out, live data untouched"
    details: list[str] = []
    for item in result.get("sessions") or []:
        if item["status"] == "conflict":
            details.append(f"{item['id']}: conflict: {item.get('reason') or ''}")
        elif item["status"] == "present":
            details.append(f"{item['id']}: {item.get('reason') or 'already present'}")
        for note in item.get("notes") or []:
            details.append(f"{item['id']}: {note}")
    return line, details


class WaitAbandoned(BaseException):  # noqa: N818 - a control-flow signal, not an error
    """Raised from the lock-wait hook to stop retrying (the store suppresses `Exception` only)."""


def error_text(exc: BaseException) -> str:
    """A one-line, human readable error."""
    return f"{type(exc).__name__}: {exc}" if not str(exc).startswith(type(exc).__name__) else str(exc)


def unique_path(path: Path) -> Path:
    """``path`` itself when free, else ``name-2.ext``, ``name-3.ext``… (never overwrites)."""
    if not path.exists():
        return path
    n = 2
    while True:
        candidate = path.with_name(f"{path.stem}-{n}{path.suffix}")
        if not candidate.exists():
            return candidate
        n += 1


class MarkedCheckbox(Checkbox):
    """A checkbox whose state reads without colour: ``[x]`` ticked, ``[ ]`` not.

    Textual's toggle draws the same "X" either way and tells the states apart by colour only.
    """

    MARKS: ClassVar[tuple[str, str]] = ("[ ]", "[x]")

    @property
    def _button(self) -> Content:
        return Content.assemble((self.MARKS[bool(self.value)], self.get_visual_style("toggle--button")))


class MarkedRadioButton(RadioButton):
    """A radio button whose state reads without colour: ``(•)`` chosen, ``( )`` not."""

    MARKS: ClassVar[tuple[str, str]] = ("( )", "(•)")

    @property
    def _button(self) -> Content:
        return Content.assemble((self.MARKS[bool(self.value)], self.get_visual_style("toggle--button")))


class ActionDialog(ModalScreen[R]):
    """A centred modal whose body is `#dialog`; `status()` shows plain `Text` under it."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "close", "Close", show=False)]

    def __init__(self, main: MainScreen, db: SessionDB) -> None:
        super().__init__()
        self.main = main
        self.db = db
        self.cancel_event = threading.Event()
        self.busy = False

    def status(self, text: str | Text, style: str = "") -> None:
        """Show a line in `#status` (agent text must come in as `Text`; never markup)."""
        shown = text if isinstance(text, Text) else Text(text, style=style)
        self.query_one("#status", Static).update(shown)

    def action_close(self) -> None:
        if self.busy:
            self.cancel_event.set()
            self.status("cancelling after the current step…")
            return
        self.dismiss(None)  # type: ignore[arg-type]

    # ------------------------------------------------------------------ lock waiting
    def show_waiting(self, attempt: int, seconds: float) -> None:
        """On the loop: the write worker is waiting for another process's write lock."""
        self.add_class("-waiting")
        self.status(f"waiting for the write lock… (attempt {attempt}, {seconds:.1f} s)", style="bold")

    def clear_waiting(self) -> None:
        self.remove_class("-waiting")

    @contextmanager
    def lock_watch(self) -> Iterator[None]:
        """In a write worker: report lock waits to the dialog; Cancel abandons the wait."""
        app = self.app

        def hook(attempt: int, seconds: float) -> None:
            app.call_from_thread(self.show_waiting, attempt, seconds)
            if self.cancel_event.is_set():
                raise WaitAbandoned

        previous = self.db.lock_wait_hook
        self.db.lock_wait_hook = hook
        try:
            yield
        finally:
            self.db.lock_wait_hook = previous
            app.call_from_thread(self.clear_waiting)

    def changed(self, ids: tuple[str, ...] = ()) -> None:
        """Tell the main screen the store changed (it drops caches and re-queries)."""
        self.main.post_message(SessionsChanged(ids))


# ---------------------------------------------------------------------- handlers
def refuse_if_read_only(screen: MainScreen, what: str) -> bool:
    """Notify and return True when the open store is read-only (nothing is written)."""
    db = screen.db
    if db is not None and db.read_only:
        screen.notify(
            READ_ONLY_MESSAGE.format(what=what), title="Read-only", severity="warning", markup=False
        )
        return True
    return False


def target_session(screen: MainScreen) -> str | None:
    """The one session an action applies to: exactly the row the user has selected.

    With the list focused it is the row under the cursor. The transcript follows the cursor
    only after a debounce and a load, so `selected_session_id` (transcript first) could still
    name the previous row: D pressed right after a cursor move deleted the wrong session.
    From the transcript, lineage or search panes it is the session the transcript shows.
    """
    sessions = screen.session_list
    if screen.focused is sessions:
        return sessions.selected_id
    return screen.selected_session_id


def _need_session(screen: MainScreen) -> str | None:
    sid = target_session(screen)
    if sid is None:
        screen.notify("No session is selected.", severity="warning")
    return sid


def rename(screen: MainScreen) -> None:
    if refuse_if_read_only(screen, "rename"):
        return
    sid = _need_session(screen)
    if sid is None or screen.db is None:
        return
    from hermes_tui.app.screens.rename import RenameDialog

    def done(title: str | None) -> None:
        if title is None:
            return
        screen.notify(
            inert(f"Renamed {sid} to {title!r}" if title else f"Cleared the title of {sid}", newlines=False),
            title="Renamed",
            markup=False,
        )

    screen.app.push_screen(RenameDialog(screen, screen.db, sid), done)


def delete(screen: MainScreen) -> None:
    """The list's selection when there is one, else the session under the cursor."""
    if refuse_if_read_only(screen, "delete"):
        return
    if screen.db is None:
        return
    from hermes_tui.app.screens.delete import DeleteDialog

    sessions = screen.session_list
    selected = sessions.selected_ids
    if selected:
        ids, from_selection = selected, True
    else:
        sid = _need_session(screen)
        if sid is None:
            return
        ids, from_selection = [sid], False

    def done(result: dict[str, Any] | None) -> None:
        if result is not None and from_selection:
            sessions.clear_selection()

    screen.app.push_screen(DeleteDialog(screen, screen.db, ids, selection=from_selection), done)


def prune(screen: MainScreen) -> None:
    if refuse_if_read_only(screen, "prune"):
        return
    if screen.db is None:
        return
    from hermes_tui.app.screens.prune import PruneDialog

    screen.app.push_screen(PruneDialog(screen, screen.db))


def undo(screen: MainScreen) -> None:
    """`u`: restore the last trash entry this app's delete or prune wrote, in a worker."""
    if refuse_if_read_only(screen, "undo"):
        return
    db = screen.db
    if db is None:
        return
    pending = undo_entries(screen.app)
    if screen.app in _UNDOING:
        screen.notify("An undo is already running.", severity="warning")
        return
    if not pending:
        screen.notify("Nothing to undo here. T lists the trash.", title="Undo", severity="warning")
        return
    entry = pending.pop()
    _UNDOING.add(screen.app)
    screen.notify(f"Restoring trash entry {entry}…", title="Undo", timeout=2, markup=False)
    app = screen.app

    def run() -> None:
        try:
            result = db.restore_trash(entry)
        except Exception as exc:
            app.call_from_thread(undone, None, error_text(exc))
            return
        app.call_from_thread(undone, result, None)

    def undone(result: dict[str, Any] | None, error: str | None) -> None:
        _UNDOING.discard(app)
        if result is None:
            pending.append(entry)  # nothing came back: u can try again
            screen.notify(
                inert(f"Undo failed: {error}"), title="Undo", severity="error", markup=False, timeout=8
            )
            return
        line, details = restore_summary(result)
        shown = details[:5] + ([f"… and {len(details) - 5} more (T shows them)"] if len(details) > 5 else [])
        body = "\n".join([line + ".", *shown])
        screen.post_message(SessionsChanged(tuple(r["id"] for r in result["sessions"])))
        screen.notify(
            inert(body),
            title="Undone",
            severity="warning" if result["conflicts"] else "information",
            markup=False,
            timeout=8 if details else 5,
        )

    screen.run_worker(run, thread=True, exit_on_error=False, group="undo", description="undo: restore")


def trash(screen: MainScreen) -> None:
    """`T`: the trash screen (listing reads files only; restore and empty refuse read-only)."""
    if screen.db is None:
        return
    from hermes_tui.app.screens.trash import TrashScreen

    screen.app.push_screen(TrashScreen(screen, screen.db))


def export(screen: MainScreen) -> None:
    """Export only reads the store (it writes a file), so it also works read-only."""
    sid = _need_session(screen)
    if sid is None or screen.db is None:
        return
    from hermes_tui.app.screens.export import ExportDialog

    screen.app.push_screen(ExportDialog(screen, screen.db, sid))


def stats(screen: MainScreen) -> None:
    """Statistics only read; its "Optimize storage" refuses on a read-only store."""
    if screen.db is None:
        return
    from hermes_tui.app.screens.stats import StatsScreen

    screen.app.push_screen(StatsScreen(screen, screen.db))


#: Off until the main-screen snapshots (tests/snapshots/test_snapshots.py) are regenerated with
#: the longer footer; the keys are listed in help (?) and in the command palette either way.
SHOW_IN_FOOTER = False

SPECS: tuple[ActionSpec, ...] = (
    ActionSpec(
        "rename",
        "r",
        "Rename",
        rename,
        show=SHOW_IN_FOOTER,
        palette="Rename the selected session",
        help="set or clear its title (validated as you type)",
    ),
    ActionSpec(
        "delete",
        "D",
        "Delete",
        delete,
        show=SHOW_IN_FOOTER,
        palette="Delete the selected session(s)",
        help="shows what cascades and what is orphaned first",
    ),
    ActionSpec(
        "prune",
        "P",
        "Prune",
        prune,
        show=SHOW_IN_FOOTER,
        palette="Prune old ended sessions",
        help="filters with a live preview before anything is deleted",
    ),
    ActionSpec(
        "undo",
        "u",
        "Undo",
        undo,
        show=SHOW_IN_FOOTER,
        palette="Undo the last delete or prune",
        help="restores its sessions from the trash",
    ),
    ActionSpec(
        "trash",
        "T",
        "Trash",
        trash,
        show=SHOW_IN_FOOTER,
        palette="Trash",
        help="deleted and pruned sessions: restore them, or empty the trash",
    ),
    ActionSpec(
        "export",
        "e",
        "Export",
        export,
        show=SHOW_IN_FOOTER,
        palette="Export the selected session",
        help="JSON, JSONL or Markdown: the session, its lineage or the list",
    ),
    ActionSpec(
        "stats",
        "S",
        "Stats",
        stats,
        show=SHOW_IN_FOOTER,
        palette="Statistics",
        help="usage by model and source, activity, costliest chains, store health",
    ),
)


def register_actions() -> None:
    """Register rename/delete/prune/undo/trash/export/stats (idempotent: a spec replaces its namesake).

    Called by the app before the main screen is built, which binds every registered key.
    """
    for spec in SPECS:
        actions.register(spec)


__all__ = [
    "ActionDialog",
    "WaitAbandoned",
    "error_text",
    "plural",
    "refuse_if_read_only",
    "register_actions",
    "remember_trash_entry",
    "restore_summary",
    "target_session",
    "undo_entries",
    "unique_path",
]
