"""One store is a federation of one: its order, keys and store are read as `BrowserStores`'
are (`search_source.OneStore`, `order_source`). No App is started here."""

from __future__ import annotations

from pathlib import Path

from hermes_tui.app.controllers.ordering import ACTIVE_WITHIN_S, bar_filter, ordered_ids
from hermes_tui.app.controllers.search_source import OneStore, order_source
from hermes_tui.app.list_views import DEFAULT_FILTER
from hermes_tui.app.stores import BrowserStores, StoreChoice
from hermes_tui.state import SessionDB, SessionFilter

from ._profiles import LAYOUT, build_home, expected_order, store_path


def _store(tmp_path: Path) -> SessionDB:
    db = SessionDB(tmp_path / "state.db")
    for sid, source in (("a", "cli"), ("b", "telegram"), ("c", "cli")):
        db.create_session(sid, source)
    return db


def test_one_stores_order_is_its_ids_with_the_count_of_its_view(tmp_path: Path) -> None:
    db = _store(tmp_path)
    one = OneStore(db)
    result = one.order(DEFAULT_FILTER, "last_active", None, "b", first=100)
    ids, total = ordered_ids(db, DEFAULT_FILTER, "last_active", False, now=0.0)
    assert list(result.keys) == ids and result.total == 3 and result.extra["store_total"] == total
    assert result.keep_index is None  # the list finds the kept id itself
    cli = bar_filter(DEFAULT_FILTER, "cli", None, None, "", None, now=0.0)
    result = one.order(cli, "last_active", None, None, first=100)
    assert sorted(result.keys) == ["a", "c"] and result.extra["store_total"] == 3  # "2 of 3"
    active = one.order(
        DEFAULT_FILTER, "last_active", None, None, 100, active_since=(10.0**12, ACTIVE_WITHIN_S)
    )
    assert list(active.keys) == []  # nothing was active in the ten minutes before that "now"


def test_one_stores_keys_are_its_ids_and_every_profile_is_its_store(tmp_path: Path) -> None:
    db = _store(tmp_path)
    scope = OneStore(db)  # what `MainScreen.scope` is with one store
    assert isinstance(scope, OneStore) and scope.current is None
    assert scope.key("work", "a") == "a" and scope.key(None, "a") == "a"
    assert scope.db_for(None) is db and scope.db_for("work") is db
    assert order_source(scope) is not None


def test_nothing_open_has_no_order_and_no_store() -> None:
    assert order_source(OneStore(None)) is None
    assert OneStore(None).db_for(None) is None


def test_one_stores_first_paint_is_its_next_order_only(tmp_path: Path) -> None:
    """`first_paint` makes the next `orders()` the first paint (`first_orders`: the whole order
    here, a store too small for a head to matter, flagged for the hand-over); the ones after are
    plain `order()`s, as every reload over several stores is."""
    db = _store(tmp_path)
    one = OneStore(db)
    one.first_paint(None)
    *_heads, whole = list(one.orders(DEFAULT_FILTER, "last_active", None, None, 100))
    assert sorted(whole.keys) == ["a", "b", "c"] and whole.extra["store_total"] == 3
    assert "handover" in whole.extra
    (again,) = list(one.orders(DEFAULT_FILTER, "last_active", None, None, 100))
    assert sorted(again.keys) == ["a", "b", "c"] and "handover" not in again.extra


def test_the_scope_answers_one_store_and_several_alike(tmp_path: Path) -> None:
    """What the screen asks of `MainScreen.scope` instead of branching on `stores is None` (the
    profile shown, the store that wrote a file, a read on each store, the title rows of a
    filter, what the Usage screen reads): one store answers as a federation of one, its profile
    None; several with each store's own profile."""
    home = build_home(tmp_path / "home", broken=False)
    one_db = SessionDB(store_path(home, "work"))
    one = OneStore(one_db)
    several = BrowserStores.open(StoreChoice(all_profiles=True, home=home))
    try:
        assert one.shows_profile is False and several.shows_profile is True
        assert one.db_at(one_db.db_path) is one_db and one.db_at(store_path(home, "zeta")) is None
        assert OneStore(None).db_at(one_db.db_path) is None
        zeta = several.db_at(store_path(home, "zeta"))
        assert zeta is several.db_for("zeta") and zeta is not None
        assert several.db_at(tmp_path / "elsewhere.db") is None

        def ids(db: SessionDB) -> list[str]:
            return sorted(r["id"] for r in db.list_rows(db.session_order(DEFAULT_FILTER).ids))

        assert one.each(ids, None) == [(None, ["s-shared", "w-2", "w-3"])]
        assert dict(several.each(ids, None)) == {
            p: sorted(s for s, _t, _m in LAYOUT[p]) for p in ("default", "work", "zeta")
        }
        assert several.each(ids, ("zeta",)) == [("zeta", ["z-1"])]

        flt = SessionFilter(text="two")
        assert [r["id"] for r in one.title_rows(flt, None, 10)] == ["w-2"]
        rows = several.title_rows(flt, None, 10)
        assert [(r["profile"], r["id"]) for r in rows] == [("default", "d-2"), ("work", "w-2")]
        assert [r["id"] for r in several.title_rows(flt, ("default",), 10)] == ["d-2"]
        assert len(several.title_rows(DEFAULT_FILTER, None, 2)) == 2
        assert expected_order(home)[:2] == [
            (r["profile"], r["id"]) for r in several.title_rows(DEFAULT_FILTER, None, 2)
        ]
        assert OneStore(None).title_rows(flt, None, 10) == []
        usage = one.usage_source()
        assert usage is not None and usage.db is one_db and not usage.federated
        assert OneStore(None).usage_source() is None
        usage = several.usage_source()
        assert usage is not None and usage.fed is several.fed
        assert usage.profiles == ("default", "work", "zeta")
    finally:
        several.close()
        one_db.close()
