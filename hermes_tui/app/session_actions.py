"""Session actions (rename, delete, prune, undo, trash, export, statistics, usage) on the main
screen.

`register_actions()` (called by the app) registers one `ActionSpec` per action
(`hermes_tui.app.actions`). Each handler runs on the event loop and only pushes a dialog; every
store call happens in a thread worker of that dialog. Writing actions refuse up front on a store
opened read-only, and act on exactly the session the user has selected (`target_session`).

The dialogs' shared pieces (`ActionDialog`, lock-wait reporting) are in
`hermes_tui.app.screens.dialog_base`. Delete and prune move what they remove to the store's
trash (`SessionDB.trash_sessions`); each entry they write is remembered per app
(`hermes_tui.app.undo`), and `u` restores the last one.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

from textual.app import App

from hermes_tui.app import actions
from hermes_tui.app.actions import (
    ActionSpec,
    chosen_sessions,
    need_session,
    refuse_if_read_only,
    run_store_call,
    target_session,
)
from hermes_tui.app.flag_actions import FLAG_SPECS, undo_flag_change
from hermes_tui.app.messages import SessionsChanged
from hermes_tui.app.screens.delete import DeleteDialog
from hermes_tui.app.screens.dialog_base import READ_ONLY_MESSAGE
from hermes_tui.app.screens.export import ExportDialog
from hermes_tui.app.screens.fork import ForkDialog
from hermes_tui.app.screens.prune import PruneDialog
from hermes_tui.app.screens.rename import RenameDialog
from hermes_tui.app.screens.stats import StatsScreen
from hermes_tui.app.screens.trash import TrashScreen
from hermes_tui.app.screens.usage import open_usage
from hermes_tui.app.undo import (
    FlagChange,
    ForkMade,
    entry_store,
    remember_fork,
    restore_summary,
    undo_entries,
)
from hermes_tui.app.widgets.transcript_pane import Transcript
from hermes_tui.safe_text import inert
from hermes_tui.state import BUSY_REASON

if TYPE_CHECKING:
    from hermes_tui.app.screens.main import MainScreen
    from hermes_tui.state import SessionDB

#: Apps with a restore running (a second `u` meanwhile would restore the entry before it).
_UNDOING: weakref.WeakSet[App[Any]] = weakref.WeakSet()


# ---------------------------------------------------------------------- handlers
def rename(screen: MainScreen) -> None:
    if refuse_if_read_only(screen, "rename"):
        return
    sid = need_session(screen)
    if sid is None or screen.db is None:
        return

    def done(title: str | None) -> None:
        if title is None:
            return
        screen.notify(
            inert(f"Renamed {sid} to {title!r}" if title else f"Cleared the title of {sid}", newlines=False),
            title="Renamed",
            markup=False,
        )

    screen.app.push_screen(RenameDialog(screen.session_context, screen.db, sid), done)


def delete(screen: MainScreen) -> None:
    """The list's selection when there is one, else the session under the cursor."""
    if refuse_if_read_only(screen, "delete"):
        return
    if screen.db is None:
        return
    chosen = chosen_sessions(screen, "delete", "Delete")
    if chosen is None:
        return
    ids, from_selection = chosen
    sessions = screen.session_list

    def done(result: dict[str, Any] | None) -> None:
        if result is not None and from_selection:
            sessions.clear_selection()

    screen.app.push_screen(
        DeleteDialog(screen.session_context, screen.db, ids, selection=from_selection), done
    )


def prune(screen: MainScreen) -> None:
    if refuse_if_read_only(screen, "prune"):
        return
    if screen.db is None:
        return
    screen.app.push_screen(PruneDialog(screen.session_context, screen.db))


def undo(screen: MainScreen) -> None:
    """`u`: undo the last delete or prune (restore the trash entry it wrote) or archive/pin
    change (`flag_actions.undo_flag_change`) of this app, in a worker."""
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
    written_by = entry.db_path if isinstance(entry, FlagChange | ForkMade) else entry_store(screen.app, entry)
    owner = screen.scope.db_at(written_by) if written_by is not None else None
    if owner is not None:  # the store that wrote it (over several profiles, maybe not the row's)
        db = owner
    _UNDOING.add(screen.app)
    if isinstance(entry, FlagChange):
        change = entry

        def flags_undone(error: str | None) -> None:
            _UNDOING.discard(screen.app)
            if error is not None:
                pending.append(change)  # nothing was set back: u can try again
                screen.notify(
                    inert(f"Undo failed: {error}"), title="Undo", severity="error", markup=False, timeout=8
                )

        undo_flag_change(screen, db, change, flags_undone)
        return
    if isinstance(entry, ForkMade):
        _undo_fork(screen, db, entry, pending)
        return
    screen.notify(f"Restoring trash entry {entry}…", title="Undo", timeout=2, markup=False)
    app = screen.app

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

    run_store_call(screen, lambda: db.restore_trash(entry), undone, "undo", "undo: restore")


