"""Listing sessions: upstream's `list_sessions_rich`/`session_count`, and the browser's paging.

The browser's list must stay instant at 100k+ sessions. `session_order()` runs one query that
returns only the ordered ids matching a filter (a few MB at 100k sessions, never the rows);
`list_rows()` then fetches one screen of rows by id. The list therefore knows its exact length
and can jump anywhere in O(1) — no OFFSET scans and no per-page re-sorting by last activity
(which has no index: it is `MAX(messages.timestamp)` per session).
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import apsw

from ..safe_text import as_text
from . import sql_fragments as Q
from .connection import open_connection
from .core import _Core, chunks, placeholders
from .errors import StoreError
from .sessions import SESSION_NUMBERS, SESSION_TIMESTAMPS
from .text import TS_MAX, clean_row, num_sql, read_rows, read_tuples, ts_sql

# Cut in SQL (a 10 MB prompt never leaves SQLite) with its type kept: a BLOB comes back as
# bytes and `_finish_preview` decodes it; newlines are folded in Python (REPLACE would copy the
# whole value first, and turn a BLOB into TEXT that may not be UTF-8).
_PREVIEW_SQL = (
    "COALESCE((SELECT SUBSTR(m.content, 1, 63) FROM messages m "
    "WHERE m.session_id = s.id AND m.role = 'user' AND m.content IS NOT NULL ORDER BY m.timestamp, "
    "m.id LIMIT 1), '')"
)
# Only timestamps usable as dates count (a text or 1e300 `timestamp` would otherwise be the
# MAX forever); the range is a bound on the (session_id, timestamp) index, so this is still
# one index seek per session.
_TS_RANGE = f"BETWEEN 0 AND {TS_MAX}"
_LAST_ACTIVE_SQL = (
    "COALESCE((SELECT MAX(m2.timestamp) FROM messages m2 WHERE m2.session_id = s.id AND "
    f"m2.timestamp {_TS_RANGE}), "
    f"{ts_sql('s.started_at')})"
)

# The same value for `session_order`, written so that the statement reads no `sessions` row:
# the ids (and rowids) come from the small `id` index (`sqlite_autoindex_sessions_1`, in every
# Hermes file) and `started_at` is looked up by rowid only for a session with no usable message
# timestamp (COALESCE evaluates its second argument only then). Scanning the table instead read
# every session row, scattered across the whole file: on a cold 1M-message / 100k-session file
# that was 20 MB of random reads before the first message-index seek.
_LAST_ACTIVE_ORDER_SQL = (
    "COALESCE((SELECT MAX(m2.timestamp) FROM messages m2 WHERE m2.session_id = s.id AND "
    f"m2.timestamp {_TS_RANGE}), "
    f"(SELECT {ts_sql('s3.started_at')} FROM sessions s3 WHERE s3.rowid = s.rowid))"
)

ORDERS = ("last_active", "started", "messages", "tokens", "cost")

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
    "archived",
    "billing_provider",
    "cwd",
)


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


@dataclass(frozen=True)
class SessionFilter:
    """What the browser's list shows. Empty tuples mean "no restriction"."""

    sources: tuple[str, ...] = ()
    models: tuple[str, ...] = ()
    started_after: float | None = None
    started_before: float | None = None
    text: str | None = None
    include_children: bool = True
    include_archived: bool = True

    def where(self, db: _Core) -> tuple[str, list[Any]]:
        clauses: list[str] = []
        params: list[Any] = []
        if self.sources:
            clauses.append(f"s.source IN ({placeholders(self.sources)})")
            params += list(self.sources)
        if self.models:
            clauses.append(f"s.model IN ({placeholders(self.models)})")
            params += list(self.models)
        if self.started_after is not None:
            clauses.append("s.started_at >= ?")
            params.append(self.started_after)
        if self.started_before is not None:
            clauses.append("s.started_at < ?")
            params.append(self.started_before)
        if self.text:
            needle = "%" + Q.like_escape(self.text.strip().lower()) + "%"
            title = "LOWER(COALESCE(s.title, ''))" if db.has_column("sessions", "title") else "''"
            clauses.append(f"({title} LIKE ? ESCAPE '\\' OR LOWER(s.id) LIKE ? ESCAPE '\\')")
            params += [needle, needle]
        if not self.include_children:
            clauses.append(Q.listable("s"))
            clauses.append(f"{Q.delegate_from('s')} IS NULL")
        if not self.include_archived and db.has_column("sessions", "archived"):
            clauses.append("s.archived = 0")
        return (" WHERE " + " AND ".join(clauses)) if clauses else "", params


