"""SearchPane: search-as-you-type over `SessionDB.search`, with the total and the route shown.

Typing restarts a short debounce timer; when it fires, an exclusive thread worker runs the
query (a newer query cancels the older worker). Results carry the query and filters they
answer, and are dropped unless those still match the pane (stale results never show).

The first page shows at once; a second worker then counts every hit (`search_count`, capped),
and further pages are fetched as the highlight or the scroll nears the last loaded hit, or as
`n` walks past it, so every hit can be reached without loading them all up front.

Over several profiles' stores the searcher is a federated one
(`hermes_tui.app.stores.BrowserStores.searcher`): hits carry a `profile`, titles are looked up
by `(profile, session id)`, the counter also returns hits per profile (shown in the status
line) and each hit names its profile.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Input, OptionList, Select, Static
from textual.widgets.option_list import Option
from textual.worker import get_current_worker

from hermes_tui.app.debounce import Debouncer
from hermes_tui.app.render import (
    Clock,
    relative_time,
    session_label,
    snippet_text,
    system_clock,
)
from hermes_tui.safe_text import one_line
from hermes_tui.state import is_fts_corruption_error, is_malformed_db_error

DAMAGED_INDEX = "the search index of this store is damaged"


def search_error_text(exc: BaseException) -> str:
    """A failed search in words: a damaged index says what to do (its rows are all still
    there; the repair rebuilds the index after a backup), anything else names the error."""
    if is_fts_corruption_error(exc) or is_malformed_db_error(exc):
        return f"{DAMAGED_INDEX}: quit and run `hermes-tui sessions repair` (a backup is made first)"
    return f"{type(exc).__name__}: {exc}"


DEBOUNCE_S = 0.05
#: Newest-first results shown are re-run at most this often while agents write.
LIVE_REFRESH_S = 0.5
RESULT_LIMIT = 25  # one page: about three screens of hits; 50 options blocked the loop 25-120 ms
MORE_AHEAD = 5  # fetch the next page when the highlight comes this close to the last loaded hit
COUNT_CAP = 10_000  # counting stops here and says "≥10,000" (a count walks every match)
ROLES = ("user", "assistant", "tool", "system")
#: Result orders: newest first is the default while typing (bounded work at any store size);
#: best match scores every hit with bm25 (upstream's default order).
SORTS = (("newest first", "newest"), ("best match", "rank"), ("oldest first", "oldest"))

#: ``searcher(query, source_filter=..., role_filter=..., limit=...) -> (results, route)``
Searcher = Callable[..., tuple[list[dict[str, Any]], str]]
#: ``titles(keys) -> {key: row}`` for the title/source/time of each hit (keys: `hit_key`)
Titles = Callable[[list[Any]], dict[Any, dict[str, Any]]]
#: ``counter(query, source_filter=..., role_filter=..., cap=...) -> (count, exact)``, or
#: ``(count, exact, {profile: (count, exact)})`` over several stores
Counter = Callable[..., tuple[Any, ...]]
#: ``wrap(searcher, counter) -> (searcher, counter)``, applied to each store connected (picker
#: mode puts the sessions whose title matches first: `hermes_tui.app.picker_search`)
SearchWrap = Callable[[Searcher, "Counter | None"], tuple[Searcher, "Counter | None"]]


def hit_key(hit: dict[str, Any]) -> Any:
    """The session a hit belongs to: its id, or `(profile, id)` when it came from one of
    several stores (ids are only unique within a store)."""
    sid = hit.get("session_id")
    return (hit["profile"], sid) if "profile" in hit else sid


def hit_identity(hit: dict[str, Any]) -> Any:
    """A hit's message: its id, with its profile over several stores."""
    mid = int(hit["id"])
    return (hit["profile"], mid) if "profile" in hit else mid


#: What each answering route means, in the user's words (the raw names are store internals).
ROUTE_WORDS = {
    "fts5": "word index",
    "fts_cjk": "CJK word index",
    "trigram": "trigram index",
    "cjk_side": "CJK side index",
    "cjk_side_partial": "CJK side index so far + substring scan of the newer messages",
    "like_scan": "substring scan (no index for this query)",
    "empty": "nothing to search",
}


