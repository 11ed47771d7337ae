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
`{"$float": "inf"}`. A parent link the delete removes (an orphan's, an entry session's own)
carries `"k"`, its tag under this user's link key (`trash_files`).

The files are untrusted input when read back: `trash_manifest` checks them whole before a
restore writes anything (schema, live table and column names, storable values), `trash_list`
lists a bad entry as `damaged` with its reason, and folders are opened without following links.

Restore inserts identical rows (message ids explicit, so FTS triggers index them again under
their old rowids) in short batches with a savepoint per session. Rowids that differ after a
restore, by design: `sessions` and `session_model_usage` have implicit rowids (TEXT or
composite primary keys), which reinsertion renumbers; messages keep theirs (`id`).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import secrets
import threading
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import apsw

from . import trash_list
from .core import MESSAGES_RESTORED_KEY, _Core, live_columns, placeholders
from .errors import DiskFullError, StoreError
from .housekeeping import unreferenced_prompt_sql
from .trash_files import (
    TRASH_DIR_NAME,
    TrashDir,
    UnsafeFile,
    beside_root,
    fallback_root,
    link_key,
    link_tag,
    new_entry_id,
    tag_ok,
)
from .trash_list import TRASH_MAX_BYTES, TRASH_RETENTION_S, Places, cascade_tables, writable_root
from .trash_manifest import (
    FORMAT,
    ORPHANS,
    PROMPTS,
    DamagedEntry,
    RawText,
    Snapshot,
    TrashEntryNotFound,
    TrashError,
    decode_value,
    encode_value,
    ident,
    line,
    read_rows,
)

__all__ = [
    "FORMAT",
    "TRASH_DIR_NAME",
    "TRASH_MAX_BYTES",
    "TRASH_RETENTION_S",
    "DamagedEntry",
    "RawText",
    "TrashEntryNotFound",
    "TrashError",
    "TrashMixin",
    "beside_root",
    "decode_value",
    "encode_value",
    "fallback_root",
]

RESTORE_BATCH_MESSAGES = 250  # messages per restore transaction (like the delete's batches)
RESTORE_BATCH_SESSIONS = 50
# After each restore batch the lock stays free as long as the batch held it, within these bounds:
# a waiting writer's busy handler polls every 1-4 ms, so 25 ms lets it in, and an undo of 20k
# messages is not doubled (FTS triggers make a restore batch ~3x as long as a delete batch).
RESTORE_YIELD_MIN_S = 0.005
RESTORE_YIELD_MAX_S = 0.025
GUARD_RETRIES = 8  # re-snapshots of sessions that changed under a running delete
GUARD_MARK = "hermes-tui-trash: rows changed since the snapshot"
#: A parent link the restore does not put back: the entry holds no valid tag for it.
UNPROVEN = "not restored: this entry does not prove that its delete removed this link"


def _text(raw: bytes) -> str | RawText:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return RawText(raw)


