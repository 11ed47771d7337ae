"""Store behaviour that used to be written twice (issue #16) and now has one implementation each:
the SQLite error table, the rolled-back repair probes, and the session usage columns."""

from __future__ import annotations

import importlib
from pathlib import Path

import apsw
import pytest

from hermes_tui.state import (
    IntegrityError,
    LockTimeout,
    NotADatabaseError,
    ReadOnlyError,
    SessionDB,
    StoreError,
)

connection = importlib.import_module("hermes_tui.state.connection")
repair = importlib.import_module("hermes_tui.state.repair")
sessions = importlib.import_module("hermes_tui.state.sessions")


@pytest.mark.parametrize(
    ("exc", "kind", "line"),
    [
        (apsw.NotADBError, NotADatabaseError, "/x/state.db is not an SQLite database (SQLite: why)"),
        (apsw.CorruptError, NotADatabaseError, "/x/state.db is corrupt (SQLite: why)"),
        (apsw.ReadOnlyError, ReadOnlyError, "/x/state.db is read-only (SQLite: why)"),
        (apsw.PermissionsError, ReadOnlyError, "/x/state.db: permission denied (SQLite: why)"),
        (apsw.AuthError, ReadOnlyError, "/x/state.db: permission denied (SQLite: why)"),
        (apsw.BusyError, LockTimeout, "/x/state.db is locked by another process (SQLite: why)"),
        (apsw.LockedError, LockTimeout, "/x/state.db is locked by another process (SQLite: why)"),
        (apsw.ConstraintError, IntegrityError, "why"),
        (apsw.SQLError, StoreError, "/x/state.db: SQLite error: why"),
    ],
)
def test_store_error_maps_each_sqlite_error(exc: type[apsw.Error], kind: type[StoreError], line: str) -> None:
    err = connection.store_error(exc(f"{exc.__name__}: why"), Path("/x/state.db"))
    assert type(err) is kind and str(err) == line


def test_store_error_keeps_braces_in_paths_and_messages() -> None:
    """The table's lines are templates: a `{` in the path or in SQLite's words stays as it is."""
    err = connection.store_error(apsw.FullError("FullError: {msg} {0}"), "/x/{path}.db")
    assert str(err) == "cannot write to /x/{path}.db: the disk is full (SQLite: {msg} {0}); nothing was saved"
    err = connection.store_error(apsw.IOError("IOError: disk"), "/y.db")
    assert str(err) == "disk I/O error on /y.db or its -wal/-shm/-journal file (SQLite: disk)"
    err = connection.store_error(apsw.CantOpenError("CantOpenError: no"), "/y.db")
    assert str(err) == "unable to open /y.db or its -wal/-shm/-journal file (SQLite: no)"


def _count(conn: apsw.Connection, table: str) -> int:
    return int(conn.execute(f"SELECT COUNT(*) FROM {table}").fetchall()[0][0])


def test_repair_probes_always_roll_back(tmp_path: Path) -> None:
    """Both probes (a statement, a trial write) change nothing, whether they succeed or fail."""
    path = tmp_path / "state.db"
    SessionDB(path).close()
    conn = apsw.Connection(str(path))
    repair._install_tokenizer(conn)  # as repair does: the v23 index's tokenizer
    try:
        conn.execute("BEGIN")
        assert repair._savepoint_ok(conn, "DELETE FROM sessions") is None
        assert repair._write_probe(conn) is None
        assert _count(conn, "sessions") == 0 and _count(conn, "messages") == 0
        error = repair._savepoint_ok(conn, "SELECT * FROM no_such_table")
        assert error is not None and "no_such_table" in error
        conn.execute(
            "CREATE TRIGGER refuse BEFORE INSERT ON messages BEGIN SELECT RAISE(ABORT, 'refused'); END"
        )
        error = repair._write_probe(conn)
        assert error is not None and "refused" in error
        assert _count(conn, "sessions") == 0  # the probe session went with the rollback
        conn.execute("ROLLBACK")
    finally:
        conn.close()


def _usage_rows(db: SessionDB) -> int:
    conn = apsw.Connection(str(db.db_path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return _count(conn, "session_model_usage")
    finally:
        conn.close()


def test_an_actual_cost_alone_fills_the_route_but_records_no_usage_row(tmp_path: Path) -> None:
    with SessionDB(tmp_path / "state.db") as db:
        db.create_session("s", "cli")
        db.update_token_counts("s", model="m1", billing_provider="openrouter", actual_cost_usd=0.5)
        row = db.get_session("s")
        assert row is not None and row["billing_provider"] == "openrouter" and row["actual_cost_usd"] == 0.5
        assert _usage_rows(db) == 0
        db.update_token_counts("s", model="m1", billing_provider="openrouter", estimated_cost_usd=0.25)
        assert _usage_rows(db) == 1
        db.update_token_counts("s", input_tokens=10, absolute=True)  # totals are no per-call record
        assert _usage_rows(db) == 1
        db.create_session("t", "cli")
        db.update_token_counts("t", model="m2", billing_provider="p", reasoning_tokens=3)
        row = db.get_session("t")
        assert row is not None and row["billing_provider"] == "p" and row["reasoning_tokens"] == 3
        assert _usage_rows(db) == 2


def test_every_usage_column_is_read_as_a_number_and_survives_an_import(tmp_path: Path) -> None:
    usage = dict(zip(sessions.SESSION_USAGE_COLUMNS, range(11, 30), strict=False))
    assert set(usage) <= set(sessions.SESSION_NUMBERS)
    with SessionDB(tmp_path / "state.db") as db:
        result = db.import_sessions([{"id": "imp", "source": "cli", "started_at": 1_700_000_000.0, **usage}])
        assert result.get("imported") == 1, result
        row = db.get_session("imp")
        assert row is not None
        assert {c: row[c] for c in usage} == usage
