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
from typing import Any

import apsw

from .. import sql_fragments as Q
from ..core import placeholders
from ..fts_query import (
    OPERATORS,
    contains_cjk,
    count_cjk,
    expand_prefixes,
    has_lone_cjk_run,
    parse_bool,
    quote_tokens,
)
from . import parse as P
from .fallback import FallbackMixin
from .model import (
    CJK_SIDE,
    CJK_SIDE_PARTIAL,
    FTS5,
    FTS_CJK,
    INTERRUPTED,
    LIKE_SCAN,
    TRIGRAM,
    Route,
    SearchOutcome,
    SortOrder,
    store_errors,
)
from .parse import UNINDEXED_SOURCES, ParsedQuery, or_relaxed, strip_cjk_wildcards, trigram_eligible

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
        if not isinstance(query, str) or not query.strip() or self.layout.kind == "none":
            return SearchOutcome()
        parsed = P.parse_query(query, Q.todays_hermes(self))
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
        q = parsed.q
        order = SortOrder.parse(sort)

        def scope() -> tuple[tuple[list[str], list[Any]], float]:
            """The filters' SQL and share, built once a route needs them (no-hit queries do not)."""
            share = (
                self._filter_share(source_filter, exclude_sources, role_filter)
                if order is SortOrder.RANK
                else 1.0
            )
            return self._search_filters(source_filter, exclude_sources, role_filter, include_inactive), share

        tool_role = "tool" in (role_filter or ())
        cjk_ready = self._cjk_ready()
        todays = Q.todays_hermes(self)
        out = SearchOutcome(query=q, route="")
        try:
            if todays and tool_role:
                # Today's Hermes indexes only a prefix of a tool row: it reads the rows, newest first.
                filters, _share = scope()
                out.results = self._like_route(q, filters, limit, offset, asc=order is SortOrder.OLDEST)
                out.route = LIKE_SCAN.name
            elif parsed.cjk:
                filters, share = scope()
                raw = (strip_cjk_wildcards(q) if todays else q).strip('"').strip()
                gap = self._unindexed_range()
                unindexed = todays and bool(UNINDEXED_SOURCES & set(source_filter or ()))
                for route in self._cjk_routes(raw, order is SortOrder.RANK, tool_role, cjk_ready, unindexed):
                    try:
                        if gap and route is TRIGRAM:
                            out.results = self._with_gap(
                                route, quote_tokens(raw), raw, gap, filters, order, limit, offset
                            )
                        else:
                            out.results = self._fts_route(
                                route, quote_tokens(raw), filters, order, limit, offset, share=share
                            )
                        out.route = route.name
                        break
                    except apsw.SQLError:
                        out.route = ""
                if todays and not out.route:
                    # Its LIKE scan: any of the tokens, newest first whatever the order asked.
                    raw = " OR ".join(t for t in raw.split() if t.upper() not in OPERATORS) or raw
                    order = SortOrder.NEWEST
                reach = self._side_reach() if not out.route and self._side_eligible(raw, tool_role) else None
                if reach is not None:
                    try:
                        if reach[0] >= reach[1]:
                            out.results = self._side_route(raw, filters, order, limit, offset)
                            out.route = CJK_SIDE.name
                        else:
                            out.results = self._side_with_gap(raw, reach, filters, order, limit, offset)
                            out.route = CJK_SIDE_PARTIAL.name
                    except apsw.SQLError:
                        out.route = ""
                if not out.route:
                    out.results = self._like_route(raw, filters, limit, offset, any_token=todays)
                    out.route = LIKE_SCAN.name
            elif todays:
                self._todays_latin(out, parsed, scope, order, limit, offset, cjk_ready)
            else:
                out.route = FTS5.name
                retry = not tool_role and limit != 0
                facts = self._query_facts(q, cjk_ready)
                memo = self._memo

                def routes() -> list[tuple[Route, str]]:
                    """The v23 retries (asked by the probe's stand-ins and the retry itself)."""
                    return memo(facts, "routes", lambda: self._latin_fallback_routes(q, cjk_ready))

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
                    memo(facts, "expanded", lambda: expand_prefixes(q, self._prefix_terms) or q)
                    if "*" in q
                    else q
                )
                found = memo(facts, ("found", stand_ins), lambda: self._probe_first(expanded, stand_ins))
                if found is None:  # FTS5 rejects the query (upstream: `[]` as well)
                    return SearchOutcome(query=q, route=FTS5.name)
                n, stood = found
                gap = self._unindexed_range()
                if gap:  # an interrupted conversion: the unconverted ids are read with LIKE
                    out.results = self._with_gap(FTS5, q, q, gap, scope()[0], order, limit, offset)
                elif n:
                    filters, share = scope()
                    out.results = self._fts_route(
                        FTS5,
                        q,
                        filters,
                        order,
                        limit,
                        offset,
                        probed=True,
                        share=share,
                        matches=n,
                        expanded=expanded,
                    )
                if (
                    not out.results
                    and retry
                    and not (
                        tri
                        and (
                            stood == (False,)
                            or memo(facts, "glued", lambda: self._glued_ids(tri, q)) == frozenset()
                        )
                    )
                ):
                    live, probed = memo(
                        facts,
                        "live",
                        lambda: self._live_fallbacks(routes(), None if tri else stood),
                    )
                    if live:
                        filters, share = scope()
                        self._latin_fallback(out, q, filters, order, limit, offset, live, probed, share)
            self._flatten_snippets(out.results, q)
        except apsw.InterruptError:
            return SearchOutcome(query=q, route=INTERRUPTED.name)
        contexts = self._contexts([r["id"] for r in out.results]) if context else {}
        for r in out.results:
            r["context"] = contexts.get(r["id"], [])
        out.results = [{k: r.get(k) for k in RESULT_KEYS} | {"context": r["context"]} for r in out.results]
        return out

    def _todays_latin(
        self,
        out: SearchOutcome,
        parsed: ParsedQuery,
        scope: Callable[[], tuple[tuple[list[str], list[Any]], float]],
        order: SortOrder,
        limit: int,
        offset: int,
        cjk_ready: bool,
    ) -> None:
        """A Latin query by today's Hermes' routes: the unicode61 index; with no row, the cjk then
        the trigram index (every token of 3+ characters) as a substring match of each token; with
        still none, the index again with any of the words (`or_relaxed`)."""
        q = parsed.q
        out.route = FTS5.name
        expanded = expand_prefixes(q, self._prefix_terms) or q if "*" in q else q
        found = self._probe_first(expanded, ())
        if found is None:  # FTS5 rejects the query: `[]`, as upstream
            return
        filters, share = scope()
        gap = self._unindexed_range()
        if gap:
            out.results = self._with_gap(FTS5, q, q, gap, filters, order, limit, offset)
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
        quoted = quote_tokens(q.strip('"').strip())
        retries = [FTS_CJK] if cjk_ready else []
        if self.layout.has_trigram and trigram_eligible(q):
            retries.append(TRIGRAM)
        for route in retries:
            try:
                results = self._fts_route(route, quoted, filters, order, limit, offset, share=share)
            except apsw.SQLError:
                continue
            if results:
                out.results, out.route = results, route.name
                return
        relaxed = or_relaxed(q)
        if relaxed is not None:
            with contextlib.suppress(apsw.SQLError):
                out.results = self._fts_route(FTS5, relaxed, filters, order, limit, offset, share=share)

    def _cjk_ready(self) -> bool:
        lay = self.layout
        return lay.has_cjk and not lay.cjk_stale and not lay.cjk_building and self._cjk_impl is not None

    def _cjk_routes(
        self, raw: str, ranked: bool, tool_role: bool, cjk_ready: bool, unindexed: bool = False
    ) -> list[Route]:
        """The index routes to try, in order, for a CJK query (the first that runs answers);
        `unindexed`: the query wants rows those indexes leave out (today's Hermes' cron and
        sub-agent sources), so none."""
        if unindexed:
            return []
        lay = self.layout
        tokens = [t for t in raw.split() if t.upper() not in OPERATORS and contains_cjk(t)]
        tri_ok = lay.has_trigram and count_cjk(raw) >= 3 and all(count_cjk(t) >= 3 for t in tokens)
        routes: list[Route] = []
        if cjk_ready and not tool_role and not has_lone_cjk_run(raw):
            routes.append(FTS_CJK)
        if tri_ok and not (tool_role and lay.kind == "v23"):
            # Ranking scores every match: one trigram doclist per 3 characters is cheaper
            # than the bigram phrase's position lists, and it is upstream's own route.
            routes.insert(0 if ranked else len(routes), TRIGRAM)
        return routes

    @staticmethod
    def _side_eligible(raw: str, tool_role: bool) -> bool:
        """Only CJK-bearing rows are in the side index: every OR branch must need a CJK term."""
        return not tool_role and all(
            any(contains_cjk(t) for t in must) for must, _n in parse_bool(raw).groups
        )
