"""Bringing a database to v23 on open: declarative columns plus version-gated data migrations.

The work is planned first with reads only, and a write transaction is taken only when
something is actually missing — opening an up-to-date database never takes the write lock
(upstream once did, hermes#108067). Nothing here runs when `migrate=False`, when the store is
read-only, or when the file's `schema_version` is newer than ours (its structure is opaque to
us then); the journal mode is switched to WAL only when it does run. `schema_version` is never
lowered. Before anything, the file must be a Hermes store (or an empty one to initialise):
another application's SQLite database is refused, untouched, unless `adopt_foreign`.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, TypeVar

import apsw

from . import fts_schema as F
from . import sql_fragments as Q
from .connection import enable_wal, looking
from .errors import NotAHermesStore
from .reconcile import add_missing_columns, declared_columns, missing_columns
from .schema import (
    CORE_TABLES,
    DEFERRED_INDEX_SQL,
    PLATFORM_MSG_INDEX_SQL,
    SCHEMA_SQL,
    SCHEMA_VERSION,
    TITLE_INDEX_SQL,
)

T = TypeVar("T")


class Store(Protocol):
    """What opening a file reads and sets on its store (the store's core, which calls `initialize`):
    named here, so that this module needs nothing of the core that imports it."""

    db_path: Path
    read_only: bool
    migrate: bool
    adopt_foreign: bool
    _cjk_impl: str | None
    _columns: dict[str, frozenset[str]]
    _schema_version: int | None
    _fts5_ok: bool
    _trigram_ok: bool

    @property
    def layout(self) -> F.FtsLayout: ...
    def has_column(self, table: str, column: str) -> bool: ...
    def refresh_structure(self, conn: apsw.Connection | None = None) -> None: ...
    def _execute_write(self, fn: Callable[[apsw.Connection], T]) -> T: ...


log = logging.getLogger(__name__)

_ALL_FTS_TRIGGERS = F.BASE_TRIGGERS + F.TRIGRAM_TRIGGERS


def _expected_indexes() -> set[str]:
    import re

    names = set(re.findall(r"CREATE (?:UNIQUE )?INDEX IF NOT EXISTS (\w+)", SCHEMA_SQL + DEFERRED_INDEX_SQL))
    names.update({"idx_messages_platform_msg_id", "idx_sessions_title_unique"})
    return names


# What makes a file a Hermes store: these tables with (at least) these columns (v1 had them).
HERMES_MARKERS: dict[str, frozenset[str]] = {
    "sessions": frozenset({"id", "source"}),
    "messages": frozenset({"session_id", "role"}),
}


def not_hermes_reason(conn: apsw.Connection) -> str | None:
    """Why the file is not a Hermes store (None: it is). Reads `sqlite_master` only, so it works
    on any SQLite file (a foreign `schema_version` table without `version` included)."""
    for table, needed in HERMES_MARKERS.items():
        cols = {r[1] for r in conn.execute("SELECT * FROM pragma_table_info(?)", (table,))}
        if not cols:
            return f"no {table} table"
        if not needed <= cols:
            return f"its {table} table lacks {', '.join(sorted(needed - cols))}"
    return None


def is_empty_database(conn: apsw.Connection) -> bool:
    """No schema objects and no application marks: a new file, ours to initialise."""
    objects = conn.execute("SELECT count(*) FROM sqlite_master").fetchall()[0][0]
    marks = conn.execute("SELECT * FROM pragma_user_version, pragma_application_id").fetchall()[0]
    return objects == 0 and not any(marks)


def _tables_shown(conn: apsw.Connection, limit: int = 5) -> str:
    names = [
        r[0]
        for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite_%' "
            "ORDER BY name LIMIT ?",
            (limit + 1,),
        )
    ]
    shown = ", ".join(names[:limit]) + (", …" if len(names) > limit else "")
    return shown or "no tables"


def check_store(db: Store, conn: apsw.Connection, adopt_foreign: bool) -> None:
    """Refuse (nothing written) a file that is not a Hermes store, unless we may make it one: an
    empty database with `migrate=True`, or another application's with `adopt_foreign=True` too."""
    reason = not_hermes_reason(conn)
    if reason is None:
        return
    if db.read_only or not db.migrate:
        raise NotAHermesStore(f"{db.db_path} is an SQLite database but not a Hermes session store ({reason})")
    if is_empty_database(conn) or adopt_foreign:
        return
    raise NotAHermesStore(
        f"{db.db_path} is an SQLite database of another application ({_tables_shown(conn)}), not a Hermes "
        f"session store ({reason}); nothing was written (adopt_foreign=True adds the Hermes tables to it)"
    )


def check_store_unopened(db: Store) -> None:
    """`check_store` on a connection that creates and writes nothing (`connection.looking`),
    before any connection that could write is opened: SQLite's last connection to close would
    checkpoint a -wal another program left, and a read-only one leaves -wal/-shm files beside a
    WAL-mode file. When no such connection can be had, `initialize` checks on the real one."""
    with looking(db.db_path) as conn:
        if conn is None:
            return
        try:
            check_store(db, conn, db.adopt_foreign)
        except apsw.Error:
            return  # unreadable this way (a damaged schema…): the real open reports it


def initialize(db: Store, conn: apsw.Connection, *, adopt_foreign: bool = False) -> None:
    check_store(db, conn, adopt_foreign)
    db.refresh_structure(conn)
    db._fts5_ok = True  # APSW always bundles FTS5 and the trigram tokenizer (SQLite >= 3.34)
    db._trigram_ok = True
    version = db._schema_version
    if db.read_only or not db.migrate:
        return
    if version is not None and version > SCHEMA_VERSION:
        return
    enable_wal(conn)  # a store we initialise or migrate is WAL, as upstream's
    reasons = plan(db, conn)
    if not reasons:
        return
    log.info("upgrading %s: %s", db.db_path, ", ".join(reasons))
    db._execute_write(lambda c: apply(db, c))
    db.refresh_structure(conn)


def plan(db: Store, conn: apsw.Connection) -> list[str]:
    """Why the database needs a write on open (empty list: it does not)."""
    reasons: list[str] = []
    tables = set(db._columns)
    if any(t not in tables for t in CORE_TABLES):
        reasons.append("missing tables")
        return reasons
    if missing_columns(conn):
        reasons.append("missing columns")
    present = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='index'")}
    if _expected_indexes() - present:
        reasons.append("missing indexes")
    if db._schema_version is None or db._schema_version < SCHEMA_VERSION:
        reasons.append(f"schema_version {db._schema_version}")
    if (
        db.has_column("messages", "active")
        and conn.execute("SELECT 1 FROM messages WHERE active IS NULL LIMIT 1").fetchall()
    ):
        reasons.append("NULL active rows")
    lay = db.layout
    if lay.kind == "none":
        reasons.append("no FTS")
    elif not (lay.base_triggers_complete and lay.trigram_triggers_complete):
        reasons.append("missing FTS triggers")
    elif lay.kind == "v23" and lay.has_cjk and not lay.cjk_stale and not _cjk_triggers_complete(lay):
        reasons.append("missing cjk triggers")
    return reasons


def _may_create_cjk(db: Store) -> bool:
    from .cjk import cjk_index_enabled

    return bool(db._cjk_impl) and cjk_index_enabled()


def _cjk_triggers_complete(lay: F.FtsLayout) -> bool:
    return all(t in lay.triggers for t in F.CJK_TRIGGERS)


def _set_meta(c: apsw.Connection, key: str, value: str) -> None:
    c.execute(
        "INSERT INTO state_meta(key, value) VALUES (?, ?) "
        "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        (key, value),
    )


def _del_meta(c: apsw.Connection, *keys: str) -> None:
    for key in keys:
        c.execute("DELETE FROM state_meta WHERE key = ?", (key,))


def apply(db: Store, c: apsw.Connection) -> None:
    """All of the upgrade, inside the caller's write transaction."""
    fresh = "sessions" not in db._columns
    version = db._schema_version
    c.execute(SCHEMA_SQL)
    add_missing_columns(c)
    with contextlib.suppress(apsw.SQLError):
        c.execute(PLATFORM_MSG_INDEX_SQL)
    c.execute(DEFERRED_INDEX_SQL)
    c.execute("UPDATE messages SET active = 1 WHERE active IS NULL")

    drop_old_fts = False
    if version is not None and not fresh:
        if version < 11:
            drop_old_fts = True
        if version < 16:
            _migrate_v16(c)
        if version < 18:
            try:
                _migrate_v18(db, c)
            except (OSError, ValueError, apsw.Error) as exc:
                log.debug("v18 gateway metadata backfill skipped: %s", exc)
        if version < 20:
            _migrate_v20(c)
        if version < 22:
            _migrate_v22(c)

    _ensure_title_index(c)
    if drop_old_fts:
        _drop_all_fts(c)
    _ensure_fts(db, c, upgrading_from=version if not fresh else None)

    row: list[tuple[Any, ...]] = c.execute("SELECT version FROM schema_version LIMIT 1").fetchall()
    if not row:
        c.execute("INSERT INTO schema_version (version) VALUES (?)", (SCHEMA_VERSION,))
    elif int(row[0][0]) < SCHEMA_VERSION:
        c.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION,))


