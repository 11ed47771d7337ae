"""One store shaped as `BrowserStores` (`order`, `searcher`, `titles`, `counter`), so the list's
order and the search pane are read the same way from one store or several: one store is a
federation of one (its keys are its ids)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from typing import Any, Protocol, cast

from hermes_tui.app.controllers.ordering import ordered_ids
from hermes_tui.app.live_order import IncrementalOrder
from hermes_tui.app.stores import BrowserStores, Key, OrderResult
from hermes_tui.app.stores_follow import on_this_thread
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


def scope_of(stores: BrowserStores | None, db: SessionDB | None) -> BrowserStores | OneStore:
    """The open stores, else the one store (open or not) as a federation of one."""
    return stores if stores is not None else OneStore(db)


def order_source(stores: BrowserStores | None, db: SessionDB | None) -> OrderSource | None:
    """The open stores, else the one open store, else None (nothing to order yet)."""
    scope = scope_of(stores, db)
    return None if isinstance(scope, OneStore) and scope.db is None else scope


class OneStore:
    """One store's order, search, titles and hit count (each called in a worker thread), and
    the keys and store of its sessions (its ids; itself, whatever the profile). Its one
    "profile" is None: the live follower follows it as a federation of one."""

    current: str | None = None  # (no profiles)

    def __init__(self, db: SessionDB | None) -> None:
        self.db = db

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
