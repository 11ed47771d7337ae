"""One store shaped as `BrowserStores` (`order`, `searcher`, `titles`, `counter`), so the list's
order and the search pane are read the same way from one store or several: one store is a
federation of one (its keys are its ids)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import replace
from typing import Any, Protocol, cast

from rich.text import Text

from hermes_tui.app.controllers.ordering import ordered_ids
from hermes_tui.app.header_text import HeaderFacts, store_header
from hermes_tui.app.list_views import DEFAULT_FILTER
from hermes_tui.app.live_order import IncrementalOrder
from hermes_tui.app.prefetch import Prefetched, order_head
from hermes_tui.app.stores import BrowserStores, Key, OrderResult
from hermes_tui.app.stores_follow import on_this_thread
from hermes_tui.app.usage_view import StoreUsage, UsageSource
from hermes_tui.app.widgets.session_list import PAGE_SIZE
from hermes_tui.state import SessionDB, SessionFilter

Searcher = Callable[..., tuple[list[dict[str, Any]], str]]
Counter = Callable[..., tuple[int, bool]]


class OrderSource(Protocol):
    """What the list's order is read from (`BrowserStores`, or `OneStore`)."""

    def order(
        self,
        flt: SessionFilter,
        order: str,
        profiles: Sequence[str] | None,
        keep: Key | None,
        first: int,
        active_since: tuple[float, float] | None = None,
    ) -> OrderResult: ...

    def orders(
        self,
        flt: SessionFilter,
        order: str,
        profiles: Sequence[str] | None,
        keep: Key | None,
        first: int,
        active_since: tuple[float, float] | None = None,
        cancelled: Callable[[], bool] = lambda: False,
    ) -> Iterator[OrderResult]: ...

    def live_order(
        self,
        flt: SessionFilter,
        order: str,
        profiles: Sequence[str] | None,
        active_since: tuple[float, float] | None,
        moves: IncrementalOrder,
    ) -> OrderResult: ...


class Scope(Protocol):
    """The stores a session can be in, as the screen asks (`BrowserStores`, or `OneStore`)."""

    @property
    def current(self) -> str | None: ...

    def db_for(self, profile: str | None) -> SessionDB | None: ...

    def key(self, profile: str | None, session_id: Any) -> Any: ...

    @property
    def shows_profile(self) -> bool: ...

    def db_at(self, path: Any) -> SessionDB | None: ...

    def each(
        self, fn: Callable[..., Any], profiles: Sequence[str] | None, *args: Any
    ) -> list[tuple[str | None, Any]]: ...

    def title_rows(
        self, flt: SessionFilter, profiles: Sequence[str] | None, limit: int
    ) -> list[dict[str, Any]]: ...

    def close(self) -> None: ...


def order_source(scope: BrowserStores | OneStore) -> OrderSource | None:
    """The open stores, else the one open store, else None (nothing to order yet)."""
    return None if isinstance(scope, OneStore) and scope.db is None else scope