# ---------------------------------------------------------------- FTS
def _master(c: apsw.Connection) -> dict[str, tuple[str, str | None]]:
    return {name: (typ, sql) for typ, name, sql in c.execute("SELECT type, name, sql FROM sqlite_master")}


def _meta(c: apsw.Connection) -> dict[str, str]:
    return {k: v for k, v in c.execute("SELECT key, value FROM state_meta")}


def _drop_all_fts(c: apsw.Connection) -> None:
    """Pre-v11 shapes (v1 external single-column tables): replaced whole by the v23 layout."""
    for name, (typ, _sql) in _master(c).items():
        if typ == "trigger" and name.startswith("messages_fts"):
            c.execute(f'DROP TRIGGER IF EXISTS "{name}"')
    for table in ("messages_fts", "messages_fts_trigram"):
        c.execute(f"DROP TABLE IF EXISTS {table}")
    c.execute("DROP VIEW IF EXISTS messages_fts_trigram_src")


def _has_messages(c: apsw.Connection, where: str = "") -> bool:
    return bool(c.execute(f"SELECT 1 FROM messages {where} LIMIT 1").fetchall())


def _ensure_fts(db: Store, c: apsw.Connection, upgrading_from: int | None) -> None:
    lay = F.detect_layout(_master(c), _meta(c))
    if lay.kind == "none":
        c.execute(F.V23_BASE_SQL)
        c.execute(F.V23_TRIGRAM_SQL)
        # Only a file we create gets the cjk index: its triggers need the tokenizer in every
        # writer, and hermes-agent 0.19.0 cannot load it (every insert would fail).
        with_cjk = _may_create_cjk(db) and upgrading_from is None
        if with_cjk:
            c.execute(F.V23_CJK_SQL)
        if _has_messages(c):
            for table in ("messages_fts", "messages_fts_trigram") + (
                ("messages_fts_cjk",) if with_cjk else ()
            ):
                c.execute(f"INSERT INTO {table}({table}) VALUES('rebuild')")
        _del_meta(
            c,
            F.REBUILD_HIGH_WATER,
            F.REBUILD_PROGRESS,
            F.CJK_HIGH_WATER,
            F.CJK_PROGRESS,
            F.FTS_OPTIMIZE_AVAILABLE_KEY,
        )
        _set_meta(c, F.FTS_STORAGE_VERSION_KEY, "1")
        return
    if lay.kind == "legacy":
        missing = not all(t in lay.triggers for t in _ALL_FTS_TRIGGERS)
        c.execute(F.LEGACY_BASE_SQL)
        c.execute(F.LEGACY_TRIGRAM_SQL)
        if missing:
            # 0.19.0's repair: a trigger was missing, so rows may be absent from the index.
            for table in ("messages_fts", "messages_fts_trigram"):
                c.execute(f"DELETE FROM {table}")
                c.execute(f"INSERT INTO {table}(rowid, content) {F.LEGACY_CONCAT_SELECT}")
        if upgrading_from is not None and upgrading_from < 23:
            _set_meta(c, F.FTS_OPTIMIZE_AVAILABLE_KEY, "1")
        return
    # v23 layout
    if not (lay.base_triggers_complete and lay.trigram_triggers_complete):
        c.execute(F.V23_BASE_SQL)
        c.execute(F.V23_TRIGRAM_SQL)
        for table in ("messages_fts", "messages_fts_trigram"):
            c.execute(f"INSERT INTO {table}({table}) VALUES('rebuild')")
        _del_meta(c, F.REBUILD_HIGH_WATER, F.REBUILD_PROGRESS)
    # An existing cjk index is repaired, never added (see _ensure_fts's fresh-file rule).
    if db._cjk_impl and not lay.cjk_stale and lay.has_cjk and not _cjk_triggers_complete(lay):
        c.execute(F.V23_CJK_SQL)
        c.execute("INSERT INTO messages_fts_cjk(messages_fts_cjk) VALUES('rebuild')")
        _del_meta(c, F.CJK_HIGH_WATER, F.CJK_PROGRESS)
    meta = _meta(c)
    if (
        F.FTS_STORAGE_VERSION_KEY not in meta
        and F.REBUILD_HIGH_WATER not in meta
        and not lay.trash_tables
        and not (_has_messages(c) and not c.execute("SELECT 1 FROM messages_fts_docsize LIMIT 1").fetchall())
    ):
        _set_meta(c, F.FTS_STORAGE_VERSION_KEY, "1")