@dataclass(frozen=True)
class SessionOrder:
    """The ordered ids matching a filter: the browser's virtual list indexes into this."""

    filter: SessionFilter
    order: str
    ids: list[str] = field(repr=False)
    #: With `session_order(with_keys=True)`: the value each id was sorted by (aligned with `ids`;
    #: None = unknown, sorted last), so a merge of several stores needs no second query.
    keys: list[float | int | None] | None = field(default=None, repr=False)

    def __len__(self) -> int:
        return len(self.ids)


def order_key_sql(order: str) -> str:
    """The SQL expression (over `sessions s`) that `session_order` sorts `order` by, `DESC`
    with `s.id DESC` and None last; the live list re-keys changed sessions with the same one."""
    if order == "last_active":
        # One MAX seek per session on the (session_id, timestamp) index: at 1M messages it beat
        # a GROUP BY over the whole index with long (91 vs 332 ms) and short sessions alike.
        return _LAST_ACTIVE_ORDER_SQL
    return {
        "started": ts_sql("s.started_at"),  # unknown starts last, not text first
        # Numbers only: text in a counter would otherwise order before every number.
        "messages": num_sql("s.message_count"),
        "tokens": f"{num_sql('s.input_tokens')} + {num_sql('s.output_tokens')}",
        "cost": f"CASE WHEN typeof(s.actual_cost_usd) IN ('integer', 'real') THEN s.actual_cost_usd "
        f"ELSE {num_sql('s.estimated_cost_usd')} END",
    }[order]


@dataclass(frozen=True)
class OrderHead:
    """The first ids of an order, read without computing the whole order
    (`session_order_head`). `exact`: certainly the order's first ids (else very likely)."""

    ids: list[str]
    exact: bool


def _as_number(value: Any) -> float:
    return float(value) if isinstance(value, int | float) else 0.0


