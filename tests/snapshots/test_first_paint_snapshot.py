"""SVG snapshot of the first paint of a large store: the head of the order is on screen while
the whole order is still being read ("Sessions ≥ 50", "counting sessions…"). 120×40, fixed
clock, theme and data (300 sessions with fixed timestamps); the whole order is held back
through the store's public `session_order` until the snapshot is taken.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from app._support import busy_with, make_app
from store.test_order_head import build_live
from textual.pilot import Pilot

from hermes_tui.app.app import HermesApp
from hermes_tui.app.list_views import DEFAULT_FILTER
from hermes_tui.app.widgets.session_list import SessionList
from hermes_tui.state import SessionDB, SessionFilter
from tests._wait import pilot_until

SIZE = (120, 40)


def only_the_order(pilot: Pilot[None]) -> bool:
    """Nothing left to do but the whole order (held back) and the live follower."""
    return all(b.startswith("worker order/") for b in busy_with(pilot.app))


def test_first_paint_shows_the_head_while_counting(  # type: ignore[no-untyped-def]
    snap_compare, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "state.db"
    build_live(path, 300, 3)
    gate = threading.Event()
    real = SessionDB.session_order

    def held(self: SessionDB, filter: SessionFilter | None = None, *args: Any, **kw: Any) -> Any:
        if filter is None or filter in (SessionFilter(), DEFAULT_FILTER):  # the list's default
            gate.wait(30)  # released when the snapshot is taken
        return real(self, filter, *args, **kw)

    monkeypatch.setattr(SessionDB, "session_order", held)
    real_exit = HermesApp.exit

    def exit_releasing(self: HermesApp, *args: Any, **kw: Any) -> None:
        gate.set()  # the snapshot is taken: let the held order finish so the app can stop
        real_exit(self, *args, **kw)

    monkeypatch.setattr(HermesApp, "exit", exit_releasing)

    async def run_before(pilot: Pilot[None]) -> None:
        def head_painted() -> bool:
            found = pilot.app.screen.query("#sessions")
            sessions = found.first(SessionList) if found else None
            return sessions is not None and sessions.provisional and sessions.row_at(0) is not None

        await pilot_until(pilot, head_painted, "the head is painted")
        for _ in range(2):  # quiet twice in a row, but for the order held back
            await pilot_until(pilot, lambda: only_the_order(pilot), "the first session is shown")
            await pilot.pause()

    try:
        assert snap_compare(make_app(path), terminal_size=SIZE, run_before=run_before)
    finally:
        gate.set()
