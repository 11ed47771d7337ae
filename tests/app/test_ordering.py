"""The list's order and filters as functions (`controllers/ordering.py`): no app."""

from __future__ import annotations

from pathlib import Path

from hermes_tui.app.controllers.ordering import (
    bar_filter,
    empty_text,
    filter_active,
    filter_summary,
    index_after_write,
    ordered_ids,
    remembered,
    restored_filter,
)
from hermes_tui.app.list_views import DEFAULT_FILTER, view_of
from hermes_tui.state import SessionDB


def test_summary_names_each_filter_in_a_few_words() -> None:
    assert filter_summary(DEFAULT_FILTER, None, False, None) == ""
    flt = bar_filter(DEFAULT_FILTER, "cli", None, 7, "deploy", None, now=1000.0 * 86400)
    assert flt.started_after == 993.0 * 86400 and flt.sources == ("cli",) and flt.models == ()
    assert filter_summary(flt, 7, True, ("work",)) == (
        "source=cli · last 7 days · title~deploy · active now · profile=work"
    )
    assert filter_summary(flt, None, False, None) == "source=cli · recent · title~deploy"


def test_filter_active_counts_the_view_and_the_profiles_but_not_the_order() -> None:
    assert not filter_active(DEFAULT_FILTER, False, None)
    archived = bar_filter(DEFAULT_FILTER, None, None, None, "", "archived", now=0.0)
    assert view_of(archived) == "archived" and filter_active(archived, False, None)
    assert filter_active(DEFAULT_FILTER, True, None) and filter_active(DEFAULT_FILTER, False, ("p",))


def test_empty_text() -> None:
    assert "F to clear" in empty_text("source=x", "default")
    assert "A to go back" in empty_text("", "archived")
    assert empty_text("", "default") == "This database has no sessions yet."


def test_settings_round_trip() -> None:
    flt = restored_filter(DEFAULT_FILTER, "created", "telegram", "bug", "archived")
    assert remembered(flt, "created", True) == {
        "order": "created",
        "source": "telegram",
        "filter_text": "bug",
        "active_now": True,
        "view": "archived",
    }


def test_ordered_ids_counts_the_view_and_keeps_active_sessions(tmp_path: Path) -> None:
    db = SessionDB(tmp_path / "state.db")
    for sid, source in (("a", "cli"), ("b", "telegram"), ("c", "cli")):
        db.create_session(sid, source)
    ids, total = ordered_ids(db, DEFAULT_FILTER, "last_active", False, now=0.0)
    assert sorted(ids) == ["a", "b", "c"] and total == 3
    cli = bar_filter(DEFAULT_FILTER, "cli", None, None, "", None, now=0.0)
    ids, total = ordered_ids(db, cli, "last_active", False, now=0.0)
    assert sorted(ids) == ["a", "c"] and total == 3  # "2 of 3"
    ids, _ = ordered_ids(db, DEFAULT_FILTER, "last_active", True, now=10.0**12)
    assert ids == []  # nothing was active in the ten minutes before that "now"


def test_a_deleted_selection_gives_its_place_to_the_next_row() -> None:
    assert index_after_write(("b", 1), "b", ["a", "c"]) == 1
    assert index_after_write(("b", 5), "b", ["a", "c"]) == 1  # past the end: the last row
    assert index_after_write(("b", 1), "b", []) == 0
    assert index_after_write(("b", 1), "b", ["a", "b"]) is None  # still listed: kept by key
    assert index_after_write(None, "b", ["a"]) is None
    assert index_after_write(("x", 1), "b", ["a"]) is None  # another row was kept
