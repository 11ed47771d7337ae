"""TranscriptView: one session's (or one compression chain's) messages, rendered lazily.

Message dicts are turned into small `MessageView` records in the loading worker (decoding,
truncation, JSON pretty-printing, Markdown parsing and highlighting all happen off the event
loop). The view mounts a window of messages around the target, each 1-3 sibling widgets (a
`MessageBlock`, then `Fold`s), and grows it in chunks when the reader scrolls to an edge, so a
10,000-message session costs the same to open as a 10-message one.

Every string from the store is made inert (`hermes_tui.safe_text`) while the record is built, and
every field is read tolerantly: a row with bytes content, a text timestamp or malformed
``tool_calls`` shows a marker, never an exception. A message's tool calls are prepared and mounted
`CALLS_SHOWN` at a time (a `MoreCalls` row reveals the next batch), so one message with 5,000
calls costs what one with 50 does.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Text
from textual import events, on
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.content import Content
from textual.geometry import Region, Size
from textual.message import Message
from textual.reactive import reactive
from textual.widget import Widget
from textual.widgets import Button, Static

from hermes_tui.app.widgets.find_bar import FindBar
from hermes_tui.app.widgets.message_cursor import MessageCursor
from hermes_tui.app.widgets.message_parts import (
    DividerBlock,
    Fold,
    HeadBlock,
    MarkedRender,
    MessageBlock,
    MessagePart,
    MoreCalls,
    message_parts,
)
from hermes_tui.app.widgets.transcript_items import (
    CALLS_SHOWN,
    MAX_CALL_LINES,
    Divider,
    Item,
    MessageView,
    SessionHead,
    TranscriptData,
    call_list,
    find_hits,
    first_window,
    folded_counts,
    fresh_items,
    item_index,
    message_header,
    message_view,
    prepare_first_window,
    session_activity,
    session_head,
    transcript_items,
)
from hermes_tui.formatting import plural
from hermes_tui.safe_text import inert, one_line
from hermes_tui.state import FOLD_HIDDEN

if TYPE_CHECKING:
    from typing import Self


#: The transcript's names, wherever they are defined (the records in `transcript_items`, the
#: widgets in `message_parts`): callers import them from here.
__all__ = [
    "CALLS_SHOWN",
    "Divider",
    "DividerBlock",
    "Fold",
    "HeadBlock",
    "Item",
    "MAX_CALL_LINES",
    "MarkedRender",
    "MessageBlock",
    "MessagePart",
    "MessageView",
    "MoreCalls",
    "SessionHead",
    "TranscriptData",
    "TranscriptView",
    "call_list",
    "find_hits",
    "folded_counts",
    "message_header",
    "message_parts",
    "message_view",
    "prepare_first_window",
    "session_head",
    "transcript_items",
]

# Mounting runs on the event loop: 40 messages at once blocked it for up to 1 s on long sessions
# (the list froze while it loaded). A first window (`transcript_items.FIRST_WINDOW`) fills the
# screen; the rest arrive CHUNK at a time as the reader scrolls. A message is 1-3 widgets
# (`message_parts`).
CHUNK = 20
#: Most items with widgets at once: past it, growing at one end drops widgets at the
#: other. 50,000 messages all mounted (End used to mount everything) took minutes and GBs.
MAX_WINDOW = 120
#: Items a fresh window holds after Home, End or a jump to a far find hit, and how many of them
#: come before the hit.
JUMP_WINDOW = 40
JUMP_BEFORE = 10
#: While following a writer the window keeps the last FOLLOW_WINDOW items (scrolling up mounts
#: earlier ones as usual): each live append lays the whole screen out, and arranging 120 items
#: was a third of that. It may hold FOLLOW_DROP_STEP more before its front is dropped: Textual
#: lays the screen out again after each removal (the removal's completion runs twice, once
#: after the layout that already placed it), so dropping one message per append made every
#: live append two layouts.
FOLLOW_WINDOW = 40
FOLLOW_DROP_STEP = 20


class TranscriptView(MessageCursor, VerticalScroll, can_focus=True):
    """Scrollable transcript with a bounded window of widgets, hit navigation and find.

    Every message record is in memory (`items`); only ``items[start:end]`` have widgets, and
    never more than `MAX_WINDOW` of them: growing the window at one end drops widgets at the
    other (dropping above the viewport keeps the reader's line where it was), and Home, End
    and a find hit mount a fresh window where they land, so a 50,000-message session costs
    what a 200-message one does however it is read.
    """

    #: Its size comes from the pane, not from what it holds: a taller content changes the scroll
    #: range (set in the same layout) and nothing around it, but Textual's default asked for a
    #: second layout of the whole screen after each live append (a scrollbar that appears still
    #: asks for its own). Nor does the view's own paint (background and border, behind its
    #: children) depend on it: Textual's default repainted all of it, ~3 ms, on every append.
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
    ]

    class NewBelow(Message):
        """Messages arrived below while the reader was scrolled up (0: caught up)."""

        def __init__(self, count: int) -> None:
            super().__init__()
            self.count = count

    class FoldsChanged(Message):
        """A fold toggle of this view changed what it shows (the subtitle's counts)."""

    class WindowChanged(Message):
        """The mounted window moved (tests and the status line read it)."""

        def __init__(self, start: int, end: int, total: int) -> None:
            super().__init__()
            self.start = start
            self.end = end
            self.total = total

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:  # noqa: A002
        super().__init__(id=id, classes=classes)
        self.data: TranscriptData | None = None
        self.items: list[Item] = []
        self.start = 0
        self.end = 0
        self.target_id: int | None = None
        self.terms: tuple[str, ...] = ()
        #: The message the reader is on, which every message action (copy `m`/`c`) uses: set by
        #: opening at a search hit, a find match, Home/End and a focused fold; it stays while any
        #: part of it is on screen, else the message at the top of the view takes over
        #: (`current_message`). Its widgets carry the class `-current` (the message cursor).
        self._current_id: int | None = None
        self._marked: list[Widget] = []
        self._growing = False
        self._folds_open = False
        #: Messages appended live below the reader (the "N new ↓" marker); 0 when following.
        self.new_below = 0
        #: A live append followed and its scroll to the end waits for the next refresh: the
        #: view is at the end for the next append too (dropping the window's front moves the
        #: offset up until then, and at 20 messages/s the next append came first and stopped
        #: following).
        self._tail_pending = False
        #: (offset, transcript) where following last put the view: still there, the reader has
        #: not scrolled, so it still follows even if a message laid out taller since (a freshly
        #: mounted message grows once prepared, and that stopped `tail -f` every few seconds).
        self._tail_at: tuple[float, Any] | None = None
        #: Find: the bar is open, its query, the indexes of the matching items, the
        #: position of the shown match in them (-1: none), the shown match's item index.
        self.finding = False
        self.find_query = ""
        self.find_hits: list[int] = []
        self.find_pos = -1
        self._find_current: int | None = None
        self._find_origin = 0
        self._find_token = 0
        self._open_hits = False  # the target is a find match: its matching folds open
        self._saved_hit: tuple[int | None, tuple[str, ...]] = (None, ())  # the search hit, restored
        self._children_only = False  # a live append is mounting/dropping children (`refresh`)
        self._newest_row = 0  # `_counted`
        self._hidden_rows = 0
        self._bottom_row_only = False  # only the subtitle changes (`show_subtitle`)

    def refresh(
        self, *regions: Region, repaint: bool = True, layout: bool = False, recompose: bool = False
    ) -> Self:
        """While a live append mounts and drops children, Textual's layout request on their
        behalf also repaints this view's own paint (its background and border, behind them),
        which they do not change: ~3 ms of a ~20 ms append, 5 a second while following."""
        if self._children_only and layout and repaint and not regions:
            repaint = False
        elif self._bottom_row_only and repaint and not regions and not layout:
            offset = self.content_offset  # (regions are given relative to the content)
            width, height = self.outer_size
            regions = (Region(-offset.x, height - 1 - offset.y, width, 1),)
        return super().refresh(*regions, repaint=repaint, layout=layout, recompose=recompose)

    def _children_done(self) -> None:
        self._children_only = False

    def show_subtitle(self, subtitle: str) -> None:
        """Set the border's subtitle ("81 msgs", "3 new ↓ G"), repainting the bottom border row
        alone: Textual repaints the whole view for it (~3 ms), and while following the count in
        it changes with every append."""
        if self.border_subtitle == subtitle:
            return
        self._bottom_row_only = bool(self.styles.border_bottom[0]) and self.outer_size.height > 0
        try:
            self.border_subtitle = subtitle
        finally:
            self._bottom_row_only = False

    @property
    def folds_open(self) -> bool:
        """`x` opened every fold (a batch of tool calls revealed later opens too)."""
        return self._folds_open

    @property
    def message_count(self) -> int:
        """Messages in the loaded transcript (dividers excluded)."""
        return sum(1 for i in self.items if isinstance(i, MessageView))

    async def clear_transcript(self, note: str = "") -> None:
        """Empty the view, optionally leaving a one-line note."""
        self._end_find()
        self.anchor(False)  # a new transcript does not inherit `tail -f` mode
        self.data = None
        self.items = []
        self._counted()
        self.current_id = None
        self.start = self.end = 0
        await self.remove_children()
        if note:
            await self.mount(Static(Text(inert(note)), classes="transcript-note"))

    async def show(
        self, data: TranscriptData, target_id: int | None = None, terms: Sequence[str] = ()
    ) -> None:
        """Replace the content; mount a window around ``target_id`` and scroll to it."""
        self._end_find()
        self.anchor(False)  # a new transcript does not inherit `tail -f` mode
        self.data = data
        self.items = list(data.items)
        self._counted()
        self._set_new_below(0)
        found = item_index(self.items, target_id)
        if found is not None:  # a copy folded into one message: that message is the target
            target_id = self.items[found].id  # type: ignore[union-attr]
        self.target_id = target_id
        self.current_id = target_id
        self.terms = tuple(terms)
        self._folds_open = False  # a new transcript starts folded, so `x` opens its folds
        with self.app.batch_update():  # one paint for the swap, not an empty view in between
            await self.remove_children()
            if not self.items:
                await self.mount(Static(Text("This session has no messages."), classes="transcript-note"))
                return
            self.start, self.end = first_window(self.items, target_id)
            await self._mount_range(self.start, self.end)
        self.call_after_refresh(self._scroll_to_target)
        self._window_changed()

    def _counted(self, added: Sequence[Item] | None = None) -> None:
        """Keep the newest row id and the hidden rows' count up to date as items come (`added`)
        or are replaced (None): the live follower and the footer ask for them often, and a
        pass over 50,000 items each time showed."""
        if added is None:
            self._newest_row, self._hidden_rows = 0, 0
            added = self.items
        for item in added:
            if isinstance(item, MessageView):
                self._newest_row = max(self._newest_row, item.id, *item.members)
                self._hidden_rows += item.fold == FOLD_HIDDEN

    @property
    def last_message_id(self) -> int:
        """The newest row id the transcript holds (0 when none): live appends fetch what is
        after it. A message is one row, or several compaction copies (`MessageView.members`)."""
        return self._newest_row

    @property
    def hidden_rows(self) -> int:
        """How many of its messages Hermes never paints (folded behind `h`)."""
        return self._hidden_rows

    def update_activity(self, row: dict[str, Any]) -> None:
        """Follow the open session's activity (its list row, re-read by the live follower) in the
        head. A session whose head was not built (no prompt, no activity when it was opened)
        shows a new activity once it is opened again."""
        head = self.items[0] if self.items else None
        if not isinstance(head, SessionHead) or one_line(row.get("id")) != head.session_id:
            return
        activity = session_activity(row)
        if activity == head.activity:
            return
        head = replace(head, activity=activity)
        self.items[0] = head
        if self.data is not None and self.data.items is not self.items and self.data.items:
            self.data.items[0] = head
        for block in self.query(HeadBlock):
            block.head = head
            block.refresh(layout=True)

    @property
    def at_bottom(self) -> bool:
        """The reader sees the end: every item is mounted and the view is scrolled to the end.

        A view whose content fits shows its end whatever the offset: Textual's compositor puts an
        anchored view shorter than the screen at a negative offset (seen at -11 with max 0), which
        once made a live append stop following a new session's first messages."""
        if self.end < len(self.items):
            return False
        return self.max_scroll_y <= 0 or self.scroll_y >= self.max_scroll_y - 1

    def _set_new_below(self, count: int) -> None:
        if count != self.new_below:
            self.new_below = count
            self.post_message(self.NewBelow(count))

    def _window_changed(self) -> None:
        self.post_message(self.WindowChanged(self.start, self.end, len(self.items)))
        self.call_after_refresh(self.mark_current)  # new widgets: the cursor's may be among them

    async def append_items(self, items: Sequence[Item]) -> bool:
        """Messages committed since the transcript loaded (live follow), added at the end.

        At the bottom the view follows (like ``tail -f``), dropping widgets from the front to
        stay within `MAX_WINDOW`; scrolled up, it stays put, mounts only what fits in the window
        and `new_below` counts what arrived (the screen shows "N new ↓", `G`/`end` jumps there).
        Returns whether it followed."""
        if self.data is None:
            return False
        fresh = fresh_items(self.items, items)
        if not fresh:
            return False
        if not self.items:  # the "no messages" note goes; the window starts empty
            await self.remove_children()
            self.start = self.end = 0
        follow = self._tail_pending or self.at_bottom or self._still_tailing
        old_len = len(self.items)
        self.items.extend(fresh)
        self._counted(fresh)
        if self.data.items is not self.items:
            self.data.items.extend(fresh)
        if self.end >= old_len:  # the window reaches the end: mount what fits
            if follow and len(fresh) >= MAX_WINDOW:
                await self._rewindow(max(0, len(self.items) - JUMP_WINDOW), len(self.items))
            else:
                room = len(fresh) if follow else max(0, MAX_WINDOW - (self.end - self.start))
                with self.app.batch_update():
                    self._children_only = True
                    try:
                        await self._mount_items(self.end, self.end + min(room, len(fresh)))
                        excess = self.end - self.start - (FOLLOW_WINDOW if follow else MAX_WINDOW)
                        if excess >= (FOLLOW_DROP_STEP if follow else 1):
                            await self._drop_front(excess, keep_place=not follow)
                    finally:  # after Textual's own queued mount callback, which asks again
                        self.call_next(self._children_done)
        await self._set_button("after", len(self.items) - self.end)
        if follow:
            # Anchored (Textual's compositor keeps an anchored view at its end while it lays it
            # out), the frame that places the new message already shows it, not the one after
            # `_tail`; any scroll by the reader releases the anchor.
            self.anchor()
            self._tail_pending = True
            self.call_after_refresh(self._tail)
            self._set_new_below(0)
        else:
            self._set_new_below(self.new_below + sum(1 for i in fresh if isinstance(i, MessageView)))
        self._window_changed()
        return follow

    def _tail(self) -> None:
        self._tail_pending = False
        self.scroll_end(animate=False, immediate=True)
        self._tail_at = (self.scroll_y, self.data)

    @property
    def _still_tailing(self) -> bool:
        """The view is where following left it, on this transcript, with the window at the end."""
        at = self._tail_at
        return (
            at is not None and at[1] is self.data and at[0] == self.scroll_y and self.end >= len(self.items)
        )

    def index_of(self, message_id: int | None) -> int | None:
        """Position of a message id in the item list (or of the message it is a copy of)."""
        return item_index(self.items, message_id)

    def _parts(self, items: Sequence[Item]) -> list[Widget]:
        """The widgets of a run of items (1-3 per message, one per divider)."""
        widgets: list[Widget] = []
        for item in items:
            if isinstance(item, Divider):
                widgets.append(DividerBlock(item))
                continue
            if isinstance(item, SessionHead):
                head = HeadBlock(item)
                if self._folds_open:
                    head.set_reactive(Fold.collapsed, False)
                widgets.append(head)
                continue
            match = self.target_id is not None and item.id == self.target_id
            parts = message_parts(
                item, terms=self.terms if match else (), match=match, open_hits=match and self._open_hits
            )
            if self._folds_open:  # `x` opened every fold: a window grown later opens too
                for part in parts:
                    if isinstance(part, Fold):
                        part.set_reactive(Fold.collapsed, False)
            widgets.extend(parts)
        return widgets

    # ------------------------------------------------------------------ the window
    def _more_button(self, where: str, count: int) -> Button:
        return Button(
            Content(self._more_label(where, count)), id=f"more-{where}", classes="more", compact=True
        )

    @staticmethod
    def _more_label(where: str, count: int) -> str:
        return (
            f"▲ {plural(count, 'earlier message')}"
            if where == "before"
            else f"▼ {plural(count, 'more message')}"
        )

    def _button(self, where: str) -> Button | None:
        """The "earlier" (first child) or "more" (last child) button, when mounted."""
        children = self.children
        if not children:
            return None
        child = children[0] if where == "before" else children[-1]
        return child if isinstance(child, Button) and child.id == f"more-{where}" else None

    async def _set_button(self, where: str, count: int) -> None:
        """Show ``count`` on the button at one end, mounting or removing it as needed."""
        button = self._button(where)
        if count <= 0:
            if button is not None:
                await button.remove()
        elif button is not None:
            button.label = Content(self._more_label(where, count))
        elif where == "before" and self.children:
            await self.mount(self._more_button(where, count), before=self.children[0])
        else:
            await self.mount(self._more_button(where, count))

    def _item_runs(self) -> list[list[Widget]]:
        """The mounted widgets of each item of the window, in order (``items[start + k]`` is run
        k): a run starts at a MessageBlock or DividerBlock and takes the parts after it,
        including tool calls revealed since it was mounted."""
        runs: list[list[Widget]] = []
        for child in self.children:
            if isinstance(child, MessageBlock | DividerBlock | HeadBlock):
                runs.append([child])
            elif isinstance(child, MessagePart) and runs:
                runs[-1].append(child)
        return runs

    def _top_anchor(self, skip: Sequence[Widget] = ()) -> tuple[Widget, int] | None:
        """The first item widget shown at the top of the viewport (not in ``skip``) and its
        distance from the top: put back at that distance, the reader's text has not moved."""
        top = self.scroll_y
        skipped = set(skip)
        for child in self.children:
            if child in skipped or not isinstance(child, MessagePart | DividerBlock):
                continue
            region = child.virtual_region
            if region.height and region.bottom > top:
                return child, region.y - round(top)
        return None

    def _restore_anchor(self, anchor: Widget, offset: int) -> None:
        if anchor.parent is self and anchor.virtual_region.height:
            self.scroll_to(y=max(0, anchor.virtual_region.y - offset), animate=False, immediate=True)

    async def _mount_items(self, start: int, end: int) -> None:
        """Mount ``items[start:end]`` at the end of the window (before the "more" button)."""
        if end <= start:
            return
        blocks = self._parts(self.items[start:end])
        after = self._button("after")
        if after is not None:
            await self.mount_all(blocks, before=after)
        else:
            await self.mount_all(blocks)
        self.end = end

    async def _drop_front(self, count: int, keep_place: bool = True) -> None:
        """Unmount the first ``count`` items of the window, keeping the reader's line in place.

        The scroll offset moves up by the height dropped in the same update as the removal (no
        frame shows the text jump); once laid out, the anchor widget is put back exactly.
        Following the end (``keep_place=False``) the view stays at the end instead."""
        runs = self._item_runs()
        count = min(count, len(runs))
        if count <= 0:
            return
        dropped = [w for run in runs[:count] for w in run]
        kept = runs[count][0] if count < len(runs) else None
        anchor = self._top_anchor(skip=dropped)
        shift = 0
        shown = next((w for w in dropped if w.virtual_region.height), None)  # rewound ones are hidden
        if kept is not None and shown is not None and kept.virtual_region.height:
            shift = kept.virtual_region.y - shown.virtual_region.y
        had_button = self._button("before") is not None
        self.start += count
        await self.remove_children(dropped)
        await self._set_button("before", self.start)
        if not keep_place:
            return
        if not had_button and self._button("before") is not None:
            shift -= 2  # the new button: one line and its margin (`TranscriptView Button.more`)
        if shift > 0 and anchor is not None:
            self.scroll_to(y=max(0, self.scroll_y - shift), animate=False, immediate=True)
        if anchor is not None:
            self.call_after_refresh(self._restore_anchor, *anchor)

    async def _drop_back(self, count: int) -> None:
        """Unmount the last ``count`` items of the window (below the reader: nothing moves)."""
        runs = self._item_runs()
        count = min(count, len(runs))
        if count <= 0:
            return
        await self.remove_children([w for run in runs[len(runs) - count :] for w in run])
        self.end -= count
        await self._set_button("after", len(self.items) - self.end)

    async def _mount_range(self, start: int, end: int) -> None:
        widgets: list[Widget] = []
        if start > 0:
            widgets.append(self._more_button("before", start))
        widgets.extend(self._parts(self.items[start:end]))
        if end < len(self.items):
            widgets.append(self._more_button("after", len(self.items) - end))
        await self.mount_all(widgets)

    async def _rewindow(self, start: int, end: int) -> None:
        """Replace the window by ``items[start:end]`` (Home, End, a far find hit)."""
        with self.app.batch_update():
            await self.remove_children()
            self.start, self.end = start, end
            await self._mount_range(start, end)
        self._window_changed()

    def _scroll_to_target(self) -> None:
        if self.target_id is None:
            self.scroll_home(animate=False)
            return
        found = self.query(f"#msg-{self.target_id}")
        if found:
            self.scroll_to_widget(found.first(), animate=False, top=True)

    async def grow(self, where: str) -> None:
        """Mount the next chunk before or after the window, dropping as many at the other end
        once it holds `MAX_WINDOW` items."""
        if self._growing:
            return
        self._growing = True
        try:
            with self.app.batch_update():
                if where == "after" and self.end < len(self.items):
                    await self._mount_items(self.end, min(len(self.items), self.end + CHUNK))
                    await self._set_button("after", len(self.items) - self.end)
                    excess = self.end - self.start - MAX_WINDOW
                    if excess > 0:
                        await self._drop_front(excess)
                elif where == "before" and self.start > 0:
                    await self._grow_before()
            self._window_changed()
        finally:
            self._growing = False

    async def _grow_before(self) -> None:
        new_start = max(0, self.start - CHUNK)
        blocks = self._parts(self.items[new_start : self.start])
        runs = self._item_runs()
        anchor = self._top_anchor()
        first = runs[0][0] if runs else self._button("after")
        if first is not None:
            await self.mount_all(blocks, before=first)
        else:
            await self.mount_all(blocks)
        self.start = new_start
        await self._set_button("before", self.start)
        excess = self.end - self.start - MAX_WINDOW
        if excess > 0:
            await self._drop_back(excess)
        if anchor is not None:
            self.call_after_refresh(self._restore_anchor, *anchor)

    async def _edge_grow(self, where: str) -> None:
        """Grow toward an edge the reader scrolled to, if still there (scroll events queue up
        faster than chunks mount: each would otherwise grow one more chunk)."""
        if where == "after" and self.scroll_y >= self.max_scroll_y - 2:
            await self.grow("after")
        elif where == "before" and self.scroll_y <= 2:
            await self.grow("before")

    @on(Button.Pressed, ".more")
    async def _more_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        await self.grow("before" if event.button.id == "more-before" else "after")

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        if self.items:
            self.call_after_refresh(self.mark_current)  # the cursor leaves the screen: the top one
        if self.new_below and self.end >= len(self.items) and new_value >= self.max_scroll_y - 1:
            self._set_new_below(0)  # the reader reached the new messages
        if self.data is None or self._growing:
            return
        if new_value > old_value and new_value >= self.max_scroll_y - 2 and self.end < len(self.items):
            self.call_later(self._edge_grow, "after")
        elif new_value < old_value and new_value <= 2 and self.start > 0:
            self.call_later(self._edge_grow, "before")

    async def action_first(self) -> None:
        """Home: the first messages (a fresh window when the first one is not mounted)."""
        self.current_id = next((i.id for i in self.items if isinstance(i, MessageView)), None)
        if self.start > 0:
            await self._rewindow(0, min(len(self.items), JUMP_WINDOW))
            self.call_after_refresh(self.scroll_home, animate=False, immediate=True)
        else:
            self.scroll_home(animate=False)

    async def action_last(self) -> None:
        """End: the last messages (a fresh window of the tail when the last one is not mounted)."""
        self.current_id = next((i.id for i in reversed(self.items) if isinstance(i, MessageView)), None)
        if self.end < len(self.items):
            await self._rewindow(max(0, len(self.items) - JUMP_WINDOW), len(self.items))
        self.call_after_refresh(self.scroll_end, animate=False, immediate=True)

    def action_toggle_folds(self) -> None:
        """Expand or collapse every tool/reasoning block in the mounted window."""
        self._folds_open = not self._folds_open
        with self.app.batch_update():
            for fold in self.query(Fold):
                if not isinstance(fold, MoreCalls):
                    fold.collapsed = not self._folds_open

    # ------------------------------------------------------------------ the current message
    def message_of(self, widget: Widget) -> MessageView | None:
        """The message one of this view's mounted widgets belongs to (None for a divider or a
        button)."""
        for k, run in enumerate(self._item_runs()):
            if widget in run:
                item = self.items[self.start + k] if self.start + k < len(self.items) else None
                return item if isinstance(item, MessageView) else None
        return None

    def _on_screen(self) -> list[MessageView]:
        """The mounted messages with a part in the viewport, top first."""
        top = self.scroll_y
        bottom = top + self.scrollable_content_region.height
        shown: list[MessageView] = []
        for k, run in enumerate(self._item_runs()):
            item = self.items[self.start + k] if self.start + k < len(self.items) else None
            if not isinstance(item, MessageView):
                continue
            if any(
                w.virtual_region.height and w.virtual_region.bottom > top and w.virtual_region.y < bottom
                for w in run
            ):
                shown.append(item)
        return shown

    def current_message(self) -> MessageView | None:
        """The message the reader is on: `current_id` while any part of it is on screen, else
        the first message on screen (which becomes the current one). Before the window is laid
        out, `current_id`'s message, else the first one."""
        shown = self._on_screen()
        current = next((m for m in shown if m.id == self.current_id), None)
        if current is None and shown:
            current = shown[0]
            self.current_id = current.id
        if current is None:
            messages = [i for i in self.items if isinstance(i, MessageView)]
            current = next(
                (m for m in messages if m.id == self.current_id), messages[0] if messages else None
            )
        return current

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        """A focused fold (Tab, a click) makes its message the current one."""
        view = self.message_of(event.widget)
        if view is not None:
            self.current_id = view.id

    # ------------------------------------------------------------------ find
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """n / N / Esc belong to the find only while its bar is open (else the screen's); `h`
        only while the transcript has hidden rows."""
        if action in {"find_step", "close_find"}:
            return self.finding
        if action == "toggle_hidden_rows":
            return self.hidden_rows > 0
        return True

    @property
    def showing_hidden_rows(self) -> bool:
        return self.has_class("-show-hidden-rows")

    def action_toggle_hidden_rows(self) -> None:
        """Show or hide the rows Hermes never paints (`display_kind = 'hidden'`, model-only
        merges): model-facing scaffolding, dimmed when shown."""
        self.toggle_class("-show-hidden-rows")
        count = self.hidden_rows
        shown = self.showing_hidden_rows
        self.post_message(self.FoldsChanged())
        self.notify(
            f"{plural(count, 'hidden row')} {'shown' if shown else 'folded away'}"
            " (model-facing: Hermes never shows them)",
            timeout=2,
        )

    @property
    def find_bar(self) -> FindBar | None:
        """The find bar beside this view, once mounted."""
        parent = self.parent
        if parent is None:
            return None
        for child in parent.children:
            if isinstance(child, FindBar) and child.transcript is self:
                return child
        return None

    async def action_open_find(self) -> None:
        await self.open_find()

    async def open_find(self) -> None:
        """Show the find bar under the transcript (mounted on first use) with the caret in it."""
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
            anchor = self._top_anchor()
            runs = self._item_runs()
            top = next((k for k, run in enumerate(runs) if anchor and anchor[0] in run), 0)
            self._find_origin = self.start + top
        bar.display = True
        self.screen.set_focus(bar.input)

    def find(self, query: str) -> None:
        """Look for ``query`` (case-insensitive substring) in every message, off the loop; the
        first match at or after the one shown (or the reader's place) is shown."""
        if not self.finding:
            return
        self.find_query = query
        self._find_token += 1
        if not query:
            self.find_hits, self.find_pos = [], -1
            self._show_count("")
            self.call_later(self._unmark_find)
            return
        self._show_count("…")
        include_inactive = self.screen.has_class("-show-inactive")
        self.run_worker(
            self._scan(
                self._find_token, tuple(self.items), query.lower(), include_inactive, self.showing_hidden_rows
            ),
            exclusive=True,
            group="transcript-find",
            exit_on_error=False,
            description="find in the transcript",
        )

    async def _scan(
        self, token: int, items: Sequence[Item], needle: str, include_inactive: bool, include_hidden: bool
    ) -> None:
        hits = await asyncio.to_thread(find_hits, items, needle, include_inactive, include_hidden)
        if token != self._find_token or not self.finding:
            return  # a newer query (or Esc) came meanwhile
        self.find_hits = hits
        if not hits:
            self.find_pos = -1
            self._show_count("no match")
            await self._unmark_find()
            return
        origin = self._find_current if self._find_current is not None else self._find_origin
        self.find_pos = next((k for k, i in enumerate(hits) if i >= origin), 0)
        await self._show_find_hit()

    async def step_find(self, delta: int) -> None:
        """The next (+1) or previous (-1) match, wrapping around at either end."""
        if not self.finding or not self.find_hits:
            return
        self.find_pos = (self.find_pos + delta) % len(self.find_hits)
        await self._show_find_hit()

    async def action_find_step(self, delta: int) -> None:
        await self.step_find(delta)

    async def _show_find_hit(self) -> None:
        """Mark the current match's message (its matching folds open) and bring it on screen."""
        index = self.find_hits[self.find_pos]
        item = self.items[index]
        assert isinstance(item, MessageView)
        previous = self._marked_index()
        self.target_id, self.terms, self._open_hits = item.id, (self.find_query,), True
        self.current_id = item.id  # and stays so once the find is closed: it is still in view
        self._find_current = index
        self._show_count(f"{self.find_pos + 1}/{len(self.find_hits)}")
        if previous is not None and previous != index:
            await self._rerender(previous)
        if self.start <= index < self.end:
            await self._rerender(index)
        else:
            await self._window_around(index)
        self.call_after_refresh(self._scroll_to_hit, index)

    def _marked_index(self) -> int | None:
        """The item index of the message marked now (find match or search hit), if any."""
        if self._find_current is not None:
            return self._find_current
        return self.index_of(self.target_id) if self.target_id is not None else None

    async def _window_around(self, index: int) -> None:
        """Bring ``items[index]`` into the window: grow a chunk when it is that close to an
        edge (reading on stays continuous), else mount a fresh window around it."""
        if self.end <= index < self.end + CHUNK:
            await self.grow("after")
        elif self.start - CHUNK <= index < self.start:
            await self.grow("before")
        if not self.start <= index < self.end:
            start = max(0, min(index - JUMP_BEFORE, len(self.items) - JUMP_WINDOW))
            await self._rewindow(start, min(len(self.items), start + JUMP_WINDOW))

    def _mounted_run(self, index: int) -> list[Widget] | None:
        """The widgets of ``items[index]`` when it is in the mounted window, else None."""
        if not self.start <= index < self.end:
            return None
        runs = self._item_runs()
        if index - self.start >= len(runs):
            return None
        return runs[index - self.start]

    async def _rerender(self, index: int) -> None:
        """Rebuild the widgets of one mounted item (its marking changed)."""
        run = self._mounted_run(index)
        if run is None:
            return
        focused = self.screen.focused in run
        children = list(self.children)
        after = children.index(run[-1]) + 1
        following = children[after] if after < len(children) else None
        with self.app.batch_update():
            await self.remove_children(run)  # first: the new block has the same id
            if following is not None:
                await self.mount_all(self._parts([self.items[index]]), before=following)
            else:
                await self.mount_all(self._parts([self.items[index]]))
        if focused:
            self.focus()

    def _scroll_to_hit(self, index: int) -> None:
        """Scroll the match to the top: the open fold holding it, else the message's first line."""
        run = self._mounted_run(index)
        if run is None:
            return
        item = self.items[index]
        widget = run[0]
        if isinstance(item, MessageView) and self.find_query.lower() not in item.text.lower():
            widget = next((w for w in run if isinstance(w, Fold) and not w.collapsed), widget)
        self.scroll_to_widget(widget, animate=False, top=True)

    async def _unmark_find(self) -> None:
        """Put back the marking from before the find (the search hit, or none)."""
        current = self._find_current
        self._find_current = None
        if current is None:
            return
        self.target_id, self.terms = self._saved_hit
        self._open_hits = False
        await self._rerender(current)
        saved = self.index_of(self.target_id) if self.target_id is not None else None
        if saved is not None and saved != current:
            await self._rerender(saved)

    async def clear_hit(self) -> None:
        """Forget the search hit: its message is drawn plain again in place, so the reader's
        place, the window and the current message stay (the search pane closed)."""
        self._saved_hit = (None, ())
        if self._find_current is not None:
            return  # the find's match is marked now; closing the find restores no hit
        index = self._marked_index()
        self.target_id, self.terms = None, ()
        if index is not None:
            await self._rerender(index)

    def _show_count(self, text: str) -> None:
        bar = self.find_bar
        if bar is not None:
            bar.show_count(text)

    def _end_find(self) -> None:
        """Forget the find (new content replaces the window) and hide its bar."""
        if not self.finding:
            return
        self.finding = False
        self._find_token += 1
        self.find_query, self.find_hits, self.find_pos = "", [], -1
        self._find_current = None
        self._open_hits = False
        bar = self.find_bar
        if bar is not None:
            bar.input.value = ""
            bar.show_count("")
            bar.display = False

    async def close_find(self) -> None:
        """Esc: hide the bar, clear the match's marking, focus the transcript."""
        if not self.finding:
            return
        bar = self.find_bar
        had_focus = bar is not None and self.screen.focused in bar.walk_children()
        await self._unmark_find()
        self._end_find()
        if had_focus or self.screen.focused is None:
            self.focus()

    async def action_close_find(self) -> None:
        await self.close_find()
