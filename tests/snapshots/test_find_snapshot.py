"""SVG snapshot of the transcript's find bar open on a match: 120×40, fixed clock,
theme and data (the demo store). Review `snapshot_report.html` before any `--snapshot-update`.
"""

from __future__ import annotations

from pathlib import Path

from app._support import make_app, settle
from textual.pilot import Pilot

from hermes_tui.state import SessionDB

SIZE = (120, 40)


def _session(path: Path, title: str) -> str:
    with SessionDB(path, read_only=True, migrate=False) as db:
        row = db.get_session_by_title(title)
        assert row is not None
        return str(row["id"])


def test_transcript_find_bar_with_a_hit(snap_compare, demo_db: Path) -> None:  # type: ignore[no-untyped-def]
    """ctrl+f, "passed": the bar under the transcript with "i/N", the match marked in the open
    tool output."""
    sid = _session(demo_db, "Fix flaky CI on the payments service")

    async def run_before(pilot: Pilot[None]) -> None:
        await settle(pilot)
        pilot.app.screen.open_session(sid)  # type: ignore[attr-defined]
        await settle(pilot)
        await pilot.press("ctrl+f", *"passed")
        await settle(pilot)

    assert snap_compare(make_app(demo_db), terminal_size=SIZE, run_before=run_before)
