"""Snapshots of a transcript on a file of today's Hermes (schema v31): a compaction's archived
original and its live copy as one message, the rows Hermes never paints folded (their count in
the subtitle) and then shown with `h`, the session head with its activity and system prompt."""

from __future__ import annotations

from pathlib import Path

from app._display import SID, build_display_store
from app._support import make_app, settle
from textual.pilot import Pilot

SIZE = (120, 40)


def test_v31_transcript_hidden_rows_folded(snap_compare, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = build_display_store(tmp_path / "state.db")

    async def run_before(pilot: Pilot[None]) -> None:
        await settle(pilot)
        pilot.app.screen.open_session(SID)  # type: ignore[attr-defined]
        await settle(pilot)

    assert snap_compare(make_app(path), terminal_size=SIZE, run_before=run_before)


def test_v31_transcript_hidden_rows_shown(snap_compare, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = build_display_store(tmp_path / "state.db")

    async def run_before(pilot: Pilot[None]) -> None:
        await settle(pilot)
        pilot.app.screen.open_session(SID)  # type: ignore[attr-defined]
        await settle(pilot)
        await pilot.press("h")
        await settle(pilot)

    assert snap_compare(make_app(path), terminal_size=SIZE, run_before=run_before)
