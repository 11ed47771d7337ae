"""SVG snapshots of the browser on a file of today's Hermes (schema v31): the pinned and unread
marks, the activity description of a working session, the archived view, the reset edge in the
lineage and the archive key's toast, at 120×40 (and 80×24). Fixed clock, theme and data: the
demo reshaped as a v31 file (`tests/app/_v31.py`).

Review `snapshot_report.html` before any `--snapshot-update`.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from app._support import make_app, settle
from app._v31 import BUSY, RESET_CHILD, reshape_v31
from textual.pilot import Pilot

SIZE = (120, 40)


@pytest.fixture
def v31_db(demo_db: Path) -> Path:
    reshape_v31(demo_db)
    return demo_db


async def _select(pilot: Pilot[None], sid: str) -> None:
    """Open `sid` with its row under the list cursor and the focus on the list."""
    await settle(pilot)
    pilot.app.screen.open_session(sid)  # type: ignore[attr-defined]
    await settle(pilot)
    pilot.app.screen.session_list.focus()  # type: ignore[attr-defined]
    await settle(pilot)


def test_v31_marks_and_activity(snap_compare, v31_db: Path) -> None:  # type: ignore[no-untyped-def]
    """Pinned first (*), the unread dot (●), the working session with what it is doing now in
    the detail line, the reset child's r mark."""

    async def run_before(pilot: Pilot[None]) -> None:
        await _select(pilot, BUSY)

    assert snap_compare(make_app(v31_db), terminal_size=SIZE, run_before=run_before)


def test_v31_zoomed_list_says_what_it_is_doing(snap_compare, v31_db: Path) -> None:  # type: ignore[no-untyped-def]
    """A list wide enough for a wide Live column (zoomed, 160 columns) says it there."""

    async def run_before(pilot: Pilot[None]) -> None:
        await _select(pilot, BUSY)
        await pilot.press("z")
        await settle(pilot)

    assert snap_compare(make_app(v31_db), terminal_size=(160, 40), run_before=run_before)


def test_v31_archived_view(snap_compare, v31_db: Path) -> None:  # type: ignore[no-untyped-def]
    async def run_before(pilot: Pilot[None]) -> None:
        await settle(pilot)
        await pilot.press("A")
        await settle(pilot)

    assert snap_compare(make_app(v31_db), terminal_size=SIZE, run_before=run_before)


def test_v31_reset_edge_in_the_lineage(snap_compare, v31_db: Path) -> None:  # type: ignore[no-untyped-def]
    async def run_before(pilot: Pilot[None]) -> None:
        await _select(pilot, RESET_CHILD)
        await pilot.press("l")
        await settle(pilot)

    assert snap_compare(make_app(v31_db), terminal_size=SIZE, run_before=run_before)


def test_v31_archive_toast(snap_compare, v31_db: Path) -> None:  # type: ignore[no-untyped-def]
    async def run_before(pilot: Pilot[None]) -> None:
        await _select(pilot, RESET_CHILD)
        await pilot.press("m")
        await settle(pilot)

    assert snap_compare(make_app(v31_db), terminal_size=SIZE, run_before=run_before)


def test_v31_marks_80x24(snap_compare, v31_db: Path) -> None:  # type: ignore[no-untyped-def]
    """At 80 columns: the marks before the titles, "● working" in the Active column, what it is
    doing first on the detail line, and the footer's archive and pin keys with ? and q."""

    async def run_before(pilot: Pilot[None]) -> None:
        await _select(pilot, BUSY)

    assert snap_compare(make_app(v31_db), terminal_size=(80, 24), run_before=run_before)


def test_v31_archived_view_80x24(snap_compare, v31_db: Path) -> None:  # type: ignore[no-untyped-def]
    async def run_before(pilot: Pilot[None]) -> None:
        await settle(pilot)
        await pilot.press("A")
        await settle(pilot)

    assert snap_compare(make_app(v31_db), terminal_size=(80, 24), run_before=run_before)
