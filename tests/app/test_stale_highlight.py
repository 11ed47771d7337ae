"""A jump (palette, lineage, a hit) moves the list's cursor to the session it opens; the list's
own report of that move (`SessionList.Highlighted`) is not a choice of the user. Handled late
(under load, after the next jump began), it took that jump's place: the cursor stayed on the
earlier row and its session opened again (`test_open_session_finds_the_merged_row_off_the_event_loop`
timed out under load)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hermes_tui.app.screens.main import MainScreen
from hermes_tui.app.widgets.session_list import SessionList
from tests._wait import pilot_until

from ._profiles import build_home, federated_app
from ._support import settle


async def test_a_late_report_of_one_jump_does_not_undo_the_next(tmp_path: Path) -> None:
    app = federated_app(build_home(tmp_path / "hermes", broken=False))
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot, 3)
        screen = app.screen
        assert isinstance(screen, MainScreen)
        sessions = screen.session_list
        await pilot_until(pilot, lambda: sessions.total == 6, "the six sessions listed")
        handle = screen.view.highlighted
        held: list[SessionList.Highlighted] = []

        def late(message: SessionList.Highlighted) -> None:  # the loop is busy: reports wait
            held.append(message)

        screen.view.highlighted = late  # type: ignore[method-assign]
        screen.open_session("z-1", profile="zeta")
        await pilot_until(pilot, lambda: sessions.selected_key == ("zeta", "z-1"), "the cursor on z-1")
        await settle(pilot)
        screen.view.highlighted = handle  # type: ignore[method-assign]
        screen.open_session("w-2", profile="work")
        assert held and all(m.session_id == "z-1" for m in held)
        for message in held:  # the list's reports of the jump to z-1, handled only now
            handle(message)
        await pilot_until(pilot, lambda: sessions.selected_key == ("work", "w-2"), "the cursor on w-2", 10)
        await settle(pilot)
        assert (screen.current_profile, screen.current_session) == ("work", "w-2")
        shown: Any = screen.view.wanted
        assert shown == "w-2"