def building_words(building: tuple[int, int]) -> str:
    """ "CJK index 43% built": how far the side index of a 0.19.0 store is (ids are in order)."""
    indexed, newest = building
    return f"CJK index {min(99, int(100 * indexed / max(1, newest)))}% built"


def route_words(route: str) -> str:
    """The route as the status line says it (unknown names are shown as they are); several
    stores' routes are joined with `+`."""
    if "+" in route:
        return " + ".join(route_words(r) for r in route.split("+"))
    return ROUTE_WORDS.get(route, one_line(route) or "—")


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
    offset: int = 0  # 0: the first page (replaces the list); else a further page (appended)
    #: `(indexed, newest)` of a CJK index still being built when the search ran (`index_progress`).
    building: tuple[int, int] | None = None


class QueryInput(Input):
    """The query box; ↓ (shown in the footer) moves to the results."""

    # In place of Input's own hidden ↓ (scroll_down), which would otherwise take its footer slot
    # (a subclass's bindings of a key replace its bases').
    BINDINGS: ClassVar[list[BindingType]] = [Binding("down", "focus_results", "Results")]

    def action_focus_results(self) -> None:
        pane = next((a for a in self.ancestors if isinstance(a, SearchPane)), None)
        if pane is not None:
            pane.action_focus_results()


class HitList(OptionList):
    """The hit list; tells the pane when the user scrolled near the end (to load more)."""

    class NearEnd(Message):
        """The view is within a few lines of the bottom."""

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        if new_value > old_value and new_value >= self.max_scroll_y - 3:
            self.post_message(self.NearEnd())


