"""The browser on a store written by hermes-agent 0.19.0 whose writer crashed (issue #33, item 9):
it shows what only the -wal holds, and opening it, searching it and quitting write neither the
database file nor its -wal. Before, quitting checkpointed the -wal into the file and deleted it."""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes_tui.app.screens.main import MainScreen
from tests.peer.crashed import SESSIONS, copy_store, crashed_peer_store, db_and_wal
from tests.peer.oracle import peer_python_or_skip

from ._support import make_app, settle


@pytest.mark.peer
async def test_browsing_a_crashed_0_19_0_store_writes_neither_file(tmp_path: Path) -> None:
    python = peer_python_or_skip()
    origin = tmp_path / "origin" / "state.db"
    origin.parent.mkdir()
    total = crashed_peer_store(origin, python)
    path = copy_store(origin, tmp_path / "browsed")
    before = db_and_wal(path)
    app = make_app(path)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot, rounds=3)
        main = app.screen
        assert isinstance(main, MainScreen) and main.state == "ready"
        assert main.session_list.total == SESSIONS
        assert app.db is not None and app.db.message_count() == total
        await pilot.press("q")
    assert db_and_wal(path) == before
