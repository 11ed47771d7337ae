"""SVG snapshots of every pane and state at 120×40 (and 80×24), fixed clock, theme and data.

Review `snapshot_report.html` before any `--snapshot-update`.
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


def test_main_list(snap_compare, demo_db: Path) -> None:  # type: ignore[no-untyped-def]
    async def run_before(pilot: Pilot[None]) -> None:
        await settle(pilot)

    assert snap_compare(make_app(demo_db), terminal_size=SIZE, run_before=run_before)


def test_transcript_tool_calls_expanded(snap_compare, demo_db: Path) -> None:  # type: ignore[no-untyped-def]
    sid = _session(demo_db, "Fix flaky CI on the payments service")

    async def run_before(pilot: Pilot[None]) -> None:
        await settle(pilot)
        pilot.app.screen.open_session(sid)  # type: ignore[attr-defined]
        await settle(pilot)
        await pilot.press("x")
        await settle(pilot)

    assert snap_compare(make_app(demo_db), terminal_size=SIZE, run_before=run_before)


def test_search_results(snap_compare, demo_db: Path) -> None:  # type: ignore[no-untyped-def]
    async def run_before(pilot: Pilot[None]) -> None:
        await settle(pilot)
        await pilot.press("slash", *"postgres")
        await settle(pilot)

    assert snap_compare(make_app(demo_db), terminal_size=SIZE, run_before=run_before)


def test_search_hit_opened(snap_compare, demo_db: Path) -> None:  # type: ignore[no-untyped-def]
    async def run_before(pilot: Pilot[None]) -> None:
        await settle(pilot)
        await pilot.press("slash", *"checklist")
        await settle(pilot)
        await pilot.press("down", "enter")
        await settle(pilot)

    assert snap_compare(make_app(demo_db), terminal_size=SIZE, run_before=run_before)


def test_lineage_branch_and_delegate(snap_compare, demo_db: Path) -> None:  # type: ignore[no-untyped-def]
    sid = _session(demo_db, "CI flakiness deep dive")

    async def run_before(pilot: Pilot[None]) -> None:
        await settle(pilot)
        pilot.app.screen.open_session(sid)  # type: ignore[attr-defined]
        await settle(pilot)
        await pilot.press("l")
        await settle(pilot)

    assert snap_compare(make_app(demo_db), terminal_size=SIZE, run_before=run_before)


def test_chain_reader(snap_compare, demo_db: Path) -> None:  # type: ignore[no-untyped-def]
    sid = _session(demo_db, "Postgres upgrade runbook #2")

    async def run_before(pilot: Pilot[None]) -> None:
        await settle(pilot)
        pilot.app.screen.open_session(sid)  # type: ignore[attr-defined]
        await settle(pilot)
        await pilot.press("c")
        await settle(pilot)
        pilot.app.clear_notifications()  # the "Chain reader on" toast expires on a timer: not deterministic
        await settle(pilot)

    assert snap_compare(make_app(demo_db), terminal_size=SIZE, run_before=run_before)


def test_rewound_shown(snap_compare, demo_db: Path) -> None:  # type: ignore[no-untyped-def]
    sid = _session(demo_db, "FTS5 tokenizers (rewound)")

    async def run_before(pilot: Pilot[None]) -> None:
        await settle(pilot)
        pilot.app.screen.open_session(sid)  # type: ignore[attr-defined]
        await settle(pilot)
        await pilot.press("i")
        await settle(pilot)

    assert snap_compare(make_app(demo_db), terminal_size=SIZE, run_before=run_before)


def test_filters_bar(snap_compare, demo_db: Path) -> None:  # type: ignore[no-untyped-def]
    async def run_before(pilot: Pilot[None]) -> None:
        await settle(pilot)
        await pilot.press("f")
        pilot.app.screen.query_one("#filter-source").value = "telegram"  # type: ignore[attr-defined]
        await settle(pilot)

    assert snap_compare(make_app(demo_db), terminal_size=SIZE, run_before=run_before)


def test_help_screen(snap_compare, demo_db: Path) -> None:  # type: ignore[no-untyped-def]
    async def run_before(pilot: Pilot[None]) -> None:
        await settle(pilot)
        await pilot.press("question_mark")
        await pilot.pause()

    assert snap_compare(make_app(demo_db), terminal_size=SIZE, run_before=run_before)


def test_palette_jump(snap_compare, demo_db: Path) -> None:  # type: ignore[no-untyped-def]
    async def run_before(pilot: Pilot[None]) -> None:
        await settle(pilot)
        await pilot.press("ctrl+p", *"runbook")
        await settle(pilot, rounds=3)

    assert snap_compare(make_app(demo_db), terminal_size=SIZE, run_before=run_before)


def test_narrow_80x24(snap_compare, demo_db: Path) -> None:  # type: ignore[no-untyped-def]
    async def run_before(pilot: Pilot[None]) -> None:
        await settle(pilot)

    assert snap_compare(make_app(demo_db), terminal_size=(80, 24), run_before=run_before)


def test_zoomed_list_all_columns(snap_compare, demo_db: Path) -> None:  # type: ignore[no-untyped-def]
    async def run_before(pilot: Pilot[None]) -> None:
        await settle(pilot)
        await pilot.press("z")
        await settle(pilot)

    assert snap_compare(make_app(demo_db), terminal_size=SIZE, run_before=run_before)


def test_empty_database(snap_compare, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "state.db"
    SessionDB(path).close()

    async def run_before(pilot: Pilot[None]) -> None:
        await settle(pilot)

    assert snap_compare(make_app(path), terminal_size=SIZE, run_before=run_before)


def test_database_not_found(snap_compare, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    async def run_before(pilot: Pilot[None]) -> None:
        await settle(pilot)

    assert snap_compare(make_app(tmp_path / "missing.db"), terminal_size=SIZE, run_before=run_before)


def test_corrupt_file(snap_compare, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "state.db"
    path.write_bytes(b"garbage" * 1000)

    async def run_before(pilot: Pilot[None]) -> None:
        await settle(pilot)

    assert snap_compare(make_app(path), terminal_size=SIZE, run_before=run_before)
