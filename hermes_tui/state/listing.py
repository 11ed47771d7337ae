"""Listing sessions: upstream's `list_sessions_rich`/`session_count`, and the browser's paging.

The browser's list must stay instant at 100k+ sessions. `session_order()` runs one query that
returns only the ordered ids matching a filter (a few MB at 100k sessions, never the rows);
`list_rows()` then fetches one screen of rows by id. The list therefore knows its exact length
and can jump anywhere in O(1) — no OFFSET scans and no per-page re-sorting by last activity
(which has no index: it is `MAX(messages.timestamp)` per session).

The filter and the orders' keys (`SessionFilter`, `order_key_sql`, `SessionOrder`) are in
`list_order.py`.
"""

from __future__ import annotations

import contextlib
import heapq
import json
import re
import threading
import time
from collections.abc import Sequence
from typing import Any

import apsw

from ..safe_text import as_text
from . import sql_fragments as Q
from .chains import (
    chain_fold_sql,
    chain_roots,
    compression_tips,
    continuation_sql,
    freshest_rule,
    last_active_sql,
)
from .connection import open_connection
from .core import _Core, chunks, placeholders
from .errors import StoreError
from .list_order import (
    ORDERS,
    TS_RANGE,
    OrderHead,
    SessionFilter,
    SessionOrder,
    order_key_sql,
    order_keys_of,
    pinned_sql,
    sort_key,
)
from .preview import preview_sql
from .sessions import SESSION_NUMBERS, SESSION_TIMESTAMPS, resolved_prompts_sql, take_resolved_prompts
from .text import clean_row, read_rows, read_tuples, ts_sql

# Cold-file warming of `session_order("last_active")` (see `_warm_for_order`).
_WARM_MIN_SESSIONS = 5000  # below this the whole order takes a few ms even from disk
_WARM_THREADS = 8  # concurrent reads in flight: 4 gave 0.8-1.1 s, 8 gave 0.7 s at 1M (cold)
# `session_order_head("last_active")` walks at most this many of the newest messages.
_HEAD_SCAN_MAX = 12_000  # ~17 MB of leaf pages at 1.4 kB a message (cold: sequential reads)
# The boundary seeks took this long: the file is not in the page cache (cold: 0.7-1.5 ms at 1M,
# one read per page; cached: ~0.05 ms).
_WARM_COLD_PROBE_S = 0.0004

# Columns a list row carries; absent ones (old schemas opened with migrate=False) read as NULL.
_ROW_COLUMNS = (
    "id",
    "title",
    "source",
    "model",
    "message_count",
    "tool_call_count",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "reasoning_tokens",
    "estimated_cost_usd",
    "actual_cost_usd",
    "started_at",
    "ended_at",
    "end_reason",
    "parent_session_id",
    "billing_provider",
    "cwd",
    "last_read_at",
    "last_activity_description",
)
#: Flags a list row always carries, 0 where the file has no such column (0.19.0's: no `hidden`
#: or `pinned`).
ROW_FLAGS = ("archived", "hidden", "pinned")


def _preview_text(raw: Any) -> str:
    """The cut first prompt as text: a BLOB cut inside a UTF-8 character loses that character
    (not a `[binary]` marker); other non-UTF-8 bytes get `as_text`'s marker."""
    if isinstance(raw, bytes):
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            if exc.reason == "unexpected end of data":  # only the last character was cut
                return as_text(raw[: exc.start])
    return as_text(raw)


def _finish_preview(row: dict[str, Any]) -> dict[str, Any]:
    """`preview` from `_preview_raw` (upstream's 60 characters + "..."), then the row cleaned:
    text as str, dates usable or None, counters numbers or None."""
    raw = _preview_text(row.pop("_preview_raw", "")).replace("\n", " ").replace("\r", " ").strip()
    row["preview"] = (raw[:60] + ("..." if len(raw) > 60 else "")) if raw else ""
    return clean_row(row, SESSION_NUMBERS + ("child_count",), SESSION_TIMESTAMPS)


def finish_flags(row: dict[str, Any]) -> dict[str, Any]:
    """`unread` (Hermes' `session_unread`: a `last_read_at` watermark that activity postdates;
    NULL = never tracked = read) and the flags as 0/1, on a cleaned session row."""
    for flag in ROW_FLAGS:
        if flag in row:
            value = row[flag]
            row[flag] = 1 if isinstance(value, int | float) and value else 0
    last_read = row.get("last_read_at")
    if isinstance(last_read, int | float) and not isinstance(last_read, bool):
        last_active = row.get("last_active") or row.get("started_at") or 0
        row["unread"] = isinstance(last_active, int | float) and float(last_active) > float(last_read)
    else:
        row["unread"] = False
    return row


