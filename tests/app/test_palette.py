"""The command palette offers every action with its key, runs it, and still jumps to sessions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.command import CommandList, CommandPalette, DiscoveryHit

from hermes_tui.app import actions
from hermes_tui.app.commands import BUILTIN
from hermes_tui.app.screens.delete import DeleteDialog
from hermes_tui.app.screens.help import HelpScreen
from hermes_tui.app.screens.main import MainScreen
from hermes_tui.app.screens.prune import PruneDialog
from hermes_tui.app.screens.stats import StatsScreen

from ._support import make_app, settle
from .test_actions import sid_of

#: Every action the palette must offer, with the key the main screen binds to it.
EXPECTED = {
    "Rename the selected session": "r",
    "Delete the selected session(s)": "D",
    "Prune old ended sessions": "P",
    "Export the selected session": "e",
    "Statistics": "S",
    "Search messages": "/",
    "Find in the transcript": "ctrl+f",
    "Filters: source, model, date, title": "f",
    "Change the order of the list": "o",
    "Zoom the focused pane": "z",
    "Chain reader on/off": "c",
    "Show or hide rewound messages": "i",
    "Reload from the database": "ctrl+r",
    "Help: every key": "?",
}


def plain(value: Any) -> str:
    return value.plain if hasattr(value, "plain") else str(value)


async def palette(pilot: Any, query: str = "") -> list[Any]:
    """Open the palette, type ``query``, and return its hits in display order."""
    await pilot.press("ctrl+p")
    await settle(pilot)
    if query:
        await pilot.press(*query)
        await settle(pilot, rounds=3)
    assert isinstance(pilot.app.screen, CommandPalette)
    options = pilot.app.screen.query_one(CommandList)
    return [options.get_option_at_index(i).hit for i in range(options.option_count)]


async def test_palette_lists_every_action_with_its_key(demo_db: Path) -> None:
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        hits = await palette(pilot)
        shown = {hit.text: plain(hit.display) for hit in hits if isinstance(hit, DiscoveryHit)}
        for text, key in EXPECTED.items():
            assert shown.get(text) == f"{text}  [{key}]", (text, shown.get(text))
        assert "Change the theme" in shown
        assert {a.name for a in actions.ACTIONS} >= {"rename", "delete", "prune", "export", "stats"}
        assert len(BUILTIN) + 5 <= len(shown)
        assert any(t.startswith("Open: ") for t in shown)  # the session jump stays


async def test_running_actions_from_the_palette(demo_db: Path) -> None:
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        hits = await palette(pilot, "prune old")
        assert plain(hits[0].match_display) == "Prune old ended sessions  [P]"
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, PruneDialog)
        await pilot.press("escape")
        await settle(pilot)

        await palette(pilot, "search mess")
        await pilot.press("enter")
        await settle(pilot)
        main = app.screen
        assert isinstance(main, MainScreen) and main.has_class("-searching")
        await pilot.press("escape")
        await settle(pilot)

        await palette(pilot, "statistics")
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, StatsScreen)
        await pilot.press("escape")
        await settle(pilot)

        await palette(pilot, "help every")
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, HelpScreen)


async def test_palette_delete_targets_the_selected_row(demo_db: Path) -> None:
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        main = app.screen
        assert isinstance(main, MainScreen)
        main.session_list.focus()
        await pilot.press("down", "down")
        await settle(pilot)
        wanted = main.session_list.selected_id
        await palette(pilot, "delete the sel")
        await pilot.press("enter")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, DeleteDialog)
        assert dialog.ids == [wanted]


async def test_palette_still_jumps_to_a_session(demo_db: Path) -> None:
    sid = sid_of(demo_db, "Kubernetes deploy rollback")
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        hits = await palette(pilot, "Kubernetes deploy rollback")
        opens = [h for h in hits if plain(h.match_display) == "Open: Kubernetes deploy rollback"]
        assert opens
        pilot.app.screen.query_one(CommandList).highlighted = hits.index(opens[0])
        await pilot.press("enter")
        await settle(pilot)
        main = app.screen
        assert isinstance(main, MainScreen)
        assert main.current_session == sid
