"""SVG snapshot of the browser across profiles: three stores as one list with the
profile column, per-profile counts and the badges of three stores that could not be opened.

Fixed clock, theme and data; paths never show (the failed stores' reasons, which name their
files, are notifications, cleared before the picture). Review `snapshot_report.html` before
any `--snapshot-update`.
"""

from __future__ import annotations

from pathlib import Path

from app._profiles import build_home, federated_app
from app._support import make_app, settle
from textual.pilot import Pilot

SIZE = (120, 40)


def test_profiles_main_list(snap_compare, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    home = build_home(tmp_path / "hermes")

    async def run_before(pilot: Pilot[None]) -> None:
        await settle(pilot, 3)
        pilot.app.clear_notifications()
        await settle(pilot)

    assert snap_compare(federated_app(home), terminal_size=SIZE, run_before=run_before)


def test_profiles_search(snap_compare, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    home = build_home(tmp_path / "hermes")

    async def run_before(pilot: Pilot[None]) -> None:
        await settle(pilot, 3)
        pilot.app.clear_notifications()
        await pilot.press("slash", *"kestrel")
        await settle(pilot, 3)

    assert snap_compare(federated_app(home), terminal_size=SIZE, run_before=run_before)


def test_wide_list_200_columns(snap_compare, demo_db: Path) -> None:  # type: ignore[no-untyped-def]
    """Issue #19: at 200 columns the transcript keeps a reading width and the titles get the rest."""

    async def run_before(pilot: Pilot[None]) -> None:
        await settle(pilot)

    assert snap_compare(make_app(demo_db), terminal_size=(200, 40), run_before=run_before)
