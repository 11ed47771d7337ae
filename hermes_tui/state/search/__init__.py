"""Full-text search of the store: `search_messages` (hermes-agent 0.19.0's), `search`, `search_count`.

The flow, one module each: `parse` (the typed text, parsed once into a `ParsedQuery`), `routes`
(which index or scan answers), `ranking` (an index's page in the order asked), `newest` (newest
first without sorting every match), `scan` (LIKE over the rows), `side` (the private CJK index),
`probe` and `fallback` (v23's retries of a Latin miss), `count` (`search_count`), `snippets`
(what each hit shows). `model` names the routes and orders, `sql` holds the shared SQL text.

The mixins form one chain, each using only those below it: `SearchMixin` → `CountMixin` →
`RoutesMixin` → `FallbackMixin` → `ProbeMixin` → `SideMixin` → `ScanMixin` → `RankingMixin` →
`NewestMixin` → `SnippetsMixin` → `_Core`.
"""

from __future__ import annotations

from typing import Any

from ..fts_query import QueryTooComplex, sanitize_fts5_query
from .count import CountMixin
from .model import (
    CJK_SIDE,
    CJK_SIDE_PARTIAL,
    EMPTY,
    FTS5,
    FTS_CJK,
    INTERRUPTED,
    LIKE_SCAN,
    TRIGRAM,
    Route,
    SearchOutcome,
    SortOrder,
)
from .parse import ParsedQuery, parse_query

__all__ = [
    "CJK_SIDE",
    "CJK_SIDE_PARTIAL",
    "EMPTY",
    "FTS5",
    "FTS_CJK",
    "INTERRUPTED",
    "LIKE_SCAN",
    "TRIGRAM",
    "ParsedQuery",
    "Route",
    "SearchMixin",
    "SearchOutcome",
    "SortOrder",
    "parse_query",
]


class SearchMixin(CountMixin):
    """The store's search, as `SessionDB` offers it (the chain's top)."""

    def search_messages(
        self,
        query: str,
        source_filter: list[str] | None = None,
        exclude_sources: list[str] | None = None,
        role_filter: list[str] | None = None,
        limit: int = 20,
        offset: int = 0,
        sort: str | None = None,
        include_inactive: bool = False,
    ) -> list[dict[str, Any]]:
        try:
            return self.search(
                query, source_filter, exclude_sources, role_filter, limit, offset, sort, include_inactive
            ).results
        except QueryTooComplex:  # upstream's contract: a query never raises, the worst case is []
            return []

    _sanitize_fts5_query = staticmethod(sanitize_fts5_query)
