"""Several stores open at once (`--all`, `p`): opening them, the merged list, the stores that
answer late and the profile filter; and the live follower of the open stores, one or several.

`Federation` does it for the main screen (its handlers call it); `StoresWatch` keeps the
follower (`LiveFollow.start` starts it, for one store as a federation of one) and the merge's
bookkeeping; the decisions (`keys_by_profile`, `merge_behind`, `failure_notes`) are pure
functions.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

from rich.text import Text
from textual.screen import Screen
from textual.widgets import Select

from hermes_tui.app import cpu_share
from hermes_tui.app.controllers.host import Headers, Lists, LiveOrders, Menus, ScreenHost
from hermes_tui.app.controllers.live_rules import OrderRefresh, cared_ids
from hermes_tui.app.controllers.messages import (
    MergedLoaded,
    OrderLoaded,
    StoresArrived,
    StoresOpened,
    StoreValues,
)
from hermes_tui.app.controllers.opening import open_several
from hermes_tui.app.controllers.workers import run_thread
from hermes_tui.app.live_follow import LiveUpdate
from hermes_tui.app.stores import Arrivals, BrowserStores, OrderResult, StoreChoice, all_stores
from hermes_tui.app.stores_follow import StoresFollower
from hermes_tui.app.widgets.search import SearchPane
from hermes_tui.safe_text import inert, one_line
from hermes_tui.state import SessionDB, SessionFilter, StoreStatus, hermes_root

if TYPE_CHECKING:
    pass

#: Stores whose failure is notified one by one (then one notification for the rest), and named
#: in the header's tooltip (2,700 profile folders without a store were 2,700 notifications).
FAILURES_TOLD = 3
#: Stores that answer after the list is shown are taken in at most this often (each time: a
#: re-merge, the profile menu, the header): one by one, 300 of them kept the event loop busy.
ARRIVALS_EVERY_S = 0.15


def keys_by_profile(keys: Iterable[Any], profiles: Iterable[str | None]) -> dict[str | None, list[str]]:
    """The list's keys grouped by store (every profile present, maybe empty): ``(profile, id)``,
    or one store's plain ids (its "profile" None: `OneStore`)."""
    by_profile: dict[str | None, list[str]] = {p: [] for p in profiles}
    for key in keys:
        profile, sid = key if isinstance(key, tuple) else (None, key)
        if profile in by_profile:
            by_profile[profile].append(sid)
    return by_profile


class Followed(Protocol):
    """The stores one follower follows: `BrowserStores`, or one store (`OneStore`)."""

    @property
    def profiles(self) -> Sequence[str | None]: ...

    def db_for(self, profile: str | None) -> SessionDB | None: ...

    def submit_each(self, calls: Any) -> Any: ...


def merge_behind(
    wanted: Iterable[str], open_profiles: Iterable[str], merged: set[str], pending: set[str]
) -> bool:
    """Open stores of the list's profiles that the last merge neither covered nor waits for."""
    return not set(wanted) & set(open_profiles) <= merged | pending


def failure_notes(failed: Sequence[Any], told: set[str]) -> tuple[list[tuple[str, str]], set[str]]:
    """The notifications ``(text, title)`` for stores that failed since (``told`` were told): one
    each for the first `FAILURES_TOLD` of all, then one for the rest; and the profiles told now."""
    new = [r for r in failed if r.profile not in told]
    if not new:
        return [], set()
    room = max(0, FAILURES_TOLD - len(told))
    notes = [(inert(ref.badge, newlines=False), "A store could not be opened") for ref in new[:room]]
    if len(new) > room:
        notes.append(
            (
                f"{len(new) - room:,} more stores could not be opened: see the header.",
                "Stores could not be opened",
            )
        )
    return notes, {r.profile for r in new}