class SearchPane(Vertical):
    """Input, filters, status line (hits loaded, total, route) and hit list."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("down", "focus_results", "Results"),
        Binding("n", "next_hit", "Next hit"),
        Binding("N", "prev_hit", "Prev hit"),
        Binding("o", "cycle_sort", "Order"),
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

    class Building(Message):
        """Private: a search is about to scan every message while the CJK index is built."""

        def __init__(self, request: SearchRequest, building: tuple[int, int]) -> None:
            super().__init__()
            self.request = request
            self.building = building

    class Counted(Message):
        """Private: the count worker finished (``count`` None: counting is not available)."""

        def __init__(
            self,
            request: SearchRequest,
            count: int | None,
            exact: bool,
            per_profile: dict[str, tuple[int, bool]] | None = None,
        ) -> None:
            super().__init__()
            self.request = request
            self.count = count
            self.exact = exact
            self.per_profile = per_profile

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
        self.counter: Counter | None = None
        self.wrap: SearchWrap | None = None
        #: `SessionDB.cjk_index_progress` of a store whose CJK index is built in the background
        #: (None: not applicable, e.g. several stores): the status line says how far it is.
        self.index_progress: Callable[[str], tuple[int, int] | None] | None = None
        self.now = now
        self.hits: list[dict[str, Any]] = []
        self.shown: SearchRequest | None = None
        self.route = ""
        self.building: tuple[int, int] | None = None
        self.error: str | None = None
        #: Every hit of `shown` is loaded (the last page came back short).
        self.exhausted = True
        #: Hits in total for `shown` (None: not counted yet or not countable) and whether exact.
        self.total: int | None = None
        self.total_exact = True
        self.counting = False
        self._more_pending = False
        self._step_after_more: int | None = None
        self._search_due = Debouncer(self, DEBOUNCE_S, self._fire)
        self.searches_run = 0
        #: The store changed since `shown` ran and the hits were not refreshed ("ctrl+r").
        self.stale = False
        self._live_due = Debouncer(self, LIVE_REFRESH_S, self._live_refresh)
        self._keep_hit: Any = None
        #: Hits per profile of `shown` (several stores), once counted.
        self.per_profile: dict[str, tuple[int, bool]] | None = None

    def compose(self) -> ComposeResult:
        yield QueryInput(placeholder="search messages…  (Esc closes)", id="search-input")
        with Horizontal(id="search-filters"):
            yield Select[str]([], prompt="any source", id="search-source", compact=True)
            yield Select[str]([(r, r) for r in ROLES], prompt="any role", id="search-role", compact=True)
            yield Select[str](SORTS, value="newest", allow_blank=False, id="search-sort", compact=True)
        yield Static(Text(""), id="search-status")
        yield HitList(id="search-results")

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

    def connect(self, searcher: Searcher, titles: Titles, counter: Counter | None = None) -> None:
        """Attach a store (it opened); a query typed while it was opening runs now."""
        if self.wrap is not None:
            searcher, counter = self.wrap(searcher, counter)
        self.searcher = searcher
        self.titles = titles
        self.counter = counter
        if self.current_request().query:
            self._schedule(delay=0)

    @property
    def input_focused(self) -> bool:
        """The caret is in the query box (letters type there rather than run keys)."""
        return self.app.focused is self.query_one("#search-input", Input)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Hit and order keys only show (and act) from the result list, where letters are keys."""
        if action in {"next_hit", "prev_hit"}:
            return not self.input_focused and bool(self.hits)
        if action == "cycle_sort":
            return not self.input_focused
        return True

    def on_key(self, event: events.Key) -> None:
        """A letter typed outside the box (result list) goes into the query, unless a pane or
        screen key claims it: it never falls through to the app's `q`/`?`."""
        if not event.is_printable or event.character is None or self.input_focused:
            return
        active = self.screen.active_bindings.get(event.key)
        if active is not None and active.node is not self.app:
            return
        event.stop()
        event.prevent_default()
        field = self.query_one("#search-input", Input)
        self.screen.set_focus(field)
        field.insert_text_at_cursor(event.character)

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
        if delay:
            self._search_due.restart(delay=delay)
        else:
            self._search_due.cancel()
            self._fire()

    def _fire(self) -> None:
        request = self.current_request()
        self.workers.cancel_group(self, "search-more")
        self.workers.cancel_group(self, "search-count")
        self._more_pending = False
        self._step_after_more = None
        if not request.query:
            self.workers.cancel_group(self, "search")
            self._apply(SearchResults(request))
            return
        self._status(Text("searching…", style="italic"))
        if self.searcher is not None:
            self.search_worker(request)

    @staticmethod
    def _filters(request: SearchRequest) -> dict[str, Any]:
        return {
            "source_filter": [request.source] if request.source else None,
            "role_filter": [request.role] if request.role else None,
        }

    def _page(self, request: SearchRequest, offset: int) -> SearchResults:
        """One page of hits with their sessions' rows (worker thread)."""
        assert self.searcher is not None
        building = (
            self.index_progress(request.query) if self.index_progress is not None and offset == 0 else None
        )
        if building is not None:  # a substring scan may take long: say why while it runs
            self.post_message(self.Building(request, building))
        started = time.perf_counter()
        hits, route = self.searcher(
            request.query,
            **self._filters(request),
            limit=RESULT_LIMIT,
            offset=offset,
            sort=None if request.sort == "rank" else request.sort,
        )
        if self.titles is not None and hits:
            rows = self.titles(list(dict.fromkeys(hit_key(h) for h in hits)))
            for hit in hits:
                hit["_session"] = rows.get(hit_key(hit), {})
        return SearchResults(
            request, hits, route, time.perf_counter() - started, offset=offset, building=building
        )

    @work(thread=True, exclusive=True, exit_on_error=False, group="search", description="search messages")
    def search_worker(self, request: SearchRequest) -> None:
        """Run one query off the event loop; a newer query cancels this one."""
        worker = get_current_worker()
        try:
            results = self._page(request, 0)
        except Exception as exc:  # store errors become a status line, never a crash
            if not worker.is_cancelled:
                self.post_message(self.Found(SearchResults(request, error=search_error_text(exc))))
            return
        if not worker.is_cancelled:
            self.post_message(self.Found(results))

    @work(thread=True, exclusive=True, exit_on_error=False, group="search-more", description="more hits")
    def more_worker(self, request: SearchRequest, offset: int) -> None:
        """The page of hits after the ``offset`` already shown."""
        worker = get_current_worker()
        try:
            results = self._page(request, offset)
        except Exception as exc:
            results = SearchResults(request, error=f"{type(exc).__name__}: {exc}", offset=offset)
        if not worker.is_cancelled:
            self.post_message(self.Found(results))

    @work(thread=True, exclusive=True, exit_on_error=False, group="search-count", description="count hits")
    def count_worker(self, request: SearchRequest) -> None:
        """Every hit of the query counted (up to `COUNT_CAP`), after its first page showed."""
        assert self.counter is not None
        worker = get_current_worker()
        per_profile: dict[str, tuple[int, bool]] | None = None
        try:
            counted = self.counter(
                request.query,
                **self._filters(request),
                cap=COUNT_CAP,
                sort=None if request.sort == "rank" else request.sort,
            )
            count, exact = counted[0], counted[1]
            if len(counted) > 2:
                per_profile = counted[2]
        except Exception:  # noqa: BLE001 - no total is shown; the hits still page
            count, exact = None, False
        if not worker.is_cancelled:
            self.post_message(self.Counted(request, count, exact, per_profile))

    @on(Found)
    def _found(self, message: Found) -> None:
        message.stop()
        results = message.results
        if results.request != self.current_request():
            return  # stale: the query or a filter changed since this worker started
        if results.offset == 0:
            self._apply(results)
        elif results.request == self.shown and results.offset == len(self.hits):
            self._append(results)

    @on(Building)
    def _building(self, message: Building) -> None:
        message.stop()
        if message.request == self.current_request():
            self._status(
                Text(
                    f"searching… ({building_words(message.building)}; until then a CJK query "
                    "reads every message it does not hold yet)",
                    style="italic",
                )
            )

    @on(Counted)
    def _counted(self, message: Counted) -> None:
        message.stop()
        if message.request != self.shown:
            return
        self.counting = False
        self.per_profile = message.per_profile
        if message.count is not None and not self.exhausted:
            self.total = max(message.count, len(self.hits))
            self.total_exact = message.exact
            if message.exact and len(self.hits) >= self.total:
                self.exhausted = True
        self._show_status()

    def store_changed(self) -> None:
        """Other connections committed: never show silently stale hits. Newest-first results
        whose first page is all that is loaded re-run (cheap: the walk stops after one page),
        keeping the highlighted hit; other orders, or deeper pages, say "results changed"."""
        shown = self.shown
        if shown is None or not shown.query or self.error or self.searcher is None:
            return
        if shown.sort == "newest" and len(self.hits) <= RESULT_LIMIT and shown == self.current_request():
            self._live_due.start_if_idle()
            return
        if not self.stale:
            self.stale = True
            self._show_status()

    def _live_refresh(self) -> None:
        shown = self.shown
        if shown is None or shown != self.current_request():
            return
        index = self.highlighted
        self._keep_hit = (
            hit_identity(self.hits[index]) if index is not None and index < len(self.hits) else None
        )
        self.search_worker(shown)

    def refresh_results(self) -> None:
        """Run the shown query again (ctrl+r), keeping the highlighted hit when it is still there."""
        index = self.highlighted
        self._keep_hit = (
            hit_identity(self.hits[index]) if index is not None and index < len(self.hits) else None
        )
        self._schedule(delay=0)

    def _apply(self, results: SearchResults) -> None:
        keep, self._keep_hit = self._keep_hit, None
        self.stale = False
        self.hits = list(results.hits)
        self.shown = results.request
        self.route = results.route
        self.building = results.building
        self.error = results.error
        self.exhausted = len(self.hits) < RESULT_LIMIT
        self.total = len(self.hits) if self.exhausted else None
        self.total_exact = True
        self.counting = False
        self.per_profile = None
        options = self.query_one("#search-results", OptionList)
        options.clear_options()
        options.add_options([Option(self._hit_prompt(h)) for h in results.hits])
        if results.hits:
            ids = [hit_identity(h) for h in results.hits]
            options.highlighted = ids.index(keep) if keep in ids else 0
        if not self.exhausted and self.counter is not None and results.request.query:
            self.counting = True
            self.count_worker(results.request)
        self._show_status()
        self.screen.refresh_bindings()
        self.post_message(self.ResultsShown(results.request, len(results.hits), results.route))

    def _append(self, results: SearchResults) -> None:
        self._more_pending = False
        if results.error:
            self._step_after_more = None
            self.app.notify(
                one_line(results.error), title="Could not load more hits", severity="error", markup=False
            )
            return
        self.hits.extend(results.hits)
        if len(results.hits) < RESULT_LIMIT or (
            self.total is not None and self.total_exact and len(self.hits) >= self.total
        ):
            self.exhausted = True
            self.total, self.total_exact = len(self.hits), True
        self.query_one("#search-results", OptionList).add_options(
            [Option(self._hit_prompt(h)) for h in results.hits]
        )
        self._show_status()
        wanted, self._step_after_more = self._step_after_more, None
        if wanted is not None and self.hits:
            self.choose(wanted if wanted < len(self.hits) else 0)

    def load_more(self) -> bool:
        """Fetch the next page of hits unless all are loaded; True if one is on its way."""
        if self.exhausted or self.shown is None or self.searcher is None or not self.shown.query:
            return False
        if not self._more_pending:
            self._more_pending = True
            self.more_worker(self.shown, len(self.hits))
            self._show_status()
        return True

    def total_label(self) -> str:
        """How many hits there are, as known now: "1,234", "≥10,000" or "25+"."""
        if self.total is None:
            return f"{len(self.hits):,}+"
        return f"{self.total:,}" if self.total_exact else f"≥{self.total:,}"

    def _show_status(self) -> None:
        request = self.shown
        if self.error:
            if self.error.startswith(DAMAGED_INDEX):
                self._status(Text(one_line(self.error), style="bold"))
            else:
                self._status(Text(f"invalid query: {one_line(self.error)}", style="bold"))
            return
        if request is None or not request.query:
            self._status(Text("type to search every message", style="dim"))
            return
        status = Text(no_wrap=True, overflow="ellipsis")
        if self.stale:  # first, so a narrow pane still shows it
            status.append("results changed — ctrl+r", style="bold reverse")
            status.append(" · ")
        loaded = len(self.hits)
        if self.exhausted:
            status.append("no hits" if not loaded else f"{loaded:,} hit{'s' if loaded != 1 else ''}")
        elif self.counting:
            status.append(f"{loaded:,} of … hits (counting)")
        else:
            status.append(f"{loaded:,} of {self.total_label()} hits")
        if self._more_pending:
            status.append(" · loading more…", style="italic")
        per_profile = self.per_profile
        if per_profile is None and self.exhausted and self.hits and "profile" in self.hits[0]:
            per_profile = {}  # every hit is loaded: count them per store here
            for hit in self.hits:
                n, _exact = per_profile.get(hit["profile"], (0, True))
                per_profile[hit["profile"]] = (n + 1, True)
        if per_profile:
            for profile, (n, exact) in per_profile.items():
                status.append(f" · {one_line(profile, 24)} {n:,}{'' if exact else '+'}")
        status.append(f" · {route_words(self.route)}", style="bold")
        if self.building is not None and self.route in ("like_scan", "cjk_side_partial"):
            status.append(f" · {building_words(self.building)}")
        self._status(status)

    def _status(self, text: Text) -> None:
        self.query_one("#search-status", Static).update(text)

    def _hit_prompt(self, hit: dict[str, Any]) -> Text:
        session = hit.get("_session") or {}
        head = Text(no_wrap=True, overflow="ellipsis")
        label = session_label(session) if session else one_line(hit.get("session_id", ""))
        if "profile" in hit:
            head.append(f"{one_line(hit['profile'], 16)} ", style="reverse")
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

    def action_next_hit(self) -> None:
        self.step(+1)

    def action_prev_hit(self) -> None:
        self.step(-1)

    def action_cycle_sort(self) -> None:
        """Next result order (newest first → best match → oldest first)."""
        select = self.query_one("#search-sort", Select)
        values = [v for _label, v in SORTS]
        current = select.value if select.value in values else values[0]
        select.value = values[(values.index(current) + 1) % len(values)]

    @on(OptionList.OptionHighlighted, "#search-results")
    def _hit_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        event.stop()
        if event.option_index >= len(self.hits) - MORE_AHEAD:
            self.load_more()

    @on(HitList.NearEnd)
    def _near_end(self, event: HitList.NearEnd) -> None:
        event.stop()
        self.load_more()

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
        """Move to the next (+1) or previous (-1) hit and choose it.

        Past the last loaded hit the next page is fetched and its first hit chosen when it
        arrives (None is returned meanwhile); only once every hit is loaded does `n` wrap to
        the first. `N` on the first hit wraps to the last only when all are loaded.
        """
        if not self.hits:
            return None
        current = self.highlighted if self.highlighted is not None else -delta
        target = current + delta
        if target >= len(self.hits):
            if self.load_more():
                self._step_after_more = target
                return None
            target = 0
        elif target < 0:
            if not self.exhausted:
                return None
            target = len(self.hits) - 1
        return self.choose(target)
