"""SearchPane: search-as-you-type over `SessionDB.search`, with the answering route shown.

Typing restarts a short debounce timer; when it fires, an exclusive thread worker runs the
query (a newer query cancels the older worker). Results carry the query and filters they
answer, and are dropped unless those still match the pane (stale results never show).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.timer import Timer
from textual.widgets import Input, OptionList, Select, Static
from textual.widgets.option_list import Option
from textual.worker import get_current_worker

from hermes_tui.app.render import (
    Clock,
    one_line,
    relative_time,
    session_label,
    snippet_text,
    system_clock,
)

DEBOUNCE_S = 0.05
RESULT_LIMIT = 25  # about three screens of hits; building 50 options blocked the loop 25-120 ms
ROLES = ("user", "assistant", "tool", "system")
#: Result orders: newest first is the default while typing (bounded work at any store size);
#: best match scores every hit with bm25 (upstream's default order).
SORTS = (("newest first", "newest"), ("best match", "rank"), ("oldest first", "oldest"))

#: ``searcher(query, source_filter=..., role_filter=..., limit=...) -> (results, route)``
Searcher = Callable[..., tuple[list[dict[str, Any]], str]]
#: ``titles(session_ids) -> {id: row}`` for the title/source/time of each hit
Titles = Callable[[list[str]], dict[str, dict[str, Any]]]


@dataclass(frozen=True)
class SearchRequest:
    """A query and the filters it ran with: results are applied only if all still match."""

    query: str
    source: str | None = None
    role: str | None = None
    sort: str = "newest"


@dataclass
class SearchResults:
    """What one search worker produced."""

    request: SearchRequest
    hits: list[dict[str, Any]] = field(default_factory=list)
    route: str = ""
    seconds: float = 0.0
    error: str | None = None


class SearchPane(Vertical):
    """Input, filters, route line and hit list."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("down", "focus_results", "Results", show=False),
    ]

    class HitChosen(Message):
        """Enter on a hit: open its session at its message."""

        def __init__(self, hit: dict[str, Any], index: int, query: str) -> None:
            super().__init__()
            self.hit = hit
            self.index = index
            self.query = query

    class ResultsShown(Message):
        """Results for the current query are on screen (latency probes listen for this)."""

        def __init__(self, request: SearchRequest, count: int, route: str) -> None:
            super().__init__()
            self.request = request
            self.count = count
            self.route = route

    class Found(Message):
        """Private: a worker finished."""

        def __init__(self, results: SearchResults) -> None:
            super().__init__()
            self.results = results

    def __init__(
        self,
        searcher: Searcher | None = None,
        titles: Titles | None = None,
        *,
        now: Clock = system_clock,
        id: str | None = None,  # noqa: A002
        classes: str | None = None,
    ) -> None:
        super().__init__(id=id, classes=classes)
        self.searcher = searcher
        self.titles = titles
        self.now = now
        self.hits: list[dict[str, Any]] = []
        self.shown: SearchRequest | None = None
        self._timer: Timer | None = None
        self.searches_run = 0

    def compose(self) -> ComposeResult:
        yield Input(placeholder="search messages…  (Esc closes)", id="search-input")
        with Horizontal(id="search-filters"):
            yield Select[str]([], prompt="any source", id="search-source", compact=True)
            yield Select[str]([(r, r) for r in ROLES], prompt="any role", id="search-role", compact=True)
            yield Select[str](SORTS, value="newest", allow_blank=False, id="search-sort", compact=True)
        yield Static(Text(""), id="search-status")
        yield OptionList(id="search-results")

    # ------------------------------------------------------------------ state
    @property
    def query_text(self) -> str:
        """Text in the input box."""
        return self.query_one("#search-input", Input).value

    def current_request(self) -> SearchRequest:
        """The query and filters as they are on screen now."""
        source = self.query_one("#search-source", Select).value
        role = self.query_one("#search-role", Select).value
        sort = self.query_one("#search-sort", Select).value
        return SearchRequest(
            query=self.query_text.strip(),
            source=source if isinstance(source, str) else None,
            role=role if isinstance(role, str) else None,
            sort=sort if isinstance(sort, str) else "newest",
        )

    def set_sources(self, sources: list[str]) -> None:
        """Fill the source filter (from `distinct_values("source")`)."""
        select = self.query_one("#search-source", Select)
        current = select.value
        select.set_options([(s, s) for s in sources])
        if isinstance(current, str) and current in sources:
            select.value = current

    def focus_input(self) -> None:
        """Put the caret in the query box."""
        self.query_one("#search-input", Input).focus()

    # ------------------------------------------------------------------ searching
    @on(Input.Changed, "#search-input")
    def _query_changed(self, event: Input.Changed) -> None:
        event.stop()
        self._schedule()

    @on(Select.Changed)
    def _filter_changed(self, event: Select.Changed) -> None:
        event.stop()
        self._schedule(delay=0)

    @on(Input.Submitted, "#search-input")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if self.hits:
            self.action_focus_results()

    def _schedule(self, delay: float = DEBOUNCE_S) -> None:
        if self._timer is not None:
            self._timer.stop()
        self._timer = self.set_timer(delay, self._fire) if delay else None
        if not delay:
            self._fire()

    def _fire(self) -> None:
        self._timer = None
        request = self.current_request()
        if not request.query:
            self.workers.cancel_group(self, "search")
            self._apply(SearchResults(request))
            return
        self._status(Text("searching…", style="italic"))
        if self.searcher is not None:
            self.search_worker(request)

    @work(thread=True, exclusive=True, exit_on_error=False, group="search", description="search messages")
    def search_worker(self, request: SearchRequest) -> None:
        """Run one query off the event loop; a newer query cancels this one."""
        assert self.searcher is not None
        worker = get_current_worker()
        started = time.perf_counter()
        try:
            hits, route = self.searcher(
                request.query,
                source_filter=[request.source] if request.source else None,
                role_filter=[request.role] if request.role else None,
                limit=RESULT_LIMIT,
                sort=None if request.sort == "rank" else request.sort,
            )
            if worker.is_cancelled:
                return
            if self.titles is not None and hits:
                rows = self.titles(list(dict.fromkeys(h["session_id"] for h in hits)))
                for hit in hits:
                    hit["_session"] = rows.get(hit["session_id"], {})
        except Exception as exc:  # store errors become a status line, never a crash
            if not worker.is_cancelled:
                self.post_message(self.Found(SearchResults(request, error=f"{type(exc).__name__}: {exc}")))
            return
        if not worker.is_cancelled:
            self.post_message(self.Found(SearchResults(request, hits, route, time.perf_counter() - started)))

    @on(Found)
    def _found(self, message: Found) -> None:
        message.stop()
        if message.results.request != self.current_request():
            return  # stale: the query or a filter changed since this worker started
        self._apply(message.results)

    def _apply(self, results: SearchResults) -> None:
        self.hits = results.hits
        self.shown = results.request
        options = self.query_one("#search-results", OptionList)
        options.clear_options()
        options.add_options([Option(self._hit_prompt(h)) for h in results.hits])
        if results.error:
            self._status(Text(f"invalid query: {results.error}", style="bold"))
        elif not results.request.query:
            self._status(Text("type to search every message", style="dim"))
        else:
            status = Text()
            status.append(f"{len(results.hits)}{'+' if len(results.hits) >= RESULT_LIMIT else ''} hits")
            status.append(f" · route {results.route or '—'}", style="bold")
            self._status(status)
        if results.hits:
            options.highlighted = 0
        self.post_message(self.ResultsShown(results.request, len(results.hits), results.route))

    def _status(self, text: Text) -> None:
        self.query_one("#search-status", Static).update(text)

    def _hit_prompt(self, hit: dict[str, Any]) -> Text:
        session = hit.get("_session") or {}
        head = Text(no_wrap=True, overflow="ellipsis")
        label = session_label(session) if session else str(hit.get("session_id", ""))
        head.append(label[:60], style="bold")
        head.append(f"  {one_line(hit.get('source'))}", style="dim")
        head.append(f"  {hit.get('role', '')}", style="italic")
        head.append(f"  {relative_time(hit.get('timestamp'), self.now())}", style="dim")
        body = snippet_text(hit.get("snippet"))
        if not any(span.style for span in body.spans) and self.shown is not None:
            from hermes_tui.app.render import highlight_terms, query_terms

            highlight_terms(body, query_terms(self.current_request().query))
        head.append("\n")
        head.append_text(Text("  ") + body)
        return head

    # ------------------------------------------------------------------ choosing
    def action_focus_results(self) -> None:
        self.query_one("#search-results", OptionList).focus()

    @on(OptionList.OptionSelected, "#search-results")
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.choose(event.option_index)

    def choose(self, index: int) -> dict[str, Any] | None:
        """Highlight hit ``index`` and post HitChosen for it."""
        if not 0 <= index < len(self.hits):
            return None
        self.query_one("#search-results", OptionList).highlighted = index
        hit = self.hits[index]
        self.post_message(self.HitChosen(hit, index, self.shown.query if self.shown else ""))
        return hit

    @property
    def highlighted(self) -> int | None:
        """Index of the highlighted hit."""
        return self.query_one("#search-results", OptionList).highlighted

    def step(self, delta: int) -> dict[str, Any] | None:
        """Move to the next (+1) or previous (-1) hit, wrapping, and choose it."""
        if not self.hits:
            return None
        current = self.highlighted if self.highlighted is not None else -delta
        return self.choose((current + delta) % len(self.hits))
