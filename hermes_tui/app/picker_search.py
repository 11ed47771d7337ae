"""Picker mode's search also finds sessions by title: what is typed in `hermes-tui pick` is often
a session's title, which the message index does not hold.

`with_titles` wraps the search pane's searcher and counter (`SearchPane.wrap`, set by the app in
picker mode): the first hits are the sessions whose title or id holds the query — the session
list's own title filter (`SessionFilter.text`, a case-insensitive substring), newest active
first — then the message hits, paged on as before (the offsets past the title hits are the
message search's). A title hit is shaped like a message hit (``role`` "title", the title as its
snippet, a negative ``id`` no message has), so the pane lists, counts and picks it unchanged.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from hermes_tui.state import SessionFilter

if TYPE_CHECKING:
    from hermes_tui.app.screens.main import MainScreen

#: Title hits shown at most (the first ones of the list's order); the messages follow.
TITLE_LIMIT = 50
TITLE_ROUTE = "title match"

Searcher = Callable[..., tuple[list[dict[str, Any]], str]]
Counter = Callable[..., tuple[Any, ...]]
#: ``finder(text, sources) -> list rows`` (with ``profile`` over several stores), in list order.
Finder = Callable[[str, tuple[str, ...]], list[dict[str, Any]]]


def title_filter(query: str, source_filter: Sequence[str] | None) -> SessionFilter:
    """The list's title/id filter for ``query`` (and the search's source filter)."""
    return SessionFilter(sources=tuple(source_filter or ()), text=query)


def title_hit(row: dict[str, Any], index: int, query: str) -> dict[str, Any]:
    """A list row as a search hit: the title (else the id) as its snippet, the match marked."""
    label = str(row.get("title") or row.get("id") or "")
    at = label.lower().find(query.lower())
    end = at + len(query)
    if query and at >= 0 and label[at:end].lower() == query.lower():  # lower() kept the length
        snippet = f"{label[:at]}>>>{label[at:end]}<<<{label[end:]}"
    else:
        snippet = label
    hit = {
        "id": -1 - index,
        "session_id": row.get("id"),
        "role": "title",
        "snippet": snippet,
        "source": row.get("source"),
        "timestamp": row.get("last_active") or row.get("started_at"),
    }
    if "profile" in row:
        hit["profile"] = row["profile"]
    return hit


def with_titles(
    searcher: Searcher, counter: Counter | None, finder: Finder
) -> tuple[Searcher, Counter | None]:
    """``searcher`` and ``counter`` with the title hits of each query first (see the module)."""
    lock = threading.Lock()
    cache: dict[tuple[str, tuple[str, ...]], list[dict[str, Any]]] = {}

    def titles(query: str, kwargs: dict[str, Any]) -> list[dict[str, Any]]:
        if kwargs.get("role_filter") or not query.strip():
            return []  # a role filter asks for messages
        key = (query.strip(), tuple(kwargs.get("source_filter") or ()))
        with lock:
            if key in cache:
                return cache[key]
        rows = finder(*key)[:TITLE_LIMIT]
        hits = [title_hit(row, i, key[0]) for i, row in enumerate(rows)]
        with lock:
            cache.clear()  # one query at a time: the pages and the count of the current one
            cache[key] = hits
        return hits

    def search(query: str, **kwargs: Any) -> tuple[list[dict[str, Any]], str]:
        limit = int(kwargs.pop("limit", 20))
        offset = int(kwargs.pop("offset", 0))
        found = titles(query, kwargs)
        head = found[offset : offset + limit]
        if len(head) >= limit:
            return head, TITLE_ROUTE
        hits, route = searcher(query, limit=limit - len(head), offset=max(0, offset - len(found)), **kwargs)
        return head + hits, route

    if counter is None:
        return search, None
    inner = counter

    def count(query: str, **kwargs: Any) -> tuple[Any, ...]:
        counted = inner(query, **kwargs)
        found = titles(query, kwargs)
        total, exact = counted[0] + len(found), counted[1] and len(found) < TITLE_LIMIT
        if len(counted) < 3:
            return total, exact
        per = dict(counted[2])
        for hit in found:
            n, e = per.get(hit["profile"], (0, True))
            per[hit["profile"]] = (n + 1, e)
        return total, exact, per

    return search, count


def store_finder(main: MainScreen) -> Finder:
    """The title rows of the store(s) the main screen shows (read when a query runs, in the
    search's worker thread): over several stores, the merged order of the profiles the list
    spans, each row with its ``profile``."""

    def find(text: str, sources: tuple[str, ...]) -> list[dict[str, Any]]:
        return main.scope.title_rows(title_filter(text, sources), main.profile_filter, TITLE_LIMIT)

    return find
