"""Sessions an agent is working in right now: today's Hermes' write guards, read inside our own
write transaction.

Hermes v31 keeps a *turn lease* per conversation (`session_turn_leases`, keyed by the
conversation's first compression segment) while a turn runs, and a *compression lock* per session
(`compression_locks`) while it compresses. Every user-facing delete and prune of today's Hermes
(`hermes sessions delete`/`prune`, the dashboard, the desktop) passes
`exclude_active_write_guards=True`: a delete of a guarded session is refused and a prune skips it,
because deleting a transcript mid-turn loses the turn (the agent's next write fails, or a
compressor that captured its watermark resurrects the removed turn). We apply the same rule,
in the same transaction as the delete, so no turn can start between the check and the delete.

A guard is *stale* (does not protect) once it has expired, or when its holder names a process of
this PID namespace that provably no longer exists (`pid=<n>:pidns=<inode>`, as the writer's
`_compression_lock_holder_process_is_dead`); an unstamped or foreign holder waits for its expiry.
Like the writer, a delete removes the stale guard rows of the sessions it deletes.
"""

from __future__ import annotations

import os
import re
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import apsw

from .lineage import _fork_child
from .text import read_rows, read_tuples

#: Why a user's delete or prune keeps such a session, in words for people (CLI and browser).
BUSY_REASON = (
    "Hermes is working in it right now (a turn or a compression is running); try again when it is idle"
)
LEASES = "session_turn_leases"
LOCKS = "compression_locks"
_PID = re.compile(r"(?:^|:)pid=(\d+)(?::|$)")
_KEY_COLUMNS = "id, parent_session_id, source, model_config, end_reason"
_PIDNS = re.compile(r"(?:^|:)pidns=(\d+)(?::|$)")


def _local_pidns() -> str | None:
    """This process' PID-namespace inode on Linux ("" where the platform has none, None when
    the lookup failed: then no holder can be proved dead)."""
    if sys.platform != "linux":
        return ""
    try:
        found = re.search(r"\[(\d+)\]", os.readlink("/proc/self/ns/pid"))
    except OSError:
        return None
    return found.group(1) if found else None


def holder_is_dead(holder: str) -> bool:
    """True only when `holder`'s `pid=` is a process of our PID namespace that is gone (the
    writer's strict rule for rows that expire: no stamp or a foreign stamp is never probed)."""
    pid_match = _PID.search(holder or "")
    pid = int(pid_match.group(1)) if pid_match else 0
    if pid <= 0 or pid == os.getpid():
        return False
    local = _local_pidns()
    if local is None:
        return False
    if local:  # Linux: only a holder stamped with our own namespace may be probed
        stamp = _PIDNS.search(holder)
        if stamp is None or stamp.group(1) != local:
            return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except (OSError, OverflowError):  # alive but not ours, or not a pid at all
        return False
    return False


def _unexpired(expires_at: Any, now: float) -> bool:
    try:
        return float(expires_at) > now
    except (TypeError, ValueError):
        return False  # a row no writer could have written guards nothing


def _stale(holder: Any, expires_at: Any, now: float) -> bool:
    return not _unexpired(expires_at, now) or holder_is_dead(str(holder or ""))


def _tables(conn: apsw.Connection) -> set[str]:
    return {
        r[0]
        for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name IN (?, ?)", (LEASES, LOCKS)
        )
    }


def conversation_key(conn: apsw.Connection, session_id: str) -> str:
    """The turn lease's key for `session_id`: up through compression parents (a parent that
    ended by compression, the child not a branch, delegate, tool or reset child) to the first
    segment, as the writer's `_session_turn_lease_key_on_conn`."""

    def row(sid: str) -> dict[str, Any] | None:
        found = read_rows(conn, f"SELECT {_KEY_COLUMNS} FROM sessions WHERE id = ?", (sid,))
        return found[0] if found else None

    current = row(session_id)
    seen = {session_id}
    while current:
        parent_id = current.get("parent_session_id")
        if not parent_id or parent_id in seen or _fork_child(current, reset=True):
            break
        parent = row(parent_id)
        if not parent or parent.get("end_reason") != "compression":
            break
        seen.add(parent_id)
        current = parent
    return str(current.get("id") or session_id) if current else session_id


