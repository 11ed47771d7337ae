"""Deleting, pruning and exporting — in short batches, so a live agent is never starved.

Upstream prunes in one write transaction (27 s at 1M messages, during which every other
writer waits or fails). Here every destructive operation is: select the candidates with a
read, then delete them in batches sized by message count, each batch its own short
`BEGIN IMMEDIATE` that re-checks the batch's rows still qualify. A concurrent writer waits at
most one batch.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import apsw

from . import sql_fragments as Q
from .chains import last_active_sql
from .core import _Core, live_columns, placeholders
from .errors import SessionActiveWriteGuardError, SessionNotFound
from .text import TS_MAX, clean_row, num_sql
from .write_guards import drop_stale, guarded_ids, read_guards

BATCH_MESSAGES = 250  # messages per delete transaction (each fires up to three FTS deletes)
BATCH_SESSIONS = 50
# After each batch the lock is left free for as long as the batch held it (at least YIELD_MIN_S).
# A waiting writer polls through SQLite's busy handler, not a queue, so without a gap the next
# batch re-takes the lock before it wakes: at 100k messages a live writer starved for 1.2 s.
YIELD_MIN_S = 0.005
RECENT_ACTIVITY_S = 600  # a session with a message in the last 10 minutes is treated as live

PRUNE_FILTERS = frozenset(
    {
        "started_before",
        "started_after",
        "last_active_before",
        "last_active_after",
        "title_like",
        "end_reason",
        "cwd_prefix",
        "min_messages",
        "max_messages",
        "archived",
        "model_like",
        "provider",
        "user_id",
        "chat_id",
        "chat_type",
        "branch_like",
        "min_tokens",
        "max_tokens",
        "min_cost",
        "max_cost",
        "min_tool_calls",
        "max_tool_calls",
    }
)


def _marker_time(value: Any) -> float | None:
    """The auto-maintenance marker as a time; a corrupt value counts as no prior run (else every
    later call would fail on it and maintenance would never run again)."""
    try:
        when = float(value)
    except (TypeError, ValueError):
        return None
    return when if when == when and when not in (float("inf"), float("-inf")) else None


def prune_filter_where(
    source: str | None = None, *, require_ended: bool = True, last_active: str = "NULL", **f: Any
) -> tuple[str, list[Any]]:
    """0.19.0's `_prune_filter_where`: every filter ANDed; only ended sessions unless told. Plus
    the v31 writer's `last_active_before`/`last_active_after`, bounding `last_active` (SQL over
    `s`: the file's own rule, `chains.last_active_sql`, the one the list shows)."""
    unknown = set(f) - PRUNE_FILTERS
    if unknown:
        raise TypeError(f"unknown prune filter(s): {', '.join(sorted(unknown))}")
    clauses = ["s.ended_at IS NOT NULL"] if require_ended else []
    params: list[Any] = []

    def add(sql: str, *vals: Any) -> None:
        clauses.append(sql)
        params.extend(vals)

    if f.get("started_before") is not None:
        add("s.started_at < ?", f["started_before"])
    if f.get("started_after") is not None:
        add("s.started_at >= ?", f["started_after"])
    if f.get("last_active_before") is not None:
        # A row the orphan sweep ended ages from that sweep, not from its old activity (upstream).
        add(f"{last_active} < ?", f["last_active_before"])
        add(
            "(COALESCE(s.end_reason, '') != 'startup_orphan_reap' OR s.ended_at < ?)", f["last_active_before"]
        )
    if f.get("last_active_after") is not None:
        add(f"{last_active} >= ?", f["last_active_after"])
    if source:
        add("s.source = ?", source)
    if f.get("title_like"):
        add("LOWER(COALESCE(s.title, '')) LIKE ?", f"%{f['title_like'].lower()}%")
    if f.get("end_reason"):
        add("s.end_reason = ?", f["end_reason"])
    if f.get("cwd_prefix"):
        prefix = f["cwd_prefix"].rstrip("/\\") or f["cwd_prefix"]
        add("(s.cwd = ? OR s.cwd LIKE ? OR s.cwd LIKE ?)", prefix, f"{prefix}/%", f"{prefix}\\%")
    if f.get("min_messages") is not None:
        add("s.message_count >= ?", f["min_messages"])
    if f.get("max_messages") is not None:
        add("s.message_count <= ?", f["max_messages"])
    if f.get("model_like"):
        add("LOWER(COALESCE(s.model, '')) LIKE ?", f"%{f['model_like'].lower()}%")
    if f.get("provider"):
        add("LOWER(COALESCE(s.billing_provider, '')) = ?", f["provider"].lower())
    for key in ("user_id", "chat_id", "chat_type"):
        if f.get(key):
            add(f"s.{key} = ?", f[key])
    if f.get("branch_like"):
        add("LOWER(COALESCE(s.git_branch, '')) LIKE ?", f"%{f['branch_like'].lower()}%")
    tokens = "(COALESCE(s.input_tokens, 0) + COALESCE(s.output_tokens, 0))"
    cost = "COALESCE(s.actual_cost_usd, s.estimated_cost_usd, 0)"
    for key, expr, op in (
        ("min_tokens", tokens, ">="),
        ("max_tokens", tokens, "<="),
        ("min_cost", cost, ">="),
        ("max_cost", cost, "<="),
        ("min_tool_calls", "COALESCE(s.tool_call_count, 0)", ">="),
        ("max_tool_calls", "COALESCE(s.tool_call_count, 0)", "<="),
    ):
        if f.get(key) is not None:
            add(f"{expr} {op} ?", f[key])
    if f.get("archived") is True:
        clauses.append("s.archived = 1")
    elif f.get("archived") is False:
        clauses.append("s.archived = 0")
    return " AND ".join(clauses) or "1", params


