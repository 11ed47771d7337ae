"""Leaving the search after reading a hit (issue #33): the list cursor and the open transcript
agree, the reader's place stays, and the hit's Markdown is kept while it is marked.

Esc out of the search used to leave the list cursor on the row it was on before the search while
the transcript showed the hit's session (so `r`, `D` or Enter on the list acted on another
session than the one on screen), and drew the transcript again from its top.
"""

from __future__ import annotations

import time
from pathlib import Path

from hermes_tui.app.screens.main import MainScreen
from hermes_tui.app.widgets.search import SearchPane
from hermes_tui.app.widgets.session_list import SessionList
from hermes_tui.app.widgets.transcript_pane import Transcript

from ._support import any_match_drawn, drawn_as_match, make_app, settle


async def test_escape_from_search_puts_the_cursor_on_the_session_read(demo_db: Path) -> None:
    app = make_app(demo_db, now=time.time)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        main = app.screen
        assert isinstance(main, MainScreen)
        sessions = main.query_one("#sessions", SessionList)
        before = sessions.selected_id
        await pilot.press("slash", *"postgres")
        await settle(pilot)
        search = main.query_one("#search", SearchPane)
        # A hit in a session the list holds (Hermes' list folds a chain's earlier sessions away).
        hit = next(h for h in search.hits if h["session_id"] != before and h["session_id"] in sessions._ids)
        search.choose(search.hits.index(hit))
        await settle(pilot)
        transcript = main.query_one("#transcript", Transcript)
        assert main.current_session == hit["session_id"] != before
        assert drawn_as_match(transcript, hit["id"], "postgres")  # its Markdown, the term marked
        place = transcript.scroll_y
        await pilot.press("escape")  # transcript → results
        await settle(pilot)
        await pilot.press("escape")  # results → the list
        await settle(pilot)
        assert not main.has_class("-searching") and app.focused is sessions
        assert sessions.selected_id == hit["session_id"]  # was: the row left before the search
        assert main.current_session == hit["session_id"]
        assert not any_match_drawn(transcript)
        assert transcript.scroll_y == place  # was: drawn again from the top
        current = transcript.current_message()
        assert current is not None and current.id == hit["id"]
        # Enter on the list now opens the session on screen, not another one
        await pilot.press("enter")
        await settle(pilot)
        assert main.current_session == hit["session_id"]
