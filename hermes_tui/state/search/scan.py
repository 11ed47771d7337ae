"""The LIKE scan: what no index can answer, read from the stored rows.

Unlike upstream, the scan evaluates AND/OR/NOT exactly (`like_where`), honours the visibility
filter, and its snippets carry FTS5's `>>>`/`<<<` markers (`snippets.py`). Today's Hermes' CJK
scan keeps a row holding any token (`any_token_like`). It also fills the ids an interrupted
storage conversion left out of the indexes (`_with_gap`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import apsw

from ..fts_query import OPERATORS, BoolQuery
from ..text import read_rows
from .model import NEWEST_BY_ID_SQL, OLDEST_BY_ID_SQL, Route, SortOrder, as_bound
from .parse import ParsedQuery
from .ranking import RankingMixin
from .snippets import with_marked_snippets
from .sql import ids_between, marked_select, rowids_in

#: A LIKE condition on messages `m`: its SQL, its parameters and the terms its snippets mark.
LikeCondition = tuple[str, list[Any], list[str]]


def any_token_like(raw: str) -> LikeCondition | None:
    """Today's Hermes' CJK LIKE scan: a row holding any non-operator token (each as typed, `NOT`
    and implicit ANDs included) in its content, tool name or tool calls."""
    tokens = [t for t in raw.split() if t.upper() not in OPERATORS] or ([raw] if raw else [])
    if not tokens:
        return None
    params: list[Any] = []
    for tok in tokens:
        esc = "%" + tok.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        params += [esc, esc, esc]
    one = (
        "(m.content LIKE ? ESCAPE '\\' OR m.tool_name LIKE ? ESCAPE '\\' OR m.tool_calls LIKE ? ESCAPE '\\')"
    )
    return "(" + " OR ".join([one] * len(tokens)) + ")", params, [t.strip('"') for t in tokens]


def like_where(bq: BoolQuery) -> LikeCondition | None:
    """The LIKE route's condition for a boolean query (AND/OR/NOT evaluated exactly), its
    parameters and the terms to mark; None when the query has no positive term."""
    if not bq.groups:
        return None

    def term_sql(term: str) -> tuple[str, list[str]]:
        esc = "%" + term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        return (
            # COALESCE: NULL LIKE x is NULL, and NOT NULL would drop rows that lack the term.
            "(COALESCE(m.content, '') LIKE ? ESCAPE '\\' OR COALESCE(m.tool_name, '') LIKE ? ESCAPE '\\' "
            "OR COALESCE(m.tool_calls, '') LIKE ? ESCAPE '\\')",
            [esc, esc, esc],
        )

    group_sql: list[str] = []
    params: list[Any] = []
    for must, must_not in bq.groups:
        parts = []
        for t in must:
            s, p = term_sql(t)
            parts.append(s)
            params += p
        for t in must_not:
            s, p = term_sql(t)
            parts.append("NOT " + s)
            params += p
        group_sql.append("(" + " AND ".join(parts) + ")")
    return f"({' OR '.join(group_sql)})", params, bq.terms


def scan_condition(parsed: ParsedQuery) -> LikeCondition | None:
    """The last route's condition for a CJK query: `ParsedQuery.scan_raw` as a boolean query, or
    on today's files any of its tokens (its CJK LIKE scan)."""
    return any_token_like(parsed.scan_raw) if parsed.todays else like_where(parsed.scan_boolean)


class ScanMixin(RankingMixin):
    """LIKE over the rows, newest (or oldest) first, alone or merged with an index's matches."""

    def _unindexed_range(self) -> tuple[int, int] | None:
        """Message ids (lo, hi] the v23 base and trigram indexes do not hold yet: an
        `optimize_fts_storage()` conversion is under way or was interrupted (its rebuild gate)."""
        if not self.layout.base_building:
            return None
        from ..fts_schema import REBUILD_HIGH_WATER, REBUILD_PROGRESS

        meta = dict(
            self._tuples(
                "SELECT key, value FROM state_meta WHERE key IN (?, ?)",
                (REBUILD_HIGH_WATER, REBUILD_PROGRESS),
            )
        )
        if REBUILD_HIGH_WATER not in meta:
            return None
        lo, hi = int(meta.get(REBUILD_PROGRESS) or 0), int(meta[REBUILD_HIGH_WATER])
        return (lo, hi) if hi > lo else None

    def _with_gap(
        self,
        route: Route,
        match: str,
        like: LikeCondition | None,
        gap: tuple[int, int],
        filters: tuple[list[str], list[Any]],
        sort: SortOrder,
        limit: int,
        offset: int,
    ) -> list[dict[str, Any]]:
        """An index's matches merged with LIKE matches among the ids it does not hold yet.

        Newest first (or oldest with `SortOrder.OLDEST`); rank order is not comparable across the
        two, so it is newest first too until the conversion ends. LIKE is a substring match: the
        unconverted part may find more than the index would, never less.
        """

        def indexed(order: SortOrder, want: int) -> list[dict[str, Any]]:
            try:
                return (
                    self._fts_route(route, match, filters, order, want, 0)
                    if self._any_match(route.index, match)
                    else []
                )
            except apsw.SQLError:
                return []

        return self._merged_with_gap(indexed, like, gap, filters, sort, limit, offset)

    def _merged_with_gap(
        self,
        indexed: Callable[[SortOrder, int], list[dict[str, Any]]],
        like: LikeCondition | None,
        gap: tuple[int, int],
        filters: tuple[list[str], list[Any]],
        sort: SortOrder,
        limit: int,
        offset: int,
    ) -> list[dict[str, Any]]:
        """`indexed(order, n)`'s first n rows merged with the LIKE matches among ids (lo, hi]."""
        asc = sort is SortOrder.OLDEST
        want = limit + offset if limit >= 0 else -1
        hits = indexed(SortOrder.OLDEST if asc else SortOrder.NEWEST, want)
        more = self._like_route(like, ids_between(filters, gap[0], gap[1]), want, 0, asc=asc)
        merged = sorted(hits + more, key=lambda r: (as_bound(r["timestamp"]), int(r["id"])), reverse=not asc)
        return merged[offset : offset + limit] if limit >= 0 else merged[offset:]

    def _like_route(
        self,
        cond: LikeCondition | None,
        filters: tuple[list[str], list[Any]],
        limit: int,
        offset: int,
        asc: bool = False,
    ) -> list[dict[str, Any]]:
        """LIKE over the stored rows, newest (or `asc`: oldest) first (`like_where`,
        `any_token_like`: None, no row)."""
        if cond is None:
            return []
        like, params, terms = cond
        where, fparams = filters
        if not asc and limit >= 0:
            # Newest first: walk back from the newest message and stop at the k newest matches
            # (a common CJK character: a few thousand rows), instead of reading every message to
            # sort the matches (13-23 s at 10M whatever the query).
            ids = self._newest_walk(
                "FROM messages m JOIN sessions s ON s.id = m.session_id",
                like,
                params,
                "m.id",
                filters,
                limit + offset,
            )
            if not ids:
                return []
            where, fparams = [*where, rowids_in("m", ids)], [*fparams, json.dumps(ids)]
        sql = (
            marked_select("messages m JOIN sessions s ON s.id = m.session_id")
            + f" WHERE {like}"
            + "".join(" AND " + w for w in where)
            + " "
            + (OLDEST_BY_ID_SQL if asc else NEWEST_BY_ID_SQL)
            + " LIMIT +? OFFSET +?"
        )
        return with_marked_snippets(read_rows(self._conn(), sql, [*params, *fparams, limit, offset]), terms)
