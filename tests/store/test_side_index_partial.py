"""While the CJK side index is built, it answers for the ids it holds and LIKE for the rest.

Before, every search until the build finished scanned the whole store with LIKE (13-23 s a
search on a 10M legacy store, for the 5.5 min the build takes); now the scan covers only the
ids above the index's high water. The results must be the ones the LIKE scan gives, in the same
order, page after page, and `search_count` must count them."""

from __future__ import annotations

import pytest

import hermes_tui.state.search.side as search
import hermes_tui.state.side_index as side_index
from hermes_tui.state import SessionDB
from tests.store.test_search_count import _all_pages, _populate

QUERIES = ["本", "日", "服", "京 OR 密", "服 NOT 修"]


@pytest.fixture
def partial(xdg_cache, db_path, monkeypatch):
    """A store whose side index holds its first ~100 messages and is not built further."""
    monkeypatch.setattr(side_index, "BATCH", 50)
    monkeypatch.setattr(search, "MAX_INLINE_LAG", 0)  # any lag is "far": no inline catch-up
    monkeypatch.setattr(side_index.SideIndex, "build_in_background", lambda self, open_source: None)
    with SessionDB(db_path=db_path) as db:
        _populate(db)
        held = db._side().sync(db._conn(), limit_rows=100)
        top = db._scalar("SELECT MAX(id) FROM messages")
        assert 0 < held < top
        yield db


def _like_only(db, monkeypatch, fn):
    with monkeypatch.context() as m:
        m.setattr(type(db), "_side_reach", lambda self: None)
        return fn()


@pytest.mark.parametrize("query", QUERIES)
@pytest.mark.parametrize("sort", [None, "newest", "oldest"])
def test_pages_and_count_are_the_substring_scans(partial, monkeypatch, query, sort):
    db = partial
    ids, route = _all_pages(db, query, sort=sort)
    assert route == "cjk_side_partial"
    expected, like_route = _like_only(db, monkeypatch, lambda: _all_pages(db, query, sort=sort))
    assert like_route == "like_scan"
    if sort == "oldest":  # the whole-store scan is newest first in every order; the index is not
        expected.reverse()
    assert ids == expected and ids
    assert db.search_count(query, sort=sort) == (len(ids), True)


def test_hits_on_both_sides_of_the_high_water(partial):
    db = partial
    held = db._side().high_water()
    ids, _route = _all_pages(db, "本")
    assert any(i <= held for i in ids) and any(i > held for i in ids)


def test_the_search_says_how_far_the_index_is(partial):
    db = partial
    held = db._side().high_water()
    top = db._scalar("SELECT MAX(id) FROM messages")
    assert db.cjk_index_progress("本") == (held, top)


def test_nothing_built_yet_scans_everything(xdg_cache, db_path, monkeypatch):
    monkeypatch.setattr(side_index.SideIndex, "build_in_background", lambda self, open_source: None)
    monkeypatch.setattr(search, "MAX_INLINE_LAG", 0)
    with SessionDB(db_path=db_path) as db:
        _populate(db)
        assert db.search("本", limit=5).route == "like_scan"
