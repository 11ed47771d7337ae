"""The merged session list and the federated search over several profiles' stores.

Ground truth is computed here from the rows written, independently of the store's SQL and of
`federation.row_key`: the merged order must equal sorting the union of the stores.
"""

from __future__ import annotations

import tempfile
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from hermes_tui.state import SessionDB, SessionFilter
from hermes_tui.state.federation import MergedOrder, OrderKeys, RowKeys, open_stores
from hermes_tui.state.listing import ORDERS
from hermes_tui.state.profiles import StoreRef
from hermes_tui.state.text import TS_MAX

# Few distinct values, so ties (within and across stores) are common; hostile ones included.
_STARTS = st.sampled_from([100.0, 200.0, 200, 300.5, 1e300, -5.0, "yesterday"])
_NUMS = st.sampled_from([0, 1, 2, 2.0, 7, None, "many", 2**62, 2**62 + 1])
_COSTS = st.sampled_from([None, 0.0, 0.5, 1, "n/a"])
_MSG_TS = st.lists(st.sampled_from([150.0, 250.0, 250, 350.0, 1e300, "x"]), max_size=3)

_SESSION = st.tuples(_STARTS, _NUMS, _NUMS, _NUMS, _COSTS, _COSTS, _MSG_TS)
_STORE = st.lists(_SESSION, max_size=7)


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _date(v: Any) -> Any:
    return v if _number(v) and 0 <= v <= TS_MAX else None


def _n(v: Any) -> Any:
    return v if _number(v) else 0


def truth_key(order: str, s: dict[str, Any]) -> Any:
    """The documented meaning of each order, from the values written."""
    if order == "started":
        return _date(s["started_at"])
    if order == "last_active":
        dates = [_date(t) for t in s["msg_ts"] if _date(t) is not None]
        return max(dates) if dates else _date(s["started_at"])
    if order == "messages":
        return _n(s["message_count"])
    if order == "tokens":
        total = _n(s["input_tokens"]) + _n(s["output_tokens"])
        return float(total) if total >= 2**63 else total  # SQLite's integer + overflows into REAL
    return s["actual_cost_usd"] if _number(s["actual_cost_usd"]) else _n(s["estimated_cost_usd"])


def sorted_union(stores: dict[str, list[dict[str, Any]]], order: str) -> list[tuple[str, str]]:
    """Every (profile, id) sorted by key descending (unknown last), then profile, then id descending."""
    union = [(p, s) for p, sessions in stores.items() for s in sessions]
    union.sort(key=lambda ps: ps[1]["id"], reverse=True)
    union.sort(
        key=lambda ps: ((1, 0) if truth_key(order, ps[1]) is None else (0, -truth_key(order, ps[1])), ps[0])
    )
    return [(p, s["id"]) for p, s in union]


