"""Every action key of the registry (`hermes_tui.app.actions`) works from every pane."""

from __future__ import annotations

from pathlib import Path

from textual.widget import Widget

from hermes_tui.app import actions
from hermes_tui.app.screens.export import ExportDialog
from hermes_tui.app.screens.main import MainScreen
from hermes_tui.app.widgets.transcript_pane import Transcript

from ._keys import action_name
from ._support import make_app, settle
from .test_actions import open_on, sid_of

PANES = ("#sessions", "#transcript", "#lineage", "#search-results")


def keys_bound_below_screen(widget: Widget) -> set[str]:
    """Keys bound by the focused widget and its ancestors up to (not including) the screen."""
    keys: set[str] = set()
    for node in widget.ancestors_with_self:
        if isinstance(node, MainScreen):
            break
        for key, bindings in node._bindings.key_to_bindings.items():
            # A pane may re-bind a registry action to show it in its footer (directly, or through
            # `fit(...)` when it shows only if it fits): that runs the same action.
            if any(
                b.key == key and not action_name(b.action).startswith("screen.run_action") for b in bindings
            ):
                keys.add(key)
    return keys


async def test_e_exports_with_the_transcript_focused(demo_db: Path) -> None:
    sid = sid_of(demo_db, "Fix flaky CI on the payments service")
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        main = await open_on(pilot, sid)
        main.query_one("#transcript", Transcript).focus()
        await pilot.pause()
        assert isinstance(app.focused, Transcript)
        await pilot.press("e")
        await settle(pilot)
        assert isinstance(app.screen, ExportDialog)
        assert app.screen.session_id == sid


async def test_x_toggles_the_transcript_folds(demo_db: Path) -> None:
    sid = sid_of(demo_db, "Fix flaky CI on the payments service")
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        main = await open_on(pilot, sid)
        transcript = main.query_one("#transcript", Transcript)
        transcript.focus()
        await pilot.pause()
        assert not transcript.folds_open
        await pilot.press("x")
        await pilot.pause()
        assert transcript.folds_open
        assert isinstance(app.screen, MainScreen)


async def test_no_pane_shadows_an_action_key(demo_db: Path) -> None:
    sid = sid_of(demo_db, "CI flakiness deep dive")
    action_keys = {spec.key for spec in actions.ACTIONS}
    assert {"r", "D", "P", "e", "S"} <= action_keys
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        main = await open_on(pilot, sid)
        main.add_class("-searching")
        await pilot.pause()
        for selector in PANES:
            pane = main.query_one(selector)
            pane.focus()
            await pilot.pause()
            assert app.focused is pane, selector
            shadowed = keys_bound_below_screen(pane) & action_keys
            assert not shadowed, (selector, shadowed)


async def test_e_opens_export_from_every_pane(demo_db: Path) -> None:
    sid = sid_of(demo_db, "CI flakiness deep dive")
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        main = await open_on(pilot, sid)
        for selector in ("#sessions", "#transcript", "#lineage"):
            main.query_one(selector).focus()
            await pilot.pause()
            await pilot.press("e")
            await settle(pilot)
            assert isinstance(app.screen, ExportDialog), selector
            await pilot.press("escape")
            await settle(pilot)
            assert isinstance(app.screen, MainScreen), selector
