"""SessionList: a Line-API virtual list over an ordered id list and a page cache.

Stock DataTable/OptionList/ListView keep every row in Python and freeze at 100k sessions.
This widget holds only the ordered ids (`SessionDB.session_order`) and a
small LRU of row pages fetched with `SessionDB.list_rows(ids)` in a thread worker;
`render_line` only looks at memory and draws a placeholder for rows still on their way.

Over several profiles' stores the list's keys are `(profile, id)` pairs (ids are
only unique within a store) held by a lazily merged sequence (`hermes_tui.app.stores.MergedKeys`):
the page worker merges as far as the page it fetches, and drawing only `peek`s at merged
positions. `selected_id` stays the plain session id; `selected_profile` names its store.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events, work
from textual.actions import SkipAction
from textual.binding import Binding, BindingType
from textual.geometry import Region, Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.worker import get_current_worker

from hermes_tui.app.debounce import Debouncer
from hermes_tui.app.render import (
    Clock,
    system_clock,
)
from hermes_tui.app.widgets.session_columns import (
    COLUMNS,
    PROFILE_TITLE_MIN,
    SELECTED_MARK,
    Column,
    drawn_status,
    layout_columns,
    live_label,
    row_cell,
    still_listed,
)

#: The list's names, wherever they are defined (the columns in `session_columns`): callers
#: import them from here.
__all__ = [
    "COLUMNS",
    "MAX_PAGES",
    "PAGE_SIZE",
    "PROFILE_TITLE_MIN",
    "SELECTED_MARK",
    "Column",
    "ListKey",
    "SessionList",
    "layout_columns",
    "live_label",
    "still_listed",
]

#: A row's key: the session id, or `(profile, id)` when the list spans several stores.
ListKey = str | tuple[str, str]
RowSource = Callable[[Sequence[Any]], list[dict[str, Any]]]
StatusSource = Callable[[Sequence[Any]], dict[Any, dict[str, Any]]]

PAGE_SIZE = 50  # a screen and a half: one page fetch stays under 5 ms at 1M messages
MAX_PAGES = 48
LINE_CACHE_SIZE = 1024  # drawn rows kept: a few screens' worth at every cursor/mark state
#: While the order changes live, the rows on screen are fetched again (fresh counts and live
#: statuses) at most this often: with 8 agents writing it changed ~10 times a second, and each
#: fetch was a worker, 50 rows and 50 status reads.
ROW_REFRESH_S = 0.25


class SessionList(ScrollView, can_focus=True):
    """Virtual, keyboard- and mouse-driven list of sessions."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up,k", "cursor_up", "Up", show=False),
        Binding("down,j", "cursor_down", "Down", show=False),
        Binding("pageup", "page_up", "Page up", show=False),
        Binding("pagedown", "page_down", "Page down", show=False),
        Binding("home", "first", "First", show=False),
        Binding("end", "last", "Last", show=False),
        # Shown in the footer while the list has the focus (the footer follows the focused pane).
        Binding("enter", "select", "Open"),
        Binding("space", "toggle_mark", "Select", tooltip="Select / unselect the row and move down"),
        Binding("shift+up", "extend_up", "Extend the selection up", show=False),
        Binding("shift+down", "extend_down", "Extend the selection down", show=False),
        Binding("ctrl+a,asterisk", "mark_all", "Select every session of the current filter", show=False),
        Binding("escape", "clear_marks", "Clear the selection (when any)", show=False),
    ]

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "session-list--header",
        "session-list--cursor",
        "session-list--placeholder",
        "session-list--dim",
        "session-list--mark",
        "session-list--untitled",
        "session-list--selected",
        "session-list--selected-mark",
        "session-list--working",
        "session-list--waiting",
        "session-list--idle",
        "session-list--unread",
        "session-list--pinned",
    }

    cursor: reactive[int] = reactive(0, always_update=True, init=False)

    class Highlighted(Message):
        """The cursor moved onto a session (posted for every move; the screen debounces)."""

        def __init__(self, session_id: str | None, index: int, profile: str | None = None) -> None:
            super().__init__()
            self.session_id = session_id
            self.index = index
            self.profile = profile  # the row's store over several profiles, else None

    class Selected(Message):
        """Enter or a double click on a session."""

        def __init__(self, session_id: str, index: int, profile: str | None = None) -> None:
            super().__init__()
            self.session_id = session_id
            self.index = index
            self.profile = profile

    class SelectionChanged(Message):
        """The set of marked sessions changed (the screen shows the count)."""

        def __init__(self, count: int) -> None:
            super().__init__()
            self.count = count

    class PageLoaded(Message):
        """A worker fetched a page of rows (private to the widget)."""

        def __init__(
            self,
            generation: int,
            page: int,
            rows: list[dict[str, Any]],
            statuses: dict[str, dict[str, Any]] | None = None,
            announce: bool = True,
        ) -> None:
            super().__init__()
            self.generation = generation
            self.page = page
            self.rows = rows
            self.statuses = statuses or {}
            self.announce = announce

    class PageFailed(Message):
        """A page fetch failed; the screen turns it into a notification."""

        def __init__(self, error: str) -> None:
            super().__init__()
            self.error = error

    def __init__(
        self,
        row_source: RowSource | None = None,
        *,
        now: Clock = system_clock,
        name: str | None = None,
        id: str | None = None,  # noqa: A002 - Textual's keyword
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.row_source = row_source
        self.now = now
        self.empty_text = "No sessions."
        self._ids: Sequence[Any] = ()
        #: Keys are `(profile, id)` (rows carry `profile`): the list spans several stores.
        self.federated = False
        #: Show the profile column (more than one store in the list).
        self.show_profile = False
        self._pages: OrderedDict[int, list[dict[str, Any]]] = OrderedDict()
        self._seed: tuple[int, list[dict[str, Any]]] | None = None
        # Drawn rows: building a row's Text and rendering it costs ~1 ms, and every live reorder
        # redraws every visible line. Keyed by the row's key and everything its look depends on
        # except the row's data, which is kept beside the strip and compared (`_cached_strip`):
        # a reorder or a page fetched again re-renders only the rows that changed.
        # (An OrderedDict: Textual's LRUCache.set keeps the old value of a key already there.)
        self._line_cache: OrderedDict[tuple[Any, ...], tuple[dict[str, Any], Strip]] = OrderedDict()
        self._pending: set[int] = set()
        self._generation = 0
        #: The generation of the last new order or invalidation: rows fetched before it are
        #: never shown; those fetched since, before a live reorder, may be (`_still_placed`).
        self._rows_generation = 0
        #: Fetches the rows on screen again for fresh counts, at most every `ROW_REFRESH_S`,
        #: while the order changes live (`_reorder`).
        self._row_refresh = Debouncer(self, ROW_REFRESH_S, self._refresh_visible_pages)
        #: A scroll to the cursor asked for while the list had no size (centred or not), done
        #: once it has one.
        self._scroll_wanted: bool | None = None
        self.page_fetches = 0
        self.selection: set[str] = set()
        self._anchor: int | None = None
        self._range_base: set[str] = set()
        #: Live status of the rows on screen (`SessionDB.live_status`), from the live follower.
        self.live: dict[str, dict[str, Any]] = {}
        #: Called with the ids on screen whenever they may have changed (the live follower).
        self.on_visible: Callable[[list[str]], None] | None = None
        #: Live statuses fetched with each page (`SessionDB.live_status`), so rows show theirs
        #: from their first paint; the live follower keeps them current afterwards.
        self.status_source: StatusSource | None = None
        self._live_column = True
        #: `(width, base style, scroll top)` while `render_lines` draws a frame.
        self._frame: tuple[int, Style, int] | None = None
        self._header_cache: tuple[tuple[Any, ...], Strip] | None = None
        #: The minute of the last full repaint by a live change (`_refresh_changed`).
        self._full_minute: int | None = None
        #: The ids are only the head of an order still being read (`set_order(provisional=True)`):
        #: first paint on a large cold store. Keys that need the whole order wait for it.
        self.provisional = False
        #: Moves asked for while provisional that need the whole order, replayed in order when it
        #: arrives: ("by", rows), ("last",), ("key", key), ("mark_all",).
        self._deferred: list[tuple[Any, ...]] = []

    # ------------------------------------------------------------------ data
    @property
    def total(self) -> int:
        """Number of sessions in the current order."""
        return len(self._ids)

    def key_at(self, index: int) -> Any:
        """The key at ``index``: an id, or `(profile, id)` when federated; None when out of
        range or not merged yet (never merges or queries: safe while drawing)."""
        ids = self._ids
        peek = getattr(ids, "peek", None)
        if peek is not None:
            return peek(index)
        return ids[index] if 0 <= index < len(ids) else None

    def key_of(self, row: dict[str, Any]) -> Any:
        """A row's key in this list."""
        return (row.get("profile"), row.get("id")) if self.federated else row.get("id")

    @staticmethod
    def split_key(key: Any) -> tuple[str | None, str | None]:
        """`(profile, id)` of a key (profile None for a single store's plain id)."""
        if isinstance(key, tuple):
            return key[0], key[1]
        return None, key

    @property
    def selected_key(self) -> Any:
        """Key under the cursor (None when the list is empty or the row is not merged yet)."""
        return self.key_at(self.cursor)

    @property
    def selected_id(self) -> str | None:
        """Session id under the cursor (None when the list is empty)."""
        return self.split_key(self.selected_key)[1]

    @property
    def selected_profile(self) -> str | None:
        """The store of the row under the cursor (None for a single store)."""
        return self.split_key(self.selected_key)[0]

    @property
    def selected_row(self) -> dict[str, Any] | None:
        """Cached row under the cursor, when its page has arrived."""
        return self.row_at(self.cursor)

    def row_at(self, index: int) -> dict[str, Any] | None:
        """Cached row at ``index`` or None (never queries)."""
        page = self._pages.get(index // PAGE_SIZE)
        if page is None:
            return None
        offset = index % PAGE_SIZE
        return page[offset] if offset < len(page) else None

    def set_order(
        self,
        ids: Sequence[Any],
        keep: Any = None,
        keep_index: int | None = None,
        *,
        provisional: bool = False,
    ) -> None:
        """Replace the ordered ids (a new filter or a refresh); keep the cursor on ``keep`` (or
        at ``keep_index``, found by the worker that built a merged order).

        ``provisional``: ``ids`` are only the first rows of the order (painted before the whole
        order is read); the next order set replaces them without moving the view
        (`_complete_order`), and the moves that need it wait for it meanwhile."""
        if self.provisional and not provisional and keep_index is None:
            self._complete_order(ids, keep)
            return
        self.provisional = provisional
        self._deferred = []
        self._row_refresh.cancel()  # a new order: its pages are fetched as they are drawn
        self._generation += 1
        self._rows_generation = self._generation
        self._ids = ids
        self._pages.clear()
        self._pending.clear()
        self._anchor = None
        seed, self._seed = self._seed, None
        if seed is not None:
            self._pages[seed[0]] = seed[1]
        if self.selection:
            # Marks only ever name sessions of the current order: a reload drops the ids that
            # are gone (deleted, or filtered out), so an action never hits an unseen session.
            kept = still_listed(self.selection, ids)
            if kept != self.selection:
                self.selection = kept
                self.post_message(self.SelectionChanged(len(kept)))
        index = keep_index or 0
        if keep is not None and keep_index is None:
            try:
                index = ids.index(keep)
            except (ValueError, AttributeError):
                index = 0
        self.virtual_size = Size(self.scrollable_content_region.width, self._lines())
        self.cursor = index
        self._scroll_cursor_into_view(center=True)
        self.refresh()
        self.call_after_refresh(self._report_visible)

    def update_order(self, ids: Sequence[Any], fresh: dict[Any, dict[str, Any]] | None = None) -> int:
        """A live refresh of the order: the selected row and the scroll position stay where the
        user left them. The cursor keeps its session (at its new index) and the view scrolls by
        the rows inserted or removed above it, so the selected row stays on the same screen line;
        at the very top the view stays at the top, so new sessions show up there. Rows already
        fetched are shown at their new places until the fresh ones arrive (no placeholder flash).
        Marks keep only ids still present. Returns the rows the cursor moved by.

        ``fresh``: the rows of every session that changed (by key), every other row unchanged:
        the rows on screen are taken from what is known and no page is read again (following
        one writer, that page read was most of the list's live work). None: any row may have
        changed, and the rows on screen are fetched again, soon.

        It is also how a provisional head hands over to the whole order (its moves waiting for
        the order then run)."""
        if self.provisional:
            self._complete_order(ids, None)
            return 0
        return self._reorder(ids, fresh)

    def _complete_order(self, ids: Sequence[Any], keep: Any) -> None:
        """The whole order for a provisional head: the cursor stays on its session (or goes to
        ``keep``) and on its screen line, the rows already fetched stay, then the moves that
        waited for the order run."""
        self.provisional = False
        deferred, self._deferred = self._deferred, []
        if keep is not None and keep != self.selected_key:
            deferred.insert(0, ("key", keep))
        self._reorder(ids)
        for move in deferred:
            self._apply_move(move)
        self.refresh()

    def _reorder(self, ids: Sequence[Any], fresh: dict[Any, dict[str, Any]] | None = None) -> int:
        keep = self.selected_key
        old_cursor = self.cursor
        top = int(self.scroll_offset.y)
        before = self._screen_rows()
        known = {self.key_of(r): r for page in self._pages.values() for r in page}
        for key, row in (fresh or {}).items():
            if known.get(key) != row:  # an unchanged row keeps its object: its line is not drawn
                known[key] = row
        self._generation += 1
        self._ids = ids
        self._pages.clear()
        self._pending.clear()
        self._anchor = None
        self._seed = None
        if self.selection:
            kept = still_listed(self.selection, ids)
            if kept != self.selection:
                self.selection = kept
                self.post_message(self.SelectionChanged(len(kept)))
        index = old_cursor
        if keep is not None:
            found = self._find_near(ids, keep, old_cursor)
            index = old_cursor if found is None else found  # gone: the cursor stays on its line
        index = max(0, min(index, len(ids) - 1)) if ids else 0
        height = self._body_height
        shift = index - old_cursor
        new_top = 0 if top == 0 and index < height else max(0, top + shift)
        self.virtual_size = Size(self.scrollable_content_region.width, self._lines())
        self.set_reactive(SessionList.cursor, index)
        self.scroll_to(y=new_top, animate=False, force=True)
        first, last = new_top // PAGE_SIZE, (new_top + height) // PAGE_SIZE
        stale = False
        # With the changed rows in hand, the pages drawing reads ahead are kept too (exact).
        ahead = 1 if fresh is not None else 0
        for page in range(max(0, first - ahead), last + 1 + ahead):
            start = page * PAGE_SIZE
            part = ids[start : start + PAGE_SIZE]
            if part and all(i in known for i in part):
                self._pages[page] = [known[i] for i in part]
                stale = True
            elif not first <= page <= last:  # ahead of the view: read when drawn
                continue
            else:
                # Not announced: the row under the cursor may be another session now (one
                # deleted elsewhere, or a conversation Hermes' list now shows as its new tip)
                # and the open transcript stays until the user moves (see below).
                self._fetch_page(page, announce=False)
        if stale and fresh is None:  # fresh counts for the rows on screen, soon (several
            self._row_refresh.start_if_idle()  # changes a second: once)
        if new_top == top:  # only the lines showing another row (or its placeholder) are drawn
            self._refresh_changed(before)
        else:
            self.refresh()
        self.call_after_refresh(self._report_visible)
        # No Highlighted: the open transcript stays (one deleted elsewhere says so) until the
        # user moves the cursor.
        return shift

    def _screen_rows(self) -> list[tuple[Any, ...]]:
        """What each body line on screen shows (key, row object, cursor): compared before and
        after a change, so only the lines that differ are drawn again."""
        top = int(self.scroll_offset.y)
        cursor = self.cursor
        return [
            (self.key_at(i), self.row_at(i), i == cursor)
            for i in range(top, min(len(self._ids), top + self._body_height))
        ]

    def _refresh_changed(self, before: list[tuple[Any, ...]]) -> None:
        """Refresh the body lines whose content differs from ``before`` (same scroll offset): a
        live change repaints, and the compositor redraws, a few lines instead of the whole list."""
        minute = int(self.now() // 60)
        if minute != self._full_minute:  # the relative times moved on: every line, once a minute
            self._full_minute = minute
            self.refresh()
            return
        after = self._screen_rows()
        width = max(self.virtual_size.width, self.size.width)
        lines = [
            y
            for y in range(max(len(before), len(after)))
            if y >= len(before)
            or y >= len(after)
            or before[y][0] != after[y][0]
            or before[y][1] is not after[y][1]
            or before[y][2] != after[y][2]
        ]
        if lines:
            self.refresh(*(Region(0, y + 1, width, 1) for y in lines))

    #: `update_order` looks for the selected key this far either side of its old index first.
    NEAR_ROWS = 512

    @staticmethod
    def _find_near(ids: Sequence[Any], key: Any, around: int) -> int | None:
        """Index of ``key`` in ``ids``, looked for first within `NEAR_ROWS` of ``around``: a live
        reorder moves a few sessions, so the selected one is nearly always close to where it was
        and the event loop never scans 100k ids (a full scan only when it moved far or is gone)."""
        if isinstance(ids, list | tuple):
            try:
                return ids.index(
                    key, max(0, around - SessionList.NEAR_ROWS), around + SessionList.NEAR_ROWS + 1
                )
            except ValueError:
                pass
        try:
            return int(ids.index(key))  # a merged order's index() looks its key up once, whole
        except (ValueError, AttributeError):
            return None

    def set_live(self, statuses: dict[Any, dict[str, Any]]) -> None:
        """Fresh live statuses of some rows (those on screen, or a page just fetched).

        Only rows whose label changed are drawn again: a status carries ``idle_s`` to the
        second, so comparing whole statuses redrew every row on screen with each page fetched
        (while an agent writes, several times a second)."""
        changed = {k for k, v in statuses.items() if drawn_status(self.live.get(k)) != drawn_status(v)}
        if len(self.live) > 20 * PAGE_SIZE:  # keep what a few screens need, not every row seen
            # (the rows on screen keep theirs: the follower reports only statuses that change)
            self.live = {k: self.live[k] for k in self.visible_ids if k in self.live}
        self.live = {**self.live, **statuses}
        if changed:
            top, width = int(self.scroll_offset.y), max(self.virtual_size.width, self.size.width)
            lines = [
                i - top + 1
                for i in range(top, min(len(self._ids), top + self._body_height))
                if self.key_at(i) in changed
            ]
            if lines:  # only the rows whose status changed are drawn again
                self.refresh(*(Region(0, y, width, 1) for y in lines))

    @property
    def visible_ids(self) -> list[Any]:
        """Keys of the rows on screen (those merged, when federated)."""
        top = int(self.scroll_offset.y)
        if hasattr(self._ids, "peek"):
            keys = (self.key_at(i) for i in range(top, min(len(self._ids), top + self._body_height)))
            return [k for k in keys if k is not None]
        return list(self._ids[top : top + self._body_height])

    def _report_visible(self) -> None:
        if self.on_visible is not None:
            self.on_visible(self.visible_ids)

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        if int(old_value) != int(new_value):
            self._report_visible()

    def seed_page(self, page: int, rows: list[dict[str, Any]]) -> None:
        """Rows of `page` fetched ahead (the open prefetch): kept for the next `set_order`."""
        self._seed = (page, rows) if rows else None

    def invalidate(self) -> None:
        """Drop cached rows (after a write elsewhere) and fetch the visible page again."""
        self._row_refresh.cancel()
        self._generation += 1
        self._rows_generation = self._generation
        self._pages.clear()
        self._pending.clear()
        self.refresh()

    def _ensure_page(self, page: int) -> None:
        if page in self._pages:
            return
        self._fetch_page(page)

    def _refresh_visible_pages(self) -> None:
        top = int(self.scroll_offset.y)
        for page in range(top // PAGE_SIZE, (top + self._body_height) // PAGE_SIZE + 1):
            self._fetch_page(page, announce=False)

    def _fetch_page(self, page: int, announce: bool = True) -> None:
        """Fetch ``page`` in a worker (again, if cached: its rows replace the cached ones).
        ``announce`` False (a refresh of rows already shown): the cursor's row is not announced
        again (`Highlighted` would reopen its session, which a delete may have removed)."""
        if page in self._pending or self.row_source is None:
            return
        start = page * PAGE_SIZE
        if start >= len(self._ids) or page < 0:
            return
        self._pending.add(page)
        self.load_page_worker(self._generation, page, self._ids, start, announce)

    @work(thread=True, exit_on_error=False, group="list-pages", description="fetch a page of session rows")
    def load_page_worker(
        self, generation: int, page: int, order: Sequence[Any], start: int, announce: bool = True
    ) -> None:
        """Fetch one page of rows off the event loop (slicing a merged order merges it here)."""
        assert self.row_source is not None
        try:
            ids = list(order[start : start + PAGE_SIZE])
            rows = self.row_source(ids)
            statuses = self.status_source(ids) if self.status_source is not None and rows else None
        except Exception as exc:  # store errors become notifications
            self.post_message(self.PageFailed(f"{type(exc).__name__}: {exc}"))
            self.post_message(self.PageLoaded(generation, page, []))
            return
        if not get_current_worker().is_cancelled:
            self.post_message(self.PageLoaded(generation, page, rows, statuses, announce))

    def on_session_list_page_loaded(self, message: PageLoaded) -> None:
        message.stop()
        if message.generation != self._generation and not self._still_placed(message):
            return
        self._pending.discard(message.page)
        if not message.rows:
            return
        self.page_fetches += 1
        if message.statuses:
            self.set_live(message.statuses)
        before = self._screen_rows()
        rows, old = message.rows, self._pages.get(message.page)
        if old is not None and len(old) == len(rows):  # fetched again: unchanged rows keep their
            rows = [o if o == r else r for o, r in zip(old, rows, strict=True)]  # object, so line
        self._pages[message.page] = rows  # and row caches see at once that nothing changed
        self._pages.move_to_end(message.page)
        while len(self._pages) > MAX_PAGES:
            self._pages.popitem(last=False)
        if message.announce and message.page == self.cursor // PAGE_SIZE:
            self.post_message(self.Highlighted(self.selected_id, self.cursor, self.selected_profile))
        self._refresh_changed(before)

    def _still_placed(self, message: PageLoaded) -> bool:
        """Rows fetched before the latest live reorder still fit when their page holds the same
        keys: while agents write, the order changes more often than a fetch takes, and dropping
        every such page left the counts on screen stale. (A merged order is not sliced here.)"""
        if self.federated or not message.rows or message.generation < self._rows_generation:
            return False
        start = message.page * PAGE_SIZE
        keys = [self.key_of(r) for r in message.rows]
        return list(self._ids[start : start + PAGE_SIZE]) == keys

    # ------------------------------------------------------------------ geometry
    @property
    def _body_height(self) -> int:
        return max(1, self.scrollable_content_region.height - 1)

    def _scroll_cursor_into_view(self, center: bool = False) -> None:
        if self.scrollable_content_region.height <= 0:
            # Not laid out yet, or laid out under the loading cover (Textual then gives the list
            # no size): scrolled with a 1-row body, a reload after a delete scrolled the list by
            # one row. The next resize, to the real size, scrolls instead.
            self._scroll_wanted = center or bool(self._scroll_wanted)
            return
        top = int(self.scroll_offset.y)
        height = self._body_height
        if center and not (top <= self.cursor < top + height):
            self.scroll_to(y=max(0, self.cursor - height // 2), animate=False, force=True)
        elif self.cursor < top:
            self.scroll_to(y=self.cursor, animate=False, force=True)
        elif self.cursor >= top + height:
            self.scroll_to(y=self.cursor - height + 1, animate=False, force=True)

    def _lines(self) -> int:
        """Lines of the virtual area: the header, the rows, and under a provisional head the line
        saying the rest is on its way."""
        return len(self._ids) + (2 if self.provisional else 1)

    def on_resize(self, event: events.Resize) -> None:
        self.virtual_size = Size(self.scrollable_content_region.width, self._lines())
        wanted, self._scroll_wanted = self._scroll_wanted, None
        if wanted is not None:
            self._scroll_cursor_into_view(center=wanted)
        self.call_after_refresh(self._report_visible)

    def watch_cursor(self, old: int, new: int) -> None:
        clamped = max(0, min(new, len(self._ids) - 1)) if self._ids else 0
        if clamped != new:
            self.cursor = clamped
            return
        self._scroll_cursor_into_view()
        self.refresh()
        self.post_message(self.Highlighted(self.selected_id, new, self.selected_profile))

    # ------------------------------------------------------------------ selection
    @property
    def selected_keys(self) -> list[Any]:
        """The marked keys in list order (one pass over the order; no rows are read)."""
        if not self.selection:
            return []
        marked = self.selection
        return [i for i in self._ids if i in marked]

    @property
    def selected_ids(self) -> list[str]:
        """The marked session ids in list order. Over several stores only those of the cursor
        row's store: an action acts on one store (`MainScreen.db`), never on ids of another."""
        if not self.federated:
            return self.selected_keys
        profile = self.selected_profile
        return [sid for p, sid in self.selected_keys if p == profile]

    @property
    def selection_profiles(self) -> set[str]:
        """The stores the marked rows belong to (empty for a single store)."""
        return {k[0] for k in self.selection if isinstance(k, tuple)}

    def _selection_changed(self) -> None:
        self.refresh()
        self.post_message(self.SelectionChanged(len(self.selection)))

    def set_selection(self, ids: set[str] | Sequence[str]) -> None:
        """Mark exactly ``ids`` (those of the current order)."""
        self.selection = set(ids).intersection(self._ids) if ids else set()
        self._anchor = None
        self._selection_changed()

    def clear_selection(self) -> None:
        """Drop every mark."""
        self._anchor = None
        if self.selection:
            self.selection = set()
            self._selection_changed()

    def action_toggle_mark(self) -> None:
        sid = self.selected_key
        if sid is None:
            return
        self._anchor = None
        if sid in self.selection:
            self.selection.discard(sid)
        else:
            self.selection.add(sid)
        self._selection_changed()
        self.cursor += 1

    def _extend_to(self, index: int) -> None:
        if not self._ids:
            return
        if self._anchor is None:
            self._anchor = self.cursor
            self._range_base = set(self.selection)
        index = max(0, min(index, len(self._ids) - 1))
        lo, hi = sorted((self._anchor, index))
        self.selection = self._range_base.union(self._ids[lo : hi + 1])
        self.cursor = index
        self._selection_changed()

    def action_extend_up(self) -> None:
        self._extend_to(self.cursor - 1)

    def action_extend_down(self) -> None:
        self._extend_to(self.cursor + 1)

    def action_mark_all(self) -> None:
        """Mark every id of the current order (ids only: 100k ids are a set, not rows)."""
        self._anchor = None
        if self.provisional:  # "every session" is the whole order's, not the head's
            self._defer(("mark_all",))
            return
        self.selection = set(self._ids)
        self._selection_changed()

    def action_clear_marks(self) -> None:
        """Escape clears the marks; without marks it falls through to the screen's Back."""
        if not self.selection:
            raise SkipAction()
        self.clear_selection()

    # ------------------------------------------------------------------ actions
    def _move_by(self, rows: int) -> None:
        """Move the cursor; under a provisional head a move past its rows (or after a move that
        is waiting) waits for the whole order instead of stopping at the head's last row."""
        self._anchor = None
        if self.provisional and (self._deferred or not 0 <= self.cursor + rows < len(self._ids)):
            self._defer(("by", rows))
            return
        self.cursor += rows

    def _defer(self, move: tuple[Any, ...]) -> None:
        """Keep ``move`` for when the whole order arrives (consecutive row moves add up)."""
        last = self._deferred[-1] if self._deferred else None
        if move[0] == "by" and last is not None and last[0] == "by":
            self._deferred[-1] = ("by", last[1] + move[1])
        elif move[0] in ("last", "key"):
            self._deferred = [move]  # an absolute target: the moves before it no longer matter
        else:
            self._deferred.append(move)
        self.refresh()

    def _apply_move(self, move: tuple[Any, ...]) -> None:
        if move[0] == "by":
            self.cursor += move[1]
        elif move[0] == "last":
            self.cursor = len(self._ids) - 1
        elif move[0] == "key":
            index = self._find_near(self._ids, move[1], self.cursor)
            if index is not None:
                self.cursor = index
                self._scroll_cursor_into_view(center=True)
        elif move[0] == "mark_all":
            self.selection = set(self._ids)
            self._selection_changed()

    @property
    def waiting_moves(self) -> bool:
        """Some key pressed under a provisional head waits for the whole order."""
        return bool(self._deferred)

    def move_to(self, key: Any) -> bool:
        """Put the cursor on ``key`` (a jump from elsewhere). Under a provisional head a key not
        among its rows is looked for again when the whole order arrives. False: not in the list."""
        index = self._find_near(self._ids, key, self.cursor)
        if index is not None:
            self._deferred = []
            self.cursor = index
            return True
        if self.provisional:
            self._defer(("key", key))
            return True
        return False

    def action_cursor_up(self) -> None:
        self._move_by(-1)

    def action_cursor_down(self) -> None:
        self._move_by(1)

    def action_page_up(self) -> None:
        self._move_by(-self._body_height)

    def action_page_down(self) -> None:
        self._move_by(self._body_height)

    def action_first(self) -> None:
        self._anchor = None
        self._deferred = []
        self.cursor = 0

    def action_last(self) -> None:
        self._anchor = None
        if self.provisional:
            self._defer(("last",))
            return
        self.cursor = len(self._ids) - 1

    def action_select(self) -> None:
        if self.selected_id is not None:
            self.post_message(self.Selected(self.selected_id, self.cursor, self.selected_profile))

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None or offset.y < 1:
            return
        index = int(self.scroll_offset.y) + offset.y - 1
        if 0 <= index < len(self._ids):
            if event.shift:
                self._extend_to(index)
                return
            self._anchor = None
            self.cursor = index
            if event.chain >= 2:
                self.action_select()

    # ------------------------------------------------------------------ drawing
    def _style(self, name: str) -> Style:
        return self.get_component_rich_style(name)

    def render_lines(self, crop: Region) -> list[Strip]:
        """Work out once per frame what every line needs (the width, base style and scroll
        offset walk the DOM: 60 µs a line) and make sure the pages around the view are on their
        way, then draw the lines."""
        width = self.scrollable_content_region.width
        top = int(self.scroll_offset.y)
        first, last = top // PAGE_SIZE, (top + self._body_height) // PAGE_SIZE
        for page in range(first - 1, last + 2):
            self._ensure_page(page)
        self._frame = (width, self.rich_style, top)
        try:
            return super().render_lines(crop)
        finally:
            self._frame = None

    def render_line(self, y: int) -> Strip:
        if self._frame is not None:
            width, base, top = self._frame
        else:  # called directly (tests): the same values, worked out for this line
            width, base, top = (
                self.scrollable_content_region.width,
                self.rich_style,
                int(self.scroll_offset.y),
            )
            for page in range(top // PAGE_SIZE - 1, (top + self._body_height) // PAGE_SIZE + 2):
                self._ensure_page(page)
        if y == 0:
            return self._header_strip(width).apply_style(base)
        index = top + y - 1
        if not self._ids:
            # The empty text wraps: it names the filter and the key that clears it.
            lines = Text(self.empty_text).wrap(self.app.console, max(8, width - 4))
            if 2 <= y < 2 + len(lines):
                return self._plain_strip(
                    Text("  ") + lines[y - 2], width, base + self._style("session-list--dim")
                )
            return Strip.blank(width, base)
        if index >= len(self._ids):
            if self.provisional and index == len(self._ids):
                note = "  … reading the rest of the list"
                if self._deferred:
                    note += " (your keys wait for it)"
                return self._plain_strip(Text(note), width, base + self._style("session-list--dim"))
            return Strip.blank(width, base)
        row = self.row_at(index)
        style = base
        key = self.key_of(row) if row is not None else self.key_at(index)
        marked = bool(self.selection) and key in self.selection
        if marked:
            style = style + self._style("session-list--selected")
        if index == self.cursor:
            style = style + self._style("session-list--cursor")
        if row is None:
            mark = SELECTED_MARK if marked else " "
            return self._plain_strip(
                Text(mark + " …"), width, style + self._style("session-list--placeholder")
            )
        return self._cached_strip(row, key, width, style, marked, index == self.cursor)

    def _cached_strip(
        self, row: dict[str, Any], key: Any, width: int, style: Style, marked: bool, cursor: bool
    ) -> Strip:
        """The row's strip, rendered again only when the row's data or its look changed. Not keyed
        by the row's index or the list's generation: after a live reorder the rows that merely
        moved, and those fetched again unchanged, are drawn from the cache."""
        # The minute: the relative-time column moves on.
        cache_key = (
            key,
            width,
            marked,
            cursor,
            style,
            int(self.now() // 60),
            live_label(self.live.get(key)),
            self.show_profile,
        )
        cache = self._line_cache
        cached = cache.get(cache_key)
        if cached is not None and (cached[0] is row or cached[0] == row):
            cache.move_to_end(cache_key)
            return cached[1]
        strip = self._row_strip(row, width, style, marked)
        cache[cache_key] = (row, strip)
        cache.move_to_end(cache_key)
        if len(cache) > LINE_CACHE_SIZE:
            cache.popitem(last=False)
        return strip

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._line_cache.clear()  # a theme or CSS change: every row looks different

    def _plain_strip(self, text: Text, width: int, style: Style) -> Strip:
        segments = list(text.render(self.app.console))
        return Strip(segments).crop_extend(0, width, style).apply_style(style)

    def _header_strip(self, width: int) -> Strip:
        """The column headers (drawn with every frame: cached by what they depend on)."""
        key = (width, self.show_profile, self._style("session-list--header"))
        if self._header_cache is None or self._header_cache[0] != key:
            self._header_cache = (key, self._build_header(width))
        return self._header_cache[1]

    def _build_header(self, width: int) -> Strip:
        text = Text(no_wrap=True)
        cols = layout_columns(width, self.show_profile)
        for i, (col, w) in enumerate(cols):
            if i:
                text.append(" ")
            label = col.header[:w]
            text.append(label.rjust(w) if col.justify == "right" else label.ljust(w))
        return self._plain_strip(text, width, self._style("session-list--header"))

    def _row_strip(self, row: dict[str, Any], width: int, style: Style, marked: bool = False) -> Strip:
        segments: list[Segment] = []
        console = self.app.console
        columns = layout_columns(width, self.show_profile)
        self._live_column = any(col.key == "live" for col, _w in columns)
        status = self.live.get(self.key_of(row))
        for i, (col, w) in enumerate(columns):
            if i:
                segments.append(Segment(" "))
            if col.key == "sel":
                cell = Text(SELECTED_MARK if marked else "", style=self._style("session-list--selected-mark"))
            else:
                cell = row_cell(
                    col, row, w, style=self._style, status=status, now=self.now, live_column=self._live_column
                )
            cell.no_wrap = True
            cell.overflow = "ellipsis"
            cell.truncate(w, overflow="ellipsis", pad=False)
            if col.justify == "right":
                cell.pad_left(w - cell.cell_len)
            else:
                cell.pad_right(w - cell.cell_len)
            if cell.style:
                # `Text.render` drops a text's own style when it has no spans: the untitled,
                # mark and live styles never showed. As a span it is drawn (under the others).
                cell.stylize_before(cell.style)
            segments.extend(cell.render(console))
        if row.get("archived") or row.get("hidden"):  # shown only in the views that ask for them
            style = style + self._style("session-list--dim")
        return Strip(segments).crop_extend(0, width, None).apply_style(style)
