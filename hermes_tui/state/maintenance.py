"""FTS upkeep and store health: optimize/rebuild, the resumable legacy→v23 conversion, vacuum.

Everything here is an explicit action (never on the write path). Long work is chunked into
short transactions with the v23 rebuild-gate markers, so an agent writing at the same time
is never blocked for more than one chunk and a crash resumes where it stopped.
"""

from __future__ import annotations

import contextlib
import functools
import os
import time
from pathlib import Path
from typing import Any

import apsw

from . import fts_schema as F
from .connection import store_error
from .core import _Core, statement
from .errors import StoreError, StructureLocked

CHUNK_IDS = 500


def other_openers(path: Path) -> list[dict[str, Any]]:
    """Other processes holding `path` (or its -wal) open, from /proc (Linux; best effort).

    `writable` is read from the fd's open flags (O_WRONLY/O_RDWR), so a read-only browser does
    not count as a writer.
    """
    targets = {str(path.resolve()), str(path.resolve()) + "-wal"}
    me = os.getpid()
    found: list[dict[str, Any]] = []
    proc = Path("/proc")
    if not proc.is_dir():
        return found
    for pid_dir in proc.iterdir():
        if not pid_dir.name.isdigit() or int(pid_dir.name) == me:
            continue
        try:
            fds = list((pid_dir / "fd").iterdir())
        except OSError:
            continue
        writable = False
        holds = False
        for fd in fds:
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target in targets:
                holds = True
                with contextlib.suppress(OSError, ValueError):
                    for line in (pid_dir / "fdinfo" / fd.name).read_text().splitlines():
                        if line.startswith("flags:"):
                            flags = int(line.split()[1], 8)
                            if flags & (os.O_WRONLY | os.O_RDWR):
                                writable = True
        if holds:
            try:
                cmd = (pid_dir / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
            except OSError:
                cmd = ""
            found.append({"pid": int(pid_dir.name), "writable": writable, "cmdline": cmd[:200]})
    return found


class MaintenanceMixin(_Core):
    # ------------------------------------------------------------ resuming a conversion
    def _resume_conversion(self) -> None:
        """After opening (a `_Core._open_hooks` step): resume an interrupted
        `optimize_fts_storage()` in the background.

        Until it finishes, search reads the ids it has not indexed yet with LIKE (`search.py`,
        `_unindexed_range`), so nothing is missed meanwhile. Only a writable `migrate=True` open
        resumes it: the conversion ends by dropping the old tables, a structural change that
        `migrate=False` (the browser) never makes; there the stats screen's "Optimize storage"
        resumes it (`optimize_fts_storage()` continues where it stopped).
        """
        if self.conversion_pending() and self.migrate and not self.read_only:
            self._maintainer.request("fts_merge")

    def conversion_pending(self) -> bool:
        """(+) An `optimize_fts_storage()` conversion was started and has not finished."""
        lay = self.layout
        return lay.kind == "v23" and (lay.base_building or bool(lay.trash_tables))

    def _finish_conversion(self) -> None:
        """Before each upkeep round's bounded merges (a `_Core._upkeep_pre_steps` step): finish
        an interrupted conversion (chunk by chunk, stopping at `close()`)."""
        if self.conversion_pending() and self.migrate and not self.read_only:
            with contextlib.suppress(Exception):
                self.optimize_fts_storage()

    # ------------------------------------------------------------ meta
    def get_meta(self, key: str) -> str | None:
        if "state_meta" not in self._columns:
            return None
        return self._scalar("SELECT value FROM state_meta WHERE key = ?", (key,))

    def set_meta(self, key: str, value: str) -> None:
        self._execute_write(
            lambda c: c.execute(
                "INSERT INTO state_meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value "
                "= excluded.value",
                (key, value),
            )
        )

    # ------------------------------------------------------------ FTS
    def optimize_fts(self) -> int:
        """Merge every FTS index into one segment (an explicit, slow, whole-index action)."""
        tables = self._fts_tables()
        for t in tables:
            self._execute_write(statement(f"INSERT INTO {t}({t}) VALUES('optimize')"))
        return len(tables)

    def merge_fts(self, pages: int = 200) -> int:
        """Bounded incremental merge (`'merge'`, N pages per index): the cheap upkeep step."""
        for t in self._fts_tables():
            self._execute_write(statement(f"INSERT INTO {t}({t}, rank) VALUES('merge', ?)", (pages,)))
        return len(self._fts_tables())

    def fts_upkeep(self, max_steps: int | None = None) -> int:
        """(+) Run the background upkeep now: level merges until no v23 index has work left (or
        `max_steps` per index), then the full merge where it is worth it (`fts_upkeep.py`);
        returns the merge steps that did work.

        The upkeep thread only merges in quiet moments, so a bulk import (one long transaction
        after another) leaves it no time; this is the same work, one short write per step.
        """
        self._require_writable()
        if self.layout.kind != "v23":
            return 0
        before = self._fts_merge_steps
        for table in self._fts_merge_tables():
            self._upkeep_index(table, lambda step: bool(self._execute_write(step)), max_steps)
        return self._fts_merge_steps - before

    def rebuild_fts(self) -> int:
        """Rebuild every index from `messages`, with the DDL of the file's own layout."""
        lay = self.layout
        done = 0
        if lay.kind == "legacy":
            for t in ("messages_fts", "messages_fts_trigram") if lay.has_trigram else ("messages_fts",):

                def do(c: apsw.Connection, t: str = t) -> None:
                    c.execute(f"DELETE FROM {t}")
                    c.execute(f"INSERT INTO {t}(rowid, content) {F.LEGACY_CONCAT_SELECT}")

                self._execute_write(do)
                done += 1
        elif lay.kind == "v23":
            for t in self._fts_tables():
                self._execute_write(statement(f"INSERT INTO {t}({t}) VALUES('rebuild')"))
                done += 1

            def clear(c: apsw.Connection) -> None:
                keys = [F.REBUILD_HIGH_WATER, F.REBUILD_PROGRESS]
                if "messages_fts_cjk" in self._fts_tables():
                    keys += [F.CJK_HIGH_WATER, F.CJK_PROGRESS]
                for k in keys:
                    c.execute("DELETE FROM state_meta WHERE key = ?", (k,))

            self._execute_write(clear)
        self.refresh_structure()
        return done

    def fts_integrity_check(self) -> dict[str, str]:
        """FTS5 `'integrity-check'` on every index: `{table: "ok" | error text}`."""
        out: dict[str, str] = {}
        tables = list(self._fts_tables())
        if self.layout.has_cjk and "messages_fts_cjk" not in tables and self._cjk_impl:
            tables.append("messages_fts_cjk")
        for t in tables:
            if self.read_only:
                out[t] = "skipped (read-only)"
                continue
            try:
                self._execute_write(statement(f"INSERT INTO {t}({t}) VALUES('integrity-check')"))
                out[t] = "ok"
            except (apsw.Error, StoreError) as exc:  # the write path translates SQLite's errors
                out[t] = str(exc)
        return out

    # ------------------------------------------------------------ vacuum
    def vacuum(self) -> int:
        """Optimize FTS, truncate the WAL and VACUUM. Refused while another process writes."""
        self._require_writable()
        writers = [p for p in other_openers(self.db_path) if p["writable"]]
        if writers:
            raise StructureLocked(
                "VACUUM refused: another process holds the database open for writing "
                + ", ".join(f"pid {p['pid']}" for p in writers)
            )
        n = self.optimize_fts()
        conn = self._conn()
        with contextlib.suppress(apsw.Error):
            conn.wal_checkpoint(mode=apsw.SQLITE_CHECKPOINT_TRUNCATE)
        try:
            with self._write_lock:
                conn.execute("VACUUM")
        except apsw.Error as exc:
            raise store_error(exc, self.db_path) from exc
        return n

    # ------------------------------------------------------------ legacy → v23
    def optimize_fts_storage(
        self,
        *,
        with_cjk: bool = False,
        pause_factor: float = 1.0,
        vacuum: bool = False,
        max_chunks: int | None = None,
    ) -> dict[str, Any]:
        """Convert a legacy inline-FTS database to the v23 external-content layout, resumably.

        `with_cjk=False` by default: a `messages_fts_cjk` index carries triggers that every
        writer must satisfy, and hermes-agent 0.19.0 cannot load the tokenizer — adding it to a
        database 0.19.0 still writes would make all its inserts fail. Between chunks we sleep
        `pause_factor ×` the chunk's duration so other writers get the lock. `max_chunks`
        stops early (the next call resumes).
        """
        if self.read_only:
            return {"ok": False, "reason": "read_only"}
        writers = [p for p in other_openers(self.db_path) if p["writable"]]
        if writers:
            return {"ok": False, "reason": "other_writers", "pids": [p["pid"] for p in writers]}
        if not self.migrate and self.layout.kind == "legacy":
            return {"ok": False, "reason": "migrate_disabled"}
        lay = self.layout
        if lay.kind == "legacy":
            self._execute_write(self._demote_legacy)
            self.refresh_structure()
        elif lay.kind == "none":
            return {"ok": False, "reason": "fts5_unavailable"}
        with_cjk = with_cjk and bool(self._cjk_impl)
        if with_cjk and not self.layout.has_cjk:

            def add_cjk(c: apsw.Connection) -> None:
                c.execute(F.V23_CJK_SQL)
                high = c.execute("SELECT COALESCE(MAX(id), 0) FROM messages").fetchall()[0][0]
                for k, v in ((F.CJK_HIGH_WATER, str(high)), (F.CJK_PROGRESS, "0")):
                    c.execute("INSERT OR REPLACE INTO state_meta(key, value) VALUES (?, ?)", (k, v))

            self._execute_write(add_cjk)
            self.refresh_structure()
        done = self._backfill(
            F.REBUILD_HIGH_WATER,
            F.REBUILD_PROGRESS,
            (("messages_fts", ""), ("messages_fts_trigram", " AND role <> 'tool'")),
            pause_factor,
            max_chunks,
        )
        if not done:
            return {"ok": False, "reason": "backfill_incomplete"}
        cjk_tables = (("messages_fts_cjk", " AND role <> 'tool'"),)
        if (
            self.layout.has_cjk
            and not self.layout.cjk_stale
            and not self._backfill(F.CJK_HIGH_WATER, F.CJK_PROGRESS, cjk_tables, pause_factor, max_chunks)
        ):
            return {"ok": False, "reason": "backfill_incomplete"}
        # The virtual tables sort before their shadows; dropping one drops its shadows. The
        # drop of the last one settles the version in the same transaction, so no reader sees
        # the conversion finished (`conversion_pending()` false) before its meta says so.
        for trash in self.layout.trash_tables:
            with contextlib.suppress(apsw.SQLError):
                self._execute_write(functools.partial(self._drop_trash_and_settle, trash=trash))
        self._execute_write(functools.partial(self._drop_trash_and_settle, trash=None))
        self.refresh_structure()
        if self.layout.trash_tables:
            return {"ok": False, "reason": "teardown_incomplete"}
        vacuumed = None
        if vacuum:
            self.vacuum()
            vacuumed = True
        self.refresh_structure()
        return {"ok": True, "vacuumed": vacuumed}

    @staticmethod
    def _drop_trash_and_settle(c: apsw.Connection, trash: str | None) -> None:
        """Drop one old table (if named); once none is left, mark the storage converted."""
        if trash is not None:
            c.execute(f'DROP TABLE IF EXISTS "{trash}"')
        left = "SELECT 1 FROM sqlite_master WHERE name LIKE 'fts^_v22^_trash^_%' ESCAPE '^' LIMIT 1"
        if c.execute(left).fetchall():
            return
        settled = "INSERT OR REPLACE INTO state_meta(key, value) VALUES (?, '1')"
        c.execute(settled, (F.FTS_STORAGE_VERSION_KEY,))
        c.execute("DELETE FROM state_meta WHERE key = ?", (F.FTS_OPTIMIZE_AVAILABLE_KEY,))
        c.execute("UPDATE schema_version SET version = 23 WHERE version < 23")

    @staticmethod
    def _demote_legacy(c: apsw.Connection) -> None:
        for trig in F.BASE_TRIGGERS + F.TRIGRAM_TRIGGERS:
            c.execute(f"DROP TRIGGER IF EXISTS {trig}")
        c.execute("DROP VIEW IF EXISTS messages_fts_trigram_src")
        for t in ("messages_fts", "messages_fts_trigram"):
            if c.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (t,)).fetchall():
                # FTS5 renames its shadow tables with it; DROP happens later, one table per txn.
                c.execute(f'ALTER TABLE {t} RENAME TO "fts_v22_trash_{t}"')
        high = c.execute("SELECT COALESCE(MAX(id), 0) FROM messages").fetchall()[0][0]
        for k, v in ((F.REBUILD_HIGH_WATER, str(high)), (F.REBUILD_PROGRESS, "0")):
            c.execute("INSERT OR REPLACE INTO state_meta(key, value) VALUES (?, ?)", (k, v))
        c.execute("DELETE FROM state_meta WHERE key = ?", (F.FTS_OPTIMIZE_AVAILABLE_KEY,))
        c.execute(F.V23_BASE_SQL)
        c.execute(F.V23_TRIGRAM_SQL)

    def _backfill(
        self,
        high_key: str,
        prog_key: str,
        tables: tuple[tuple[str, str], ...],
        pause_factor: float,
        max_chunks: int | None,
    ) -> bool:
        """Index ids in (progress, high-water] chunk by chunk; True once the markers are gone."""
        chunks_done = 0
        while True:
            high = self.get_meta(high_key)
            if high is None:
                return True
            prog = int(self.get_meta(prog_key) or 0)
            high_i = int(high)
            if prog >= high_i:

                def finish(c: apsw.Connection, high_i: int = high_i) -> None:
                    for table, role in tables:
                        # Rows written around the switch: index any that the gate and backfill both missed.
                        c.execute(
                            f"INSERT INTO {table}(rowid, content, tool_name, tool_calls) "
                            f"SELECT id, content, tool_name, tool_calls FROM messages m WHERE m.id > ? AND "
                            f"m.id <= ?{role} "
                            f"AND NOT EXISTS (SELECT 1 FROM {table}_docsize d WHERE d.id = m.id)",
                            (max(0, high_i - 1000), high_i),
                        )
                    c.execute("DELETE FROM state_meta WHERE key IN (?, ?)", (high_key, prog_key))

                self._execute_write(finish)
                self.refresh_structure()
                return True
            if max_chunks is not None and chunks_done >= max_chunks:
                return False
            if self._maintainer.stopping or self._closed:  # close() while resuming in the background
                return False
            upper = min(prog + CHUNK_IDS, high_i)
            t0 = time.monotonic()

            def chunk(c: apsw.Connection, lo: int = prog, hi: int = upper) -> None:
                for table, role in tables:
                    c.execute(
                        f"INSERT INTO {table}(rowid, content, tool_name, tool_calls) "
                        "SELECT id, content, tool_name, tool_calls FROM messages WHERE id > ? "
                        f"AND id <= ?{role}",
                        (lo, hi),
                    )
                c.execute("UPDATE state_meta SET value = ? WHERE key = ?", (str(hi), prog_key))

            self._execute_write(chunk)
            chunks_done += 1
            if pause_factor > 0:
                time.sleep(min(1.0, pause_factor * (time.monotonic() - t0)))

    def backfill_cjk_index(self, pause_factor: float = 1.0, max_chunks: int | None = None) -> bool:
        """Finish a pending cjk backfill (v23 databases that gained the index after the fact)."""
        if not (self.layout.has_cjk and self.layout.cjk_building) or self.read_only:
            return not self.layout.cjk_building
        return self._backfill(
            F.CJK_HIGH_WATER,
            F.CJK_PROGRESS,
            (("messages_fts_cjk", " AND role <> 'tool'"),),
            pause_factor,
            max_chunks,
        )

    # ------------------------------------------------------------ health
    def store_health(self) -> dict[str, Any]:
        """What the statistics screen's health pane shows. Read-only and cheap."""
        caps = self.capabilities()
        counts: dict[str, int | None] = {}
        for t in ("messages_fts", "messages_fts_trigram", "messages_fts_cjk"):
            if f"{t}_docsize" in self._columns:
                counts[t] = int(self._scalar(f"SELECT COUNT(*) FROM {t}_docsize", default=0))
            elif t in self._columns or (t == "messages_fts" and self.layout.kind != "none"):
                counts[t] = None
        messages = int(self._scalar("SELECT COUNT(*) FROM messages", default=0))
        non_tool = int(self._scalar("SELECT COUNT(*) FROM messages WHERE role <> 'tool'", default=0))
        wal = Path(str(self.db_path) + "-wal")
        openers = other_openers(self.db_path)
        return {
            **caps,
            "messages": messages,
            "messages_non_tool": non_tool,
            "sessions": int(self._scalar("SELECT COUNT(*) FROM sessions", default=0)),
            "index_rows": counts,
            "file_size": self.db_path.stat().st_size if self.db_path.exists() else 0,
            "wal_size": wal.stat().st_size if wal.exists() else 0,
            "fts_optimize_available": self.get_meta(F.FTS_OPTIMIZE_AVAILABLE_KEY) == "1",
            "fts_conversion_pending": self.conversion_pending(),
            "other_processes": openers,
            "other_writers": [p for p in openers if p["writable"]],
        }
