"""SVG snapshots of the action dialogs at 120×40 (fixed clock, theme and demo data).

The demo stamps `started_at`/`ended_at` with the build's wall clock, so the fixture below pins
them to each session's first/last message time (base-relative) for reproducible dates.
Review `snapshot_report.html` before any `--snapshot-update`.
"""

from __future__ import annotations

from pathlib import Path

import apsw
import pytest
from app._support import make_app, settle
from textual.pilot import Pilot
from textual.widgets import Input

from hermes_tui.state import SessionDB

SIZE = (120, 40)


@pytest.fixture
def pinned_db(demo_db: Path) -> Path:
    conn = apsw.Connection(str(demo_db))
    with conn:
        conn.execute(
            "UPDATE sessions SET started_at = COALESCE((SELECT MIN(m.timestamp) FROM messages m "
            "WHERE m.session_id = sessions.id), started_at)"
        )
        conn.execute(
            "UPDATE sessions SET ended_at = (SELECT MAX(m.timestamp) FROM messages m "
            "WHERE m.session_id = sessions.id) WHERE ended_at IS NOT NULL"
        )
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return demo_db


def _session(path: Path, title: str) -> str:
    with SessionDB(path, read_only=True, migrate=False) as db:
        row = db.get_session_by_title(title)
        assert row is not None
        return str(row["id"])


async def _open(pilot: Pilot[None], sid: str) -> None:
    await settle(pilot)
    pilot.app.screen.open_session(sid)  # type: ignore[attr-defined]
    await settle(pilot)
    pilot.app.screen.session_list.focus()  # type: ignore[attr-defined]
    await pilot.pause()


def test_rename_dialog_clash(snap_compare, pinned_db: Path) -> None:  # type: ignore[no-untyped-def]
    sid = _session(pinned_db, "Nightly backup report")

    async def run_before(pilot: Pilot[None]) -> None:
        await _open(pilot, sid)
        await pilot.press("r")
        await settle(pilot)
        pilot.app.screen.query_one("#rename-input", Input).value = "Kubernetes deploy rollback"
        await settle(pilot)

    assert snap_compare(make_app(pinned_db), terminal_size=SIZE, run_before=run_before)


def test_delete_confirmation(snap_compare, pinned_db: Path) -> None:  # type: ignore[no-untyped-def]
    sid = _session(pinned_db, "CI flakiness deep dive")

    async def run_before(pilot: Pilot[None]) -> None:
        await _open(pilot, sid)
        await pilot.press("D")
        await settle(pilot)

    assert snap_compare(make_app(pinned_db), terminal_size=SIZE, run_before=run_before)


def test_prune_preview(snap_compare, pinned_db: Path) -> None:  # type: ignore[no-untyped-def]
    async def run_before(pilot: Pilot[None]) -> None:
        await settle(pilot)
        await pilot.press("P")
        await settle(pilot)
        pilot.app.screen.query_one("#prune-days", Input).value = "1"
        await settle(pilot, rounds=3)

    assert snap_compare(make_app(pinned_db), terminal_size=SIZE, run_before=run_before)


def test_read_only_refusal(snap_compare, pinned_db: Path) -> None:  # type: ignore[no-untyped-def]
    async def run_before(pilot: Pilot[None]) -> None:
        await settle(pilot)
        await pilot.press("D")
        await settle(pilot)

    assert snap_compare(make_app(pinned_db, read_only=True), terminal_size=SIZE, run_before=run_before)


def test_stats_screen(snap_compare, pinned_db: Path) -> None:  # type: ignore[no-untyped-def]
    async def run_before(pilot: Pilot[None]) -> None:
        await settle(pilot)
        await pilot.press("S")
        await settle(pilot)

    assert snap_compare(make_app(pinned_db, read_only=True), terminal_size=SIZE, run_before=run_before)


async def _select_rows(pilot: Pilot[None]) -> None:
    """Rows 1-2 by space, 5-7 by a shift range; the toasts are cleared (they expire on a timer)."""
    await settle(pilot)
    pilot.app.screen.session_list.focus()  # type: ignore[attr-defined]
    await pilot.press("down", "space", "space", "down", "down", "shift+down", "shift+down")
    await settle(pilot)
    pilot.app.clear_notifications()
    await pilot.pause()


def test_list_selection(snap_compare, pinned_db: Path) -> None:  # type: ignore[no-untyped-def]
    assert snap_compare(make_app(pinned_db), terminal_size=SIZE, run_before=_select_rows)


def test_delete_many_confirmation(snap_compare, pinned_db: Path) -> None:  # type: ignore[no-untyped-def]
    async def run_before(pilot: Pilot[None]) -> None:
        await _select_rows(pilot)
        await pilot.press("D")
        await settle(pilot)

    assert snap_compare(make_app(pinned_db), terminal_size=SIZE, run_before=run_before)


def test_prune_excluded_list(snap_compare, pinned_db: Path) -> None:  # type: ignore[no-untyped-def]
    from app.test_prune_excluded import add_bulk

    add_bulk(pinned_db)

    async def run_before(pilot: Pilot[None]) -> None:
        await settle(pilot)
        await pilot.press("P")
        await settle(pilot)
        pilot.app.screen.query_one("#prune-days", Input).value = ""
        pilot.app.screen.query_one("#prune-title", Input).value = "bulk"
        await settle(pilot, rounds=3)

    assert snap_compare(make_app(pinned_db), terminal_size=SIZE, run_before=run_before)


