"""Finding and reading the trash of a store: its folders, the entries in them, and emptying.

Every trash file is untrusted input (`trash_files`, `trash_manifest`): an entry that is not what
hermes-tui writes is listed `damaged` with its reason and the others are unaffected; a trash
folder that is a link or another user's is reported and never entered. Removal goes through the
descriptor of the folder an entry was found in.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import apsw

from .core import _Core
from .paths import earlier_user_data_dirs, user_data_dir
from .text import TS_MAX
from .trash_files import TrashDir, UnsafeFile, beside_root, fallback_root
from .trash_manifest import (
    MANIFEST_MAX_BYTES,
    DamagedEntry,
    TrashEntryNotFound,
    TrashError,
    ident,
    parse_manifest,
)

TRASH_RETENTION_S = 30 * 86400.0  # entries older than this go when a new one is written
TRASH_MAX_BYTES = 500 * 1024 * 1024  # then the oldest go while the trash is larger than this
ENTRY_RE = re.compile(r"^\d{8}T\d{6}Z-[0-9a-f]{6}$")


class TrashListing(_Core):
    """(+) `trash_report`, `list_trash`, `trash_entry`, `empty_trash`, `apply_trash_retention`."""

    #: Retention applied when a new entry is written and by `apply_trash_retention()`.
    trash_retention_s: float = TRASH_RETENTION_S
    trash_max_bytes: int = TRASH_MAX_BYTES
    #: Force the trash folder (tests, or a user setting); None: beside the store, else data dir.
    trash_root: Path | None = None

    # ------------------------------------------------------------ places
    def _trash_roots(self) -> list[tuple[Path, tuple[str, ...]]]:
        """Each trash folder of this store as (a folder the user chose, the names below it that
        are the trash's own and are never followed if they are links)."""
        if self.trash_root is not None:
            return [(Path(self.trash_root), ())]
        beside = beside_root(self.db_path)
        try:
            near = (self.db_path.parent, beside.relative_to(self.db_path.parent).parts)
        except ValueError:
            near = (beside, ())
        data = [user_data_dir(), *earlier_user_data_dirs()]
        return [near, *((d, fallback_root(self.db_path, d).relative_to(d).parts) for d in data)]

    def _writable_trash_root(self) -> TrashDir:
        """Beside the store when its folder takes it, else the platform's data folder."""
        roots = self._trash_roots()
        if self.trash_root is None:
            try:
                near = TrashDir.walk(*roots[0], create=True)
                if near is not None and os.access(near.path, os.W_OK):
                    return near
                if near is not None:
                    near.close()
            except (OSError, UnsafeFile):
                pass
            roots = roots[1:]
        try:
            root = TrashDir.walk(*roots[0], create=True)
        except (OSError, UnsafeFile) as exc:
            raise TrashError(f"cannot create a trash folder for {self.db_path}: {exc}") from exc
        assert root is not None
        return root

    @contextlib.contextmanager
    def _open_roots(self, problems: list[dict[str, Any]]) -> Iterator[list[TrashDir]]:
        """The trash folders that exist and are safe to read; each refused one is a problem."""
        with contextlib.ExitStack() as stack:
            roots: list[TrashDir] = []
            for base, parts in self._trash_roots():
                try:
                    root = TrashDir.walk(base, parts, create=False)
                except (OSError, UnsafeFile) as exc:
                    problems.append({"id": None, "path": str(base.joinpath(*parts)), "reason": str(exc)})
                    continue
                if root is not None:
                    roots.append(stack.enter_context(root))
            yield roots

    # ------------------------------------------------------------ tables
    def _cascade_tables(self) -> dict[str, str]:
        """Tables whose rows go with a session (`ON DELETE CASCADE` to sessions.id): table -> column."""
        out: dict[str, str] = {}
        for name in sorted(self._columns):
            if name in ("sessions", "messages") or name.startswith("sqlite_"):
                continue
            for fk in self._conn().execute(f"PRAGMA foreign_key_list({ident(name)})"):
                # (id, seq, table, from, to, on_update, on_delete, match)
                if fk[2] == "sessions" and (fk[4] in (None, "id")) and str(fk[6]).upper() == "CASCADE":
                    out[name] = fk[3]
        return out

    # ------------------------------------------------------------ reading the trash
    @contextlib.contextmanager
    def _scan(self, problems: list[dict[str, Any]]) -> Iterator[list[tuple[str, TrashDir]]]:
        """Every entry name of this store's trash folders with the folder holding it (the first
        folder wins a name found twice); refused folders are added to `problems`."""
        with self._open_roots(problems) as roots:
            found: dict[str, TrashDir] = {}
            for root in roots:
                try:
                    names = root.names()
                except OSError as exc:
                    problems.append({"id": None, "path": str(root.path), "reason": f"cannot be read: {exc}"})
                    continue
                for name in names:
                    if ENTRY_RE.match(name) and name not in found:
                        found[name] = root
            yield sorted(found.items())

    def _load(self, root: TrashDir, name: str, cascade: dict[str, str]) -> tuple[dict[str, Any] | None, int]:
        """(manifest, size) of the entry `name`: manifest None when it has none (`incomplete`);
        `DamagedEntry` when a file is not what hermes-tui writes."""
        st = root.lstat(name)
        if st is None:
            raise TrashEntryNotFound(f"no trash entry {name!r} for {self.db_path}")
        try:
            entry = root.sub(name)
        except UnsafeFile as exc:
            raise DamagedEntry(f"the entry {exc}") from None
        if entry is None:
            raise TrashEntryNotFound(f"no trash entry {name!r} for {self.db_path}")
        with entry:
            size = entry.size()
            try:
                raw = entry.read("manifest.json", MANIFEST_MAX_BYTES)
            except FileNotFoundError:
                return None, size
            except (OSError, UnsafeFile) as exc:
                raise DamagedEntry(f"manifest.json cannot be read: {exc}") from None
            m = parse_manifest(raw, name, cascade)
            rows = entry.lstat("rows.jsonl")
            if rows is None or not stat.S_ISREG(rows.st_mode):
                raise DamagedEntry("rows.jsonl is missing or not a regular file")
            done = m["status"] != "pending"
            if rows.st_size < m["bytes"] or (done and rows.st_size != m["bytes"]):
                raise DamagedEntry(
                    f"rows.jsonl is {rows.st_size:,} bytes, the manifest says {m['bytes']:,}: "
                    "cut short or edited"
                )
        return m, size

    def _describe(self, root: TrashDir, name: str, cascade: dict[str, str]) -> dict[str, Any]:
        """One `list_trash` item (a damaged entry included, with its `reason`)."""
        path = str(root.path / name)
        blank: dict[str, Any] = {
            "id": name,
            "created_at": None,
            "what": None,
            "sessions": 0,
            "messages": 0,
            "bytes": 0,
            "titles": [],
            "path": path,
        }
        st = root.lstat(name)
        if st is not None:
            blank["created_at"] = min(max(st.st_mtime, 0.0), float(TS_MAX))
        try:
            m, size = self._load(root, name, cascade)
        except DamagedEntry as exc:
            return {**blank, "status": "damaged", "reason": exc.reason}
        except (OSError, TrashEntryNotFound) as exc:
            return {**blank, "status": "damaged", "reason": f"cannot be read: {exc}"}
        if m is None:
            return {**blank, "status": "incomplete", "bytes": size}
        deleted = m["deleted_ids"]
        return {
            **blank,
            "created_at": m["created_at"],
            "what": m["what"],
            "status": "interrupted" if m["status"] == "pending" else m["status"],
            "sessions": len(deleted) if deleted is not None else len(m["sessions"]),
            "messages": m["counts"].get("messages", 0),
            "bytes": size,
            "titles": [s["title"] for s in m["sessions"][:5]],
            "restored_at": m.get("restored_at"),
        }

    def trash_report(self) -> dict[str, Any]:
        """(+) `{"entries": list_trash(), "skipped": [...]}`: `skipped` says what was not used
        and why, one `{"id", "path", "reason"}` per damaged entry and per trash folder refused
        (a link, another user's: `id` None). Never raises for what a trash file holds."""
        skipped: list[dict[str, Any]] = []
        entries: list[dict[str, Any]] = []
        cascade = self._cascade_tables()
        with self._scan(skipped) as found:
            for name, root in found:
                e = self._describe(root, name, cascade)
                entries.append(e)
                if e["status"] == "damaged":
                    skipped.append({"id": name, "path": e["path"], "reason": e["reason"]})
        entries.sort(key=lambda e: (e["created_at"] or 0, e["id"]), reverse=True)
        return {"entries": entries, "skipped": skipped}

    def list_trash(self) -> list[dict[str, Any]]:
        """(+) The trash entries of this store, newest first: `id, created_at, what, status,
        sessions` (how many), `messages, bytes, titles` (the first five), `path`. An entry whose
        manifest is missing (a write cut short before anything was deleted) is `incomplete`; one
        whose files are not what hermes-tui writes is `damaged`, with a `reason`."""
        return self.trash_report()["entries"]

    @contextlib.contextmanager
    def _entry(self, entry_id: str) -> Iterator[tuple[TrashDir, dict[str, Any] | None]]:
        """(folder of the trash holding `entry_id`, its checked manifest or None if incomplete)."""
        if not isinstance(entry_id, str) or not ENTRY_RE.match(entry_id):
            raise TrashEntryNotFound(f"no trash entry {entry_id!r} for {self.db_path}")
        cascade = self._cascade_tables()
        with self._scan([]) as found:
            for name, root in found:
                if name == entry_id:
                    try:
                        m, _size = self._load(root, name, cascade)
                    except DamagedEntry as exc:
                        raise DamagedEntry(f"trash entry {entry_id} is damaged: {exc.reason}") from None
                    yield root, m
                    return
        raise TrashEntryNotFound(f"no trash entry {entry_id!r} for {self.db_path}")

    def trash_entry(self, entry_id: str) -> dict[str, Any]:
        """(+) One entry's manifest (every session id and title, counts, status) and `path`;
        `TrashError` when it is incomplete or damaged (the message says why)."""
        with self._entry(entry_id) as (root, m):
            if m is None:
                raise TrashError(
                    f"trash entry {entry_id} is incomplete (no manifest): nothing was deleted with it"
                )
            if m["status"] == "pending":
                m = {**m, "status": "interrupted"}
            entry = root.sub(entry_id)
            assert entry is not None
            with entry:
                size = entry.size()
            return {**m, "path": str(root.path / entry_id), "bytes": size}

    # ------------------------------------------------------------ emptying
    def empty_trash(
        self, older_than_s: float | None = None, *, entry_id: str | None = None
    ) -> dict[str, Any]:
        """(+) Remove entries for good (damaged ones too): all, those older than `older_than_s`,
        or one `entry_id`. Returns `{"removed": [ids], "bytes": freed, "skipped": [...]}`
        (`skipped` as in `trash_report`: folders not read, entries that could not be removed)."""
        now = time.time()

        def doomed(e: dict[str, Any]) -> bool:
            if entry_id is not None and e["id"] != entry_id:
                return False
            return older_than_s is None or now - (e["created_at"] or now) >= older_than_s

        out = self._remove_entries(doomed)
        if entry_id is not None and not out["removed"]:
            raise TrashEntryNotFound(f"no trash entry {entry_id!r} for {self.db_path}")
        return out

    def apply_trash_retention(self, keep: str | None = None) -> dict[str, Any]:
        """(+) Drop entries older than `trash_retention_s`, then the oldest while the trash holds
        more than `trash_max_bytes` (never `keep`, the entry just written). Same result as
        `empty_trash`."""
        now = time.time()
        total: list[int] = []

        def doomed(e: dict[str, Any]) -> bool:
            if e["id"] == keep:
                return False
            old = now - (e["created_at"] or now) > self.trash_retention_s
            if old or total[0] > self.trash_max_bytes:
                total[0] -= e["bytes"]
                return True
            return False

        return self._remove_entries(doomed, oldest_first=True, total=total)

    def _remove_entries(
        self,
        doomed: Callable[[dict[str, Any]], bool],
        *,
        oldest_first: bool = False,
        total: list[int] | None = None,
    ) -> dict[str, Any]:
        """Remove each entry `doomed` picks, through the descriptor of the folder it was found in
        (a folder swapped for a link meanwhile is never entered)."""
        skipped: list[dict[str, Any]] = []
        removed: list[str] = []
        freed = 0
        cascade = self._cascade_tables()
        with self._scan(skipped) as found:
            entries = [(self._describe(root, name, cascade), root) for name, root in found]
            entries.sort(key=lambda x: (x[0]["created_at"] or 0, x[0]["id"]), reverse=not oldest_first)
            if total is not None:
                total.append(sum(e["bytes"] for e, _root in entries))
            for e, root in entries:
                if not doomed(e):
                    continue
                try:
                    root.remove(e["id"])
                except OSError as exc:
                    skipped.append({"id": e["id"], "path": e["path"], "reason": f"cannot be removed: {exc}"})
                    continue
                removed.append(e["id"])
                freed += e["bytes"]
        return {"removed": removed, "bytes": freed, "skipped": skipped}

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

    def _live_columns(self, conn: apsw.Connection, table: str) -> list[str]:
        return [r[1] for r in conn.execute(f"PRAGMA main.table_info({ident(table)})")]