class ListingMixin(_Core):
    # ------------------------------------------------------------ upstream API
    def _preview_sql(self) -> str:
        """The preview by the file's writer's rule (`preview.preview_sql`): today's Hermes skips
        hidden display rows and compaction summaries where the file has `display_kind`."""
        return preview_sql(Q.todays_hermes(self) and self.has_column("messages", "display_kind"))

    def _base_filters(
        self,
        source: str | None,
        exclude_sources: Sequence[str] | None,
        cwd_prefix: str | None,
        min_message_count: int,
        include_archived: bool,
        archived_only: bool,
        listable_only: bool,
        include_hidden: bool = True,
    ) -> tuple[list[str], list[Any]]:
        where: list[str] = []
        params: list[Any] = []
        if listable_only:
            where += [Q.listable("s", Q.resets_known(self)), f"{Q.delegate_from('s')} IS NULL"]
        if source:
            where.append("s.source = ?")
            params.append(source)
        if exclude_sources:
            where.append(f"s.source NOT IN ({placeholders(exclude_sources)})")
            params += list(exclude_sources)
        if cwd_prefix:
            prefix = cwd_prefix.rstrip("/\\") or cwd_prefix
            where.append("(s.cwd = ? OR s.cwd LIKE ? OR s.cwd LIKE ?)")
            params += [prefix, f"{prefix}/%", f"{prefix}\\%"]
        if min_message_count > 0:
            where.append("s.message_count >= ?")
            params.append(min_message_count)
        if self.has_column("sessions", "archived"):
            if archived_only:
                where.append("s.archived = 1")
            elif not include_archived:
                where.append("s.archived = 0")
        # The archived view is Hermes' way back to an archived hidden (Bot Mode) chat: it lists them.
        if not include_hidden and not archived_only and self.has_column("sessions", "hidden"):
            where.append("s.hidden = 0")
        return where, params

    def _session_cols(self, compact: bool) -> str:
        if not compact:
            return "s.*"
        heavy = ("system_prompt", "system_prompt_hash", "git_metadata_generation")  # v31's compact cut
        return ", ".join(f"s.{c}" for c in sorted(self.columns("sessions")) if c not in heavy)

    def list_sessions_rich(
        self,
        source: str | None = None,
        exclude_sources: Sequence[str] | None = None,
        cwd_prefix: str | None = None,
        limit: int = 20,
        offset: int = 0,
        include_children: bool = False,
        min_message_count: int = 0,
        project_compression_tips: bool = True,
        order_by_last_active: bool = False,
        include_archived: bool = False,
        archived_only: bool = False,
        id_query: str | None = None,
        search_query: str | None = None,
        compact_rows: bool = False,
        include_hidden: bool = False,
    ) -> list[dict[str, Any]]:
        """Sessions with `preview`, `last_active` and `unread`, as the file's writer lists them
        (0.19.0, or v31: hidden sessions left out unless `include_hidden` or `archived_only`,
        reset children listed, the freshest-activity rule), compression roots projected to
        their tips. Not compact: `system_prompt` is the text, also where the file keeps it in
        `system_prompts`."""
        where, params = self._base_filters(
            source,
            exclude_sources,
            cwd_prefix,
            min_message_count,
            include_archived,
            archived_only,
            not include_children,
            include_hidden,
        )
        where_sql = ("WHERE " + " AND ".join(where)) if where else ""
        sel = self._session_cols(compact_rows)
        prompt_sel, prompt_join = ("", "") if compact_rows else resolved_prompts_sql(self, tool_names=False)
        last_active = last_active_sql(self, "s")
        if order_by_last_active:
            outer = list(where)
            extra: list[Any] = []
            id_needle = (id_query or "").strip().lower()
            search_needle = (search_query or "").strip().lower()
            if id_needle:
                outer.append(
                    "EXISTS (SELECT 1 FROM chain cq WHERE cq.root_id = s.id AND LOWER(cq.cur_id) "
                    "LIKE ? ESCAPE '\\')"
                )
                extra.append("%" + Q.like_escape(id_needle) + "%")
            if search_needle:
                compact = re.sub(r"[\W_]+", "", search_needle)
                clause = (
                    "EXISTS (SELECT 1 FROM chain cq JOIN sessions cs ON cs.id = cq.cur_id "
                    "WHERE cq.root_id = s.id "
                    "AND (LOWER(COALESCE(cs.title, '')) LIKE ? ESCAPE '\\' "
                    "OR LOWER(cq.cur_id) LIKE ? ESCAPE '\\'"
                )
                extra += ["%" + Q.like_escape(search_needle) + "%"] * 2
                if compact:
                    clause += (
                        " OR REPLACE(REPLACE(REPLACE(REPLACE(LOWER(COALESCE(cs.title, '')), "
                        "'-', ''), '_', ''), '.', ''), ' ', '') LIKE ? ESCAPE '\\'"
                    )
                    extra.append("%" + Q.like_escape(compact) + "%")
                outer.append(clause + "))")
            outer_sql = ("WHERE " + " AND ".join(outer)) if outer else ""
            # UNION, not UNION ALL: a cycle of compression edges (a damaged file) ends the walk.
            sql = f"""
                WITH RECURSIVE chain(root_id, cur_id) AS (
                    SELECT s.id, s.id FROM sessions s {where_sql}
                    UNION
                    SELECT c.root_id, child.id FROM chain c
                    JOIN sessions parent ON parent.id = c.cur_id
                    JOIN sessions child ON child.parent_session_id = c.cur_id
                    WHERE parent.end_reason = 'compression' AND {continuation_sql(self, "child")}),
                chain_max AS (
                    SELECT root_id, MAX((SELECT {last_active_sql(self, "cs")}
                        FROM sessions cs WHERE cs.id = cur_id)) AS eff
                    FROM chain GROUP BY root_id)
                SELECT {sel}{prompt_sel}, {self._preview_sql()} AS _preview_raw, {last_active} AS last_active,
                       COALESCE(cm.eff, {ts_sql("s.started_at")}) AS _eff
                FROM sessions s LEFT JOIN chain_max cm ON cm.root_id = s.id{prompt_join}
                {outer_sql}
                ORDER BY _eff DESC, s.started_at DESC, s.id DESC LIMIT ? OFFSET ?"""
            all_params = params + params + extra + [limit, offset]
        else:
            sql = (
                f"SELECT {sel}{prompt_sel}, {self._preview_sql()} AS _preview_raw, "
                f"{last_active} AS last_active FROM sessions s{prompt_join} {where_sql} "
                "ORDER BY s.started_at DESC LIMIT ? OFFSET ?"
            )
            all_params = params + [limit, offset]
        rows = []
        for row in read_rows(self._conn(), sql, all_params, decode=False):
            row.pop("_eff", None)
            rows.append(_finish_preview(take_resolved_prompts(row)))
        if project_compression_tips and not include_children:
            rows = [self._project_tip(r, compact_rows) for r in rows]
        return [finish_flags(r) for r in rows]

    def _project_tip(self, row: dict[str, Any], compact: bool) -> dict[str, Any]:
        if row.get("end_reason") != "compression":
            return row
        tip = self.get_compression_tip(row["id"])
        if tip is None or tip == row["id"]:  # no tip: `_rich_row` would find no row either
            return row
        tip_row = self._rich_row(tip, compact)
        if not tip_row:
            return row
        merged = dict(row)
        for key in (
            "id",
            "ended_at",
            "end_reason",
            "message_count",
            "tool_call_count",
            "title",
            "last_active",
            "preview",
            "model",
            "system_prompt",
            "cwd",
            "git_branch",
            "git_repo_root",
        ):
            if key in tip_row:
                merged[key] = tip_row[key]
        if merged.get("title") is None and Q.resets_known(self):
            merged["title"] = row.get("title")  # v31: a rotation cut off before the title moved
        merged["_lineage_root_id"] = row["id"]
        return merged

    def _rich_row(self, session_id: str, compact: bool = False) -> dict[str, Any] | None:
        prompt_sel, prompt_join = ("", "") if compact else resolved_prompts_sql(self, tool_names=False)
        rows = read_rows(
            self._conn(),
            f"SELECT {self._session_cols(compact)}{prompt_sel}, {self._preview_sql()} AS _preview_raw, "
            f"{last_active_sql(self, 's')} AS last_active "
            f"FROM sessions s{prompt_join} WHERE s.id = ?",
            (session_id,),
            decode=False,
        )
        return _finish_preview(take_resolved_prompts(rows[0])) if rows else None

    def session_count(
        self,
        source: str | None = None,
        cwd_prefix: str | None = None,
        min_message_count: int = 0,
        include_archived: bool = False,
        archived_only: bool = False,
        exclude_children: bool = False,
        exclude_sources: Sequence[str] | None = None,
    ) -> int:
        where, params = self._base_filters(
            source,
            exclude_sources,
            cwd_prefix,
            min_message_count,
            include_archived,
            archived_only,
            exclude_children,
        )
        where_sql = (" WHERE " + " AND ".join(where)) if where else ""
        return int(self._scalar(f"SELECT COUNT(*) FROM sessions s{where_sql}", params, 0))

    def search_sessions(
        self, source: str | None = None, limit: int = 20, offset: int = 0
    ) -> list[dict[str, Any]]:
        """`sessions.*` (prompts resolved) + `last_active` by the file's rule, most recently used
        first (what `export_all` walks)."""
        where = " WHERE s.source = ?" if source else ""
        params: list[Any] = [source] if source else []
        prompt_sel, prompt_join = resolved_prompts_sql(self)
        rows = read_rows(
            self._conn(),
            f"SELECT s.*{prompt_sel}, {last_active_sql(self, 's')} AS last_active FROM sessions s"
            f"{prompt_join}{where} ORDER BY last_active DESC, s.started_at DESC, s.id DESC LIMIT ? OFFSET ?",
            params + [limit, offset],
        )
        return [clean_row(take_resolved_prompts(r), SESSION_NUMBERS, SESSION_TIMESTAMPS) for r in rows]

    # ------------------------------------------------------------ browser paging
    def session_order(
        self, filter: SessionFilter | None = None, order: str = "last_active", with_keys: bool = False
    ) -> SessionOrder:
        """Ids matching `filter`, ordered for display (ties broken by id, so the order is total).

        With `filter.folded` (the default), a compression chain is listed once, as its live tip
        (`get_compression_tip`), as Hermes lists it: the chain is admitted by the filter on the
        session it starts at, and sorted by the freshest activity of the whole chain
        (`last_active`), the start of that session (`started`), or the tip's own numbers
        (`messages`, `tokens`, `cost`, what its row shows). With `filter.pinned_first` pinned
        sessions come first (`SessionOrder.pinned` of them), each part in the order.

        `with_keys` also returns each id's order key (`SessionOrder.keys`), computed by the same
        expression in the same statement, so the keys are exactly what was sorted by (a
        federation's merge reads them instead of re-reading rows block by block).
        """
        flt = filter or SessionFilter()
        if order not in ORDERS:
            raise ValueError(f"unknown order {order!r}; expected one of {', '.join(ORDERS)}")
        where, params = flt.where(self)
        warmers: list[threading.Thread] = []
        if order == "last_active":
            warmers = self._warm_for_order(rows=bool(where) or freshest_rule(self))
        pin = pinned_sql(self, flt)
        if flt.folded:
            sql = self._folded_order_sql(where, pin, order)
        else:
            sql = (
                f"SELECT s.id AS id, {order_key_sql(self, order)} AS k, {pin} AS pin, NULL AS unresolved "
                f"FROM sessions s{where} ORDER BY pin DESC, k DESC, s.id DESC"
            )
        # One row holding every id as a JSON array: 100k ids come back in a single step, not 100k
        # steps that each re-take the GIL (which the UI thread holds while it starts: 2x slower).
        # The keys ride along as a second array of the same ordered rows (SQLite's JSON writes a
        # REAL with enough digits to read back the same double, so ties stay ties); they are
        # parsed only when asked for or when a chain SQL could not fold needs its place.
        try:
            rows = self._tuples(
                "SELECT json_group_array(id), json_group_array(k), COALESCE(SUM(pin), 0), "
                f"json_group_array(unresolved) FILTER (WHERE unresolved IS NOT NULL) FROM ({sql})",
                params,
            )
        finally:
            for t in warmers:  # no reader is left holding a snapshot of the file after we return
                t.join()
        ids_json, keys_json, pinned, unresolved_json = rows[0] if rows else ("[]", "[]", 0, "[]")
        ids: list[Any] = json.loads(ids_json or "[]")
        keys: list[Any] | None = json.loads(keys_json or "[]") if with_keys else None
        unresolved = json.loads(unresolved_json or "[]")
        if unresolved:
            keys = self._fold_chains(ids, keys, unresolved, keys_json, int(pinned), order)
        return SessionOrder(flt, order, ids, keys=keys if with_keys else None, pinned=int(pinned))

    def list_count(self, filter: SessionFilter | None = None) -> int:
        """How many sessions `session_order(filter)` lists, without ordering them (one count of
        the admitted rows: a folded chain is admitted once, by its first session)."""
        where, params = (filter or SessionFilter()).where(self)
        return int(self._scalar(f"SELECT COUNT(*) FROM sessions s{where}", params, 0))

    def _folded_order_sql(self, where: str, pin: str, order: str) -> str:
        """The folded order's statement: each admitted session with its key, a compression-ended
        one replaced by its chain's tip and keyed as the chain (`chains.chain_fold_sql`); a chain
        the walk could not settle keeps its first session's id, listed in `unresolved`."""
        tip = "json_extract(cj, '$[1]')"
        if order == "last_active":
            key = "CASE WHEN cj IS NOT NULL THEN json_extract(cj, '$[0]') ELSE ok END"
        elif order == "started":
            key = "ok"
        else:  # a tip is ordered by its own numbers, what its row shows
            key = (
                f"CASE WHEN {tip} IS NOT NULL THEN (SELECT {order_key_sql(self, order, alias='t')} "
                f"FROM sessions t WHERE t.id = {tip}) ELSE ok END"
            )
        own = order_key_sql(self, order)
        if order == "last_active":  # a chain's key is the chain's: its first session's is not needed
            own = f"CASE WHEN s.end_reason = 'compression' THEN NULL ELSE {own} END"
        return f"""
            WITH base AS MATERIALIZED (
                SELECT s.id AS rid, {pin} AS pin, {own} AS ok,
                       CASE WHEN s.end_reason = 'compression' THEN {chain_fold_sql(self, "s")} END AS cj
                FROM sessions s{where})
            SELECT COALESCE({tip}, rid) AS id, {key} AS k, pin,
                   CASE WHEN cj IS NOT NULL AND {tip} IS NULL THEN rid END AS unresolved
            FROM base ORDER BY pin DESC, k DESC, id DESC"""

    def _fold_chains(
        self,
        ids: list[Any],
        keys: list[Any] | None,
        unresolved: list[Any],
        keys_json: str,
        pinned: int,
        order: str,
    ) -> list[Any]:
        """Replace, in place, each of the `unresolved` sessions of a folded order (chains that
        fork or loop) by its chain's tip as the writers rank it (`compression_tips`). The key
        stays (`last_active`, `started`: the chain's) or becomes the tip's own (`messages`,
        `tokens`, `cost`); an entry whose new id or key no longer fits between its neighbours
        moves to its place. Returns the keys (aligned with `ids`)."""
        keys = keys if keys is not None else json.loads(keys_json or "[]")
        tips = compression_tips(self, unresolved)
        todo = {sid for sid in unresolved if tips.get(sid, sid) != sid}
        moved = [i for i, sid in enumerate(ids) if sid in todo]
        if not moved:
            return keys
        for i in moved:
            ids[i] = tips[ids[i]]
        if order in ("messages", "tokens", "cost"):
            own = dict(
                self._tuples(
                    f"SELECT s.id, {order_key_sql(self, order)} FROM sessions s "
                    "WHERE s.id IN (SELECT value FROM json_each(?))",
                    [json.dumps([ids[i] for i in moved])],
                )
            )
            for i in moved:
                keys[i] = own.get(ids[i], keys[i])

        def at(i: int) -> tuple[Any, ...]:
            return sort_key(ids[i], keys[i], i < pinned)

        n = len(ids)
        misplaced = {i for i in moved if (i > 0 and at(i - 1) <= at(i)) or (i + 1 < n and at(i) <= at(i + 1))}
        if misplaced:  # ties broken by the tip's id, or a tip's own numbers: re-sort those
            entries = sorted(((at(i), ids[i], keys[i]) for i in misplaced), reverse=True)
            kept = [i for i in range(n) if i not in misplaced]
            merged = heapq.merge(
                ((at(i), ids[i], keys[i]) for i in kept), entries, key=lambda e: e[0], reverse=True
            )
            pairs = [(sid, key) for _sk, sid, key in merged]
            ids[:] = [sid for sid, _k in pairs]
            keys[:] = [key for _s, key in pairs]
        return keys

    def session_order_head(
        self, filter: SessionFilter | None = None, order: str = "last_active", limit: int = 50
    ) -> OrderHead | None:
        """The first `limit` ids of `session_order(filter, order)`, cheaply: what a browser can
        paint while the whole order (seconds on a cold 10M-message file) is still being read.

        `started`: one walk of `idx_sessions_started`, exact. `last_active`: the sessions of the
        newest messages by id (walked back until `limit` sessions pass the filter, at most
        `_HEAD_SCAN_MAX` messages) and the `limit` newest by start (sessions without messages),
        each keyed exactly as `session_order` keys it and sorted the same way; the result misses
        a session only when its newest message has an older id than other sessions' newer
        messages (imported history), so it is marked `exact=False`. None (the caller waits for
        the whole order) for the orders without an index to walk, a title/id text filter,
        `pinned_first`, and when fewer than `limit` sessions were found (a narrow filter or a
        small store).
        """
        flt = filter or SessionFilter()
        if order not in ORDERS:
            raise ValueError(f"unknown order {order!r}; expected one of {', '.join(ORDERS)}")
        if limit <= 0 or flt.text or flt.pinned_first:  # a substring matches anywhere: no walk finds it early
            return None
        where, params = flt.where(self)
        if order == "started":
            usable = f"s.started_at {TS_RANGE}"  # the index's range: numbers only, NULLs out
            cond = (where + " AND " + usable) if where else " WHERE " + usable
            ids = [
                r[0]
                for r in self._tuples(
                    f"SELECT s.id FROM sessions s{cond} ORDER BY s.started_at DESC, s.id DESC LIMIT ?",
                    [*params, limit],
                )
            ]
            if flt.folded:  # a chain sorts by the start of its first session and shows as its tip
                tips = compression_tips(self, ids)
                ids = [tips.get(i, i) for i in ids]
            # Fewer than `limit` usable starts: the rest (unknown starts) would follow in an
            # order this walk did not read; a store that small orders in a few ms anyway.
            return OrderHead(ids, exact=True) if len(ids) == limit else None
        if order != "last_active":
            return None
        conn = self._conn()
        candidates: dict[str, None] = {}
        for (sid,) in self._tuples(
            f"SELECT s.id FROM sessions s WHERE s.started_at {TS_RANGE} ORDER BY s.started_at DESC LIMIT ?",
            [limit],
        ):
            candidates[sid] = None
        keyed: dict[Any, Any] = {}
        cursor: int | None = None
        scanned, batch = 0, max(256, 8 * limit)
        while True:
            cond = "" if cursor is None else f"WHERE id < {int(cursor)} "
            rows: list[tuple[Any, ...]] = conn.execute(
                f"SELECT id, session_id FROM messages {cond}ORDER BY id DESC LIMIT {batch}"
            ).fetchall()
            scanned += len(rows)
            fresh = []
            for _mid, sid in rows:
                if isinstance(sid, str) and sid not in candidates:
                    candidates[sid] = None
                    fresh.append(sid)
            done = len(rows) < batch or scanned >= _HEAD_SCAN_MAX
            if cursor is None:  # the first round also keys the newest-started sessions
                fresh = list(candidates)
            if fresh:
                keyed.update(order_keys_of(self, fresh, flt, order))
            if done or len(keyed) >= limit:
                break
            cursor = int(rows[-1][0])
            batch = min(batch * 2, 8192)
        if len(keyed) < limit:  # a narrow filter, or a store small enough to order whole at once
            return None
        # `session_order` sorts `key DESC, id DESC` with NULL (no usable date) last.
        ranked = sorted(keyed.items(), key=lambda r: sort_key(r[0], r[1]), reverse=True)
        return OrderHead([sid for sid, _k in ranked[:limit]], exact=False)

    def _warm_for_order(self, rows: bool = False) -> list[threading.Thread]:
        """Started threads that read the pages the unfiltered last-active order will need, when
        the file is not in the OS page cache (else none).

        That order seeks the last message of every session in `idx_messages_session`; with ~100k
        sessions it touches nearly every leaf of that index, scattered across the file, one
        synchronous read at a time (2.9-4.4 s on a cold 1M-message file, 7.4 s at 6M). The
        statement itself is unchanged (so are its results): these threads only scan ranges of
        the id index and of the message index on their own read-only connections, so that up to
        `_WARM_THREADS` reads are in flight and the statement then finds the pages cached. The
        ranges split the ids at sessions sampled by rowid; the first range is left to the
        statement. Timing those few sampling seeks tells a cold file from a warm one (a warm
        file would pay ~100 ms of CPU for nothing). Best effort: any failure only skips warming.
        """
        try:
            conn = self._conn()
            top = int(self._scalar("SELECT MAX(rowid) FROM sessions", default=0) or 0)
            if top < _WARM_MIN_SESSIONS or not self._scalar(
                "SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = 'idx_messages_session'"
            ):
                return []
            # One statement (one GIL round trip, so the timing is SQLite's): the first text id at
            # or after each of `_WARM_THREADS - 1` evenly spaced rowids, and a seek of each into
            # the message index, whose pages are the ones that matter (the `sessions` pages may
            # be cached by another scan, e.g. the browser's list of models).
            samples = [top * i // _WARM_THREADS for i in range(1, _WARM_THREADS)]
            t0 = time.perf_counter()
            packed = conn.execute(
                "WITH p(r) AS (VALUES " + ", ".join("(?)" for _ in samples) + "), "
                "b(x) AS (SELECT (SELECT s.id FROM sessions s WHERE s.rowid >= p.r "
                "AND typeof(s.id) = 'text' ORDER BY s.rowid LIMIT 1) FROM p) "
                "SELECT json_group_array(x), MAX((SELECT MAX(m.timestamp) FROM messages m "
                "INDEXED BY idx_messages_session WHERE m.session_id = b.x)) FROM b",
                samples,
            ).fetchall()[0][0]
            if time.perf_counter() - t0 < _WARM_COLD_PROBE_S:
                return []
            bounds = {b for b in json.loads(str(packed)) if isinstance(b, str)}
            if not bounds:
                return []
        except (apsw.Error, StoreError):
            return []
        edges = sorted(bounds)
        jobs: list[list[tuple[str, tuple[Any, ...]]]] = []
        for lo, hi in zip(edges, [*edges[1:], None], strict=True):
            upper = "" if hi is None else " AND {col} < ?"
            args = (lo,) if hi is None else (lo, hi)
            jobs.append(
                [
                    (f"SELECT count(id) FROM sessions WHERE id >= ?{upper.format(col='id')}", args),
                    (
                        "SELECT count(*) FROM messages INDEXED BY idx_messages_session "
                        f"WHERE session_id >= ?{upper.format(col='session_id')}",
                        args,
                    ),
                ]
            )
        if rows:
            # The statement scans `sessions` in rowid order (a filter reads the rows) and seeks
            # the message index in that order, i.e. anywhere: warm every id range, and the rows
            # ahead of the scan (the last flag column read makes the row's pages come in).
            jobs[0].insert(
                0,
                (
                    "SELECT count(*) FROM messages INDEXED BY idx_messages_session WHERE session_id < ?",
                    (edges[0],),
                ),
            )
            flags = ("hidden", "archived", "end_reason")
            col = next((c for c in flags if self.has_column("sessions", c)), "id")
            cuts = [*(top * i // _WARM_THREADS for i in range(1, _WARM_THREADS)), top + 1]
            for job, (first, last) in zip(jobs, zip(cuts, cuts[1:], strict=False), strict=False):
                job.append(
                    (f"SELECT count({col}) FROM sessions WHERE rowid >= ? AND rowid < ?", (first, last))
                )
        return self._start_warmers(jobs)

    def _warm_for_table_scan(self, column: str) -> list[threading.Thread]:
        """Started threads that read the `sessions` rows a scan of `column` will need, when the
        file is not in the OS page cache (else none); see `_warm_for_order`.

        `distinct_values` of a column without an index (`model` in every 0.19.0 file) reads every
        session row, scattered across the file: 0.5-0.9 s cold at 100k sessions, one read at a
        time. Here `_WARM_THREADS - 1` threads read rowid ranges ahead of the statement (which
        scans in rowid order and keeps the first range). Best effort, results unchanged."""
        try:
            top = int(self._scalar("SELECT MAX(rowid) FROM sessions", default=0) or 0)
            if top < _WARM_MIN_SESSIONS:
                return []
            samples = [top * i // _WARM_THREADS for i in range(1, _WARM_THREADS)]
            t0 = time.perf_counter()
            self._conn().execute(
                "WITH p(r) AS (VALUES " + ", ".join("(?)" for _ in samples) + ") "
                "SELECT count((SELECT 1 FROM sessions s WHERE s.rowid >= p.r ORDER BY s.rowid "
                "LIMIT 1)) FROM p",
                samples,
            ).fetchall()
            if time.perf_counter() - t0 < _WARM_COLD_PROBE_S:
                return []
        except (apsw.Error, StoreError):
            return []
        edges = [*samples, top + 1]
        sql = f"SELECT count({column}) FROM sessions WHERE rowid >= ? AND rowid < ?"
        return self._start_warmers([[(sql, (lo, hi))] for lo, hi in zip(edges, edges[1:], strict=False)])

    def _indexed_first(self, table: str, column: str) -> bool:
        """Some index of `table` starts with `column` (a scan of it reads that index, not rows)."""
        return bool(
            self._scalar(
                "SELECT 1 FROM sqlite_master m, pragma_index_info(m.name) i "
                "WHERE m.type = 'index' AND m.tbl_name = ? AND i.seqno = 0 AND i.name = ?",
                (table, column),
                default=None,
            )
        )

    def _start_warmers(self, jobs: list[list[tuple[str, tuple[Any, ...]]]]) -> list[threading.Thread]:
        threads = [
            threading.Thread(target=self._warm_run, args=(job,), name="hermes-warm-read", daemon=True)
            for job in jobs
        ]
        for t in threads:
            t.start()
        return threads

    def _warm_run(self, statements: list[tuple[str, tuple[Any, ...]]]) -> None:
        """Run `statements` on a read-only connection of this thread's own, only so that the
        pages they read are in the OS page cache afterwards (thread body; never raises)."""
        try:
            conn = open_connection(self.db_path, read_only=True)
        except (StoreError, apsw.Error, OSError):
            return
        try:
            # The pages are wanted in the OS cache, not in this short-lived connection's own.
            conn.execute("PRAGMA cache_size = 16")
            for sql, args in statements:
                conn.execute(sql, args).fetchall()
        except apsw.Error:
            pass
        finally:
            with contextlib.suppress(apsw.Error):
                conn.close()

    def _row_select(self) -> str:
        cols = [f"s.{c}" if self.has_column("sessions", c) else f"NULL AS {c}" for c in _ROW_COLUMNS]
        cols += [f"s.{c}" if self.has_column("sessions", c) else f"0 AS {c}" for c in ROW_FLAGS]
        # The list shows a title or else the preview: reading the first user message (a random
        # page of `messages` per row) is only worth it for untitled sessions.
        preview = (
            f"CASE WHEN COALESCE(s.title, '') = '' THEN {self._preview_sql()} ELSE '' END"
            if self.has_column("sessions", "title")
            else self._preview_sql()
        )
        return (
            ", ".join(cols)
            + f", {preview} AS _preview_raw, {last_active_sql(self, 's')} AS last_active, "
            + f"{Q.edge_kind_case('s', Q.resets_known(self))} AS edge_kind, "
            + "(SELECT COUNT(*) FROM sessions c WHERE c.parent_session_id = s.id) AS child_count"
        )

    def list_rows(self, ids: Sequence[str]) -> list[dict[str, Any]]:
        """One page of list rows, returned in the order of `ids` (missing ids are skipped).

        `preview` (the first user prompt) is filled only for sessions without a title.
        `last_active` follows the file's rule (`chains.last_active_sql`); `unread` is Hermes'
        `session_unread`; `archived`/`hidden`/`pinned` are 0 or 1 (0 where the file has no such
        column); a compression continuation (e.g. the tip a folded list shows) carries
        `lineage_root_id`, the session its chain starts at.
        """
        found: dict[str, dict[str, Any]] = {}
        select = self._row_select()
        for part in chunks(list(ids), 500):
            for row in read_rows(
                self._conn(),
                f"SELECT {select} FROM sessions s WHERE s.id IN ({placeholders(part)})",
                part,
                decode=False,
            ):
                found[row["id"]] = finish_flags(_finish_preview(row))
        continued = [sid for sid, r in found.items() if r.get("edge_kind") == "compression"]
        if continued:
            for sid, root in chain_roots(self, continued).items():
                found[sid]["lineage_root_id"] = root if root != sid else None
        return [found[i] for i in ids if i in found]

    def list_sessions_page(
        self, filter: SessionFilter | None = None, after: tuple[float, str] | None = None, limit: int = 50
    ) -> tuple[list[dict[str, Any]], tuple[float, str] | None]:
        """Pure keyset page by `started_at DESC, id DESC`; returns (rows, key of the next page)."""
        where, params = (filter or SessionFilter()).where(self)
        if after is not None:
            where = (
                where + " AND" if where else " WHERE"
            ) + " (s.started_at < ? OR (s.started_at = ? AND s.id < ?))"
            params += [after[0], after[0], after[1]]
        rows = [
            _finish_preview(r)
            for r in read_rows(
                self._conn(),
                f"SELECT {self._row_select()}, s.started_at AS _key FROM sessions s{where} "
                "ORDER BY s.started_at DESC, s.id DESC LIMIT ?",
                params + [limit],
                decode=False,
            )
        ]
        # The raw `started_at` is the key (the row's own is cleaned to a date or None).
        nxt = (rows[-1]["_key"], rows[-1]["id"]) if len(rows) == limit else None
        for r in rows:
            r.pop("_key", None)
        return rows, nxt

    def distinct_values(self, column: str) -> list[tuple[Any, int]]:
        """Values of `source` or `model` with their session counts, most common first."""
        if column not in ("source", "model", "end_reason", "billing_provider"):
            raise ValueError(f"cannot list values of {column!r}")
        if not self.has_column("sessions", column):
            return []
        warmers = [] if self._indexed_first("sessions", column) else self._warm_for_table_scan(column)
        try:
            return read_tuples(
                self._conn(),
                f"SELECT {column}, COUNT(*) FROM sessions WHERE {column} IS NOT NULL GROUP BY {column} "
                "ORDER BY COUNT(*) DESC, {column}".replace("{column}", column),
            )
        finally:
            for t in warmers:
                t.join()