class OneStore:
    """One store's order, search, titles and hit count (each called in a worker thread), and
    the keys and store of its sessions (its ids; itself, whatever the profile). Its one
    "profile" is None: the live follower follows it as a federation of one."""

    current: str | None = None  # (no profiles)
    #: Its sessions' profile is not shown (the transcript's title, the palette's hits).
    shows_profile = False

    def __init__(self, db: SessionDB | None) -> None:
        self.db = db
        #: The next `orders()` is the first paint (`first_paint`): a head first, the open
        #: prefetch's order when it has it.
        self._first_paint: tuple[Prefetched | None] | None = None

    def first_paint(self, pre: Prefetched | None) -> None:
        """The next `orders()` paints the store first: from the head of its order (its first
        page, read in milliseconds, or the open prefetch's), then the whole order, which takes
        over without moving the view (issue #21)."""
        self._first_paint = (pre,)

    @property
    def profiles(self) -> list[str | None]:
        return [None] if self.db is not None else []

    def submit_each(self, calls: Mapping[Any, Callable[[SessionDB], Any]]) -> dict[Any, Future[Any]]:
        """The follower's polls of the one store, on the follower's own thread."""
        return on_this_thread(self._open())(calls)

    def db_for(self, profile: str | None) -> SessionDB | None:
        return self.db

    def key(self, profile: str | None, session_id: Any) -> Any:
        return session_id

    def db_at(self, path: Any) -> SessionDB | None:
        """The store whose file is ``path`` (the one store, or None)."""
        return self.db if self.db is not None and self.db.db_path == path else None

    def each(
        self, fn: Callable[..., Any], profiles: Sequence[str] | None, *args: Any
    ) -> list[tuple[str | None, Any]]:
        """``fn(db, *args)`` on the one store (worker thread), as `BrowserStores.each` answers
        for several: ``[(None, answer)]``; what the store raises is raised."""
        return [(None, fn(self._open(), *args))]

    def title_rows(
        self, flt: SessionFilter, profiles: Sequence[str] | None, limit: int
    ) -> list[dict[str, Any]]:
        """The list rows of the first ``limit`` sessions of ``flt``, most recently active first
        (worker thread); none when no store is open."""
        db = self.db
        if db is None:
            return []
        return db.list_rows(db.session_order(flt, "last_active").ids[:limit])

    def header(self, facts: HeaderFacts) -> tuple[Text, str | None]:
        """The info line over the one store: its path, capabilities and count (no tooltip)."""
        return store_header(facts.width, facts.caps, facts.path, facts.count), None

    def usage_source(self) -> UsageSource | None:
        """What the Usage screen reads: the one store (None when none is open)."""
        return StoreUsage(self.db) if self.db is not None else None

    def close(self) -> None:
        """Nothing: the one store's connection is closed by whoever opened it (the app, or the
        next store's `Opening.opened`)."""

    def _open(self) -> SessionDB:
        assert self.db is not None, "no store is open"
        return self.db

    def order(
        self,
        flt: SessionFilter,
        order: str,
        profiles: Sequence[str] | None,
        keep: Key | None,
        first: int,
        active_since: tuple[float, float] | None = None,
    ) -> OrderResult:
        """The list's ids (the whole order: one indexed query; rows come a page at a time) and
        the count of its view, for "3 of 34" (`ordering.ordered_ids`). The list finds ``keep``
        itself (``keep_index`` None); ``profiles`` and ``first`` are for several stores."""
        now = active_since[0] if active_since is not None else 0.0
        ids, total = ordered_ids(self._open(), flt, order, active_since is not None, now)
        keys = cast("list[Key]", ids)  # one store's keys are its ids (the list takes either)
        return OrderResult(keys, None, {}, {}, len(ids), extra={"store_total": total})

    def orders(
        self,
        flt: SessionFilter,
        order: str,
        profiles: Sequence[str] | None,
        keep: Key | None,
        first: int,
        active_since: tuple[float, float] | None = None,
        cancelled: Callable[[], bool] = lambda: False,
    ) -> Iterator[OrderResult]:
        """The order as the list takes it: `order()`; at first paint a head first
        (`first_paint`, `first_orders`)."""
        painting, self._first_paint = self._first_paint, None
        if painting is None:
            yield self.order(flt, order, profiles, keep, first, active_since)
            return
        yield from first_orders(self._open(), flt, order, active_since, painting[0], cancelled)

    def live_order(
        self,
        flt: SessionFilter,
        order: str,
        profiles: Sequence[str] | None,
        active_since: tuple[float, float] | None,
        moves: IncrementalOrder,
    ) -> OrderResult:
        """The order again after live changes: ``moves`` re-reads only the sessions they named
        (`IncrementalOrder`), the whole order now and then. When it could place them, their
        rows come along (``extra["rows"]``): every other row kept its data, so the list reads
        no page again (`SessionList.update_order`)."""
        db = self._open()
        ids, total = moves.ordered(db, flt, order, active_since)
        keys = cast("list[Key]", ids)
        extra: dict[str, Any] = {"store_total": total}
        if moves.last_moved is not None:
            extra["rows"] = (
                {r["id"]: r for r in db.list_rows(sorted(moves.last_moved))} if moves.last_moved else {}
            )
        return OrderResult(keys, None, {}, {}, len(ids), extra=extra)

    def searcher(self, profiles: Sequence[str] | None = None) -> Searcher:
        """The pane's searcher (``profiles`` is for several stores: one store has no filter)."""
        return self._search

    def _search(self, query: str, **kwargs: Any) -> tuple[list[dict[str, Any]], str]:
        outcome = self._open().search(query, context=False, **kwargs)  # the pane shows snippets only
        return list(outcome.results), outcome.route

    def titles(self, ids: list[str]) -> dict[str, dict[str, Any]]:
        return {r["id"]: r for r in self._open().list_rows(ids)}

    def counter(self, profiles: Sequence[str] | None = None) -> Counter:
        """Every hit of a query, counted up to a cap: `(count, exact)`."""
        return self._open().search_count


def first_orders(
    db: SessionDB,
    flt: SessionFilter,
    order: str,
    active_since: tuple[float, float] | None,
    pre: Prefetched | None,
    cancelled: Callable[[], bool] = lambda: False,
) -> Iterator[OrderResult]:
    """One store's first paint: the head of the order (its first page, read in milliseconds;
    ``extra["provisional"]``), then the whole order (seconds on a cold 10M-message file;
    ``extra["handover"]`` when a head was shown). The open prefetch's when it has them
    (``extra["untimed"]``: not ours to time). Nothing once ``cancelled``."""
    started = time.perf_counter()
    active = active_since is not None
    # "Active now" keeps only recent sessions of the order: no head, and not the prefetch's.
    from_prefetch = pre is not None and not active and flt == DEFAULT_FILTER and order == "last_active"
    if pre is not None and from_prefetch:
        if pre.complete:  # a small store: the prefetch read the whole order
            head = cast("list[Key]", pre.head)
            extra = {"store_total": len(pre.head), "first_rows": pre.first_rows, "untimed": True}
            yield OrderResult(head, None, {}, {}, len(head), extra=extra)
            return
        head_ids, rows = pre.head, pre.first_rows
    else:
        try:
            # Pinned first: the head is read without the pins (the walk cannot put them
            # first); the whole order puts them above it.
            unpinned = replace(flt, pinned_first=False)
            head_ids, rows = ([], []) if active else order_head(db, unpinned, order, PAGE_SIZE)
        except Exception:  # noqa: BLE001 - the whole order below reports the store's error
            head_ids, rows = [], []
    if head_ids and not cancelled():
        head = cast("list[Key]", head_ids)
        yield OrderResult(head, None, {}, {}, len(head), extra={"provisional": True, "first_rows": rows})
    ids = pre.full_order(flt, order) if pre is not None and from_prefetch else None
    from_prefetch = ids is not None
    if ids is not None:
        total = len(ids)
    else:
        now = active_since[0] if active_since is not None else 0.0
        ids, total = ordered_ids(db, flt, order, active, now)
    if not cancelled():
        keys = cast("list[Key]", ids)
        extra = {"store_total": total, "handover": bool(head_ids), "untimed": from_prefetch}
        yield OrderResult(keys, None, {}, {}, len(keys), extra=extra, seconds=time.perf_counter() - started)
