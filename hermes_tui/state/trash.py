"""The trash: every delete and prune can be taken back.

Before the first row of a delete goes, everything it will remove is written to a trash entry
and fsynced: every column of the sessions rows, of their messages (ids included) and of the rows
of every table whose foreign key cascades from `sessions` (`session_model_usage`), plus the
`parent_session_id` of each surviving child the delete orphans. The delete itself is the store's
batched one (`delete_sessions_batched`), so a live agent still gets in between batches.

What the entry holds must be exactly what goes. Between the snapshot and a batch an agent may
append a message, update token counts or start a child session, so while the delete runs this
connection carries TEMP guard triggers (invisible to every other connection; the file is not
touched): a row deleted, or a child orphaned, that differs from the snapshot aborts its batch.
Those sessions are then snapshotted again (the entry gets a `reset` line and the fresh rows,
fsynced) and the delete continues. Earlier batches stay committed and are in the entry already.

Layout: `<store dir>/.hermes-tui-trash/<store file name>/<entry id>/` (folders 0700, files
0600), or `$XDG_DATA_HOME/hermes-tui/trash/<name>-<path hash>/` when the store's folder is not
writable. An entry is `rows.jsonl` (one `{"t": table, "r": row}` per line; `{"t": "reset",
"ids": [...]}` drops what came before for those sessions) and `manifest.json`. JSON values
are exact: floats round-trip through `repr`, bytes are `{"$b64": ...}`, non-finite floats
`{"$float": "inf"}`.

Restore inserts identical rows (message ids explicit, so FTS triggers index them again under
their old rowids) in short batches with a savepoint per session. Rowids that differ after a
restore, by design: `sessions` and `session_model_usage` have implicit rowids (TEXT or
composite primary keys), which reinsertion renumbers; messages keep theirs (`id`).
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import math
import os
import re
import secrets
import shutil
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import apsw

from .core import MESSAGES_RESTORED_KEY, _Core, placeholders
from .errors import StoreError
from .paths import earlier_user_data_dirs, fsync_path, user_data_dir

TRASH_DIR_NAME = ".hermes-tui-trash"
TRASH_RETENTION_S = 30 * 86400.0  # entries older than this go when a new one is written
TRASH_MAX_BYTES = 500 * 1024 * 1024  # then the oldest go while the trash is larger than this
FORMAT = 1
RESTORE_BATCH_MESSAGES = 250  # messages per restore transaction (like the delete's batches)
RESTORE_BATCH_SESSIONS = 50
# After each restore batch the lock stays free as long as the batch held it, within these bounds:
# a waiting writer's busy handler polls every 1-4 ms, so 25 ms lets it in, and an undo of 20k
# messages is not doubled (FTS triggers make a restore batch ~3x as long as a delete batch).
RESTORE_YIELD_MIN_S = 0.005
RESTORE_YIELD_MAX_S = 0.025
GUARD_RETRIES = 8  # re-snapshots of sessions that changed under a running delete
GUARD_MARK = "hermes-tui-trash: rows changed since the snapshot"
ENTRY_RE = re.compile(r"^\d{8}T\d{6}Z-[0-9a-f]{6}$")
_ORPHANS = "orphan"


class TrashError(StoreError):
    """A trash entry cannot be written, read or restored."""


class TrashEntryNotFound(TrashError):
    """No trash entry with that id for this store."""


# ---------------------------------------------------------------- values
class RawText(bytes):
    """A TEXT value that is not valid UTF-8 (another writer's bytes): kept byte for byte and
    restored as TEXT (`CAST(? AS TEXT)`), not as a BLOB."""


def encode_value(value: Any) -> Any:
    """An SQLite value as exact JSON (bytes, raw text and non-finite floats tagged)."""
    if isinstance(value, RawText):
        return {"$text_b64": base64.b64encode(value).decode("ascii")}
    if isinstance(value, bytes):
        return {"$b64": base64.b64encode(value).decode("ascii")}
    if isinstance(value, float) and not math.isfinite(value):
        return {"$float": repr(value)}
    return value


def decode_value(value: Any) -> Any:
    """The inverse of `encode_value`."""
    if isinstance(value, dict):
        if "$b64" in value:
            return base64.b64decode(value["$b64"])
        if "$text_b64" in value:
            return RawText(base64.b64decode(value["$text_b64"]))
        if "$float" in value:
            return float(value["$float"])
        raise TrashError(f"unknown tagged value in a trash entry: {sorted(value)}")
    return value


def _line(obj: dict[str, Any]) -> str:
    return json.dumps(obj, allow_nan=False, separators=(",", ":")) + "\n"


# ---------------------------------------------------------------- files
def _private_dirs(path: Path, top: Path) -> None:
    """Create `path` and its missing parents 0700; from `top` down each must be a real folder
    (not a link: the trash holds message text)."""
    for folder in [*reversed(path.parents), path]:
        try:
            folder.mkdir(mode=0o700)
        except FileExistsError:
            ours = folder == top or top in folder.parents
            if ours and (folder.is_symlink() or not folder.is_dir()):
                raise TrashError(f"{folder} is not a folder; cannot keep the trash there") from None


def _write_private(path: Path, text: str) -> None:
    """Write `path` (0600, created new), fsync it."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())


def _replace_private(path: Path, text: str) -> None:
    """Atomically replace `path` with `text` (0600), file and folder fsynced."""
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    _write_private(tmp, text)
    os.replace(tmp, path)
    fsync_path(path.parent)


def beside_root(db_path: Path) -> Path:
    return db_path.parent / TRASH_DIR_NAME / db_path.name


def fallback_root(db_path: Path, data_dir: Path | None = None) -> Path:
    """The store's trash in the user data folder (used when its own folder is not writable)."""
    digest = hashlib.sha256(str(db_path.resolve()).encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return (data_dir or user_data_dir()) / "trash" / f"{db_path.name}-{digest}"


def new_entry_id(now: float) -> str:
    return datetime.fromtimestamp(now, UTC).strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3)


def _dir_bytes(path: Path) -> int:
    total = 0
    with contextlib.suppress(OSError):
        for p in path.iterdir():
            with contextlib.suppress(OSError):
                total += p.stat().st_size
    return total


# ---------------------------------------------------------------- loading an entry
class _Snapshot:
    """The rows of an entry (later snapshots of a session replace earlier ones)."""

    def __init__(self) -> None:
        self.sessions: dict[str, dict[str, Any]] = {}
        self.messages: dict[str, list[dict[str, Any]]] = {}
        self.children: dict[str, dict[str, list[dict[str, Any]]]] = {}  # table -> sid -> rows
        self.orphans: dict[str, dict[str, Any]] = {}  # child id -> {"id", "parent_session_id"}

    def reset(self, ids: Sequence[str]) -> None:
        drop = set(ids)
        for sid in drop:
            self.sessions.pop(sid, None)
            self.messages.pop(sid, None)
            for rows in self.children.values():
                rows.pop(sid, None)
        self.orphans = {k: v for k, v in self.orphans.items() if v["parent_session_id"] not in drop}

    def add(self, table: str, row: dict[str, Any], fk: str | None) -> None:
        if table == "sessions":
            self.sessions[row["id"]] = row
        elif table == "messages":
            self.messages.setdefault(row["session_id"], []).append(row)
        elif table == _ORPHANS:
            self.orphans[row["id"]] = row
        elif fk is not None:
            self.children.setdefault(table, {}).setdefault(row[fk], []).append(row)


def read_rows(path: Path, fks: dict[str, str]) -> _Snapshot:
    snap = _Snapshot()
    with open(path, encoding="utf-8") as fh:
        for n, raw in enumerate(fh, 1):
            if not raw.endswith("\n"):
                break  # a torn last line: written after the fsync that preceded any delete
            try:
                rec = json.loads(raw)
            except ValueError as exc:
                raise TrashError(f"{path}: line {n} is not valid JSON") from exc
            if rec.get("t") == "reset":
                snap.reset(rec["ids"])
                continue
            row = {k: decode_value(v) for k, v in rec["r"].items()}
            snap.add(rec["t"], row, rec.get("fk") or fks.get(rec["t"]))
    return snap


class TrashMixin(_Core):
    """(+) `trash_sessions`, `list_trash`, `trash_entry`, `restore_trash`, `empty_trash`."""

    #: Retention applied when a new entry is written and by `apply_trash_retention()`.
    trash_retention_s: float = TRASH_RETENTION_S
    trash_max_bytes: int = TRASH_MAX_BYTES
    #: Force the trash folder (tests, or a user setting); None: beside the store, else data dir.
    trash_root: Path | None = None
    #: Test hook: called with a step name at each durable step of delete and restore.
    _trash_step_hook: Callable[[str], None] | None = None

    # ------------------------------------------------------------ places
    def _trash_roots(self) -> list[Path]:
        if self.trash_root is not None:
            return [Path(self.trash_root)]
        earlier = [fallback_root(self.db_path, d) for d in earlier_user_data_dirs()]
        return [beside_root(self.db_path), fallback_root(self.db_path), *earlier]

    def _writable_trash_root(self) -> Path:
        """Beside the store when its folder takes it, else the platform's data folder."""
        if self.trash_root is not None:
            root = Path(self.trash_root)
            _private_dirs(root, root)
            return root
        beside = beside_root(self.db_path)
        try:
            _private_dirs(beside, beside.parent)
            if os.access(beside, os.W_OK):
                return beside
        except (OSError, TrashError):
            pass
        root = fallback_root(self.db_path)
        try:
            _private_dirs(root, user_data_dir())
        except OSError as exc:
            raise TrashError(
                f"cannot create a trash folder beside {self.db_path} or at {root}: {exc}"
            ) from exc
        return root

    def _step(self, name: str) -> None:
        hook = self._trash_step_hook
        if hook is not None:
            hook(name)

    # ------------------------------------------------------------ tables
    def _cascade_tables(self) -> dict[str, str]:
        """Tables whose rows go with a session (`ON DELETE CASCADE` to sessions.id): table -> column."""
        out: dict[str, str] = {}
        for name in sorted(self._columns):
            if name in ("sessions", "messages") or name.startswith("sqlite_"):
                continue
            for fk in self._conn().execute(f'PRAGMA foreign_key_list("{name}")'):
                # (id, seq, table, from, to, on_update, on_delete, match)
                if fk[2] == "sessions" and (fk[4] in (None, "id")) and str(fk[6]).upper() == "CASCADE":
                    out[name] = fk[3]
        return out

    # ------------------------------------------------------------ delete with trash
    def trash_sessions(
        self,
        session_ids: Sequence[str],
        *,
        what: str = "delete",
        cascade_delegates: bool = False,
        require_ended: bool = False,
        progress: Callable[[int, int], None] | None = None,
        cancel: threading.Event | None = None,
        batch_messages: int | None = None,
    ) -> dict[str, Any]:
        """(+) Write a trash entry of `session_ids` (and, with `cascade_delegates`, their delegate
        children), fsync it, then delete them with `delete_sessions_batched`.

        Returns the delete's result plus `trash_entry` (None when nothing existed) and
        `trash_path`. The entry restores exactly what was deleted: ids skipped (reopened,
        `require_ended`) or left by `cancel` are recorded as not deleted. `batch_messages` sizes
        the delete's batches (the store's default when None).
        """
        self._require_writable()
        if what not in ("delete", "prune"):
            raise ValueError(f"what must be 'delete' or 'prune', not {what!r}")
        wanted = list(dict.fromkeys(s for s in session_ids if isinstance(s, str) and s))
        if cascade_delegates and wanted:
            seen = set(wanted)
            wanted += [c for c in self.delegate_children(wanted) if c not in seen]
        conn = self._conn()
        fks = self._cascade_tables()
        empty = {
            "requested": len(wanted),
            "deleted": 0,
            "deleted_ids": [],
            "skipped": 0,
            "cancelled": False,
            "batches": 0,
            "longest_batch_s": 0.0,
            "trash_entry": None,
            "trash_path": None,
        }
        self._guard_setup(conn, fks)
        try:
            ids = self._snapshot_into_temp(conn, wanted, fks)
            if not ids:
                return empty
            now = time.time()
            root = self._writable_trash_root()
            entry_id = new_entry_id(now)
            entry = root / entry_id
            entry.mkdir(mode=0o700)
            rows_path = entry / "rows.jsonl"
            counts = self._dump_temp(conn, rows_path, fks, create=True)
            titles = dict(self._tuples("SELECT id, title FROM temp.hermes_trash_s"))  # non-UTF-8 safe
            manifest: dict[str, Any] = {
                "format": FORMAT,
                "id": entry_id,
                "created_at": now,
                "what": what,
                "store": str(self.db_path.resolve()),
                "store_name": self.db_path.name,
                "status": "pending",
                "sessions": [{"id": i, "title": titles.get(i)} for i in ids],
                "counts": counts,
                "bytes": rows_path.stat().st_size,
                "cascade_tables": fks,
                "requested_ids": wanted,
                "deleted_ids": None,
            }
            _write_private(entry / "manifest.json", json.dumps(manifest, indent=1))
            fsync_path(entry)
            fsync_path(root)
            self._step("entry-written")
            result = self._guarded_delete(
                conn, ids, rows_path, fks, require_ended, progress, cancel, batch_messages
            )
        finally:
            self._guard_teardown(conn)
        if not result["deleted_ids"]:
            # Cancelled before the first batch, or every session was reopened: nothing to restore.
            self._remove_entry(entry)
            return {**result, "trash_entry": None, "trash_path": None}
        manifest["deleted_ids"] = result["deleted_ids"]
        manifest["status"] = "deleted"
        manifest["bytes"] = rows_path.stat().st_size
        manifest["completed_at"] = time.time()
        _replace_private(entry / "manifest.json", json.dumps(manifest, indent=1))
        self._step("entry-completed")
        retention = self.apply_trash_retention(keep=entry_id)
        return {**result, "trash_entry": entry_id, "trash_path": str(entry), "retention": retention}

    def _guarded_delete(
        self,
        conn: apsw.Connection,
        ids: list[str],
        rows_path: Path,
        fks: dict[str, str],
        require_ended: bool,
        progress: Callable[[int, int], None] | None,
        cancel: threading.Event | None,
        batch_messages: int | None = None,
    ) -> dict[str, Any]:
        """Delete `ids` in batches; a batch the guard aborts is re-snapshotted and retried."""
        sizing: dict[str, Any] = {} if batch_messages is None else {"batch_messages": batch_messages}
        deleted: list[str] = []
        batches = 0
        longest = 0.0
        cancelled = False
        todo = list(ids)
        total = len(ids)

        def prog(done: int, _total: int) -> None:
            if progress is not None:
                progress(len(deleted) + done, total)

        for attempt in range(GUARD_RETRIES + 1):
            try:
                res = self.delete_sessions_batched(
                    todo,
                    cascade_delegates=False,
                    require_ended=require_ended,
                    progress=prog,
                    cancel=cancel,
                    **sizing,
                )
            except StoreError as exc:
                if GUARD_MARK not in str(exc) or attempt == GUARD_RETRIES:
                    raise
                gone = self._absent(conn, todo)
                deleted += [i for i in todo if i in gone]
                todo = [i for i in todo if i not in gone]
                self._resnapshot(conn, todo, rows_path, fks)
                continue
            deleted += res["deleted_ids"]
            batches += res["batches"]
            longest = max(longest, res["longest_batch_s"])
            cancelled = res["cancelled"]
            break
        deleted_set = set(deleted)
        return {
            "requested": len(ids),
            "deleted": len(deleted),
            "deleted_ids": [i for i in ids if i in deleted_set],
            "skipped": 0 if cancelled else len(ids) - len(deleted),
            "cancelled": cancelled,
            "batches": batches,
            "longest_batch_s": longest,
        }

    def _absent(self, conn: apsw.Connection, ids: Sequence[str]) -> set[str]:
        present: set[str] = set()
        for i in range(0, len(ids), 400):
            part = list(ids[i : i + 400])
            present.update(
                r[0]
                for r in conn.execute(f"SELECT id FROM sessions WHERE id IN ({placeholders(part)})", part)
            )
        return set(ids) - present

    def _resnapshot(
        self, conn: apsw.Connection, ids: list[str], rows_path: Path, fks: dict[str, str]
    ) -> None:
        """Sessions that changed under the delete: forget their old rows, snapshot them again."""
        conn.execute("DELETE FROM temp.hermes_trash_ids")
        for t in (
            "hermes_trash_s",
            "hermes_trash_m",
            "hermes_trash_o",
            *(f"hermes_trash_c_{n}" for n in fks),
        ):
            conn.execute(f"DELETE FROM temp.{t}")
        self._snapshot_into_temp(conn, ids, fks)
        with open(rows_path, "a", encoding="utf-8") as fh:
            fh.write(_line({"t": "reset", "ids": ids}))
            fh.flush()
            os.fsync(fh.fileno())
        self._dump_temp(conn, rows_path, fks, create=False)
        self._step("resnapshot")

    def _guard_setup(self, conn: apsw.Connection, fks: dict[str, str]) -> None:
        """TEMP copies of the rows about to go, and TEMP triggers that abort a batch deleting a
        row (or orphaning a child) that is not exactly as snapshotted. This connection only."""
        self._guard_teardown(conn)
        conn.execute("CREATE TEMP TABLE hermes_trash_ids (id TEXT PRIMARY KEY)")
        conn.execute("CREATE TEMP TABLE hermes_trash_s AS SELECT * FROM main.sessions WHERE 0")
        conn.execute("CREATE TEMP TABLE hermes_trash_m AS SELECT * FROM main.messages WHERE 0")
        conn.execute(
            "CREATE TEMP TABLE hermes_trash_o AS SELECT id, parent_session_id FROM main.sessions WHERE 0"
        )
        conn.execute("CREATE INDEX temp.hermes_trash_s_id ON hermes_trash_s(id)")
        conn.execute("CREATE INDEX temp.hermes_trash_m_id ON hermes_trash_m(id)")
        conn.execute("CREATE INDEX temp.hermes_trash_o_id ON hermes_trash_o(id)")
        abort = f"SELECT RAISE(ABORT, '{GUARD_MARK}')"

        def same(table: str, cols: Sequence[str], key: str, skip: Sequence[str] = ()) -> str:
            cond = " AND ".join(f'e."{c}" IS old."{c}"' for c in cols if c not in skip)
            return f'NOT EXISTS (SELECT 1 FROM temp.{table} e WHERE e."{key}" IS old."{key}" AND {cond})'

        s_cols = [r[1] for r in conn.execute('PRAGMA main.table_info("sessions")')]
        m_cols = [r[1] for r in conn.execute('PRAGMA main.table_info("messages")')]
        ours = "(SELECT id FROM temp.hermes_trash_ids)"
        # The delete clears parent_session_id of children in the set before deleting them in a
        # later batch: the snapshot keeps the original link, so that column may differ (to NULL).
        parent_ok = (
            "(old.parent_session_id IS NULL OR old.parent_session_id IS "
            "(SELECT e.parent_session_id FROM temp.hermes_trash_s e WHERE e.id = old.id))"
        )
        conn.execute(
            "CREATE TEMP TRIGGER hermes_trash_guard_s BEFORE DELETE ON main.sessions "
            f"WHEN old.id IN {ours} AND ({same('hermes_trash_s', s_cols, 'id', ['parent_session_id'])} "
            f"OR NOT {parent_ok}) BEGIN {abort}; END"
        )
        conn.execute(
            "CREATE TEMP TRIGGER hermes_trash_guard_m BEFORE DELETE ON main.messages "
            f"WHEN old.session_id IN {ours} AND {same('hermes_trash_m', m_cols, 'id')} BEGIN {abort}; END"
        )
        conn.execute(
            "CREATE TEMP TRIGGER hermes_trash_guard_o BEFORE UPDATE OF parent_session_id ON main.sessions "
            f"WHEN new.parent_session_id IS NULL AND old.parent_session_id IN {ours} AND "
            f"old.id NOT IN {ours} "
            "AND NOT EXISTS (SELECT 1 FROM temp.hermes_trash_o e WHERE e.id = old.id "
            f"AND e.parent_session_id IS old.parent_session_id) BEGIN {abort}; END"
        )
        for n, (table, col) in enumerate(fks.items()):
            t = f"hermes_trash_c_{table}"
            cols = [r[1] for r in conn.execute(f'PRAGMA main.table_info("{table}")')]
            conn.execute(f'CREATE TEMP TABLE "{t}" AS SELECT * FROM main."{table}" WHERE 0')
            conn.execute(f'CREATE INDEX temp."{t}_k" ON "{t}"("{col}")')
            cond = " AND ".join(f'e."{c}" IS old."{c}"' for c in cols)
            conn.execute(
                f'CREATE TEMP TRIGGER hermes_trash_guard_c{n} BEFORE DELETE ON main."{table}" '
                f'WHEN old."{col}" IN {ours} AND NOT EXISTS (SELECT 1 FROM temp."{t}" e WHERE {cond}) '
                f"BEGIN {abort}; END"
            )

    def _guard_teardown(self, conn: apsw.Connection) -> None:
        found = list(
            conn.execute(
                "SELECT type, name FROM sqlite_temp_master WHERE type IN ('trigger', 'table') "
                "AND name LIKE 'hermes\\_trash\\_%' ESCAPE '\\' ORDER BY type = 'table'"
            )
        )
        for kind, name in found:  # triggers first, then the tables they read
            conn.execute(f'DROP {kind.upper()} IF EXISTS temp."{name}"')

    def _snapshot_into_temp(
        self, conn: apsw.Connection, wanted: Sequence[str], fks: dict[str, str]
    ) -> list[str]:
        """Copy the rows of `wanted` (those that exist) into the TEMP tables, in one read snapshot."""
        conn.execute("BEGIN")
        try:
            for i in range(0, len(wanted), 400):
                part = list(wanted[i : i + 400])
                ph = placeholders(part)
                conn.execute(
                    "INSERT OR IGNORE INTO temp.hermes_trash_ids SELECT id FROM main.sessions "
                    f"WHERE id IN ({ph})",
                    part,
                )
                conn.execute(
                    f"INSERT INTO temp.hermes_trash_s SELECT * FROM main.sessions WHERE id IN ({ph})", part
                )
                conn.execute(
                    "INSERT INTO temp.hermes_trash_m SELECT * FROM main.messages WHERE session_id IN "
                    f"({ph}) ORDER BY id",
                    part,
                )
                for table, col in fks.items():
                    conn.execute(
                        f'INSERT INTO temp."hermes_trash_c_{table}" SELECT * FROM main."{table}" WHERE '
                        f'"{col}" IN ({ph})',
                        part,
                    )
            conn.execute(
                "INSERT INTO temp.hermes_trash_o SELECT id, parent_session_id FROM main.sessions "
                "WHERE parent_session_id IN (SELECT id FROM temp.hermes_trash_ids) "
                "AND id NOT IN (SELECT id FROM temp.hermes_trash_ids)"
            )
            conn.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(apsw.Error):
                conn.execute("ROLLBACK")
            raise
        present = {r[0] for r in conn.execute("SELECT id FROM temp.hermes_trash_ids")}
        return [i for i in wanted if i in present]

    def _dump_temp(
        self, conn: apsw.Connection, path: Path, fks: dict[str, str], *, create: bool
    ) -> dict[str, int]:
        """Append the TEMP snapshot to `path` as JSONL, fsynced; returns row counts per table."""
        counts: dict[str, int] = {}
        sources = [
            ("sessions", "hermes_trash_s", None),
            ("messages", "hermes_trash_m", None),
            *((t, f"hermes_trash_c_{t}", col) for t, col in fks.items()),
            (_ORPHANS, "hermes_trash_o", None),
        ]
        flags = os.O_WRONLY | (os.O_CREAT | os.O_EXCL if create else os.O_APPEND)
        fd = os.open(path, flags, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            for table, temp, col in sources:
                n = 0
                cols = [r[1] for r in conn.execute(f'PRAGMA temp.table_info("{temp}")')]
                # TEXT is fetched as bytes: APSW cannot decode TEXT that is not UTF-8, and such a
                # value must come back as the same TEXT bytes.
                sel = ", ".join(
                    f"""typeof("{c}"), CASE typeof("{c}") WHEN 'text' THEN CAST("{c}" AS BLOB) """
                    f"""ELSE "{c}" END"""
                    for c in cols
                )
                for raw in conn.execute(f'SELECT {sel} FROM temp."{temp}"'):
                    values = [
                        _text(raw[i + 1]) if raw[i] == "text" else raw[i + 1] for i in range(0, len(raw), 2)
                    ]
                    rec: dict[str, Any] = {
                        "t": table,
                        "r": {c: encode_value(v) for c, v in zip(cols, values, strict=True)},
                    }
                    if col is not None:
                        rec["fk"] = col
                    fh.write(_line(rec))
                    n += 1
                counts[table] = n
            fh.flush()
            os.fsync(fh.fileno())
        fsync_path(path.parent)
        return counts

    # ------------------------------------------------------------ reading the trash
    def _entry_dirs(self) -> Iterator[tuple[str, Path]]:
        seen: set[str] = set()
        for root in self._trash_roots():
            with contextlib.suppress(OSError):
                for p in sorted(root.iterdir()):
                    if ENTRY_RE.match(p.name) and p.is_dir() and not p.is_symlink() and p.name not in seen:
                        seen.add(p.name)
                        yield p.name, p

    def _entry_dir(self, entry_id: str) -> Path:
        if not isinstance(entry_id, str) or not ENTRY_RE.match(entry_id):
            raise TrashEntryNotFound(f"no trash entry {entry_id!r} for {self.db_path}")
        for name, path in self._entry_dirs():
            if name == entry_id:
                return path
        raise TrashEntryNotFound(f"no trash entry {entry_id!r} for {self.db_path}")

    @staticmethod
    def _manifest(path: Path) -> dict[str, Any] | None:
        try:
            data = json.loads((path / "manifest.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) and data.get("format") == FORMAT else None

    def list_trash(self) -> list[dict[str, Any]]:
        """(+) The trash entries of this store, newest first: `id, created_at, what, status,
        sessions` (how many), `messages, bytes, titles` (the first five), `path`. An entry whose
        manifest is missing (a write cut short before anything was deleted) is listed as `incomplete`."""
        out: list[dict[str, Any]] = []
        for name, path in self._entry_dirs():
            m = self._manifest(path)
            size = _dir_bytes(path)
            if m is None:
                created: float | None = None
                with contextlib.suppress(OSError):
                    created = path.stat().st_mtime
                out.append(
                    {
                        "id": name,
                        "created_at": created,
                        "what": None,
                        "status": "incomplete",
                        "sessions": 0,
                        "messages": 0,
                        "bytes": size,
                        "titles": [],
                        "path": str(path),
                    }
                )
                continue
            deleted = m.get("deleted_ids")
            sessions = m.get("sessions") or []
            n = len(deleted) if isinstance(deleted, list) else len(sessions)
            status = m.get("status")
            out.append(
                {
                    "id": name,
                    "created_at": m.get("created_at"),
                    "what": m.get("what"),
                    "status": "interrupted" if status == "pending" else status,
                    "sessions": n,
                    "messages": (m.get("counts") or {}).get("messages", 0),
                    "bytes": size,
                    "titles": [s.get("title") for s in sessions[:5]],
                    "path": str(path),
                    "restored_at": m.get("restored_at"),
                }
            )
        out.sort(key=lambda e: (e["created_at"] or 0, e["id"]), reverse=True)
        return out

    def trash_entry(self, entry_id: str) -> dict[str, Any]:
        """(+) One entry's manifest (every session id and title, counts, status) and `path`."""
        path = self._entry_dir(entry_id)
        m = self._manifest(path)
        if m is None:
            raise TrashError(
                f"trash entry {entry_id} is incomplete (no manifest): nothing was deleted with it"
            )
        if m.get("status") == "pending":
            m = {**m, "status": "interrupted"}
        return {**m, "path": str(path), "bytes": _dir_bytes(path)}

    # ------------------------------------------------------------ restore
    def restore_trash(self, entry_id: str) -> dict[str, Any]:
        """(+) Bring back what the entry's delete removed, identical rows, in short batches.

        Per session: `restored`, or `conflict` with a reason (its id exists again, one of its
        message ids is taken) and nothing of it written; a title now held by another session is
        restored cleared (`notes` says so); a parent that is gone leaves it a root. Orphaned
        children get their parent back only if they still have none. Never overwrites live data.
        The entry is kept and marked `restored` (or `partly-restored`).
        """
        self._require_writable()
        path = self._entry_dir(entry_id)
        m = self._manifest(path)
        if m is None:
            raise TrashError(
                f"trash entry {entry_id} is incomplete (no manifest): nothing was deleted with it"
            )
        fks = {str(k): str(v) for k, v in (m.get("cascade_tables") or {}).items()}
        snap = read_rows(path / "rows.jsonl", fks)
        deleted = m.get("deleted_ids")
        interrupted = not isinstance(deleted, list)
        candidates = [s["id"] for s in m.get("sessions") or [] if s["id"] in snap.sessions]
        if isinstance(deleted, list):  # i.e. not interrupted
            keep = set(deleted)
            candidates = [c for c in candidates if c in keep]
        results: dict[str, dict[str, Any]] = {}
        present = set(candidates) - self._absent(self._conn(), candidates)
        prior = set(m.get("restored_ids") or [])
        conn = self._conn()
        todo = []
        for sid in candidates:
            if sid in present and (sid in prior or self._is_restored_copy(conn, sid, snap)):
                # This entry's rows (a restore killed before it marked the entry): not a conflict.
                results[sid] = {"id": sid, "status": "present", "reason": "already restored from this entry"}
            elif sid in present and interrupted:
                # The interrupted delete had not reached it: it was never deleted.
                results[sid] = {
                    "id": sid,
                    "status": "present",
                    "reason": "never deleted (the delete was interrupted)",
                }
            elif sid in present:
                results[sid] = {
                    "id": sid,
                    "status": "conflict",
                    "reason": "a session with this id exists again",
                }
            else:
                todo.append(sid)
        todo = _parents_first(todo, snap.sessions)
        # Sessions of the entry that were not deleted (reopened before their batch, or never
        # reached) lost their link to a deleted parent like any orphan: relink them too.
        never = set(snap.sessions) - set(deleted or []) if not interrupted else present
        for sid in never:
            parent = snap.sessions[sid].get("parent_session_id")
            if parent is not None and sid not in snap.orphans:
                snap.orphans[sid] = {"id": sid, "parent_session_id": parent}
        batches: list[list[str]] = []
        cur: list[str] = []
        weight = 0
        for sid in todo:
            w = len(snap.messages.get(sid, ()))
            if cur and (weight + w > RESTORE_BATCH_MESSAGES or len(cur) >= RESTORE_BATCH_SESSIONS):
                batches.append(cur)
                cur, weight = [], 0
            cur.append(sid)
            weight += w
        if cur:
            batches.append(cur)
        orphan_notes: list[dict[str, Any]] = []
        token = secrets.token_hex(8)
        for n, batch in enumerate(batches):
            t0 = time.monotonic()
            restore = partial(
                self._restore_batch, batch=batch, snap=snap, fks=fks, orphan_notes=orphan_notes, token=token
            )
            got = self._execute_write(restore)
            results.update(got)
            self._step("restore-batch")
            if n < len(batches) - 1:
                time.sleep(min(RESTORE_YIELD_MAX_S, max(RESTORE_YIELD_MIN_S, time.monotonic() - t0)))
        ordered = [results[s] for s in candidates if s in results]
        restored = [r["id"] for r in ordered if r["status"] == "restored"]
        conflicts = [r for r in ordered if r["status"] == "conflict"]
        m["restored_ids"] = list(dict.fromkeys([*(m.get("restored_ids") or []), *restored]))
        m["status"] = "restored" if not conflicts else "partly-restored"
        m["restored_at"] = time.time()
        m["restore_results"] = ordered
        _replace_private(path / "manifest.json", json.dumps(m, indent=1))
        self._step("restore-marked")
        back = [mm for s in restored for mm in snap.messages.get(s, ())]
        self._side_reindex([mm["id"] for mm in back])
        raise_bounds = getattr(self, "_block_max_restored", None)  # SearchMixin's, like `_side`
        if back and raise_bounds is not None:
            raise_bounds([(mm["id"], mm.get("timestamp")) for mm in back], token)
        return {
            "entry": entry_id,
            "restored": len(restored),
            "conflicts": len(conflicts),
            "messages": sum(len(snap.messages.get(s, ())) for s in restored),
            "sessions": ordered,
            "orphans": orphan_notes,
            "status": m["status"],
        }

    def _side_reindex(self, message_ids: list[int]) -> None:
        """Put restored messages into the CJK side index, when this store has one.

        They come back under their old ids, below the side index's high-water mark, so its
        incremental sync would never see them and 1–2 character CJK searches would miss them.
        The side file is a cache outside the store: a failure here leaves the restore done
        (the next `forget`/rebuild of that file is the fallback), so it is not raised.
        """
        side = getattr(self, "_side", None)
        if not message_ids or side is None:
            return
        index = side()
        if index.path.exists():
            with contextlib.suppress(apsw.Error, OSError):
                index.reindex(message_ids, self._conn())

    @staticmethod
    def _is_restored_copy(conn: apsw.Connection, sid: str, snap: _Snapshot) -> bool:
        """Is the live session `sid` this entry's own rows (same start time, same message ids)?"""
        row = conn.execute("SELECT started_at FROM sessions WHERE id = ?", (sid,)).fetchall()
        if not row or row[0][0] != snap.sessions[sid].get("started_at"):
            return False
        live = [
            r[0] for r in conn.execute("SELECT id FROM messages WHERE session_id = ? ORDER BY id", (sid,))
        ]
        return live == sorted(mm["id"] for mm in snap.messages.get(sid, []))

    def _restore_batch(
        self,
        conn: apsw.Connection,
        batch: Sequence[str],
        snap: _Snapshot,
        fks: dict[str, str],
        orphan_notes: list[dict[str, Any]],
        token: str,
    ) -> dict[str, dict[str, Any]]:
        """One transaction of a restore. It sets `MESSAGES_RESTORED_KEY` to `token`: every
        process's newest-first bounds then know that rows came back under old ids."""
        out: dict[str, dict[str, Any]] = {}
        s_cols = self._live_columns(conn, "sessions")
        m_cols = self._live_columns(conn, "messages")
        for sid in batch:
            row = dict(snap.sessions[sid])
            msgs = snap.messages.get(sid, [])
            notes: list[str] = []
            if conn.execute("SELECT 1 FROM sessions WHERE id = ?", (sid,)).fetchall():
                out[sid] = {"id": sid, "status": "conflict", "reason": "a session with this id exists again"}
                continue
            mids = [mm["id"] for mm in msgs]
            taken: list[int] = []
            for i in range(0, len(mids), 400):
                part = mids[i : i + 400]
                taken += [
                    r[0]
                    for r in conn.execute(f"SELECT id FROM messages WHERE id IN ({placeholders(part)})", part)
                ]
            if taken:
                out[sid] = {
                    "id": sid,
                    "status": "conflict",
                    "reason": f"message id {min(taken)} is taken by another session"
                    + (f" (and {len(taken) - 1} more)" if len(taken) > 1 else ""),
                }
                continue
            title = row.get("title")
            if title is not None:
                holder = conn.execute("SELECT id FROM sessions WHERE title = ? LIMIT 1", (title,)).fetchall()
                if holder:
                    row["title"] = None
                    notes.append(f"title now held by session {holder[0][0]}: restored without a title")
            parent = row.get("parent_session_id")
            if (
                parent is not None
                and not conn.execute("SELECT 1 FROM sessions WHERE id = ?", (parent,)).fetchall()
            ):
                row["parent_session_id"] = None
                notes.append(f"parent session {parent} is gone: restored as a root")
            conn.execute("SAVEPOINT hermes_trash_restore")
            try:
                _insert(conn, "sessions", row, s_cols)
                for mm in msgs:
                    _insert(conn, "messages", mm, m_cols)
                for table in fks:
                    cols = self._live_columns(conn, table)
                    for r in snap.children.get(table, {}).get(sid, []) if cols else ():
                        _insert(conn, table, r, cols)
            except apsw.ConstraintError as exc:
                conn.execute("ROLLBACK TO hermes_trash_restore")
                conn.execute("RELEASE hermes_trash_restore")
                out[sid] = {"id": sid, "status": "conflict", "reason": f"constraint: {exc}"}
                continue
            conn.execute("RELEASE hermes_trash_restore")
            for child in [o for o in snap.orphans.values() if o["parent_session_id"] == sid]:
                conn.execute(
                    "UPDATE sessions SET parent_session_id = ? WHERE id = ? AND parent_session_id IS NULL",
                    (sid, child["id"]),
                )
                if conn.changes():
                    orphan_notes.append({"id": child["id"], "parent_session_id": sid, "status": "relinked"})
                else:
                    orphan_notes.append(
                        {
                            "id": child["id"],
                            "parent_session_id": sid,
                            "status": "kept",
                            "reason": "gone or has another parent now",
                        }
                    )
            out[sid] = {"id": sid, "status": "restored", "messages": len(msgs), "notes": notes}
        if any(r["status"] == "restored" and r["messages"] for r in out.values()) and self._live_columns(
            conn, "state_meta"
        ):
            conn.execute(
                "INSERT INTO state_meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = "
                "excluded.value",
                (MESSAGES_RESTORED_KEY, token),
            )
        return out

    def _live_columns(self, conn: apsw.Connection, table: str) -> list[str]:
        return [r[1] for r in conn.execute(f'PRAGMA main.table_info("{table}")')]

    # ------------------------------------------------------------ emptying
    def empty_trash(
        self, older_than_s: float | None = None, *, entry_id: str | None = None
    ) -> dict[str, Any]:
        """(+) Remove entries for good: all, those older than `older_than_s`, or one `entry_id`.
        Returns `{"removed": [ids], "bytes": freed}`."""
        now = time.time()
        removed: list[str] = []
        freed = 0
        for e in self.list_trash():
            if entry_id is not None and e["id"] != entry_id:
                continue
            if older_than_s is not None and now - (e["created_at"] or now) < older_than_s:
                continue
            freed += e["bytes"]
            self._remove_entry(Path(e["path"]))
            removed.append(e["id"])
        if entry_id is not None and not removed:
            raise TrashEntryNotFound(f"no trash entry {entry_id!r} for {self.db_path}")
        return {"removed": removed, "bytes": freed}

    def apply_trash_retention(self, keep: str | None = None) -> dict[str, Any]:
        """(+) Drop entries older than `trash_retention_s`, then the oldest while the trash holds
        more than `trash_max_bytes` (never `keep`, the entry just written)."""
        now = time.time()
        entries = self.list_trash()
        removed: list[str] = []
        freed = 0
        total = sum(e["bytes"] for e in entries)
        for e in sorted(entries, key=lambda x: (x["created_at"] or 0, x["id"])):
            if e["id"] == keep:
                continue
            old = now - (e["created_at"] or now) > self.trash_retention_s
            if old or total > self.trash_max_bytes:
                self._remove_entry(Path(e["path"]))
                removed.append(e["id"])
                freed += e["bytes"]
                total -= e["bytes"]
        return {"removed": removed, "bytes": freed}

    @staticmethod
    def _remove_entry(path: Path) -> None:
        """Manifest first (the entry is then `incomplete`, never half a restorable entry)."""
        with contextlib.suppress(FileNotFoundError):
            (path / "manifest.json").unlink()
        shutil.rmtree(path, ignore_errors=True)
        with contextlib.suppress(OSError):
            fsync_path(path.parent)


def _text(raw: bytes) -> str | RawText:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return RawText(raw)


def _insert(conn: apsw.Connection, table: str, row: dict[str, Any], live: Sequence[str]) -> None:
    cols = [c for c in row if c in live]
    names = ", ".join(f'"{c}"' for c in cols)
    marks = ", ".join("CAST(? AS TEXT)" if isinstance(row[c], RawText) else "?" for c in cols)
    values = [bytes(row[c]) if isinstance(row[c], RawText) else row[c] for c in cols]
    conn.execute(f'INSERT INTO main."{table}" ({names}) VALUES ({marks})', values)


def _parents_first(ids: list[str], rows: dict[str, dict[str, Any]]) -> list[str]:
    """`ids` ordered so a session comes after its parent when both are restored (FK order)."""
    inside = set(ids)
    out: list[str] = []
    done: set[str] = set()
    for start in ids:
        chain: list[str] = []  # start, its parent, … up to one already placed or outside (no recursion)
        sid: Any = start
        while sid in inside and sid not in done and sid not in chain:
            chain.append(sid)
            sid = rows[sid].get("parent_session_id")
        for s in reversed(chain):
            done.add(s)
            out.append(s)
    return out