# ---------------------------------------------------------------- titles
def _ensure_title_index(c: apsw.Connection) -> None:
    """Create the unique title index; heal legacy duplicates (newest keeps the title) first."""
    try:
        c.execute(TITLE_INDEX_SQL)
    except apsw.ConstraintError:
        c.execute(
            """UPDATE sessions AS older SET title = NULL
               WHERE title IS NOT NULL AND EXISTS (
                   SELECT 1 FROM sessions AS newer
                   WHERE newer.title = older.title AND newer.rowid > older.rowid)"""
        )
        log.warning("Cleared %d duplicate session title(s) while restoring the unique index", c.changes())
        c.execute(TITLE_INDEX_SQL)


# ---------------------------------------------------------------- data migrations
def _migrate_v16(c: apsw.Connection) -> None:
    """Tag delegate subagents (`$._delegate_from`) so pickers stay clean after parent deletes."""
    df = Q.delegate_from("sessions")
    c.execute(
        "UPDATE sessions SET model_config = json_set(COALESCE(model_config, '{}'), '$._delegate_from', "
        f"parent_session_id) WHERE parent_session_id IS NOT NULL AND {df} IS NULL "
        f"AND {Q.ephemeral_child('sessions')}"
    )
    c.execute(
        "UPDATE sessions SET model_config = json_set(COALESCE(model_config, '{}'), '$._delegate_from', "
        f"'__orphaned__') WHERE parent_session_id IS NULL AND {df} IS NULL "
        f"AND {Q.BRANCHED_FROM.format(a='sessions')} IS NULL "
        "AND title IS NULL AND message_count <= 25 "
        "AND EXISTS (SELECT 1 FROM messages m WHERE m.session_id = sessions.id AND m.role = 'tool') "
        "AND NOT EXISTS (SELECT 1 FROM sessions ch WHERE ch.parent_session_id = sessions.id)"
    )