def remove_session_files(sessions_dir: Path | None, session_id: str) -> None:
    """Gateway transcript files of a deleted session (`<id>.json[l]`, `request_dump_<id>_*.json`)."""
    if sessions_dir is None:
        return
    sessions_dir = Path(sessions_dir)
    for suffix in (".json", ".jsonl"):
        try:
            (sessions_dir / f"{session_id}{suffix}").unlink(missing_ok=True)
        except OSError:
            pass
    try:
        for p in sessions_dir.glob(f"request_dump_{session_id}_*.json"):
            try:
                p.unlink(missing_ok=True)
            except OSError:
                pass
    except OSError:
        pass


def collect_delegate_children(conn: apsw.Connection, parent_ids: Sequence[str]) -> list[str]:
    """Delegate subagents to cascade with `parent_ids` (marker chains, recursively; never a parent)."""
    df = Q.delegate_from("sessions")
    seeds = {p for p in parent_ids if p}
    found = set(seeds)
    frontier = list(seeds)
    while frontier:
        nxt = []
        for i in range(0, len(frontier), 400):
            part = frontier[i : i + 400]
            ph = placeholders(part)
            for (sid,) in conn.execute(
                f"SELECT id FROM sessions WHERE {df} IN ({ph}) OR (parent_session_id IN ({ph}) AND "
                f"{df} IS NOT NULL)",
                part + part,
            ):
                if sid not in found:
                    found.add(sid)
                    nxt.append(sid)
        frontier = nxt
    return sorted(found - seeds)


#: Above this many seeds `plan_delete` walks delegate markers from one scan (see below).
DELEGATE_SCAN_SEEDS = 400


def delegate_closure_one_scan(conn: apsw.Connection, parent_ids: Sequence[str]) -> list[str]:
    """`collect_delegate_children` for large seed sets: the marker has no index, so each of its
    400-id chunks is a full scan; this reads the marked rows once and walks them in Python."""
    df = Q.delegate_from("sessions")
    by_marker: dict[str, list[str]] = {}
    by_parent: dict[str, list[str]] = {}
    for sid, marker, parent in conn.execute(
        f"SELECT id, {df}, parent_session_id FROM sessions WHERE {df} IS NOT NULL"
    ):
        if isinstance(marker, str):
            by_marker.setdefault(marker, []).append(sid)
        if parent:
            by_parent.setdefault(parent, []).append(sid)
    seeds = {p for p in parent_ids if p}
    found = set(seeds)
    frontier = list(seeds)
    while frontier:
        nxt = []
        for p in frontier:
            for sid in by_marker.get(p, []) + by_parent.get(p, []):
                if sid not in found:
                    found.add(sid)
                    nxt.append(sid)
        frontier = nxt
    return sorted(found - seeds)


def prompt_refs(conn: apsw.Connection) -> list[str]:
    """The `sessions` columns holding a `system_prompts.hash` (`system_prompt_hash`, and
    `tool_names`, whose tool pin is stored there too); none on a file without the table."""
    if not live_columns(conn, "system_prompts"):
        return []
    return [c for c in ("system_prompt_hash", "tool_names") if c in live_columns(conn, "sessions")]


