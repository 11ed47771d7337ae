"""Damaged stores: tell what is wrong (read-only), back the file up, repair it, verify.

Two kinds of damage are seen in real `state.db` files, and hermes-agent 0.19.0 repairs both
(`repair_state_db_schema`, `is_malformed_db_error`; the names and the report keys are kept):

- **Duplicate objects in `sqlite_master`** (two `CREATE VIRTUAL TABLE messages_fts` rows). SQLite
  parses the whole schema before the first statement, so *every* statement fails with
  "malformed database schema". `PRAGMA writable_schema=ON` makes SQLite skip the bad rows, which
  is how `diagnose` reads such a file (read-only) and how `repair` removes the extra rows
  (keeping the lowest rowid per type and name, as upstream does).
- **A broken FTS index** (shadow-table rows lost): the tables read fine, but search and every
  `INSERT INTO messages` (through the FTS triggers) fail. The v23 external-content indexes are
  rebuilt with FTS5's `'rebuild'`; the legacy inline tables (0.19.0's layout, whose copy of the
  text may itself be damaged) are dropped and re-created with the file's own DDL and refilled
  from `messages`, so 0.19.0 keeps writing to them afterwards.

Unlike upstream, the repair is one transaction taken *after* a consistent backup (APSW's backup
API, which includes what is in the `-wal`; a byte copy when SQLite cannot read the file) and
verified before it commits: the same session and message counts, `PRAGMA integrity_check`, FTS5
`'integrity-check'` on every index and a rolled-back write through the triggers. Anything that
fails rolls the whole repair back, so a file that cannot be repaired (or a process killed midway)
is left as it was. `repair` holds the write lock from before the backup to the commit: nobody
can commit in between, so the backup is exactly what the repair started from.
"""

from __future__ import annotations

import contextlib
import datetime
import os
import shutil
import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import apsw

from . import fts_schema as F
from .connection import busy_handler, looking, open_connection, sidecar, sqlite_file_size, store_error
from .core import _Core
from .core import _install_tokenizer as install_tokenizer
from .errors import NotADatabaseError, StoreError
from .paths import fsync_path

__all__ = ["diagnose", "is_fts_corruption_error", "is_malformed_db_error", "repair", "repair_state_db_schema"]

_MALFORMED_SCHEMA_MARKERS = (
    "malformed database schema",
    "database disk image is malformed",
)
FTS_TABLES = ("messages_fts", "messages_fts_trigram", "messages_fts_cjk")
_SHADOW_SUFFIXES = ("data", "idx", "content", "docsize", "config")
# Indexes sharing one pair of v23 rebuild-gate markers: rebuilt together, then the markers go.
_GATE_GROUPS = {
    "messages_fts": ("messages_fts", "messages_fts_trigram"),
    "messages_fts_trigram": ("messages_fts", "messages_fts_trigram"),
    "messages_fts_cjk": ("messages_fts_cjk",),
}
_GATE_KEYS = {
    "messages_fts": (F.REBUILD_HIGH_WATER, F.REBUILD_PROGRESS),
    "messages_fts_trigram": (F.REBUILD_HIGH_WATER, F.REBUILD_PROGRESS),
    "messages_fts_cjk": (F.CJK_HIGH_WATER, F.CJK_PROGRESS),
}
LOCK_TIMEOUT_MS = 5000  # a repair waits this long for other writers' transactions to end


class RepairFailed(StoreError):
    """A repair step failed; the transaction is rolled back (internal: `repair` reports it)."""


def is_malformed_db_error(exc: BaseException) -> bool:
    """True if `exc` is SQLite's "malformed database schema" / "database disk image is malformed".

    Upstream's test (same markers), extended to APSW's exceptions and to our `StoreError`s, which
    carry SQLite's words in their message (`SessionDB(...)` raises `NotADatabaseError` for these).
    """
    if not isinstance(exc, (apsw.Error, sqlite3.DatabaseError, StoreError)):
        return False
    text = str(exc).lower()
    return any(marker in text for marker in _MALFORMED_SCHEMA_MARKERS)


def is_fts_corruption_error(exc: BaseException) -> bool:
    """True for what a damaged FTS index raises (upstream's `_is_fts_write_corruption_error`):
    either marker above, or FTS5's own "fts5: corrupt …" / "corruption found reading blob …"."""
    if is_malformed_db_error(exc):
        return True
    if not isinstance(exc, (apsw.Error, sqlite3.DatabaseError, StoreError)):
        return False
    text = str(exc).lower()
    return "fts5" in text and "corrupt" in text


