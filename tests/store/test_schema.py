"""Schema: fresh v23 objects, idempotent opens, migrate=False/True on a v1-shape DB (T72), newer DBs."""

from __future__ import annotations

import os
import stat

import apsw
import pytest
from conftest import ids

from hermes_tui.state import SCHEMA_VERSION, SessionDB

OBJECTS = {
    "sessions",
    "messages",
    "session_model_usage",
    "messages_fts",
    "messages_fts_trigram",
    "state_meta",
    "gateway_routing",
    "compression_locks",
    "async_delegations",
    "schema_version",
}

V1_SQL = """
CREATE TABLE schema_version (version INTEGER NOT NULL);
INSERT INTO schema_version VALUES (1);
CREATE TABLE sessions (
    id TEXT PRIMARY KEY, source TEXT NOT NULL, user_id TEXT, model TEXT, model_config TEXT,
    system_prompt TEXT, parent_session_id TEXT, started_at REAL NOT NULL, ended_at REAL, end_reason TEXT,
    message_count INTEGER DEFAULT 0, tool_call_count INTEGER DEFAULT 0, input_tokens INTEGER DEFAULT 0,
    output_tokens INTEGER DEFAULT 0,
    FOREIGN KEY (parent_session_id) REFERENCES sessions(id));
CREATE TABLE messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL REFERENCES sessions(id),
    role TEXT NOT NULL, content TEXT, tool_call_id TEXT, tool_calls TEXT, tool_name TEXT,
    timestamp REAL NOT NULL, token_count INTEGER);
CREATE INDEX idx_messages_session ON messages(session_id, timestamp);
CREATE VIRTUAL TABLE messages_fts USING fts5(content, content='messages', content_rowid='id');
CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
    INSERT INTO messages_fts(rowid, content) VALUES (new.id, new.content); END;
CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
    INSERT INTO messages_fts(messages_fts, rowid, content) VALUES('delete', old.id, old.content); END;
CREATE TRIGGER messages_fts_update AFTER UPDATE ON messages BEGIN
    INSERT INTO messages_fts(messages_fts, rowid, content) VALUES('delete', old.id, old.content);
    INSERT INTO messages_fts(rowid, content) VALUES (new.id, new.content); END;
INSERT INTO sessions (id, source, model, started_at, input_tokens, output_tokens, message_count)
    VALUES ('old', 'cli', 'm-old', 1600000000, 10, 20, 3);
INSERT INTO messages (session_id, role, content, tool_name, timestamp) VALUES
    ('old', 'user', 'legacy zebra question', NULL, 1600000001),
    ('old', 'assistant', 'legacy answer', NULL, 1600000002),
    ('old', 'tool', 'tool output', 'legacyterm', 1600000003);
"""


def master(path):
    c = apsw.Connection(str(path))
    try:
        return sorted(c.execute("SELECT type, name, tbl_name, sql FROM sqlite_master"), key=str)
    finally:
        c.close()


def scalar(path, sql):
    c = apsw.Connection(str(path))
    try:
        return c.execute(sql).fetchall()[0][0]
    finally:
        c.close()


def make_v1(path):
    c = apsw.Connection(str(path))
    c.execute(V1_SQL)
    c.close()


def test_sqlite_is_new_enough():
    v = tuple(int(p) for p in apsw.sqlite_lib_version().split("."))
    assert v >= (3, 51, 3)


def test_fresh_db_objects(db, db_path):
    names = {r[1] for r in master(db_path)}
    assert names >= OBJECTS
    assert db._scalar("SELECT version FROM schema_version") == SCHEMA_VERSION == 23
    assert db._scalar("SELECT COUNT(*) FROM schema_version") == 1
    assert db.get_meta("fts_storage_version") == "1"
    assert stat.S_IMODE(os.stat(db_path).st_mode) == 0o600
    caps = db.capabilities()
    assert caps["schema_version"] == 23 and caps["fts_layout"] == "v23" and caps["fts5"] and caps["trigram"]
    assert "tool_name" in dict((r[1], r[3]) for r in master(db_path))["messages_fts"]
    for col in ("pinned",):
        assert db.has_column("sessions", col)
    for col in ("display_kind", "display_metadata", "active", "compacted", "api_content"):
        assert db.has_column("messages", col)
    assert db._scalar("PRAGMA foreign_keys") == 1
    assert str(db._scalar("PRAGMA journal_mode")).lower() == "wal"


def test_second_open_changes_nothing(db, db_path):
    db.create_session("s", "cli")
    db.append_message("s", "user", "hello")
    db.close()
    before = master(db_path)
    mtime = db_path.stat().st_mtime_ns
    d2 = SessionDB(db_path=db_path)
    try:
        assert d2._conn().total_changes() == 0
        assert master(db_path) == before
        assert d2.get_meta("fts_storage_version") == "1"
    finally:
        d2.close()
    assert master(db_path) == before
    assert db_path.stat().st_mtime_ns == mtime


