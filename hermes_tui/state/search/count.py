"""`search_count()`: how many results `search()` pages through, by the same routes.

Counting stops at a cap (`(cap, False)`: "at least cap") and never scores a match.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from functools import partial
from typing import Any

import apsw

from ..fts_query import expand_prefixes
from .fallback import glued_text
from .model import FTS5, FTS_CJK, TRIGRAM, Filters, SortOrder, store_errors
from .parse import ParsedQuery
from .routes import RoutesMixin
from .scan import LikeCondition, like_where, scan_condition
from .sql import ids_between


def first_found(counts: Iterable[Callable[[], tuple[int, bool]]]) -> tuple[int, bool]:
    """The first of a query's retries that finds a row (or stops at the cap) answers, as in
    `search()`; an index that cannot run its MATCH is passed over. None found: `(0, True)`."""
    for count in counts:
        try:
            n, exact = count()
        except apsw.SQLError:
            continue
        if n or not exact:
            return n, exact
    return 0, True


class CountMixin(RoutesMixin):
    """The count of a search, route by route as `search()` chooses."""

    # ------------------------------------------------------------ counting
    @store_errors
    def search_count(
        self,
        query: str,
        source_filter: list[str] | None = None,
        exclude_sources: list[str] | None = None,
        role_filter: list[str] | None = None,
        include_inactive: bool = False,
        cap: int = 10_000,
        sort: str | None = None,
    ) -> tuple[int, bool]:
        """(+) How many messages `search()` with the same arguments pages through: `(n, exact)`.

        The same sanitizer, bounds, routes and filters as `search()` (`sort` only matters for
        CJK queries, whose first index differs by order). Counting stops at `cap`: `(cap, False)`
        means "at least cap". Raises `QueryTooComplex` where `search()` does.
        """
        parsed = self._parse_query(query)
        if parsed is None:
            return 0, True
        cap = max(int(cap), 0)
        filters = self._search_filters(source_filter, exclude_sources, role_filter, include_inactive)
        tool_role = "tool" in (role_filter or ())
        try:
            if parsed.todays and tool_role:
                return self._count_like(like_where(parsed.boolean), filters, cap)
            if parsed.cjk:
                ranked = SortOrder.parse(sort) is SortOrder.RANK
                unindexed = parsed.wants_unindexed(source_filter)
                return self._count_cjk(parsed, filters, cap, ranked, tool_role, unindexed)
            return self._count_latin(parsed, filters, cap, tool_role)
        except apsw.InterruptError:
            return 0, False

    def _count_cjk(
        self,
        parsed: ParsedQuery,
        filters: Filters,
        cap: int,
        ranked: bool,
        tool_role: bool,
        unindexed: bool,
    ) -> tuple[int, bool]:
        """`_search_cjk`'s routes counted: the first CJK index that runs, the side index, the scan."""
        gap = self._unindexed_range()
        for route in self._cjk_routes(parsed, ranked, tool_role, self._cjk_ready(), unindexed):
            try:
                counted = self._count_fts(route.index, parsed.cjk_match, filters, cap)
            except apsw.SQLError:
                continue
            if gap and route is TRIGRAM:
                return self._count_gap(like_where(parsed.cjk_boolean), gap, filters, cap, counted)
            return counted
        reach = self._side_reach() if self._side_eligible(parsed, tool_role) else None
        if reach is not None:
            try:
                self._attach_side()
                if reach[0] >= reach[1]:
                    return self._count_fts("cjk_side.side_fts", parsed.scan_match, filters, cap, alias="f")
                held = self._count_fts(
                    "cjk_side.side_fts",
                    parsed.scan_match,
                    ids_between(filters, None, reach[0]),
                    cap,
                    alias="f",
                )
                return self._count_gap(like_where(parsed.scan_boolean), reach, filters, cap, held)
            except apsw.SQLError:
                pass
        return self._count_like(scan_condition(parsed), filters, cap)

    def _count_latin(
        self, parsed: ParsedQuery, filters: Filters, cap: int, tool_role: bool
    ) -> tuple[int, bool]:
        """A Latin query's count: the unicode61 index, then the retries of the file's writer."""
        q = parsed.q
        found = self._probe([(FTS5.index, expand_prefixes(q, self._prefix_terms) or q)])
        if found is None:  # FTS5 rejects the query: search() answers `[]`
            return 0, True
        gap = self._unindexed_range()
        if gap:
            indexed = self._count_fts(FTS5.index, q, filters, cap) if found[0] else (0, True)
            return self._count_gap(like_where(parsed.boolean), gap, filters, cap, indexed)
        if found[0]:
            n, exact = self._count_fts(FTS5.index, q, filters, cap)
            if n or not exact:
                return n, exact
        cjk_ready = self._cjk_ready()
        if parsed.todays:
            return self._count_todays_retries(parsed, filters, cap, cjk_ready)
        if tool_role:
            return 0, True
        live, _probed = self._live_fallbacks(self._latin_fallback_routes(parsed, cjk_ready))
        return first_found(
            partial(self._count_glued, route.index, quoted, parsed.terms, filters, cap)
            for route, quoted in live
        )

    def _count_like(self, cond: LikeCondition | None, filters: Filters, cap: int) -> tuple[int, bool]:
        """The LIKE scan's rows counted (None: no positive term, no row)."""
        if cond is None:
            return 0, True
        sql, params, _terms = cond
        return self._count_sql(
            "FROM messages m JOIN sessions s ON s.id = m.session_id", sql, params, filters, cap
        )

    def _count_todays_retries(
        self, parsed: ParsedQuery, filters: Filters, cap: int, cjk_ready: bool
    ) -> tuple[int, bool]:
        """`_todays_latin`'s retries counted: the first index that finds a row answers."""
        quoted = parsed.retry_match
        tries = [(FTS_CJK.index, quoted)] if cjk_ready else []
        if self.layout.has_trigram and parsed.trigram_ok:
            tries.append((TRIGRAM.index, quoted))
        if parsed.relaxed is not None:
            tries.append((FTS5.index, parsed.relaxed))
        return first_found(partial(self._count_fts, table, match, filters, cap) for table, match in tries)

    def _count_gap(
        self,
        like: LikeCondition | None,
        gap: tuple[int, int],
        filters: Filters,
        cap: int,
        indexed: tuple[int, bool],
    ) -> tuple[int, bool]:
        """`indexed` plus the LIKE matches among the ids (lo, hi] an index does not hold (an
        interrupted conversion, or the side index while it is built)."""
        if like is None or not indexed[1]:
            return indexed
        sql, params, _terms = like
        n, exact = self._count_sql(
            "FROM messages m JOIN sessions s ON s.id = m.session_id",
            sql,
            params,
            ids_between(filters, gap[0], gap[1]),
            cap - indexed[0],
        )
        return (indexed[0] + n, exact)

    def _count_sql(
        self, source: str, cond: str, params: list[Any], filters: tuple[list[str], list[Any]], cap: int
    ) -> tuple[int, bool]:
        where, fparams = filters
        sql = (
            f"SELECT COUNT(*) FROM (SELECT 1 {source} WHERE {cond}"
            + "".join(" AND " + w for w in where)
            + " LIMIT +?)"
        )
        n = int(self._scalar(sql, [*params, *fparams, cap + 1], default=0))
        return (n, True) if n <= cap else (cap, False)

    def _count_fts(
        self, table: str, match: str, filters: tuple[list[str], list[Any]], cap: int, alias: str | None = None
    ) -> tuple[int, bool]:
        """Filtered matches of one index, at most `cap` + 1 of them joined (no scoring)."""
        name = alias or table
        source = (
            f"FROM {table}{' ' + alias if alias else ''} JOIN messages m ON m.id = {name}.rowid "
            "JOIN sessions s ON s.id = m.session_id"
        )
        col = table.rsplit(".", 1)[-1]
        return self._count_sql(source, f"{name}.{col} MATCH ?", [match], filters, cap)

    # A retry's matches are checked for a term glued to CJK one by one: at most this many per cap.
    GLUED_SCAN_FACTOR = 8

    def _count_glued(
        self, table: str, match: str, terms: Sequence[str], filters: tuple[list[str], list[Any]], cap: int
    ) -> tuple[int, bool]:
        """The v23 retry's count: filtered matches whose term touches a CJK character."""
        where, params = filters
        scan = self.GLUED_SCAN_FACTOR * cap + 64
        rows = self._tuples(
            f"SELECT m.content, m.tool_name, m.tool_calls FROM {table} JOIN messages m ON m.id "
            f"= {table}.rowid "
            f"JOIN sessions s ON s.id = m.session_id WHERE {table} MATCH ?"
            + "".join(" AND " + w for w in where)
            + f" ORDER BY {table}.rowid DESC LIMIT +?",
            [match, *params, scan + 1],
        )
        n = sum(1 for content, tool, calls in rows[:scan] if glued_text(content, tool, calls, terms))
        if n > cap:
            return cap, False
        return n, len(rows) <= scan