class TrashMixin(_Core):
    """(+) `trash_sessions`, `trash_report`, `list_trash`, `trash_entry`, `restore_trash`,
    `empty_trash`, `apply_trash_retention` (reading and emptying: `trash_list`)."""

    #: Retention applied when a new entry is written and by `apply_trash_retention()`.
    trash_retention_s: float = TRASH_RETENTION_S
    trash_max_bytes: int = TRASH_MAX_BYTES
    #: Force the trash folder (tests, or a user setting); None: beside the store, else data dir.
    trash_root: Path | None = None

    #: Test hook: called with a step name at each durable step of delete and restore.
    _trash_step_hook: Callable[[str], None] | None = None

    def _step(self, name: str) -> None:
        hook = self._trash_step_hook
        if hook is not None:
            hook(name)

    # ------------------------------------------------------------ places and tables
    def _cascade_tables(self) -> dict[str, str]:
        """Tables whose rows go with a session (`ON DELETE CASCADE` to sessions.id): table -> column."""
        return cascade_tables(self._conn(), list(self._columns))

    def _places(self) -> Places:
        return Places(self.db_path, self.trash_root, self._cascade_tables())

    def _live_columns(self, conn: apsw.Connection, table: str) -> list[str]:
        return [r[1] for r in conn.execute(f"PRAGMA main.table_info({ident(table)})")]

    def _columns_now(self) -> Callable[[str], frozenset[str]]:
        """Each table's live columns (read when first asked: another program may have added one
        since this store was opened)."""
        conn = self._conn()
        seen: dict[str, frozenset[str]] = {}

        def columns(table: str) -> frozenset[str]:
            if table not in seen:
                seen[table] = frozenset(self._live_columns(conn, table))
            return seen[table]

        return columns

    # ------------------------------------------------------------ reading and emptying
    def trash_report(self) -> dict[str, Any]:
        """(+) `{"entries": list_trash(), "skipped": [...]}`: `skipped` says what was not used
        and why, one `{"id", "path", "reason"}` per damaged entry and per trash folder refused
        (a link, another user's: `id` None). Never raises for what a trash file holds."""
        return trash_list.report(self._places())

    def list_trash(self) -> list[dict[str, Any]]:
        """(+) The trash entries of this store, newest first: `id, created_at, what, status,
        sessions` (how many), `messages, bytes, titles` (the first five), `path`. An entry whose
        manifest is missing (a write cut short before anything was deleted) is `incomplete`; one
        whose files are not what hermes-tui writes is `damaged`, with a `reason`."""
        return self.trash_report()["entries"]

    def trash_entry(self, entry_id: str) -> dict[str, Any]:
        """(+) One entry's manifest (every session id and title, counts, status) and `path`;
        `TrashError` when it is incomplete or damaged (the message says why)."""
        with trash_list.find(self._places(), entry_id) as (root, m):
            if m is None:
                raise TrashError(
                    f"trash entry {entry_id} is incomplete (no manifest): nothing was deleted with it"
                )
            if m["status"] == "pending":
                m = {**m, "status": "interrupted"}
            entry = root.sub(entry_id)
            assert entry is not None
            with entry:
                return {**m, "path": str(root.path / entry_id), "bytes": entry.size()}

    def empty_trash(
        self, older_than_s: float | None = None, *, entry_id: str | None = None
    ) -> dict[str, Any]:
        """(+) Remove entries for good (damaged ones too): all, those older than `older_than_s`,
        or one `entry_id`. Returns `{"removed": [ids], "bytes": freed, "skipped": [...]}`
        (`skipped` as in `trash_report`: folders not read, entries that could not be removed)."""
        return trash_list.empty(self._places(), older_than_s, entry_id)

    def apply_trash_retention(self, keep: str | None = None) -> dict[str, Any]:
        """(+) Drop entries older than `trash_retention_s`, then the oldest while the trash holds
        more than `trash_max_bytes` (never `keep`, the entry just written). Same result as
        `empty_trash`."""
        return trash_list.retention(self._places(), keep, self.trash_retention_s, self.trash_max_bytes)

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
        exclude_active_write_guards: bool = False,
    ) -> dict[str, Any]:
        """(+) Write a trash entry of `session_ids` (and, with `cascade_delegates`, their delegate
        children), fsync it, then delete them with `delete_sessions_batched` (which, with
        `exclude_active_write_guards`, keeps the sessions an agent is working in: `guarded_ids`).

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
            "guarded_ids": [],
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
            root = writable_root(Places(self.db_path, self.trash_root, fks)) if ids else None
        except BaseException:
            self._guard_teardown(conn)
            raise
        if root is None:
            self._guard_teardown(conn)
            return empty
        with root:
            try:
                entry_id, entry, manifest, sign = self._write_entry(root, conn, ids, wanted, fks, what)
                try:
                    self._step("entry-written")
                    result = self._guarded_delete(
                        conn,
                        ids,
                        (entry, sign),
                        fks,
                        require_ended,
                        progress,
                        cancel,
                        batch_messages,
                        exclude_active_write_guards,
                    )
                    if not result["deleted_ids"]:
                        # Cancelled before the first batch, or every session was reopened: nothing
                        # to restore.
                        root.remove(entry_id)
                        return {**result, "trash_entry": None, "trash_path": None}
                    manifest["deleted_ids"] = result["deleted_ids"]
                    manifest["status"] = "deleted"
                    manifest["bytes"] = _file_size(entry, "rows.jsonl")
                    manifest["completed_at"] = time.time()
                    # Rows are gone now: a full disk here leaves the entry `interrupted`, which
                    # restores what went, and the caller still learns its id.
                    with contextlib.suppress(OSError):
                        entry.replace("manifest.json", _manifest_text(manifest))
                finally:
                    entry.close()
            finally:
                self._guard_teardown(conn)
            self._step("entry-completed")
            retention = self._retention_after_write(entry_id)
        return {
            **result,
            "trash_entry": entry_id,
            "trash_path": str(root.path / entry_id),
            "retention": retention,
        }

    def _write_entry(
        self,
        root: TrashDir,
        conn: apsw.Connection,
        ids: list[str],
        wanted: list[str],
        fks: dict[str, str],
        what: str,
    ) -> tuple[str, TrashDir, dict[str, Any], Signer]:
        """The entry of `ids` (rows, then the manifest), fsynced before anything is deleted. A
        write that fails (a full disk) removes what it wrote: a half entry holds message text,
        and nothing was deleted with it."""
        now = time.time()
        entry_id = new_entry_id(now)
        entry: TrashDir | None = None
        made = False
        try:
            root.mkdir(entry_id)
            made = True
            entry = root.sub(entry_id)
            assert entry is not None
            key = link_key(create=True)
            sign = None if key is None else partial(link_tag, key, entry_id)
            counts = self._dump_temp(conn, entry, fks, create=True, sign=sign)
            titles = dict(self._tuples("SELECT id, title FROM temp.hermes_trash_s"))  # non-UTF-8 safe
            manifest: dict[str, Any] = {
                "format": FORMAT,
                "id": entry_id,
                "created_at": now,
                "what": what,
                "store": str(self.db_path.resolve()),
                "store_name": self.db_path.name,
                "status": "pending",
                "sessions": [{"id": i, "title": _title(titles.get(i))} for i in ids],
                "counts": counts,
                "bytes": _file_size(entry, "rows.jsonl"),
                "cascade_tables": fks,
                "requested_ids": wanted,
                "deleted_ids": None,
            }
            entry.write_new("manifest.json", _manifest_text(manifest))
            entry.fsync()
            root.fsync()
        except BaseException as exc:
            if entry is not None:
                entry.close()
            if made:
                with contextlib.suppress(OSError):
                    root.remove(entry_id)
            if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
                raise DiskFullError(
                    f"the disk is full: the trash entry could not be written at {root.path} "
                    "(its partial files were removed); nothing was deleted"
                ) from exc
            raise
        return entry_id, entry, manifest, sign

    def _retention_after_write(self, keep: str) -> dict[str, Any]:
        """Retention after a delete that is done: a failure here must not hide the new entry."""
        try:
            return self.apply_trash_retention(keep=keep)
        except (OSError, StoreError) as exc:
            return {"removed": [], "bytes": 0, "skipped": [{"id": None, "path": None, "reason": str(exc)}]}

    def _guarded_delete(
        self,
        conn: apsw.Connection,
        ids: list[str],
        out: tuple[TrashDir, Signer],
        fks: dict[str, str],
        require_ended: bool,
        progress: Callable[[int, int], None] | None,
        cancel: threading.Event | None,
        batch_messages: int | None = None,
        exclude_active_write_guards: bool = False,
    ) -> dict[str, Any]:
        """Delete `ids` in batches; a batch the guard aborts is re-snapshotted and retried."""
        sizing: dict[str, Any] = {} if batch_messages is None else {"batch_messages": batch_messages}
        deleted: list[str] = []
        busy: list[str] = []
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
                    exclude_active_write_guards=exclude_active_write_guards,
                    **sizing,
                )
            except StoreError as exc:
                if GUARD_MARK not in str(exc) or attempt == GUARD_RETRIES:
                    raise
                gone = self._absent(conn, todo)
                deleted += [i for i in todo if i in gone]
                todo = [i for i in todo if i not in gone]
                self._resnapshot(conn, todo, out, fks)
                continue
            deleted += res["deleted_ids"]
            busy += res["guarded_ids"]
            batches += res["batches"]
            longest = max(longest, res["longest_batch_s"])
            cancelled = res["cancelled"]
            break
        deleted_set = set(deleted)
        return {
            "requested": len(ids),
            "deleted": len(deleted),
            "deleted_ids": [i for i in ids if i in deleted_set],
            "guarded_ids": busy,
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
        self, conn: apsw.Connection, ids: list[str], out: tuple[TrashDir, Signer], fks: dict[str, str]
    ) -> None:
        """Sessions that changed under the delete: forget their old rows, snapshot them again."""
        conn.execute("DELETE FROM temp.hermes_trash_ids")
        for t in (
            "hermes_trash_s",
            "hermes_trash_m",
            "hermes_trash_o",
            *(["hermes_trash_p"] if self._has_prompt_snapshot(conn) else []),
            *(f"hermes_trash_c_{n}" for n in fks),
        ):
            conn.execute(f"DELETE FROM temp.{t}")
        self._snapshot_into_temp(conn, ids, fks)
        entry, sign = out
        with os.fdopen(entry.create("rows.jsonl", append=True), "w", encoding="utf-8") as fh:
            fh.write(line({"t": "reset", "ids": ids}))
            fh.flush()
            os.fsync(fh.fileno())
        self._dump_temp(conn, entry, fks, create=False, sign=sign)
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
            cond = " AND ".join(f"e.{ident(c)} IS old.{ident(c)}" for c in cols if c not in skip)
            k = ident(key)
            return f"NOT EXISTS (SELECT 1 FROM temp.{table} e WHERE e.{k} IS old.{k} AND {cond})"

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
        prompt_cols = self._live_columns(conn, PROMPTS)
        if prompt_cols:
            # The prompts the delete may remove (see `_snapshot_into_temp`): removing any other
            # (one a writer added, unreferenced, since the snapshot) aborts the batch.
            conn.execute(f"CREATE TEMP TABLE hermes_trash_p AS SELECT * FROM main.{PROMPTS} WHERE 0")
            cond = " AND ".join(f"e.{ident(c)} IS old.{ident(c)}" for c in prompt_cols)
            conn.execute(
                f"CREATE TEMP TRIGGER hermes_trash_guard_p BEFORE DELETE ON main.{PROMPTS} "
                f"WHEN NOT EXISTS (SELECT 1 FROM temp.hermes_trash_p e WHERE {cond}) BEGIN {abort}; END"
            )
        for n, (table, col) in enumerate(fks.items()):
            t = f"hermes_trash_c_{table}"
            cols = self._live_columns(conn, table)
            conn.execute(f"CREATE TEMP TABLE {ident(t)} AS SELECT * FROM main.{ident(table)} WHERE 0")
            conn.execute(f"CREATE INDEX temp.{ident(t + '_k')} ON {ident(t)}({ident(col)})")
            cond = " AND ".join(f"e.{ident(c)} IS old.{ident(c)}" for c in cols)
            conn.execute(
                f"CREATE TEMP TRIGGER hermes_trash_guard_c{n} BEFORE DELETE ON main.{ident(table)} "
                f"WHEN old.{ident(col)} IN {ours} AND NOT EXISTS "
                f"(SELECT 1 FROM temp.{ident(t)} e WHERE {cond}) "
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
            conn.execute(f"DROP {kind.upper()} IF EXISTS temp.{ident(name)}")

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
                        f"INSERT INTO temp.{ident('hermes_trash_c_' + table)} "
                        f"SELECT * FROM main.{ident(table)} WHERE {ident(col)} IN ({ph})",
                        part,
                    )
            conn.execute(
                "INSERT INTO temp.hermes_trash_o SELECT id, parent_session_id FROM main.sessions "
                "WHERE parent_session_id IN (SELECT id FROM temp.hermes_trash_ids) "
                "AND id NOT IN (SELECT id FROM temp.hermes_trash_ids)"
            )
            self._snapshot_prompts(conn)
            conn.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(apsw.Error):
                conn.execute("ROLLBACK")
            raise
        present = {r[0] for r in conn.execute("SELECT id FROM temp.hermes_trash_ids")}
        return [i for i in wanted if i in present]

    @staticmethod
    def _has_prompt_snapshot(conn: apsw.Connection) -> bool:
        return bool(conn.execute("SELECT 1 FROM sqlite_temp_master WHERE name = 'hermes_trash_p'").fetchall())

    def _snapshot_prompts(self, conn: apsw.Connection) -> None:
        """Copy the `system_prompts` rows the delete of the snapshotted sessions may remove: those
        they reference (kept even when another session still does, so a restore never lacks the
        text), and those no other session references (the delete's cleanup takes every
        unreferenced prompt, as the v31 writer's does)."""
        if not self._has_prompt_snapshot(conn):
            return
        refs = [c for c in ("system_prompt_hash", "tool_names") if c in live_columns(conn, "sessions")]
        if not refs:
            return
        mine = " OR ".join(f"system_prompts.hash IN (SELECT {c} FROM temp.hermes_trash_s)" for c in refs)
        alone = unreferenced_prompt_sql(refs, "sessions.id NOT IN (SELECT id FROM temp.hermes_trash_ids)")
        conn.execute(
            f"INSERT INTO temp.hermes_trash_p SELECT * FROM main.{PROMPTS} WHERE ({mine}) OR ({alone})"
        )

    def _dump_temp(
        self, conn: apsw.Connection, entry: TrashDir, fks: dict[str, str], *, create: bool, sign: Signer
    ) -> dict[str, int]:
        """Append the TEMP snapshot to the entry's `rows.jsonl`, fsynced; returns row counts per
        table. Each parent link the delete may remove (an orphan's, an entry session's own) gets
        its tag (`k`) when this user has a link key."""
        counts: dict[str, int] = {}
        sources = [
            ("sessions", "hermes_trash_s", None),
            ("messages", "hermes_trash_m", None),
            *((t, f"hermes_trash_c_{t}", col) for t, col in fks.items()),
            (ORPHANS, "hermes_trash_o", None),
            *([(PROMPTS, "hermes_trash_p", None)] if self._has_prompt_snapshot(conn) else []),
        ]
        with os.fdopen(entry.create("rows.jsonl", append=not create), "w", encoding="utf-8") as fh:
            for table, temp, col in sources:
                n = 0
                cols = [r[1] for r in conn.execute(f"PRAGMA temp.table_info({ident(temp)})")]
                # TEXT is fetched as bytes: APSW cannot decode TEXT that is not UTF-8, and such a
                # value must come back as the same TEXT bytes.
                sel = ", ".join(
                    f"typeof({ident(c)}), CASE typeof({ident(c)}) WHEN 'text' THEN CAST({ident(c)} AS BLOB) "
                    f"ELSE {ident(c)} END"
                    for c in cols
                )
                for raw in conn.execute(f"SELECT {sel} FROM temp.{ident(temp)}"):
                    values = [
                        _text(raw[i + 1]) if raw[i] == "text" else raw[i + 1] for i in range(0, len(raw), 2)
                    ]
                    row = {c: encode_value(v) for c, v in zip(cols, values, strict=True)}
                    rec: dict[str, Any] = {"t": table, "r": row}
                    if col is not None:
                        rec["fk"] = col
                    if (
                        sign is not None
                        and table in ("sessions", ORPHANS)
                        and row["parent_session_id"] is not None
                    ):
                        rec["k"] = sign(row["id"], row["parent_session_id"])
                    fh.write(line(rec))
                    n += 1
                counts[table] = n
            fh.flush()
            os.fsync(fh.fileno())
        entry.fsync()
        return counts

    # ------------------------------------------------------------ restore
    def restore_trash(self, entry_id: str) -> dict[str, Any]:
        """(+) Bring back what the entry's delete removed, identical rows, in short batches.

        Per session: `restored`, or `conflict` with a reason (its id exists again, one of its
        message ids is taken) and nothing of it written; a title now held by another session is
        restored cleared (`notes` says so); a parent that is gone leaves it a root. Orphaned
        children get their parent back only if they still have none. Never overwrites live data.
        The entry is kept and marked `restored` (or `partly-restored`).

        The entry's files are checked whole before the first write: a damaged entry raises
        `DamagedEntry` (a `TrashError`) with the reason and writes nothing. Table and column
        names are the live database's; a parent link is put back only when the entry proves
        (by its tag) that its own delete removed it; `orphans` lists the others as `kept`.
        """
        self._require_writable()
        with trash_list.find(self._places(), entry_id) as (root, loaded):
            if loaded is None:
                raise TrashError(
                    f"trash entry {entry_id} is incomplete (no manifest): nothing was deleted with it"
                )
            entry = root.sub(entry_id)
            assert entry is not None
            with entry:
                m = loaded
                snap = self._read_snapshot(entry, entry_id, m)
                return self._restore(entry, entry_id, m, snap)

    def _read_snapshot(self, entry: TrashDir, entry_id: str, m: dict[str, Any]) -> Snapshot:
        """The entry's rows, checked whole (`read_rows`) before anything is written."""
        key = link_key(create=False)
        try:
            fd = entry.open_regular("rows.jsonl")
        except (OSError, UnsafeFile) as exc:
            raise DamagedEntry(
                f"trash entry {entry_id} is damaged: rows.jsonl cannot be read: {exc}"
            ) from None
        try:
            with os.fdopen(fd, encoding="utf-8", newline="\n") as fh:
                ids = frozenset(s["id"] for s in m["sessions"])
                proven = partial(tag_ok, key, entry_id)
                return read_rows(fh, m["cascade_tables"], self._columns_now(), proven, ids)
        except UnicodeDecodeError:
            raise DamagedEntry(f"trash entry {entry_id} is damaged: rows.jsonl is not UTF-8 text") from None
        except DamagedEntry as exc:
            raise DamagedEntry(f"trash entry {entry_id} is damaged: {exc.reason}") from None

    def _restore(self, entry: TrashDir, entry_id: str, m: dict[str, Any], snap: Snapshot) -> dict[str, Any]:
        fks: dict[str, str] = m["cascade_tables"]
        deleted = m["deleted_ids"]
        interrupted = not isinstance(deleted, list)
        candidates = [s["id"] for s in m["sessions"] if s["id"] in snap.sessions]
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
                link = {"id": sid, "parent_session_id": parent}
                if sid in snap.linked:
                    snap.orphans[sid] = link
                else:
                    snap.unproven.setdefault(sid, link)
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
        used = {r.get(c) for r in snap.sessions.values() for c in _PROMPT_REFS}
        loose = [h for h in snap.prompts if h not in used]  # unreferenced when the delete ran
        for n, batch in enumerate(batches):
            t0 = time.monotonic()
            restore = partial(
                self._restore_batch,
                batch=batch,
                snap=snap,
                fks=fks,
                orphan_notes=orphan_notes,
                token=token,
                loose=loose if n == 0 else [],
            )
            got = self._execute_write(restore)
            results.update(got)
            self._step("restore-batch")
            if n < len(batches) - 1:
                time.sleep(min(RESTORE_YIELD_MAX_S, max(RESTORE_YIELD_MIN_S, time.monotonic() - t0)))
        ordered = [results[s] for s in candidates if s in results]
        restored = [r["id"] for r in ordered if r["status"] == "restored"]
        conflicts = [r for r in ordered if r["status"] == "conflict"]
        back_now = set(restored)
        orphan_notes += [
            {**link, "status": "kept", "reason": UNPROVEN}
            for link in snap.unproven.values()
            if link["parent_session_id"] in back_now and link["id"] not in snap.orphans
        ]
        m["restored_ids"] = list(dict.fromkeys([*(m.get("restored_ids") or []), *restored]))
        m["status"] = "restored" if not conflicts else "partly-restored"
        m["restored_at"] = time.time()
        m["restore_results"] = ordered
        entry.replace("manifest.json", _manifest_text(m))
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
    def _is_restored_copy(conn: apsw.Connection, sid: str, snap: Snapshot) -> bool:
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
        snap: Snapshot,
        fks: dict[str, str],
        orphan_notes: list[dict[str, Any]],
        token: str,
        loose: Sequence[str] = (),
    ) -> dict[str, dict[str, Any]]:
        """One transaction of a restore. It sets `MESSAGES_RESTORED_KEY` to `token`: every
        process's newest-first bounds then know that rows came back under old ids. The
        `system_prompts` rows a session references come back with it (unless that prompt exists
        again), `loose` ones (unreferenced when the delete took them) with the first batch."""
        out: dict[str, dict[str, Any]] = {}
        s_cols = self._live_columns(conn, "sessions")
        m_cols = self._live_columns(conn, "messages")
        p_cols = self._live_columns(conn, PROMPTS)
        for h in loose if p_cols else ():
            _insert(conn, PROMPTS, snap.prompts[h], p_cols, or_ignore=True)
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
                    if "title_source" in row:  # no title, no provenance (as Hermes writes it)
                        row["title_source"] = None
                    notes.append(f"title now held by session {holder[0][0]}: restored without a title")
            parent = row.get("parent_session_id")
            if (
                parent is not None
                and not conn.execute("SELECT 1 FROM sessions WHERE id = ?", (parent,)).fetchall()
            ):
                row["parent_session_id"] = None
                notes.append(f"parent session {parent} is gone: restored as a root")
            prompt = row.get("system_prompt_hash")
            if (
                p_cols
                and prompt is not None
                and prompt not in snap.prompts
                and not conn.execute("SELECT 1 FROM system_prompts WHERE hash = ?", (prompt,)).fetchall()
            ):
                # An entry written before deletes took prompts along, whose prompt another
                # program's cleanup removed since: the conversation comes back without it.
                row["system_prompt_hash"] = None
                notes.append(f"its system prompt {_short(prompt)} is gone: restored without it")
            conn.execute("SAVEPOINT hermes_trash_restore")
            try:
                refs = {row.get(c) for c in _PROMPT_REFS}
                for prompt in [p for h, p in snap.prompts.items() if h in refs] if p_cols else ():
                    _insert(conn, PROMPTS, prompt, p_cols, or_ignore=True)
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