def delete_unreferenced_system_prompts(conn: apsw.Connection, among: Sequence[Any] | None = None) -> None:
    """The v31 writer's `_delete_unreferenced_system_prompts`, run by every delete of sessions:
    the shared `system_prompts` rows no session references any more go. `among` limits the look
    to those hashes (the ones a batch's sessions held): a sweep in every batch of a large prune
    scans every prompt each time (bench/prompt_cleanup_bench.py: 2,000 of 20,000 sessions, 1.3 s
    against 0.8 s)."""
    refs = prompt_refs(conn)
    if not refs:
        return
    if among is None:  # by the hash index (covering): the table's rows hold the prompts' text
        conn.execute(
            "DELETE FROM system_prompts WHERE hash IN "
            f"(SELECT hash FROM system_prompts WHERE {unreferenced_prompt_sql(refs)})"
        )
        return
    hashes = list({h for h in among if isinstance(h, str)})
    for i in range(0, len(hashes), 400):
        part = hashes[i : i + 400]
        unreferenced = unreferenced_prompt_sql(refs)
        conn.execute(
            f"DELETE FROM system_prompts WHERE hash IN ({placeholders(part)}) AND {unreferenced}", part
        )


def unreferenced_prompt_sql(refs: Sequence[str], outside: str = "") -> str:
    """`system_prompts` rows no session references through the columns `refs` (`outside`: an
    extra condition on the referencing session, e.g. "not one of those being deleted")."""
    extra = f" AND {outside}" if outside else ""
    return " AND ".join(
        f"NOT EXISTS (SELECT 1 FROM sessions WHERE sessions.{c} = system_prompts.hash{extra})" for c in refs
    )


#: Child `c` continues the compression-ended `p` (the v31 writer's `_CONTINUATION_EDGE_SQL`: a
#: branch, delegate or reset fork marked to `p`, or a tool session, is not a continuation).
CONTINUATION_EDGE = (
    "p.end_reason = 'compression'"
    + "".join(
        f" AND COALESCE(json_extract(CASE WHEN json_valid(c.model_config) THEN c.model_config END, "
        f"'$.{marker}'), '') != p.id"
        for marker in ("_branched_from", "_delegate_from", "_reset_from")
    )
    + " AND COALESCE(c.source, '') != 'tool'"
)
#: Unpinned continuations of a pinned segment: they belong to the pinned conversation.
PINNED_TAIL_SQL = (
    "WITH RECURSIVE tail(id) AS ("
    " SELECT c.id FROM sessions c JOIN sessions p ON p.id = c.parent_session_id"
    f" WHERE COALESCE(p.pinned, 0) = 1 AND {CONTINUATION_EDGE}"
    " UNION"
    " SELECT c.id FROM tail t JOIN sessions p ON p.id = t.id JOIN sessions c ON c.parent_session_id = p.id"
    f" WHERE {CONTINUATION_EDGE}"
    ") SELECT id FROM tail"
)
#: Why a prune keeps a matching session (`plan_prune`'s `excluded` reasons).
HELD_PINNED = "pinned"
HELD_PINNED_TAIL = "continues a pinned session"
HELD_CONTINUED = "its conversation continues in a session this prune keeps"


