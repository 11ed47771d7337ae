"""The help screen, the palette and the footer read bindings through `bindings.bindings_of` (the
class `BINDINGS` merged, plus what `add_binding`/`set_shown` did), not Textual's private map.

Contract test: every node of a running app, in the states that add or re-show bindings (the main
screen's action keys and pane keys, the footer fitted narrow and wide, the picker, a dialog), has
the same bindings by the public reading as in Textual's own map. It fails when a Textual release
merges class bindings differently (then `declared_bindings` follows it)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from textual.dom import DOMNode
from textual.widgets import Input

from hermes_tui.app.app import HermesApp, PickOptions
from hermes_tui.app.bindings import bindings_of, declared_bindings
from hermes_tui.app.screens.main import MainScreen
from hermes_tui.app.widgets.search import QueryInput

from ._keys import GOLDEN, survey, write_golden
from ._support import make_app, settle


def _mismatches(app: HermesApp) -> list[str]:
    nodes: list[DOMNode] = [app]
    for screen in app.screen_stack:
        nodes += list(screen.walk_children(with_self=True))
    out = []
    for node in nodes:
        textual = [b for group in node._bindings.key_to_bindings.values() for b in group]
        if bindings_of(node) != textual:
            out.append(repr(node))
    return out


async def test_public_reading_matches_textuals_map_in_every_state(demo_db: Path) -> None:
    app = make_app(demo_db)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, MainScreen)
        assert _mismatches(app) == []
        for width in (80, 60, 160):  # the footer hides and shows the list's optional keys
            await pilot.resize_terminal(width, 36)
            await settle(pilot)
            assert _mismatches(app) == []
        await pilot.press("T")  # the trash screen's bindings
        await settle(pilot)
        assert not isinstance(app.screen, MainScreen)
        assert _mismatches(app) == []


async def test_picker_bindings_read_publicly(demo_db: Path) -> None:
    app = make_app(demo_db, pick=PickOptions(query="x"))
    assert {"pick_choose", "pick_cancel"} <= {b.action for b in bindings_of(app)}
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        assert _mismatches(app) == []


def test_a_subclass_replaces_its_bases_bindings_of_a_key() -> None:
    """`QueryInput`'s ↓ moves to the results, in place of Input's hidden ↓ (as Textual merges)."""
    assert [b.action for b in declared_bindings(QueryInput)["down"]] == ["focus_results"]
    assert "focus_results" not in [b.action for group in declared_bindings(Input).values() for b in group]


def test_main_screen_action_keys_are_listed_once(demo_db: Path) -> None:
    """The help screen's "main" section has each action's key once (they are added per instance)."""
    main = MainScreen()
    runs = [b.action for b in bindings_of(main) if b.key == "r" and "run_action" in b.action]
    assert runs == ["run_action('rename')"]


async def test_help_palette_and_footers_show_the_keys_they_showed(demo_db: Path) -> None:
    """The keys the help screen, the palette and every pane's footer show (and the keys that
    work) in each state are those recorded before the bindings moved to class `BINDINGS`."""
    found = await survey(demo_db)
    if os.environ.get("HERMES_TUI_WRITE_KEYS") == "1":
        write_golden(found)
    assert found == json.loads(GOLDEN.read_text(encoding="utf-8"))
