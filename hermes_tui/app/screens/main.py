"""MainScreen: the browser's one screen. It composes the panes and routes: every key, widget
message and worker message lands in a short handler that hands it to a controller
(`hermes_tui/app/controllers/`, one job each), which decides and runs the store calls in thread
workers. Session actions (rename, prune, delete, export, stats, undo, trash, resume, copy…) are
entries of the actions registry (`actions.py`): each becomes a key bound here; its handler
writes in a worker and posts `SessionsChanged`, which re-reads what is shown.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Checkbox, Footer, Input, Select, Static

from hermes_tui.app import actions
from hermes_tui.app.bindings import with_keys
from hermes_tui.app.controllers.federation import Federation
from hermes_tui.app.controllers.filter_bar import FilterBar
from hermes_tui.app.controllers.header import Header
from hermes_tui.app.controllers.key_checks import KeyChecks
from hermes_tui.app.controllers.list_order import ListOrder
from hermes_tui.app.controllers.live import LiveFollow
from hermes_tui.app.controllers.live_rules import OrderRefresh
from hermes_tui.app.controllers.messages import (
    LiveOrder,
    LiveSession,
    MergedLoaded,
    Missing,
    ModelsRead,
    Opened,
    OpenFailed,
    SessionLoaded,
    StoreLive,
    StoresArrived,
    StoresOpened,
    StoreValues,
)
from hermes_tui.app.controllers.opening import StoreOpening
from hermes_tui.app.controllers.ordering import DATE_PRESETS
from hermes_tui.app.controllers.panes import Panes
from hermes_tui.app.controllers.search_nav import SearchNav
from hermes_tui.app.controllers.search_source import OneStore
from hermes_tui.app.controllers.session_view import SessionView
from hermes_tui.app.controllers.shown import ShownSession
from hermes_tui.app.list_views import DEFAULT_FILTER, VIEW_CHOICES, VIEW_PROMPT, view_of
from hermes_tui.app.live_follow import APPLY_QUIET_S, Pacer
from hermes_tui.app.live_order import IncrementalOrder
from hermes_tui.app.main_keys import SCREEN_KEYS, main_screen_keys, pane_classes
from hermes_tui.app.messages import OpenSession, SessionsChanged, StoreFailed
from hermes_tui.app.session_context import SessionContext
from hermes_tui.app.stores import BrowserStores, StoreChoice
from hermes_tui.app.stores_follow import StoresFollower
from hermes_tui.app.widgets.lineage import LineageTree
from hermes_tui.app.widgets.search import SearchPane
from hermes_tui.app.widgets.session_list import SessionList
from hermes_tui.app.widgets.transcript_pane import Transcript
from hermes_tui.safe_text import one_line
from hermes_tui.state import SessionDB

if TYPE_CHECKING:
    from hermes_tui.app.session_context import BrowserApp


class MainScreen(Screen[None]):
    """The browser: list | transcript, lineage under the list, search over the list."""

    AUTO_FOCUS = "#sessions"

    #: Every key works from every pane; none shows in the footer from here: each pane shows the
    #: keys that apply to it (`main_keys.PANE_KEYS`), so the footer changes with the focus.
    BINDINGS: ClassVar[list[BindingType]] = SCREEN_KEYS

    def __init__(self) -> None:
        super().__init__()
        self._db: SessionDB | None = None
        self._one = OneStore(None)
        #: Several profiles' stores: set once they are open; then `db` is the store
        #: of the selected row, `current_profile` the open transcript's store.
        self.stores: BrowserStores | None = None
        self.current_profile: str | None = None
        #: The profiles the list and search span (None: every open store).
        self.profile_filter: tuple[str, ...] | None = None
        self.profile_counts: dict[str, int] = {}
        self.caps: dict[str, Any] = {}
        self.filter = DEFAULT_FILTER
        self.order = "last_active"
        self.active_only = False  # the "active now" filter
        self.current_session: str | None = None
        self.chain_mode = False
        self.state = "opening"
        self.last_order_seconds = 0.0
        self.store_total: int | None = None  # sessions in the store, whatever the filter
        #: One live order refresh at a time, and one missed while the head was shown.
        self.order_refresh = OrderRefresh(self.set_timer)
        #: The list's order as live changes move it (only the sessions they name are re-read).
        self.live_ids = IncrementalOrder()
        #: The open session's live reads: one at a time, at most five a second (a burst of
        #: messages is one mount and one scroll, not one per poll).
        self.session_pace = Pacer(quiet_s=APPLY_QUIET_S)
        # The controllers (`controllers/`), one job each: this screen routes to them.
        self.federation = Federation(self)  # several stores: opening, merged list; the follower
        self.live = LiveFollow(self)  # the live follow, and what live reports do
        self.view = SessionView(self)  # the session wanted, read, and the list cursor on it
        self.shown = ShownSession(self)  # the session read: its panes, live reads, deletion
        self.opening = StoreOpening(self)  # opening one store
        self.panes = Panes(self)
        self.header = Header(self)
        self.filter_bar = FilterBar(self)
        self.list_order = ListOrder(self)
        self.search_nav = SearchNav(self)
        self.key_checks = KeyChecks(self)

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

    @property
    def follower(self) -> StoresFollower | None:
        """The live follower of the open store(s) (`StoresWatch`)."""
        return self.federation.watch.follower

    # ------------------------------------------------------------------ the owning store (#20)
    @property
    def scope(self) -> BrowserStores | OneStore:
        """The open stores, or the one store as a federation of one (`search_source.OneStore`)."""
        return self.stores if self.stores is not None else self.one_store

    @property
    def one_store(self) -> OneStore:
        """The one open store (or none) as a federation of one, kept while it is open."""
        if self._one.db is not self._db:
            self._one = OneStore(self._db)
        return self._one

    @property
    def db(self) -> SessionDB | None:
        """The store actions act on: the one open store, or over several profiles the store of
        the selected row (the list's cursor row when the list has the focus, else the open
        transcript's), so rename/delete/prune/export/stats reach the row's own store."""
        return self.db_for(self.selected_profile or self.scope.current)

    @db.setter
    def db(self, value: SessionDB | None) -> None:
        self._db = value

    @property
    def selected_profile(self) -> str | None:
        """The store of the session actions apply to (None with one store)."""
        sessions = self.session_list
        if self.focused is sessions or self.current_session is None:
            return sessions.selected_profile or self.current_profile
        return self.current_profile

    def row_key(self, profile: str | None, session_id: Any) -> Any:
        """The list's key of a session: ``(profile, id)`` over several stores, the id with one."""
        return self.scope.key(profile, session_id)

    def db_for(self, profile: str | None) -> SessionDB | None:
        """The open store of ``profile`` (the one store when there are not several)."""
        return self.scope.db_for(profile)

    # ------------------------------------------------------------------ compose
    def compose(self) -> ComposeResult:
        now, panes = self.hermes.now, pane_classes()  # each pane with the keys it shows
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
                yield panes.sessions(now=now, id="sessions")
                yield panes.search(now=now, id="search")
                yield panes.lineage(id="lineage")
            with Vertical(id="right"):
                yield Static(Text(""), id="transcript-title")
                yield panes.transcript(id="transcript")
        # Compact, palette hint off (it is in help): the list pane's keys and ? / q fit 80 columns.
        yield Footer(compact=True, show_command_palette=False)

    def on_mount(self) -> None:
        self.fit_footer(self.app.size.width)
        for selector, title in (
            ("#sessions", "Sessions"),
            ("#lineage", "Lineage"),
            ("#transcript", "Transcript"),
            ("#search", "Search"),
        ):
            self.query_one(selector).border_title = title
        self.session_list.loading = True
        self.session_list.focus()
        self.query_one("#filter-profile", Select).display = False  # shown over several stores
        self.session_list.on_visible = self.live.visible_changed
        self.filter_bar.restore()
        self.panes.apply()
        choice = getattr(self.hermes, "store_choice", None)
        if isinstance(choice, StoreChoice):
            self.federation.open(choice)
        else:
            self.open_database(self.hermes.db_path)

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
        loaded = self.shown.current
        return loaded.row if loaded is not None else None

    # ------------------------------------------------------------------ opening (`opening.py`)
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
    def _missing(self, message: Missing) -> None:
        self.opening.missing(message)

    @on(OpenFailed)
    def _open_failed(self, message: OpenFailed) -> None:
        self.opening.failed(message)
        from hermes_tui.app.screens.repair import offer_repair  # a damaged store: diagnose, offer R

        offer_repair(self, self, message.path, message.error)

    def action_open_demo(self) -> None:
        """Build (once) and open the demo database; only offered when nothing is open."""
        self.opening.open_demo()

    # ------------------------------------------------------------------ several profiles (`federation.py`)
    @on(StoresOpened)
    def _stores_opened(self, message: StoresOpened) -> None:
        self.federation.opened(message)

    @on(StoresArrived)
    def _stores_arrived(self, message: StoresArrived) -> None:
        self.federation.arrived(message)

    @on(StoreValues)
    def _store_values(self, message: StoreValues) -> None:
        self.federation.values(message)

    @on(StoreLive)  # a store's follower reported (one store, or one of several)
    async def _store_live(self, message: StoreLive) -> None:
        await self.live.heard(message)

    def action_toggle_profiles(self) -> None:
        """`p`: every profile ↔ the current one (`Federation.toggle_profiles`)."""
        self.federation.toggle_profiles()

    # ------------------------------------------------------------------ header, panes
    def on_resize(self, event: events.Resize) -> None:
        self.fit_panes(event.size.width)
        self.fit_footer(event.size.width)
        if self.state == "ready":
            self.call_after_refresh(self.header.update)

    def fit_footer(self, width: int | None = None) -> None:
        """The footer's keys that fit the width (`Panes.fit_footer`)."""
        self.panes.fit_footer(width, view_of(self.filter), bool(self.filter_bar.summary()))

    def fit_panes(self, width: int | None = None) -> None:
        """The panes' widths (`Panes.fit`)."""
        self.panes.fit(width)

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

    # ------------------------------------------------------ the list (`list_order.py`, `filter_bar.py`)
    def reload_order(self, keep: Any = None, *, first_paint: bool = False) -> None:
        """Re-read the order for the current filter (keeps the cursor on ``keep``)."""
        self.list_order.reload(keep, first_paint=first_paint)

    @on(MergedLoaded)  # a reload's, of one store or several
    async def _order_read(self, message: MergedLoaded) -> None:
        await self.list_order.order_read(message)

    @on(SessionList.SelectionChanged)
    def _selection_changed(self, message: SessionList.SelectionChanged) -> None:
        self.list_order.title()

    @on(Select.Changed, "#filters Select")
    @on(Input.Changed, "#filter-text")
    def _filters_changed(self, event: Select.Changed | Input.Changed) -> None:
        event.stop()
        self.filter_bar.changed(event.control.id)

    def action_toggle_archived(self) -> None:
        """`A`: Hermes' archived view ↔ its list (the other filters stay). Remembered."""
        self.filter_bar.toggle_archived()

    def action_clear_filters(self) -> None:
        """Drop every filter and show Hermes' list again."""
        self.filter_bar.clear()

    def action_active_now(self) -> None:
        """Toggle the "active now" filter: open sessions with activity in the last 10 minutes."""
        self.filter_bar.active_now()

    @on(Checkbox.Changed, "#filter-active")
    def _active_checkbox(self, event: Checkbox.Changed) -> None:
        event.stop()
        self.filter_bar.set_active_only(event.value)

    def action_cycle_order(self) -> None:
        self.filter_bar.cycle_order()

    def action_filters(self) -> None:
        self.toggle_class("-filters")
        if self.has_class("-filters"):
            self.panes.reveal("list")  # the filters sit over the list
            self.query_one("#filter-source", Select).focus()
        else:
            self.session_list.focus()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Keys that cannot apply now are hidden from the footer and do nothing (`key_checks`)."""
        return self.key_checks.allowed(action, parameters)

    @on(SessionList.Highlighted)
    def _highlighted(self, message: SessionList.Highlighted) -> None:
        self.view.highlighted(message)

    @on(SessionList.Selected)
    def _selected(self, message: SessionList.Selected) -> None:
        self.search_nav.came_from_search = False
        self.view.selected(message)

    @on(SessionList.PageFailed)
    def _page_failed(self, message: SessionList.PageFailed) -> None:
        self.notify(one_line(message.error), title="Could not load sessions", severity="error", markup=False)

    @on(StoreFailed)
    def _store_failed(self, message: StoreFailed) -> None:
        title = f"Could not {message.action}"
        self.notify(one_line(message.error), title=title, severity="error", markup=False)

    @on(SessionsChanged)
    def _sessions_changed(self, message: SessionsChanged) -> None:
        """A write happened (actions issue): drop caches and re-query everything shown."""
        sessions = self.session_list
        sessions.invalidate()
        current, profile = self.current_session, self.current_profile
        keep = self.row_key(profile, current) if current else current
        if message.keep_cursor and sessions.selected_key is not None:
            keep = sessions.selected_key
        self.list_order.reload_near = (keep or sessions.selected_key, sessions.cursor)
        self.reload_order(keep=keep)
        if current is not None:
            self.current_session = None
            self.load_session(current, profile=profile, reload=True)

    # ------------------------------------------- transcript + lineage (`session_view.py`, `shown.py`)
    def load_session(self, session_id: str, *args: Any, **kwargs: Any) -> None:
        """Fetch a transcript and its lineage in a worker (`SessionView.load`: target message,
        terms, focus, profile, reload)."""
        self.view.load(session_id, *args, **kwargs)

    @on(SessionLoaded)
    async def _session_loaded(self, message: SessionLoaded) -> None:
        await self.shown.loaded(message)

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
        """Show a session from anywhere (palette, lineage) and move the list cursor to it
        (`SessionView.open`)."""
        self.search_nav.came_from_search = False
        self.view.open(session_id, message_id, terms, profile)

    def cursor_to(self, session_id: str, profile: str | None) -> None:
        """The list's cursor to a session's row (`SessionView.cursor_to`)."""
        self.view.cursor_to(session_id, profile)

    # ------------------------------------------------------------------ search (`search_nav.py`)
    def action_search(self) -> None:
        """`/`: the search pane with the caret in its box, or the open transcript's find."""
        self.search_nav.search()

    async def action_find(self) -> None:
        """ctrl+f: the find bar under the open transcript."""
        transcript = self.query_one("#transcript", Transcript)
        if transcript.data is None:
            self.notify("No transcript open: open a session first.", timeout=2)
            return
        await transcript.open_find()

    @on(SearchPane.HitChosen)
    def _hit_chosen(self, message: SearchPane.HitChosen) -> None:
        self.search_nav.hit_chosen(message)

    def action_next_hit(self) -> None:
        self.search_nav.step(+1)

    def action_prev_hit(self) -> None:
        self.search_nav.step(-1)

    def action_back(self) -> None:
        """Escape: transcript → search results (state kept) → list; closes filters first."""
        self.search_nav.back()

    # ------------------------------------------------------------------ view toggles
    def action_chain(self) -> None:
        """Read the whole compression chain of the current session as one transcript."""
        self.chain_mode = not self.chain_mode
        on = "Chain reader on: compression segments in one transcript"
        self.notify(on if self.chain_mode else "Chain reader off", timeout=2)
        if self.current_session:
            self.load_session(self.current_session, focus=True)

    def action_toggle_inactive(self) -> None:
        """Show or hide rewound and compaction-archived messages (dimmed when shown)."""
        self.toggle_class("-show-inactive")
        shown = "shown" if self.has_class("-show-inactive") else "hidden"
        self.notify(f"Rewound/compacted messages {shown}", timeout=2)

    def action_zoom(self) -> None:
        """Give the focused side the whole width (the list then shows every column)."""
        if self.has_class("-zoom-left") or self.has_class("-zoom-right"):
            self.remove_class("-zoom-left", "-zoom-right")
        else:
            focused = self.focused
            right = focused is not None and any(a.id == "right" for a in focused.ancestors_with_self)
            self.add_class("-zoom-right" if right else "-zoom-left")
        self.fit_panes()

    def action_focus_sessions(self) -> None:
        self.panes.reveal("list")
        self.session_list.focus()
        if self.has_class("-searching"):
            self.call_later(self.search_nav.leave)

    def action_focus_transcript(self) -> None:
        self.panes.reveal("transcript")
        self.query_one("#transcript", Transcript).focus()

    def action_focus_lineage(self) -> None:
        self.panes.reveal("lineage")
        self.query_one("#lineage", LineageTree).focus()

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

    # ------------------------------------------------------------------ live follow (`live.py`, `shown.py`)
    def on_unmount(self) -> None:
        self.federation.watch.stop()
        self.scope.close()

    @on(events.Key)
    @on(events.MouseDown)
    @on(events.MouseScrollDown)
    @on(events.MouseScrollUp)
    def _user_input(self, event: events.Event) -> None:
        """Input keeps the follower at its fast rate (it slows down after a quiet spell)."""
        if self.follower is not None:
            self.follower.touch()

    @on(LiveSession)
    async def _live_session(self, message: LiveSession) -> None:
        try:
            await self.shown.live_read(message)
        finally:  # what changed meanwhile is read next (paced)
            self.live.follow_session(self.session_pace.finished())

    @on(Transcript.FoldsChanged)
    @on(Transcript.NewBelow)
    def _new_below(self, message: Message) -> None:
        """The "N new ↓ G" marker in the transcript's subtitle comes and goes."""
        self.shown.new_below()

    def action_live_tip(self) -> None:
        """Jump to where the open session's compression chain continues now."""
        tip = self.query_one("#lineage", LineageTree).live_tip
        if tip is not None:
            self.open_session(tip)

    async def action_jump_new(self) -> None:
        """Show the newest messages of the open transcript (the "N new ↓" marker's key)."""
        transcript = self.query_one("#transcript", Transcript)
        transcript.focus()
        transcript.action_last()

    @on(LiveOrder)
    def _live_order(self, message: LiveOrder) -> None:
        self.live.order_read(message)


def main_screen() -> MainScreen:
    """The main screen with a key for each session action registered (`actions.ACTIONS`)."""
    return with_keys(MainScreen, main_screen_keys(), first=False)()
