"""SVG snapshots of the Usage screen (issue 37, item 3): fixed clock (2025-06-01 12:10 UTC),
zone (UTC) and data (tests/app/_usage.py), in a dark and a light theme, at 120×40 and 80×24,
and the accounting check's list. Review `snapshot_report.html` before any `--snapshot-update`."""

from __future__ import annotations

from pathlib import Path

from app._support import make_app, settle
from app._usage import usage_db, usage_master
from textual.pilot import Pilot

__all__ = ["usage_db", "usage_master"]


def _keys(*keys: str):  # type: ignore[no-untyped-def]
    async def run_before(pilot: Pilot[None]) -> None:
        await settle(pilot)
        await pilot.press("U")
        await settle(pilot)
        for key in keys:
            await pilot.press(key)
            await settle(pilot)

    return run_before


def test_usage_120x40_dark(snap_compare, usage_db: Path) -> None:  # type: ignore[no-untyped-def]
    assert snap_compare(make_app(usage_db), terminal_size=(120, 40), run_before=_keys())


def test_usage_80x24_dark(snap_compare, usage_db: Path) -> None:  # type: ignore[no-untyped-def]
    assert snap_compare(make_app(usage_db), terminal_size=(80, 24), run_before=_keys())


def test_usage_80x24_light_by_source_per_week(snap_compare, usage_db: Path) -> None:  # type: ignore[no-untyped-def]
    app = make_app(usage_db, theme="textual-light")
    assert snap_compare(app, terminal_size=(80, 24), run_before=_keys("r", "b", "g"))


def test_usage_120x40_light_tokens(snap_compare, usage_db: Path) -> None:  # type: ignore[no-untyped-def]
    app = make_app(usage_db, theme="textual-light")
    assert snap_compare(app, terminal_size=(120, 40), run_before=_keys("t"))


def test_usage_check_list_80x24(snap_compare, usage_db: Path) -> None:  # type: ignore[no-untyped-def]
    assert snap_compare(make_app(usage_db), terminal_size=(80, 24), run_before=_keys("c", "enter"))
