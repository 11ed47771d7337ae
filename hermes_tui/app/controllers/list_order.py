"""The session list's order: asking for it again, taking it when it comes, and its title.

`ListOrder` does it for the main screen: a reload runs one worker (group "order": a newer
filter cancels the older read) that reads the order of one store or of several the same way
(`OrderSource.order`: one store is a federation of one) and posts a `MergedLoaded`; over
several stores `Federation.merged_loaded` keeps its books, then `loaded` shows the order. What
the list does with an order is `order_step`, a pure function.
"""

from __future__ import annotations

import time
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol, cast

from rich.text import Text
from textual.screen import Screen
from textual.widgets import Static
from textual.worker import get_current_worker

from hermes_tui.app.controllers.header import list_title
from hermes_tui.app.controllers.host import Headers, LiveOrders, Menus, ScreenHost
from hermes_tui.app.controllers.live_rules import OrderRefresh
from hermes_tui.app.controllers.messages import MergedLoaded, OrderLoaded
from hermes_tui.app.controllers.ordering import ACTIVE_WITHIN_S, empty_text, index_after_write
from hermes_tui.app.controllers.search_source import OneStore, OrderSource, order_source
from hermes_tui.app.controllers.workers import run_thread
from hermes_tui.app.list_views import VIEW_TITLES, view_of
from hermes_tui.app.live_order import IncrementalOrder
from hermes_tui.app.messages import StoreFailed
from hermes_tui.app.stores import BrowserStores, Key, OrderResult
from hermes_tui.app.widgets.lineage import LineageTree
from hermes_tui.app.widgets.session_list import PAGE_SIZE
from hermes_tui.app.widgets.transcript_pane import Transcript
from hermes_tui.state import SessionFilter

if TYPE_CHECKING:
    pass


def order_step(provisional: bool, handover: bool) -> str:
    """How the list takes an order: ``head`` (first paint, the head of an order still being
    read), ``handover`` (its whole order: the cursor and the view stay) or ``set`` (a new
    order: the cursor goes to the kept session, or near where it was)."""
    if provisional:
        return "head"
    return "handover" if handover else "set"


def order_subtitle(order: str) -> str:
    """The list's border subtitle: nothing for the default order, else ``by <order>``."""
    return "" if order == "last_active" else f"by {order.replace('_', ' ')}"


class Merges(Protocol):
    """The merged list over several stores (`federation.Federation`)."""

    @property
    def arrival_seq(self) -> int: ...

    async def merged_loaded(self, message: MergedLoaded) -> None: ...


class OrderHost(ScreenHost, Protocol):
    """What `ListOrder` reads and sets of the main screen (besides Textual's own methods)."""

    stores: BrowserStores | None
    filter: SessionFilter
    order: str
    active_only: bool
    profile_filter: tuple[str, ...] | None
    store_total: int | None
    current_session: str | None
    last_order_seconds: float
    live_ids: IncrementalOrder
    order_refresh: OrderRefresh

    @property
    def scope(self) -> BrowserStores | OneStore: ...

    @property
    def federation(self) -> Merges: ...

    @property
    def live(self) -> LiveOrders: ...

    @property
    def filter_bar(self) -> Menus: ...

    @property
    def header(self) -> Headers: ...

    def fit_footer(self) -> None: ...