def _migrate_v18(db: Store, c: apsw.Connection) -> None:
    """Best effort: fill NULL gateway columns from `sessions/sessions.json` next to the DB."""
    sessions_file = db.db_path.parent / "sessions" / "sessions.json"
    if not sessions_file.exists():
        return
    data = json.loads(sessions_file.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        return
    for key, entry in data.items():
        if str(key).startswith("_") or not isinstance(entry, dict) or not entry.get("session_id"):
            continue
        origin = entry.get("origin")
        origin = origin if isinstance(origin, dict) else None
        c.execute(
            """UPDATE sessions SET session_key = COALESCE(session_key, ?), chat_id = COALESCE(chat_id, ?),
                   chat_type = COALESCE(chat_type, ?), thread_id = COALESCE(thread_id, ?),
                   display_name = COALESCE(display_name, ?), origin_json = COALESCE(origin_json, ?),
                   expiry_finalized = CASE WHEN COALESCE(expiry_finalized, 0) = 0 AND ? = 1 THEN 1
                                           ELSE expiry_finalized END
               WHERE id = ?""",
            (
                entry.get("session_key") or key,
                (origin or {}).get("chat_id"),
                entry.get("chat_type"),
                (origin or {}).get("thread_id"),
                entry.get("display_name"),
                json.dumps(origin) if origin else None,
                1 if entry.get("expiry_finalized") or entry.get("memory_flushed") else 0,
                str(entry["session_id"]),
            ),
        )


def _migrate_v20(c: apsw.Connection) -> None:
    """Seed `session_model_usage` from per-session totals (INSERT OR IGNORE: idempotent)."""
    c.execute(
        """INSERT OR IGNORE INTO session_model_usage (
               session_id, model, billing_provider, billing_base_url, billing_mode,
               api_call_count, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens,
               reasoning_tokens, estimated_cost_usd, actual_cost_usd, cost_status, cost_source,
               first_seen, last_seen)
           SELECT id, COALESCE(model, 'unknown'), COALESCE(billing_provider, ''),
                  COALESCE(billing_base_url, ''), COALESCE(billing_mode, ''), COALESCE(api_call_count, 0),
                  COALESCE(input_tokens, 0), COALESCE(output_tokens, 0), COALESCE(cache_read_tokens, 0),
                  COALESCE(cache_write_tokens, 0), COALESCE(reasoning_tokens, 0),
                  COALESCE(estimated_cost_usd, 0), COALESCE(actual_cost_usd, 0), cost_status, cost_source,
                  started_at, COALESCE(ended_at, started_at)
           FROM sessions
           WHERE COALESCE(input_tokens, 0) + COALESCE(output_tokens, 0) + COALESCE(cache_read_tokens, 0)
                 + COALESCE(cache_write_tokens, 0) + COALESCE(reasoning_tokens, 0) > 0"""
    )


def _migrate_v22(c: apsw.Connection) -> None:
    """Rebuild `session_model_usage` so `task` is part of the primary key."""
    has_pk = c.execute(
        "SELECT COUNT(*) FROM pragma_table_info('session_model_usage') WHERE name = 'task' AND pk > 0"
    ).fetchall()[0][0]
    if has_pk:
        return
    cols = list(declared_columns()["session_model_usage"])
    start = SCHEMA_SQL.index("CREATE TABLE IF NOT EXISTS session_model_usage")
    end = SCHEMA_SQL.index(");", start) + 2
    create = SCHEMA_SQL[start:end].replace("IF NOT EXISTS ", "")
    c.execute("ALTER TABLE session_model_usage RENAME TO session_model_usage_v21")
    c.execute(create)
    live = {r[1] for r in c.execute("PRAGMA table_info(session_model_usage_v21)")}
    copy = [col for col in cols if col in live and col != "task"]
    col_sql = ", ".join(copy)
    c.execute(
        f"INSERT INTO session_model_usage ({col_sql}, task) SELECT {col_sql}, '' FROM session_model_usage_v21"
    )
    c.execute("DROP TABLE session_model_usage_v21")
    c.execute("CREATE INDEX IF NOT EXISTS idx_session_model_usage_session ON session_model_usage(session_id)")
    c.execute("CREATE INDEX IF NOT EXISTS idx_session_model_usage_model ON session_model_usage(model)")
