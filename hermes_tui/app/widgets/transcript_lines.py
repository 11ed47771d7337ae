"""LinesTranscript: one session's (or one compression chain's) messages, on Textual's Line API.

The transcript is one `ScrollView`: every item (`transcript_items`: records built in a worker,
their Markdown parsed and code highlighted off the loop) is rendered once per width and state to
`Strip`s, and `render_line` returns the cached strip of the line asked for. A live append renders
only the new messages, extends the lines and the scroll range and scrolls: no widget is mounted,
styled or laid out (issue 36: it replaced a widget-per-message transcript that cost twice the CPU
and two frames per append; `bench/transcript_append_bench.py`).

It holds a window of the items (`start`..`end`, at most `MAX_WINDOW`, "more" rows at either edge)
so a 50,000-message session costs what a short one does; End/Home, a find hit or a search hit
move it. How one item becomes lines is `transcript_lines_items.ItemLines`; its focus stops (fold
titles, "more" rows), hover and text selection are `transcript_lines_stops.Stops` (mixins).
Snapshots (`tests/snapshots`) hold what it draws, cell for cell.
"""

from __future__ import annotations

import asyncio
from bisect import bisect_right
from collections.abc import Hashable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, ClassVar

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.color import Color
from textual.geometry import Region, Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widget import Widget

from hermes_tui.app.widgets.find_bar import FindBar
from hermes_tui.app.widgets.transcript_items import (
    CALLS_SHOWN,
    CHUNK,
    FOLLOW_DROP_STEP,
    FOLLOW_WINDOW,
    JUMP_BEFORE,
    JUMP_WINDOW,
    MAX_WINDOW,
    Item,
    MessageView,
    Prepared,
    SessionHead,
    TranscriptData,
    call_view,
    find_hits,
    first_window,
    fresh_items,
    item_index,
    more_label,
    prepare_calls,
    session_activity,
)
from hermes_tui.app.widgets.transcript_lines_items import MORE_CALLS, ItemLines, Rendered
from hermes_tui.app.widgets.transcript_lines_stops import Stop, Stops, window_row
from hermes_tui.formatting import plural
from hermes_tui.safe_text import inert, one_line
from hermes_tui.state import FOLD_HIDDEN

if TYPE_CHECKING:
    from typing import Self


