"""Bindings added at run time stay on their instance (Textual's `bind` appended to lists an
instance shares with its class: the picker's Esc/ctrl+c leaked into every later app, which made
the help snapshot depend on test order)."""

from __future__ import annotations

from pathlib import Path

from hermes_tui.app.app import HermesApp, PickOptions
from hermes_tui.app.screens.main import MainScreen

from ._support import make_app, settle


def _actions(bindings: dict, key: str) -> list[str]:
    return [b.action for b in bindings.get(key, [])]


def test_picker_bindings_do_not_leak_into_later_apps(demo_db: Path) -> None:
    before = _actions(HermesApp(demo_db)._bindings.key_to_bindings, "ctrl+c")
    picker = HermesApp(demo_db, pick=PickOptions(query="x"))
    assert "pick_cancel" in _actions(picker._bindings.key_to_bindings, "ctrl+c")
    after = HermesApp(demo_db)
    assert _actions(after._bindings.key_to_bindings, "ctrl+c") == before
    assert "pick_choose" not in _actions(after._bindings.key_to_bindings, "enter")


async def test_action_keys_are_bound_once_however_many_apps_ran(demo_db: Path) -> None:
    for _ in range(3):
        app = make_app(demo_db)
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(pilot)
            main = app.screen
            assert isinstance(main, MainScreen)
            runs = [b.action for b in main._bindings.key_to_bindings.get("r", []) if "run_action" in b.action]
            assert runs == ["run_action('rename')"], runs