class StoresWatch:
    """One follower thread for every open store (one, or several), and the bookkeeping of the
    merged list."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self.follower: StoresFollower | None = None
        #: Stores whose failure was notified.
        self.failures_told: set[str] = set()
        #: The list's last merge: the stores it covered and those it left out because they had
        #: not answered yet.
        self.merged_profiles: set[str] = set()
        self.merge_pending: set[str] = set()
        self.menu_profiles: list[str] = []  # the profile menu's choices
        #: `StoresArrived` handled so far, and when each store last answered (`merged`).
        self.arrival_seq = 0
        self.answered_at: dict[str, int] = {}

    def start(self, stores: Followed, report: Callable[[str | None, LiveUpdate], None]) -> None:
        """Follow every open store (stores that open later join: `add_open`); ``report`` runs on
        the follower's thread, and only for the current follower."""
        self.stop()

        def reported(profile: str | None, update: LiveUpdate) -> None:
            if follower is self.follower and not follower.stopped:
                report(profile, update)

        follower = StoresFollower(stores.submit_each, reported, clock=self.clock)
        self.follower = follower
        self.add_open(stores)
        # A plain daemon thread, not a Textual worker: it runs as long as the stores are open, and
        # waiting for every worker to finish (tests, the app's shutdown) must not wait for it.
        # Started at the priority the app had before `--yield-cpu` (cpu_share.py): a starved
        # reader would hold back the writers' checkpoints.
        thread = threading.Thread(target=follower.run, name="hermes-live-follow", daemon=True)
        cpu_share.start_thread(thread)

    def add_open(self, stores: Followed) -> None:
        """The stores open now join the follower (adding one twice is a no-op)."""
        follower = self.follower
        for profile in stores.profiles:
            db = stores.db_for(profile)
            if follower is not None and db is not None:
                follower.add(profile, db)

    def stop(self) -> None:
        if self.follower is not None:
            self.follower.stop()
        self.follower = None

    def care(
        self, visible: Iterable[Any], session: str | None, profile: str | None, lineage: dict[str, Any] | None
    ) -> None:
        """Each store's follower cares about its rows on screen; the open session's store also
        about that session and its lineage (so its new messages are reported)."""
        follower = self.follower
        if follower is None:
            return
        by_profile = keys_by_profile(visible, follower.profiles)
        if session and profile in by_profile:
            by_profile[profile] = cared_ids(by_profile[profile], session, lineage)
        for name, ids in by_profile.items():
            follower.care(name, ids)

    def show(self, keys: Iterable[Any]) -> bool:
        """The rows on screen changed: each follower reads their statuses. False when none
        follows."""
        follower = self.follower
        if follower is None:
            return False
        for profile, ids in keys_by_profile(keys, follower.profiles).items():
            follower.show(profile, ids)
        return True

    def arrived(self, profiles: Iterable[str]) -> None:
        """Stores answered (a `StoresArrived`): remember when, for `merged`."""
        self.arrival_seq += 1
        self.answered_at.update(dict.fromkeys(profiles, self.arrival_seq))

    def merged(self, result: OrderResult, wanted: Iterable[str] = ()) -> bool:
        """Note what the merge shown covers. True: a store of `wanted` answered after this merge
        started and is not in it, or only with an older order (pending): its `StoresArrived`
        came before the merge was shown, so merge again."""
        self.merged_profiles = set(result.counts) | set(result.errors)
        self.merge_pending = set(result.pending)
        seen = result.extra.get("arrivals_seen", self.arrival_seq)
        wanted = set(wanted)
        behind = (wanted - self.merged_profiles) | (wanted & self.merge_pending)
        return any(self.answered_at.get(p, -1) > seen for p in behind)

    def behind(self, stores: BrowserStores | None, profiles: tuple[str, ...] | None, opening: bool) -> bool:
        """Open stores (of the list's profiles) that the list's last merge neither covered nor
        is waiting for (those it waits for come with their own `StoresArrived`). While stores
        still open only `StoresArrived` (paced) asks, with `opening`: a re-merge after each
        re-merge kept the event loop and the stores' threads busy."""
        if stores is None or (stores.opening and not opening):
            return False
        wanted = profiles or stores.profiles
        return merge_behind(wanted, stores.profiles, self.merged_profiles, self.merge_pending)

    def failures(self, stores: BrowserStores) -> list[tuple[str, str]]:
        """The notifications to show for the stores that failed since the last call."""
        notes, told = failure_notes(stores.failed, self.failures_told)
        self.failures_told |= told
        return notes


