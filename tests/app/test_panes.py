"""Panes from the keyboard: resize the list/transcript split, show and hide the list,
lineage and transcript, remembered across restarts; the lineage pane's height follows its tree."""

from __future__ import annotations

import time
from pathlib import Path

from textual.pilot import Pilot
from textual.widget import Widget

from hermes_tui.app import settings as st
from hermes_tui.app.app import HermesApp
from hermes_tui.app.screens.help import HelpScreen, binding_rows
from hermes_tui.app.screens.main import MainScreen
from hermes_tui.app.widgets.lineage import LineageTree
from hermes_tui.state import SessionDB

from ._support import make_app, settle

SIZE = (120, 40)


def _sid(path: Path, title: str) -> str:
    with SessionDB(path, read_only=True, migrate=False) as db:
        row = db.get_session_by_title(title)
        assert row is not None
        return str(row["id"])


def _main(app: HermesApp) -> MainScreen:
    screen = app.screen
    assert isinstance(screen, MainScreen)
    return screen


def _width(app: HermesApp, selector: str) -> int:
    return _main(app).query_one(selector).region.width


def _shown(widget: Widget) -> bool:
    return widget.region.area > 0 and all(node.display for node in widget.ancestors_with_self)


async def _start(pilot: Pilot[None]) -> MainScreen:
    await settle(pilot)
    return _main(pilot.app)  # type: ignore[arg-type]


async def test_resize_keys_change_widths_and_are_remembered(demo_db: Path, private_settings: Path) -> None:
    app = make_app(demo_db)
    async with app.run_test(size=SIZE) as pilot:
        await _start(pilot)
        left, right = _width(app, "#left"), _width(app, "#right")
        assert left + right == SIZE[0] and left == 62  # 52 % by default, as before
        await pilot.press("greater_than_sign", "greater_than_sign")
        await settle(pilot)
        assert _width(app, "#left") == 72 and _width(app, "#right") == 48  # 60 %
        await pilot.press("ctrl+left")
        await settle(pilot)
        assert _width(app, "#left") == 67  # 56 %
    assert st.load(private_settings).settings.list_width == 56
    app = make_app(demo_db)
    async with app.run_test(size=SIZE) as pilot:
        await _start(pilot)
        assert _width(app, "#left") == 67 and _width(app, "#right") == 53
        for _ in range(20):
            await pilot.press("less_than_sign")
        await settle(pilot)
        assert app.settings.list_width == st.LIST_WIDTH_MIN
        assert _width(app, "#left") == 36  # the pane's min-width holds at 20 % of 120


async def test_resize_starts_from_the_automatic_width_and_equals_restores_it(
    demo_db: Path, private_settings: Path
) -> None:
    app = make_app(demo_db)
    async with app.run_test(size=(200, 40)) as pilot:
        await _start(pilot)
        assert _width(app, "#left") == 120  # wide terminal: the transcript keeps 80 columns
        await pilot.press("greater_than_sign")
        await settle(pilot)
        assert app.settings.list_width == 64 and _width(app, "#left") == 128  # 60 % + 4
        await pilot.press("equals_sign")
        await settle(pilot)
        assert app.settings.list_width == 0 and _width(app, "#left") == 120
        await pilot.press("less_than_sign", "less_than_sign", "less_than_sign")
        await settle(pilot)
        await pilot.resize_terminal(160, 40)
        await settle(pilot)
        assert _width(app, "#left") == 76  # 48 % of 160: the user's split survives a resize
    assert st.load(private_settings).settings.list_width == 48


async def test_hiding_panes_moves_focus_and_is_remembered(demo_db: Path, private_settings: Path) -> None:
    app = make_app(demo_db)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _start(pilot)
        assert screen.focused is screen.session_list
        await pilot.press("ctrl+b")  # the list: the lineage takes the left side, focus moves on
        await settle(pilot)
        assert not _shown(screen.session_list)
        lineage = screen.query_one("#lineage", LineageTree)
        assert _shown(lineage) and lineage.region.height == SIZE[1] - 2  # fills the column
        assert screen.focused is screen.query_one("#transcript")
        await pilot.press("ctrl+l")  # and the lineage: the transcript has the whole width
        await settle(pilot)
        assert not _shown(lineage) and not screen.query_one("#left").display
        assert _width(app, "#right") == SIZE[0]
        await pilot.press("ctrl+t")  # the transcript is the last of list/transcript: refused
        await settle(pilot)
        assert _width(app, "#right") == SIZE[0] and app.settings.show_transcript
        assert any("always stays shown" in n.message for n in app._notifications)
    saved = st.load(private_settings).settings
    assert (saved.show_list, saved.show_lineage, saved.show_transcript) == (False, False, True)
    app = make_app(demo_db)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _start(pilot)
        assert not _shown(screen.session_list) and _width(app, "#right") == SIZE[0]
        await pilot.press("f")  # the filters sit over the list: it shows again
        await settle(pilot)
        assert _shown(screen.session_list) and screen.focused is screen.query_one("#filter-source")
        assert not _shown(screen.query_one("#lineage"))
        await pilot.press("escape", "ctrl+b")
        await settle(pilot)
        assert not _shown(screen.session_list)
        await pilot.press("s")  # going to a hidden pane shows it
        await settle(pilot)
        assert _shown(screen.session_list) and screen.focused is screen.session_list
        await pilot.press("ctrl+t")  # now the list is there, the transcript may go
        await settle(pilot)
        assert not screen.query_one("#right").display and _width(app, "#left") == SIZE[0]
    saved = st.load(private_settings).settings
    assert (saved.show_list, saved.show_lineage, saved.show_transcript) == (True, False, False)