def write_store(path: Path, sessions: list[tuple[Any, ...]]) -> list[dict[str, Any]]:
    """A v23 store with these sessions, values written raw (text in counters, 1e300 dates) on the
    store's own connection (its FTS triggers need the tokenizer it installs). Returns the values
    as stored (column affinity applied: 2.0 in an INTEGER column is stored as 2)."""
    store = SessionDB(path)
    conn = store._conn()
    with conn:
        for i, (start, mc, tin, tout, est, act, msg_ts) in enumerate(sessions):
            sid = f"s{i}"
            conn.execute(
                "INSERT INTO sessions (id, source, started_at, message_count, input_tokens, output_tokens, "
                "estimated_cost_usd, actual_cost_usd) VALUES (?, 'cli', ?, ?, ?, ?, ?, ?)",
                (sid, start, mc, tin, tout, est, act),
            )
            for ts in msg_ts:
                conn.execute(
                    "INSERT INTO messages (session_id, role, content, timestamp) VALUES (?, 'user', 'hi', ?)",
                    (sid, ts),
                )
    cols = (
        "id",
        "started_at",
        "message_count",
        "input_tokens",
        "output_tokens",
        "estimated_cost_usd",
        "actual_cost_usd",
    )
    out = [
        dict(zip(cols, row, strict=True)) for row in conn.execute(f"SELECT {', '.join(cols)} FROM sessions")
    ]
    for s in out:
        s["msg_ts"] = [
            r[0] for r in conn.execute("SELECT timestamp FROM messages WHERE session_id = ?", (s["id"],))
        ]
    store.close()
    return out


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    stores=st.lists(_STORE, min_size=1, max_size=3),
    block=st.integers(1, 4),
    cuts=st.lists(st.integers(1, 6), min_size=1, max_size=6),
)
# Token sums past 2**63 are REAL in SQLite (equal here), though the exact integers differ.
@example(
    stores=[[(1.0, 0, 2**62 + 1, 2**62 + 1, None, None, [])], [(1.0, 0, 2**62, 2**62, None, None, [])]],
    block=1,
    cuts=[1],
)
def test_merged_order_equals_sorting_the_union(
    stores: list[list[tuple[Any, ...]]], block: int, cuts: list[int]
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        names = ["work", "alpha", "zeta"][: len(stores)]
        written = {
            name: write_store(Path(tmp) / f"{name}.db", sessions)
            for name, sessions in zip(names, stores, strict=False)
        }
        refs = [StoreRef(name, Path(tmp) / f"{name}.db") for name in names]
        with open_stores(refs, read_only=True) as fed:
            assert fed.profiles == names
            for order, source in [(o, k) for o in ORDERS for k in (OrderKeys(), RowKeys())]:
                expected = sorted_union(written, order)
                merged = MergedOrder(fed, order=order, block=block, keys=source)
                assert len(merged) == len(expected)
                assert merged.counts == {n: len(written[n]) for n in names}
                # Read in pages of varying sizes (the merge advances lazily, a block of keys at a time).
                got: list[tuple[str, str]] = []
                i = 0
                for n in cuts * 20:
                    if i >= len(expected):
                        break
                    got += merged.pairs(i, n)
                    i += n
                assert got == expected, order
                # Going back re-reads what was merged.
                assert merged.pairs(0, len(expected)) == expected
                # Each store's own order is kept.
                for name in names:
                    own = fed.call(name, SessionDB.session_order, None, order).ids
                    assert [sid for p, sid in expected if p == name] == own
                    # The keys taken with the ids are the documented values, aligned, same ids.
                    keyed = fed.call(name, SessionDB.session_order, None, order, with_keys=True)
                    assert keyed.ids == own
                    by_id = {s["id"]: s for s in written[name]}
                    assert keyed.keys == [truth_key(order, by_id[i]) for i in own], order


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(stores=st.lists(_STORE, min_size=1, max_size=3), width=st.integers(1, 4))
def test_seeking_anywhere_equals_sorting_the_union(stores: list[list[tuple[Any, ...]]], width: int) -> None:
    """A page read at any offset of a fresh merged order (found by binary search, nothing
    before it merged) and the position of every session equal the sorted union's."""
    with tempfile.TemporaryDirectory() as tmp:
        names = ["work", "alpha", "zeta"][: len(stores)]
        written = {
            name: write_store(Path(tmp) / f"{name}.db", sessions)
            for name, sessions in zip(names, stores, strict=False)
        }
        with open_stores([StoreRef(n, Path(tmp) / f"{n}.db") for n in names], read_only=True) as fed:
            for order in ORDERS:
                expected = sorted_union(written, order)
                for off in range(len(expected) + 1):
                    merged = MergedOrder(fed, order=order)
                    assert merged.pairs(off, width) == expected[off : off + width], (order, off)
                    assert not merged._merge.merged  # found by seeking, not by merging the front
                merged = MergedOrder(fed, order=order)
                for i, (profile, sid) in enumerate(reversed(expected)):
                    assert merged.index_of(profile, sid) == len(expected) - 1 - i, order


def test_a_run_whose_keys_are_not_sorted_is_merged_from_the_start(
    three, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Keys not in the run's order (never from `session_order`, which sorts by them) cannot be
    binary searched: the merge reads forward instead and still loses or repeats nothing."""
    fed, _written = three
    real = SessionDB.session_order

    def unsorted(db: SessionDB, *args: Any, **kwargs: Any) -> Any:
        got = real(db, *args, **kwargs)
        if db is fed.dbs["work"] and got.keys:
            got.keys.reverse()
        return got

    monkeypatch.setattr(SessionDB, "session_order", unsorted)
    merged = fed.session_order(order="messages")
    monkeypatch.undo()
    assert not merged._seek
    work = next(r for r in merged._runs if r.profile == "work")
    pairs = [merged.pairs(i, 1)[0] for i in range(len(merged))]
    assert sorted(pairs) == sorted(
        (p, s) for p in ("home", "work", "play") for s in fed.call(p, SessionDB.session_order).ids
    )
    assert [sid for p, sid in pairs if p == "work"] == work.order.ids  # the store's order kept


@pytest.fixture
def three(tmp_path: Path):
    """Three stores (two share ids) opened together."""
    data = {
        "home": [(100.0, 3, 10, 5, None, 0.25, [150.0]), (200.0, 1, 0, 0, 0.1, None, [])],
        "work": [
            (150.0, 2, 1, 1, None, None, [400.0, 120.0]),
            (200.0, 9, 5, 5, 2.0, None, [250.0]),
            (50.0, 0, 0, 0, None, None, []),
        ],
        "play": [(200.0, 4, 2, 2, None, 1.0, [])],
    }
    written = {name: write_store(tmp_path / f"{name}.db", rows) for name, rows in data.items()}
    fed = open_stores([StoreRef(n, tmp_path / f"{n}.db") for n in data])
    yield fed, written
    fed.close()


def test_page_rows_carry_profile_and_match_pairs(three) -> None:
    fed, written = three
    merged = fed.session_order(order="last_active")
    pairs = merged.pairs(0, 10)
    assert pairs == sorted_union(written, "last_active")
    assert pairs[:2] == [("work", "s0"), ("work", "s1")]  # 400, then the 250 message
    rows = merged.page(0, 10)
    assert [(r["profile"], r["id"]) for r in rows] == pairs
    # Ids are only unique within a store: both s0 rows are there, each with its own data.
    s0 = {r["profile"]: r for r in rows if r["id"] == "s0"}
    assert s0["home"]["message_count"] == 3 and s0["work"]["message_count"] == 2
    assert merged.index_of("play", "s0") == pairs.index(("play", "s0"))
    assert merged.index_of("play", "nope") is None and merged.index_of("nobody", "s0") is None


def test_profile_filter_and_session_filter(three) -> None:
    fed, written = three
    merged = fed.session_order(order="started", profiles=["play", "home"])
    assert merged.profiles == ["home", "play"]  # discovery order, not the order asked
    assert merged.all_pairs() == sorted_union({k: written[k] for k in ("home", "play")}, "started")
    only = fed.session_order(SessionFilter(text="s1"), order="messages")
    assert only.counts == {"home": 1, "work": 1, "play": 0}
    assert only.all_pairs() == [("work", "s1"), ("home", "s1")]


def test_a_failing_store_does_not_fail_the_list(three) -> None:
    fed, written = three
    merged = fed.session_order(order="started", block=1, keys=RowKeys())
    keyed = fed.session_order(order="started", block=1)  # OrderKeys: every key read with the ids
    assert len(merged) == 6
    fed.dbs["work"].close()  # the store goes away after its order was taken: its key reads fail
    # With the keys in hand the merge still places work's sessions; reading their rows fails.
    assert keyed.pairs(0, 10) == sorted_union(written, "started")
    assert [(r["profile"], r["id"]) for r in keyed.page(0, 10)] == sorted_union(
        {k: written[k] for k in ("home", "play")}, "started"
    )
    assert "closed" in keyed.errors["work"].message
    others = sorted_union({k: written[k] for k in ("home", "play")}, "started")
    assert merged.pairs(0, 10) == others
    assert merged.errors["work"].kind == "StoreError" and "closed" in merged.errors["work"].message
    assert [(r["profile"], r["id"]) for r in merged.page(0, 10)] == others
    again = fed.session_order(order="started")
    assert again.profiles == ["home", "play"] and "work" in again.errors
    assert again.all_pairs() == others and len(again) == 3


def test_rows_of_a_store_failing_between_merge_and_page_are_left_out(three) -> None:
    fed, written = three
    merged = fed.session_order(order="cost")
    pairs = merged.pairs(0, 10)
    fed.dbs["home"].close()
    rows = merged.page(0, 10)
    assert [(r["profile"], r["id"]) for r in rows] == [pr for pr in pairs if pr[0] != "home"]
    assert "home" in merged.errors


def test_unknown_order_is_refused(three) -> None:
    fed, _ = three
    with pytest.raises(ValueError):
        fed.session_order(order="title")


# ---------------------------------------------------------------------- federated search
def _search_store(path: Path, hits: list[tuple[float, str]]) -> None:
    db = SessionDB(path)
    try:
        for i, (ts, text) in enumerate(hits):
            sid = f"s{i % 3}"
            db.ensure_session(sid, "cli")
            db.append_message(sid, "user", text, timestamp=ts)
    finally:
        db.close()


@pytest.fixture
def searchable(tmp_path: Path):
    stores = {
        "home": [
            (100.0, "docker build"),
            (300.0, "docker docker docker"),
            (300.0, "docker run"),
            (50.0, "cat"),
        ],
        "work": [
            (300.0, "docker compose up"),
            (200.0, "docker"),
            (400.0, "kubernetes and docker"),
            (100.0, "docker docker swarm"),
            (250.0, "docker"),
            (250.0, "docker images"),
        ],
        "play": [(300.0, "docker"), (10.0, "nothing here")],
    }
    for name, hits in stores.items():
        _search_store(tmp_path / f"{name}.db", hits)
    fed = open_stores([StoreRef(n, tmp_path / f"{n}.db") for n in stores])
    yield fed
    fed.close()


def _per_store(fed, sort: str | None) -> dict[str, list[dict[str, Any]]]:
    return {
        p: fed.call(p, SessionDB.search, "docker", limit=1000, sort=sort, context=False).results
        for p in fed.profiles
    }


def _expected(per: dict[str, list[dict[str, Any]]], sort: str) -> list[tuple[str, int]]:
    tagged = [(p, pos, r) for p, rows in per.items() for pos, r in enumerate(rows)]
    if sort == "newest":
        tagged.sort(key=lambda t: (-t[2]["timestamp"], t[0], t[1]))
    elif sort == "oldest":
        tagged.sort(key=lambda t: (t[2]["timestamp"], t[0], t[1]))
    else:
        tagged.sort(key=lambda t: (t[1], t[0]))
    return [(p, r["id"]) for p, _pos, r in tagged]


@pytest.mark.parametrize("sort", ["newest", "oldest", "rank"])
@pytest.mark.parametrize("page_size", [1, 2, 3, 7, 100])
def test_federated_search_equals_per_store_search_merged(searchable, sort: str, page_size: int) -> None:
    fed = searchable
    expected = _expected(_per_store(fed, None if sort == "rank" else sort), sort)
    assert len(expected) == 10
    fs = fed.search("docker", sort=sort)
    got: list[tuple[str, int]] = []
    offset = 0
    while True:
        page = fs.page(offset, page_size)
        got += [(h["profile"], h["id"]) for h in page]
        if len(page) < page_size:
            break
        offset += page_size
    assert got == expected
    # Paging again (backwards, out of order) gives the same slices.
    assert [(h["profile"], h["id"]) for h in fs.page(3, 4)] == expected[3:7]
    # A fresh search asked for a deep page first agrees too (each store read only that far).
    deep = fed.search("docker", sort=sort).page(5, 3)
    assert [(h["profile"], h["id"]) for h in deep] == expected[5:8]
    assert fs.errors == {}


def test_newest_first_is_by_timestamp_with_ties_by_profile(searchable) -> None:
    hits = searchable.search("docker", sort="newest").page(0, 100)
    stamps = [h["timestamp"] for h in hits]
    assert stamps == sorted(stamps, reverse=True)
    at_300 = [h["profile"] for h in hits if h["timestamp"] == 300.0]
    assert at_300 == ["home", "home", "play", "work"]


def test_counts_per_profile_and_routes(searchable) -> None:
    fs = searchable.search("docker", sort="newest")
    counts = fs.counts()
    assert counts == {"home": (3, True), "work": (6, True), "play": (1, True)}
    assert counts == {p: searchable.call(p, SessionDB.search_count, "docker") for p in searchable.profiles}
    fs.page(0, 5)
    assert set(fs.routes.values()) == {"fts5"}
    assert searchable.search("docker", profiles=["play"]).page(0, 10)[0]["profile"] == "play"


def test_a_failing_store_does_not_fail_the_search(searchable) -> None:
    fed = searchable
    expected = _expected({p: r for p, r in _per_store(fed, "newest").items() if p != "work"}, "newest")
    fed.dbs["work"].close()
    fs = fed.search("docker", sort="newest")
    assert [(h["profile"], h["id"]) for h in fs.page(0, 100)] == expected
    assert fs.errors["work"].kind == "StoreError" and "closed" in fs.errors["work"].message
    counts = fs.counts()
    assert set(counts) == {"home", "play"} and "work" in fs.errors


def test_unknown_sort_is_refused(searchable) -> None:
    with pytest.raises(ValueError):
        searchable.search("docker", sort="best")


def test_a_page_reads_each_store_once_and_earlier_pages_are_kept(searchable, monkeypatch) -> None:
    calls: list[tuple[str, int, int]] = []
    real = SessionDB.search

    def spy(self: SessionDB, query: str, *args: Any, **kwargs: Any) -> Any:
        calls.append((self.db_path.stem, kwargs.get("offset", 0), kwargs.get("limit", 20)))
        return real(self, query, *args, **kwargs)

    monkeypatch.setattr(SessionDB, "search", spy)
    fs = searchable.search("docker", sort="newest")
    fs.page(2, 3)
    assert sorted(calls) == [("home", 0, 5), ("play", 0, 5), ("work", 0, 5)]
    calls.clear()
    fs.page(0, 4)  # already merged: no store is read again
    assert calls == []
    fs.page(4, 4)  # home (3 hits) and play (1) are known to be exhausted: only work is read on
    assert calls == [("work", 5, 3)]


# ---------------------------------------------------------------------- search threads
_ENDLESS = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"


def _endless(db: SessionDB, started: threading.Event) -> Any:
    """A read that never ends unless interrupted (a stand-in for a slow superseded query)."""
    started.set()
    return db._conn().execute(_ENDLESS).fetchall()


def test_searches_run_beside_list_reads_and_a_new_query_stops_the_old(three) -> None:
    """A search runs on the store's search thread: the list's reads do not wait for it, and
    `cancel_searches` interrupts the running one and drops the queued ones, so the next query
    is answered at once (before: one thread per store, each keystroke's search queued behind
    the previous ones)."""
    fed, written = three
    started = threading.Event()
    running = fed.submit_search("work", _endless, started)
    queued = fed.submit_search("work", _endless, threading.Event())
    assert started.wait(10)
    try:
        # The list's thread is free while the search thread is busy.
        rows = fed.submit("work", SessionDB.list_rows, ["s0"]).result(timeout=10)
        assert [r["id"] for r in rows] == ["s0"]
    finally:
        fed.cancel_searches()
    with pytest.raises(Exception, match="(?i)interrupt"):
        running.result(timeout=10)
    assert queued.cancelled()
    # The next query runs now, on the same thread, undisturbed by the interrupt.
    hits = fed.submit_search("work", SessionDB.search_messages, "hi").result(timeout=10)
    assert len(hits) == sum(len(s["msg_ts"]) for s in written["work"])


@pytest.mark.parametrize(
    ("keys", "ok"),
    [
        ([3, 2.5, 2, 2, None, None], True),
        ([], True),
        ([None], True),
        ([2**62 + 1, 2**62, 1e300 * 0 + 5], True),
        ([1, 2], False),
        ([None, 1], False),
        ([3, None, 2], False),
        ([float("nan"), 1], False),
        (["a"], False),
        ([True, 0], False),
    ],
)
def test_only_keys_in_merge_order_are_binary_searched(keys: list[Any], ok: bool) -> None:
    """The check that lets the merge binary search a store's keys: numbers largest first, then
    unknowns; anything else (never from `session_order`) makes it read forward instead."""
    from hermes_tui.state.federation import _sorted_desc

    assert _sorted_desc(keys) is ok
