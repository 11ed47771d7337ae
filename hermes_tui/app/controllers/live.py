"""Live follow of the open store(s): the follower thread, what it cares about, carrying out
what `live_rules` decided, the open session's paced re-reads and the live order refresh.

`LiveFollow` does it for the main screen (its `StoreLive` and `LiveOrder` handlers call it),
whether one store is open or several: one follower thread (`StoresWatch`), one live order path.
The decisions are `live_rules`' pure functions. Its workers run on the screen (`run_worker`) in
the groups the screen's tests and bench know ("live-session", "live-order").
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any, Protocol, cast

from textual.screen import Screen

from hermes_tui.app.controllers.federation import Federation, Followed
from hermes_tui.app.controllers.host import Headers, Lists, ScreenHost
from hermes_tui.app.controllers.live_rules import LivePlan, LiveView, OrderRefresh, plan_for
from hermes_tui.app.controllers.messages import LiveOrder, LiveSession, StoreLive
from hermes_tui.app.controllers.ordering import ACTIVE_WITHIN_S
from hermes_tui.app.controllers.search_source import OneStore, OrderSource, order_source
from hermes_tui.app.controllers.transcript_loading import read_live
from hermes_tui.app.controllers.workers import run_thread
from hermes_tui.app.live_follow import LiveUpdate, Pacer
from hermes_tui.app.live_order import IncrementalOrder
from hermes_tui.app.messages import StoreFailed
from hermes_tui.app.stores import BrowserStores, OrderResult
from hermes_tui.app.widgets.lineage import LineageTree
from hermes_tui.app.widgets.search import SearchPane
from hermes_tui.app.widgets.transcript_items import Divider
from hermes_tui.app.widgets.transcript_pane import Transcript
from hermes_tui.state import SessionDB, SessionFilter

if TYPE_CHECKING:
    pass


class Shown(Protocol):
    """The session shown (`shown.ShownSession`)."""

    def live_tip(self) -> None: ...

    async def deleted(self, session_id: str, elsewhere: bool = True) -> None: ...


class LiveHost(ScreenHost, Protocol):
    """What `LiveFollow` reads and sets of the main screen (besides Textual's own methods)."""

    stores: BrowserStores | None
    state: str
    filter: SessionFilter
    order: str
    active_only: bool
    profile_filter: tuple[str, ...] | None
    profile_counts: dict[str, int]
    store_total: int | None
    current_session: str | None
    current_profile: str | None
    live_ids: IncrementalOrder
    session_pace: Pacer
    order_refresh: OrderRefresh
    federation: Federation

    @property
    def db(self) -> SessionDB | None: ...

    @property
    def scope(self) -> BrowserStores | OneStore: ...

    def db_for(self, profile: str | None) -> SessionDB | None: ...

    @property
    def shown(self) -> Shown: ...

    @property
    def header(self) -> Headers: ...

    @property
    def list_order(self) -> Lists: ...

    def load_session(self, session_id: str, *, profile: str | None = None) -> None: ...


class LiveFollow:
    """One store's follower and what live changes do to the list and the open session."""

    def __init__(self, host: LiveHost) -> None:
        self.host = host
        self.screen = cast("Screen[Any]", host)
        #: A "Live follow paused" notification is on screen.
        self.error_shown = False

    # ------------------------------------------------------------------ the follower
    def start(self, stores: Followed) -> None:
        """One polling thread for the open stores, one or several (`StoresWatch.start`: one
        store is a federation of one); the old stores' follower stops first."""
        host = self.host
        host.live_ids = IncrementalOrder()  # the order it kept was the old store's
        self.error_shown = False
        host.federation.watch.start(stores, self._post)
        self.care()

    def stop(self) -> None:
        """Before the store(s) followed close under it."""
        self.host.federation.watch.stop()

    def _post(self, profile: str | None, update: LiveUpdate) -> None:
        """From the polling thread (only the current follower's reports come here)."""
        self.screen.post_message(StoreLive(profile, update))

    def visible_changed(self, keys: list[Any]) -> None:
        """The rows on screen changed: the follower reads their statuses and cares about them."""
        if self.host.federation.watch.show(keys):
            self.care(keys)

    def care(self, visible: list[Any] | None = None) -> None:
        """Each store's follower reports ends, titles and deletions of its rows on screen; the
        open session's store also of that session and (the first 64 of) its lineage."""
        host = self.host
        lineage = self.screen.query_one("#lineage", LineageTree).lineage
        shown = visible if visible is not None else host.session_list.visible_ids
        host.federation.watch.care(shown, host.current_session, host.current_profile, lineage)

    async def heard(self, message: StoreLive) -> None:
        """A store's follower reported: what it means (`live_rules.plan_for`), carried out."""
        update = message.update
        plan = plan_for(message.profile, update, self.view(bool(update.changes)))
        await self.carry_out(plan, update.changes, federated=message.profile is not None)

    # ------------------------------------------------------------------ a report
    def view(self, changes: bool) -> LiveView:
        """What `live_rules` decides on; the lineage and the chain only when changes came for an
        open session (they are read from the panes)."""
        host, screen = self.host, self.screen
        current = host.current_session
        lineage_ids: frozenset[str] = frozenset()
        chain: frozenset[str] | None = None
        if changes and current is not None:
            lineage = screen.query_one("#lineage", LineageTree).lineage or {}
            lineage_ids = frozenset(n["id"] for n in lineage.get("nodes", []))
            data = screen.query_one("#transcript", Transcript).data
            if data is not None and data.chain:
                chain = frozenset(i.session_id for i in data.items if isinstance(i, Divider))
        return LiveView(
            current_session=current,
            current_profile=host.current_profile,
            active_only=host.active_only,
            searching=screen.has_class("-searching"),
            lineage_ids=lineage_ids,
            chain_sessions=chain,
            error_shown=self.error_shown,
        )

    async def carry_out(self, plan: LivePlan, ch: Any, federated: bool = False) -> None:
        """Do what `live_rules` decided, in its order (one store, or one of several)."""
        host, screen = self.host, self.screen
        if not federated:
            self.error_shown = plan.error_shown
        if plan.error is not None:
            screen.notify(plan.error, title="Live follow paused", severity="warning", markup=False)
        if plan.statuses is not None:
            host.session_list.set_live(plan.statuses)
        if plan.show_tip:  # "● doing …" comes and goes
            host.shown.live_tip()
        if plan.refresh_for_age:  # sessions age out of "active now"
            self.refresh_order()
        if plan.note_changes:
            host.live_ids.note(ch)
        if plan.refresh_for_changes:
            self.refresh_order()
        if plan.search_changed:
            screen.query_one("#search", SearchPane).store_changed()
        if plan.current_deleted is not None:
            if federated:
                screen.call_later(host.shown.deleted, plan.current_deleted)
            else:
                await host.shown.deleted(plan.current_deleted)
        if plan.reload_chain and host.current_session is not None:  # a chain re-reads its segments
            host.load_session(host.current_session, profile=host.current_profile)
        if plan.follow_lineage is not None:
            self.follow_session(host.session_pace.ask(plan.follow_lineage))

    # ------------------------------------------------------------------ the open session
    def follow_session(self, wait: float | None) -> None:
        """Act on the pacer's answer: read the open session now, in ``wait`` s, or not yet."""
        host = self.host
        if wait is None:
            return
        if wait > 0:
            self.screen.set_timer(wait, lambda: self.follow_session(host.session_pace.due()))
            return
        current = host.current_session
        if current is None:
            host.session_pace.start()
            self.follow_session(host.session_pace.finished())
            return
        lineage_too = host.session_pace.start()
        transcript = self.screen.query_one("#transcript", Transcript)
        data = transcript.data
        after = transcript.last_message_id if data is not None and data.session_id == current else None
        run_thread(
            self.screen,
            partial(self._session_worker, current, after, lineage_too, host.db_for(host.current_profile)),
            "live-session",
            "follow the open session",
        )

    def _session_worker(
        self, session_id: str, after_id: int | None, lineage_too: bool, db: SessionDB | None
    ) -> None:
        """The open session's row, messages after the last one shown, and (when a child or an
        end appeared) its lineage (`read_live`), off the event loop. Over several stores ``db``
        is the open session's own store."""
        db = db or self.host.db
        assert db is not None
        post = self.screen.post_message
        try:
            row, items, lineage = read_live(db, session_id, after_id, lineage_too)
        except Exception as exc:
            post(StoreFailed("follow the session", f"{type(exc).__name__}: {exc}"))
            post(LiveSession(session_id, None, None, None, failed=True))
            return
        post(LiveSession(session_id, row, items, lineage))

    # ------------------------------------------------------------------ the list's order
    def refresh_order(self) -> None:
        """Read the order again for a live change, of one store or several alike
        (`OrderSource.live_order`); one at a time (a change meanwhile runs it once more), and not
        while a full reload is on its way (it reads the same data), nor while the list shows a
        provisional head: the whole order on its way is read after the change."""
        host = self.host
        source = order_source(host.scope)
        if source is None or host.state != "ready":
            return
        if host.session_list.provisional:  # run again once the whole order has taken over
            host.order_refresh.missed = True
            return
        key = (host.filter, host.order, host.profile_filter, host.active_only)
        host.order_refresh.ask(
            lambda: run_thread(
                self.screen,
                partial(self._order_worker, source, *key),
                "live-order",
                "refresh the session order",
            )
        )

    def _order_worker(
        self,
        source: OrderSource,
        flt: SessionFilter,
        order: str,
        profiles: tuple[str, ...] | None,
        active: bool,
    ) -> None:
        host = self.host
        seen = host.federation.arrival_seq
        since = (host.hermes.now(), ACTIVE_WITHIN_S) if active else None
        result: OrderResult | None
        try:
            result = source.live_order(flt, order, profiles, since, host.live_ids)
            result.extra["arrivals_seen"] = seen
        except Exception as exc:
            self.screen.post_message(StoreFailed("refresh the session list", f"{type(exc).__name__}: {exc}"))
            result = None
        self.screen.post_message(LiveOrder(result, (flt, order, profiles, active)))

    def order_read(self, message: LiveOrder) -> None:
        """A live order came: the list takes it when it is still the one shown (over several
        stores their bookkeeping too: `Federation.live_merged`); a change meanwhile runs the
        refresh once more."""
        host = self.host
        host.order_refresh.running = False
        sessions = host.session_list
        result = message.result
        current = message.key == (host.filter, host.order, host.profile_filter, host.active_only)
        if result is not None and current and not sessions.loading:
            was_empty = sessions.total == 0
            counts = (sessions.total, host.store_total, host.profile_counts)
            sessions.update_order(result.keys, result.extra.get("rows"))
            if "store_total" in result.extra:
                host.store_total = result.extra["store_total"]
            behind = host.federation.live_merged(result)
            if counts != (sessions.total, host.store_total, host.profile_counts):
                # Only when a count changed: the header's update lays the whole screen out again,
                # and most live reorders only move sessions.
                host.list_order.title()
                host.header.update()
            if was_empty != (sessions.total == 0):  # the row keys depend on an empty list or not
                self.screen.refresh_bindings()
            if was_empty and sessions.total and host.current_session is None:
                profile, first = sessions.split_key(sessions.key_at(0))
                if first is not None:
                    host.load_session(first, profile=profile)
            if behind:  # stores that opened meanwhile
                host.order_refresh.again = True
        if host.order_refresh.again:
            self.refresh_order()