class LinesTranscript(Stops, ItemLines, ScrollView, can_focus=True):
    """A transcript drawn line by line from strips cached per item, width and state."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "lines--border-user",
        "lines--border-assistant",
        "lines--border-tool",
        "lines--border-system",
        "lines--border-other",
        "lines--border-head",
        "lines--border-match",
        "lines--header-user",
        "lines--header-assistant",
        "lines--header-tool",
        "lines--header-system",
        "lines--header-other",
        "lines--fold-title",
        "lines--fold-focus",
        "lines--fold-hover",
        "lines--fold-body",
        "lines--divider",
        "lines--more",
        "lines--more-focus",
        "lines--more-hover",
        "lines--current",
        "lines--current-focus",
        "lines--match",
        "lines--folded-away",
        "lines--note",
    }

    #: Its size comes from the pane; the lines it holds change the scroll range alone. Textual's
    #: default (a change lays the whole screen out) is what the Line API is here to avoid: the
    #: scrollbar is updated here (`_set_height`), and a layout asked for only when it comes or goes.
    virtual_size: reactive[Size] = reactive(Size(0, 0), layout=False, repaint=False)

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up,k", "scroll_up", "Up", show=False),
        Binding("down,j", "scroll_down", "Down", show=False),
        Binding("home", "first", "Top", show=False),
        Binding("end,G", "last", "Bottom", show=False),
        Binding("left_square_bracket", "message_step(-1)", "Previous message", show=False),
        Binding("right_square_bracket", "message_step(1)", "Next message", show=False),
        Binding("x", "toggle_folds", "Expand/collapse", show=False),
        # Its own key, not `i`'s: rewound rows are turns the person saw and took back; these
        # are rows Hermes never painted (shown only while this transcript has some).
        Binding(
            "h", "toggle_hidden_rows", "Hidden rows", tooltip="Show/hide model-facing rows Hermes never shows"
        ),
        Binding("ctrl+f,slash", "open_find", "Find in the transcript", show=False),
        Binding("n", "find_step(1)", "Next match (find)", show=False),
        Binding("N", "find_step(-1)", "Previous match (find)", show=False),
        Binding("escape", "close_find", "Close find", show=False),
        # The folds and "more" rows (focusable widgets once, whose keys the help never listed:
        # no description, so it lists none of these).
        Binding("enter,space", "toggle_current_fold", "", show=False),
        Binding("tab", "focus_fold(1)", "", show=False),
        Binding("shift+tab", "focus_fold(-1)", "", show=False),
    ]

    class NewBelow(Message):
        """Messages arrived below while the reader was scrolled up (0: caught up)."""

        def __init__(self, count: int) -> None:
            super().__init__()
            self.count = count

    class FoldsChanged(Message):
        """A fold toggle of this view changed what it shows (the subtitle's counts)."""

    class WindowChanged(Message):
        """The window moved (tests and the status line read it)."""

        def __init__(self, start: int, end: int, total: int) -> None:
            super().__init__()
            self.start = start
            self.end = end
            self.total = total

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:  # noqa: A002
        super().__init__(id=id, classes=classes)
        self.data: TranscriptData | None = None
        self.items: list[Item] = []
        #: Rendered lines per item (its key), then per width and state.
        self._cache: dict[Hashable, dict[Hashable, Rendered]] = {}
        #: A message's parsed renderables (Markdown, highlighted code) per item key, while it is
        #: in the window: a redraw (the cursor's colour, a fold, the mouse) does not parse again.
        self._prepared: dict[Hashable, Prepared] = {}
        #: The window of items with lines: a 50,000-message
        #: session renders what is read, not all of it. `_lines` holds the window's lines at
        #: `_width` (a "more" row above and below when items lie beyond), `_starts[k]` the line
        #: where ``items[start + k]`` starts (and one past the last), `_rendered[k]` its lines.
        self.start = 0
        self.end = 0
        self._width = 0
        self._lines: list[Strip] = []
        self._starts: list[int] = []
        self._rendered: list[Rendered] = []
        #: Folds: `x` opens them all (`folds_open`); a fold toggled on its own is the exception.
        self.folds_open = False
        self._toggled: set[tuple[Hashable, int]] = set()
        #: Tool calls revealed past `CALLS_SHOWN`, per message key (prepared when revealed).
        self._revealed: dict[Hashable, tuple[tuple[str, Text], ...]] = {}
        self.show_inactive = False
        self.show_hidden = False
        self.current_id: int | None = None
        #: The marked message (a search hit or the find's match) and the terms marked in it.
        self.target_id: int | None = None
        self.terms: tuple[str, ...] = ()
        self._open_hits = False  # the marked message is the find's match: its hits' folds open
        #: Find: the bar is open, its query, the matching items' indexes, the shown one's place
        #: among them, the search hit to put back when it closes.
        self.finding = False
        self._find_token = 0
        self._saved_hit: tuple[int | None, tuple[str, ...]] = (None, ())
        self.find_query = ""
        self.find_hits: list[int] = []
        self.find_pos = -1
        self.new_below = 0
        self._newest_row = 0
        self._tail_pending = False  # a follow's scroll to the end waits for the scrollbar
        self._growing = False
        self._drawn_cursor: int | None = None  # the message drawn with the cursor (`mark_current`)
        #: Set for each frame by `render_lines`: the plain and the cursor's background, and the
        #: cursor's lines.
        self._backgrounds = (Style(), Style())
        self._over: Color | None = None  # the background component colours blend into (`_look`)
        self._note = ""  # a note in place of messages ("This session has no messages.")
        self._window = (0, 0, 0)  # (start, end, items) last told in a WindowChanged
        #: The stop that has the focus (Tab, a click; `transcript_lines_stops`): its title drawn
        #: focused, Enter acts on it; the view's border then looks unfocused (as it did while a
        #: fold widget had the focus).
        self.focused_fold: Stop | None = None
        self.hovered: Stop | None = None  # the stop under the mouse (drawn hovered)
        #: Per line of `_lines`, the cells before its text (border, padding: not selectable).
        self._prefixes: list[int] = []
        self._selectable_cache: dict[int, tuple[Strip, int, Strip]] = {}
        self._theme = ""  # the theme the window's lines were drawn in
        self._cursor_lines = range(0)

    # ------------------------------------------------------------------ content
    @property
    def last_message_id(self) -> int:
        """The newest row id held (live appends fetch what is after it)."""
        return self._newest_row

    @property
    def message_count(self) -> int:
        return sum(1 for i in self.items if isinstance(i, MessageView))

    @property
    def hidden_rows(self) -> int:
        return sum(1 for i in self.items if isinstance(i, MessageView) and i.fold == FOLD_HIDDEN)

    @property
    def showing_hidden_rows(self) -> bool:
        return self.show_hidden

    async def show(
        self, data: TranscriptData, target_id: int | None = None, terms: Sequence[str] = ()
    ) -> None:
        """Replace the content: a window around ``target_id`` (else the head), scrolled to it."""
        self._end_find()
        self.data = data
        self.items = list(data.items)
        self._note = "" if self.items else "This session has no messages."
        self._cache.clear()
        self._prepared.clear()
        self._revealed.clear()
        self._toggled.clear()
        self.folds_open = False
        self._newest_row = 0
        self._count(self.items)
        found = item_index(self.items, target_id)
        if found is not None:
            target_id = self.items[found].id  # type: ignore[union-attr]
        self.target_id, self.terms = target_id, tuple(terms)
        self._open_hits = False
        self.current_id = target_id
        self._set_new_below(0)
        self.start, self.end = first_window(self.items, target_id)
        self._relayout()
        self.scroll_to(y=self._line_of(found), animate=False, immediate=True)

    def _count(self, items: Sequence[Item]) -> None:
        for item in items:
            if isinstance(item, MessageView):
                self._newest_row = max(self._newest_row, item.id, *item.members)

    async def clear_transcript(self, note: str = "") -> None:
        """Empty the view, leaving a one-line note when one is given."""
        self._end_find()
        self.data = None
        self.items = []
        self._prepared.clear()
        self._newest_row = 0
        self._note = note
        self.target_id, self.terms, self.current_id = None, (), None
        self.start = self.end = 0
        self._relayout()

    def index_of(self, message_id: int | None) -> int | None:
        """Position of a message id in the items (or of the message it is a copy of)."""
        return item_index(self.items, message_id)

    async def clear_hit(self) -> None:
        """Forget the search hit: its message is drawn plain again, in place."""
        self._saved_hit = (None, ())
        if not self.finding:
            self._mark(None, ())

    def update_activity(self, row: dict[str, Any]) -> None:
        """Follow the open session's activity (its list row, re-read live) in the head."""
        head = self.items[0] if self.items else None
        if not isinstance(head, SessionHead) or one_line(row.get("id")) != head.session_id:
            return
        activity = session_activity(row)
        if activity != head.activity:
            self.items[0] = replace(head, activity=activity)
            if self.data is not None and self.data.items is not self.items and self.data.items:
                self.data.items[0] = self.items[0]
            self._rerender(0)

    def show_subtitle(self, subtitle: str) -> None:
        """Set the border's subtitle ("81 msgs", "3 new ↓ G"), repainting its row alone."""
        if self.border_subtitle == subtitle:
            return
        self._bottom_row_only = bool(self.styles.border_bottom[0]) and self.outer_size.height > 0
        try:
            self.border_subtitle = subtitle
        finally:
            self._bottom_row_only = False

    @property
    def at_bottom(self) -> bool:
        """The reader sees the end: the window holds the last item and the view is at its end."""
        if self.end < len(self.items):
            return False
        return self.max_scroll_y <= 0 or self.scroll_y >= self.max_scroll_y - 1

    def _set_new_below(self, count: int) -> None:
        if count != self.new_below:
            self.new_below = count
            self.post_message(self.NewBelow(count))

    async def append_items(self, items: Sequence[Item]) -> bool:
        """New messages at the end: rendered once, their lines added, the view following the end
        when it was there (else `new_below` counts them). Returns whether it followed."""
        if self.data is None:
            return False
        fresh = fresh_items(self.items, items)
        if not fresh:
            return False
        follow = self._tail_pending or self.at_bottom
        first = len(self.items)
        changed = self._starts[-1] if self.items and self._starts else 0  # (new lines, or "more")
        self.items.extend(fresh)
        self._count(fresh)
        if self.data.items is not self.items:
            self.data.items.extend(fresh)
        if self.end >= first and follow and len(fresh) >= MAX_WINDOW:  # a fresh window at the end
            self.start, self.end = max(0, len(self.items) - JUMP_WINDOW), len(self.items)
            self._relayout()
        elif self.end >= first:  # the window reaches the end: what fits joins it
            room = len(fresh) if follow else max(0, MAX_WINDOW - (self.end - self.start))
            if room:
                self._extend(self.end + min(room, len(fresh)))
            else:
                self._more_rows_changed()
            excess = self.end - self.start - (FOLLOW_WINDOW if follow else MAX_WINDOW)
            if excess >= (FOLLOW_DROP_STEP if follow else 1):
                self._drop_front(excess)
        else:
            self._more_rows_changed()
        self._set_height(len(self._lines))
        if follow:
            self._tail()
            self._set_new_below(0)
        else:
            self._set_new_below(self.new_below + sum(1 for i in fresh if isinstance(i, MessageView)))
        self._repaint_lines(0 if follow else changed)  # (below the view: nothing to repaint)
        return follow

    def _tail(self) -> None:
        """To the end now; when the scrollbar is yet to appear (a layout away, and Textual
        scrolls nothing without one), once it has."""
        if self.allow_vertical_scroll or self.max_scroll_y <= 0:
            self._tail_pending = False
            self.scroll_to(y=self.max_scroll_y, animate=False, immediate=True)
        elif not self._tail_pending:
            self._tail_pending = True
            self.call_after_refresh(self._tail_later)

    def _tail_later(self) -> None:
        """(`force`: the scrollbar may still be a layout away; the end is the end regardless)"""
        self._tail_pending = False
        self.scroll_to(y=self.max_scroll_y, animate=False, immediate=True, force=True)

    # ------------------------------------------------------------------ the window's lines
    #: Set while `show_subtitle` sets the border's subtitle (`refresh`).
    _bottom_row_only = False

    def refresh(
        self, *regions: Region, repaint: bool = True, layout: bool = False, recompose: bool = False
    ) -> Self:
        """A new subtitle repaints the bottom border row alone (Textual repaints the whole view
        for it; while following, the count in it changes with every append)."""
        if self._bottom_row_only and repaint and not regions and not layout:
            offset = self.content_offset  # (regions are given relative to the content)
            width, height = self.outer_size
            regions = (Region(-offset.x, height - 1 - offset.y, width, 1),)
        return super().refresh(*regions, repaint=repaint, layout=layout, recompose=recompose)

    def _repaint_lines(self, first: int = 0) -> None:
        """Repaint the rows showing virtual line ``first`` and below (none when it lies below
        the view): what the view draws changed, its border and background did not."""
        width, height = self.size
        y = max(0, first - round(self.scroll_y))
        if y < height:
            self.refresh(Region(0, y, width, height - y))

    def _set_height(self, height: int) -> None:
        """The scroll range follows the lines: a layout only when the scrollbar comes or goes."""
        old = self.virtual_size
        self.virtual_size = Size(0, height)  # lines are cut to the width: no horizontal bar
        view = self.scrollable_content_region.height
        if (old.height > view) != (height > view):
            self.refresh(layout=True)
            return
        if self.show_vertical_scrollbar:
            bar = self.vertical_scrollbar
            bar.window_virtual_size = height
            bar.window_size = self.container_size.height - self.scrollbar_size_horizontal

    def _more_strips(self, where: str, count: int) -> list[Strip]:
        """A "more" row (drawn as a compact button) and the blank line under it."""
        label = more_label(where, count)
        # A compact `Button`: its label padded by a cell each side, centred, on its background.
        text = Text(f" {label} ", no_wrap=True, overflow="ellipsis")
        names = ["lines--more"]
        if self.hovered == window_row(where):
            names.append("lines--more-hover")
        if self.focused_fold == window_row(where):
            names.append("lines--more-focus")
        look = self.get_component_rich_style(names[-1])
        text.stylize(self._look(names[-1]))  # (a span: `Text.render` leaves out the base style)
        text.truncate(self._width)
        left = max(0, (self._width - text.cell_len) // 2)
        segments = [Segment(" " * left), *text.render(self.app.console, end="")]
        row = Strip(segments).adjust_cell_length(self._width)
        row = row.apply_style(Style(bgcolor=look.bgcolor))
        return [row, Strip.blank(self._width)]

    def _redraw_window(self) -> None:
        """The window's own rows ("more") drawn again (their look changed)."""
        self._flatten()
        self._repaint_lines()

    def _relayout(self) -> None:
        """The window's lines at the current width (items' strips come from the cache)."""
        self._width = self.scrollable_content_region.width
        self._theme = self.app.theme
        self._rendered = [self._item_lines(item) for item in self.items[self.start : self.end]]
        self._flatten()
        self._set_height(len(self._lines))
        self._repaint_lines()

    def _flatten(self) -> None:
        self.call_later(self.mark_current)
        lines: list[Strip] = []
        prefixes: list[int] = []
        if self.start > 0 and self._width:
            lines.extend(self._more_strips("before", self.start))
        prefixes.extend([0] * len(lines))
        starts = [len(lines)]
        for rendered in self._rendered:
            strips = rendered.strips[rendered.margin_top :] if lines else rendered.strips
            lines.extend(strips)
            prefixes.extend([rendered.prefix] * len(strips))
            starts.append(len(lines))
        if self.end < len(self.items) and self._width:
            lines.extend(self._more_strips("after", len(self.items) - self.end))
        if self._note and not self.items and self._width:
            lines.extend(self._note_strips())
        prefixes.extend([0] * (len(lines) - len(prefixes)))
        self._lines, self._starts, self._prefixes = lines, starts, prefixes
        if (self.start, self.end, len(self.items)) != self._window:
            self._window = (self.start, self.end, len(self.items))
            self.post_message(self.WindowChanged(*self._window))

    def _note_strips(self) -> list[Strip]:
        """The note (`.transcript-note`: muted, padded one line and two columns)."""
        text = Text(inert(self._note), style=self._look("lines--note"))
        width = max(1, self._width - 4)
        lines = self._rich_strips(text, width, self._look("lines--note"))
        blank = Strip.blank(self._width)
        return [blank, *(Strip([Segment("  "), *line, Segment("  ")], self._width) for line in lines), blank]

    def _more_rows_changed(self) -> None:
        """The counts of the "more" rows changed, the items' lines did not."""
        self._flatten()

    def _extend(self, end: int) -> None:
        """Items up to ``end`` join the window at its end."""
        self._rendered.extend(self._item_lines(item) for item in self.items[self.end : end])
        self.end = end
        self._flatten()

    def _drop_front(self, count: int) -> None:
        """Forget the window's first ``count`` items (their cached lines too)."""
        for item in self.items[self.start : self.start + count]:
            self._cache.pop(self._item_key(item), None)
            self._prepared.pop(self._item_key(item), None)
        del self._rendered[:count]
        self.start += count
        self._flatten()

    def _drop_back(self, count: int) -> None:
        for item in self.items[self.end - count : self.end]:
            self._cache.pop(self._item_key(item), None)
            self._prepared.pop(self._item_key(item), None)
        del self._rendered[len(self._rendered) - count :]
        self.end -= count
        self._flatten()

    def grow(self, where: str) -> None:
        """`CHUNK` more items before or after the window, as many dropped at the other end past
        `MAX_WINDOW`; the reader's text stays where it is on screen."""
        if where == "after" and self.end < len(self.items):
            anchor, line = self.start, self._starts[0]
            self._extend(min(len(self.items), self.end + CHUNK))
            excess = self.end - self.start - MAX_WINDOW
            if excess > 0:
                anchor, line = self.start + excess, self._starts[excess]
                self._drop_front(excess)
        elif where == "before" and self.start > 0:
            anchor, line = self.start, self._starts[0]
            new_start = max(0, self.start - CHUNK)
            self._rendered[:0] = [self._item_lines(item) for item in self.items[new_start : self.start]]
            self.start = new_start
            excess = self.end - self.start - MAX_WINDOW
            if excess > 0:
                self._drop_back(excess)
            else:
                self._flatten()
        else:
            return
        shift = self._starts[anchor - self.start] - line  # where the anchor item moved
        self._set_height(len(self._lines))
        if shift:
            self.scroll_to(y=max(0, self.scroll_y + shift), animate=False, immediate=True)
        self._repaint_lines()

    def _line_of(self, index: int | None) -> int:
        """The first line of ``items[index]`` in the window (0 when it is not in it)."""
        if index is None or not self.start <= index < self.end:
            return 0
        return self._starts[index - self.start]

    def window_text(self) -> str:
        """The window's lines as plain text, the note of an empty view included (what the
        widget transcript's `Static`s held: the app's tests read what is shown through it)."""
        return "\n".join(strip.text.rstrip() for strip in self._lines)

    def item_strips(self, index: int) -> list[Strip] | None:
        """The lines ``items[index]`` is drawn as (its margin included), in their colours before
        the view's background goes under them; None outside the window."""
        if not self.start <= index < self.end or len(self._starts) <= index - self.start + 1:
            return None
        k = index - self.start
        return self._lines[self._starts[k] : self._starts[k + 1]]

    def item_text(self, index: int) -> str | None:
        """The lines ``items[index]`` is drawn as (its margin included), as plain text; None
        outside the window (what a message's widgets held in the widget transcript)."""
        if not self.start <= index < self.end or len(self._starts) <= index - self.start + 1:
            return None
        k = index - self.start
        return "\n".join(strip.text.rstrip() for strip in self._lines[self._starts[k] : self._starts[k + 1]])

    def item_at(self, line: int) -> int | None:
        """The index (in `items`) of the item drawn at virtual line ``line``, if any."""
        if not self._starts or not self._starts[0] <= line < self._starts[-1]:
            return None
        return self.start + bisect_right(self._starts, line) - 1

    def on_resize(self) -> None:
        if self.scrollable_content_region.width != self._width:
            self._relayout()

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        self.call_later(self.mark_current)  # the cursor left the screen: the top message
        if self.new_below and self.end >= len(self.items) and new_value >= self.max_scroll_y - 1:
            self._set_new_below(0)
        if self._growing or self.data is None:
            return
        if new_value > old_value and new_value >= self.max_scroll_y - 2 and self.end < len(self.items):
            self.call_later(self._edge_grow, "after")
        elif new_value < old_value and new_value <= 2 and self.start > 0:
            self.call_later(self._edge_grow, "before")

    def _edge_grow(self, where: str) -> None:
        self._growing = True
        try:
            if where == "after" and self.scroll_y >= self.max_scroll_y - 2:
                self.grow("after")
            elif where == "before" and self.scroll_y <= 2:
                self.grow("before")
        finally:
            self._growing = False

    def render_lines(self, crop: Region) -> list[Strip]:
        """Before a frame's lines: the backgrounds and the cursor's lines, once (a widget's
        `rich_style` is worked out through its ancestors on every read)."""
        if self.scrollable_content_region.width != self._width:
            self._relayout()  # the vertical scrollbar came or went: no resize event says so
        self._backgrounds = (
            Style(bgcolor=self.rich_style.bgcolor),
            Style(bgcolor=self.get_component_rich_style(self.cursor_look()).bgcolor),
        )
        index = item_index(self.items, self._drawn_cursor)
        self._cursor_lines = range(0)
        if index is not None and self.start <= index < self.end:
            k = index - self.start
            self._cursor_lines = range(self._starts[k], self._starts[k + 1] - 1)  # (not its margin)
        return super().render_lines(crop)

    def render_line(self, y: int) -> Strip:
        line = round(self.scroll_y) + y
        plain, cursor = self._backgrounds
        if not 0 <= line < len(self._lines):
            return Strip.blank(self._width, plain)
        strip = self._selectable(self._lines[line], line)  # (cached)
        return strip.apply_style(cursor if line in self._cursor_lines else plain)

    # ------------------------------------------------------------------ folds and rows
    def _rerender(self, index: int) -> None:
        """Render ``items[index]`` again (its state changed) and put its lines in place."""
        if self.start <= index < self.end:
            self._rendered[index - self.start] = self._item_lines(self.items[index])
            self._flatten()
            self._set_height(len(self._lines))
            self._repaint_lines(self._starts[index - self.start])

    def toggle_fold(self, index: int, fold: int) -> None:
        """Open or close fold ``fold`` of ``items[index]``; the "more tool calls" row
        (`MORE_CALLS`) reveals the next `CALLS_SHOWN` calls instead."""
        item = self.items[index]
        key = self._item_key(item)
        if fold == MORE_CALLS:
            if not isinstance(item, MessageView):
                return
            shown = self._revealed.get(key, ())
            batch = item.more_calls[len(shown) : len(shown) + CALLS_SHOWN]
            self._revealed[key] = shown + prepare_calls([call_view(call) for call in batch])
        elif (key, fold) in self._toggled:
            self._toggled.discard((key, fold))
        else:
            self._toggled.add((key, fold))
        self._rerender(index)

    def fold_at(self, line: int) -> tuple[int, int] | None:
        """(item index, fold) of the fold title drawn at virtual line ``line``, if one is."""
        index = self.item_at(line)
        if index is None:
            return None
        fold = self._rendered[index - self.start].titles[line - self._starts[index - self.start]]
        return None if fold is None else (index, fold)

    def on_click(self, event: events.Click) -> None:
        """A click on a fold's title or a "more" row focuses and activates it (as a click on the
        widget transcript's `Fold`s and buttons did); the message becomes current."""
        offset = event.get_content_offset(self)
        if offset is None:
            return
        line = round(self.scroll_y) + offset.y
        index = self.item_at(line)
        if index is not None:
            item = self.items[index]
            if isinstance(item, MessageView):
                self._set_current(item.id)
        stop = self.stop_at(line)
        if stop is None:
            self.focus_stop(None)  # (a click on text focuses the transcript, not a fold)
            return
        event.stop()
        self.focus_stop(stop)
        self.activate(stop)

    def action_toggle_folds(self) -> None:
        """`x`: open every fold, or close them all; on a focused "more tool calls" row, its next
        batch (that row's own key, as the widget transcript bound it)."""
        if self.focused_fold is not None and self.focused_fold[1] == MORE_CALLS:
            self.activate(self.focused_fold)
            return
        self.folds_open = not self.folds_open
        self._toggled.clear()
        self._relayout()

    def action_toggle_hidden_rows(self) -> None:
        """`h`: show or hide the rows Hermes never paints."""
        self.show_hidden = not self.show_hidden
        self.set_class(self.show_hidden, "-show-hidden-rows")
        self._relayout()
        self.post_message(self.FoldsChanged())
        self.notify(
            f"{plural(self.hidden_rows, 'hidden row')} {'shown' if self.show_hidden else 'folded away'}"
            " (model-facing: Hermes never shows them)",
            timeout=2,
        )

    def notify_style_update(self) -> None:
        """A restyle: the screen's `i` (`-show-inactive` on the screen: the widget transcript's
        rows follow it by CSS) or a new theme (the lines hold its colours) is followed here."""
        super().notify_style_update()
        if self.is_mounted:
            self.call_later(self._restyled)

    def _restyled(self) -> None:
        if self.app.theme != self._theme:
            self._theme = self.app.theme
            self._relayout()
        self.set_show_inactive(self.screen.has_class("-show-inactive"))

    def set_show_inactive(self, shown: bool) -> None:
        """The screen's `i` toggle (rewound and archived rows)."""
        if shown != self.show_inactive:
            self.show_inactive = shown
            self._relayout()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in {"find_step", "close_find"}:
            return self.finding
        if action == "toggle_hidden_rows":
            return self.hidden_rows > 0
        return True

    # ------------------------------------------------------------------ the message cursor
    def _set_current(self, message_id: int | None) -> None:
        if message_id != self.current_id:
            self.current_id = message_id
            self.mark_current()

    def mark_current(self) -> None:
        """Draw the message cursor: on the current message
        while it is on screen, else on the top one, without moving `current_id`."""
        shown = self._on_screen() if self.items and self._starts else []
        target = next((m for m in shown if m.id == self.current_id), shown[0] if shown else None)
        drawn = None if target is None else target.id
        if drawn != self._drawn_cursor:
            before, self._drawn_cursor = self._drawn_cursor, drawn
            for message_id in (before, drawn):  # (their colours blend into their background)
                self._recolour(message_id)
            self._repaint_lines()

    def cursor_look(self) -> str:
        """The cursor's component: brighter while the view itself has the focus (as
        the widget transcript's was), not while one of its folds has it."""
        return "lines--current-focus" if self.has_focus and self.focused_fold is None else "lines--current"

    def _recolour(self, message_id: int | None) -> None:
        """Draw message ``message_id`` again when its look depends on the cursor's (a muted
        colour is blended into the background under it, as a widget's component colours are)."""
        index = item_index(self.items, message_id)
        if index is not None:
            self._rerender(index)

    def on_focus(self) -> None:
        # The cursor's colour follows the focus, once `has_focus` says so (Textual sets it in
        # its own handler, after this one).
        self.call_later(self._recolour, self._drawn_cursor)
        self.refresh()

    def on_blur(self) -> None:
        self._focus_fold(None)  # (as a focused `Fold` loses the focus with the transcript)
        self.call_later(self._recolour, self._drawn_cursor)
        self.refresh()

    def _on_screen(self) -> list[MessageView]:
        """The window's messages with a line in the viewport, top first."""
        top = round(self.scroll_y)
        bottom = top + self.scrollable_content_region.height
        shown: list[MessageView] = []
        for k, item in enumerate(self.items[self.start : self.end]):
            first, past = self._starts[k], self._starts[k + 1]
            if isinstance(item, MessageView) and first < bottom and past > top and past > first:
                shown.append(item)
        return shown

    def current_message(self) -> MessageView | None:
        """The message the reader is on: `current_id` while on screen, else the top one."""
        shown = self._on_screen()
        current = next((m for m in shown if m.id == self.current_id), None)
        if current is None and shown:
            current = shown[0]
            self._set_current(current.id)
        return current

    def action_message_step(self, step: int) -> None:
        """`[` / `]`: the cursor to the previous / next shown message, scrolled into view (the
        window moves there when it is outside)."""
        current = self.current_message()
        messages = [i for i in self.items if isinstance(i, MessageView) and not i.fold]
        if current is None or current not in messages:
            return
        at = messages.index(current) + step
        if not 0 <= at < len(messages):
            return
        target = messages[at]
        self._set_current(target.id)
        index = self.items.index(target)
        if not self.start <= index < self.end:
            self._window_around(index)
        top, bottom = self._starts[index - self.start], self._starts[index - self.start + 1]
        view = self.scrollable_content_region.height
        if top < self.scroll_y:
            self.scroll_to(y=top, animate=False, immediate=True)
        elif bottom > self.scroll_y + view:
            self.scroll_to(y=min(top, bottom - view), animate=False, immediate=True)

    def _window_around(self, index: int) -> None:
        start = max(0, min(index - JUMP_BEFORE, len(self.items) - JUMP_WINDOW))
        self.start, self.end = start, min(len(self.items), start + JUMP_WINDOW)
        self._relayout()

    def action_first(self) -> None:
        """Home: the first items (the window moves there)."""
        if self.start > 0:
            self.start, self.end = 0, min(len(self.items), JUMP_WINDOW)
            self._relayout()
        self._set_current(next((i.id for i in self.items if isinstance(i, MessageView)), None))
        self.scroll_to(y=0, animate=False, immediate=True)

    def action_last(self) -> None:
        """End: the last items (the window moves there), the view at the end."""
        if self.end < len(self.items):
            self.start, self.end = max(0, len(self.items) - JUMP_WINDOW), len(self.items)
            self._relayout()
        self._set_current(next((i.id for i in reversed(self.items) if isinstance(i, MessageView)), None))
        self._tail()
        self._set_new_below(0)

    # ------------------------------------------------------------------ find
    @property
    def find_bar(self) -> FindBar | None:
        """The find bar beside this view, once mounted."""
        parent = self.parent
        if parent is None:
            return None
        return next((c for c in parent.children if isinstance(c, FindBar) and c.transcript is self), None)

    async def action_open_find(self) -> None:
        await self.open_find()

    async def open_find(self) -> None:
        """Show the find bar under the transcript (mounted on first use), the caret in it; the
        search hit shown now comes back when the find closes."""
        parent = self.parent
        if self.data is None or not isinstance(parent, Widget):
            return
        bar = self.find_bar
        if bar is None:
            bar = FindBar(self, id="find-bar")
            await parent.mount(bar, after=self)
        if not self.finding:
            self.finding = True
            self._saved_hit = (self.target_id, self.terms)
        bar.display = True
        self.screen.set_focus(bar.input)

    def find(self, query: str) -> None:
        """Look for ``query`` (case-insensitive) in every message, off the loop; the first match
        at or after the reader's place is shown (folded-away rows only while shown)."""
        if not self.finding:
            return
        self.find_query = query
        self._find_token += 1
        if not query:
            self.find_hits, self.find_pos = [], -1
            self._show_count("")
            self._mark(*self._saved_hit)
            return
        self._show_count("…")
        self.run_worker(
            self._scan(self._find_token, tuple(self.items), query.lower()),
            exclusive=True,
            group="transcript-find",
            exit_on_error=False,
            description="find in the transcript",
        )

    async def _scan(self, token: int, items: Sequence[Item], needle: str) -> None:
        hits = await asyncio.to_thread(find_hits, items, needle, self.show_inactive, self.show_hidden)
        if token != self._find_token or not self.finding:
            return  # a newer query (or Esc) came meanwhile
        self.find_hits = hits
        if not hits:
            self.find_pos = -1
            self._show_count("no match")
            self._mark(*self._saved_hit)
            return
        top = self.item_at(round(self.scroll_y)) or 0
        self.find_pos = next((k for k, i in enumerate(hits) if i >= top), 0)
        self._show_hit()

    async def step_find(self, delta: int) -> None:
        """The next (+1) or previous (-1) match, wrapping around at either end."""
        if self.finding and self.find_hits:
            self.find_pos = (self.find_pos + delta) % len(self.find_hits)
            self._show_hit()

    async def action_find_step(self, delta: int) -> None:
        await self.step_find(delta)

    async def close_find(self) -> None:
        """Esc: hide the bar, put back the search hit marked before, focus the transcript."""
        if not self.finding:
            return
        bar = self.find_bar
        had_focus = bar is not None and self.screen.focused in bar.walk_children()
        self._end_find()
        self._mark(*self._saved_hit)
        if had_focus or self.screen.focused is None:
            self.focus()

    async def action_close_find(self) -> None:
        await self.close_find()

    def _end_find(self) -> None:
        """Forget the find (new content, or Esc) and hide its bar."""
        if not self.finding:
            return
        self.finding = False
        self._find_token += 1
        self.find_query, self.find_hits, self.find_pos = "", [], -1
        bar = self.find_bar
        if bar is not None:
            bar.input.value = ""
            bar.show_count("")
            bar.display = False

    def _show_count(self, text: str) -> None:
        bar = self.find_bar
        if bar is not None:
            bar.show_count(text)

    def _show_hit(self) -> None:
        index = self.find_hits[self.find_pos]
        item = self.items[index]
        assert isinstance(item, MessageView)
        self._show_count(f"{self.find_pos + 1}/{len(self.find_hits)}")
        self._mark(item.id, (self.find_query,), open_hits=True)
        self._set_current(item.id)
        if not self.start <= index < self.end:
            self._window_around(index)
        self.scroll_to(y=self._line_of(index), animate=False, immediate=True)

    def _mark(self, target_id: int | None, terms: tuple[str, ...], open_hits: bool = False) -> None:
        """Mark ``target_id``'s message (its terms highlighted), the one marked before drawn plain."""
        before = item_index(self.items, self.target_id)
        self.target_id, self.terms, self._open_hits = target_id, tuple(terms), open_hits
        for index in {before, item_index(self.items, target_id)}:
            if index is not None:
                self._rerender(index)
