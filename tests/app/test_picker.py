"""Picker mode (`hermes-tui pick`): starts in search with the query typed in, Enter picks the hit
or list row, Esc / ctrl+c cancel with status 1 and no result, --source narrows both panes."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Input, Select

from hermes_tui.app.app import PickOptions
from hermes_tui.app.handoff import Handoff
from hermes_tui.app.screens.main import MainScreen
from hermes_tui.app.widgets.search import SearchPane
from hermes_tui.state import SessionDB

from ._support import make_app
from .test_handoff import session_facts, settle


async def test_pick_starts_in_search_and_enter_prints_the_hit(demo_db: Path) -> None:
    app = make_app(demo_db, pick=PickOptions(query="refund"))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, rounds=3)
        main = app.screen
        assert isinstance(main, MainScreen) and main.has_class("-searching")
        field = main.query_one("#search-input", Input)
        assert main.focused is field and field.value == "refund"
        hits = main.query_one("#search", SearchPane).hits
        assert hits
        await pilot.press("enter")  # from the box: the first (highlighted) hit
        await settle(pilot)
    assert app.return_value == Handoff("pick", hits[0]["session_id"], output=hits[0]["session_id"])
    assert app.return_code == 0


async def test_pick_from_the_results_and_the_list(demo_db: Path) -> None:
    app = make_app(demo_db, pick=PickOptions(query="refund"))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, rounds=3)
        search = app.screen.query_one("#search", SearchPane)
        await pilot.press("down", "down")
        await settle(pilot)
        index = search.highlighted
        assert index is not None
        chosen = search.hits[index]["session_id"]
        await pilot.press("enter")
        await settle(pilot)
    assert app.return_value is not None and app.return_value.output == chosen

    app = make_app(demo_db, pick=PickOptions())
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, rounds=3)
        main = app.screen
        assert isinstance(main, MainScreen)
        main.session_list.focus()
        await pilot.press("down", "down")
        await settle(pilot)
        row = main.session_list.selected_id
        await pilot.press("enter")
        await settle(pilot)
    assert app.return_value is not None and app.return_value.output == row


async def test_pick_format_resume_prints_the_tip_command(demo_db: Path) -> None:
    root, tip = session_facts(demo_db, "Postgres upgrade runbook")
    app = make_app(demo_db, pick=PickOptions(output="resume"))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, rounds=3)
        main = app.screen
        assert isinstance(main, MainScreen)
        main.open_session(root)
        await settle(pilot)
        main.session_list.focus()
        await pilot.pause()
        assert main.session_list.selected_id == root
        await pilot.press("enter")
        await settle(pilot)
    assert app.return_value == Handoff("pick", root, ("hermes", "--resume", tip), f"hermes --resume {tip}")


async def test_escape_and_ctrl_c_cancel_with_status_1(demo_db: Path) -> None:
    for key in ("escape", "ctrl+c"):
        app = make_app(demo_db, pick=PickOptions(query="refund"))
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot, rounds=3)
            await pilot.press(key)
            await settle(pilot)
        assert app.return_value is None and app.return_code == 1, key


async def test_escape_in_the_transcript_goes_back_not_out(demo_db: Path) -> None:
    """Only the top level cancels: Esc from a transcript opened on a hit returns to the results."""
    app = make_app(demo_db, pick=PickOptions(query="refund"))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, rounds=3)
        main = app.screen
        assert isinstance(main, MainScreen)
        main.query_one("#search", SearchPane).choose(0)
        await settle(pilot)
        assert main.focused is main.query_one("#transcript")
        await pilot.press("escape")
        await settle(pilot)
        assert app.is_running and main.focused is main.query_one("#search-results")


async def test_pick_source_narrows_list_and_search(demo_db: Path) -> None:
    app = make_app(demo_db, pick=PickOptions(query="the", source="telegram"))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, rounds=3)
        main = app.screen
        assert isinstance(main, MainScreen)
        assert main.query_one("#filter-source", Select).value == "telegram"
        assert main.query_one("#search-source", Select).value == "telegram"
        hits = main.query_one("#search", SearchPane).hits
        assert hits
        ids = {h["session_id"] for h in hits} | set(main.session_list._ids or [])
    with SessionDB(demo_db, read_only=True, migrate=False) as db:
        assert {r["source"] for r in db.list_rows(sorted(ids))} == {"telegram"}


async def test_browser_mode_keeps_escape_and_enter(demo_db: Path) -> None:
    """Without pick, Esc in search closes it and the app keeps running (no picker bindings)."""
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("slash", "r", "e", "f", "escape")
        await settle(pilot)
        assert app.is_running and not app.screen.has_class("-searching")
