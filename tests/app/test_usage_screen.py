"""The Usage screen (issue 37, item 3) driven with Pilot: opened by its key, from statistics and
from the palette; the range and group keys change what is read and drawn; Enter on a costliest
session opens it in the main screen; the check lists a kind's sessions and opens one. Fixed
clock and data (tests/app/_usage.py), and one test on the real clock."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from textual.color import Color
from textual.theme import BUILTIN_THEMES
from textual.widgets import DataTable, OptionList, Static

from hermes_tui.app.screens.main import MainScreen
from hermes_tui.app.screens.stats import StatsScreen
from hermes_tui.app.screens.usage import (
    MIN_CONTRAST,
    MIN_DISTANCE,
    UsageCheckScreen,
    UsageScreen,
    colour_distance,
    series_colours,
)
from hermes_tui.state import SessionDB, last_days_start, local_tz

from ._support import make_app, settle
from ._usage import NOW, usage_db, usage_master
from .test_palette import palette, plain

__all__ = ["usage_db", "usage_master"]


def text_of(screen: UsageScreen, selector: str) -> str:
    return str(screen.query_one(selector, Static).render())


async def open_usage(pilot, key: str = "U") -> UsageScreen:  # type: ignore[no-untyped-def]
    await settle(pilot)
    await pilot.press(key)
    await settle(pilot)
    screen = pilot.app.screen
    assert isinstance(screen, UsageScreen) and screen.data is not None
    return screen


async def test_range_and_period_keys_read_the_chosen_range(usage_db: Path) -> None:
    app = make_app(usage_db)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_usage(pilot)
        assert screen.data is not None and screen.data.choice.days == 30
        assert text_of(screen, "#usage-head") == "cost (USD) per day by model, last 30 days, UTC"
        await pilot.press("r")  # 30 -> 90 days
        await settle(pilot)
        data = screen.data
        assert data is not None and data.choice.days == 90 and len(data.report.periods) == 90
        with SessionDB(usage_db, read_only=True) as db:
            since = last_days_start(90, local_tz(), NOW)
            want = db.usage_report("day", "model", since, None, local_tz(), NOW)
        assert data.report.total == want.total
        assert "last 90 days" in text_of(screen, "#usage-head")
        assert text_of(screen, "#usage-summary").startswith(f"Range: ${want.total.cost_usd:.2f} estimated")
        await pilot.press("b", "t")  # per week, in tokens
        await settle(pilot)
        data = screen.data
        assert (data.choice.by, data.choice.metric) == ("week", "tokens")
        assert data.report.periods[-1].label == "2025-W22"
        assert text_of(screen, "#usage-head").startswith("tokens (thousands) per week by model")


async def test_group_key_stacks_by_source(usage_db: Path) -> None:
    app = make_app(usage_db)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_usage(pilot)
        legend = text_of(screen, "#usage-legend")
        assert "openai/gpt-4.1" in legend and "evil␛]52;c;cHduZWQ=␇model" in legend
        await pilot.press("g")
        await settle(pilot)
        assert screen.data is not None and screen.data.choice.group == "source"
        assert set(screen.data.report.groups) == {"cli", "telegram", "discord"}
        legend = text_of(screen, "#usage-legend")
        assert all(s in legend for s in ("cli", "telegram", "discord")) and "openai" not in legend
        await pilot.press("g")  # one store: model and source only
        await settle(pilot)
        assert screen.data.choice.group == "model"


async def test_enter_on_a_costly_session_opens_it_in_the_main_screen(usage_db: Path) -> None:
    app = make_app(usage_db)
    async with app.run_test(size=(120, 40)) as pilot:
        # from statistics: u, then Enter goes back past statistics to the main screen
        await settle(pilot)
        await pilot.press("S")
        await settle(pilot)
        assert isinstance(app.screen, StatsScreen)
        screen = await open_usage(pilot, "u")
        table = screen.query_one("#usage-sessions", DataTable)
        assert table.row_count == 10 and screen.session_keys[0] == (None, "big-one")
        await pilot.press("down", "up", "enter")
        await settle(pilot)
        main = app.screen
        assert isinstance(main, MainScreen) and len(app.screen_stack) == 1
        assert main.selected_session_id == "big-one"


async def test_check_lists_a_kind_and_opens_a_session(usage_db: Path) -> None:
    app = make_app(usage_db)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_usage(pilot)
        assert text_of(screen, "#usage-summary").splitlines()[2] == (
            "Check (c): 2 no tokens · 1 unpriced · 0 uncosted · 0 included"
        )
        await pilot.press("c")
        await settle(pilot)
        check = app.screen
        assert isinstance(check, UsageCheckScreen)
        options = check.query_one("#check-list", OptionList)
        assert options.option_count == 4
        assert [options.get_option_at_index(i).disabled for i in range(4)] == [False, False, True, True]
        assert "acme/secret-1" in text_of(check, "#check-status")  # the unpriced model
        await pilot.press("down", "enter")  # unpriced
        await settle(pilot)
        assert [plain(options.get_option_at_index(i).prompt) for i in range(options.option_count)] == [
            "unpriced-1"
        ]
        await pilot.press("escape")  # back to the kinds
        await settle(pilot)
        assert options.option_count == 4 and check.kind is None
        options.highlighted = 0
        await pilot.press("enter")  # no tokens
        await settle(pilot)
        ids = [plain(options.get_option_at_index(i).prompt) for i in range(options.option_count)]
        assert ids == ["no-tokens-1", "no-tokens-2"]
        assert text_of(check, "#check-status").startswith("no tokens: 2 sessions.")
        options.highlighted = 1
        await pilot.press("enter")
        await settle(pilot)
        main = app.screen
        assert isinstance(main, MainScreen) and main.selected_session_id == "no-tokens-2"


async def test_the_palette_opens_usage(usage_db: Path) -> None:
    app = make_app(usage_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        hits = await palette(pilot, "usage cost")
        assert plain(hits[0].match_display) == "Usage: cost and tokens over time  [U]"
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, UsageScreen)
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, MainScreen)


async def test_real_clock_this_month_holds_what_was_just_spent(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """No fixed clock: a session spent now is in the last 7 days and the month to date."""
    monkeypatch.setenv("TZ", "UTC")
    path = tmp_path / "now.db"
    with SessionDB(path) as db:
        db.create_session("today", "cli", model="openai/gpt-4.1")
        db.append_message("today", "user", "hello")
        db.append_message("today", "assistant", "hi")
        db.update_token_counts(
            "today", model="openai/gpt-4.1", input_tokens=1200, output_tokens=300,
            estimated_cost_usd=0.75, cost_status="estimated", api_call_count=1,
        )  # fmt: skip
    app = make_app(path, now=time.time)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_usage(pilot)
        await pilot.press("r", "r", "r")  # 30 -> 90 -> all -> 7 days
        await settle(pilot)
        data = screen.data
        assert data is not None and data.choice.days == 7
        assert data.report.total.cost_usd == 0.75 and data.month.month_to_date.cost_usd == 0.75
        assert data.sessions[0].session_id == "today"
        assert "Range: $0.75 estimated · 1,500 tokens" in text_of(screen, "#usage-summary")


def test_series_colours_stand_out_in_every_theme() -> None:
    """Six distinct colours, each apart from the surface it is drawn on, for every built-in
    theme (the screen reads `App.theme_variables`, which these are)."""
    for name, theme in BUILTIN_THEMES.items():
        variables = theme.to_color_system().generate()
        surface = Color.parse(variables["surface"])
        colours = [Color(*rgb) for rgb in series_colours(variables)]
        assert len(colours) == 6, name
        for i, c in enumerate(colours):
            assert abs(c.brightness - surface.brightness) >= MIN_CONTRAST, (name, i, c.hex)
            assert all(colour_distance(c, o) >= MIN_DISTANCE for o in colours[:i]), (name, i, c.hex)


async def test_several_profiles_stack_by_profile_and_open_in_their_store(
    usage_master: Path, tmp_path: Path, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    """Over every profile (`--all`): the figures add up across stores, `g` reaches "profile",
    and a costly session or a check's session opens in its own store."""
    import shutil

    from ._profiles import federated_app

    monkeypatch.setenv("TZ", "UTC")
    home = tmp_path / "hermes"
    for target in (home / "state.db", home / "profiles" / "work" / "state.db"):
        target.parent.mkdir(parents=True, exist_ok=True)
        for suffix in ("", "-wal"):
            if Path(f"{usage_master}{suffix}").exists():
                shutil.copy(f"{usage_master}{suffix}", f"{target}{suffix}")
    with SessionDB(usage_master, read_only=True) as db:
        one = db.usage_report("day", None, last_days_start(30, local_tz(), NOW), None, local_tz(), NOW).total
    app = federated_app(home)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_usage(pilot)
        assert screen.source.federated and screen.source.profiles == ("default", "work")
        data = screen.data
        assert data is not None and data.report.total.cost_usd == pytest.approx(2 * one.cost_usd)
        assert data.report.total.sessions == 2 * one.sessions
        await pilot.press("g", "g")  # model -> source -> profile
        await settle(pilot)
        data = screen.data
        assert data.choice.group == "profile" and set(data.report.groups) == {"default", "work"}
        assert data.report.groups["work"].cost_usd == pytest.approx(one.cost_usd)
        assert "2 profiles" in text_of(screen, "#usage-head")
        assert screen.session_keys[:2] == [("default", "big-one"), ("work", "big-one")]
        await pilot.press("down", "enter")
        await settle(pilot)
        main = app.screen
        assert isinstance(main, MainScreen)
        assert (main.current_profile, main.selected_session_id) == ("work", "big-one")
        screen = await open_usage(pilot)
        await pilot.press("c", "enter")  # no tokens, over both stores
        await settle(pilot)
        options = app.screen.query_one("#check-list", OptionList)
        ids = [plain(options.get_option_at_index(i).prompt) for i in range(options.option_count)]
        assert ids == [
            "default: no-tokens-1",
            "default: no-tokens-2",
            "work: no-tokens-1",
            "work: no-tokens-2",
        ]
        options.highlighted = 3
        await pilot.press("enter")
        await settle(pilot)
        assert (main.current_profile, main.selected_session_id) == ("work", "no-tokens-2")