def _undo_fork(screen: MainScreen, db: SessionDB, fork: ForkMade, pending: list[Any]) -> None:
    """`u` after `B`: the fork goes to the trash, as a delete would move it (restorable from T)."""
    app = screen.app

    def undone(result: dict[str, Any] | None, error: str | None) -> None:
        _UNDOING.discard(app)
        if result is None or not result.get("deleted"):
            busy = result is not None and bool(result.get("guarded_ids"))
            if result is None or busy:
                pending.append(fork)  # nothing was removed: u can try again
            why = error or (BUSY_REASON if busy else f"session {fork.session_id} is already gone")
            screen.notify(
                inert(f"Undo failed: {why}"), title="Undo", severity="error", markup=False, timeout=8
            )
            return
        screen.post_message(SessionsChanged((fork.session_id,)))
        screen.notify(
            inert(f"Removed the fork {fork.session_id} (moved to the trash: T restores it)."),
            title="Undone",
            markup=False,
        )

    run_store_call(
        screen,
        lambda: db.trash_sessions([fork.session_id], what="delete", exclude_active_write_guards=True),
        undone,
        "undo",
        "undo: remove a fork",
    )


def fork(screen: MainScreen) -> None:
    """`B`: a new session continuing the open one from the transcript's current message (the
    highlighted one), as Hermes' `/branch` makes one; then the fork is selected and shown."""
    sid = screen.current_session
    profile = screen.current_profile  # (None: the one store)
    db = screen.db_for(profile)
    transcript = screen.query_one("#transcript", Transcript)
    message = transcript.current_message() if sid is not None else None
    if sid is None or db is None or message is None:
        screen.notify(
            "Open a session first: B forks it at the highlighted message.", title="Fork", severity="warning"
        )
        return
    if db.read_only:
        screen.notify(
            READ_ONLY_MESSAGE.format(what="fork"), title="Read-only", severity="warning", markup=False
        )
        return

    def done(new_id: str | None) -> None:
        if new_id is None:
            return
        remember_fork(screen.app, ForkMade(new_id, db.db_path))
        # The list is read again with the cursor kept on the fork, which opens (the dialog does
        # not post "sessions changed": that reload would keep the cursor on the source).
        screen.session_list.invalidate()
        screen.reload_order(keep=screen.row_key(profile, new_id))
        screen.open_session(new_id, profile=profile)
        screen.notify(
            inert(f"Forked {sid} at message #{message.id} into {new_id}. R resumes it in Hermes, u undoes."),
            title="Forked",
            markup=False,
            timeout=8,
        )

    screen.app.push_screen(ForkDialog(screen.session_context, db, sid, message.id), done)


def trash(screen: MainScreen) -> None:
    """`T`: the trash screen (listing reads files only; restore and empty refuse read-only)."""
    if screen.db is None:
        return
    screen.app.push_screen(TrashScreen(screen.session_context, screen.db))


def export(screen: MainScreen) -> None:
    """Export only reads the store (it writes a file), so it also works read-only."""
    sid = need_session(screen)
    if sid is None or screen.db is None:
        return
    screen.app.push_screen(ExportDialog(screen.session_context, screen.db, sid))


def stats(screen: MainScreen) -> None:
    """Statistics only read; its "Optimize storage" refuses on a read-only store."""
    if screen.db is None:
        return
    screen.app.push_screen(StatsScreen(screen.session_context, screen.db, lambda: open_usage(screen)))


def usage(screen: MainScreen) -> None:
    """Usage over time only reads, every open profile's store when several are open."""
    open_usage(screen)


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
        palette="Undo the last delete, prune, archive or pin",
        help="restores deleted sessions from the trash; sets an archive or pin back",
    ),
    ActionSpec(
        "fork",
        "B",
        "Fork",
        fork,
        show=SHOW_IN_FOOTER,
        palette="Fork the open session at the highlighted message",
        help="a new session continuing from the highlighted message (Hermes' /branch); u removes it",
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
    ActionSpec(
        "usage",
        "U",
        "Usage",
        usage,
        show=SHOW_IN_FOOTER,
        palette="Usage: cost and tokens over time",
        help="per day, week or month by model, source or profile; month to date; the check",
    ),
)


def register_actions() -> None:
    """Register rename/delete/prune/undo/trash/export/stats/usage and archive/unarchive/pin/unpin
    (idempotent: a spec replaces its namesake).

    Called by the app before the main screen is built, which binds every registered key.
    """
    actions.register_all((*SPECS, *FLAG_SPECS))


__all__ = [
    "SPECS",
    "refuse_if_read_only",
    "register_actions",
    "target_session",
]
