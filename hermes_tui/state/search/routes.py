"""`search()`: the parsed query goes to the first route that can answer it.

Routes, in order: `fts5` (the unicode61 index) for ordinary queries; for CJK queries `fts_cjk`
(bigram index, when it is built and the query has no lone CJK character), then `trigram`
(every CJK token ≥ 3 characters), then the side index, then `like_scan`. A Latin miss is retried
(`fallback.py` on v23 files, `_todays_latin` on files of today's Hermes). No query raises: the
worst case is `[]`.

Files of today's Hermes (schema v24+) are searched by its rules, the v31 writer's
`hermes_state_search.py`: its sanitizer, hidden display rows never found, a tool-role search read
from the rows, a Latin miss retried as substrings (cjk, trigram) then as any of its words, the
CJK LIKE scan for any token, newest first (docs/store-api.md, Search).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any, NamedTuple

import apsw

from .. import sql_fragments as Q
from ..core import placeholders
from ..fts_query import expand_prefixes
from . import parse as P  # (read as P.parse_query: bench --search-cold swaps it)
from .fallback import FallbackMixin
from .model import (
    CJK_SIDE,
    CJK_SIDE_PARTIAL,
    FTS5,
    FTS_CJK,
    INTERRUPTED,
    LIKE_SCAN,
    TRIGRAM,
    Filters,
    Route,
    SearchOutcome,
    SortOrder,
    store_errors,
)
from .parse import ParsedQuery
from .scan import like_where, scan_condition

#: The filters' SQL (`_search_filters`) and about what share of messages they keep (`_filter_share`).
Scope = tuple[Filters, float]


class Page(NamedTuple):
    """What every route reads: the query, the page asked for, and the filters (built once a
    route needs them: a query with no hit never builds them)."""

    parsed: ParsedQuery
    order: SortOrder
    limit: int
    offset: int
    tool_role: bool
    scope: Callable[[], Scope]


RESULT_KEYS = (
    "id",
    "session_id",
    "role",
    "snippet",
    "timestamp",
    "tool_name",
    "source",
    "model",
    "session_started",
)


class RoutesMixin(FallbackMixin):
    """`search()` and the route choice it shares with `search_count()`."""

    def _search_filters(
        self,
        source_filter: list[str] | None,
        exclude_sources: list[str] | None,
        role_filter: list[str] | None,
        include_inactive: bool,
    ) -> tuple[list[str], list[Any]]:
        where: list[str] = []
        params: list[Any] = []
        if not include_inactive and self.has_column("messages", "active"):
            comp = " OR m.compacted = 1" if self.has_column("messages", "compacted") else ""
            where.append(f"(m.active = 1{comp})")
        if Q.todays_hermes(self) and self.has_column("messages", "display_kind"):
            # Model-facing scaffolding the person never saw: today's Hermes never finds it.
            where.append("COALESCE(m.display_kind, '') <> 'hidden'")
        if source_filter is not None:
            where.append(f"s.source IN ({placeholders(source_filter)})")
            params += list(source_filter)
        if exclude_sources is not None:
            where.append(f"s.source NOT IN ({placeholders(exclude_sources)})")
            params += list(exclude_sources)
        if role_filter:
            where.append(f"m.role IN ({placeholders(role_filter)})")
            params += list(role_filter)
        return where, params

    @store_errors
    def search(
        self,
        query: str,
        source_filter: list[str] | None = None,
        exclude_sources: list[str] | None = None,
        role_filter: list[str] | None = None,
        limit: int = 20,
        offset: int = 0,
        sort: str | None = None,
        include_inactive: bool = False,
        context: bool = True,
    ) -> SearchOutcome:
        """(+) `search_messages` plus the route that answered.

        `context=False` leaves each result's `context` empty: three index reads per hit that a
        caller showing only snippets (the browser while typing) does not need.
        """
        parsed = self._parse_query(query)
        if parsed is None:
            return SearchOutcome()
        if parsed.rejected:
            return SearchOutcome(query=parsed.q, route=FTS5.name)
        args = (parsed, source_filter, exclude_sources, role_filter, limit, offset, sort, include_inactive)
        if parsed.cjk:  # (the side index is ATTACHed on first use, which no transaction allows)
            return self._search_parsed(*args, context=context)
        # One read transaction for all its statements: each would otherwise take and drop the WAL
        # read lock (5-8 µs of a 30 µs search with a few hits, on a busy machine).
        try:
            with self._conn():
                out = self._search_parsed(*args, context=context)
        except apsw.InterruptError:  # (as inside: an interrupted search answers nothing)
            return SearchOutcome(query=parsed.q, route=INTERRUPTED.name)
        return out

    def _parse_query(self, query: Any) -> ParsedQuery | None:
        """`query` as `search()` and `search_count()` read it, by the rules of the file's writer;
        None where nothing is searched: not text, blank, or a store without a message index."""
        if not isinstance(query, str) or not query.strip() or self.layout.kind == "none":
            return None
        return P.parse_query(query, Q.todays_hermes(self))

    def _search_parsed(
        self,
        parsed: ParsedQuery,
        source_filter: list[str] | None,
        exclude_sources: list[str] | None,
        role_filter: list[str] | None,
        limit: int,
        offset: int,
        sort: str | None,
        include_inactive: bool,
        context: bool,
    ) -> SearchOutcome:
        """The route choice: today's tool-role scan, the CJK routes, or a Latin query's (v23's or
        today's Hermes'); then the snippets and each hit's context."""
        order = SortOrder.parse(sort)

        def scope() -> Scope:
            """The filters' SQL and share, built once a route needs them (no-hit queries do not)."""
            share = (
                self._filter_share(source_filter, exclude_sources, role_filter)
                if order is SortOrder.RANK
                else 1.0
            )
            return self._search_filters(source_filter, exclude_sources, role_filter, include_inactive), share

        tool_role = "tool" in (role_filter or ())
        page = Page(parsed, order, limit, offset, tool_role, scope)
        out = SearchOutcome(query=parsed.q, route="")
        try:
            if parsed.todays and tool_role:
                # Today's Hermes indexes only a prefix of a tool row: it reads the rows, newest first.
                filters, _share = scope()
                like = like_where(parsed.boolean)
                out.results = self._like_route(like, filters, limit, offset, asc=order is SortOrder.OLDEST)
                out.route = LIKE_SCAN.name
            elif parsed.cjk:
                self._search_cjk(out, page, parsed.wants_unindexed(source_filter))
            elif parsed.todays:
                self._todays_latin(out, page)
            elif not self._search_latin(out, page):
                return SearchOutcome(query=parsed.q, route=FTS5.name)  # FTS5 rejects it (upstream: `[]`)
            self._flatten_snippets(out.results, parsed)
        except apsw.InterruptError:
            return SearchOutcome(query=parsed.q, route=INTERRUPTED.name)
        contexts = self._contexts([r["id"] for r in out.results]) if context else {}
        for r in out.results:
            r["context"] = contexts.get(r["id"], [])
        out.results = [{k: r.get(k) for k in RESULT_KEYS} | {"context": r["context"]} for r in out.results]
        return out

    def _search_cjk(
        self,
        out: SearchOutcome,
        page: Page,
        unindexed: bool,
    ) -> None:
        """A CJK query: the first CJK index that runs (`_cjk_routes`), else the side index, else
        the LIKE scan (on today's files: any token, newest first whatever the order asked)."""
        parsed, order, limit, offset, tool_role, scope = page
        filters, share = scope()
        gap = self._unindexed_range()
        for route in self._cjk_routes(
            parsed, order is SortOrder.RANK, tool_role, self._cjk_ready(), unindexed
        ):
            try:
                if gap and route is TRIGRAM:
                    like = like_where(parsed.cjk_boolean)
                    out.results = self._with_gap(
                        route, parsed.cjk_match, like, gap, filters, order, limit, offset
                    )
                else:
                    out.results = self._fts_route(
                        route, parsed.cjk_match, filters, order, limit, offset, share=share
                    )
                out.route = route.name
                return
            except apsw.SQLError:
                out.route = ""
        if parsed.todays:
            order = SortOrder.NEWEST
        reach = self._side_reach() if self._side_eligible(parsed, tool_role) else None
        if reach is not None:
            try:
                if reach[0] >= reach[1]:
                    out.results = self._side_route(parsed, filters, order, limit, offset)
                    out.route = CJK_SIDE.name
                else:
                    out.results = self._side_with_gap(parsed, reach, filters, order, limit, offset)
                    out.route = CJK_SIDE_PARTIAL.name
                return
            except apsw.SQLError:
                out.route = ""
        out.results = self._like_route(scan_condition(parsed), filters, limit, offset)
        out.route = LIKE_SCAN.name

    def _search_latin(
        self,
        out: SearchOutcome,
        page: Page,
    ) -> bool:
        """A Latin query on a v23 (or older) file: the unicode61 index, probed first together
        with stand-ins for the v23 retries; with no row, the retries (`fallback.py`). What the
        probes learn is kept per query until a commit (`_query_facts`). False: FTS5 rejects it."""
        parsed, order, limit, offset, tool_role, scope = page
        q = parsed.q
        cjk_ready = self._cjk_ready()
        out.route = FTS5.name
        retry = not tool_role and limit != 0
        facts = self._query_facts(q, cjk_ready)
        memo = self._memo

        def routes() -> list[tuple[Route, str]]:
            """The v23 retries (asked by the probe's stand-ins and the retry itself)."""
            return memo(facts, "routes", lambda: self._latin_fallback_routes(parsed, cjk_ready))

        tri = memo(facts, "tri", lambda: self._word_on_trigram(parsed, cjk_ready)) if retry else None
        # What stands for the retries in the probe: a plain word's trigram phrase, or for
        # several words the longest one alone in each retry index.
        stand_ins: tuple[tuple[str, str], ...] = (
            ((tri,) if tri else memo(facts, "longest", lambda: self._longest_probes(routes())))
            if retry
            else ()
        )
        # A prefix probes as its expanded terms: the same rows, without merging every
        # matching doclist (37 of 40 ms of a newest-first `deploy*` at 1M).
        expanded = (
            memo(facts, "expanded", lambda: expand_prefixes(q, self._prefix_terms) or q) if "*" in q else q
        )
        found = memo(facts, ("found", stand_ins), lambda: self._probe_first(expanded, stand_ins))
        if found is None:
            return False
        n, stood = found
        gap = self._unindexed_range()
        if gap:  # an interrupted conversion: the unconverted ids are read with LIKE
            like = like_where(parsed.boolean)
            out.results = self._with_gap(FTS5, q, like, gap, scope()[0], order, limit, offset)
        elif n:
            filters, share = scope()
            out.results = self._fts_route(
                FTS5, q, filters, order, limit, offset, probed=True, share=share, matches=n, expanded=expanded
            )
        if (
            not out.results
            and retry
            and not (
                tri
                and (
                    stood == (False,)
                    or memo(facts, "glued", lambda: self._glued_ids(tri, parsed)) == frozenset()
                )
            )
        ):
            live, probed = memo(facts, "live", lambda: self._live_fallbacks(routes(), None if tri else stood))
            if live:
                filters, share = scope()
                self._latin_fallback(out, parsed, filters, order, limit, offset, live, probed, share)
        return True

    def _todays_latin(
        self,
        out: SearchOutcome,
        page: Page,
    ) -> None:
        """A Latin query by today's Hermes' routes: the unicode61 index; with no row, the cjk then
        the trigram index (every token of 3+ characters) as a substring match of each token; with
        still none, the index again with any of the words (`or_relaxed`)."""
        parsed, order, limit, offset, tool_role, scope = page
        q = parsed.q
        out.route = FTS5.name
        expanded = expand_prefixes(q, self._prefix_terms) or q if "*" in q else q
        found = self._probe_first(expanded, ())
        if found is None:  # FTS5 rejects the query: `[]`, as upstream
            return
        filters, share = scope()
        gap = self._unindexed_range()
        if gap:
            out.results = self._with_gap(
                FTS5, q, like_where(parsed.boolean), gap, filters, order, limit, offset
            )
        elif found[0]:
            out.results = self._fts_route(
                FTS5,
                q,
                filters,
                order,
                limit,
                offset,
                probed=True,
                share=share,
                matches=found[0],
                expanded=expanded,
            )
        if out.results or limit == 0:
            return
        retries = [FTS_CJK] if self._cjk_ready() else []
        if self.layout.has_trigram and parsed.trigram_ok:
            retries.append(TRIGRAM)
        for route in retries:
            try:
                results = self._fts_route(
                    route, parsed.retry_match, filters, order, limit, offset, share=share
                )
            except apsw.SQLError:
                continue
            if results:
                out.results, out.route = results, route.name
                return
        if parsed.relaxed is not None:
            with contextlib.suppress(apsw.SQLError):
                out.results = self._fts_route(
                    FTS5, parsed.relaxed, filters, order, limit, offset, share=share
                )

    def _cjk_ready(self) -> bool:
        lay = self.layout
        return lay.has_cjk and not lay.cjk_stale and not lay.cjk_building and self._cjk_impl is not None

    def _cjk_routes(
        self, parsed: ParsedQuery, ranked: bool, tool_role: bool, cjk_ready: bool, unindexed: bool = False
    ) -> list[Route]:
        """The index routes to try, in order, for a CJK query (the first that runs answers);
        `unindexed`: the query wants rows those indexes leave out (today's Hermes' cron and
        sub-agent sources), so none."""
        if unindexed:
            return []
        lay = self.layout
        routes: list[Route] = []
        if cjk_ready and not tool_role and not parsed.cjk_lone:
            routes.append(FTS_CJK)
        if lay.has_trigram and parsed.cjk_trigram and not (tool_role and lay.kind == "v23"):
            # Ranking scores every match: one trigram doclist per 3 characters is cheaper
            # than the bigram phrase's position lists, and it is upstream's own route.
            routes.insert(0 if ranked else len(routes), TRIGRAM)
        return routes

    @staticmethod
    def _side_eligible(parsed: ParsedQuery, tool_role: bool) -> bool:
        """Only CJK-bearing rows are in the side index (`ParsedQuery.side_eligible`), and no tool
        row of today's Hermes."""
        return not tool_role and parsed.side_eligible