class Follows(LiveOrders, Protocol):
    """The live follow (`live.LiveFollow`): its order refresh, and the follower it starts."""

    def start(self, stores: Followed) -> None: ...


class FederationHost(ScreenHost, Protocol):
    """What `Federation` reads and sets of the main screen (besides Textual's own methods)."""

    stores: BrowserStores | None
    profile_filter: tuple[str, ...] | None
    profile_counts: dict[str, int]
    store_total: int | None
    state: str
    caps: dict[str, Any]
    current_session: str | None
    current_profile: str | None
    filter: SessionFilter
    order: str
    active_only: bool
    order_refresh: OrderRefresh
    _db: SessionDB | None

    @property
    def header(self) -> Headers: ...

    @property
    def list_order(self) -> Lists: ...

    @property
    def live(self) -> Follows: ...

    @property
    def filter_bar(self) -> Menus: ...

    def reload_order(self, keep: Any = None) -> None: ...


class Federation:
    """The main screen over several profiles' stores: opening them, the merged list (first
    read, stores that answer late, a live order's books) and the profile filter.
    Its workers run on the screen (`run_worker`, the groups the screen's own workers use)."""

    def __init__(self, host: FederationHost) -> None:
        self.host = host
        self.screen = cast("Screen[Any]", host)
        self.watch = StoresWatch(lambda: host.hermes.now())
        #: The stores that answered since the last `StoresArrived`.
        self.arrivals: Arrivals | None = None

    # ------------------------------------------------------------------ opening
    def open(self, choice: StoreChoice) -> None:
        """Discover and open the chosen profiles' stores in a worker."""
        host = self.host
        host.state = "opening"
        host.header.show(Text("hermes-tui · opening the profiles' stores…"))
        host.session_list.loading = True
        read_only, path = host.hermes.read_only, host.hermes.db_path
        run_thread(
            self.screen,
            partial(self._open_worker, choice, read_only, path),
            "open",
            "open the stores",
            exclusive=True,
        )

    def _open_worker(self, choice: StoreChoice, read_only: bool, path: Path) -> None:
        """The stores open on a bounded pool (a failure is that store's badge); this waits for
        the first ones, the others join as they answer (`StoresArrived`)."""
        self.screen.post_message(open_several(self.host.hermes, choice, read_only, path))

    def opened(self, message: StoresOpened) -> None:
        """The stores opened: the list, search, menus and follower span them."""
        host, screen = self.host, self.screen
        self.watch.stop()  # before the old stores close under it
        old, host.stores = host.stores, message.stores
        if old is not None and old is not message.stores:
            old.close()
        if host._db is not None:
            host._db.close()
            host._db = None
            host.hermes.db = None
        stores = message.stores
        host.state = "ready"
        host.caps = {}
        screen.remove_class("-missing", "-failed")
        sessions = host.session_list
        sessions.federated = True
        sessions.row_source = stores.list_rows
        now = host.hermes.now
        sessions.status_source = lambda keys: stores.live_status(keys, now())
        sessions.empty_text = "No sessions in these stores."
        host.filter_bar.set_options("#filter-source", message.sources)
        host.filter_bar.set_options("#filter-model", message.models)
        host.filter_bar.restore_source(message.sources)
        profile_select = screen.query_one("#filter-profile", Select)
        with screen.prevent(Select.Changed):
            profile_select.set_options([(one_line(p, 24), p) for p in stores.profiles])
        profile_select.display = True  # (its options follow the stores that open later)
        screen.query_one("#search", SearchPane).set_sources(message.sources)
        self.connect_search()
        # Listening first: a store answering from now on is heard of, and those that answered
        # before (`BrowserStores.listen`) at once; `poke` catches up with the rest.
        arrivals = self.arrivals = Arrivals(lambda: screen.post_message(StoresArrived(stores)))
        stores.listen(arrivals.add)
        host.live.start(stores)  # one follower thread for every open store
        self.watch.failures_told = set()
        self.tell_failures(stores)
        self.watch.menu_profiles = list(stores.profiles)
        if stores.opening or stores.values_from != set(stores.profiles):
            arrivals.poke()
        if not stores.profiles:
            sessions.loading = False
            sessions.empty_text = "No store could be opened: see the badges in the header."
            sessions.set_order([])
            host.header.update()
            return
        host.reload_order()

    def connect_search(self) -> None:
        """Point the search pane at the stores the list spans."""
        stores = self.host.stores
        assert stores is not None
        names = self.host.profile_filter
        search = self.screen.query_one("#search", SearchPane)
        search.index_progress = None  # one store's CJK build progress; not said across stores
        search.connect(stores.searcher(names), stores.titles, stores.counter(names))

    # ------------------------------------------------------------------ the merged list
    @property
    def arrival_seq(self) -> int:
        """How many store arrivals were heard of (an order read before the last one missed it)."""
        return self.watch.arrival_seq

    async def merged_loaded(self, message: MergedLoaded) -> None:
        host = self.host
        result = message.result
        if message.profiles != host.profile_filter:
            return
        host.profile_counts = result.counts
        for profile, err in result.errors.items():
            self.screen.notify(
                one_line(f"{err.kind}: {err.message}"),
                title=f"Profile {one_line(profile, 30)}",
                severity="error",
                markup=False,
            )
        sessions = host.session_list
        sessions.show_profile = len(result.counts) > 1
        sessions._line_cache.clear()
        host.store_total = None
        missed = self.watch.merged(result, self._wanted())
        await host.list_order.loaded(OrderLoaded.of(result, None), result.keep_index)
        if missed or self.behind():  # stores that opened meanwhile
            host.live.refresh_order()

    def _wanted(self) -> set[str]:
        """The open stores the list shows (its profile filter's, else every one)."""
        stores = self.host.stores
        if stores is None:
            return set()
        return set(self.host.profile_filter or stores.profiles) & set(stores.profiles)

    def behind(self, opening: bool = False) -> bool:
        """The list's last merge is behind the open stores (`StoresWatch.behind`)."""
        return self.watch.behind(self.host.stores, self.host.profile_filter, opening)

    # ------------------------------------------------------------------ live over several stores
    def live_merged(self, result: OrderResult) -> bool:
        """A live order was shown (`LiveFollow.order_read`): its counts and the merge's books.
        True: stores that opened meanwhile are not in it (merge again). One store's order has
        no counts, and no store is ever behind it."""
        host = self.host
        host.profile_counts = result.counts
        host.session_list.show_profile = len(result.counts) > 1
        return self.watch.merged(result, self._wanted()) or self.behind()

    # ------------------------------------------------------------------ stores that answer late
    def arrived(self, message: StoresArrived) -> None:
        """Stores answered: the open ones join the follower, the profile menu and the list (a
        re-merge: the cursor stays on its session), the failed ones are told; once every store
        answered, the source and model menus cover them all."""
        host, screen = self.host, self.screen
        stores = host.stores
        if stores is None or message.stores is not stores or self.arrivals is None:
            return
        arrived = self.arrivals.take()
        self.watch.arrived(arrived)
        screen.set_timer(ARRIVALS_EVERY_S, self.arrivals.rearm)  # the next ones, a moment later
        self.watch.add_open(stores)
        profiles = stores.profiles
        if profiles != self.watch.menu_profiles:
            self.watch.menu_profiles = profiles
            select = screen.query_one("#filter-profile", Select)
            with screen.prevent(Select.Changed):
                picked = select.value
                select.set_options([(one_line(p, 24), p) for p in profiles])
                if isinstance(picked, str) and picked in profiles:
                    select.value = picked
        self.tell_failures(stores)
        # (While the list reads a whole order, that order's arrival says what it missed: a live
        # re-merge now would be dropped when it came.)
        loading = host.session_list.loading
        if (
            host.state == "ready"
            and not loading
            and (arrived & self.watch.merge_pending or self.behind(opening=True))
        ):
            host.live.refresh_order()
        host.header.update()
        if not stores.opening and stores.values_from != set(profiles):
            stores.values_from = set(profiles)  # read once more, by the worker
            run_thread(
                screen, partial(self._values_worker, stores), "values", "read the stores' filter choices"
            )

    def tell_failures(self, stores: BrowserStores) -> None:
        """A notification per store that could not be opened, the first few of them (each a
        badge in the header too); then one for the rest, however many."""
        for text, title in self.watch.failures(stores):
            self.screen.notify(text, title=title, severity="warning", timeout=8, markup=False)

    def _values_worker(self, stores: BrowserStores) -> None:
        try:
            sources, models = stores.values("source"), stores.values("model")
        except Exception:  # noqa: BLE001 - the menus keep what they have
            return
        self.screen.post_message(StoreValues(stores, sources, models))

    def values(self, message: StoreValues) -> None:
        """The source and model menus over every store."""
        if message.stores is not self.host.stores:
            return
        screen = self.screen
        for selector, values in (("#filter-source", message.sources), ("#filter-model", message.models)):
            select = screen.query_one(selector, Select)
            with screen.prevent(Select.Changed):
                picked = select.value
                self.host.filter_bar.set_options(selector, values)
                if isinstance(picked, str) and picked in values:
                    select.value = picked
        screen.query_one("#search", SearchPane).set_sources(message.sources)

    # ------------------------------------------------------------------ the profile filter (p)
    def toggle_profiles(self) -> None:
        """`p`: the list and search across every profile ↔ only the current profile's store.
        With one store open, the first press opens every discovered profile beside it."""
        host = self.host
        if host.state not in {"ready"}:
            return
        if host.stores is None:
            self._widen(StoreChoice(paths=(host.hermes.db_path,)), None)
            return
        current = host.stores.current
        if len(host.stores.profiles) <= 1 and not host.stores.choice.all_profiles:
            self._widen(host.stores.choice, current)  # one open: widen to all
            return
        narrowed = host.profile_filter is None and current is not None
        self.set_profile_filter((current,) if narrowed and current else None)

    def _widen(self, choice: StoreChoice, current: str | None) -> None:
        run_thread(
            self.screen,
            partial(self._widen_worker, choice, current),
            "widen",
            "find profiles",
            exclusive=True,
        )

    def _widen_worker(self, choice: StoreChoice, current: str | None) -> None:
        """`p` with one store open: open it with every other store that exists (a stat per
        profile folder, here in a worker). A store that is not there is left out rather than
        shown as a "missing" badge nobody asked for (`--demo`, a lone `--db` file, a home with
        one profile); with none, `p` says so."""
        app, screen = self.screen.app, self.screen
        wide = all_stores(choice, current)
        refs, here = wide.refs()
        existing = [r for r in refs if r.status != StoreStatus.MISSING]
        if not any(r.profile != here for r in existing):
            root = self.host.hermes.display_path(hermes_root(choice.home))
            app.call_from_thread(
                screen.notify, f"No other profiles: {root} holds no other store.", timeout=4, markup=False
            )
            return
        found = tuple(r.profile for r in existing if r.origin != "path")
        chosen = StoreChoice(profiles=found, paths=choice.paths, home=choice.home, prefer=wide.prefer or here)
        app.call_from_thread(screen.notify, "Opening every profile's store…", timeout=2)
        app.call_from_thread(self.open, chosen)

    def set_profile_filter(self, profiles: tuple[str, ...] | None) -> None:
        host, screen = self.host, self.screen
        if host.stores is None or profiles == host.profile_filter:
            return  # (no federation open: one store has no profile filter)
        host.profile_filter = profiles
        with screen.prevent(Select.Changed):
            select = screen.query_one("#filter-profile", Select)
            if profiles and len(profiles) == 1:
                select.value = profiles[0]
            else:
                select.clear()
        screen.notify(f"Profile: {one_line(profiles[0], 30)}" if profiles else "Every profile", timeout=2)
        self.connect_search()
        host.reload_order()