class HousekeepingMixin(_Core):
    # ------------------------------------------------------------ delete
    def _delete_ids_in(
        self,
        conn: apsw.Connection,
        ids: Sequence[str],
        guard: str = "",
        guard_params: Sequence[Any] = (),
        *,
        sweep: bool = True,
        guarded: list[str] | None = None,
    ) -> list[str]:
        """Delete `ids` (re-checked against `guard`) inside the caller's transaction, then the
        `system_prompts` rows they held that no session references any more; with `sweep` (one
        batch of each delete) every unreferenced one, as the v31 writer's delete does. Given a
        `guarded` list, sessions an agent is working in (`write_guards`) are kept and added to it."""
        if not ids:
            return []
        ph = placeholders(ids)
        where = f"id IN ({ph})" + (f" AND id IN (SELECT s.id FROM sessions s WHERE {guard})" if guard else "")
        live = [
            r[0]
            for r in conn.execute(f"SELECT id FROM sessions WHERE {where}", list(ids) + list(guard_params))
        ]
        if guarded is not None and live:
            kept = self._keep_guarded(conn, live)
            guarded.extend(k for k in live if k in kept)
            live = [i for i in live if i not in kept]
        if not live:
            return []
        ph = placeholders(live)
        refs = prompt_refs(conn)
        held = [
            h for c in refs for (h,) in conn.execute(f"SELECT {c} FROM sessions WHERE id IN ({ph})", live)
        ]
        conn.execute(f"UPDATE sessions SET parent_session_id = NULL WHERE parent_session_id IN ({ph})", live)
        conn.execute(f"DELETE FROM messages WHERE session_id IN ({ph})", live)
        conn.execute(f"DELETE FROM sessions WHERE id IN ({ph})", live)
        if refs:
            delete_unreferenced_system_prompts(conn, None if sweep else held)
        return live

    @staticmethod
    def _keep_guarded(conn: apsw.Connection, ids: list[str]) -> set[str]:
        """The ids of `ids` a delete must keep: under a live turn lease or compression lock, or
        with a delegate child that is (the child would cascade with it), as the v31 writer's
        `delete_sessions(exclude_active_write_guards=True)`. Stale guard rows of the others go."""
        found = read_guards(conn, ids)
        kept = set(found.guarded)
        if found.any_live:
            children = collect_delegate_children(conn, ids)
            if children and read_guards(conn, children).guarded:
                kept |= {
                    sid
                    for sid in ids
                    if sid not in kept and guarded_ids(conn, collect_delegate_children(conn, [sid]))
                }
        drop_stale(conn, (s for s in found.stale if s[0] not in kept))
        return kept

    def delegate_children(self, session_ids: Sequence[str]) -> list[str]:
        """(+) The delegate subagents a delete of `session_ids` cascades to (markers followed
        recursively, including marker-only rows whose `parent_session_id` is already NULL)."""
        return collect_delegate_children(self._conn(), list(session_ids)) if session_ids else []

    def plan_delete(self, session_ids: Sequence[str]) -> dict[str, Any]:
        """(+) What `delete_sessions_batched(ids + cascade_ids, cascade_delegates=False)` would do.

        Reads only, in chunks (a selection may hold 100k ids). Returns `{"ids"` (the requested
        ids that exist, in the given order), `"missing"` (how many requested ids do not),
        `"cascade_ids"` (delegate children that go with them), `"sessions"`, `"messages"` (both
        counted over ids + cascade), `"orphans"` (direct children of a deleted session that are
        kept and lose their parent link: `id, title, message_count, ended_at,
        parent_session_id, edge_kind`), `"busy"` (the ids + cascade an agent is working in now:
        a delete with `exclude_active_write_guards` keeps them, `write_guards`)}.
        """
        wanted = list(dict.fromkeys(s for s in session_ids if isinstance(s, str) and s))
        conn = self._conn()

        def counts(ids: Sequence[str]) -> dict[str, int]:
            found: dict[str, int] = {}
            for i in range(0, len(ids), 400):
                part = list(ids[i : i + 400])
                found.update(
                    conn.execute(
                        f"SELECT id, {num_sql('message_count')} FROM sessions WHERE id IN "
                        f"({placeholders(part)})",
                        part,
                    )
                )
            return found

        present = counts(wanted)
        ids = [i for i in wanted if i in present]
        walk = delegate_closure_one_scan if len(ids) > DELEGATE_SCAN_SEEDS else collect_delegate_children
        cascade = [c for c in walk(conn, ids) if c not in present] if ids else []
        cascade_counts = counts(cascade)
        cascade = [c for c in cascade if c in cascade_counts]
        gone = set(ids).union(cascade)
        orphans: list[dict[str, Any]] = []
        parents = ids + cascade
        edge = Q.edge_kind_case("s", Q.resets_known(self))
        for i in range(0, len(parents), 400):
            part = parents[i : i + 400]
            for row in self._rows(
                "SELECT s.id, s.title, s.message_count, s.ended_at, s.parent_session_id, "
                f"{edge} AS edge_kind FROM sessions s WHERE s.parent_session_id IN ({placeholders(part)}) "
                "ORDER BY s.started_at, s.id",
                part,
            ):
                if row["id"] not in gone:
                    orphans.append(row)
        return {
            "ids": ids,
            "missing": len(wanted) - len(ids),
            "cascade_ids": cascade,
            "sessions": len(ids) + len(cascade),
            "messages": sum(present.values()) + sum(cascade_counts.values()),
            "orphans": orphans,
            "busy": sorted(guarded_ids(conn, ids + cascade)),
        }

    def delete_session(
        self, session_id: str, sessions_dir: Path | None = None, exclude_active_write_guards: bool = False
    ) -> bool:
        """Delete one session; delegate children cascade, other children are orphaned. With
        `exclude_active_write_guards` (today's Hermes' keyword), a session an agent is working in
        (or one of its delegate children) raises `SessionActiveWriteGuardError`."""
        removed: list[str] = []

        def do(conn: apsw.Connection) -> bool:
            if not conn.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchall():
                return False
            if exclude_active_write_guards and self._keep_guarded(conn, [session_id]):
                raise SessionActiveWriteGuardError(
                    f"session {session_id!r} (or a delegate child) has an active turn lease or "
                    "compression lock: Hermes is working in it"
                )
            delegates = collect_delegate_children(conn, [session_id])
            removed.extend(self._delete_ids_in(conn, delegates))
            removed.extend(self._delete_ids_in(conn, [session_id]))
            return True

        ok = self._execute_write(do)
        for sid in removed:
            remove_session_files(sessions_dir, sid)
        return bool(ok)

    def delete_sessions(self, session_ids: Sequence[str], sessions_dir: Path | None = None) -> int:
        """Bulk delete (unknown ids skipped), in short batches; returns how many existed."""
        return self.delete_sessions_batched(session_ids, sessions_dir=sessions_dir)["deleted"]

    def delete_session_if_empty(self, session_id: str, sessions_dir: Path | None = None) -> bool:
        """Delete an untitled session with no messages and no children; never one an agent is
        working in (a first turn leased but not yet written looks empty: the v31 writer's rule)."""

        def do(conn: apsw.Connection) -> bool:
            if guarded_ids(conn, [session_id]):
                return False
            conn.execute(
                "DELETE FROM sessions WHERE id = ? AND title IS NULL "
                "AND NOT EXISTS (SELECT 1 FROM messages WHERE messages.session_id = sessions.id) "
                "AND NOT EXISTS (SELECT 1 FROM sessions child WHERE child.parent_session_id = sessions.id)",
                (session_id,),
            )
            if not conn.changes():
                return False
            delete_unreferenced_system_prompts(conn)
            return True

        ok = self._execute_write(do)
        if ok:
            remove_session_files(sessions_dir, session_id)
        return ok

    def delete_sessions_batched(
        self,
        session_ids: Sequence[str],
        *,
        cascade_delegates: bool = True,
        require_ended: bool = False,
        batch_messages: int = BATCH_MESSAGES,
        progress: Callable[[int, int], None] | None = None,
        cancel: threading.Event | None = None,
        sessions_dir: Path | None = None,
        exclude_active_write_guards: bool = False,
    ) -> dict[str, Any]:
        """(+) Delete exactly `session_ids` (and, optionally, their delegate children).

        Batches hold at most `batch_messages` messages (or `BATCH_SESSIONS` sessions), each in
        its own transaction; `require_ended` re-checks each row is still ended at delete time, so
        a session an agent reopened after the review is kept. Between batches the lock stays free
        as long as the last batch held it, so a live agent's writes interleave. `cancel` is checked
        between batches. With `exclude_active_write_guards`, each batch keeps the sessions an
        agent is working in right now (`write_guards`), as today's Hermes' user-facing deletes
        and prunes do. Returns `{"deleted", "requested", "skipped", "cancelled", "batches",
        "deleted_ids", "guarded_ids", "longest_batch_s"}` (`guarded_ids` are among `skipped`).
        """
        ids = list(dict.fromkeys(s for s in session_ids if isinstance(s, str) and s))
        if cascade_delegates and ids:
            extra = collect_delegate_children(self._conn(), ids)
            ids += [e for e in extra if e not in set(ids)]
        counts = (
            dict(
                self._tuples(
                    f"SELECT id, COALESCE(message_count, 0) FROM sessions WHERE id IN ({placeholders(ids)})",
                    ids,
                )
            )
            if ids and len(ids) <= 30000
            else {}
        )
        if len(ids) > 30000:
            for i in range(0, len(ids), 30000):
                part = ids[i : i + 30000]
                counts.update(
                    dict(
                        self._tuples(
                            f"SELECT id, {num_sql('message_count')} FROM sessions WHERE id IN "
                            f"({placeholders(part)})",
                            part,
                        )
                    )
                )
        todo = [i for i in ids if i in counts]
        batches: list[list[str]] = []
        cur: list[str] = []
        weight = 0
        for sid in todo:
            if cur and (weight + counts[sid] > batch_messages or len(cur) >= BATCH_SESSIONS):
                batches.append(cur)
                cur, weight = [], 0
            cur.append(sid)
            weight += counts[sid]
        if cur:
            batches.append(cur)
        guard = "s.ended_at IS NOT NULL" if require_ended else ""
        guarded: list[str] | None = [] if exclude_active_write_guards else None
        deleted: list[str] = []
        longest = 0.0
        cancelled = False
        total = len(todo)
        if progress:
            progress(0, total)
        # The CJK side index forgets the deleted text once, after the last batch (`_side_batch`).
        with self._side_batch():
            for batch in batches:
                if cancel is not None and cancel.is_set():
                    cancelled = True
                    break
                t0 = time.monotonic()
                got = self._execute_write(  # the first batch that deletes sweeps every orphan prompt
                    functools.partial(
                        self._delete_ids_in, ids=batch, guard=guard, sweep=not deleted, guarded=guarded
                    )
                )
                held = time.monotonic() - t0
                longest = max(longest, held)
                deleted += got
                if progress:
                    progress(len(deleted), total)
                if batch is not batches[-1]:
                    time.sleep(max(YIELD_MIN_S, held))  # let a waiting writer in (see YIELD_MIN_S)
        for sid in deleted:
            remove_session_files(sessions_dir, sid)
        return {
            "requested": len(ids),
            "deleted": len(deleted),
            "deleted_ids": deleted,
            "guarded_ids": guarded or [],
            "skipped": len(todo) - len(deleted) if not cancelled else 0,
            "cancelled": cancelled,
            "batches": len(batches),
            "longest_batch_s": longest,
        }

    # ------------------------------------------------------------ prune
    def prunes_by_activity(self) -> bool:
        """(+) Whether an age (`older_than_days`, the CLI's `--older-than`) is last activity, as
        today's Hermes reads it on a file with `last_activity_at`, or the start time (0.19.0)."""
        return "last_activity_at" in live_columns(self._conn(), "sessions")

    def _prune_kwargs(
        self, older_than_days: float | None, filters: dict[str, Any], now: float | None = None
    ) -> dict[str, Any]:
        f = dict(filters)
        if (
            older_than_days is not None
            and f.get("started_before") is None
            and f.get("last_active_before") is None
        ):
            key = "last_active_before" if self.prunes_by_activity() else "started_before"
            f[key] = (time.time() if now is None else now) - older_than_days * 86400
        return f

    def _prune_where(
        self, source: str | None, filters: dict[str, Any], require_ended: bool = True
    ) -> tuple[str, list[Any]]:
        return prune_filter_where(
            source, require_ended=require_ended, last_active=last_active_sql(self, "s"), **filters
        )

    def _pinned_tail(self) -> set[str]:
        """Unpinned continuations of pinned sessions (empty without a `pinned` column)."""
        if "pinned" not in live_columns(self._conn(), "sessions"):
            return set()
        return {r[0] for r in self._tuples(PINNED_TAIL_SQL)}

    def _keeps_whole_lineages(self) -> bool:
        """Today's Hermes (schema v24+) deletes a compression ancestor only with every
        continuation after it; 0.19.0's v22 (and our v23) prune rows one by one, as before."""
        return Q.todays_hermes(self)

    def _continued_ancestors(self, ids: Sequence[str]) -> set[str]:
        """The compression ancestors among `ids` whose conversation continues, through a chain of
        continuations, in a session not in `ids` (the v31 writer's `whole_lineages` rule)."""
        chosen = set(ids)
        edges: list[tuple[str, str]] = []
        for i in range(0, len(ids), 400):
            part = list(ids[i : i + 400])
            edges += self._tuples(
                "SELECT p.id, c.id FROM sessions p JOIN sessions c ON c.parent_session_id = p.id "
                f"WHERE p.id IN ({placeholders(part)}) AND {CONTINUATION_EDGE}",
                part,
            )
        held: set[str] = set()
        grew = True
        while grew:
            grew = False
            for parent, child in edges:
                if parent not in held and (child not in chosen or child in held):
                    held.add(parent)
                    grew = True
        return held

    def list_prune_candidates(
        self,
        older_than_days: float | None = None,
        source: str | None = None,
        *,
        include_pinned: bool = False,
        whole_lineages: bool = False,
        **filters: Any,
    ) -> list[dict[str, Any]]:
        """0.19.0's candidates, oldest first. Where the file has `pinned`, pinned sessions and
        their unpinned continuations are not candidates unless `include_pinned` (the v31
        writer's rule); `whole_lineages` drops compression ancestors whose conversation goes on
        in a session that is not a candidate."""
        where, params = self._prune_where(source, self._prune_kwargs(older_than_days, filters))
        if not include_pinned and "pinned" in live_columns(self._conn(), "sessions"):
            where += f" AND COALESCE(s.pinned, 0) = 0 AND s.id NOT IN ({PINNED_TAIL_SQL})"
        rows = self._rows(
            "SELECT s.id, s.source, s.title, s.model, s.started_at, s.ended_at, s.message_count, s.archived "
            f"FROM sessions s WHERE {where} ORDER BY s.started_at ASC",
            params,
        )
        if whole_lineages and rows:
            held = self._continued_ancestors([r["id"] for r in rows])
            rows = [r for r in rows if r["id"] not in held]
        return rows

    def prune_sessions(
        self,
        older_than_days: float | None = 90,
        source: str | None = None,
        sessions_dir: Path | None = None,
        exclude_active_write_guards: bool = False,
        **filters: Any,
    ) -> int:
        """Delete ended sessions matching the filters; children are orphaned (0.19.0), in batches.
        Never pinned sessions (unless `include_pinned=True`) and, on a file of today's Hermes,
        never a compression ancestor whose conversation continues (see `list_prune_candidates`);
        with `exclude_active_write_guards` never a session an agent is working in."""
        filters.setdefault("whole_lineages", self._keeps_whole_lineages())
        ids = [r["id"] for r in self.list_prune_candidates(older_than_days, source, **filters)]
        return self.delete_sessions_batched(
            ids,
            cascade_delegates=False,
            require_ended=True,
            sessions_dir=sessions_dir,
            exclude_active_write_guards=exclude_active_write_guards,
        )["deleted"]

    def archive_sessions(
        self, older_than_days: float | None = None, source: str | None = None, **filters: Any
    ) -> int:
        filters.setdefault("archived", False)
        rows = self.list_prune_candidates(older_than_days, source, **filters)
        for row in rows:
            self.set_session_archived(row["id"], True)
        return len(rows)

    def plan_prune(
        self,
        older_than_days: float | None = None,
        source: str | None = None,
        *,
        include_archived: bool = False,
        recent_activity_s: float = RECENT_ACTIVITY_S,
        now: float | None = None,
        **filters: Any,
    ) -> dict[str, Any]:
        """(+) Everything a person needs to review before a prune; writes nothing.

        Candidates match the filters and are ended, not archived (unless `include_archived`),
        not pinned nor an unpinned continuation of a pinned session, and not active in the last
        `recent_activity_s`; on a file of today's Hermes (schema v24+) a compression ancestor
        goes only with every continuation after it. Rows that match the filters but are held
        back are listed under `excluded` with the reason (`HELD_*`, "still open", "archived",
        "active in the last N minutes").
        """
        now = time.time() if now is None else now
        f = self._prune_kwargs(older_than_days, filters, now)
        where, params = self._prune_where(source, f, require_ended=False)
        pinned = "s.pinned" if self.has_column("sessions", "pinned") else "0"
        archived = "s.archived" if self.has_column("sessions", "archived") else "0"
        rows = self._rows(
            "SELECT s.id, s.title, s.source, s.model, s.started_at, s.ended_at, s.message_count, "
            f"{archived} AS archived, {pinned} AS pinned, "
            f"(SELECT MAX(m.timestamp) FROM messages m WHERE m.session_id = s.id AND m.timestamp BETWEEN 0 "
            f"AND {TS_MAX}) AS last_message "
            f"FROM sessions s WHERE {where} ORDER BY s.started_at ASC",
            params,
        )
        tail = self._pinned_tail() if rows else set()
        candidates: list[dict[str, Any]] = []
        excluded: list[dict[str, Any]] = []
        for r in rows:
            # Any writer may have stored text or 1e300 here: unknown dates and counts, never a crash.
            clean_row(r, numbers=("message_count",), timestamps=("started_at", "ended_at", "last_message"))
            reason = None
            if r["ended_at"] is None:
                reason = "still open"
            elif r["pinned"]:
                reason = HELD_PINNED
            elif r["id"] in tail:
                reason = HELD_PINNED_TAIL
            elif r["archived"] and not include_archived:
                reason = "archived"
            elif r["last_message"] is not None and now - r["last_message"] < recent_activity_s:
                reason = f"active in the last {int(recent_activity_s // 60)} minutes"
            if reason:
                excluded.append({**r, "reason": reason})
            else:
                candidates.append(r)
        if candidates and self._keeps_whole_lineages():
            held = self._continued_ancestors([c["id"] for c in candidates])
            excluded += [{**c, "reason": HELD_CONTINUED} for c in candidates if c["id"] in held]
            candidates = [c for c in candidates if c["id"] not in held]
        ids = [c["id"] for c in candidates]
        cascade_all = collect_delegate_children(self._conn(), ids) if ids else []
        rows_all = self.list_rows(cascade_all) if cascade_all else []
        # An open delegate child is kept (require_ended) and would be orphaned: say so up front.
        cascade_rows = [r for r in rows_all if r["ended_at"] is not None]
        cascade_open = [r for r in rows_all if r["ended_at"] is None]
        cascade = [r["id"] for r in cascade_rows]
        messages = sum(int(c["message_count"] or 0) for c in candidates) + sum(
            int(c["message_count"] or 0) for c in cascade_rows
        )
        total_msgs = max(1, self.message_count())
        file_size = self.db_path.stat().st_size if self.db_path.exists() else 0
        return {
            "ids": ids,
            "sessions": len(ids),
            "messages": messages,
            "oldest": candidates[0]["started_at"] if candidates else None,
            "newest": candidates[-1]["started_at"] if candidates else None,
            "bytes_estimate": int(file_size * min(1.0, messages / total_msgs)),
            "cascade_ids": cascade,
            "cascade": cascade_rows,
            "cascade_open": cascade_open,
            "candidates": candidates,
            "excluded": excluded,
        }

    def count_empty_sessions(self) -> int:
        return int(
            self._scalar(
                "SELECT COUNT(*) FROM sessions WHERE message_count = 0 AND ended_at IS NOT NULL "
                "AND archived = 0",
                default=0,
            )
        )

    def delete_empty_sessions(self, sessions_dir: Path | None = None) -> int:
        ids = [
            r[0]
            for r in self._tuples(
                "SELECT id FROM sessions WHERE message_count = 0 AND ended_at IS NOT NULL AND archived = 0"
            )
        ]
        return self.delete_sessions_batched(
            ids, cascade_delegates=False, require_ended=True, sessions_dir=sessions_dir
        )["deleted"]

    def maybe_auto_prune_and_vacuum(
        self, retention_days: float = 90, min_interval_hours: float = 24, vacuum: bool = True
    ) -> dict[str, Any]:
        """Prune at most once per interval; VACUUM only when something was pruned; never raises."""
        out: dict[str, Any] = {"skipped": False, "pruned": 0, "vacuumed": False}
        try:
            last = _marker_time(self.get_meta("last_auto_prune"))
            if last is not None and time.time() - last < min_interval_hours * 3600:
                return {**out, "skipped": True}
            out["pruned"] = self.prune_sessions(older_than_days=retention_days)
            if vacuum and out["pruned"]:
                self.vacuum()
                out["vacuumed"] = True
            self.set_meta("last_auto_prune", str(time.time()))
        except Exception as exc:  # documented contract: never raises
            out["error"] = str(exc)
        return out

    # ------------------------------------------------------------ export
    def export_session(self, session_id: str, display: bool = False) -> dict[str, Any] | None:
        """The session and its live rows (upstream's export, which `import_sessions` reads back);
        (+) `display=True`: its messages as a person sees them (`display_messages`: Hermes'
        display groups where the file keeps them, which its `include_compacted` export reads)."""
        session = self.get_session(session_id)
        if not session:
            return None
        messages = self.display_messages(session_id) if display else self.get_messages(session_id)
        return {**session, "messages": messages}

    def export_all(self, source: str | None = None) -> list[dict[str, Any]]:
        return [
            {**s, "messages": self.get_messages(s["id"])}
            for s in self.search_sessions(source=source, limit=100000)
        ]

    def require(self, session_id: str) -> None:
        if self.get_session(session_id) is None:
            raise SessionNotFound(f"no session with id {session_id!r}")
