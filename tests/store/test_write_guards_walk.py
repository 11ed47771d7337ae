"""`read_guards` finds a turn lease's sessions by walking down from the lease's key; it must find
exactly the ids whose own walk up (`conversation_key`, the writer's rule) ends at that key, on any
shape of lineage: compression chains, forks (branch, delegate, reset, tool), cycles, rows that
are missing, leases keyed by a continuation instead of its root."""

from __future__ import annotations

import json
import time

import apsw
from hypothesis import given, settings
from hypothesis import strategies as st

from hermes_tui.state.write_guards import LEASES, LOCKS, conversation_key, read_guards

NAMES = [f"s{n}" for n in range(8)]
NOW = time.time()
ALIVE = "pid=1:turn=t"  # pid 1 is never provably dead to us: only expiry makes it stale


def _store(rows: list[tuple[str, str | None, str, str | None, str | None]]) -> apsw.Connection:
    conn = apsw.Connection(":memory:")
    conn.execute(
        "CREATE TABLE sessions (id TEXT PRIMARY KEY, parent_session_id TEXT, source TEXT,"
        " model_config TEXT, end_reason TEXT)"
    )
    conn.execute(
        f"CREATE TABLE {LEASES} (conversation_id TEXT PRIMARY KEY, holder TEXT, acquired_at REAL,"
        " expires_at REAL NOT NULL)"
    )
    conn.execute(f"CREATE TABLE {LOCKS} (session_id TEXT PRIMARY KEY, holder TEXT, expires_at REAL NOT NULL)")
    conn.executemany("INSERT INTO sessions VALUES (?, ?, ?, ?, ?)", rows)
    return conn


session = st.tuples(
    st.sampled_from(NAMES + [None]),  # parent (possibly missing from the table, possibly itself)
    st.sampled_from(["cli", "cli", "tool"]),
    st.sampled_from([None, "_branched_from", "_delegate_from", "_reset_from"]),
    st.sampled_from(["compression", "compression", None, "user_exit"]),
)


@settings(max_examples=300, deadline=None)
@given(
    present=st.lists(st.sampled_from(NAMES), unique=True, max_size=8),
    shapes=st.lists(session, min_size=8, max_size=8),
    leased=st.dictionaries(st.sampled_from(NAMES + ["gone"]), st.booleans(), max_size=4),
    locked=st.dictionaries(st.sampled_from(NAMES), st.booleans(), max_size=2),
    asked=st.lists(st.sampled_from(NAMES + ["gone"]), max_size=10),
)
def test_the_walk_down_finds_what_each_walk_up_finds(present, shapes, leased, locked, asked) -> None:
    rows = []
    for sid, (parent, source, marker, end) in zip(present, shapes, strict=False):
        config = json.dumps({marker: parent}) if marker else None
        rows.append((sid, parent, source, config, end))
    conn = _store(rows)
    for key, live in leased.items():
        conn.execute(
            f"INSERT INTO {LEASES} VALUES (?, ?, ?, ?)", (key, ALIVE, NOW, NOW + (60 if live else -60))
        )
    for key, live in locked.items():
        conn.execute(f"INSERT INTO {LOCKS} VALUES (?, ?, ?)", (key, ALIVE, NOW + (60 if live else -60)))

    found = read_guards(conn, asked, now=NOW)

    expected_guarded = set()
    expected_stale = []
    for sid in dict.fromkeys(asked):
        looks = []
        if sid in locked:
            looks.append((LOCKS, "session_id", sid, locked[sid]))
        key = conversation_key(conn, sid)
        if key in leased:
            looks.append((LEASES, "conversation_id", key, leased[key]))
        if any(live for *_rest, live in looks):
            expected_guarded.add(sid)
        else:
            expected_stale += [(sid, table, column, k, ALIVE) for table, column, k, _live in looks]
    assert found.guarded == expected_guarded
    assert found.stale == expected_stale
    assert found.any_live == (any(leased.values()) or any(locked.values()))
