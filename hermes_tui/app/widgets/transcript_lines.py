"""LinesTranscript: the transcript on Textual's Line API (issue 36, item 4), a work in progress.

Today's `TranscriptView` mounts 1-3 widgets per message; each live append mounts, styles and
lays the whole screen out again (~25 ms of CPU an append, `bench/transcript_append_bench.py`).
Here the transcript is one `ScrollView`: every item (`transcript_items`: the same records and
the same Rich renderables) is rendered once per width to a list of `Strip`s, and `render_line`
returns the cached strip of the line asked for. A live append renders only the new messages,
extends the lines and the virtual height, and scrolls: no mount, no style pass per message.

Not wired into the app yet (see the branch's report): it covers messages (header, body, folds
shown as their title line, opened by `toggle_fold`), dividers, the session head, the message
cursor (`-current` background), folded-away rows and live appends with "N new below".
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Hashable, Sequence
from typing import Any, ClassVar

from rich.console import Group, RenderableType
from rich.padding import Padding
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from hermes_tui.app.render import plain_count
from hermes_tui.app.widgets.transcript import FOLLOW_DROP_STEP, FOLLOW_WINDOW, JUMP_WINDOW
from hermes_tui.app.widgets.transcript_items import (
    ROLES,
    Divider,
    Item,
    MessageView,
    SessionHead,
    TranscriptData,
    first_window,
    prepare,
)
from hermes_tui.formatting import plural
from hermes_tui.safe_text import one_line
from hermes_tui.state import FOLD_HIDDEN, FOLD_INACTIVE

#: The left border of a message (Textual's `wide` border's left edge).
BORDER = "▎"


def _role(view: MessageView) -> str:
    return view.role if view.role in ROLES else "other"


class LinesTranscript(ScrollView, can_focus=True):
    """A transcript drawn line by line from strips cached per item and width."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "lines--border-user",
        "lines--border-assistant",
        "lines--border-tool",
        "lines--border-system",
        "lines--border-other",
        "lines--border-head",
        "lines--header-user",
        "lines--header-assistant",
        "lines--header-tool",
        "lines--header-system",
        "lines--header-other",
        "lines--fold-title",
        "lines--fold-body",
        "lines--divider",
        "lines--current",
        "lines--current-focus",
        "lines--folded-away",
    }

    #: Its size comes from the pane; the lines it holds change the scroll range alone. Textual's
    #: default (a change lays the whole screen out) is what the Line API is here to avoid: an
    #: append updates the scrollbar itself (`_set_height`), and asks for a layout only when the
    #: scrollbar appears or goes.
    virtual_size: reactive[Size] = reactive(Size(0, 0), layout=False, repaint=False)

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("home", "first", "Top", show=False),
        Binding("end,G", "last", "Bottom", show=False),
    ]

    class NewBelow(Message):
        """Messages arrived below while the reader was scrolled up (0: caught up)."""

        def __init__(self, count: int) -> None:
            super().__init__()
            self.count = count

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:  # noqa: A002
        super().__init__(id=id, classes=classes)
        self.data: TranscriptData | None = None
        self.items: list[Item] = []
        #: Rendered strips per item (its key), then per width and fold state.
        self._cache: dict[Hashable, dict[Hashable, list[Strip]]] = {}
        #: The lines at `_width`: every shown item's strips, flat, and where each item starts.
        self._width = 0
        self._lines: list[Strip] = []
        self._starts: list[int] = []  # line where items[start + k] starts (one past the end too)
        #: The window of items with lines (as `TranscriptView`'s mounted window): a 50,000-message
        #: session renders what is read, not all of it.
        self.start = 0
        self.end = 0
        self.open_folds: set[tuple[Hashable, int]] = set()
        self.show_inactive = False
        self.show_hidden = False
        self.current_id: int | None = None
        self.new_below = 0
        self._newest_row = 0
        self._tail_pending = False  # a follow's scroll to the end waits for the scrollbar

    # ------------------------------------------------------------------ content
    @property
    def last_message_id(self) -> int:
        return self._newest_row

    @property
    def message_count(self) -> int:
        return sum(1 for i in self.items if isinstance(i, MessageView))

    def show(self, data: TranscriptData, target_id: int | None = None) -> None:
        """Replace the content (every item; strips are rendered as lines are asked for)."""
        self.data = data
        self.items = list(data.items)
        self._newest_row = 0
        self._count(self.items)
        self.current_id = target_id
        self._set_new_below(0)
        self.start, self.end = first_window(self.items, target_id)
        self._relayout()
        self.scroll_home(animate=False, immediate=True)

    def _count(self, items: Sequence[Item]) -> None:
        for item in items:
            if isinstance(item, MessageView):
                self._newest_row = max(self._newest_row, item.id, *item.members)

    def update_activity(self, row: dict[str, Any]) -> None:
        """(The head's activity line; not drawn by this work in progress.)"""

    @property
    def showing_hidden_rows(self) -> bool:
        return self.show_hidden

    def show_subtitle(self, subtitle: str) -> None:
        if self.border_subtitle != subtitle:
            self.border_subtitle = subtitle

    @property
    def at_bottom(self) -> bool:
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
        known = {m for i in self.items if isinstance(i, MessageView) for m in (i.id, *i.members)}
        fresh = [i for i in items if not (isinstance(i, MessageView) and i.id in known)]
        if not fresh:
            return False
        follow = self._tail_pending or self.at_bottom
        first = len(self.items)
        self.items.extend(fresh)
        self._count(fresh)
        if self.data.items is not self.items:
            self.data.items.extend(fresh)
        if self.end >= first:  # the window reaches the end: it takes the new items
            self.end = len(self.items)
            if self._width:
                top = len(self._lines)
                for k in range(first, self.end):
                    self._lines.extend(self._strips(self.items[k], self._width))
                    self._starts.append(len(self._lines))
                if follow and self.end - self.start > FOLLOW_WINDOW + FOLLOW_DROP_STEP:
                    self._drop_front(self.end - self.start - FOLLOW_WINDOW)
                    top = 0
                self._set_height(len(self._lines))
                if follow:
                    self._tail()
                    self.refresh()
                else:
                    self.refresh_lines(top, len(self._lines) - top)
        if follow:
            self._set_new_below(0)
        else:
            self._set_new_below(self.new_below + sum(1 for i in fresh if isinstance(i, MessageView)))
        return follow

    def action_first(self) -> None:
        """Home: the first items (the window moves there)."""
        if self.start > 0:
            self.start, self.end = 0, min(len(self.items), JUMP_WINDOW)
            self._relayout()
        self.scroll_home(animate=False, immediate=True)

    def action_last(self) -> None:
        """End: the last items (the window moves there), the view at the end."""
        if self.end < len(self.items):
            self.start, self.end = max(0, len(self.items) - JUMP_WINDOW), len(self.items)
            self._relayout()
        self.scroll_to(y=self.max_scroll_y, animate=False, immediate=True)
        self._set_new_below(0)

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
        self._tail_pending = False
        self.scroll_to(y=self.max_scroll_y, animate=False, immediate=True)

    # ------------------------------------------------------------------ lines
    def _set_height(self, height: int) -> None:
        """The scroll range follows the lines: a layout only when the scrollbar comes or goes."""
        old = self.virtual_size
        self.virtual_size = Size(0, height)  # lines are cut to the width: never a horizontal bar
        view = self.scrollable_content_region.height
        if (old.height > view) != (height > view):
            self.refresh(layout=True)
            return
        if self.show_vertical_scrollbar:
            bar = self.vertical_scrollbar
            bar.window_virtual_size = height
            bar.window_size = self.container_size.height - self.scrollbar_size_horizontal

    def _drop_front(self, count: int) -> None:
        """Forget the lines of the window's first ``count`` items (following the end)."""
        cut = self._starts[count]
        del self._lines[:cut]
        self._starts = [s - cut for s in self._starts[count:]]
        for k in range(self.start, self.start + count):
            self._forget(self.items[k])
        self.start += count

    def _forget(self, item: Item) -> None:
        self._cache.pop(self._item_key(item), None)

    def _relayout(self) -> None:
        """The window's lines at the current width (strips come from the cache)."""
        width = self.scrollable_content_region.width
        self._width = width
        self._lines = []
        self._starts = [0]
        if width > 0:
            for item in self.items[self.start : self.end]:
                self._lines.extend(self._strips(item, width))
                self._starts.append(len(self._lines))
        self._set_height(len(self._lines))
        self.refresh()

    def on_resize(self) -> None:
        if self.scrollable_content_region.width != self._width:
            self._relayout()

    def item_at(self, line: int) -> int | None:
        """The index (in `items`) of the item drawn at virtual line ``line``."""
        if not 0 <= line < len(self._lines):
            return None
        return self.start + bisect_right(self._starts, line) - 1

    def render_line(self, y: int) -> Strip:
        if self.scrollable_content_region.width != self._width:
            self._relayout()  # the vertical scrollbar came or went: no resize event says so
        line = round(self.scroll_y) + y
        if line >= len(self._lines):
            return Strip.blank(self.scrollable_content_region.width, self.rich_style)
        strip = self._lines[line]
        index = self.item_at(line)
        item = self.items[index] if index is not None else None
        if (
            isinstance(item, MessageView)
            and index is not None
            and item.id == self.current_id
            and line < self._starts[index - self.start + 1] - 1  # (not the margin line after it)
        ):
            name = "lines--current-focus" if self.has_focus else "lines--current"
            strip = strip.apply_style(Style(bgcolor=self.get_component_rich_style(name).bgcolor))
        return strip

    # ------------------------------------------------------------------ rendering one item
    def _item_key(self, item: Item) -> Hashable:
        if isinstance(item, MessageView):
            return ("m", item.id)
        if isinstance(item, Divider):
            return ("d", item.session_id, item.index)
        return ("h", item.session_id)

    def _shown(self, view: MessageView) -> bool:
        if view.fold == FOLD_INACTIVE:
            return self.show_inactive
        if view.fold == FOLD_HIDDEN:
            return self.show_hidden
        return True

    def _strips(self, item: Item, width: int) -> list[Strip]:
        key = self._item_key(item)
        state = (
            width,
            frozenset(f for f in self.open_folds if f[0] == key),
            isinstance(item, MessageView) and self._shown(item),
        )
        cached = self._cache.setdefault(key, {})
        strips = cached.get(state)
        if strips is None:
            strips = cached[state] = self._render_item(item, width)
        return strips

    def _rich_strips(self, renderable: RenderableType, width: int, style: Style | None = None) -> list[Strip]:
        console = self.app.console
        options = console.options.update(width=width, max_width=width, height=None, highlight=False)
        lines = console.render_lines(renderable, options, style=style, pad=True)
        return [Strip(line, width) for line in lines]

    def _fold_title(self, mark: str, title: str) -> Text:
        return Text(f" {mark} {title} ", style=self.get_component_rich_style("lines--fold-title"))

    def _render_item(self, item: Item, width: int) -> list[Strip]:
        if isinstance(item, Divider):
            return self._render_divider(item, width)
        if isinstance(item, SessionHead):
            return self._render_head(item, width)
        if not self._shown(item):
            return []
        return self._render_message(item, width)

    def _bordered(self, strips: list[Strip], border: Style) -> list[Strip]:
        """Each line behind the message's left border and its one-cell padding."""
        edge = Segment(BORDER + " ", border)
        return [Strip([edge, *strip], strip.cell_length + 2) for strip in strips]

    def _render_message(self, view: MessageView, width: int) -> list[Strip]:
        role = _role(view)
        prepared = view.prepared or prepare(view)
        inner = max(1, width - 2)
        key = self._item_key(view)
        header = prepared.header.copy()
        header.stylize_before(Style(color=self.get_component_rich_style(f"lines--header-{role}").color))
        parts: list[RenderableType] = [header]
        folds: list[tuple[str, Text | None]] = []
        if prepared.reasoning is not None:
            folds.append(("reasoning", prepared.reasoning))
        body_first = prepared.reasoning is None
        if prepared.output is not None:
            lines = view.text.count("\n") + 1
            folds.append((f"result ({lines} lines)", prepared.output))
        for name, args in prepared.calls:
            folds.append((f"→ {name}", args))
        if body_first and prepared.body is not None:
            parts.append(prepared.body)
        muted = self.get_component_rich_style("lines--fold-body")
        for n, (title, body) in enumerate(folds):
            is_open = (key, n) in self.open_folds
            parts.append(self._fold_title("▼" if is_open else "▶", title))
            if is_open and body is not None:
                parts.append(Padding(body, (0, 0, 0, 2), style=muted))
            if n == 0 and not body_first and prepared.body is not None:
                parts.append(prepared.body)
        if view.more_calls:
            noun = "tool call" if len(view.more_calls) == 1 else "tool calls"
            parts.append(self._fold_title("…", f"and {len(view.more_calls):,} more {noun}"))
        border = self.get_component_rich_style(f"lines--border-{role}")
        strips = self._bordered(self._rich_strips(Group(*parts), inner), Style(color=border.color))
        strips.append(Strip.blank(width))  # the margin under a message
        return strips

    def _render_divider(self, divider: Divider, width: int) -> list[Strip]:
        kind = one_line(divider.edge_kind, 20) or "root"
        label = one_line(divider.title) or one_line(divider.session_id)
        text = Text(
            f"── segment {divider.index}/{divider.count} · {label} · {kind} · "
            f"{plain_count(divider.message_count)} msgs ──",
            no_wrap=True,
            overflow="ellipsis",
            style=self.get_component_rich_style("lines--divider"),
        )
        return [Strip.blank(width), *self._rich_strips(text, width), Strip.blank(width)]

    def _render_head(self, head: SessionHead, width: int) -> list[Strip]:
        parts: list[RenderableType] = []
        if head.activity:
            parts.append(Text(f"● working: {head.activity}", style="bold", no_wrap=True, overflow="ellipsis"))
        if head.prompt:
            noun = plural(head.prompt_lines, "line")
            title = f"system prompt ({noun}, {plural(head.prompt_chars, 'character')})"
            is_open = (self._item_key(head), 0) in self.open_folds
            parts.append(self._fold_title("▼" if is_open else "▶", title))
            if is_open:
                parts.append(Padding(Text(head.prompt), (0, 0, 0, 2)))
        border = self.get_component_rich_style("lines--border-head")
        strips = self._bordered(
            self._rich_strips(Group(*parts), max(1, width - 2)), Style(color=border.color)
        )
        strips.append(Strip.blank(width))
        return strips

    # ------------------------------------------------------------------ folds
    def toggle_fold(self, index: int, fold: int) -> None:
        """Open or close fold ``fold`` of ``items[index]`` (its lines are rendered again)."""
        key = (self._item_key(self.items[index]), fold)
        if key in self.open_folds:
            self.open_folds.discard(key)
        else:
            self.open_folds.add(key)
        self._relayout()