def test_migrate_false_on_v1_leaves_structure(tmp_path):
    p = tmp_path / "state.db"
    make_v1(p)
    before = master(p)
    d = SessionDB(db_path=p, migrate=False)
    try:
        assert [m["content"] for m in d.get_messages("old")] == [
            "legacy zebra question",
            "legacy answer",
            "tool output",
        ]
        mid = d.append_message("old", "user", "fresh zebra words")
        assert mid == 4
        assert 1 in ids(d.search_messages("zebra"))
        assert 4 in ids(d.search_messages("zebra"))
        assert master(p) == before
    finally:
        d.close()
    assert master(p) == before
    assert scalar(p, "SELECT version FROM schema_version") == 1
    c = apsw.Connection(str(p))
    c.execute("INSERT INTO messages_fts(messages_fts) VALUES('integrity-check')")
    c.close()


def test_migrate_true_on_v1(tmp_path):
    p = tmp_path / "state.db"
    make_v1(p)
    d = SessionDB(db_path=p)
    try:
        assert d._scalar("SELECT version FROM schema_version") == 23
        for col in (
            "title",
            "cache_read_tokens",
            "billing_provider",
            "api_call_count",
            "archived",
            "rewind_count",
            "pinned",
        ):
            assert d.has_column("sessions", col), col
        for col in (
            "finish_reason",
            "reasoning",
            "reasoning_content",
            "codex_message_items",
            "active",
            "compacted",
            "api_content",
            "observed",
            "display_kind",
        ):
            assert d.has_column("messages", col), col
        assert d._scalar("SELECT COUNT(*) FROM messages WHERE active = 1") == 3
        usage = d.get_model_usage("old")
        assert len(usage) == 1 and usage[0]["input_tokens"] == 10 and usage[0]["output_tokens"] == 20
        assert d._scalar(
            "SELECT json_extract(model_config, '$._delegate_from') FROM sessions WHERE id='old'"
        ) == ("__orphaned__")
        assert ids(d.search_messages("zebra")) == [1]
        assert 3 in ids(d.search_messages("legacyterm"))
        mid = d.append_message("old", "user", "post migration zebra")
        assert set(ids(d.search_messages("zebra"))) == {1, mid}
        res = d.fts_integrity_check()
        assert all(v == "ok" for v in res.values()), res
        names = {r[1] for r in master(p)}
        assert names >= OBJECTS
    finally:
        d.close()
    before = master(p)
    d2 = SessionDB(db_path=p)
    try:
        assert d2._conn().total_changes() == 0
    finally:
        d2.close()
    assert master(p) == before


def test_newer_schema_left_alone(db, db_path):
    db.close()
    c = apsw.Connection(str(db_path))
    c.execute("UPDATE schema_version SET version = 31")
    c.execute("ALTER TABLE sessions ADD COLUMN future_col TEXT")
    c.execute("CREATE TABLE future_table (x INTEGER)")
    c.close()
    before = master(db_path)
    d = SessionDB(db_path=db_path, migrate=True)
    try:
        assert d.capabilities()["schema_version"] == 31
        d.create_session("s", "cli")
        d.append_message("s", "user", "still works")
        assert ids(d.search_messages("works")) == [1]
    finally:
        d.close()
    assert master(db_path) == before
    assert scalar(db_path, "SELECT version FROM schema_version") == 31


def test_duplicate_titles_healed(tmp_path):
    p = tmp_path / "state.db"
    c = apsw.Connection(str(p))
    c.execute(
        V1_SQL.replace("INSERT INTO schema_version VALUES (1);", "INSERT INTO schema_version VALUES (3);")
    )
    c.execute("ALTER TABLE sessions ADD COLUMN title TEXT")
    c.execute(
        "INSERT INTO sessions (id, source, started_at, title) VALUES ('a', 'cli', 1, 'Dup'), "
        "('b', 'cli', 2, 'Dup'), ('c', 'cli', 3, 'Other')"
    )
    c.execute("UPDATE sessions SET title = 'Dup' WHERE id = 'old'")
    c.close()
    d = SessionDB(db_path=p)
    try:
        titles = dict(d._tuples("SELECT id, title FROM sessions"))
        assert titles == {"old": None, "a": None, "b": "Dup", "c": "Other"}
        assert d._scalar("SELECT COUNT(*) FROM sqlite_master WHERE name = 'idx_sessions_title_unique'") == 1
    finally:
        d.close()


def test_read_only_open_never_migrates(tmp_path):
    p = tmp_path / "state.db"
    make_v1(p)
    before = master(p)
    d = SessionDB(db_path=p, read_only=True)
    try:
        assert len(d.get_messages("old")) == 3
    finally:
        d.close()
    assert master(p) == before


def test_missing_file_read_only(tmp_path):
    from hermes_tui.state import StoreError

    with pytest.raises(StoreError):
        SessionDB(db_path=tmp_path / "absent.db", read_only=True)
    assert not (tmp_path / "absent.db").exists()
