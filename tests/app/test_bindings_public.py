"""Every binding is declared in a class's `BINDINGS` (public API): the help screen, the palette and
the footer read them through `bindings.bindings_of`, and `bindings.py` writes no binding map.

Contract tests: every node of a running app, in the states that change its keys (the main
screen's action keys and pane keys, the footer fitted narrow and wide, the picker, a dialog),
has the same bindings by the public reading as in the map Textual dispatches from; the keys
shown and working in every state are those recorded before the bindings moved to classes
(`keys_golden.json`)."""

from __future__ import annotations

import inspect
import json
import os
import re
from pathlib import Path

from textual.dom import DOMNode
from textual.widgets import Input

from hermes_tui.app import bindings
from hermes_tui.app.app import HermesApp, PickOptions
from hermes_tui.app.bindings import bindings_of, declared_bindings
from hermes_tui.app.screens.main import MainScreen, main_screen
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
    """The help screen's "main" section has each action's key once (the screen class made for
    the registered actions binds each of them once, however many screens are made)."""
    make_app(demo_db)  # registers the actions
    first, second = main_screen(), main_screen()
    assert type(first) is type(second) and isinstance(first, MainScreen)
    runs = [b.action for b in bindings_of(first) if b.key == "r" and "run_action" in b.action]
    assert runs == ["run_action('rename')"]


def test_bindings_module_writes_no_binding_map() -> None:
    """`bindings.py` reads and declares bindings only: no private per-instance map."""
    source = inspect.getsource(bindings)
    assert re.search(r"\._bindings\b", source) is None and "key_to_bindings" not in source


async def test_a_footer_key_hidden_on_a_narrow_terminal_still_works(demo_db: Path) -> None:
    """At 80 columns the list's footer hides `a` (active now) and space (select), which still
    act: the hidden binding after the shown one runs them."""
    app = make_app(demo_db)
    async with app.run_test(size=(80, 30)) as pilot:
        await settle(pilot)
        main = app.screen
        assert isinstance(main, MainScreen)
        shown = {k for k, a in main.active_bindings.items() if a.binding.show}
        assert "a" not in shown and "space" not in shown and "f" in shown
        await pilot.press("space")
        await settle(pilot)
        assert len(main.session_list.selection) == 1
        await pilot.press("a")
        await settle(pilot)
        assert main.active_only
        await pilot.resize_terminal(160, 30)
        await settle(pilot)
        shown = {k for k, a in main.active_bindings.items() if a.binding.show}
        assert {"a", "space"} <= shown


async def test_help_palette_and_footers_show_the_keys_they_showed(demo_db: Path) -> None:
    """The keys the help screen, the palette and every pane's footer show (and the keys that
    work) in each state are those recorded before the bindings moved to class `BINDINGS`."""
    found = await survey(demo_db)
    if os.environ.get("HERMES_TUI_WRITE_KEYS") == "1":
        write_golden(found)
    assert found == json.loads(GOLDEN.read_text(encoding="utf-8"))
