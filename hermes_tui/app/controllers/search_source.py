"""The search pane's source over one store, shaped as `BrowserStores`' (`searcher`, `titles`,
`counter`), so the main screen connects the pane the same way to one store or several: one
store is a federation of one."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from hermes_tui.state import SessionDB

Searcher = Callable[..., tuple[list[dict[str, Any]], str]]
Counter = Callable[..., tuple[int, bool]]


class OneStore:
    """One store's search, titles and hit count (each called in a worker thread)."""

    def __init__(self, db: SessionDB) -> None:
        self.db = db

    def searcher(self, profiles: Sequence[str] | None = None) -> Searcher:
        """The pane's searcher (``profiles`` is for several stores: one store has no filter)."""
        return self._search

    def _search(self, query: str, **kwargs: Any) -> tuple[list[dict[str, Any]], str]:
        outcome = self.db.search(query, context=False, **kwargs)  # the pane shows snippets only
        return list(outcome.results), outcome.route

    def titles(self, ids: list[str]) -> dict[str, dict[str, Any]]:
        return {r["id"]: r for r in self.db.list_rows(ids)}

    def counter(self, profiles: Sequence[str] | None = None) -> Counter:
        """Every hit of a query, counted up to a cap: `(count, exact)`."""
        return self.db.search_count