def test_export_dialog(snap_compare, pinned_db: Path) -> None:  # type: ignore[no-untyped-def]
    sid = _session(pinned_db, "CI flakiness deep dive")

    async def run_before(pilot: Pilot[None]) -> None:
        await _open(pilot, sid)
        await pilot.press("e")
        await settle(pilot)

    assert snap_compare(make_app(pinned_db), terminal_size=SIZE, run_before=run_before)


def test_delete_progress_waiting_for_lock(snap_compare, pinned_db: Path) -> None:  # type: ignore[no-untyped-def]
    """The running state of a delete: the batch progress bar, and the status line while another
    process holds the write lock (the real-lock flow is tests/app/test_lock_wait.py; the state is
    set here directly so the picture is deterministic)."""
    sid = _session(pinned_db, "CI flakiness deep dive")

    async def run_before(pilot: Pilot[None]) -> None:
        from hermes_tui.app.screens.delete import DeleteDialog

        await _open(pilot, sid)
        await pilot.press("D")
        await settle(pilot)
        dialog = pilot.app.screen
        assert isinstance(dialog, DeleteDialog)
        from textual.widgets import Button

        dialog.busy = True  # what _confirm sets before the worker starts
        dialog.add_class("-running")
        dialog.query_one("#confirm", Button).disabled = True
        dialog._progress(3, 8)
        dialog.show_waiting(2, 1.4)
        await settle(pilot)

    assert snap_compare(make_app(pinned_db), terminal_size=SIZE, run_before=run_before)


def test_undo_toast_after_delete(snap_compare, pinned_db: Path) -> None:  # type: ignore[no-untyped-def]
    sid = _session(pinned_db, "Nightly backup report")

    async def run_before(pilot: Pilot[None]) -> None:
        await _open(pilot, sid)
        await pilot.press("D")
        await settle(pilot)
        await pilot.press("ctrl+d")
        await settle(pilot, rounds=3)

    assert snap_compare(make_app(pinned_db), terminal_size=SIZE, run_before=run_before)


def test_trash_screen(snap_compare, pinned_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    from app._support import FIXED_NOW

    import hermes_tui.state.trash as trash_mod

    sid = _session(pinned_db, "Nightly backup report")
    with monkeypatch.context() as m:  # a fixed entry time and id, only while the entry is written
        m.setattr(trash_mod.time, "time", lambda: FIXED_NOW - 3600)
        m.setattr(trash_mod.secrets, "token_hex", lambda n=4: "ab" * n)
        with SessionDB(pinned_db, migrate=False) as db:
            db.trash_sessions([sid], what="delete")

    async def run_before(pilot: Pilot[None]) -> None:
        await settle(pilot)
        await pilot.press("T")
        await settle(pilot, rounds=3)

    assert snap_compare(make_app(pinned_db), terminal_size=SIZE, run_before=run_before)


def test_repair_offer(snap_compare, demo_db: Path) -> None:  # type: ignore[no-untyped-def]
    from app.test_repair_ui import damage

    damage(demo_db)

    async def run_before(pilot: Pilot[None]) -> None:
        await settle(pilot, rounds=4)

    assert snap_compare(make_app(demo_db), terminal_size=SIZE, run_before=run_before)


def test_copy_menu(snap_compare, pinned_db: Path) -> None:  # type: ignore[no-untyped-def]
    sid = _session(pinned_db, "Nightly backup report")

    async def run_before(pilot: Pilot[None]) -> None:
        await _open(pilot, sid)
        await pilot.press("y")
        await settle(pilot)

    assert snap_compare(make_app(pinned_db), terminal_size=SIZE, run_before=run_before)


async def _cursor_on_third(pilot: Pilot[None], sid: str) -> None:
    """Open `sid`, the transcript focused, its cursor on the third message (Home, ] ])."""
    await settle(pilot)
    pilot.app.screen.open_session(sid)  # type: ignore[attr-defined]
    await settle(pilot)
    pilot.app.screen.query_one("#transcript").focus()
    await pilot.press("home", "right_square_bracket", "right_square_bracket")
    await settle(pilot)


def test_message_cursor_and_fork_dialog(snap_compare, pinned_db: Path) -> None:  # type: ignore[no-untyped-def]
    sid = _session(pinned_db, "CI flakiness deep dive")

    async def run_before(pilot: Pilot[None]) -> None:
        await _cursor_on_third(pilot, sid)
        await pilot.press("B")
        await settle(pilot)

    assert snap_compare(make_app(pinned_db), terminal_size=SIZE, run_before=run_before)


def test_fork_selected_with_its_cut_in_the_lineage(  # type: ignore[no-untyped-def]
    snap_compare, pinned_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After Enter: the fork (a fixed id, for the picture) is open and selected, its
    lineage node a branch of the source naming the message it was cut at."""
    from hermes_tui.state import forking

    monkeypatch.setattr(forking, "new_session_id", lambda now=None: "20250601_120000_f0f0f0")
    sid = _session(pinned_db, "CI flakiness deep dive")

    async def run_before(pilot: Pilot[None]) -> None:
        await _cursor_on_third(pilot, sid)
        await pilot.press("B")
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)

    assert snap_compare(make_app(pinned_db), terminal_size=SIZE, run_before=run_before)
