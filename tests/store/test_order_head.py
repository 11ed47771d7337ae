"""`session_order_head`: the first ids of an order, read without computing the whole order (the
browser paints them first on a large cold store, issue #21).

Checked against `session_order` itself (whose exactness `test_cold_order.py` checks against a
Python reference): the head must be the order's first ids where the store can tell them (a
store written live, the `started` order), and otherwise a subset of the order in its order.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes_tui.state import SessionDB, SessionFilter
from tests.store.test_cold_order import build_store

BASE = 1_700_000_000.0


def build_live(path: Path, sessions: int, rounds: int) -> None:
    """A store written as agents write it: sessions interleaved, every message newer than the
    last one (so message ids grow with time), some sessions without messages, some children,
    two sources, and ties on `started_at`."""
    with SessionDB(path) as db:
        for i in range(sessions):
            db.create_session(
                f"live{i:04d}",
                ("cli", "telegram")[i % 2],
                parent_session_id=f"live{i - 1:04d}" if i % 9 == 0 and i else None,
            )
            db._execute_write(
                lambda c, i=i: c.execute(
                    "UPDATE sessions SET started_at = ? WHERE id = ?", (BASE + i // 3, f"live{i:04d}")
                )
            )
        t = BASE + sessions
        for r in range(rounds):
            for i in range(sessions):
                if i % 13 == 5 or (i * 7 + r) % 3 == 0:
                    continue  # never any message / not in this round
                t += 1.0
                db.append_message(f"live{i:04d}", "user", f"m{r}", timestamp=t)


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("head") / "state.db"
    build_live(path, 240, 4)
    return path


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`test_cold_order`'s store: imported history, timestamps unrelated to message ids."""
    path = tmp_path_factory.mktemp("head-imported") / "state.db"
    build_store(path, 600)
    return path


FILTERS = [
    SessionFilter(),
    SessionFilter(sources=("telegram",)),
    SessionFilter(include_children=False),
]


@pytest.mark.parametrize("flt", FILTERS, ids=["all", "source", "roots"])
@pytest.mark.parametrize("limit", [1, 50, 100])
def test_head_of_a_live_store_is_the_first_page(live: Path, flt: SessionFilter, limit: int) -> None:
    with SessionDB(live, read_only=True, migrate=False) as db:
        for order in ("last_active", "started"):
            full = db.session_order(flt, order=order).ids
            head = db.session_order_head(flt, order, limit)
            assert head is not None, order
            assert head.ids == full[:limit], (order, limit)
            assert head.exact == (order == "started")


def test_head_of_imported_history_is_in_the_orders_order(imported: Path) -> None:
    """Where message ids do not follow time the head may miss a session, never misorder one."""
    with SessionDB(imported, read_only=True, migrate=False) as db:
        for flt in FILTERS:
            full = db.session_order(flt).ids
            head = db.session_order_head(flt, "last_active", 50)
            assert head is not None and not head.exact and len(head.ids) == 50
            position = {sid: n for n, sid in enumerate(full)}
            assert all(sid in position for sid in head.ids)
            assert sorted(head.ids, key=position.__getitem__) == head.ids
            started = db.session_order_head(flt, "started", 50)
            assert started is not None and started.ids == db.session_order(flt, "started").ids[:50]


def test_no_head_where_no_walk_finds_it(live: Path, tmp_path: Path) -> None:
    """None (wait for the whole order) for orders without an index, a text filter, a filter
    that the walk cannot fill, and a store smaller than the page."""
    with SessionDB(live, read_only=True, migrate=False) as db:
        for order in ("messages", "tokens", "cost"):
            assert db.session_order_head(SessionFilter(), order, 50) is None
        assert db.session_order_head(SessionFilter(text="live00"), "last_active", 5) is None
        assert db.session_order_head(SessionFilter(sources=("nowhere",)), "last_active", 5) is None
        assert db.session_order_head(SessionFilter(sources=("nowhere",)), "started", 5) is None
        assert db.session_order_head(SessionFilter(), "last_active", 0) is None
        with pytest.raises(ValueError):
            db.session_order_head(SessionFilter(), "bogus", 5)
    small = tmp_path / "small.db"
    build_live(small, 20, 2)
    with SessionDB(small, read_only=True, migrate=False) as db:
        assert db.session_order_head(SessionFilter(), "last_active", 50) is None
        assert db.session_order_head(SessionFilter(), "started", 50) is None


def test_unusable_dates_sort_as_the_order_sorts_them(tmp_path: Path) -> None:
    """A session whose only message has a date-less timestamp, one with a text `started_at`, a
    new session without messages (first: found by its start, not by a message): keyed by the
    order's own expression (unknown last), so the head still matches."""
    path = tmp_path / "odd.db"
    build_live(path, 80, 2)
    with SessionDB(path) as db:
        db.create_session("odd-late", "cli")
        db.append_message("odd-late", "user", "x", timestamp=1e300)  # unusable: falls back to start
        db._execute_write(
            lambda c: c.execute("UPDATE sessions SET started_at = 'soon' WHERE id = 'live0003'")
        )
        db.create_session("fresh", "cli")  # started now: newer than every message
    with SessionDB(path, read_only=True, migrate=False) as db:
        full = db.session_order(SessionFilter()).ids
        assert full[0] == "fresh" and "odd-late" in full[:60]
        head = db.session_order_head(SessionFilter(), "last_active", 60)
        assert head is not None and head.ids == full[:60]
        started = db.session_order_head(SessionFilter(), "started", 60)
        assert started is not None and started.ids == db.session_order(SessionFilter(), "started").ids[:60]