def _short(value: Any) -> str:
    """A stored value for a note: its first 12 characters."""
    text = str(value)
    return text if len(text) <= 12 else text[:12] + "…"


#: The `sessions` columns that hold a `system_prompts.hash`.
_PROMPT_REFS = ("system_prompt_hash", "tool_names")


def _insert(
    conn: apsw.Connection, table: str, row: dict[str, Any], live: Sequence[str], *, or_ignore: bool = False
) -> None:
    cols = [c for c in row if c in live]
    names = ", ".join(ident(c) for c in cols)
    marks = ", ".join("CAST(? AS TEXT)" if isinstance(row[c], RawText) else "?" for c in cols)
    values = [bytes(row[c]) if isinstance(row[c], RawText) else row[c] for c in cols]
    verb = "INSERT OR IGNORE" if or_ignore else "INSERT"
    conn.execute(f"{verb} INTO main.{ident(table)} ({names}) VALUES ({marks})", values)


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


def _title(value: Any) -> str | None:
    """A title for the manifest: text as is, another stored type (a number) as its text."""
    return value if value is None or isinstance(value, str) else str(value)


def _manifest_text(manifest: dict[str, Any]) -> str:
    return json.dumps(manifest, indent=1, allow_nan=False)


def _file_size(folder: TrashDir, name: str) -> int:
    st = folder.lstat(name)
    return st.st_size if st is not None else 0


#: Signs a parent link of the entry being written (None: this user has no link key).
Signer = Callable[[Any, Any], str] | None