class ListingMixin(_Core):
    # ------------------------------------------------------------ upstream API
    def _base_filters(
        self,
        source: str | None,
        exclude_sources: Sequence[str] | None,
        cwd_prefix: str | None,
        min_message_count: int,
        include_archived: bool,
        archived_only: bool,
        listable_only: bool,
    ) -> tuple[list[str], list[Any]]:
        where: list[str] = []
        params: list[Any] = []
        if listable_only:
            where += [Q.listable("s"), f"{Q.delegate_from('s')} IS NULL"]
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
        return where, params

    def _session_cols(self, compact: bool) -> str:
        if not compact:
            return "s.*"
        return ", ".join(f"s.{c}" for c in sorted(self.columns("sessions")) if c != "system_prompt")

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
    ) -> list[dict[str, Any]]:
        """Sessions with `preview` and `last_active`, as 0.19.0 lists them (tips projected)."""
        where, params = self._base_filters(
            source,
            exclude_sources,
            cwd_prefix,
            min_message_count,
            include_archived,
            archived_only,
            not include_children,
        )
        where_sql = ("WHERE " + " AND ".join(where)) if where else ""
        sel = self._session_cols(compact_rows)
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
            last_msg = (
                f"(SELECT MAX(m.timestamp) FROM messages m WHERE m.session_id = cur_id AND "
                f"m.timestamp {_TS_RANGE})"
            )
            sql = f"""
                WITH RECURSIVE chain(root_id, cur_id) AS (
                    SELECT s.id, s.id FROM sessions s {where_sql}
                    UNION ALL
                    SELECT c.root_id, child.id FROM chain c
                    JOIN sessions parent ON parent.id = c.cur_id
                    JOIN sessions child ON child.parent_session_id = c.cur_id
                    WHERE parent.end_reason = 'compression'
                      AND {Q.BRANCHED_FROM.format(a="child")} IS NULL
                      AND {Q.DELEGATE_FROM.format(a="child")} IS NULL
                      AND COALESCE(child.source, '') != 'tool'),
                chain_max AS (
                    SELECT root_id, MAX(COALESCE(
                        {last_msg},
                        (SELECT {ts_sql("ss.started_at")} FROM sessions ss WHERE ss.id = cur_id))) AS eff
                    FROM chain GROUP BY root_id)
                SELECT {sel}, {_PREVIEW_SQL} AS _preview_raw, {_LAST_ACTIVE_SQL} AS last_active,
                       COALESCE(cm.eff, {ts_sql("s.started_at")}) AS _eff
                FROM sessions s LEFT JOIN chain_max cm ON cm.root_id = s.id
                {outer_sql}
                ORDER BY _eff DESC, s.started_at DESC, s.id DESC LIMIT ? OFFSET ?"""
            all_params = params + params + extra + [limit, offset]
        else:
            sql = (
                f"SELECT {sel}, {_PREVIEW_SQL} AS _preview_raw, {_LAST_ACTIVE_SQL} AS last_active "
                f"FROM sessions s {where_sql} ORDER BY s.started_at DESC LIMIT ? OFFSET ?"
            )
            all_params = params + [limit, offset]
        rows = []
        for row in read_rows(self._conn(), sql, all_params, decode=False):
            row.pop("_eff", None)
            rows.append(_finish_preview(row))
        if project_compression_tips and not include_children:
            rows = [self._project_tip(r, compact_rows) for r in rows]
        return rows

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
        merged["_lineage_root_id"] = row["id"]
        return merged

    def _rich_row(self, session_id: str, compact: bool = False) -> dict[str, Any] | None:
        rows = read_rows(
            self._conn(),
            f"SELECT {self._session_cols(compact)}, {_PREVIEW_SQL} AS _preview_raw, "
            f"{_LAST_ACTIVE_SQL} AS last_active "
            "FROM sessions s WHERE s.id = ?",
            (session_id,),
            decode=False,
        )
        return _finish_preview(rows[0]) if rows else None

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
        """`sessions.*` + `last_active`, most recently used first (what `export_all` walks)."""
        where = "WHERE s.source = ? " if source else ""
        params: list[Any] = [source] if source else []
        rows = read_rows(
            self._conn(),
            f"SELECT s.*, COALESCE(m.last_active, {ts_sql('s.started_at')}) AS last_active FROM sessions s "
            "LEFT JOIN (SELECT session_id, MAX(timestamp) AS last_active FROM messages "
            f"WHERE timestamp {_TS_RANGE} GROUP BY session_id) m "
            f"ON m.session_id = s.id {where}"
            "ORDER BY last_active DESC, s.started_at DESC, s.id DESC LIMIT ? OFFSET ?",
            params + [limit, offset],
        )
        return [clean_row(r, SESSION_NUMBERS, SESSION_TIMESTAMPS) for r in rows]

    # ------------------------------------------------------------ browser paging
    def session_order(
        self, filter: SessionFilter | None = None, order: str = "last_active", with_keys: bool = False
    ) -> SessionOrder:
        """Ids matching `filter`, ordered for display (ties broken by id, so the order is total).

        `with_keys` also returns each id's order key (`SessionOrder.keys`), computed by the same
        expression in the same statement, so the keys are exactly what was sorted by (a
        federation's merge reads them instead of re-reading rows block by block).
        """
        flt = filter or SessionFilter()
        if order not in ORDERS:
            raise ValueError(f"unknown order {order!r}; expected one of {', '.join(ORDERS)}")
        where, params = flt.where(self)
        warmers: list[threading.Thread] = []
        if order == "last_active" and not where:
            warmers = self._warm_for_order()
        key = order_key_sql(order)
        # One row holding every id as a JSON array: 100k ids come back in a single step, not 100k
        # steps that each re-take the GIL (which the UI thread holds while it starts: 2x slower).
        try:
            if not with_keys:
                sql = f"SELECT s.id FROM sessions s{where} ORDER BY {key} DESC, s.id DESC"
                packed = self._scalar(f"SELECT json_group_array(id) FROM ({sql})", params, default="[]")
                return SessionOrder(flt, order, json.loads(packed))
            # The keys ride along as a second array of the same ordered rows (SQLite's JSON writes a
            # REAL with enough digits to read back the same double, so ties stay ties).
            sql = f"SELECT s.id AS id, {key} AS k FROM sessions s{where} ORDER BY k DESC, s.id DESC"
            rows = self._tuples(f"SELECT json_group_array(id), json_group_array(k) FROM ({sql})", params)
            ids_json, keys_json = rows[0] if rows else ("[]", "[]")
            return SessionOrder(flt, order, json.loads(ids_json or "[]"), keys=json.loads(keys_json or "[]"))
        finally:
            for t in warmers:  # no reader is left holding a snapshot of the file after we return
                t.join()

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
        the whole order) for the orders without an index to walk, a title/id text filter, and
        when fewer than `limit` sessions were found (a narrow filter or a small store).
        """
        flt = filter or SessionFilter()
        if order not in ORDERS:
            raise ValueError(f"unknown order {order!r}; expected one of {', '.join(ORDERS)}")
        if limit <= 0 or flt.text:  # a title/id substring matches anywhere: no walk finds it early
            return None
        where, params = flt.where(self)
        if order == "started":
            usable = f"s.started_at {_TS_RANGE}"  # the index's range: numbers only, NULLs out
            cond = (where + " AND " + usable) if where else " WHERE " + usable
            ids = [
                r[0]
                for r in self._tuples(
                    f"SELECT s.id FROM sessions s{cond} ORDER BY s.started_at DESC, s.id DESC LIMIT ?",
                    [*params, limit],
                )
            ]
            # Fewer than `limit` usable starts: the rest (unknown starts) would follow in an
            # order this walk did not read; a store that small orders in a few ms anyway.
            return OrderHead(ids, exact=True) if len(ids) == limit else None
        if order != "last_active":
            return None
        conn = self._conn()
        candidates: dict[str, None] = {}
        for (sid,) in self._tuples(
            f"SELECT s.id FROM sessions s WHERE s.started_at {_TS_RANGE} ORDER BY s.started_at DESC LIMIT ?",
            [limit],
        ):
            candidates[sid] = None
        keyed: list[tuple[str, Any]] = []
        cursor: int | None = None
        scanned, batch = 0, max(256, 8 * limit)
        key_sql = (
            f"SELECT s.id, {_LAST_ACTIVE_ORDER_SQL} AS k FROM sessions s WHERE s.id IN "
            "(SELECT value FROM json_each(?))" + (" AND " + where[len(" WHERE ") :] if where else "")
        )
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
                keyed += self._tuples(key_sql, [json.dumps(fresh), *params])
            if done or len(keyed) >= limit:
                break
            cursor = int(rows[-1][0])
            batch = min(batch * 2, 8192)
        if len(keyed) < limit:  # a narrow filter, or a store small enough to order whole at once
            return None
        # `session_order` sorts `key DESC, id DESC` with NULL (no usable date) last.
        keyed.sort(key=lambda r: (r[1] is not None, _as_number(r[1]), r[0]), reverse=True)
        return OrderHead([sid for sid, _k in keyed[:limit]], exact=False)

    def _warm_for_order(self) -> list[threading.Thread]:
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
        jobs = []
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
        # The list shows a title or else the preview: reading the first user message (a random
        # page of `messages` per row) is only worth it for untitled sessions.
        preview = (
            f"CASE WHEN COALESCE(s.title, '') = '' THEN {_PREVIEW_SQL} ELSE '' END"
            if self.has_column("sessions", "title")
            else _PREVIEW_SQL
        )
        return (
            ", ".join(cols)
            + f", {preview} AS _preview_raw, {_LAST_ACTIVE_SQL} AS last_active, "
            + f"{Q.edge_kind_case('s')} AS edge_kind, "
            + "(SELECT COUNT(*) FROM sessions c WHERE c.parent_session_id = s.id) AS child_count"
        )

    def list_rows(self, ids: Sequence[str]) -> list[dict[str, Any]]:
        """One page of list rows, returned in the order of `ids` (missing ids are skipped).

        `preview` (the first user prompt) is filled only for sessions without a title.
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
                found[row["id"]] = _finish_preview(row)
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
