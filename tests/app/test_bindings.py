"""Bindings never leak from one app or screen into the next (Textual's `bind` appended to lists
an instance shares with its class: the picker's Esc/ctrl+c leaked into every later app, which
made the help snapshot depend on test order). They are class `BINDINGS` now: the picker's keys
are the app's, off (`check_action`) unless it picks."""

from __future__ import annotations

from pathlib import Path

from hermes_tui.app.app import PickOptions
from hermes_tui.app.bindings import bindings_of
from hermes_tui.app.screens.main import MainScreen

from ._support import make_app, settle


def _actions(bindings: dict, key: str) -> list[str]:
    return [b.action for b in bindings.get(key, [])]


async def test_picker_keys_act_only_in_the_picker(demo_db: Path) -> None:
    app = make_app(demo_db, pick=PickOptions(query="x"))
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        assert app.check_action("pick_cancel", ())
    for _ in range(2):  # later apps, as before the picker ran
        app = make_app(demo_db)
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(pilot)
            assert not app.check_action("pick_cancel", ()) and not app.check_action("pick_choose", ())
            active = {k: a.binding.action for k, a in app.screen.active_bindings.items()}
            assert active.get("enter") != "pick_choose" and active.get("ctrl+c") != "pick_cancel"
            await pilot.press("escape")  # does not cancel anything: the app runs on
            await settle(pilot)
            assert app.is_running and app.return_value is None


async def test_action_keys_are_bound_once_however_many_apps_ran(demo_db: Path) -> None:
    for _ in range(3):
        app = make_app(demo_db)
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(pilot)
            main = app.screen
            assert isinstance(main, MainScreen)
            runs = [b.action for b in bindings_of(main) if b.key == "r" and "run_action" in b.action]
            assert runs == ["run_action('rename')"], runs
