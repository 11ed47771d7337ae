"""Reading a session for the transcript (`controllers/transcript_loading.py`): a store, no app."""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes_tui.app.controllers.transcript_loading import (
    SessionGone,
    doing_text,
    read_live,
    read_session,
    tip_note,
    title_text,
    transcript_subtitle,
)
from hermes_tui.app.widgets.transcript_items import MessageView
from hermes_tui.state import SessionDB


@pytest.fixture
def db(tmp_path: Path) -> SessionDB:
    store = SessionDB(tmp_path / "state.db")
    store.create_session("s1", "cli", model="m")
    store.append_message("s1", "user", "hello [bold]there")
    store.append_message("s1", "assistant", "hi")
    return store


def test_read_session_gives_the_row_the_messages_and_the_lineage(db: SessionDB) -> None:
    loaded = read_session(db, "s1", None, ("hi",), True, False, None, lambda: False)
    assert loaded is not None
    assert loaded.row["id"] == "s1" and "profile" not in loaded.row
    assert [i.text for i in loaded.data.items if isinstance(i, MessageView)] == ["hello [bold]there", "hi"]
    assert loaded.lineage is not None and loaded.terms == ("hi",) and loaded.focus
    assert not loaded.data.chain  # a lone session is no chain, even when asked to read one


def test_over_several_stores_the_row_names_its_profile(db: SessionDB) -> None:
    loaded = read_session(db, "s1", None, (), False, True, "work", lambda: False)
    assert loaded is not None and loaded.row["profile"] == "work" and loaded.profile == "work"


def test_a_cancelled_read_gives_nothing_and_a_missing_session_says_so(db: SessionDB) -> None:
    assert read_session(db, "s1", None, (), False, False, None, lambda: True) is None
    with pytest.raises(SessionGone):
        read_session(db, "nope", None, (), False, False, None, lambda: False)


def test_read_live_reads_only_what_came_after(db: SessionDB) -> None:
    first = db.get_messages("s1")[0]["id"]
    row, items, lineage = read_live(db, "s1", first, lineage_too=False)
    assert row is not None and row["id"] == "s1" and lineage is None
    assert items is not None and [i.text for i in items if isinstance(i, MessageView)] == ["hi"]
    assert read_live(db, "gone", first, lineage_too=True) == (None, None, None)


def test_doing_shows_only_while_working() -> None:
    row = {"last_activity_description": "running tests\nnow"}
    assert doing_text(row, {"state": "working"}) == "running tests now"
    assert doing_text(row, {"state": "idle"}) == ""
    assert doing_text(row, None) == ""
    assert doing_text({}, {"state": "working"}) == ""


def test_title_text_is_plain_text_with_the_profile_only_across_stores() -> None:
    row = {"id": "s1", "title": "[red]t", "source": "cli", "model": "", "profile": "work", "message_count": 2}
    one = title_text(row)
    assert one.plain.splitlines() == ["[red]t", "s1 · cli · — · 2 msgs · 0 tok"]
    many = title_text(row, note="continued in x — L", doing="editing", show_profile=True)
    assert (
        many.plain.splitlines()[1] == "continued in x — L · ● editing · work: s1 · cli · — · 2 msgs · 0 tok"
    )


def test_subtitle_counts_hits_and_new_messages(db: SessionDB) -> None:
    loaded = read_session(db, "s1", None, (), False, False, None, lambda: False)
    assert loaded is not None
    items = loaded.data.items
    plain = transcript_subtitle(items, show_inactive=False, showing_hidden=False, hit=None, new_below=0)
    assert plain == "2 msgs"
    busy = transcript_subtitle(items, show_inactive=False, showing_hidden=False, hit="hit 1/3", new_below=4)
    assert busy == "4 new ↓ G · 2 msgs · hit 1/3"


def test_the_tip_note_names_where_the_chain_went_on() -> None:
    lineage = {"nodes": [{"id": "t", "title": "part two"}]}
    assert tip_note(lineage, "t") == "continued in part two — L"
    assert tip_note(lineage, "u") == "continued in u — L"
    assert tip_note(lineage, None) == ""