# ---------------------------------------------------------------------------------------- reading
def _uri(path: Path, params: str) -> str:
    return "file:" + quote(str(path)) + params


_STABLE_TRIES = 3  # lock-free (immutable) diagnoses of a file that changed meanwhile, before locking


def _stamp(path: Path) -> tuple[int, int, int, int] | None:
    """What changes when anyone writes the file (a checkpoint included)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


@contextlib.contextmanager
def _reading(path: Path, locked: bool, schema_errors: list[str]) -> Iterator[apsw.Connection]:
    """A read-only connection for `diagnose` that creates and writes no file (`looking`), or with
    `locked` (or when no such connection can be had) SQLite's usual read-only one, which locks
    the file but may create its -wal/-shm. Errors that say nothing about damage (a read-only
    folder without the -shm a -wal needs, permissions, a lock held too long) are raised as their
    `StoreError`; `NotADatabaseError` (not SQLite, or corrupt) is left to the report."""
    if not locked:
        with looking(path, schema_errors) as conn:
            if conn is not None:
                conn.set_busy_handler(busy_handler(LOCK_TIMEOUT_MS))
                yield conn
                return
        # (the look is over before the usual open: see `connection._ShmGuard`)
    schema_errors.clear()
    conn = open_connection(path, read_only=True, schema_errors=schema_errors)
    try:
        conn.set_busy_handler(busy_handler(LOCK_TIMEOUT_MS))
        yield conn
    finally:
        with contextlib.suppress(apsw.Error):
            conn.close()


def _message(exc: BaseException) -> str:
    text = str(exc).removeprefix(f"{type(exc).__name__}: ")
    return " ".join(text.split()) or type(exc).__name__


def _install_tokenizer(conn: apsw.Connection) -> bool:
    """Register the cjk tokenizer, without which a cjk index can be neither checked nor written."""
    try:
        return install_tokenizer(conn) is not None
    except apsw.Error:
        return False


def _count(conn: apsw.Connection, sql: str) -> int:
    """The one integer `sql` returns (a count or a pragma's number)."""
    rows: list[tuple[Any, ...]] = conn.execute(sql).fetchall()
    return int(rows[0][0])


def _duplicates(conn: apsw.Connection) -> list[dict[str, Any]]:
    rows: list[tuple[Any, ...]] = conn.execute(
        "SELECT type, name, COUNT(*), group_concat(rowid) FROM sqlite_master "
        "GROUP BY type, name HAVING COUNT(*) > 1 ORDER BY name"
    ).fetchall()
    return [
        {"type": t, "name": n, "count": int(c), "rowids": sorted(int(r) for r in str(ids).split(","))}
        for t, n, c, ids in rows
    ]


def _master(conn: apsw.Connection) -> dict[str, tuple[str, str | None]]:
    """`{name: (type, sql)}`, the first (lowest rowid) row of each name, as SQLite keeps it."""
    out: dict[str, tuple[str, str | None]] = {}
    for typ, name, sql in conn.execute("SELECT type, name, sql FROM sqlite_master ORDER BY rowid"):
        out.setdefault(name, (typ, sql))
    return out


def _meta(conn: apsw.Connection, master: dict[str, tuple[str, str | None]]) -> dict[str, str]:
    if "state_meta" not in master:
        return {}
    return {str(k): str(v) for k, v in conn.execute("SELECT key, value FROM state_meta")}


def _check_rows(rows: list[tuple[Any, ...]]) -> list[str]:
    return [str(r[0]) for r in rows]


def _ok(result: list[str]) -> bool:
    return result == ["ok"]


def _counts(conn: apsw.Connection) -> tuple[int, int]:
    sessions = _count(conn, "SELECT count(*) FROM sessions")
    messages = _count(conn, "SELECT count(*) FROM messages")
    return sessions, messages


def diagnose(db_path: str | os.PathLike[str], *, full: bool = True) -> dict[str, Any]:
    """What is wrong with a store, read-only (never writes the database).

    Keys: `path`, `readable` (SQLite can read the tables, if need be skipping schema rows that do
    not parse), `schema_error` (SQLite's error on a normal open, None if the schema parses),
    `duplicates` (`[{type, name, count, rowids}]` in `sqlite_master`), `fts_layout`
    (`"v23" | "legacy" | "none"`), `fts` (`{table: "ok" | SQLite's error | "skipped: …"}`, FTS5's
    structural check through `PRAGMA integrity_check(table)`), `quick_check` and
    `integrity_check` (lists of lines, `["ok"]` when fine; the latter only with `full`, else
    None), `sessions` and `messages` (counts), `problems` (one human line each), `healthy`,
    `repairable` (what `repair` can fix: duplicates and FTS indexes, nothing else), `error`
    (why the file cannot be read at all: not SQLite, or corrupt).

    It creates and writes no file: no -wal or -shm appears beside the store, and nothing is
    checkpointed (`_reading`). A file it cannot read for a reason that says nothing about damage
    raises that `StoreError` instead of a report: `ReadOnlyError` for permissions or a read-only
    folder that lacks the -shm its -wal needs, `LockTimeout`, `StorageError`.
    """
    return _diagnose(Path(db_path).expanduser(), full, look=True)


def _diagnose(path: Path, full: bool, *, look: bool) -> dict[str, Any]:
    """`diagnose`; `look=False` reads through SQLite's usual read-only connection only (the
    store is open in this process: its -wal and -shm are there, and a look would make other
    threads wait for their connections while it runs)."""
    report: dict[str, Any] = {
        "path": str(path),
        "readable": False,
        "schema_error": None,
        "duplicates": [],
        "fts_layout": "none",
        "fts": {},
        "quick_check": None,
        "integrity_check": None,
        "sessions": None,
        "messages": None,
        "problems": [],
        "healthy": False,
        "repairable": False,
        "error": None,
    }
    try:
        size = sqlite_file_size(path)
    except NotADatabaseError as exc:  # a folder, a device…; anything else is no damage: raised
        report["error"] = str(exc)
        return report
    if size is None:
        report["error"] = f"{path} does not exist"
        return report
    if size == 0:
        report["error"] = f"{path} is empty (0 bytes)"
        return report
    filled = report
    for attempt in range(1, _STABLE_TRIES + 1):
        # Without a -wal the look reads the file `immutable=1`, without a lock: a writer that
        # starts meanwhile may checkpoint into it, so the diagnosis counts only if the file did
        # not change while it ran (and after a few changes, it is made under SQLite's locks).
        stamp = _stamp(path)
        locked = not look or attempt == _STABLE_TRIES
        unlocked = not locked and not os.path.lexists(sidecar(path, "-wal"))
        filled = _examined(path, dict(report), full, locked=locked)
        if not unlocked or _stamp(path) == stamp:
            break
    _judge(filled)
    return filled


def _examined(path: Path, report: dict[str, Any], full: bool, *, locked: bool) -> dict[str, Any]:
    """`report` filled by one reading of the file (see `diagnose`)."""
    report.update(fts={}, problems=[])
    schema_errors: list[str] = []
    try:
        with _reading(path, locked, schema_errors) as conn:
            report["schema_error"] = schema_errors[0] if schema_errors else None
            _diagnose_into(conn, report, full)
    except NotADatabaseError as exc:
        cause = exc.__cause__ if isinstance(exc.__cause__, apsw.Error) else exc
        report["error"] = f"SQLite cannot read {path}: {_message(cause)}"
        report["readable"] = False
    except (apsw.BusyError, apsw.LockedError) as exc:
        raise store_error(exc, path) from exc
    except apsw.Error as exc:
        report["error"] = f"SQLite cannot read {path}: {_message(exc)}"
        report["readable"] = False
    return report


def _diagnose_into(conn: apsw.Connection, report: dict[str, Any], full: bool) -> None:
    cjk_ok = _install_tokenizer(conn)
    report["duplicates"] = _duplicates(conn)
    master = _master(conn)
    report["fts_layout"] = F.detect_layout(master, _meta(conn, master)).kind
    report["sessions"], report["messages"] = _counts(conn)
    report["readable"] = True
    for table in FTS_TABLES:
        if table not in master:
            continue
        if table == "messages_fts_cjk" and not cjk_ok:
            report["fts"][table] = "skipped: the cjk tokenizer is not available"
            continue
        try:
            lines = _check_rows(conn.execute(f"PRAGMA integrity_check({table})").fetchall())
            report["fts"][table] = "ok" if _ok(lines) else "; ".join(lines[:3])
        except apsw.Error as exc:
            report["fts"][table] = _message(exc)
    report["quick_check"] = _check_rows(conn.execute("PRAGMA quick_check").fetchall())
    if full:
        report["integrity_check"] = _check_rows(conn.execute("PRAGMA integrity_check").fetchall())


def _is_fts_line(line: str) -> bool:
    """A check line about an FTS index (what rebuilding it fixes)."""
    low = line.lower()
    return "fts5" in low or any(f'"{t}"' in line or f"{t}_" in line for t in FTS_TABLES)


def _judge(report: dict[str, Any]) -> None:
    """Fill `problems`, `healthy` and `repairable` from the findings."""
    problems: list[str] = report["problems"]
    if report["error"]:
        problems.append(report["error"])
        return
    if report["schema_error"]:
        problems.append(f"the schema does not parse: {report['schema_error']}")
    for dup in report["duplicates"]:
        problems.append(f"sqlite_master holds {dup['count']} rows for {dup['type']} {dup['name']}")
    broken_fts = {t: r for t, r in report["fts"].items() if r != "ok" and not r.startswith("skipped")}
    for table, result in broken_fts.items():
        problems.append(f"the full-text index {table} is damaged: {result}")
    other = [
        line
        for check in ("quick_check", "integrity_check")
        for line in (report[check] or [])
        if line != "ok" and not _is_fts_line(line)
    ]
    for line in dict.fromkeys(other):
        problems.append(f"integrity check: {line}")
    report["healthy"] = not problems
    report["repairable"] = bool(problems) and not other and report["readable"]


# ---------------------------------------------------------------------------------------- backup
def _backup_path(path: Path, backup_dir: Path | None) -> Path:
    """`<name>.malformed-backup-YYYYmmdd_HHMMSS` (upstream's name), beside the store by default."""
    folder = backup_dir if backup_dir is not None else path.parent
    stamp = datetime.datetime.now().strftime("%Y%m%d_%H%M%S")
    candidate = folder / f"{path.name}.malformed-backup-{stamp}"
    n = 1
    while os.path.lexists(candidate) or os.path.lexists(str(candidate) + ".part"):
        n += 1
        candidate = folder / f"{path.name}.malformed-backup-{stamp}-{n}"
    return candidate


def _private_new(path: Path) -> None:
    fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    os.close(fd)


def make_backup(path: Path, backup_dir: Path | None = None) -> Path:
    """A consistent private (0600) copy of the store, including what is in its `-wal`.

    SQLite's backup API through a read-only connection (which skips schema rows that do not
    parse); when SQLite cannot read the file, a byte copy of the database and its `-wal`. Written
    under a `.part` name, fsynced and renamed, so a crash never leaves a half backup under the
    final name.
    """
    if backup_dir is not None:
        backup_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    final = _backup_path(path, backup_dir)
    part = Path(str(final) + ".part")
    _private_new(part)
    try:
        try:
            _page_copy(path, part)
        except apsw.Error:
            _byte_copy(path, part)
        fsync_path(part)
        os.replace(part, final)
        for side in ("-wal", "-shm", "-journal"):  # the backup is one self-contained file
            with contextlib.suppress(FileNotFoundError):
                os.unlink(str(part) + side)
        fsync_path(final.parent)
    except BaseException:
        for leftover in (part, Path(str(part) + "-wal"), Path(str(final) + "-wal")):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(leftover)
        raise
    return final


def _byte_copy(path: Path, part: Path) -> None:
    with open(path, "rb") as src, open(part, "wb") as dst:
        shutil.copyfileobj(src, dst)
    wal = Path(str(path) + "-wal")
    if wal.exists():
        with open(wal, "rb") as src, open(str(part) + "-wal", "wb") as dst:
            os.chmod(dst.fileno(), 0o600)
            shutil.copyfileobj(src, dst)


def _restore(backup: Path, path: Path) -> None:
    """Write the backup's content back into the store through SQLite (locks and WAL respected)."""
    _page_copy(backup, path)


def _page_copy(source: Path, target: Path) -> None:
    """Every page of `source` into `target` with SQLite's backup API: the source read-only with
    `writable_schema` (a damaged schema still copies), locks and WAL respected on both sides,
    each waiting up to `LOCK_TIMEOUT_MS` for another process's lock. Used by the backup taken
    before a repair and by the restore from it."""
    src = apsw.Connection(_uri(source, "?mode=ro"), flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
    try:
        src.set_busy_handler(busy_handler(LOCK_TIMEOUT_MS))
        src.execute("PRAGMA writable_schema=ON")
        dest = apsw.Connection(str(target))
        try:
            dest.set_busy_handler(busy_handler(LOCK_TIMEOUT_MS))
            with dest.backup("main", src, "main") as job:
                job.step(-1)
        finally:
            dest.close()
    finally:
        src.close()


# ---------------------------------------------------------------------------------------- repair
def _rolled_back(conn: apsw.Connection, savepoint: str, probe: Callable[[], object]) -> str | None:
    """Run `probe` inside a savepoint that is always rolled back: None if it ran, else the error.

    The one way repair tries a statement without changing anything, read or write alike."""
    conn.execute(f"SAVEPOINT {savepoint}")
    try:
        probe()
        return None
    except apsw.Error as exc:
        return _message(exc)
    finally:
        conn.execute(f"ROLLBACK TO {savepoint}")
        conn.execute(f"RELEASE {savepoint}")


def _savepoint_ok(conn: apsw.Connection, sql: str) -> str | None:
    """Run `sql` inside a savepoint that is always rolled back: None if it ran, else the error."""
    return _rolled_back(conn, "hermes_repair_probe", lambda: conn.execute(sql).fetchall())


def _fts_check(conn: apsw.Connection, table: str) -> str | None:
    """FTS5's `'integrity-check'`: None if the index is sound, else SQLite's error.

    Rank 1 also compares an external-content index with its content, except for a v23 index
    whose rebuild-gate markers say it is still being filled (it lacks rows on purpose then)."""
    gated = False
    with contextlib.suppress(apsw.Error):
        keys = _GATE_KEYS[table]
        gated = bool(conn.execute("SELECT 1 FROM state_meta WHERE key IN (?, ?)", keys).fetchall())
    rank = 0 if gated else 1
    return _savepoint_ok(conn, f"INSERT INTO {table}({table}, rank) VALUES('integrity-check', {rank})")


def _dedup_schema(conn: apsw.Connection, actions: list[str]) -> None:
    """Keep the lowest rowid of each (type, name) in `sqlite_master`, as upstream does."""
    for dup in _duplicates(conn):
        keep = dup["rowids"][0]
        conn.execute(
            "DELETE FROM sqlite_master WHERE type IS ? AND name IS ? AND rowid <> ?",
            (dup["type"], dup["name"], keep),
        )
        actions.append(
            f"removed {dup['count'] - 1} duplicate sqlite_master row(s) for {dup['type']} {dup['name']}"
        )
    _schema_changed(conn)


def _schema_changed(conn: apsw.Connection) -> None:
    """After editing `sqlite_master` by hand: bump the schema cookie (so every other connection
    re-reads the schema, as after any DDL) and make this connection re-read it too."""
    version = _count(conn, "PRAGMA schema_version")
    conn.execute(f"PRAGMA schema_version={version + 1}")
    conn.execute("PRAGMA writable_schema=RESET")


def _drop_fts(conn: apsw.Connection, table: str, actions: list[str]) -> bool:
    """Drop an FTS table; when FTS5 cannot even load it, remove its rows from `sqlite_master`
    instead (its pages are then unused until the VACUUM `repair` runs after the commit).
    Returns True when that fallback left unused pages."""
    try:
        conn.execute(f"DROP TABLE {table}")
        return False
    except apsw.Error as exc:
        actions.append(f"{table} could not be dropped ({_message(exc)}): removed from sqlite_master")
    names = [table] + [f"{table}_{s}" for s in _SHADOW_SUFFIXES]
    conn.execute("PRAGMA writable_schema=ON")
    conn.execute(
        f"DELETE FROM sqlite_master WHERE type = 'table' AND name IN ({','.join('?' * len(names))})", names
    )
    _schema_changed(conn)
    conn.execute("PRAGMA writable_schema=OFF")
    return True


def _recreate(conn: apsw.Connection, table: str, sql: str, actions: list[str]) -> bool:
    """Drop and re-create an FTS table with the file's own DDL (triggers are left in place)."""
    orphaned = _drop_fts(conn, table, actions)
    conn.execute(sql)
    return orphaned


def _repair_fts(
    conn: apsw.Connection, master: dict[str, tuple[str, str | None]], broken: list[str], actions: list[str]
) -> bool:
    """Rebuild every broken index from `messages`; True if pages were left unused (VACUUM)."""
    orphaned = False
    layout = F.detect_layout(master, _meta(conn, master))
    todo = list(broken)
    if layout.kind == "v23":
        meta = _meta(conn, master)
        for table in broken:
            if any(k in meta for k in _GATE_KEYS[table]):  # mid-rebuild: its group is redone whole
                todo += [t for t in _GATE_GROUPS[table] if t in master and t not in todo]
    for table in todo:
        sql = master[table][1] or ""
        external = "content=" in sql.replace(" ", "")
        if external:
            err = _savepoint_ok(conn, f"INSERT INTO {table}({table}) VALUES('rebuild')")
            if err is None:
                conn.execute(f"INSERT INTO {table}({table}) VALUES('rebuild')")
                actions.append(f"rebuilt the full-text index {table} from messages")
                continue
            orphaned |= _recreate(conn, table, sql, actions)
            conn.execute(f"INSERT INTO {table}({table}) VALUES('rebuild')")
        else:
            # Legacy inline table: its own copy of the text may be what is damaged, so it is
            # re-created with the file's DDL and refilled from messages (0.19.0's expression).
            orphaned |= _recreate(conn, table, sql, actions)
            conn.execute(f"INSERT INTO {table}(rowid, content) {F.LEGACY_CONCAT_SELECT}")
        actions.append(f"re-created the full-text index {table} and refilled it from messages")
    if layout.kind == "v23":
        for table in todo:
            for key in _GATE_KEYS[table]:
                conn.execute("DELETE FROM state_meta WHERE key = ?", (key,))
    return orphaned


def _write_probe(conn: apsw.Connection) -> str | None:
    """A session and a message written through every trigger, then rolled back (upstream's
    probe: a damaged index can leave reads and `integrity_check` fine and refuse every write)."""
    sid = f"_hermes_repair_probe_{time.time_ns()}"

    def write() -> None:
        conn.execute(
            "INSERT INTO sessions (id, source, started_at) VALUES (?, ?, ?)", (sid, "_probe", time.time())
        )
        conn.execute(
            "INSERT INTO messages (session_id, role, content, timestamp) VALUES (?, ?, ?, ?)",
            (sid, "user", "_fts_health_probe", time.time()),
        )

    return _rolled_back(conn, "hermes_repair_write_probe", write)


def _verify(conn: apsw.Connection, counts: tuple[int, int], allow_unused_pages: bool) -> None:
    """Inside the repair transaction: raise `RepairFailed` unless everything is sound."""
    after = _counts(conn)
    if after != counts:
        raise RepairFailed(f"sessions/messages changed from {counts} to {after}")
    lines = _check_rows(conn.execute("PRAGMA integrity_check").fetchall())
    if allow_unused_pages:
        lines = [ln for ln in lines if "never used" not in ln] or ["ok"]
    if not _ok(lines):
        raise RepairFailed("integrity check: " + "; ".join(lines[:3]))
    master = _master(conn)
    for table in FTS_TABLES:
        if table in master:
            err = _fts_check(conn, table)
            if err is not None:
                raise RepairFailed(f"{table} still fails its integrity check: {err}")
    err = _write_probe(conn)
    if err is not None and "no such" not in err:
        raise RepairFailed(f"a test write still fails: {err}")


def _begin(conn: apsw.Connection) -> None:
    conn.execute("BEGIN IMMEDIATE")


def repair(
    db_path: str | os.PathLike[str], backup_dir: str | os.PathLike[str] | None = None, *, backup: bool = True
) -> dict[str, Any]:
    """Back the store up, then fix duplicate `sqlite_master` rows and damaged FTS indexes.

    Returns upstream's report keys — `repaired`, `strategy` (`"already_healthy"`,
    `"dedup_schema"`, `"rebuild_fts"` or `"dedup_schema+rebuild_fts"`), `backup_path`, `error` —
    plus `actions` (what was done, one line each), `sessions`/`messages` (kept, counted before
    and after), `before` and `after` (`diagnose` reports). The backup (mode 0600, in `backup_dir`
    or beside the store) is taken before anything changes; the repair is one transaction that
    commits only once verified, so when `repaired` is False the file is as it was.
    """
    path = Path(db_path).expanduser()
    folder = Path(backup_dir).expanduser() if backup_dir is not None else None
    before = diagnose(path)
    report: dict[str, Any] = {
        "repaired": False,
        "strategy": None,
        "backup_path": None,
        "error": None,
        "actions": [],
        "sessions": before["sessions"],
        "messages": before["messages"],
        "before": before,
        "after": None,
    }
    if before["healthy"]:
        report.update(repaired=True, strategy="already_healthy")
        return report
    if not before["repairable"]:
        reason = "; ".join(before["problems"][:3]) or "unknown damage"
        report["error"] = f"{path} cannot be repaired automatically ({reason}); it was left exactly as it was"
        return report
    try:
        conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READWRITE)
    except apsw.Error as exc:
        report["error"] = f"cannot open {path} for writing: {_message(exc)}; nothing was changed"
        return report
    try:
        return _repair_locked(conn, path, folder, backup, report)
    finally:
        with contextlib.suppress(apsw.Error):
            conn.close()


def _repair_locked(
    conn: apsw.Connection, path: Path, folder: Path | None, backup: bool, report: dict[str, Any]
) -> dict[str, Any]:
    actions: list[str] = report["actions"]
    conn.set_busy_handler(busy_handler(LOCK_TIMEOUT_MS))
    conn.execute("PRAGMA writable_schema=ON")
    _install_tokenizer(conn)
    try:
        _begin(conn)
    except apsw.Error as exc:
        report["error"] = f"{path} is busy ({_message(exc)}): another process is writing; nothing was changed"
        return report
    committed = False
    try:
        if backup:
            try:
                report["backup_path"] = str(make_backup(path, folder))
            except (OSError, apsw.Error) as exc:
                raise RepairFailed(f"the backup failed ({exc}), so nothing was repaired") from exc
        counts = _counts(conn)
        strategies = []
        if _duplicates(conn):
            _dedup_schema(conn, actions)
            strategies.append("dedup_schema")
        conn.execute("PRAGMA writable_schema=OFF")  # from here the schema must parse as it is
        master = _master(conn)
        broken = []
        for table in FTS_TABLES:
            if table in master and _fts_check(conn, table) is not None:
                broken.append(table)
        orphaned = False
        if broken:
            orphaned = _repair_fts(conn, master, broken, actions)
            strategies.append("rebuild_fts")
        _verify(conn, counts, orphaned)
        conn.execute("COMMIT")
        committed = True
        if orphaned:
            conn.execute("VACUUM")
            actions.append("VACUUM: freed the pages of the dropped index")
        report["strategy"] = "+".join(strategies) or None
    except (apsw.Error, RepairFailed) as exc:
        if not committed:
            with contextlib.suppress(apsw.Error):
                if not conn.get_autocommit():
                    conn.execute("ROLLBACK")
            report["error"] = f"could not repair {path}: {_message(exc)}; it was left exactly as it was"
            return report
        report["error"] = f"after repairing {path}: {_message(exc)}"
    conn.close()
    after = diagnose(path)
    report["after"] = after
    if not after["healthy"]:
        report["error"] = "the repaired file still fails its checks: " + "; ".join(after["problems"][:3])
        if report["backup_path"]:
            _restore(Path(report["backup_path"]), path)
            report["error"] += "; the original was restored from the backup"
        return report
    report["repaired"] = True
    report["error"] = None
    report["sessions"], report["messages"] = after["sessions"], after["messages"]
    return report


def repair_state_db_schema(db_path: str | os.PathLike[str], *, backup: bool = True) -> dict[str, Any]:
    """Upstream 0.19.0's entry point (same name, arguments and report keys): `repair` with the
    backup beside the store."""
    return repair(db_path, backup=backup)


class RepairMixin(_Core):
    """`SessionDB.diagnose()`: the browser, holding a store open read-only, asks what is wrong
    with its file (a broken FTS index leaves the tables readable)."""

    def diagnose(self, *, full: bool = True) -> dict[str, Any]:
        """`diagnose(self.db_path)`: read-only, on a connection of its own."""
        return _diagnose(self.db_path, full, look=False)
