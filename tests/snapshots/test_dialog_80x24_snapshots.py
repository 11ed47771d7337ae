"""SVG snapshots of the dialogs at 80×24, the size every dialog must fit with its keys in sight
(issue #33: the prune dialog hid its excluded list, key line and buttons there).

Fixed clock, theme and demo data, as `test_action_snapshots.py` (whose pinned-dates fixture this
reuses). Review `snapshot_report.html` before any `--snapshot-update`.
"""

from __future__ import annotations

from pathlib import Path

from app._support import make_app, settle
from textual.pilot import Pilot
from textual.widgets import Input

from .test_action_snapshots import _cursor_on_third, _open, _select_rows, _session, pinned_db

__all__ = ["pinned_db"]

SIZE = (80, 24)


def test_prune_preview_80x24(snap_compare, pinned_db: Path) -> None:  # type: ignore[no-untyped-def]
    async def run_before(pilot: Pilot[None]) -> None:
        await settle(pilot)
        await pilot.press("P")
        await settle(pilot, rounds=3)

    assert snap_compare(make_app(pinned_db), terminal_size=SIZE, run_before=run_before)


def test_prune_excluded_list_80x24(snap_compare, pinned_db: Path) -> None:  # type: ignore[no-untyped-def]
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


def test_delete_many_80x24(snap_compare, pinned_db: Path) -> None:  # type: ignore[no-untyped-def]
    async def run_before(pilot: Pilot[None]) -> None:
        await _select_rows(pilot)
        await pilot.press("D")
        await settle(pilot)

    assert snap_compare(make_app(pinned_db), terminal_size=SIZE, run_before=run_before)


def test_export_dialog_80x24(snap_compare, pinned_db: Path) -> None:  # type: ignore[no-untyped-def]
    sid = _session(pinned_db, "CI flakiness deep dive")

    async def run_before(pilot: Pilot[None]) -> None:
        await _open(pilot, sid)
        await pilot.press("e")
        await settle(pilot)

    assert snap_compare(make_app(pinned_db), terminal_size=SIZE, run_before=run_before)


def test_stats_screen_80x24(snap_compare, pinned_db: Path) -> None:  # type: ignore[no-untyped-def]
    async def run_before(pilot: Pilot[None]) -> None:
        await settle(pilot)
        await pilot.press("S")
        await settle(pilot)

    assert snap_compare(make_app(pinned_db, read_only=True), terminal_size=SIZE, run_before=run_before)


def test_fork_dialog_80x24(snap_compare, pinned_db: Path) -> None:  # type: ignore[no-untyped-def]
    sid = _session(pinned_db, "CI flakiness deep dive")

    async def run_before(pilot: Pilot[None]) -> None:
        await _cursor_on_third(pilot, sid)
        await pilot.press("B")
        await settle(pilot)

    assert snap_compare(make_app(pinned_db), terminal_size=SIZE, run_before=run_before)
