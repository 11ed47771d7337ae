"""Opening a store and its first order (`controllers/opening.py`): store files, no app."""

from __future__ import annotations

from pathlib import Path

from hermes_tui.app.controllers.messages import Missing, Opened, OpenFailed, OrderLoaded
from hermes_tui.app.controllers.opening import notice_text, open_one
from hermes_tui.app.controllers.search_source import first_orders
from hermes_tui.app.list_views import DEFAULT_FILTER
from hermes_tui.state import SessionDB


def test_a_missing_file_is_not_created(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    assert isinstance(open_one(path, False, None), Missing)
    assert not path.exists()


def test_a_file_that_is_not_a_store_fails_with_its_words(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    path.write_bytes(b"not sqlite at all" * 100)
    message = open_one(path, True, None)
    assert isinstance(message, OpenFailed) and message.path == path and message.error


def test_a_store_opens_and_its_first_order_comes_whole(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    with SessionDB(path) as writer:
        for sid in ("a", "b"):
            writer.create_session(sid, "cli")
    message = open_one(path, True, None)
    assert isinstance(message, Opened) and message.sources == ["cli"]
    steps = [
        OrderLoaded.of(result, None)
        for result in first_orders(message.db, DEFAULT_FILTER, "last_active", None, None, lambda: False)
    ]
    *heads, whole = steps
    assert all(isinstance(m, OrderLoaded) and m.provisional for m in heads)  # a head, if any
    assert isinstance(whole, OrderLoaded) and not whole.provisional
    assert sorted(whole.ids) == ["a", "b"] and whole.store_total == 2 and whole.handover == bool(heads)
    cancelled = list(first_orders(message.db, DEFAULT_FILTER, "last_active", None, None, lambda: True))
    assert cancelled == []  # a newer order replaced this one: nothing is told
    message.db.close()


def test_the_notice_is_plain_text() -> None:
    text = notice_text("no store at [bold]x", "Nothing was changed.")
    assert text.plain.startswith("no store at [bold]x\n\nNothing was changed.\n\nPress d")
