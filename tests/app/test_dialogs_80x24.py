"""Every dialog fits an 80×24 terminal with its confirm key in sight (issue #33, item 3).

At 80×24 the prune dialog hid its excluded list, its key hints and its buttons below the
screen, and Tab could not reach them; the statistics screen drew its buttons' last row under
the footer. Each dialog is opened at 80×24 here: its confirm button (or, where it has none, the
line that names its keys) must be drawn whole, every row of it the top widget on the screen,
and Tab must reach the button, still drawn whole once focused.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widget import Widget
from textual.widgets import Button, Input, Static

from hermes_tui.app.screens.delete import DeleteDialog
from hermes_tui.app.screens.export import ExportDialog
from hermes_tui.app.screens.help import HelpScreen
from hermes_tui.app.screens.main import MainScreen
from hermes_tui.app.screens.prune import ExcludedList, PruneDialog
from hermes_tui.app.screens.rename import RenameDialog
from hermes_tui.app.screens.repair import RepairOffer
from hermes_tui.app.screens.stats import StatsScreen
from hermes_tui.app.screens.trash import TrashScreen
from hermes_tui.state import SessionDB

from ._support import make_app, settle
from .test_prune_excluded import add_bulk
from .test_repair_ui import damage

SIZE = (80, 24)


def drawn_whole(widget: Widget) -> bool:
    """Every row of ``widget`` is on the screen and is ``widget`` there (not clipped by its
    dialog, not under another widget such as the footer)."""
    screen = widget.screen
    region = widget.region
    if not region.height or not screen.region.contains_region(region):
        return False
    x = region.x + region.width // 2
    return all(screen.get_widget_at(x, y)[0] is widget for y in range(region.y, region.bottom))


async def tab_to(pilot: Pilot[Any], widget: Widget, presses: int = 30) -> bool:
    """Press Tab until ``widget`` has the focus (at most ``presses`` times)."""
    for _ in range(presses):
        if widget.screen.focused is widget:
            return True
        await pilot.press("tab")
        await pilot.pause()
    return widget.screen.focused is widget


async def open_with(pilot: Pilot[Any], key: str, rounds: int = 3) -> Any:
    await settle(pilot)
    main = pilot.app.screen
    assert isinstance(main, MainScreen)
    main.session_list.focus()
    await pilot.press(key)
    await settle(pilot, rounds=rounds)
    return pilot.app.screen


#: (key, dialog class, its confirm button, the line naming its keys, what that line says)
WITH_BUTTONS: list[tuple[str, type, str, str | None, str]] = [
    ("r", RenameDialog, "#ok", None, "Rename (enter)"),
    ("D", DeleteDialog, "#confirm", None, "Delete (ctrl+d)"),
    ("P", PruneDialog, "#confirm", "#hint", "ctrl+d delete"),
    ("e", ExportDialog, "#confirm", "#hint", "ctrl+s export"),
    ("S", StatsScreen, "#close", None, "Back"),
]


@pytest.mark.parametrize(
    ("key", "kind", "confirm", "hint", "says"), WITH_BUTTONS, ids=[w[1].__name__ for w in WITH_BUTTONS]
)
async def test_dialog_fits_80x24_and_tab_reaches_its_confirm_button(
    demo_db: Path, key: str, kind: type, confirm: str, hint: str | None, says: str
) -> None:
    app = make_app(demo_db, read_only=kind is StatsScreen)
    async with app.run_test(size=SIZE) as pilot:
        dialog = await open_with(pilot, key)
        assert isinstance(dialog, kind)
        button = dialog.query_one(confirm, Button)
        assert not button.disabled
        assert drawn_whole(button), f"{confirm} at {button.region} is not drawn whole"
        shown = dialog.query_one(hint, Static) if hint else button
        assert drawn_whole(shown) and says in str(shown.render() if hint else button.label)
        assert await tab_to(pilot, button), "Tab never reached the confirm button"
        assert drawn_whole(button)


async def test_prune_at_80x24_shows_its_excluded_list_keys_and_buttons(demo_db: Path) -> None:
    """The reported case, with the real clock: a prune whose preview excludes many open
    sessions. The preview, the excluded summary and list, the key line and both buttons are on
    screen; Tab reaches the list (which scrolls) and the buttons; ctrl+d deletes."""
    add_bulk(demo_db)
    app = make_app(demo_db, now=time.time)
    async with app.run_test(size=SIZE) as pilot:
        dialog = await open_with(pilot, "P")
        assert isinstance(dialog, PruneDialog)
        dialog.query_one("#prune-days", Input).value = ""
        dialog.query_one("#prune-title", Input).value = "bulk"
        await settle(pilot, rounds=3)
        assert dialog.plan is not None and dialog.plan["excluded"] and not dialog.plan["ids"]
        for selector in ("#prune-excluded-summary", "#hint", "#cancel"):
            assert drawn_whole(dialog.query_one(selector)), selector
        listed = dialog.query_one("#prune-excluded", ExcludedList)
        assert listed.size.height >= 2 and dialog.region.contains_region(listed.region)
        assert await tab_to(pilot, listed)
        await pilot.press("end")
        await settle(pilot)
        assert listed.scroll_offset.y > 0  # the whole list is reachable from the keyboard
        assert await tab_to(pilot, dialog.query_one("#cancel"))
        assert drawn_whole(dialog.query_one("#cancel"))
        # A preview that deletes: the Delete button is drawn, reachable, and ctrl+d runs it.
        dialog.query_one("#prune-title", Input).value = ""
        dialog.query_one("#prune-days", Input).value = "30"
        await settle(pilot, rounds=3)
        assert dialog.plan is not None and dialog.plan["ids"]
        ids = list(dialog.plan["ids"])
        delete = dialog.query_one("#confirm", Button)
        assert drawn_whole(delete) and await tab_to(pilot, delete)
        await pilot.press("ctrl+d")
        await settle(pilot, rounds=3)
        assert isinstance(app.screen, MainScreen)
    with SessionDB(demo_db, read_only=True, migrate=False) as db:
        assert not any(db.get_session(i) for i in ids)


async def test_trash_help_and_copy_menu_show_their_keys_at_80x24(demo_db: Path) -> None:
    """Dialogs without a confirm button: the line that names their keys is drawn whole."""
    with SessionDB(demo_db, migrate=False) as db:
        row = db.get_session_by_title("Nightly backup report")
        assert row is not None
        db.trash_sessions([row["id"]], what="delete")
    app = make_app(demo_db)
    async with app.run_test(size=SIZE) as pilot:
        checks: list[tuple[str, type, str]] = [
            ("T", TrashScreen, "#hint"),
            ("question_mark", HelpScreen, "#help-body"),
        ]
        for key, kind, selector in checks:
            dialog = await open_with(pilot, key)
            assert isinstance(dialog, kind)
            widget = dialog.query_one(selector)
            assert dialog.region.contains_region(widget.region), selector
            if selector == "#hint":
                assert drawn_whole(widget) and "Enter restore" in str(widget.render())
            else:
                assert "Esc closes" in str(widget.border_subtitle)
            await pilot.press("escape")
            await settle(pilot)
        main = app.screen
        assert isinstance(main, MainScreen)
        main.open_session(main.session_list.selected_id or "")
        await settle(pilot)
        dialog = await open_with(pilot, "y")
        choices = dialog.query_one("#copy-choices", Static)
        assert drawn_whole(choices) and "esc" in str(choices.render())


async def test_the_repair_offer_leads_with_its_keys_at_80x24(demo_db: Path) -> None:
    damage(demo_db)
    app = make_app(demo_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, rounds=4)
        offer = app.screen.query_one(RepairOffer)
        assert app.focused is offer
        first_rows = str(offer.render()).splitlines()[:2]
        assert first_rows[0].startswith("R… repair"), first_rows
        assert app.screen.region.contains_point((offer.region.x + 2, offer.region.y + 2))
