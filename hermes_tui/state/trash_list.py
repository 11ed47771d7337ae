"""Finding and reading the trash of a store: its folders, the entries in them, and removing them.

Every trash file is untrusted input (`trash_files`, `trash_manifest`): an entry that is not what
hermes-tui writes is listed `damaged` with its reason and the others are unaffected; a trash
folder that is a link or another user's is reported and never entered. Removal goes through the
descriptor of the folder an entry was found in. Plain functions over a `Places` (the store's
trash folders): `TrashMixin` is their one user.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import apsw

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

#: One thing not used, for a report: a damaged entry, or a folder not read (`id` None).
Skipped = dict[str, Any]


@dataclass(frozen=True)
class Places:
    """The trash folders of one store, and the live tables whose rows go with a session."""

    db_path: Path
    forced: Path | None  # `SessionDB.trash_root`
    cascade: dict[str, str]

    def roots(self) -> list[tuple[Path, tuple[str, ...]]]:
        """Each trash folder as (a folder the user chose, the names below it that are the
        trash's own: never followed if they are links)."""
        if self.forced is not None:
            return [(Path(self.forced), ())]
        beside = beside_root(self.db_path)
        try:
            near = (self.db_path.parent, beside.relative_to(self.db_path.parent).parts)
        except ValueError:
            near = (beside, ())
        data = [user_data_dir(), *earlier_user_data_dirs()]
        return [near, *((d, fallback_root(self.db_path, d).relative_to(d).parts) for d in data)]

    def not_found(self, entry_id: Any) -> TrashEntryNotFound:
        return TrashEntryNotFound(f"no trash entry {entry_id!r} for {self.db_path}")


def cascade_tables(conn: apsw.Connection, tables: Iterator[str] | list[str]) -> dict[str, str]:
    """Tables whose rows go with a session (`ON DELETE CASCADE` to sessions.id): table -> column."""
    out: dict[str, str] = {}
    for name in sorted(tables):
        if name in ("sessions", "messages") or name.startswith("sqlite_"):
            continue
        for fk in conn.execute(f"PRAGMA foreign_key_list({ident(name)})"):
            # (id, seq, table, from, to, on_update, on_delete, match)
            if fk[2] == "sessions" and (fk[4] in (None, "id")) and str(fk[6]).upper() == "CASCADE":
                out[name] = fk[3]
    return out


def writable_root(places: Places) -> TrashDir:
    """Beside the store when its folder takes it, else the platform's data folder."""
    roots = places.roots()
    if places.forced is None:
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
        raise TrashError(f"cannot create a trash folder for {places.db_path}: {exc}") from exc
    assert root is not None
    return root


@contextlib.contextmanager
def scan(places: Places, problems: list[Skipped]) -> Iterator[list[tuple[str, TrashDir]]]:
    """Every entry name of the store's trash folders with the folder holding it (the first
    folder wins a name found twice); each folder refused or unreadable is added to `problems`."""
    with contextlib.ExitStack() as stack:
        found: dict[str, TrashDir] = {}
        for base, parts in places.roots():
            try:
                root = TrashDir.walk(base, parts, create=False)
            except (OSError, UnsafeFile) as exc:
                problems.append({"id": None, "path": str(base.joinpath(*parts)), "reason": str(exc)})
                continue
            if root is None:
                continue
            stack.enter_context(root)
            try:
                names = root.names()
            except OSError as exc:
                problems.append({"id": None, "path": str(root.path), "reason": f"cannot be read: {exc}"})
                continue
            for name in names:
                if ENTRY_RE.match(name) and name not in found:
                    found[name] = root
        yield sorted(found.items())


def load(places: Places, root: TrashDir, name: str) -> tuple[dict[str, Any] | None, int]:
    """(checked manifest, bytes) of the entry `name`: manifest None when it has none
    (`incomplete`); `DamagedEntry` when a file is not what hermes-tui writes."""
    try:
        entry = root.sub(name)
    except UnsafeFile as exc:
        raise DamagedEntry(f"the entry {exc}") from None
    if entry is None:
        raise places.not_found(name)
    with entry:
        size = entry.size()
        try:
            raw = entry.read("manifest.json", MANIFEST_MAX_BYTES)
        except FileNotFoundError:
            return None, size
        except (OSError, UnsafeFile) as exc:
            raise DamagedEntry(f"manifest.json cannot be read: {exc}") from None
        m = parse_manifest(raw, name, places.cascade)
        rows = entry.lstat("rows.jsonl")
        if rows is None or not stat.S_ISREG(rows.st_mode):
            raise DamagedEntry("rows.jsonl is missing or not a regular file")
        done = m["status"] != "pending"  # a pending entry's rows may have grown (re-snapshots)
        if rows.st_size < m["bytes"] or (done and rows.st_size != m["bytes"]):
            raise DamagedEntry(
                f"rows.jsonl is {rows.st_size:,} bytes, the manifest says {m['bytes']:,}: cut short or edited"
            )
    return m, size


def describe(places: Places, root: TrashDir, name: str) -> dict[str, Any]:
    """One `list_trash` item (a damaged entry included, with its `reason`)."""
    item: dict[str, Any] = {
        "id": name,
        "created_at": None,
        "what": None,
        "sessions": 0,
        "messages": 0,
        "bytes": 0,
        "titles": [],
        "path": str(root.path / name),
    }
    st = root.lstat(name)
    if st is not None:
        item["created_at"] = min(max(st.st_mtime, 0.0), float(TS_MAX))
    try:
        m, size = load(places, root, name)
    except DamagedEntry as exc:
        return {**item, "status": "damaged", "reason": exc.reason, "bytes": _size(root, name)}
    except (OSError, TrashEntryNotFound) as exc:
        return {**item, "status": "damaged", "reason": f"cannot be read: {exc}", "bytes": _size(root, name)}
    if m is None:
        return {**item, "status": "incomplete", "bytes": size}
    deleted = m["deleted_ids"]
    return {
        **item,
        "created_at": m["created_at"],
        "what": m["what"],
        "status": "interrupted" if m["status"] == "pending" else m["status"],
        "sessions": len(deleted) if deleted is not None else len(m["sessions"]),
        "messages": m["counts"].get("messages", 0),
        "bytes": size,
        "titles": [s["title"] for s in m["sessions"][:5]],
        "restored_at": m.get("restored_at"),
    }


def _size(root: TrashDir, name: str) -> int:
    """Bytes of the files in the entry folder `name` (0 for a link or anything else)."""
    try:
        entry = root.sub(name)
    except (OSError, UnsafeFile):
        return 0
    if entry is None:
        return 0
    with entry:
        return entry.size()


def report(places: Places) -> dict[str, Any]:
    """`{"entries": [...] newest first, "skipped": [...]}` (see `TrashMixin.trash_report`)."""
    skipped: list[Skipped] = []
    entries: list[dict[str, Any]] = []
    with scan(places, skipped) as found:
        for name, root in found:
            e = describe(places, root, name)
            entries.append(e)
            if e["status"] == "damaged":
                skipped.append({"id": name, "path": e["path"], "reason": e["reason"]})
    entries.sort(key=lambda e: (e["created_at"] or 0, e["id"]), reverse=True)
    return {"entries": entries, "skipped": skipped}


@contextlib.contextmanager
def find(places: Places, entry_id: Any) -> Iterator[tuple[TrashDir, dict[str, Any] | None]]:
    """(folder of the trash holding `entry_id`, its checked manifest or None if incomplete)."""
    if not isinstance(entry_id, str) or not ENTRY_RE.match(entry_id):
        raise places.not_found(entry_id)
    with scan(places, []) as found:
        for name, root in found:
            if name == entry_id:
                try:
                    m, _size = load(places, root, name)
                except DamagedEntry as exc:
                    raise DamagedEntry(f"trash entry {entry_id} is damaged: {exc.reason}") from None
                yield root, m
                return
    raise places.not_found(entry_id)


def remove(
    places: Places, doomed: Callable[[dict[str, Any], int], bool], *, oldest_first: bool
) -> dict[str, Any]:
    """Remove each entry `doomed(item, bytes of the trash left)` picks, through the descriptor of
    the folder it was found in (a folder swapped for a link meanwhile is never entered).
    Returns `{"removed": [ids], "bytes": freed, "skipped": [...]}`."""
    skipped: list[Skipped] = []
    removed: list[str] = []
    freed = 0
    with scan(places, skipped) as found:
        items = [(describe(places, root, name), root) for name, root in found]
        items.sort(key=lambda x: (x[0]["created_at"] or 0, x[0]["id"]), reverse=not oldest_first)
        left = sum(e["bytes"] for e, _root in items)
        for e, root in items:
            if not doomed(e, left):
                continue
            try:
                root.remove(e["id"])
            except OSError as exc:
                skipped.append({"id": e["id"], "path": e["path"], "reason": f"cannot be removed: {exc}"})
                continue
            removed.append(e["id"])
            freed += e["bytes"]
            left -= e["bytes"]
    return {"removed": removed, "bytes": freed, "skipped": skipped}


def empty(places: Places, older_than_s: float | None, entry_id: str | None) -> dict[str, Any]:
    """`TrashMixin.empty_trash`."""
    now = time.time()

    def doomed(e: dict[str, Any], _left: int) -> bool:
        if entry_id is not None and e["id"] != entry_id:
            return False
        return older_than_s is None or now - (e["created_at"] or now) >= older_than_s

    out = remove(places, doomed, oldest_first=False)
    if entry_id is not None and not out["removed"]:
        raise places.not_found(entry_id)
    return out


def retention(places: Places, keep: str | None, max_age_s: float, max_bytes: int) -> dict[str, Any]:
    """`TrashMixin.apply_trash_retention`."""
    now = time.time()

    def doomed(e: dict[str, Any], left: int) -> bool:
        return e["id"] != keep and (now - (e["created_at"] or now) > max_age_s or left > max_bytes)

    return remove(places, doomed, oldest_first=True)