async def test_search_shows_while_the_list_is_hidden(demo_db: Path, private_settings: Path) -> None:
    st.save(private_settings, st.Settings(show_list=False))
    app = make_app(demo_db)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _start(pilot)
        await pilot.press("l", "slash", *"postgres")  # from the lineage (/ in the transcript finds)
        await settle(pilot)
        search = screen.query_one("#search")
        assert _shown(search) and screen.focused is screen.query_one("#search-input")
        await pilot.press("ctrl+l")  # hide the lineage too: the search pane still shows
        await settle(pilot)
        assert screen.has_class("-hide-left") and _shown(search)
        assert _width(app, "#left") + _width(app, "#right") == SIZE[0]
        await pilot.press("escape")
        await settle(pilot)
        assert not screen.query_one("#left").display and _width(app, "#right") == SIZE[0]
        assert screen.focused is screen.query_one("#transcript")  # not the hidden list


async def test_lineage_takes_the_height_it_needs(demo_db: Path) -> None:
    lone = _sid(demo_db, "FTS5 tokenizers (rewound)")
    chain = _sid(demo_db, "Postgres upgrade runbook #2")
    with SessionDB(demo_db, migrate=False) as db:  # a root with 30 children: more than the cap
        db.create_session("wide-root", "cli")
        db.set_session_title("wide-root", "Wide root")
        for i in range(30):
            db.create_session(f"wide-{i:02}", "cli", parent_session_id="wide-root")
    app = make_app(demo_db)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _start(pilot)
        lineage = screen.query_one("#lineage", LineageTree)
        screen.open_session(lone)
        await settle(pilot)
        assert len(lineage.lineage["nodes"]) == 1  # type: ignore[index]
        assert lineage.region.height == 3  # border, the session, border
        screen.open_session(chain)
        await settle(pilot)
        assert len(lineage.lineage["nodes"]) == 3  # type: ignore[index]
        assert lineage.region.height == 5
        assert screen.session_list.region.height == SIZE[1] - 2 - 5  # the list gets the rest
        screen.open_session("wide-root")
        await settle(pilot)
        assert len(lineage.lineage["nodes"]) == 31  # type: ignore[index]
        assert lineage.region.height == int(screen.query_one("#left").region.height * 0.35)
        assert lineage.max_scroll_y > 0  # up to the cap, then it scrolls
        screen.open_session(lone)
        await settle(pilot)
        assert lineage.region.height == 3


async def test_pane_keys_are_in_help(demo_db: Path) -> None:
    app = make_app(demo_db)
    async with app.run_test(size=SIZE) as pilot:
        await _start(pilot)
        await pilot.press("question_mark")
        await settle(pilot)
        help_screen = app.screen
        assert isinstance(help_screen, HelpScreen)
        rows = {(keys, desc) for _section, keys, desc in binding_rows(help_screen.sections)}
        assert ("<, ctrl+left", "Narrower session list") in rows
        assert (">, ctrl+right", "Wider session list") in rows
        assert ("=", "Session list at its automatic width") in rows
        assert ("ctrl+b, ctrl+s", "Show/hide the session list") in rows
        assert ("ctrl+l", "Show/hide the lineage") in rows
        assert ("ctrl+t", "Show/hide the transcript") in rows


async def test_ctrl_s_shows_and_hides_the_list_inside_tmux_too(demo_db: Path) -> None:
    """ctrl+b is tmux's prefix, which tmux never passes on: ctrl+s does the same, and the footer
    of the transcript and lineage panes names it (real clock)."""
    app = make_app(demo_db, now=time.time)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _start(pilot)
        transcript = screen.query_one("#transcript")
        transcript.focus()
        await settle(pilot)
        shown = {b.key: b.description for b in (a.binding for a in screen.active_bindings.values()) if b.show}
        assert shown.get("ctrl+s") == "List"
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert not _shown(screen.session_list) and app.settings.show_list is False
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert _shown(screen.session_list) and app.settings.show_list is True
        assert screen.focused is transcript  # showing the list leaves the reader where they are
