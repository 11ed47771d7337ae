"""MainScreen: session list, lineage, transcript and search, and every worker that feeds them.

The event loop never runs SQL: each store call is in a `@work(thread=True)` method below,
which posts a message; the handlers only touch widgets. Session actions (rename, prune,
delete, export, stats, undo, trash, resume, copy…) are entries of the actions registry
(`actions.py`, filled by `register_actions()` and `register_handoff_actions()`): each becomes a
key bound here, and its handler runs its write in a worker and posts `SessionsChanged` — which
drops every cache here and re-queries.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, TypeAlias

from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Checkbox, Footer, Input, Select, Static
from textual.worker import get_current_worker

from hermes_tui.app import actions
from hermes_tui.app.bindings import add_binding, declared_bindings
from hermes_tui.app.controllers import messages as main_messages
from hermes_tui.app.controllers.federation import Federation
from hermes_tui.app.controllers.header import count_words, list_title, store_header, stores_header
from hermes_tui.app.controllers.live import LiveFollow
from hermes_tui.app.controllers.live_rules import (
    OrderRefresh,
    live_plan,
    store_live_plan,
)
from hermes_tui.app.controllers.opening import (
    StoreOpening,
)
from hermes_tui.app.controllers.ordering import (
    DATE_PRESETS,
    bar_filter,
    empty_text,
    filter_active,
    filter_summary,
    index_after_write,
    ordered_ids,
    remembered,
    restored_filter,
)
from hermes_tui.app.controllers.panes import Panes
from hermes_tui.app.controllers.session_view import SessionView
from hermes_tui.app.controllers.transcript_loading import (
    LoadedSession,
    doing_text,
    tip_note,
    title_text,
    transcript_subtitle,
)
from hermes_tui.app.debounce import Debouncer
from hermes_tui.app.list_views import (
    DEFAULT_FILTER,
    VIEW_CHOICES,
    VIEW_NOUNS,
    VIEW_PROMPT,
    VIEW_TITLES,
    view_of,
    with_order,
    with_view,
)
from hermes_tui.app.live_follow import APPLY_QUIET_S, LiveFollower, LiveUpdate, Pacer
from hermes_tui.app.live_order import IncrementalOrder
from hermes_tui.app.messages import LiveChanged, OpenSession, SessionsChanged, StoreFailed
from hermes_tui.app.render import (
    query_terms,
    snippet_terms,
)
from hermes_tui.app.session_context import SessionContext
from hermes_tui.app.settings import ORDERS
from hermes_tui.app.stores import (
    BrowserStores,
    StoreChoice,
)
from hermes_tui.app.widgets.lineage import LineageTree
from hermes_tui.app.widgets.search import SearchPane
from hermes_tui.app.widgets.session_list import SessionList
from hermes_tui.app.widgets.transcript import (
    TranscriptView,
)
from hermes_tui.safe_text import one_line
from hermes_tui.state import SessionDB, SessionFilter

if TYPE_CHECKING:
    from hermes_tui.app.session_context import BrowserApp

HIGHLIGHT_DEBOUNCE_S = 0.12

#: What the footer shows for each focused pane (as lazygit and k9s do): bound on the pane, so
#: Textual's stock Footer follows the focus; each acts like the screen's own (hidden) binding.
PANE_KEYS: dict[str, tuple[tuple[str, str, str], ...]] = {
    "#sessions": (
        ("slash", "screen.search", "Search"),
        ("f", "screen.filters", "Filters"),
        ("F", "screen.clear_filters", "Clear filters"),
        ("a", "screen.active_now", "Active now"),
        ("A", "screen.toggle_archived", "Archived"),
    ),
    "#transcript": (
        ("x", "toggle_folds", "Folds"),
        ("n", "screen.next_hit", "Next hit"),
        ("N", "screen.prev_hit", "Prev hit"),
        ("c", "screen.chain", "Chain"),
        ("i", "screen.toggle_inactive", "Rewound"),
        ("L", "screen.live_tip", "Live tip"),
        ("slash", "screen.search", "Find"),  # `/` in the transcript finds in it
        ("z", "screen.zoom", "Zoom"),
        ("ctrl+s", "screen.toggle_pane('list')", "List"),
    ),
    "#lineage": (
        ("enter", "jump", "Open session"),
        ("L", "screen.live_tip", "Live tip"),
        ("slash", "screen.search", "Search"),
        ("z", "screen.zoom", "Zoom"),
        ("ctrl+s", "screen.toggle_pane('list')", "List"),
    ),
    "#search": (("escape", "screen.back", "Back"),),
}
#: Registered session actions (`actions.py`) the list pane's footer shows (of two sharing a key,
#: the one that `applies` to the cursor row; under a dialog, where the footer checks nothing,
#: the one bound last: archive, pin).
LIST_ACTIONS = ("rename", "delete", "unarchive", "archive", "unpin", "pin")


def show_key(pane: Widget, key: str, action: str, description: str, priority: bool = False) -> None:
    """Bind ``key`` on ``pane`` ahead of its other bindings for that key, shown in the footer."""
    add_binding(pane, key, action, description, priority=priority, first=True)


class MainScreen(Screen[None]):
    """The browser: list | transcript, lineage under the list, search over the list."""

    AUTO_FOCUS = "#sessions"

    #: Every key works from every pane; none shows in the footer from here: each pane shows the
    #: keys that apply to it (`PANE_KEYS`), so the footer changes with the focus.
    BINDINGS: ClassVar[list[BindingType]] = [
        # A priority binding: checked when the key arrives, before it is queued at the focused
        # pane. Otherwise keys typed in the same read as `/` were already queued at the list and
        # its `q` reached the app (quit) after `/` had moved the focus. Off in text boxes.
        Binding("slash", "search", "Search", show=False, priority=True),
        Binding("escape", "back", "Back", show=False),
        Binding("n", "next_hit", "Next hit", show=False),
        Binding("N", "prev_hit", "Prev hit", show=False),
        Binding("c", "chain", "Chain", show=False),
        Binding("i", "toggle_inactive", "Rewound", show=False),
        Binding("f", "filters", "Filters", show=False),
        Binding("F", "clear_filters", "Clear filters", show=False),
        Binding("o", "cycle_order", "Order", show=False),
        Binding("z", "zoom", "Zoom", show=False),
        Binding("s", "focus_sessions", "Sessions", show=False),
        Binding("t", "focus_transcript", "Transcript", show=False),
        Binding("l", "focus_lineage", "Lineage", show=False),
        Binding("ctrl+r", "reload", "Reload", show=False),
        Binding("a", "active_now", "Active now", show=False),
        Binding("A", "toggle_archived", "Archived sessions ↔ Hermes' list", show=False),
        Binding("L", "live_tip", "Live tip", show=False),
        Binding("G", "jump_new", "Newest messages", show=False),
        # Find in the transcript: priority, so it works from every pane and box.
        Binding(
            "ctrl+f",
            "find",
            "Find in the transcript (n/N, Enter/shift+Enter: next/previous)",
            show=False,
            priority=True,
        ),
        Binding("d", "open_demo", "Open demo"),  # shown only when no database is open
        # Panes, remembered in the settings file.
        Binding("less_than_sign,ctrl+left", "resize_list(-1)", "Narrower session list", show=False),
        Binding("greater_than_sign,ctrl+right", "resize_list(1)", "Wider session list", show=False),
        Binding("equals_sign", "resize_list(0)", "Session list at its automatic width", show=False),
        # ctrl+b is tmux's prefix (tmux never passes it on): ctrl+s (s for sessions, as `s`
        # focuses them) works everywhere.
        Binding("ctrl+b,ctrl+s", "toggle_pane('list')", "Show/hide the session list", show=False),
        Binding("ctrl+l", "toggle_pane('lineage')", "Show/hide the lineage", show=False),
        Binding("ctrl+t", "toggle_pane('transcript')", "Show/hide the transcript", show=False),
        Binding("p", "toggle_profiles", "Profiles: current ↔ all", show=False),
    ]

    # The screen's messages (`controllers/messages.py`), under their names here too.
    Opened: TypeAlias = main_messages.Opened
    Missing: TypeAlias = main_messages.Missing
    OpenFailed: TypeAlias = main_messages.OpenFailed
    OrderLoaded: TypeAlias = main_messages.OrderLoaded
    SessionLoaded: TypeAlias = main_messages.SessionLoaded
    ModelsRead: TypeAlias = main_messages.ModelsRead
    StoresOpened: TypeAlias = main_messages.StoresOpened
    StoresArrived: TypeAlias = main_messages.StoresArrived
    StoreValues: TypeAlias = main_messages.StoreValues
    MergedLoaded: TypeAlias = main_messages.MergedLoaded
    StoreLive: TypeAlias = main_messages.StoreLive
    MergedLive: TypeAlias = main_messages.MergedLive
    LiveSession: TypeAlias = main_messages.LiveSession
    LiveOrder: TypeAlias = main_messages.LiveOrder

    def __init__(self) -> None:
        super().__init__()
        self._db: SessionDB | None = None
        self._info_text: Text | None = None  # the header as last set (`_info`)
        #: Several profiles' stores: set once they are open; then `db` is the store
        #: of the selected row, `current_profile` the open transcript's store.
        self.stores: BrowserStores | None = None
        #: (session, live tip) the footer's bindings were last refreshed for.
        self._bindings_tip: tuple[str | None, str | None] | None = None
        #: Which of the actions sharing a key applied when the footer was last refreshed.
        self._action_keys: tuple[bool, ...] = ()
        self.current_profile: str | None = None
        #: The profiles the list and search span (None: every open store).
        self.profile_filter: tuple[str, ...] | None = None
        self.profile_counts: dict[str, int] = {}
        #: Several stores: opening them, the merged list, their follower (`federation.py`).
        self.federation = Federation(self)
        #: One store's live follow, and what live reports do (`live.py`).
        self.live = LiveFollow(self)
        #: Reading the session shown; the list's cursor following it (`session_view.py`).
        self.view = SessionView(self)
        #: Opening one store (`opening.py`).
        self.opening = StoreOpening(self)
        self.caps: dict[str, Any] = {}
        self.filter = DEFAULT_FILTER
        self.order = "last_active"
        self.current_session: str | None = None
        self.chain_mode = False
        self.state = "opening"
        self._highlight_due = Debouncer(self, HIGHLIGHT_DEBOUNCE_S)
        self.panes = Panes(self)
        self._wanted: str | None = None
        self._wanted_profile: str | None = None
        #: (wanted session, the list row standing for it) when the list holds it under another
        #: id (a compression chain listed as its tip): the cursor there keeps the transcript.
        self._wanted_row: tuple[Any, Any] | None = None
        self._came_from_search = False
        self._last_loaded: LoadedSession | None = None
        self._filter_days: int | None = None
        self.last_order_seconds = 0.0
        for spec in actions.ACTIONS:
            add_binding(self, spec.key, f"run_action({spec.name!r})", spec.description, show=False)
        self.store_total: int | None = None  # sessions in the store, whatever the filter
        #: Live follow: the polling thread's follower, the "active now" filter, and
        #: a live order refresh in flight / asked for again meanwhile.
        self.follower: LiveFollower | None = None
        self.active_only = False
        #: One live order refresh at a time, and one missed while the head was shown.
        self.order_refresh = OrderRefresh(self.set_timer)
        # The list cursor when this app's own write asked for a reload: a selected session that
        # the write removed gives its place to the next row (`_order_loaded`), as a live reorder does.
        self._reload_near: tuple[Any, int] | None = None
        #: The list's order as live changes move it (only the sessions they name are re-read).
        self.live_ids = IncrementalOrder()
        #: The open session's live reads: one at a time, at most five a second (a burst of
        #: messages is one mount and one scroll, not one per poll).
        self.session_pace = Pacer(quiet_s=APPLY_QUIET_S)

    @property
    def hermes(self) -> BrowserApp:
        """The app, typed as the screens see it (`session_context.BrowserApp`)."""
        return self.app  # type: ignore[return-value]

    @property
    def session_context(self) -> SessionContext:
        """What a dialog gets of the browser instead of this screen (`session_context.py`)."""
        return SessionContext(
            db_for=self.db_for,
            now=self.hermes.now,
            notify=self.notify,
            sessions_changed=self._post_sessions_changed,
            display_path=self.hermes.display_path,
            list_view=lambda: (self.filter, self.order),
        )

    def _post_sessions_changed(self, ids: tuple[str, ...]) -> None:
        self.post_message(SessionsChanged(ids))

    def reopen(self, path: Path) -> None:
        """Open ``path`` again with the list focused (the repair panel, after a repair)."""
        self.session_list.focus()
        self.open_database(path)

    # ------------------------------------------------------------------ the owning store (#20)
    @property
    def db(self) -> SessionDB | None:
        """The store actions act on: the one open store, or over several profiles the store of
        the selected row (the list's cursor row when the list has the focus, else the open
        transcript's), so rename/delete/prune/export/stats reach the row's own store."""
        if self.stores is None:
            return self._db
        return self.stores.db_for(self.selected_profile or self.stores.current)

    @db.setter
    def db(self, value: SessionDB | None) -> None:
        self._db = value

    @property
    def selected_profile(self) -> str | None:
        """The store of the session actions apply to (None with one store)."""
        if self.stores is None:
            return None
        sessions = self.session_list
        if self.focused is sessions or self.current_session is None:
            return sessions.selected_profile or self.current_profile
        return self.current_profile

    def row_key(self, profile: str | None, session_id: Any) -> Any:
        """The list's key of a session: ``(profile, id)`` over several stores, the id with one."""
        return (profile, session_id) if self.stores is not None else session_id

    def db_for(self, profile: str | None) -> SessionDB | None:
        """The open store of ``profile`` (the one store when there are not several)."""
        if self.stores is None:
            return self._db
        return self.stores.db_for(profile)

    # ------------------------------------------------------------------ compose
    def compose(self) -> ComposeResult:
        now = self.hermes.now
        yield Static(Text("hermes-tui · opening…"), id="info")
        yield Static(Text(""), id="notice")
        with Horizontal(id="body"):
            with Vertical(id="left"):
                with Horizontal(id="filters"):
                    yield Select[str]([], prompt="any source", id="filter-source", compact=True)
                    yield Select[str]([], prompt="any model", id="filter-model", compact=True)
                    yield Select[int](list(DATE_PRESETS), prompt="any time", id="filter-date", compact=True)
                    yield Input(placeholder="title/id…", id="filter-text", compact=True)
                    yield Checkbox("active now", id="filter-active", compact=True)
                    yield Select[str](list(VIEW_CHOICES), prompt=VIEW_PROMPT, id="filter-view", compact=True)
                    yield Select[str]([], prompt="any profile", id="filter-profile", compact=True)
                yield SessionList(now=now, id="sessions")
                yield SearchPane(now=now, id="search")
                yield LineageTree(id="lineage")
            with Vertical(id="right"):
                yield Static(Text(""), id="transcript-title")
                yield TranscriptView(id="transcript")
        # Compact, palette hint off (it is in help): the list pane's keys and ? / q fit 80 columns.
        yield Footer(compact=True, show_command_palette=False)

    def on_mount(self) -> None:
        for selector, keys in PANE_KEYS.items():
            pane = self.query_one(selector)
            for key, action, description in keys:
                # A key the screen checks first (priority) must be priority on the pane too, or
                # the screen's hidden binding replaces the pane's in the footer.
                priority = any(b.priority for b in declared_bindings(type(self)).get(key, []))
                show_key(pane, key, action, description, priority)
        for name in LIST_ACTIONS:
            spec = actions.find(name)
            if spec is not None:
                show_key(self.session_list, spec.key, f"screen.run_action({name!r})", spec.description)
        self._fit_footer(self.app.size.width)
        self.query_one("#sessions", SessionList).border_title = "Sessions"
        self.query_one("#lineage", LineageTree).border_title = "Lineage"
        self.query_one("#transcript", TranscriptView).border_title = "Transcript"
        self.query_one("#search", SearchPane).border_title = "Search"
        self.query_one("#sessions", SessionList).loading = True
        self.query_one("#sessions", SessionList).focus()
        self.query_one("#filter-profile", Select).display = False  # shown over several stores
        self.session_list.on_visible = self.live.visible_changed
        self._restore_settings()
        choice = getattr(self.hermes, "store_choice", None)
        if isinstance(choice, StoreChoice):
            self.federation.open(choice)
        else:
            self.open_database(self.hermes.db_path)

    # ------------------------------------------------------------------ accessors for actions
    @property
    def session_list(self) -> SessionList:
        """The session list widget."""
        return self.query_one("#sessions", SessionList)

    @property
    def selected_session_id(self) -> str | None:
        """The session the user is looking at (transcript first, else the list cursor)."""
        return self.current_session or self.session_list.selected_id

    @property
    def selected_row(self) -> dict[str, Any] | None:
        """Cached list row of the session under the list cursor."""
        return self.session_list.selected_row

    @property
    def current_row(self) -> dict[str, Any] | None:
        """The list row of the session the transcript shows (as last read), else None."""
        loaded = self._last_loaded
        return loaded.row if loaded is not None and loaded.session_id == self.current_session else None

    # ------------------------------------------------------------------ opening
    # `controllers/opening.py` does the work; these route its workers' messages to it.
    def open_database(self, path: Path) -> None:
        """Open ``path`` in a worker; the panes show progress meanwhile (`StoreOpening.open`)."""
        self.opening.open(path)

    @on(Opened)
    def _opened(self, message: Opened) -> None:
        self.opening.opened(message)

    @on(ModelsRead)
    def _models_read(self, message: ModelsRead) -> None:
        self.opening.models_read(message)

    @on(Missing)
    async def _missing(self, message: Missing) -> None:
        self.opening.missing(message)

    @on(OpenFailed)
    async def _open_failed(self, message: OpenFailed) -> None:
        self.opening.failed(message)
        from hermes_tui.app.screens.repair import offer_repair  # a damaged store: diagnose, offer R

        offer_repair(self, self, message.path, message.error)

    def action_open_demo(self) -> None:
        """Build (once) and open the demo database; only offered when nothing is open."""
        self.opening.open_demo()

    # ------------------------------------------------------------------ several profiles (#20)
    # `controllers/federation.py` does the work; these route its workers' messages to it.
    @on(StoresOpened)
    def _stores_opened(self, message: StoresOpened) -> None:
        self.federation.opened(message)

    @on(MergedLoaded)
    async def _merged_loaded(self, message: MergedLoaded) -> None:
        await self.federation.merged_loaded(message)

    @on(StoresArrived)
    def _stores_arrived(self, message: StoresArrived) -> None:
        self.federation.arrived(message)

    @on(StoreValues)
    def _store_values(self, message: StoreValues) -> None:
        self.federation.values(message)

    @on(MergedLive)
    def _merged_live(self, message: MergedLive) -> None:
        self.federation.merged_live(message)

    @on(StoreLive)
    async def _store_live(self, message: StoreLive) -> None:
        update = message.update
        if self.stores is None:
            return
        plan = store_live_plan(message.profile, update, self.live.view(bool(update.changes)))
        await self.live.carry_out(plan, update.changes, federated=True)

    def _gate_live_order(self, start: Callable[[], object]) -> None:
        """One live order refresh at a time (`live_rules.OrderRefresh`)."""
        self.order_refresh.ask(start)

    def action_toggle_profiles(self) -> None:
        """`p`: every profile ↔ the current one (`Federation.toggle_profiles`)."""
        self.federation.toggle_profiles()

    # ------------------------------------------------------------------ header
    def _info(self, text: Text) -> None:
        """Set the header, if it changed: a repaint of the header line widens the frame's update
        to the whole screen (Textual redraws the box around everything that changed), and a
        live change sets the same header again several times a second."""
        if text != self._info_text:
            self._info_text = text
            self.query_one("#info", Static).update(text)

    def _update_info(self) -> None:
        """The header (`controllers/header.py`), fitted to its width."""
        if self.stores is not None:
            self._update_info_stores()
            return
        width = max(20, self.query_one("#info", Static).content_region.width or self.size.width - 2)
        ready = self.state == "ready"
        count = count_words(
            ready,
            self.session_list.provisional,
            self.session_list.total,
            VIEW_NOUNS[view_of(self.filter)],
            bool(self.filter_summary()) if ready else False,
            self.store_total,
        )
        self._info(store_header(width, self.caps, self.hermes.display_path(self.hermes.db_path), count))

    def _update_info_stores(self) -> None:
        """The header over several profiles, and its tooltip naming the stores that failed."""
        stores = self.stores
        assert stores is not None

        def read_only(profile: str) -> bool:
            ref = stores.ref(profile)
            return ref is not None and (ref.read_only or stores.fed.read_only)

        text, tooltip = stores_header(
            self.state == "ready", self.profile_counts, read_only, len(stores.opening), stores.failed
        )
        self.query_one("#info", Static).tooltip = tooltip
        self._info(text)

    def on_resize(self, event: events.Resize) -> None:
        self._fit_panes(event.size.width)
        self._fit_footer(event.size.width)
        if self.state == "ready":
            self.call_after_refresh(self._update_info)

    def _fit_footer(self, width: int | None = None) -> None:
        self.panes.fit_footer(width, view_of(self.filter), bool(self.filter_summary()))

    def _fit_panes(self, width: int | None = None) -> None:
        self.panes.fit(width)

    # ------------------------------------------------------------------ list
    def _set_options(self, selector: str, values: list[str]) -> None:
        select = self.query_one(selector, Select)
        select.set_options([(one_line(v, 40), v) for v in values])

    def reload_order(self, keep: Any = None) -> None:
        """Re-run `session_order` for the current filter (keeps the cursor on ``keep``)."""
        self._remember_list()
        self.live_ids.invalidate()
        if self.stores is not None:
            self.session_list.loading = True
            self.federation.load_merged(
                self.filter,
                self.order,
                self.profile_filter,
                keep or self.session_list.selected_key,
                self.active_only,
            )
            return
        if self.db is None:
            return
        self.session_list.loading = True
        self.load_order_worker(
            self.filter, self.order, keep or self.session_list.selected_id, self.active_only
        )

    @work(thread=True, exit_on_error=False, exclusive=True, group="order", description="order sessions")
    def load_order_worker(
        self, flt: SessionFilter, order: str, keep: str | None, active: bool = False
    ) -> None:
        """One indexed query for the ordered ids; rows come later, a page at a time. A filtered
        list also counts the whole store (one COUNT), for "3 of 34"."""
        assert self.db is not None
        started = time.perf_counter()
        store_total: int | None = None
        try:
            ids, store_total = ordered_ids(self.db, flt, order, active, self.hermes.now())
        except Exception as exc:
            self.post_message(StoreFailed("list sessions", f"{type(exc).__name__}: {exc}"))
            ids = []
        if not get_current_worker().is_cancelled:
            self.post_message(self.OrderLoaded(ids, keep, time.perf_counter() - started, store_total))

    @on(OrderLoaded)
    async def _order_loaded(self, message: OrderLoaded, keep_index: int | None = None) -> None:
        sessions = self.session_list
        sessions.loading = False
        self.last_order_seconds = message.seconds
        if message.store_total is not None:
            self.store_total = message.store_total
        sessions.empty_text = empty_text(self.filter_summary(), view_of(self.filter))
        if message.first_rows:
            sessions.seed_page(0, message.first_rows)
        if message.provisional:  # first paint: the head of an order still being read
            sessions.set_order(message.ids, provisional=True)
        elif message.handover:  # its whole order: the cursor and the view stay where they are
            at_top = sessions.cursor == 0 and not sessions.waiting_moves
            sessions.update_order(message.ids)
            if at_top and self.filter.pinned_first and sessions.cursor != 0:
                # The head was read without the pins, which the whole order puts above it: a
                # cursor on the first row stays on the first row.
                sessions.cursor = 0
            if self.order_refresh.missed:  # the order may have been read before that change
                self.order_refresh.missed = False
                self._refresh_order_live()
        else:
            near, self._reload_near = self._reload_near, None
            if keep_index is None:
                keep_index = index_after_write(near, message.keep, message.ids)
            sessions.set_order(message.ids, keep=message.keep, keep_index=keep_index)
        self._update_list_title()
        sessions.border_subtitle = "" if self.order == "last_active" else f"by {self.order.replace('_', ' ')}"
        self._update_info()
        self._fit_footer()
        self.refresh_bindings()
        if not message.ids:
            self.current_session = None
            transcript = self.query_one("#transcript", TranscriptView)
            await transcript.clear_transcript(sessions.empty_text)
            transcript.show_subtitle("")
            self.query_one("#transcript-title", Static).update(Text(""))
            self.query_one("#lineage", LineageTree).show_lineage(None)

    def _update_list_title(self) -> None:
        """The list's border title (`header.list_title`)."""
        sessions = self.session_list
        view = view_of(self.filter)
        sessions.border_title = list_title(
            VIEW_TITLES[view],
            sessions.total,
            sessions.provisional,
            view == "default",
            self.filter_summary(),
            self.store_total,
            len(sessions.selection),
        )

    @on(SessionList.SelectionChanged)
    def _selection_changed(self, message: SessionList.SelectionChanged) -> None:
        self._update_list_title()

    @property
    def filter_active(self) -> bool:
        """Some filter narrows the list or another view is shown (`ordering.filter_active`)."""
        return filter_active(self.filter, self.active_only, self.profile_filter)

    def filter_summary(self) -> str:
        """The active filter in a few words (`ordering.filter_summary`), or ""."""
        profiles = self.profile_filter if self.stores is not None else None
        return filter_summary(self.filter, self._filter_days, self.active_only, profiles)

    @on(Select.Changed, "#filters Select")
    @on(Input.Changed, "#filter-text")
    def _filters_changed(self, event: Select.Changed | Input.Changed) -> None:
        event.stop()
        source = self.query_one("#filter-source", Select).value
        model = self.query_one("#filter-model", Select).value
        days = self.query_one("#filter-date", Select).value
        text = self.query_one("#filter-text", Input).value.strip()
        view = self.query_one("#filter-view", Select).value
        if self.stores is not None and event.control.id == "filter-profile":
            profile = self.query_one("#filter-profile", Select).value
            self.federation.set_profile_filter((profile,) if isinstance(profile, str) else None)
            return
        self._filter_days = days if isinstance(days, int) else None
        self.filter = bar_filter(self.filter, source, model, days, text, view, self.hermes.now())
        self.reload_order()

    def action_toggle_archived(self) -> None:
        """`A`: Hermes' archived view ↔ its list (the other filters stay). Remembered."""
        if self.state != "ready":
            return
        view = "default" if view_of(self.filter) == "archived" else "archived"
        self._show_view(view)
        self.notify(
            "Archived sessions (A: back to the list)" if view == "archived" else "Hermes' list (A: archived)",
            timeout=2,
            markup=False,
        )

    def _show_view(self, view: str) -> None:
        """List `view` (`list_views.VIEWS`) and show it in the filter bar's view menu."""
        with self.prevent(Select.Changed):
            select = self.query_one("#filter-view", Select)
            if view == "default":
                select.clear()
            else:
                select.value = view
        self.filter = with_view(self.filter, view)
        self.reload_order()

    def action_clear_filters(self) -> None:
        """Drop every filter (source, model, time, title/id text, the view) and show Hermes' list
        again."""
        with self.prevent(Select.Changed, Input.Changed):
            for selector in ("#filter-source", "#filter-model", "#filter-date", "#filter-view"):
                self.query_one(selector, Select).clear()
            self.query_one("#filter-text", Input).value = ""
            self.query_one("#filter-active", Checkbox).value = False
            self.query_one("#filter-profile", Select).clear()
        if self.profile_filter is not None:
            self.profile_filter = None
            if self.stores is not None:
                self.federation.connect_search()
        self.active_only = False
        self.filter = with_order(SessionFilter(), self.order)
        self._filter_days = None
        self.notify("Filters cleared", timeout=2)
        self.reload_order()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Keys that cannot apply now are hidden from the footer and do nothing."""
        if action == "search":
            return not isinstance(self.focused, Input)
        if action == "open_demo":
            return self.state in {"missing", "failed"}
        if action == "clear_filters":
            return self.filter_active
        if action in {"next_hit", "prev_hit"}:
            return self.has_class("-searching") and bool(self.query_one("#search", SearchPane).hits)
        if action == "live_tip":
            return self.query_one("#lineage", LineageTree).live_tip is not None
        if action == "run_action" and parameters:
            spec = actions.find(str(parameters[0]))
            if spec is not None and spec.applies is not None:
                return spec.applies(self)
        return True

    def _refresh_action_keys(self) -> None:
        """Refresh the footer when a key shared by two actions (m: archive / unarchive) now does
        the other one: the footer recomposes on every refresh, so only then."""
        state = tuple(bool(a.applies(self)) for a in actions.ACTIONS if a.applies is not None)
        if state != self._action_keys:
            self._action_keys = state
            self.refresh_bindings()

    @on(SessionList.Highlighted)
    def _highlighted(self, message: SessionList.Highlighted) -> None:
        self._refresh_action_keys()
        if message.session_id is None or (message.session_id, message.profile) == (
            self._wanted,
            self._wanted_profile,
        ):
            return
        row = self.row_key(message.profile, message.session_id)
        wanted = self.row_key(self._wanted_profile, self._wanted)
        if (wanted, row) == self._wanted_row:
            return  # the chain's row of the session shown (`_cursor_to_found`)
        self._wanted_row = None
        self._wanted = message.session_id
        self._wanted_profile = message.profile
        self._highlight_due.restart(
            lambda: self.load_session(message.session_id or "", profile=message.profile)
        )

    @on(SessionList.Selected)
    def _selected(self, message: SessionList.Selected) -> None:
        self._came_from_search = False
        if (message.session_id, message.profile) != (self.current_session, self.current_profile):
            self.load_session(message.session_id, focus=True, profile=message.profile)
        else:
            self.query_one("#transcript", TranscriptView).focus()

    @on(SessionList.PageFailed)
    def _page_failed(self, message: SessionList.PageFailed) -> None:
        self.notify(one_line(message.error), title="Could not load sessions", severity="error", markup=False)

    @on(StoreFailed)
    def _store_failed(self, message: StoreFailed) -> None:
        self.notify(
            one_line(message.error), title=f"Could not {message.action}", severity="error", markup=False
        )

    @on(SessionsChanged)
    def _sessions_changed(self, message: SessionsChanged) -> None:
        """A write happened (actions issue): drop caches and re-query everything shown."""
        self.session_list.invalidate()
        current, profile = self.current_session, self.current_profile
        keep = self.row_key(profile, current) if current else current
        if message.keep_cursor and self.session_list.selected_key is not None:
            keep = self.session_list.selected_key
        self._reload_near = (keep or self.session_list.selected_key, self.session_list.cursor)
        self.reload_order(keep=keep)
        if current is not None:
            self.current_session = None
            self.load_session(current, profile=profile, reload=True)

    # ------------------------------------------------------------------ transcript + lineage
    def load_session(
        self,
        session_id: str,
        target_id: int | None = None,
        terms: tuple[str, ...] = (),
        focus: bool = False,
        profile: str | None = None,
        reload: bool = False,
    ) -> None:
        """Fetch a transcript and its lineage in a worker (the newest request wins). Over several
        stores ``profile`` names the session's store (default: the open transcript's). A
        ``reload`` of the shown session after this app's own write finds it gone when that
        write deleted it: the pane says so, it is not an error."""
        if self.stores is not None and profile is None:
            profile = self.current_profile
        db = self.db_for(profile)
        if db is None or not session_id:
            return
        self._wanted = session_id
        self._wanted_profile = profile
        self.view.read(session_id, target_id, terms, focus, self.chain_mode, db, profile, reload)

    @on(SessionLoaded)
    async def _session_loaded(self, message: SessionLoaded) -> None:
        loaded = message.loaded
        transcript = self.query_one("#transcript", TranscriptView)
        transcript.loading = False
        self.current_session = loaded.session_id
        self.current_profile = loaded.profile
        self._last_loaded = loaded
        await transcript.show(loaded.data, target_id=loaded.target_id, terms=loaded.terms)
        transcript.border_title = "Chain" if loaded.data.chain else "Transcript"
        transcript.show_subtitle(self._transcript_subtitle(loaded))
        self.query_one("#transcript-title", Static).update(self._title_text(loaded.row))
        self.query_one("#lineage", LineageTree).show_lineage(loaded.lineage)
        self._show_live_tip()
        self._care_changed()
        self._refresh_action_keys()
        if loaded.focus:
            transcript.focus()

    def _transcript_subtitle(self, loaded: LoadedSession) -> str:
        transcript = self.query_one("#transcript", TranscriptView)
        search = self.query_one("#search", SearchPane)
        hit = None
        if (
            loaded.target_id is not None
            and self.has_class("-searching")
            and search.hits
            and search.highlighted is not None
        ):
            hit = f"hit {search.highlighted + 1:,}/{search.total_label()}"
        return transcript_subtitle(
            loaded.data.items,
            show_inactive=self.has_class("-show-inactive"),
            showing_hidden=transcript.showing_hidden_rows,
            hit=hit,
            new_below=transcript.new_below,
        )

    def _title_text(self, row: dict[str, Any], note: str = "") -> Text:
        key = self.row_key(row.get("profile"), row.get("id"))
        doing = doing_text(row, self.session_list.live.get(key))
        return title_text(row, note, doing, show_profile=self.stores is not None)

    @on(LineageTree.Jump)
    def _lineage_jump(self, message: LineageTree.Jump) -> None:
        self.open_session(message.session_id)

    @on(OpenSession)
    def _open_session_message(self, message: OpenSession) -> None:
        self.open_session(message.session_id, message.message_id, message.terms, profile=message.profile)

    def open_session(
        self,
        session_id: str,
        message_id: int | None = None,
        terms: tuple[str, ...] = (),
        profile: str | None = None,
    ) -> None:
        """Show a session from anywhere (palette, lineage) and move the list cursor to it. Over
        several stores ``profile`` names its store (default: the open transcript's)."""
        self._came_from_search = False
        profile = (profile or self.current_profile) if self.stores is not None else None
        self._cursor_to(session_id, profile)
        self._wanted = session_id
        self._wanted_profile = profile
        self._highlight_due.cancel()
        self.load_session(session_id, message_id, terms, focus=True, profile=profile)

    def _cursor_to(self, session_id: str, profile: str | None) -> None:
        """The list's cursor to a session's row (`SessionView.cursor_to`)."""
        self.view.cursor_to(session_id, profile)

    # ------------------------------------------------------------------ search
    def action_search(self) -> None:
        """Show the search pane with the caret in its box, even while the store still opens.

        Focus is set synchronously: `Widget.focus()` is deferred, so a key typed right after `/`
        (in the same read) reached the list, then the app, whose `q` quit. A query typed before
        the open finishes runs once it does (`_opened`).
        """
        if self.state not in {"opening", "ready"}:
            return
        transcript = self.query_one("#transcript", TranscriptView)
        focused = self.focused
        if transcript.data is not None and focused is not None and transcript in focused.ancestors_with_self:
            self.call_later(transcript.open_find)  # `/` in the transcript finds in it
            return
        self.add_class("-searching")
        self.set_focus(self.query_one("#search-input", Input))

    async def action_find(self) -> None:
        """ctrl+f: the find bar under the open transcript."""
        transcript = self.query_one("#transcript", TranscriptView)
        if transcript.data is None:
            self.notify("No transcript open: open a session first.", timeout=2)
            return
        await transcript.open_find()

    @on(SearchPane.HitChosen)
    def _hit_chosen(self, message: SearchPane.HitChosen) -> None:
        hit = message.hit
        terms = tuple(snippet_terms(hit.get("snippet")) or query_terms(message.query))
        self._came_from_search = True
        self._wanted = hit["session_id"]
        self.load_session(hit["session_id"], int(hit["id"]), terms, focus=True, profile=hit.get("profile"))

    def action_next_hit(self) -> None:
        self._step_hit(+1)

    def action_prev_hit(self) -> None:
        self._step_hit(-1)

    def _step_hit(self, delta: int) -> None:
        transcript = self.query_one("#transcript", TranscriptView)
        if transcript.finding and self.focused is not None and transcript in self.focused.ancestors_with_self:
            self.call_later(transcript.step_find, delta)  # the find's matches, not the search's
            return
        search = self.query_one("#search", SearchPane)
        if not self.has_class("-searching") or not search.hits:
            self.notify("No search hits: press / to search.", timeout=2)
            return
        search.step(delta)

    async def leave_search(self) -> None:
        """Close the search pane: the transcript drops its hit marker and "hit i/N" where the
        reader is, and the list cursor goes to the session it shows (a hit opened from the
        search is what the user was reading; the cursor stayed on the row left before)."""
        self.remove_class("-searching")
        self._came_from_search = False
        self.refresh_bindings()
        if self.current_session is not None and self._wanted == self.current_session:
            self._cursor_to(self.current_session, self.current_profile)
        loaded = self._last_loaded
        if loaded is None or loaded.target_id is None or loaded.session_id != self.current_session:
            return
        plain = replace(loaded, target_id=None, terms=())
        self._last_loaded = plain
        transcript = self.query_one("#transcript", TranscriptView)
        if transcript.data is loaded.data:
            await transcript.clear_hit()
        transcript.show_subtitle(self._transcript_subtitle(plain))

    def action_back(self) -> None:
        """Escape: transcript → search results (state kept) → list; closes filters first."""
        focused = self.focused
        search = self.query_one("#search", SearchPane)
        if (
            self.has_class("-filters")
            and focused is not None
            and focused.id
            and focused.id.startswith("filter")
        ):
            self.remove_class("-filters")
            self.session_list.focus()
        elif (
            isinstance(focused, TranscriptView | LineageTree)
            and self._came_from_search
            and self.has_class("-searching")
        ):
            search.action_focus_results()
        elif self.has_class("-searching"):
            self.session_list.focus()
            self.call_later(self.leave_search)
        elif self.has_class("-zoom-left") or self.has_class("-zoom-right"):
            self.remove_class("-zoom-left", "-zoom-right")
            self._fit_panes()
        else:
            self.session_list.focus()

    # ------------------------------------------------------------------ view toggles
    def action_chain(self) -> None:
        """Read the whole compression chain of the current session as one transcript."""
        self.chain_mode = not self.chain_mode
        self.notify(
            "Chain reader on: compression segments in one transcript"
            if self.chain_mode
            else "Chain reader off",
            timeout=2,
        )
        if self.current_session:
            self.load_session(self.current_session, focus=True)

    def action_toggle_inactive(self) -> None:
        """Show or hide rewound and compaction-archived messages (dimmed when shown)."""
        self.toggle_class("-show-inactive")
        shown = self.has_class("-show-inactive")
        self.notify(
            "Rewound/compacted messages shown" if shown else "Rewound/compacted messages hidden", timeout=2
        )

    def action_filters(self) -> None:
        self.toggle_class("-filters")
        if self.has_class("-filters"):
            self.panes.reveal("list")  # the filters sit over the list
            self.query_one("#filter-source", Select).focus()
        else:
            self.session_list.focus()

    def action_cycle_order(self) -> None:
        self.order = ORDERS[(ORDERS.index(self.order) + 1) % len(ORDERS)]
        self.filter = with_order(self.filter, self.order)
        self.notify(f"Ordered by {self.order.replace('_', ' ')}", timeout=2)
        self.reload_order()

    def action_zoom(self) -> None:
        """Give the focused side the whole width (the list then shows every column)."""
        if self.has_class("-zoom-left") or self.has_class("-zoom-right"):
            self.remove_class("-zoom-left", "-zoom-right")
            self._fit_panes()
            return
        focused = self.focused
        right = focused is not None and any(a.id == "right" for a in focused.ancestors_with_self)
        self.add_class("-zoom-right" if right else "-zoom-left")
        self._fit_panes()

    def action_focus_sessions(self) -> None:
        self.panes.reveal("list")
        self.session_list.focus()
        if self.has_class("-searching"):
            self.call_later(self.leave_search)

    def action_focus_transcript(self) -> None:
        self.panes.reveal("transcript")
        self.query_one("#transcript", TranscriptView).focus()

    def action_focus_lineage(self) -> None:
        self.panes.reveal("lineage")
        self.query_one("#lineage", LineageTree).focus()

    # ------------------------------------------------------------------ panes, remembered settings (#19)
    def _restore_settings(self) -> None:
        """Start with the remembered order, filters and panes (settings.py); the source filter's
        menu is set once the store's sources are known (`_restore_source`)."""
        settings = self.hermes.settings
        self.order = settings.order
        self.active_only = settings.active_now
        self.filter = restored_filter(
            self.filter, self.order, settings.source, settings.filter_text, settings.view
        )
        with self.prevent(Input.Changed, Checkbox.Changed, Select.Changed):
            self.query_one("#filter-text", Input).value = settings.filter_text
            self.query_one("#filter-active", Checkbox).value = settings.active_now
            if settings.view != "default":
                self.query_one("#filter-view", Select).value = settings.view
        self.panes.apply()

    def _restore_source(self, sources: list[str]) -> None:
        """Show the remembered source in its menu. One this store lacks stays in the filter (the
        list's border names it and F clears it) rather than being dropped without a word."""
        source = self.filter.sources[0] if len(self.filter.sources) == 1 else None
        if source in sources:
            with self.prevent(Select.Changed):
                self.query_one("#filter-source", Select).value = source

    def _remember_list(self) -> None:
        """Every list reload passes the order and filters to the settings; they are written only
        when they differ from the file, i.e. after the user changed one."""
        self.hermes.remember(**remembered(self.filter, self.order, self.active_only))

    def action_toggle_pane(self, pane: str) -> None:
        """Show or hide a pane (`Panes.toggle`)."""
        self.panes.toggle(pane)

    @on(events.DescendantFocus)
    def _focused_hidden_pane(self, event: events.DescendantFocus) -> None:
        """A hidden pane never keeps the focus (Esc from search focuses the list, hidden or not)."""
        if self.panes.hidden(event.widget):
            self.call_later(self.panes.focus_shown)

    def action_resize_list(self, steps: int) -> None:
        """The list pane wider or narrower, or automatic (`Panes.resize_list`)."""
        self.panes.resize_list(steps)

    def action_run_action(self, name: str) -> None:
        """Dispatch a key bound through `hermes_tui.app.actions` (rename, prune, …)."""
        spec = actions.find(name)
        if spec is None:
            self.notify(f"Unknown action {name!r}", severity="error")
        elif self.db is None:
            self.notify("No database is open.", severity="warning")
        else:
            spec.handler(self)

    def action_reload(self) -> None:
        self.post_message(SessionsChanged())
        search = self.query_one("#search", SearchPane)
        if self.has_class("-searching") and search.shown is not None:
            search.refresh_results()

    # ------------------------------------------------------------------ live follow
    def on_unmount(self) -> None:
        if self.follower is not None:
            self.follower.stop()
        self.federation.watch.stop()
        if self.stores is not None:
            self.stores.close()

    @on(events.Key)
    @on(events.MouseDown)
    @on(events.MouseScrollDown)
    @on(events.MouseScrollUp)
    def _user_input(self, event: events.Event) -> None:
        """Input keeps the follower at its fast rate (it slows down after a quiet spell)."""
        if self.follower is not None:
            self.follower.touch()

    def _care_changed(self, visible: list[str] | None = None) -> None:
        """What the follower(s) care about (`LiveFollow.care`)."""
        self.live.care(visible)

    @on(LiveChanged)
    async def _live_changed(self, message: LiveChanged) -> None:
        update = message.update
        assert isinstance(update, LiveUpdate)
        plan = live_plan(update, self.live.view(bool(update.changes)))
        await self.live.carry_out(plan, update.changes)

    def _follow_session(self, wait: float | None) -> None:
        """Act on the pacer's answer (`LiveFollow.follow_session`)."""
        self.live.follow_session(wait)

    @on(LiveSession)
    async def _live_session(self, message: LiveSession) -> None:
        try:
            await self._apply_live_session(message)
        finally:  # what changed meanwhile is read next (paced)
            self._follow_session(self.session_pace.finished())

    async def _apply_live_session(self, message: LiveSession) -> None:
        if message.failed or message.session_id != self.current_session:
            return  # the reader moved on meanwhile
        if message.row is None:
            await self._current_deleted(message.session_id)
            return
        loaded = self._last_loaded
        if loaded is not None and loaded.session_id == message.session_id:
            loaded.row = message.row
        transcript = self.query_one("#transcript", TranscriptView)
        data = transcript.data
        # One frame for all of it: a frame between the mount and the subtitle painted the new
        # message twice (the subtitle repaints the transcript with its children).
        with self.app.batch_update():
            transcript.update_activity(message.row)
            if message.items and data is not None and data.session_id == message.session_id:
                await transcript.append_items(message.items)
            if message.lineage is not None:
                if loaded is not None and loaded.session_id == message.session_id:
                    loaded.lineage = message.lineage
                self.query_one("#lineage", LineageTree).show_lineage(message.lineage)
                self._care_changed()
            else:  # the open session's node keeps up with the list and the title (counts, title)
                self.query_one("#lineage", LineageTree).update_session(message.row)
            self._show_live_tip()
            if loaded is not None and loaded.session_id == message.session_id:
                transcript.show_subtitle(self._transcript_subtitle(loaded))

    @on(TranscriptView.FoldsChanged)
    @on(TranscriptView.NewBelow)
    def _new_below(self, message: TranscriptView.NewBelow | TranscriptView.FoldsChanged) -> None:
        """The "N new ↓ G" marker in the transcript's subtitle comes and goes."""
        loaded = self._last_loaded
        if loaded is not None and loaded.session_id == self.current_session:
            self.query_one("#transcript", TranscriptView).show_subtitle(self._transcript_subtitle(loaded))

    async def _reloaded_session_gone(self, session_id: str) -> None:
        """The shown session went with this app's own delete (its reload found nothing)."""
        transcript = self.query_one("#transcript", TranscriptView)
        transcript.loading = False
        if self._wanted == session_id and self.current_session is None:  # nothing newer asked for
            await self._current_deleted(session_id, elsewhere=False)

    async def _current_deleted(self, session_id: str, elsewhere: bool = True) -> None:
        """The open session was deleted (by another program, unless ``elsewhere`` is false):
        say so where it was shown."""
        self.current_session = None
        self._last_loaded = None
        transcript = self.query_one("#transcript", TranscriptView)
        if elsewhere:
            await transcript.clear_transcript(
                f"Session {session_id} was deleted elsewhere (by another program)."
            )
            transcript.show_subtitle("deleted elsewhere")
        else:
            await transcript.clear_transcript(f"Session {session_id} was deleted (u undoes).")
            transcript.show_subtitle("deleted")
        self.query_one("#transcript-title", Static).update(Text(""))
        self.query_one("#lineage", LineageTree).show_lineage(None)
        self._show_live_tip()

    def _show_live_tip(self) -> None:
        """ "continued in …" on a session whose compression chain went on; `L` jumps there."""
        lineage = self.query_one("#lineage", LineageTree)
        tip = lineage.live_tip
        loaded = self._last_loaded
        title = self.query_one("#transcript-title", Static)
        if loaded is not None and loaded.session_id == self.current_session:
            text = self._title_text(loaded.row, tip_note(lineage.lineage, tip))
            old = title.content
            if text != old:
                # Its height is its line count (no wrapping): the same, a live update repaints the
                # title alone instead of laying the whole screen out again.
                same_height = isinstance(old, Text) and len(old.split()) == len(text.split())
                title.update(text, layout=not same_height)
        subtitle = "L: live tip" if tip is not None else ""
        if lineage.border_subtitle != subtitle:  # (Textual repaints the pane on every set)
            lineage.border_subtitle = subtitle
        # The footer recomposes on every refresh (700+ times a minute when it ran on each live
        # update at 8 writers): only when what `L` offers changed.
        shown = (self.current_session, tip)
        if shown != self._bindings_tip:
            self._bindings_tip = shown
            self.refresh_bindings()

    def action_live_tip(self) -> None:
        """Jump to where the open session's compression chain continues now."""
        tip = self.query_one("#lineage", LineageTree).live_tip
        if tip is not None:
            self.open_session(tip)

    async def action_jump_new(self) -> None:
        """Show the newest messages of the open transcript (the "N new ↓" marker's key)."""
        transcript = self.query_one("#transcript", TranscriptView)
        transcript.focus()
        await transcript.action_last()

    def action_active_now(self) -> None:
        """Toggle the "active now" filter: open sessions with activity in the last 10 minutes."""
        with self.prevent(Checkbox.Changed):
            self.query_one("#filter-active", Checkbox).value = not self.active_only
        self._set_active_only(not self.active_only)

    @on(Checkbox.Changed, "#filter-active")
    def _active_checkbox(self, event: Checkbox.Changed) -> None:
        event.stop()
        self._set_active_only(event.value)

    def _set_active_only(self, value: bool) -> None:
        if value == self.active_only:
            return
        self.active_only = value
        self.notify(
            "Active now: open sessions with activity in the last 10 minutes"
            if value
            else "Active-now filter off",
            timeout=2,
        )
        self.reload_order()

    def _refresh_order_live(self) -> None:
        """Recompute the order for a live change (`LiveFollow.refresh_order`)."""
        self.live.refresh_order()

    @on(LiveOrder)
    async def _live_order(self, message: LiveOrder) -> None:
        self.live.order_read(message)