class ListOrder:
    """Reloads the list's order (one store's worker or the stores' merge) and shows it."""

    def __init__(self, host: OrderHost) -> None:
        self.host = host
        self.screen = cast("Screen[Any]", host)
        #: The list cursor when this app's own write asked for a reload: a selected session that
        #: the write removed gives its place to the next row (`loaded`), as a live reorder does.
        self.reload_near: tuple[Any, int] | None = None

    def reload(self, keep: Any = None, *, first_paint: bool = False) -> None:
        """Re-read the order for the current filter (keeps the cursor on ``keep``), from one
        store or several alike (`OrderSource.orders`). ``first_paint``: the stores just opened
        (no cursor to keep; one store paints from the head of its order first)."""
        host = self.host
        host.filter_bar.remember()
        host.live_ids.invalidate()
        source = order_source(host.scope)
        if source is None:
            return
        sessions = host.session_list
        sessions.loading = True
        keep = None if first_paint else keep or sessions.selected_key
        seen = host.federation.arrival_seq
        args = (source, host.filter, host.order, host.profile_filter, keep, host.active_only, seen)
        run_thread(self.screen, partial(self._order_worker, *args), "order", "order sessions", exclusive=True)

    def _order_worker(
        self,
        source: OrderSource,
        flt: SessionFilter,
        order: str,
        profiles: tuple[str, ...] | None,
        keep: Key | None,
        active: bool,
        seen: int,
    ) -> None:
        """The order with its first pages' keys (`OrderSource.orders`: at first paint a head
        first), or, if it failed, an empty one (the list stops loading; the error is told)."""
        started = time.perf_counter()
        since = (self.host.hermes.now(), ACTIVE_WITHIN_S) if active else None
        worker = get_current_worker()
        try:
            for result in source.orders(
                flt, order, profiles, keep, 2 * PAGE_SIZE, since, lambda: worker.is_cancelled
            ):
                self._post(result, profiles, keep, seen, started)
        except Exception as exc:
            self.screen.post_message(StoreFailed("list sessions", f"{type(exc).__name__}: {exc}"))
            self._post(OrderResult([], None, {}, {}, 0), profiles, keep, seen, started)

    def _post(
        self,
        result: OrderResult,
        profiles: tuple[str, ...] | None,
        keep: Key | None,
        seen: int,
        started: float,
    ) -> None:
        result.extra["arrivals_seen"] = seen
        if result.extra.get("provisional") or result.extra.get("untimed"):
            result.seconds = 0.0  # a head, or the open prefetch's order: not ours to time
        else:
            result.seconds = time.perf_counter() - started
        if not get_current_worker().is_cancelled:
            self.screen.post_message(MergedLoaded(result, profiles, keep))

    async def order_read(self, message: MergedLoaded) -> None:
        """An order came: over several stores their bookkeeping first (counts, failures, late
        stores: `Federation.merged_loaded`, which then calls `loaded`); one store's, shown."""
        if self.host.stores is not None:
            await self.host.federation.merged_loaded(message)
            return
        await self.loaded(OrderLoaded.of(message.result, message.keep))

    async def loaded(self, message: OrderLoaded, keep_index: int | None = None) -> None:
        """Show an order that came (its head, its whole order, or a new one)."""
        host, screen = self.host, self.screen
        sessions = host.session_list
        sessions.loading = False
        host.last_order_seconds = message.seconds
        if message.store_total is not None:
            host.store_total = message.store_total
        sessions.empty_text = empty_text(host.filter_bar.summary(), view_of(host.filter))
        if message.first_rows:
            sessions.seed_page(0, message.first_rows)
        step = order_step(message.provisional, message.handover)
        if step == "head":
            sessions.set_order(message.ids, provisional=True)
        elif step == "handover":
            at_top = sessions.cursor == 0 and not sessions.waiting_moves
            sessions.update_order(message.ids)
            if at_top and host.filter.pinned_first and sessions.cursor != 0:
                # The head was read without the pins, which the whole order puts above it: a
                # cursor on the first row stays on the first row.
                sessions.cursor = 0
            if host.order_refresh.missed:  # the order may have been read before that change
                host.order_refresh.missed = False
                host.live.refresh_order()
        else:
            near, self.reload_near = self.reload_near, None
            if keep_index is None:
                keep_index = index_after_write(near, message.keep, message.ids)
            sessions.set_order(message.ids, keep=message.keep, keep_index=keep_index)
        self.title()
        sessions.border_subtitle = order_subtitle(host.order)
        host.header.update()
        host.fit_footer()
        screen.refresh_bindings()
        if not message.ids:
            host.current_session = None
            transcript = screen.query_one("#transcript", Transcript)
            await transcript.clear_transcript(sessions.empty_text)
            transcript.show_subtitle("")
            screen.query_one("#transcript-title", Static).update(Text(""))
            screen.query_one("#lineage", LineageTree).show_lineage(None)

    def title(self) -> None:
        """The list's border title (`header.list_title`)."""
        host = self.host
        sessions = host.session_list
        view = view_of(host.filter)
        sessions.border_title = list_title(
            VIEW_TITLES[view],
            sessions.total,
            sessions.provisional,
            view == "default",
            host.filter_bar.summary(),
            host.store_total,
            len(sessions.selection),
        )