@dataclass
class Guards:
    """What `read_guards` found: the guarded ids, and the stale guard rows (table, key column,
    key, holder) keyed by the other ids, which a delete of those ids removes."""

    guarded: set[str] = field(default_factory=set)
    #: (session id, table, key column, key, holder)
    stale: list[tuple[str, str, str, str, str]] = field(default_factory=list)
    #: Whether the file holds any unexpired guard row at all (else nothing can be guarded).
    any_live: bool = False


def _segments(conn: apsw.Connection, key: str, wanted: dict[str, None]) -> list[str]:
    """The ids of `wanted` whose turn-lease key is `key`: walked down from `key` through its
    compression continuations (the reverse of `conversation_key`'s walk up, so a lease costs a
    few reads however many ids a prune selects), each candidate then confirmed by walking up."""
    members = {key}
    frontier = [key]
    while frontier:
        ended = [
            sid
            for sid in frontier
            for r in read_tuples(conn, "SELECT end_reason FROM sessions WHERE id = ?", (sid,))
            if r[0] == "compression"
        ]
        frontier = []
        for parent in dict.fromkeys(ended):
            for child in read_rows(
                conn, f"SELECT {_KEY_COLUMNS} FROM sessions WHERE parent_session_id = ?", (parent,)
            ):
                cid = str(child.get("id"))
                if cid not in members and not _fork_child(child, reset=True):
                    members.add(cid)
                    frontier.append(cid)
    return [sid for sid in members if sid in wanted and conversation_key(conn, sid) == key]


def read_guards(conn: apsw.Connection, ids: Iterable[str], now: float | None = None) -> Guards:
    """The ids of `ids` under a live turn lease or compression lock (none on a file without
    either table, as every file before today's Hermes), and the stale rows of the others, with
    the session each belongs to. The guard rows are few (one per running turn or compression):
    they are read whole, and each lease's conversation is walked down from its key."""
    found = Guards()
    tables = _tables(conn)
    if not tables:
        return found
    now = time.time() if now is None else now
    key_column = {LOCKS: "session_id", LEASES: "conversation_id"}
    rows = {
        t: read_tuples(conn, f"SELECT {key_column[t]}, holder, expires_at FROM {t}") for t in sorted(tables)
    }
    if not any(rows.values()):  # most stores: no guard row at all
        return found
    found.any_live = any(_unexpired(exp, now) for table_rows in rows.values() for _k, _h, exp in table_rows)
    wanted = dict.fromkeys(str(sid) for sid in ids)
    looks: dict[str, list[tuple[str, str, Any, Any]]] = {}
    for key, holder, expires_at in rows.get(LOCKS, []):
        if str(key) in wanted:
            looks.setdefault(str(key), []).append((LOCKS, str(key), holder, expires_at))
    leases: dict[str, list[tuple[Any, Any]]] = {}
    for key, holder, expires_at in rows.get(LEASES, []):
        leases.setdefault(str(key), []).append((holder, expires_at))
    for key, held in leases.items():
        for sid in _segments(conn, key, wanted):
            looks.setdefault(sid, []).extend((LEASES, key, h, e) for h, e in held)
    for sid in wanted:
        stale: list[tuple[str, str, str, str, str]] = []
        for table, key, holder, expires_at in looks.get(sid, ()):
            if not _stale(holder, expires_at, now):
                found.guarded.add(sid)
            else:
                stale.append((sid, table, key_column[table], key, str(holder)))
        if sid not in found.guarded:
            found.stale += stale
    return found


def guarded_ids(conn: apsw.Connection, ids: Iterable[str], now: float | None = None) -> set[str]:
    """The ids of `ids` an agent is working in (`read_guards`)."""
    return read_guards(conn, ids, now).guarded


def drop_stale(conn: apsw.Connection, stale: Iterable[tuple[str, str, str, str, str]]) -> None:
    """Remove stale guard rows of sessions being deleted, in the delete's transaction: the writer
    does the same, so that a holder whose lease expired cannot renew it and write into a
    conversation that is gone (its next write finds no lease and is refused)."""
    for _sid, table, column, key, holder in dict.fromkeys(stale):
        conn.execute(f"DELETE FROM {table} WHERE {column} = ? AND holder = ?", (key, holder))
