"""MainScreen: session list, lineage, transcript and search, and every worker that feeds them.

The event loop never runs SQL: each store call is in a `@work(thread=True)` method below,
which posts a message; the handlers only touch widgets. Later action dialogs (rename, prune,
delete, export, stats) plug in by adding a Binding to `ACTION_BINDINGS` and an `action_*`
method that reads `selected_session_id` / `selected_row`, runs its write in a worker and
posts `SessionsChanged` — which drops every cache here and re-queries.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Footer, Input, Select, Static
from textual.worker import get_current_worker

from hermes_tui.app import actions
from hermes_tui.app.messages import OpenSession, SessionsChanged, StoreFailed
from hermes_tui.app.prefetch import open_store
from hermes_tui.app.render import (
    format_cost,
    human_count,
    one_line,
    query_terms,
    snippet_terms,
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
from hermes_tui.state import SessionDB, SessionFilter

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

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("slash", "search", "Search"),
        Binding("escape", "back", "Back", show=False),
        Binding("n", "next_hit", "Next hit", show=False),
        Binding("N", "prev_hit", "Prev hit", show=False),
        Binding("c", "chain", "Chain"),
        Binding("i", "toggle_inactive", "Rewound"),
        Binding("f", "filters", "Filters"),
        Binding("o", "cycle_order", "Order"),
        Binding("z", "zoom", "Zoom"),
        Binding("s", "focus_sessions", "Sessions", show=False),
        Binding("t", "focus_transcript", "Transcript", show=False),
        Binding("l", "focus_lineage", "Lineage", show=False),
        Binding("ctrl+r", "reload", "Reload", show=False),
        Binding("d", "open_demo", "Open demo", show=False),
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

        def __init__(self, ids: Any, keep: str | None, seconds: float) -> None:
            super().__init__()
            self.ids = ids
            self.keep = keep
            self.seconds = seconds

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
        self.last_order_seconds = 0.0
        for spec in actions.ACTIONS:
            self._bindings.bind(spec.key, f"run_action({spec.name!r})", spec.description, show=spec.show)

    @property
    def hermes(self) -> HermesApp:
        """The app, typed."""
        return self.app  # type: ignore[return-value]

    # ------------------------------------------------------------------ compose
    def compose(self) -> ComposeResult:
        now = self.hermes.now
        yield Static(Text("hermes-tui · opening…"), id="info")
        with Horizontal(id="body"):
            with Vertical(id="left"):
                with Horizontal(id="filters"):
                    yield Select[str]([], prompt="any source", id="filter-source", compact=True)
                    yield Select[str]([], prompt="any model", id="filter-model", compact=True)
                    yield Select[int](list(DATE_PRESETS), prompt="any time", id="filter-date", compact=True)
                    yield Input(placeholder="title/id…", id="filter-text", compact=True)
                yield SessionList(now=now, id="sessions")
                yield SearchPane(now=now, id="search")
                yield LineageTree(id="lineage")
            with Vertical(id="right"):
                yield Static(Text(""), id="transcript-title")
                yield TranscriptView(id="transcript")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#sessions", SessionList).border_title = "Sessions"
        self.query_one("#lineage", LineageTree).border_title = "Lineage"
        self.query_one("#transcript", TranscriptView).border_title = "Transcript"
        self.query_one("#search", SearchPane).border_title = "Search"
        self.query_one("#sessions", SessionList).loading = True
        self.query_one("#sessions", SessionList).focus()
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
        except Exception as exc:
            self.post_message(self.OpenFailed(path, f"{type(exc).__name__}: {exc}"))
            return
        self.post_message(self.Opened(db, caps, sources, models))

    @on(Opened)
    def _opened(self, message: Opened) -> None:
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
        sessions.empty_text = "No sessions in this database."
        search = self.query_one("#search", SearchPane)
        search.searcher = self._searcher
        search.titles = self._titles
        search.set_sources(message.sources)
        self._set_options("#filter-source", message.sources)
        self._set_options("#filter-model", message.models)
        if message.ids is not None and self.filter == SessionFilter() and self.order == "last_active":
            sessions.seed_page(0, message.first_rows)
            self.post_message(self.OrderLoaded(message.ids, None, 0.0))
        else:
            self.reload_order()

    @on(Missing)
    async def _missing(self, message: Missing) -> None:
        self.state = "missing"
        self.add_class("-missing")
        self.session_list.loading = False
        self.session_list.empty_text = "No database here."
        self.session_list.set_order([])
        shown = self.hermes.display_path(message.path)
        self._info(Text(f"hermes-tui · {shown} · not found"))
        await self.query_one("#transcript", TranscriptView).clear_transcript(
            f"There is no session database at {shown}.\n\n"
            "Press d to open the demo database (built once and cached), "
            "or start hermes-tui with --db PATH."
        )
        self.notify(f"No session database at {shown}. Press d for the demo.", severity="warning")

    @on(OpenFailed)
    async def _open_failed(self, message: OpenFailed) -> None:
        self.state = "failed"
        self.add_class("-failed")
        self.session_list.loading = False
        self.session_list.empty_text = "The database could not be opened."
        self.session_list.set_order([])
        shown = self.hermes.display_path(message.path)
        error = message.error.replace(str(message.path), shown)
        self._info(Text(f"hermes-tui · {shown} · cannot open"))
        await self.query_one("#transcript", TranscriptView).clear_transcript(
            f"{shown} could not be opened:\n\n{error}\n\n"
            "The file was not changed. Press d to open the demo database instead."
        )
        self.notify(error, title="Cannot open database", severity="error", timeout=8)

    def action_open_demo(self) -> None:
        """Build (once) and open the demo database; only offered when nothing is open."""
        if self.state not in {"missing", "failed"}:
            return
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
        caps = self.caps
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append("hermes-tui", style="bold")
        text.append(f" · {self.hermes.display_path(self.hermes.db_path)}")
        text.append(f" · schema v{caps.get('schema_version', '?')}")
        text.append(f" · fts {caps.get('fts_layout', '?')}")
        text.append(" · read-only" if caps.get("read_only") else " · read-write", style="bold")
        total = self.session_list.total
        if self.state == "ready":
            text.append(f" · {total:,} sessions")
        self._info(text)

    # ------------------------------------------------------------------ list
    def _set_options(self, selector: str, values: list[str]) -> None:
        select = self.query_one(selector, Select)
        select.set_options([(one_line(v, 40), v) for v in values])

    def reload_order(self, keep: str | None = None) -> None:
        """Re-run `session_order` for the current filter (keeps the cursor on ``keep``)."""
        if self.db is None:
            return
        self.session_list.loading = True
        self.load_order_worker(self.filter, self.order, keep or self.session_list.selected_id)

    @work(thread=True, exit_on_error=False, exclusive=True, group="order", description="order sessions")
    def load_order_worker(self, flt: SessionFilter, order: str, keep: str | None) -> None:
        """One indexed query for the ordered ids; rows come later, a page at a time."""
        assert self.db is not None
        started = time.perf_counter()
        try:
            ids = self.db.session_order(flt, order=order).ids
        except Exception as exc:
            self.post_message(StoreFailed("list sessions", f"{type(exc).__name__}: {exc}"))
            ids = []
        if not get_current_worker().is_cancelled:
            self.post_message(self.OrderLoaded(ids, keep, time.perf_counter() - started))

    @on(OrderLoaded)
    async def _order_loaded(self, message: OrderLoaded) -> None:
        sessions = self.session_list
        sessions.loading = False
        self.last_order_seconds = message.seconds
        sessions.set_order(message.ids, keep=message.keep)
        self._update_list_title()
        sessions.border_subtitle = self._filter_summary()
        self._update_info()
        if not message.ids:
            self.current_session = None
            await self.query_one("#transcript", TranscriptView).clear_transcript(
                "No sessions match the filters."
                if self._filter_summary()
                else "This database has no sessions yet."
            )
            self.query_one("#transcript-title", Static).update(Text(""))
            self.query_one("#lineage", LineageTree).show_lineage(None)

    def _update_list_title(self) -> None:
        """``Sessions N`` and, when rows are marked, ``· M selected``."""
        sessions = self.session_list
        title = f"Sessions {sessions.total:,}"
        if sessions.selection:
            title += f" · {len(sessions.selection):,} selected"
        sessions.border_title = title

    @on(SessionList.SelectionChanged)
    def _selection_changed(self, message: SessionList.SelectionChanged) -> None:
        self._update_list_title()

    def _filter_summary(self) -> str:
        parts = []
        f = self.filter
        if f.sources:
            parts.append("source=" + ",".join(f.sources))
        if f.models:
            parts.append("model=" + ",".join(f.models))
        if f.started_after is not None:
            days = round((self.hermes.now() - f.started_after) / 86400)
            parts.append(f"≤{days}d")
        if f.text:
            parts.append(f"“{f.text}”")
        if self.order != "last_active":
            parts.append(f"by {self.order}")
        return " · ".join(parts)

    @on(Select.Changed, "#filters Select")
    @on(Input.Changed, "#filter-text")
    def _filters_changed(self, event: Select.Changed | Input.Changed) -> None:
        event.stop()
        source = self.query_one("#filter-source", Select).value
        model = self.query_one("#filter-model", Select).value
        days = self.query_one("#filter-date", Select).value
        text = self.query_one("#filter-text", Input).value.strip()
        self.filter = replace(
            self.filter,
            sources=(source,) if isinstance(source, str) else (),
            models=(model,) if isinstance(model, str) else (),
            started_after=self.hermes.now() - days * 86400 if isinstance(days, int) else None,
            text=text or None,
        )
        self.reload_order()

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
        self.notify(message.error, title="Could not load sessions", severity="error")

    @on(StoreFailed)
    def _store_failed(self, message: StoreFailed) -> None:
        self.notify(message.error, title=f"Could not {message.action}", severity="error")

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
        await transcript.show(loaded.data, target_id=loaded.target_id, terms=loaded.terms)
        transcript.border_title = "Chain" if loaded.data.chain else "Transcript"
        transcript.border_subtitle = self._transcript_subtitle(loaded)
        self.query_one("#transcript-title", Static).update(self._title_text(loaded.row))
        self.query_one("#lineage", LineageTree).show_lineage(loaded.lineage)
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
        if loaded.target_id is not None and search.hits and search.highlighted is not None:
            parts.append(f"hit {search.highlighted + 1}/{len(search.hits)}")
        return " · ".join(parts)

    def _title_text(self, row: dict[str, Any]) -> Text:
        text = Text(no_wrap=True, overflow="ellipsis")
        title = one_line(row.get("title"))
        text.append(title or one_line(row.get("preview")) or "(untitled)", style="bold")
        text.append(
            f"\n{row.get('id')} · {one_line(row.get('source'))} · {one_line(row.get('model')) or '—'}"
        )
        tokens = (row.get("input_tokens") or 0) + (row.get("output_tokens") or 0)
        text.append(f" · {human_count(row.get('message_count'))} msgs · {human_count(tokens)} tok")
        cost = format_cost(row)
        if cost:
            text.append(f" · {cost}")
        if row.get("end_reason"):
            text.append(f" · ended: {row['end_reason']}", style="dim")
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

    def action_search(self) -> None:
        if self.db is None:
            return
        self.add_class("-searching")
        self.query_one("#search", SearchPane).focus_input()

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
            self.remove_class("-searching")
            self._came_from_search = False
            self.session_list.focus()
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
        self.remove_class("-searching")
        self.session_list.focus()

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
