"""`search_count()`: how many results `search()` pages through, by the same routes.

Counting stops at a cap (`(cap, False)`: "at least cap") and never scores a match.
"""

from __future__ import annotations

from typing import Any

import apsw

from .. import sql_fragments as Q
from ..fts_query import OPERATORS, expand_prefixes, quote_tokens
from . import parse as P
from .fallback import glued_text
from .model import FTS5, FTS_CJK, TRIGRAM, SortOrder, store_errors
from .parse import UNINDEXED_SOURCES, latin_terms, or_relaxed, strip_cjk_wildcards, trigram_eligible
from .routes import RoutesMixin
from .scan import any_token_like
from .sql import ids_between


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
        if not isinstance(query, str) or not query.strip() or self.layout.kind == "none":
            return 0, True
        todays = Q.todays_hermes(self)
        parsed = P.parse_query(query, todays)
        if parsed is None:
            return 0, True
        q = parsed.q
        cap = max(int(cap), 0)
        ranked = SortOrder.parse(sort) is SortOrder.RANK
        filters = self._search_filters(source_filter, exclude_sources, role_filter, include_inactive)
        tool_role = "tool" in (role_filter or ())
        cjk_ready = self._cjk_ready()
        rows_from = "FROM messages m JOIN sessions s ON s.id = m.session_id"
        try:
            if todays and tool_role:
                like = self._like_where(q)
                return self._count_sql(rows_from, like[0], like[1], filters, cap) if like else (0, True)
            if parsed.cjk:
                raw = (strip_cjk_wildcards(q) if todays else q).strip('"').strip()
                gap = self._unindexed_range()
                unindexed = todays and bool(UNINDEXED_SOURCES & set(source_filter or ()))
                for route in self._cjk_routes(raw, ranked, tool_role, cjk_ready, unindexed):
                    try:
                        counted = self._count_fts(route.index, quote_tokens(raw), filters, cap)
                    except apsw.SQLError:
                        continue
                    return (
                        self._count_gap(raw, gap, filters, cap, counted)
                        if gap and route is TRIGRAM
                        else counted
                    )
                if todays:
                    raw = " OR ".join(t for t in raw.split() if t.upper() not in OPERATORS) or raw
                reach = self._side_reach() if self._side_eligible(raw, tool_role) else None
                if reach is not None:
                    try:
                        self._attach_side()
                        if reach[0] >= reach[1]:
                            return self._count_fts(
                                "cjk_side.side_fts", quote_tokens(raw), filters, cap, alias="f"
                            )
                        held = self._count_fts(
                            "cjk_side.side_fts",
                            quote_tokens(raw),
                            ids_between(filters, None, reach[0]),
                            cap,
                            alias="f",
                        )
                        return self._count_gap(raw, reach, filters, cap, held)
                    except apsw.SQLError:
                        pass
                like = any_token_like(raw) if todays else self._like_where(raw)
                if like is None:
                    return 0, True
                sql, params, _terms = like
                return self._count_sql(rows_from, sql, params, filters, cap)
            found = self._probe([(FTS5.index, expand_prefixes(q, self._prefix_terms) or q)])
            if found is None:  # FTS5 rejects the query: search() answers `[]`
                return 0, True
            gap = self._unindexed_range()
            if gap:
                indexed = self._count_fts(FTS5.index, q, filters, cap) if found[0] else (0, True)
                return self._count_gap(q, gap, filters, cap, indexed)
            if found[0]:
                n, exact = self._count_fts(FTS5.index, q, filters, cap)
                if n or not exact:
                    return n, exact
            if todays:
                return self._count_todays_retries(q, filters, cap, cjk_ready)
            if tool_role:
                return 0, True
            live, _probed = self._live_fallbacks(self._latin_fallback_routes(q, cjk_ready))
            for route, quoted in live:
                try:
                    n, exact = self._count_glued(route.index, quoted, latin_terms(q), filters, cap)
                except apsw.SQLError:
                    continue
                if n or not exact:
                    return n, exact
            return 0, True
        except apsw.InterruptError:
            return 0, False

    def _count_todays_retries(
        self, q: str, filters: tuple[list[str], list[Any]], cap: int, cjk_ready: bool
    ) -> tuple[int, bool]:
        """`_todays_latin`'s retries counted: the first index that finds a row answers."""
        quoted = quote_tokens(q.strip('"').strip())
        tries = [(FTS_CJK.index, quoted)] if cjk_ready else []
        if self.layout.has_trigram and trigram_eligible(q):
            tries.append((TRIGRAM.index, quoted))
        relaxed = or_relaxed(q)
        if relaxed is not None:
            tries.append((FTS5.index, relaxed))
        for table, match in tries:
            try:
                n, exact = self._count_fts(table, match, filters, cap)
            except apsw.SQLError:
                continue
            if n or not exact:
                return n, exact
        return 0, True

    def _count_gap(
        self,
        raw: str,
        gap: tuple[int, int],
        filters: tuple[list[str], list[Any]],
        cap: int,
        indexed: tuple[int, bool],
    ) -> tuple[int, bool]:
        """`indexed` plus the LIKE matches among the ids an interrupted conversion left out."""
        like = self._like_where(raw)
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
        self, table: str, match: str, terms: list[str], filters: tuple[list[str], list[Any]], cap: int
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
