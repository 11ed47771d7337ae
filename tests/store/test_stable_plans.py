"""Statements are planned once per connection, whatever is bound (`connection.stable_plans`).

Without SQLite's QPSG, APSW's STAT4 build re-plans a statement with an equality then a range on
one index every time a value is bound. FTS5 runs such a statement for each segment of an index a
MATCH opens, so every probe of a multi-segment index re-parsed SQL: 18 of 25 µs. An authorizer is
called only while SQLite compiles a statement, so a second run that calls it compiled something.
"""

from __future__ import annotations

import apsw
from conftest import open_db

from hermes_tui.state import SessionDB
from hermes_tui.state.connection import stable_plans


def _compiles(conn: apsw.Connection, sql: str, args: tuple) -> int:
    """How many authorizer calls (compile steps) a second run of `sql` makes."""
    calls = 0

    def authorizer(*_a: object) -> int:
        nonlocal calls
        calls += 1
        return apsw.SQLITE_OK

    conn.authorizer = authorizer  # (expires every statement: the first run compiles afresh)
    conn.execute(sql, args).fetchall()
    calls = 0
    conn.execute(sql, args).fetchall()
    conn.authorizer = None
    return calls


def _two_segment_store(path) -> None:
    with SessionDB(path) as d:
        d.create_session("s1", "cli")
        d.append_message("s1", "user", "the first segment holds this row")
    with SessionDB(path) as d:  # a second transaction: a second segment in each index
        d.append_message("s1", "user", "and the second segment this one")


PROBE = "SELECT EXISTS(SELECT 1 FROM messages_fts_trigram WHERE messages_fts_trigram MATCH ?)"


def test_every_connection_of_the_store_plans_once(tmp_path):
    path = tmp_path / "state.db"
    _two_segment_store(path)
    for read_only in (False, True):
        with open_db(path, read_only=read_only) as d:
            conn = d._conn()
            assert conn.config(apsw.SQLITE_DBCONFIG_ENABLE_QPSG, -1) == 1
            assert _compiles(conn, PROBE, ('"segment"',)) == 0
            assert (
                _compiles(
                    conn, "SELECT id FROM messages WHERE session_id = ? AND timestamp <= ?", ("s1", 2e9)
                )
                == 0
            )


def test_without_it_a_multi_segment_probe_compiles_again(tmp_path):
    """The control: the same probe on a plain APSW connection re-plans FTS5's segment lookup."""
    path = tmp_path / "state.db"
    _two_segment_store(path)
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    segments = conn.execute("SELECT count(DISTINCT segid) FROM messages_fts_trigram_idx").fetchall()[0][0]
    assert segments >= 2
    assert _compiles(conn, PROBE, ('"segment"',)) > 0
    conn.close()
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    stable_plans(conn)  # before the FTS5 table's first use: its statements are compiled with it
    assert _compiles(conn, PROBE, ('"segment"',)) == 0
    conn.close()
