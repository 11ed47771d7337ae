"""Counts of one read singular in the browser too (issue 33's "1 sessions"): the header's session
count and the transcript's "earlier"/"more" buttons, through `formatting.plural`."""

from __future__ import annotations

from pathlib import Path

from hermes_tui.app.screens.main import MainScreen
from hermes_tui.app.widgets.transcript_items import more_label
from hermes_tui.state import SessionDB

from ._support import make_app, settle


def test_the_transcript_buttons_count_one_message() -> None:
    assert more_label("before", 1) == "▲ 1 earlier message"
    assert more_label("after", 1) == "▼ 1 more message"
    assert more_label("after", 1200) == "▼ 1,200 more messages"


async def test_the_header_counts_one_session(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    with SessionDB(path) as db:
        db.create_session("only", "cli")
        db.append_message("only", "user", "hello")
    app = make_app(path)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        main = app.screen
        assert isinstance(main, MainScreen) and main.state == "ready"
        header = str(main.query_one("#info").render())
        assert "1 session" in header and "1 sessions" not in header, header
