"""MainScreen: session list, lineage, transcript and search, and every worker that feeds them.

The event loop never runs SQL: each store call is in a `@work(thread=True)` method below,
which posts a message; the handlers only touch widgets. Session actions (rename, prune,
delete, export, stats, undo, trash, resume, copy…) are entries of the actions registry
(`actions.py`, filled by `register_actions()` and `register_handoff_actions()`): each becomes a
key bound here, and its handler runs its write in a worker and posts `SessionsChanged` — which
drops every cache here and re-queries.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import Screen
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Checkbox, Footer, Input, Select, Static
from textual.worker import get_current_worker

from hermes_tui.app import actions
from hermes_tui.app.bindings import add_binding
from hermes_tui.app.live_follow import LiveFollower, LiveUpdate
from hermes_tui.app.messages import LiveChanged, OpenSession, SessionsChanged, StoreFailed
from hermes_tui.app.prefetch import open_store
from hermes_tui.app.render import (
    format_cost,
    human_count,
    query_terms,
    snippet_terms,
    to_number,
)
from hermes_tui.app.widgets.lineage import LineageTree
from hermes_tui.app.widgets.search import SearchPane
from hermes_tui.app.widgets.session_list import SessionList
from hermes_tui.app.widgets.transcript import (
    Divider,
    MessageView,
    TranscriptData,
    TranscriptView,
    message_view,
)
from hermes_tui.safe_text import cell_width, inert, one_line
from hermes_tui.state import SessionDB, SessionFilter, StoreError

if TYPE_CHECKING:
    from hermes_tui.app.app import HermesApp

ORDERS = ("last_active", "started", "messages", "tokens", "cost")
DATE_PRESETS: tuple[tuple[str, int], ...] = (
    ("last 24 h", 1),
    ("last 7 days", 7),
    ("last 30 days", 30),
    ("last 90 days", 90),
    ("last year", 365),
)
HIGHLIGHT_DEBOUNCE_S = 0.12
#: "Active now": open sessions with a message (or a start) in the last this many seconds.
ACTIVE_WITHIN_S = 600.0

#: What the footer shows for each focused pane (as lazygit and k9s do): bound on the pane, so
#: Textual's stock Footer follows the focus; each acts like the screen's own (hidden) binding.
PANE_KEYS: dict[str, tuple[tuple[str, str, str], ...]] = {
    "#sessions": (
        ("slash", "screen.search", "Search"),
        ("f", "screen.filters", "Filters"),
        ("F", "screen.clear_filters", "Clear filters"),
        ("a", "screen.active_now", "Active now"),
    ),
    "#transcript": (
        ("x", "toggle_folds", "Folds"),
        ("n", "screen.next_hit", "Next hit"),
        ("N", "screen.prev_hit", "Prev hit"),
        ("c", "screen.chain", "Chain"),
        ("i", "screen.toggle_inactive", "Rewound"),
        ("L", "screen.live_tip", "Live tip"),
        ("slash", "screen.search", "Search"),
        ("z", "screen.zoom", "Zoom"),
    ),
    "#lineage": (
        ("enter", "jump", "Open session"),
        ("L", "screen.live_tip", "Live tip"),
        ("slash", "screen.search", "Search"),
        ("z", "screen.zoom", "Zoom"),
    ),
    "#search": (("escape", "screen.back", "Back"),),
}
#: Registered session actions (`actions.py`) the list pane's footer shows.
LIST_ACTIONS = ("rename", "delete")


def left_cut(text: str, width: int) -> str:
    """``text`` in at most ``width`` cells, cut from the left ("…/hermes/state.db"): the end of a
    path names the file."""
    if cell_width(text) <= width:
        return text
    out: list[str] = []
    used = 1
    for ch in reversed(text):
        used += cell_width(ch)
        if used > width:
            break
        out.append(ch)
    return "…" + "".join(reversed(out))


def show_key(pane: Widget, key: str, action: str, description: str, priority: bool = False) -> None:
    """Bind ``key`` on ``pane`` ahead of its other bindings for that key, shown in the footer."""
    add_binding(pane, key, action, description, priority=priority, first=True)


def chain_segments(db: SessionDB, session_id: str, lineage: dict[str, Any]) -> list[dict[str, Any]]:
    """Nodes of the compression chain through ``session_id``, root first (worker thread)."""
    nodes = {n["id"]: n for n in lineage.get("nodes", [])}
    if session_id not in nodes:
        return []
    root = session_id
    while nodes[root].get("edge_kind") == "compression" and nodes[root].get("parent_session_id") in nodes:
        root = nodes[root]["parent_session_id"]
    try:
        tip = db.get_compression_tip(session_id) or session_id
    except Exception:  # an odd chain must not stop the reader
        tip = session_id
    path: list[str] = []
    cur: str | None = tip if tip in nodes else session_id
    while cur is not None and cur in nodes and cur not in path:
        path.append(cur)
        if cur == root:
            break
        cur = nodes[cur].get("parent_session_id")
    path.reverse()
    if not path or path[0] != root or session_id not in path:
        path = [root] if root == session_id else [root, session_id]
    return [nodes[i] for i in path]


@dataclass
class LoadedSession:
    """A transcript, its lineage and its list row, fetched together in one worker."""

    session_id: str
    row: dict[str, Any]
    data: TranscriptData
    lineage: dict[str, Any] | None
    target_id: int | None
    terms: tuple[str, ...]
    focus: bool


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
        Binding("L", "live_tip", "Live tip", show=False),
        Binding("G", "jump_new", "Newest messages", show=False),
        Binding("d", "open_demo", "Open demo"),  # shown only when no database is open
    ]

    class Opened(Message):
        """The database opened (worker → screen)."""

        def __init__(
            self,
            db: SessionDB,
            caps: dict[str, Any],
            sources: list[str],
            models: list[str],
            ids: list[str] | None = None,
            first_rows: list[dict[str, Any]] | None = None,
        ) -> None:
            super().__init__()
            self.db = db
            self.caps = caps
            self.sources = sources
            self.models = models
            self.ids = ids  # the default order, when the open prefetch computed it
            self.first_rows = first_rows or []

    class Missing(Message):
        """There is no database file at the path."""

        def __init__(self, path: Path) -> None:
            super().__init__()
            self.path = path

    class OpenFailed(Message):
        """The file exists but could not be opened (corrupt, not SQLite, permissions)."""

        def __init__(self, path: Path, error: str) -> None:
            super().__init__()
            self.path = path
            self.error = error

    class OrderLoaded(Message):
        """Ordered ids for the current filter."""

        def __init__(
            self, ids: Any, keep: str | None, seconds: float, store_total: int | None = None
        ) -> None:
            super().__init__()
            self.ids = ids
            self.keep = keep
            self.seconds = seconds
            self.store_total = store_total  # every session of the store (None: not counted)

    class SessionLoaded(Message):
        """A transcript and lineage are ready."""

        def __init__(self, loaded: LoadedSession) -> None:
            super().__init__()
            self.loaded = loaded

    def __init__(self) -> None:
        super().__init__()
        self.db: SessionDB | None = None
        self.caps: dict[str, Any] = {}
        self.filter = SessionFilter()
        self.order = "last_active"
        self.current_session: str | None = None
        self.chain_mode = False
        self.state = "opening"
        self._highlight_timer: Timer | None = None
        self._wanted: str | None = None
        self._came_from_search = False
        self._last_loaded: LoadedSession | None = None
        self._filter_days: int | None = None
        self.last_order_seconds = 0.0
        for spec in actions.ACTIONS:
            add_binding(self, spec.key, f"run_action({spec.name!r})", spec.description, show=False)
        self.store_total: int | None = None  # sessions in the store, whatever the filter
        #: Live follow (issue #18): the polling thread's follower, the "active now" filter, and
        #: a live order refresh in flight / asked for again meanwhile.
        self.follower: LiveFollower | None = None
        self.active_only = False
        self._live_order_running = False
        self._live_order_again = False
        self._live_error_shown = False

    @property
    def hermes(self) -> HermesApp:
        """The app, typed."""
        return self.app  # type: ignore[return-value]

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
                priority = any(b.priority for b in self._bindings.key_to_bindings.get(key, []))
                show_key(pane, key, action, description, priority)
        for name in LIST_ACTIONS:
            spec = actions.find(name)
            if spec is not None:
                show_key(self.session_list, spec.key, f"screen.run_action({name!r})", spec.description)
        self.query_one("#sessions", SessionList).border_title = "Sessions"
        self.query_one("#lineage", LineageTree).border_title = "Lineage"
        self.query_one("#transcript", TranscriptView).border_title = "Transcript"
        self.query_one("#search", SearchPane).border_title = "Search"
        self.query_one("#sessions", SessionList).loading = True
        self.query_one("#sessions", SessionList).focus()
        self.session_list.on_visible = self._visible_changed
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

    # ------------------------------------------------------------------ opening
    def open_database(self, path: Path) -> None:
        """Open ``path`` in a worker; the panes show progress meanwhile."""
        self.state = "opening"
        self._info(Text(f"hermes-tui · opening {self.hermes.display_path(path)}…"))
        self.open_db_worker(path, self.hermes.read_only)

    @work(thread=True, exit_on_error=False, exclusive=True, group="open", description="open the database")
    def open_db_worker(self, path: Path, read_only: bool) -> None:
        """Open without migrating (never change the file's structure) and read capabilities."""
        if not path.exists():
            self.post_message(self.Missing(path))
            return
        pre = self.hermes.prefetch.take(path, read_only) if self.hermes.prefetch is not None else None
        if pre is not None:
            self.post_message(self.Opened(pre.db, pre.caps, pre.sources, pre.models, pre.ids, pre.first_rows))
            return
        try:
            db, caps, sources, models = open_store(path, read_only)
        except StoreError as exc:  # the store's own words: what the file is
            self.post_message(self.OpenFailed(path, str(exc)))
            return
        except Exception as exc:
            self.post_message(self.OpenFailed(path, f"{type(exc).__name__}: {exc}"))
            return
        self.post_message(self.Opened(db, caps, sources, models))

    @on(Opened)
    def _opened(self, message: Opened) -> None:
        if self.follower is not None:
            self.follower.stop()  # before its store closes under it
        old, self.db = self.db, message.db
        if old is not None and old is not message.db:
            old.close()
        self.caps = message.caps
        self.state = "ready"
        self.hermes.db = message.db
        self.remove_class("-missing", "-failed")
        self._update_info()
        sessions = self.session_list
        sessions.row_source = message.db.list_rows
        db, now = message.db, self.hermes.now
        sessions.status_source = lambda ids: db.live_status(ids, now())
        sessions.empty_text = "No sessions in this database."
        self._start_follower(message.db)
        search = self.query_one("#search", SearchPane)
        search.set_sources(message.sources)
        search.connect(self._searcher, self._titles, self._counter)
        self._set_options("#filter-source", message.sources)
        self._set_options("#filter-model", message.models)
        if message.ids is not None and self.filter == SessionFilter() and self.order == "last_active":
            sessions.seed_page(0, message.first_rows)
            self.post_message(self.OrderLoaded(message.ids, None, 0.0, len(message.ids)))
        else:
            self.reload_order()

    @on(Missing)
    async def _missing(self, message: Missing) -> None:
        shown = self.hermes.display_path(message.path)
        self._show_notice(
            "missing",
            f"{shown} · not found",
            f"There is no session database at {shown}.",
            "Nothing was created: hermes-tui never makes a database it was asked to open.",
        )
        self.notify(f"No session database at {shown}. Press d for the demo.", severity="warning")

    @on(OpenFailed)
    async def _open_failed(self, message: OpenFailed) -> None:
        shown = self.hermes.display_path(message.path)
        error = message.error.replace(str(message.path), shown)
        self._show_notice(
            "failed",
            f"{shown} · cannot open",
            f"hermes-tui cannot browse {shown}:\n{error}",
            "Nothing was changed: the file was only read, never written.",
        )
        from hermes_tui.app.screens.repair import offer_repair  # a damaged store: diagnose, offer R

        offer_repair(self, message.path, message.error)

    def _show_notice(self, state: str, header: str, what: str, safety: str) -> None:
        """Replace the panes with one clear message: what the file is, that nothing was changed,
        and how to go on (the demo, another --db). No error toast: the message is the screen."""
        self.state = state
        self.remove_class("-searching")
        self.add_class(f"-{state}")
        self.session_list.loading = False
        self.session_list.empty_text = "No database is open."
        self.session_list.set_order([])
        self._info(Text(f"hermes-tui · {one_line(header)}", no_wrap=True, overflow="ellipsis"))
        text = Text()
        text.append(inert(what) + "\n\n", style="bold")
        text.append(safety + "\n\n")
        text.append("Press d to open the demo database (built once and cached), or start hermes-tui ")
        text.append("with --db PATH to a Hermes state.db. q quits.")
        notice = self.query_one("#notice", Static)
        notice.update(text)
        notice.border_title = "No database open"
        self.refresh_bindings()

    def action_open_demo(self) -> None:
        """Build (once) and open the demo database; only offered when nothing is open."""
        if self.state not in {"missing", "failed"}:
            return
        self.remove_class("-missing", "-failed")
        self._info(Text("hermes-tui · building the demo database…"))
        self.session_list.loading = True
        self.build_demo_worker()

    @work(
        thread=True, exit_on_error=False, exclusive=True, group="demo", description="build the demo database"
    )
    def build_demo_worker(self) -> None:
        """The demo is written through the store API into the cache folder, never ~/.hermes."""
        from hermes_tui.demo import ensure_demo_db

        try:
            path = ensure_demo_db()
        except Exception as exc:
            self.post_message(self.OpenFailed(Path("demo"), f"{type(exc).__name__}: {exc}"))
            return
        self.app.call_from_thread(self._switch_to, path)

    def _switch_to(self, path: Path) -> None:
        self.hermes.db_path = path
        self.open_database(path)

    # ------------------------------------------------------------------ header
    def _info(self, text: Text) -> None:
        self.query_one("#info", Static).update(text)

    def _update_info(self) -> None:
        """The header, fitted to its width: read-only/read-write and the session count always
        show; the path is cut from the left, then schema and FTS layout drop, to make room."""
        caps = self.caps
        width = max(20, self.query_one("#info", Static).content_region.width or self.size.width - 2)
        mode = "read-only" if caps.get("read_only") else "read-write"
        count = ""
        if self.state == "ready":
            total = self.session_list.total
            if self.filter_active and self.store_total is not None:
                count = f"{total:,} of {self.store_total:,} sessions (filtered)"
            else:
                count = f"{total:,} sessions"
        extras = []
        if caps.get("schema_version") is not None:
            extras.append(f"schema v{caps['schema_version']}")
        if caps.get("fts_layout"):
            extras.append(f"fts {one_line(caps['fts_layout'])}")
        path = one_line(self.hermes.display_path(self.hermes.db_path))
        sep = " · "
        fixed = (
            cell_width("hermes-tui")
            + len(sep)
            + cell_width(mode)
            + (len(sep) + cell_width(count) if count else 0)
        )
        room = width - fixed - len(sep)
        while extras and room - sum(len(sep) + cell_width(e) for e in extras) < min(24, cell_width(path)):
            extras.pop()  # the path is worth more than the schema details
        room -= sum(len(sep) + cell_width(e) for e in extras)
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append("hermes-tui", style="bold")
        text.append(sep + left_cut(path, max(4, room)))
        for extra in extras:
            text.append(sep + extra)
        text.append(sep + mode, style="bold")
        if count:
            text.append(sep + count)
        self._info(text)

    def on_resize(self, event: events.Resize) -> None:
        if self.state == "ready":
            self.call_after_refresh(self._update_info)

    # ------------------------------------------------------------------ list
    def _set_options(self, selector: str, values: list[str]) -> None:
        select = self.query_one(selector, Select)
        select.set_options([(one_line(v, 40), v) for v in values])

    def reload_order(self, keep: str | None = None) -> None:
        """Re-run `session_order` for the current filter (keeps the cursor on ``keep``)."""
        if self.db is None:
            return
        self.session_list.loading = True
        self.load_order_worker(
            self.filter, self.order, keep or self.session_list.selected_id, self.active_only
        )

    def _ordered_ids(self, flt: SessionFilter, order: str, active: bool) -> tuple[list[str], int]:
        """The ids of the list and the store's session count (worker thread). "Active now"
        keeps, in the current order, the open sessions with recent activity."""
        assert self.db is not None
        ids = self.db.session_order(flt, order=order).ids
        unfiltered = flt == SessionFilter() and not active
        total = len(ids) if unfiltered else self.db.session_count(include_archived=True)
        if active:
            recent = set(self.db.active_sessions(self.hermes.now(), ACTIVE_WITHIN_S))
            ids = [i for i in ids if i in recent]
        return list(ids), total

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
            ids, store_total = self._ordered_ids(flt, order, active)
        except Exception as exc:
            self.post_message(StoreFailed("list sessions", f"{type(exc).__name__}: {exc}"))
            ids = []
        if not get_current_worker().is_cancelled:
            self.post_message(self.OrderLoaded(ids, keep, time.perf_counter() - started, store_total))

    @on(OrderLoaded)
    async def _order_loaded(self, message: OrderLoaded) -> None:
        sessions = self.session_list
        sessions.loading = False
        self.last_order_seconds = message.seconds
        if message.store_total is not None:
            self.store_total = message.store_total
        summary = self.filter_summary()
        if summary:
            sessions.empty_text = f"No session matches filter: {summary}. Press F to clear the filter."
        else:
            sessions.empty_text = "This database has no sessions yet."
        sessions.set_order(message.ids, keep=message.keep)
        self._update_list_title()
        sessions.border_subtitle = "" if self.order == "last_active" else f"by {self.order.replace('_', ' ')}"
        self._update_info()
        self.refresh_bindings()
        if not message.ids:
            self.current_session = None
            transcript = self.query_one("#transcript", TranscriptView)
            await transcript.clear_transcript(sessions.empty_text)
            transcript.border_subtitle = ""
            self.query_one("#transcript-title", Static).update(Text(""))
            self.query_one("#lineage", LineageTree).show_lineage(None)

    def _update_list_title(self) -> None:
        """``Sessions N``; filtered, ``N of M · filter: …`` (short enough for 80 columns); then
        ``· K selected``."""
        sessions = self.session_list
        title = f"Sessions {sessions.total:,}"
        summary = self.filter_summary()
        if summary:
            title = f"{sessions.total:,}"
            if self.store_total is not None:
                title += f" of {self.store_total:,}"
            title += f" · filter: {summary}"
        if sessions.selection:
            title += f" · {len(sessions.selection):,} selected"
        sessions.border_title = title

    @on(SessionList.SelectionChanged)
    def _selection_changed(self, message: SessionList.SelectionChanged) -> None:
        self._update_list_title()

    @property
    def filter_active(self) -> bool:
        """Some filter narrows the list (the order is not a filter)."""
        return self.filter != SessionFilter() or self.active_only

    def filter_summary(self) -> str:
        """The active filter in a few words ("source=cli · last 7 days · title~deploy"), or ""."""
        parts = []
        f = self.filter
        if f.sources:
            parts.append("source=" + ",".join(one_line(v, 24) for v in f.sources))
        if f.models:
            parts.append("model=" + ",".join(one_line(v, 24) for v in f.models))
        if f.started_after is not None:
            label = {d: name for name, d in DATE_PRESETS}.get(self._filter_days or -1)
            parts.append(label or "recent")
        if f.text:
            parts.append(f"title~{one_line(f.text, 30)}")
        if self.active_only:
            parts.append("active now")
        return " · ".join(parts)

    @on(Select.Changed, "#filters Select")
    @on(Input.Changed, "#filter-text")
    def _filters_changed(self, event: Select.Changed | Input.Changed) -> None:
        event.stop()
        source = self.query_one("#filter-source", Select).value
        model = self.query_one("#filter-model", Select).value
        days = self.query_one("#filter-date", Select).value
        text = self.query_one("#filter-text", Input).value.strip()
        self._filter_days = days if isinstance(days, int) else None
        self.filter = replace(
            self.filter,
            sources=(source,) if isinstance(source, str) else (),
            models=(model,) if isinstance(model, str) else (),
            started_after=self.hermes.now() - days * 86400 if isinstance(days, int) else None,
            text=text or None,
        )
        self.reload_order()

    def action_clear_filters(self) -> None:
        """Drop every filter (source, model, time, title/id text) and list all sessions again."""
        with self.prevent(Select.Changed, Input.Changed):
            for selector in ("#filter-source", "#filter-model", "#filter-date"):
                self.query_one(selector, Select).clear()
            self.query_one("#filter-text", Input).value = ""
            self.query_one("#filter-active", Checkbox).value = False
        self.active_only = False
        self.filter = SessionFilter()
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
        return True

    @on(SessionList.Highlighted)
    def _highlighted(self, message: SessionList.Highlighted) -> None:
        if message.session_id is None or message.session_id == self._wanted:
            return
        self._wanted = message.session_id
        if self._highlight_timer is not None:
            self._highlight_timer.stop()
        self._highlight_timer = self.set_timer(
            HIGHLIGHT_DEBOUNCE_S, lambda: self.load_session(message.session_id or "")
        )

    @on(SessionList.Selected)
    def _selected(self, message: SessionList.Selected) -> None:
        self._came_from_search = False
        if message.session_id != self.current_session:
            self.load_session(message.session_id, focus=True)
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
        current = self.current_session
        self.reload_order(keep=current)
        if current is not None:
            self.current_session = None
            self.load_session(current)

    # ------------------------------------------------------------------ transcript + lineage
    def load_session(
        self,
        session_id: str,
        target_id: int | None = None,
        terms: tuple[str, ...] = (),
        focus: bool = False,
    ) -> None:
        """Fetch a transcript and its lineage in a worker (the newest request wins)."""
        if self.db is None or not session_id:
            return
        self._wanted = session_id
        self.query_one("#transcript", TranscriptView).loading = True
        self.load_session_worker(session_id, target_id, terms, focus, self.chain_mode)

    @work(
        thread=True, exit_on_error=False, exclusive=True, group="transcript", description="load a transcript"
    )
    def load_session_worker(
        self, session_id: str, target_id: int | None, terms: tuple[str, ...], focus: bool, chain: bool
    ) -> None:
        """get_session + get_lineage + get_messages, prepared into view records off the loop."""
        assert self.db is not None
        db = self.db
        worker = get_current_worker()
        try:
            rows = db.list_rows([session_id])
            if not rows:
                self.post_message(StoreFailed("open session", f"session {session_id} not found"))
                return
            lineage = db.get_lineage(session_id)
            segments = chain_segments(db, session_id, lineage) if chain else []
            items: list[MessageView | Divider] = []
            if chain and len(segments) > 1:
                for i, seg in enumerate(segments, 1):
                    items.append(
                        Divider(
                            session_id=seg["id"],
                            index=i,
                            count=len(segments),
                            title=one_line(seg.get("title")),
                            edge_kind=seg.get("edge_kind"),
                            message_count=seg.get("message_count") or 0,
                        )
                    )
                    if worker.is_cancelled:
                        return
                    items.extend(message_view(m) for m in db.get_messages(seg["id"], include_inactive=True))
            else:
                chain = False
                items.extend(message_view(m) for m in db.get_messages(session_id, include_inactive=True))
        except Exception as exc:
            if not worker.is_cancelled:
                self.post_message(StoreFailed("load the transcript", f"{type(exc).__name__}: {exc}"))
                self.app.call_from_thread(self._transcript_failed)
            return
        if worker.is_cancelled:
            return
        data = TranscriptData(session_id=session_id, items=items, chain=chain)
        self.post_message(
            self.SessionLoaded(LoadedSession(session_id, rows[0], data, lineage, target_id, terms, focus))
        )

    def _transcript_failed(self) -> None:
        self.query_one("#transcript", TranscriptView).loading = False

    @on(SessionLoaded)
    async def _session_loaded(self, message: SessionLoaded) -> None:
        loaded = message.loaded
        transcript = self.query_one("#transcript", TranscriptView)
        transcript.loading = False
        self.current_session = loaded.session_id
        self._last_loaded = loaded
        await transcript.show(loaded.data, target_id=loaded.target_id, terms=loaded.terms)
        transcript.border_title = "Chain" if loaded.data.chain else "Transcript"
        transcript.border_subtitle = self._transcript_subtitle(loaded)
        self.query_one("#transcript-title", Static).update(self._title_text(loaded.row))
        self.query_one("#lineage", LineageTree).show_lineage(loaded.lineage)
        self._show_live_tip()
        self._care_changed()
        if loaded.focus:
            transcript.focus()

    def _transcript_subtitle(self, loaded: LoadedSession) -> str:
        count = sum(1 for i in loaded.data.items if isinstance(i, MessageView))
        inactive = sum(1 for i in loaded.data.items if isinstance(i, MessageView) and not i.active)
        parts = [f"{count} msgs"]
        if inactive:
            parts.append(
                f"{inactive} rewound/compacted ({'shown' if self.has_class('-show-inactive') else 'i'})"
            )
        search = self.query_one("#search", SearchPane)
        if (
            loaded.target_id is not None
            and self.has_class("-searching")
            and search.hits
            and search.highlighted is not None
        ):
            parts.append(f"hit {search.highlighted + 1:,}/{search.total_label()}")
        new_below = self.query_one("#transcript", TranscriptView).new_below
        if new_below:
            parts.insert(0, f"{new_below:,} new ↓ G")
        return " · ".join(parts)

    def _title_text(self, row: dict[str, Any], note: str = "") -> Text:
        text = Text(no_wrap=True, overflow="ellipsis")
        title = one_line(row.get("title"))
        text.append(title or one_line(row.get("preview")) or "(untitled)", style="bold")
        text.append("\n")
        if note:  # first on the second line, so a narrow pane still shows it
            text.append(note + " · ", style="bold reverse")
        text.append(
            f"{one_line(row.get('id'))} · {one_line(row.get('source'))} · {one_line(row.get('model')) or '—'}"
        )
        tokens = (to_number(row.get("input_tokens")) or 0) + (to_number(row.get("output_tokens")) or 0)
        text.append(f" · {human_count(row.get('message_count'))} msgs · {human_count(tokens)} tok")
        cost = format_cost(row)
        if cost:
            text.append(f" · {cost}")
        if row.get("end_reason"):
            text.append(f" · ended: {one_line(row['end_reason'], 60)}", style="dim")
        return text

    @on(LineageTree.Jump)
    def _lineage_jump(self, message: LineageTree.Jump) -> None:
        self.open_session(message.session_id)

    @on(OpenSession)
    def _open_session_message(self, message: OpenSession) -> None:
        self.open_session(message.session_id, message.message_id, message.terms)

    def open_session(
        self, session_id: str, message_id: int | None = None, terms: tuple[str, ...] = ()
    ) -> None:
        """Show a session from anywhere (palette, lineage) and move the list cursor to it."""
        self._came_from_search = False
        ids = self.session_list._ids
        try:
            self.session_list.cursor = ids.index(session_id)  # type: ignore[union-attr]
        except (ValueError, AttributeError):
            pass  # filtered out of the list: still show it
        self._wanted = session_id
        if self._highlight_timer is not None:
            self._highlight_timer.stop()
        self.load_session(session_id, message_id, terms, focus=True)

    # ------------------------------------------------------------------ search
    def _searcher(self, query: str, **kwargs: Any) -> tuple[list[dict[str, Any]], str]:
        assert self.db is not None
        outcome = self.db.search(query, context=False, **kwargs)  # the pane shows snippets only
        return list(outcome.results), outcome.route

    def _titles(self, ids: list[str]) -> dict[str, dict[str, Any]]:
        assert self.db is not None
        return {r["id"]: r for r in self.db.list_rows(ids)}

    def _counter(self, query: str, **kwargs: Any) -> tuple[int, bool]:
        """Every hit of a query, counted up to a cap (worker thread): `(count, exact)`."""
        assert self.db is not None
        return self.db.search_count(query, **kwargs)

    def action_search(self) -> None:
        """Show the search pane with the caret in its box, even while the store still opens.

        Focus is set synchronously: `Widget.focus()` is deferred, so a key typed right after `/`
        (in the same read) reached the list, then the app, whose `q` quit. A query typed before
        the open finishes runs once it does (`_opened`).
        """
        if self.state not in {"opening", "ready"}:
            return
        self.add_class("-searching")
        self.set_focus(self.query_one("#search-input", Input))

    @on(SearchPane.HitChosen)
    def _hit_chosen(self, message: SearchPane.HitChosen) -> None:
        hit = message.hit
        terms = tuple(snippet_terms(hit.get("snippet")) or query_terms(message.query))
        self._came_from_search = True
        self._wanted = hit["session_id"]
        self.load_session(hit["session_id"], int(hit["id"]), terms, focus=True)

    def action_next_hit(self) -> None:
        self._step_hit(+1)

    def action_prev_hit(self) -> None:
        self._step_hit(-1)

    def _step_hit(self, delta: int) -> None:
        search = self.query_one("#search", SearchPane)
        if not self.has_class("-searching") or not search.hits:
            self.notify("No search hits: press / to search.", timeout=2)
            return
        search.step(delta)

    async def leave_search(self) -> None:
        """Close the search pane: the transcript drops its hit marker and "hit i/N"."""
        self.remove_class("-searching")
        self._came_from_search = False
        self.refresh_bindings()
        loaded = self._last_loaded
        if loaded is None or loaded.target_id is None or loaded.session_id != self.current_session:
            return
        plain = replace(loaded, target_id=None, terms=())
        self._last_loaded = plain
        transcript = self.query_one("#transcript", TranscriptView)
        if transcript.data is loaded.data:
            await transcript.show(loaded.data)
        transcript.border_subtitle = self._transcript_subtitle(plain)

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
            self.query_one("#filter-source", Select).focus()
        else:
            self.session_list.focus()

    def action_cycle_order(self) -> None:
        self.order = ORDERS[(ORDERS.index(self.order) + 1) % len(ORDERS)]
        self.notify(f"Ordered by {self.order.replace('_', ' ')}", timeout=2)
        self.reload_order()

    def action_zoom(self) -> None:
        """Give the focused side the whole width (the list then shows every column)."""
        if self.has_class("-zoom-left") or self.has_class("-zoom-right"):
            self.remove_class("-zoom-left", "-zoom-right")
            return
        focused = self.focused
        right = focused is not None and any(a.id == "right" for a in focused.ancestors_with_self)
        self.add_class("-zoom-right" if right else "-zoom-left")

    def action_focus_sessions(self) -> None:
        self.session_list.focus()
        if self.has_class("-searching"):
            self.call_later(self.leave_search)

    def action_focus_transcript(self) -> None:
        self.query_one("#transcript", TranscriptView).focus()

    def action_focus_lineage(self) -> None:
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

    # ------------------------------------------------------------------ live follow (issue #18)
    def _start_follower(self, db: SessionDB) -> None:
        """One polling thread per open store; the old store's follower stops first."""
        if self.follower is not None:
            self.follower.stop()
        follower = LiveFollower(db, lambda update: self._post_live(follower, update), clock=self.hermes.now)
        self.follower = follower
        self._live_error_shown = False
        self._care_changed()
        # A plain daemon thread, not a Textual worker: it runs as long as the store is open, and
        # waiting for every worker to finish (tests, the app's shutdown) must not wait for it.
        threading.Thread(target=follower.run, name="hermes-live-follow", daemon=True).start()

    def _post_live(self, follower: LiveFollower, update: LiveUpdate) -> None:
        """From the polling thread: only the current store's follower reports (a store being
        replaced may fail its last poll as it closes; that is not news)."""
        if follower is self.follower and not follower.stopped:
            self.post_message(LiveChanged(update))

    def on_unmount(self) -> None:
        if self.follower is not None:
            self.follower.stop()

    @on(events.Key)
    @on(events.MouseDown)
    @on(events.MouseScrollDown)
    @on(events.MouseScrollUp)
    def _user_input(self, event: events.Event) -> None:
        """Input keeps the follower at its fast rate (it slows down after a quiet spell)."""
        if self.follower is not None:
            self.follower.touch()

    def _visible_changed(self, ids: list[str]) -> None:
        if self.follower is not None:
            self.follower.show(ids)
            self._care_changed(ids)

    def _care_changed(self, visible: list[str] | None = None) -> None:
        """The follower reports ends, titles and deletions of the rows on screen and of the
        open session (and its lineage)."""
        if self.follower is None:
            return
        ids = list(visible if visible is not None else self.session_list.visible_ids)
        if self.current_session:
            ids.append(self.current_session)
        lineage = self.query_one("#lineage", LineageTree).lineage or {}
        ids += [n["id"] for n in lineage.get("nodes", [])[:64]]
        self.follower.care(ids)

    @on(LiveChanged)
    async def _live_changed(self, message: LiveChanged) -> None:
        update = message.update
        assert isinstance(update, LiveUpdate)
        if update.error is not None:
            if not self._live_error_shown:
                self._live_error_shown = True
                self.notify(
                    one_line(update.error), title="Live follow paused", severity="warning", markup=False
                )
            return
        self._live_error_shown = False
        if update.statuses is not None:
            self.session_list.set_live(update.statuses)
            if self.active_only:  # sessions age out of "active now"
                self._refresh_order_live()
        ch = update.changes
        if not ch:
            return
        if (
            ch.new_sessions
            or ch.reactivated
            or ch.deleted
            or ch.sessions_removed
            or ch.reset
            or ch.ended
            or ch.reopened
            or ch.titles
            or ch.messages
        ):
            self._refresh_order_live()
        if self.has_class("-searching") and (ch.messages or ch.deleted or ch.sessions_removed or ch.reset):
            self.query_one("#search", SearchPane).store_changed()
        current = self.current_session
        if current is None:
            return
        if current in ch.deleted:
            await self._current_deleted(current)
            return
        lineage_ids = {
            n["id"] for n in (self.query_one("#lineage", LineageTree).lineage or {}).get("nodes", [])
        }
        lineage_changed = bool(
            any(c.get("parent_session_id") in lineage_ids for c in ch.children)
            or lineage_ids.intersection(ch.continued)
            or lineage_ids.intersection(ch.ended)
            or lineage_ids.intersection(ch.deleted)
            or lineage_ids.intersection(ch.titles)
        )
        transcript = self.query_one("#transcript", TranscriptView)
        data = transcript.data
        if data is not None and data.chain:
            shown = {i.session_id for i in data.items if isinstance(i, Divider)}
            if shown.intersection(ch.messages) or lineage_changed:
                self.load_session(current)  # a chain re-reads its segments
            return
        touched = (
            current in ch.messages or current in ch.ended or current in ch.titles or current in ch.reopened
        )
        if touched or lineage_changed or ch.reset:
            after = transcript.last_message_id if data is not None and data.session_id == current else None
            self.live_session_worker(current, after, lineage_changed or ch.reset or current in ch.ended)

    class LiveSession(Message):
        """What the live follower's changes mean for the open session (worker → screen)."""

        def __init__(
            self,
            session_id: str,
            row: dict[str, Any] | None,
            items: list[MessageView] | None,
            lineage: dict[str, Any] | None,
        ) -> None:
            super().__init__()
            self.session_id = session_id
            self.row = row
            self.items = items
            self.lineage = lineage

    @work(thread=True, exit_on_error=False, group="live-session", description="follow the open session")
    def live_session_worker(self, session_id: str, after_id: int | None, lineage_too: bool) -> None:
        """The open session's row, messages after the last one shown, and (when a child or an
        end appeared) its lineage — one small read each, off the event loop."""
        assert self.db is not None
        try:
            rows = self.db.list_rows([session_id])
            items = None
            if rows and after_id is not None:
                items = [
                    message_view(m)
                    for m in self.db.get_messages_page(
                        session_id, after_id=after_id, limit=1_000_000, include_inactive=True
                    )
                ]
            lineage = self.db.get_lineage(session_id) if rows and lineage_too else None
        except Exception as exc:
            self.post_message(StoreFailed("follow the session", f"{type(exc).__name__}: {exc}"))
            return
        self.post_message(self.LiveSession(session_id, rows[0] if rows else None, items, lineage))

    @on(LiveSession)
    async def _live_session(self, message: LiveSession) -> None:
        if message.session_id != self.current_session:
            return  # the reader moved on meanwhile
        if message.row is None:
            await self._current_deleted(message.session_id)
            return
        loaded = self._last_loaded
        if loaded is not None and loaded.session_id == message.session_id:
            loaded.row = message.row
        transcript = self.query_one("#transcript", TranscriptView)
        if message.items and transcript.data is not None and transcript.data.session_id == message.session_id:
            await transcript.append_items(message.items)
        if message.lineage is not None:
            if loaded is not None and loaded.session_id == message.session_id:
                loaded.lineage = message.lineage
            self.query_one("#lineage", LineageTree).show_lineage(message.lineage)
            self._care_changed()
        self._show_live_tip()
        if loaded is not None and loaded.session_id == message.session_id:
            transcript.border_subtitle = self._transcript_subtitle(loaded)

    @on(TranscriptView.NewBelow)
    def _new_below(self, message: TranscriptView.NewBelow) -> None:
        """The "N new ↓ G" marker in the transcript's subtitle comes and goes."""
        loaded = self._last_loaded
        if loaded is not None and loaded.session_id == self.current_session:
            self.query_one("#transcript", TranscriptView).border_subtitle = self._transcript_subtitle(loaded)

    async def _current_deleted(self, session_id: str) -> None:
        """The open session was deleted by another program: say so where it was shown."""
        self.current_session = None
        self._last_loaded = None
        transcript = self.query_one("#transcript", TranscriptView)
        await transcript.clear_transcript(f"Session {session_id} was deleted elsewhere (by another program).")
        transcript.border_subtitle = "deleted elsewhere"
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
            note = ""
            if tip is not None:
                node = next((n for n in (lineage.lineage or {}).get("nodes", []) if n["id"] == tip), {})
                note = f"continued in {one_line(node.get('title'), 40) or one_line(tip, 40)} — L"
            title.update(self._title_text(loaded.row, note))
        lineage.border_subtitle = "L: live tip" if tip is not None else ""
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
        """Recompute the order for a live change; one at a time (a change meanwhile runs it once
        more), and not while a full reload is on its way (it reads the same data)."""
        if self.db is None or self.state != "ready":
            return
        if self._live_order_running:
            self._live_order_again = True
            return
        self._live_order_running = True
        self._live_order_again = False
        self.live_order_worker(self.filter, self.order, self.active_only)

    class LiveOrder(Message):
        """A fresh order after live changes (worker → screen)."""

        def __init__(
            self, ids: list[str] | None, flt: SessionFilter, order: str, active: bool, total: int
        ) -> None:
            super().__init__()
            self.ids = ids
            self.flt = flt
            self.order = order
            self.active = active
            self.total = total

    @work(thread=True, exit_on_error=False, group="live-order", description="refresh the session order")
    def live_order_worker(self, flt: SessionFilter, order: str, active: bool) -> None:
        try:
            ids, total = self._ordered_ids(flt, order, active)
        except Exception as exc:
            self.post_message(StoreFailed("refresh the session list", f"{type(exc).__name__}: {exc}"))
            self.post_message(self.LiveOrder(None, flt, order, active, 0))
            return
        self.post_message(self.LiveOrder(ids, flt, order, active, total))

    @on(LiveOrder)
    async def _live_order(self, message: LiveOrder) -> None:
        self._live_order_running = False
        sessions = self.session_list
        current = (message.flt, message.order, message.active) == (self.filter, self.order, self.active_only)
        if message.ids is not None and current and not sessions.loading:
            was_empty = sessions.total == 0
            sessions.update_order(message.ids)
            self.store_total = message.total
            self._update_list_title()
            self._update_info()
            self.refresh_bindings()
            if was_empty and message.ids and self.current_session is None:
                self.load_session(message.ids[0])
        if self._live_order_again:
            self._refresh_order_live()
