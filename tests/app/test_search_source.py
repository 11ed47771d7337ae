"""One store as a search source shaped like several (`controllers/search_source.py`): no app."""

from __future__ import annotations

from pathlib import Path

from hermes_tui.app.controllers.search_source import OneStore
from hermes_tui.state import SessionDB


def test_one_store_searches_titles_and_counts(tmp_path: Path) -> None:
    db = SessionDB(tmp_path / "state.db")
    db.create_session("s1", "cli")
    db.set_session_title("s1", "deploy notes")
    db.append_message("s1", "user", "the deploy failed on friday")
    one = OneStore(db)
    hits, route = one.searcher(("ignored",))("deploy")
    assert [h["session_id"] for h in hits] == ["s1"] and route
    assert one.titles(["s1"])["s1"]["title"] == "deploy notes"
    count, exact = one.counter()("deploy")
    assert count == 1 and exact
