"""The browser's first `session_order` on a cold file.

The unfiltered last-active order reads its ids from the `id` index instead of scanning every
`sessions` row, and on a file that is not in the page cache a few threads read the message index
ahead of the statement. Neither may change a single id or key: every test here compares against an
independent Python reference of the order.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import apsw
import pytest

import hermes_tui.state.listing as listing
from hermes_tui.state import SessionDB, SessionFilter
from hermes_tui.state.errors import StoreError
from hermes_tui.state.text import TS_MAX
from tests.peer.conftest import peer_factory, peer_venv_python  # noqa: F401 - fixtures

BASE = 1_700_000_000.0
#: The unfiltered order (every session as itself): what reads no `sessions` row. The default
#: filter is Hermes' list (flags, children folded), which must read each row.
EVERY = SessionFilter.every_session()


def _usable(ts: Any) -> float | None:
    return ts if isinstance(ts, (int, float)) and 0 <= ts <= TS_MAX else None


def reference_order(path: Path) -> tuple[list[str], list[float | None]]:
    """Last activity = newest usable message timestamp, else a usable `started_at`, else unknown
    (last); ties by id descending. Computed in Python from plain row reads."""
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        last: dict[str, float] = {}
        for sid, ts in conn.execute("SELECT session_id, timestamp FROM messages"):
            if _usable(ts) is not None and (sid not in last or ts > last[sid]):
                last[sid] = ts
        rows = [
            (sid, last.get(sid, _usable(started)))
            for sid, started in conn.execute("SELECT id, started_at FROM sessions")
        ]
    finally:
        conn.close()
    rows.sort(key=lambda r: (r[1] is not None, r[1] if r[1] is not None else 0.0, r[0]), reverse=True)
    return [r[0] for r in rows], [r[1] for r in rows]


def build_store(path: Path, n: int) -> None:
    """`n` sessions: most with messages, some without (the `started_at` fallback), some whose
    newest message has an unusable timestamp, ties on last activity, a text `started_at`."""
    with SessionDB(path) as db:
        batch = []
        for i in range(n):
            sid = f"s{(i * 7919) % n:05d}"  # ids not in rowid order
            msgs = [
                {"role": "user", "content": f"m{j}", "timestamp": BASE + (i % 97) * 10 + j}
                for j in range(i % 4)
            ]
            if i % 11 == 0 and msgs:
                msgs.append({"role": "assistant", "content": "late", "timestamp": 1e300})
            batch.append(
                {
                    "id": sid,
                    "source": ("cli", "telegram")[i % 2],
                    "model": f"model-{i % 5}" if i % 7 else None,
                    "end_reason": ("user_exit", "compression", None)[i % 3],
                    "ended_at": BASE + 99 if i % 3 != 2 else None,
                    "started_at": BASE + (i % 53),
                    "messages": msgs,
                }
            )
        for k in range(0, n, 200):
            res = db.import_sessions(batch[k : k + 200])
            assert not res.get("errors"), res
        db._execute_write(lambda c: c.execute("UPDATE sessions SET started_at = 'soon' WHERE id = 's00000'"))


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cold") / "state.db"
    build_store(path, 600)
    return path


def test_order_and_keys_match_the_reference(store: Path) -> None:
    ids, keys = reference_order(store)
    assert any(k is None for k in keys) and len(set(keys)) < len(keys)  # unknowns and ties exist
    with SessionDB(store, read_only=True, migrate=False) as db:
        assert db.session_order(EVERY).ids == ids
        got = db.session_order(EVERY, with_keys=True)
        assert got.ids == ids and got.keys == keys


def traced_plan(db: SessionDB, call: Callable[[], object], marker: str) -> list[str]:
    """The query plan of the statement containing `marker` that `call` runs on this thread."""
    conn = db._conn()
    statements: list[tuple[str, Any]] = []

    def trace(_cursor: Any, sql: str, bindings: Any) -> bool:
        statements.append((sql, bindings))
        return True

    conn.exec_trace = trace
    try:
        call()
    finally:
        conn.exec_trace = None
    (sql, bindings), *_ = [st for st in statements if marker in st[0]]
    return [r[3] for r in conn.execute("EXPLAIN QUERY PLAN " + sql, bindings or ())]


def test_unfiltered_order_reads_no_session_row(store: Path) -> None:
    """The statement `session_order` runs scans the covering `id` index: a table scan read every
    session row of a cold file."""
    with SessionDB(store, read_only=True, migrate=False) as db:
        plan = traced_plan(db, lambda: db.session_order(EVERY), "json_group_array(id)")
    assert any("USING COVERING INDEX sqlite_autoindex_sessions_1" in p for p in plan), plan
    assert not any(p == "SCAN s" for p in plan), plan


def _force_warming(monkeypatch: pytest.MonkeyPatch) -> list[list[tuple[str, tuple[Any, ...]]]]:
    """Warm on every call (any size, any probe time); returns the statements the threads ran."""
    monkeypatch.setattr(listing, "_WARM_MIN_SESSIONS", 1)
    monkeypatch.setattr(listing, "_WARM_COLD_PROBE_S", -1.0)
    seen: list[list[tuple[str, tuple[Any, ...]]]] = []
    real = listing.ListingMixin._warm_run

    def spy(self: Any, statements: list[tuple[str, tuple[Any, ...]]]) -> None:
        seen.append(statements)
        real(self, statements)

    monkeypatch.setattr(listing.ListingMixin, "_warm_run", spy)
    return seen


def _no_new_warm_threads(before: set[int | None]) -> bool:
    return not [t for t in threading.enumerate() if t.name == "hermes-warm-read" and t.ident not in before]


def test_warming_a_cold_file_keeps_the_result(store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _force_warming(monkeypatch)
    ids, keys = reference_order(store)
    before = {t.ident for t in threading.enumerate()}
    with SessionDB(store, read_only=True, migrate=False) as db:
        got = db.session_order(EVERY, with_keys=True)
        assert _no_new_warm_threads(before)  # joined before returning: no reader keeps a snapshot
    assert got.ids == ids and got.keys == keys
    assert len(seen) == listing._WARM_THREADS - 1
    # Consecutive, non-overlapping id ranges (as the message index is read), the last open-ended.
    ranges = [job[1][1] for job in seen]
    assert all("idx_messages_session" in job[1][0] for job in seen)
    assert ranges == sorted(ranges) and len(ranges[-1]) == 1
    assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:], strict=False))


def test_warming_a_model_scan_keeps_the_result(store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`distinct_values` of a column no index starts with reads rowid ranges ahead (cold file)."""
    conn = apsw.Connection(str(store), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        expected = conn.execute(
            "SELECT model, COUNT(*) FROM sessions NOT INDEXED WHERE model IS NOT NULL GROUP BY model "
            "ORDER BY COUNT(*) DESC, model"
        ).fetchall()
        expected_reasons = conn.execute(
            "SELECT end_reason, COUNT(*) FROM sessions NOT INDEXED WHERE end_reason IS NOT NULL "
            "GROUP BY end_reason ORDER BY COUNT(*) DESC, end_reason"
        ).fetchall()
    finally:
        conn.close()
    assert len(expected) > 2 and len(expected_reasons) >= 2
    seen = _force_warming(monkeypatch)
    before = {t.ident for t in threading.enumerate()}
    with SessionDB(store, read_only=True, migrate=False) as db:
        assert not db._indexed_first("sessions", "end_reason") and db._indexed_first("sessions", "source")
        assert [tuple(r) for r in db.distinct_values("end_reason")] == expected_reasons
        assert _no_new_warm_threads(before)
        assert len(seen) == listing._WARM_THREADS - 1
        bounds = [job[0][1] for job in seen]
        assert all(a[1] == b[0] for a, b in zip(bounds, bounds[1:], strict=False))
        seen.clear()
        db.distinct_values("source")  # an index starts with it: nothing to warm
        assert seen == []
        assert [tuple(r) for r in db.distinct_values("model")] == expected


def test_no_warming_when_warm_small_or_filtered(store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _force_warming(monkeypatch)
    with SessionDB(store, read_only=True, migrate=False) as db:
        db.session_order(EVERY, order="started")
        assert seen == []
        monkeypatch.setattr(listing, "_WARM_COLD_PROBE_S", 10.0)  # the probe says: cached
        db.session_order(EVERY)
        assert seen == []
        monkeypatch.setattr(listing, "_WARM_COLD_PROBE_S", -1.0)
        monkeypatch.setattr(listing, "_WARM_MIN_SESSIONS", 10_000)  # a small store
        db.session_order(EVERY)
        assert seen == []


def test_warming_a_filtered_order_also_reads_the_rows_ahead(
    store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A filter (Hermes' default list reads every row's flags and kind) scans `sessions` in rowid
    order and seeks the message index in that order: the warmers read every id range of the
    message index and the rowid ranges ahead of the scan. The result is the unwarmed one."""
    with SessionDB(store, read_only=True, migrate=False) as db:
        cold = {
            f: db.session_order(f, with_keys=True) for f in (SessionFilter(), SessionFilter(sources=("cli",)))
        }
    seen = _force_warming(monkeypatch)
    with SessionDB(store, read_only=True, migrate=False) as db:
        for flt, expected in cold.items():
            seen.clear()
            got = db.session_order(flt, with_keys=True)
            assert (got.ids, got.keys) == (expected.ids, expected.keys)
            statements = [sql for job in seen for sql, _args in job]
            assert sum("rowid >= ? AND rowid < ?" in sql for sql in statements) == listing._WARM_THREADS - 1
            assert any("session_id < ?" in sql for sql in statements)  # the first id range too


def test_a_failing_warmer_changes_nothing(store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _force_warming(monkeypatch)

    def refuse(*_a: Any, **_k: Any) -> apsw.Connection:
        raise StoreError("no more connections")

    monkeypatch.setattr(listing, "open_connection", refuse)
    with SessionDB(store, read_only=True, migrate=False) as db:
        assert db.session_order(EVERY).ids == reference_order(store)[0]


@pytest.mark.peer
def test_v22_file_of_the_peer_reads_the_same_and_stays_v22(
    peer_factory: Any,  # noqa: F811 - the fixture
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A file hermes-agent 0.19.0 wrote: browsing orders it exactly, with the same index-only plan
    (its `id` index is SQLite's own), and neither the order nor its warming migrates it."""
    path = tmp_path / "state.db"
    peer = peer_factory(path)
    for i in range(40):
        sid = f"p{(i * 17) % 40:03d}"
        peer.call("create_session", sid, "cli")
        for j in range(i % 3):
            peer.call("append_message", sid, "user", f"hello {i} {j}")
    peer.close()
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        version = conn.execute("SELECT version FROM schema_version").fetchall()[0][0]
        master = sorted(conn.execute("SELECT type, name, sql FROM sqlite_master").fetchall(), key=str)
    finally:
        conn.close()
    assert version == 22
    _force_warming(monkeypatch)
    ids, keys = reference_order(path)
    with SessionDB(path, read_only=True, migrate=False) as db:
        got = db.session_order(EVERY, with_keys=True)
    assert got.ids == ids and got.keys == keys
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        assert conn.execute("SELECT version FROM schema_version").fetchall()[0][0] == 22
        assert sorted(conn.execute("SELECT type, name, sql FROM sqlite_master").fetchall(), key=str) == master
    finally:
        conn.close()


def _master(path: Path) -> list[tuple[Any, ...]]:
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return sorted(conn.execute("SELECT type, name, sql FROM sqlite_master").fetchall(), key=str)
    finally:
        conn.close()


def _v23_without_model_index(path: Path) -> None:
    """A v23 file as this code wrote it before `idx_sessions_model` existed."""
    with SessionDB(path) as db:
        for i in range(30):
            db.create_session(f"s{i}", "cli", model=f"m{i % 4}" if i % 5 else None)
    conn = apsw.Connection(str(path))
    conn.execute("DROP INDEX idx_sessions_model")
    conn.close()


def test_model_index_reaches_an_older_v23_file_on_a_writer_open_only(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    _v23_without_model_index(path)
    before = _master(path)
    expected = [("m1", 6), ("m2", 6), ("m3", 6), ("m0", 6)]
    for kw in ({"read_only": True, "migrate": False}, {"migrate": False}):
        with SessionDB(path, **kw) as db:  # browsing: answers the same, changes no structure
            assert sorted(db.distinct_values("model")) == sorted(expected)
        assert _master(path) == before
    with SessionDB(path) as db:
        assert db._scalar("SELECT version FROM schema_version") == 23
        assert db._scalar("SELECT COUNT(*) FROM sqlite_master WHERE name = 'idx_sessions_model'") == 1
        assert sorted(db.distinct_values("model")) == sorted(expected)
        plan = traced_plan(db, lambda: db.distinct_values("model"), "GROUP BY model")
        assert any("COVERING INDEX idx_sessions_model" in p for p in plan), plan


@pytest.mark.peer
def test_peer_keeps_writing_a_file_with_the_model_index(
    peer_factory: Any,  # noqa: F811 - the fixture
    tmp_path: Path,
) -> None:
    """A file hermes-agent 0.19.0 wrote, brought to v23 by our writer open (which adds the index):
    0.19.0 keeps writing sessions into it (and deleting one), the index stays consistent and the
    file stays v23."""
    path = tmp_path / "state.db"
    peer = peer_factory(path)
    for i in range(6):
        peer.call("create_session", f"s{i}", "cli", model=f"m{i % 2}")
    peer.close()
    with SessionDB(path) as db:
        assert db._scalar("SELECT version FROM schema_version") == 23
        assert db._scalar("SELECT COUNT(*) FROM sqlite_master WHERE name = 'idx_sessions_model'") == 1
    peer = peer_factory(path)
    peer.call("create_session", "peer1", "telegram", model="m-peer")
    peer.call("append_message", "peer1", "user", "from the peer")
    peer.call("create_session", "peer2", "cli", model="m-peer")
    peer.call("delete_session", "s1")
    peer.close()
    with SessionDB(path, read_only=True, migrate=False) as db:
        assert db._scalar("PRAGMA integrity_check") == "ok"
        assert db._scalar("SELECT version FROM schema_version") == 23
        assert dict(db.distinct_values("model")) == {"m-peer": 2, "m0": 3, "m1": 2}
