"""The widgets a transcript item becomes: a `MessageBlock` (header and body), `Fold`s for
reasoning and tool calls (a `MoreCalls` row reveals the next `CALLS_SHOWN`), a chain's
`DividerBlock` and the session's `HeadBlock`. Each caches its rendered lines by width, so a
layout that does not change a part's width does not render it again.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.measure import Measurement
from rich.padding import Padding
from rich.segment import Segment
from rich.style import Style as RichStyle
from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.css.styles import RulesMap
from textual.geometry import Region, Size
from textual.reactive import reactive
from textual.strip import Strip
from textual.style import Style as VisualStyle
from textual.visual import RenderOptions, RichVisual, Visual
from textual.widget import Widget
from textual.widgets import Static

from hermes_tui.app import textual_private
from hermes_tui.app.render import (
    highlight_terms,
    plain_count,
)
from hermes_tui.app.widgets.transcript_items import (
    CALLS_SHOWN,
    ROLES,
    Divider,
    MessageView,
    SessionHead,
    call_view,
    message_header,
    prepare,
    prepare_calls,
)
from hermes_tui.formatting import plural
from hermes_tui.safe_text import one_line
from hermes_tui.state import FOLD_HIDDEN, FOLD_INACTIVE

if TYPE_CHECKING:
    from typing import Self


def _highlighted(text: Text, terms: Sequence[str]) -> Text:
    """A copy of ``text`` with the search terms highlighted (the shared original is untouched)."""
    if not terms:
        return text
    copy = text.copy()
    highlight_terms(copy, terms)
    return copy


class MarkedRender:
    """A renderable (a message's Markdown body) with the search terms marked in the lines it
    renders to, so the hit keeps its Markdown: it used to be shown as its literal source, the
    one way terms could be marked in a `Text`. A term cut by a line wrap is not marked."""

    def __init__(self, renderable: RenderableType, terms: Sequence[str]) -> None:
        self.renderable = renderable
        self.terms = tuple(terms)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        natural = options.update(height=None)
        for line in console.render_lines(self.renderable, natural, pad=False):
            text = Text(end="")
            for segment in line:
                if not segment.control:
                    text.append(segment.text, segment.style)
            highlight_terms(text, self.terms)
            yield from text.render(console)
            yield Segment.line()

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement.get(console, options, self.renderable)


def part_classes(view: MessageView, match: bool) -> str:
    """CSS classes every widget of one message carries (role colour, folded away, hit)."""
    classes = ["msg", f"-role-{view.role if view.role in ROLES else 'other'}"]
    if view.fold == FOLD_INACTIVE:
        classes.append("-inactive")
    elif view.fold == FOLD_HIDDEN:
        classes.append("-hidden-row")
    if view.compacted:
        classes.append("-compacted")
    if match:
        classes.append("-match")
    return " ".join(classes)


class _Memo:
    """A renderable that renders its inner renderable once per width and replays the segments.

    Textual measures a widget's height by rendering it and renders it again to paint, and drops
    both on every refresh (a window is laid out three or four times while it mounts: the
    scrollbar appearing changes the width, sizes settle). Rendering a Markdown body was the
    largest single cost of a window; the segments only depend on the width.
    """

    def __init__(self, renderable: RenderableType) -> None:
        self.renderable = renderable
        self._segments: dict[int, list[Segment]] = {}

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        segments = self._segments.get(options.max_width)
        if segments is None:
            # Rendered at its natural height: Padding pads to ``options.height`` when one is set,
            # and the replay must not depend on which caller (measure or paint) came first.
            natural = options.update(height=None)
            segments = self._segments[options.max_width] = list(console.render(self.renderable, natural))
        yield from segments

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement.get(console, options, self.renderable)


class _CachedVisual(RichVisual):
    """A RichVisual whose strips are kept in a cache owned by the widget.

    Textual renders a widget again after every refresh, and a window is refreshed several times
    while it mounts; re-cropping a long body into strips cost as much as rendering it (cell
    widths of CJK text). The cache key is what the strips depend on: the widget's content
    state, the width and height, and the base style.
    """

    def __init__(
        self, widget: Widget, renderable: RenderableType, cache: dict[Hashable, Any], key: Hashable
    ) -> None:
        super().__init__(widget, renderable)
        self._cache = cache
        self._key = key

    def get_height(self, rules: RulesMap, width: int) -> int:
        key = (self._key, "height", width)
        height = self._cache.get(key)
        if height is None:
            height = self._cache[key] = super().get_height(rules, width)
        return int(height)

    def render_strips(
        self, width: int, height: int | None, style: VisualStyle, options: RenderOptions
    ) -> list[Strip]:
        if options.selection is not None:
            return super().render_strips(width, height, style, options)
        key = (self._key, width, height, style)
        strips = self._cache.get(key)
        if strips is None:
            if len(self._cache) > 32:
                self._cache.clear()
            strips = self._cache[key] = super().render_strips(width, height, style, options)
        return list(strips)


class MessagePart(Static):
    """One widget of a message; a message is a run of adjacent parts sharing its CSS classes.

    Parts are siblings in the transcript rather than children of a per-message container:
    a container with ``height: auto`` makes Textual arrange its children once to size it and
    again to place them, and that nesting was most of the layout cost of a window.
    """

    #: A part scrolls nothing, and the layout that sizes it is the one that sets this: Textual's
    #: default (a change asks for a layout) laid the whole screen out a second time after each
    #: live append, for the parts it had just placed.
    virtual_size: reactive[Size] = reactive(Size(0, 0), layout=False, repaint=False)

    def __init__(
        self,
        renderable: RenderableType | None,
        *,
        classes: str,
        id: str | None = None,  # noqa: A002
    ) -> None:
        super().__init__(classes=classes, id=id)
        self._memo = _Memo(renderable) if renderable is not None else None
        self._visual_cache: dict[Hashable, Any] = {}

    def refresh(
        self, *regions: Region, repaint: bool = True, layout: bool = False, recompose: bool = False
    ) -> Self:
        """A part being mounted needs no repaint of its own: the layout that places it paints it.

        Textual's styling at mount asks for one anyway, which it posts once the part is mounted,
        usually after that layout: each live append painted its new parts a second time in the
        next frame (with the scrollbars, ~1 of ~2.6 frames an append)."""
        if not self.is_mounted and not layout and not recompose:
            return self
        return super().refresh(*regions, repaint=repaint, layout=layout, recompose=recompose)

    def _renderable(self) -> RenderableType:
        """What this part shows now (subclasses add a header or a fold title)."""
        return self._memo if self._memo is not None else Text()

    def _visual_key(self) -> Hashable:
        """What `_renderable` depends on besides width and base style."""
        return None

    def render(self) -> Visual:
        return _CachedVisual(self, self._renderable(), self._visual_cache, self._visual_key())

    def _height_key(self) -> Hashable:
        """What the height depends on besides the width (colours never change it)."""
        return None

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        """Cached per width: Textual's own cache is dropped on every refresh of the widget, and
        re-measuring builds the renderable again (a component-style lookup per part)."""
        key = (self._height_key(), width)
        height = self._visual_cache.get(key)
        if height is None:
            height = self._visual_cache[key] = super().get_content_height(container, viewport, width)
        return int(height)

    def on_unmount(self) -> None:
        """Let go of the rendered lines as the part leaves the window.

        A widget is a reference cycle (its styles point back at it), so once unmounted it waits
        for a full collection, and so did every line it cached. While following a writer the
        window drops a message for each one appended, and the full collections that freed them
        paused the screen for 0.4-1.2 s. Cleared here, the lines are freed at once by reference
        counting and the cycle left is smaller."""
        self._visual_cache.clear()
        if self._memo is not None:
            self._memo._segments.clear()
        textual_private.forget_lines(self)  # (with the tuning installed: Textual's own cache)


class MessageBlock(MessagePart):
    """The first part of a message: its header and, when no fold comes between, its body.

    A plain user or assistant message is this one widget (a header line and a Markdown body
    rendered as one rich `Group`).
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = {"message--header"}

    def __init__(
        self,
        view: MessageView,
        header: Text,
        body: RenderableType | None,
        *,
        terms: Sequence[str] = (),
        match: bool = False,
        classes: str,
    ) -> None:
        super().__init__(body, classes=classes, id=f"msg-{view.id}")
        self.view = view
        self.terms = tuple(terms)
        self.match = match
        self._header = header

    def _header_style(self) -> RichStyle:
        # The full style, not the partial one: $text-muted has alpha, which only the full style
        # blends against the background. Its colour alone, so the widget's background shows.
        return RichStyle(color=self.get_component_rich_style("message--header").color)

    def _visual_key(self) -> Hashable:
        return self._header_style()

    def _renderable(self) -> RenderableType:
        """Header in the role's colour (a component style, so themes apply), then the body."""
        header = self._header.copy()
        header.stylize_before(self._header_style())
        return header if self._memo is None else Group(header, self._memo)


class Fold(MessagePart, can_focus=True):
    """A tool output, tool call or reasoning block: one line when collapsed, title + body open.

    One focusable widget instead of Textual's `Collapsible` (four widgets, and a class toggle
    that restyles its subtree). Click the title, or press Enter or space on it, to toggle.
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = {"fold--title"}
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter,space", "toggle_fold", "Toggle", show=False),
    ]

    collapsed: reactive[bool] = reactive(True, layout=True)

    def __init__(self, title: str, body: Text, *, collapsed: bool = True, classes: str) -> None:
        super().__init__(Padding(body, (0, 0, 0, 2)), classes=f"{classes} fold")
        self.fold_title = title
        self.body = body
        self.set_reactive(Fold.collapsed, collapsed)

    def _title_text(self) -> Text:
        mark = "▶" if self.collapsed else "▼"
        return Text(f" {mark} {self.fold_title} ", style=self.get_component_rich_style("fold--title"))

    def _visual_key(self) -> Hashable:
        return (self.collapsed, self.get_component_rich_style("fold--title"))

    def _height_key(self) -> Hashable:
        return self.collapsed

    def _renderable(self) -> RenderableType:
        """The title line, and when open the body indented under it (agent text as data)."""
        title = self._title_text()
        if self.collapsed or self._memo is None:
            return title
        return Group(title, self._memo)

    def toggle(self) -> None:
        """Flip the fold and keep it on screen (what `Collapsible` did)."""
        self.collapsed = not self.collapsed
        self.call_after_refresh(self.scroll_visible, animate=False)

    def action_toggle_fold(self) -> None:
        """Enter/space (named apart from `DOMNode.action_toggle`, which flips an attribute)."""
        self.toggle()

    def on_click(self, event: events.Click) -> None:
        """A click on the title toggles; a click in an open body does not (text selection)."""
        width = max(1, self.content_region.width)
        title_rows = -(-self._title_text().cell_len // width)
        if self.collapsed or event.y < title_rows:
            event.stop()
            self.toggle()


def more_calls_label(remaining: int) -> str:
    """The title of the row standing for a message's not-yet-shown tool calls."""
    noun = "tool call" if remaining == 1 else "tool calls"
    return f"… and {remaining:,} more {noun} (press x / Enter to show more)"


class MoreCalls(Fold):
    """The tool calls of a message past the ones shown: one line, revealed `CALLS_SHOWN` at a
    time (Enter, space, x or a click), each batch prepared only when asked for."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter,space,x", "toggle_fold", "Show more tool calls", show=False),
    ]

    def __init__(self, calls: Sequence[Any], *, classes: str, call_classes: str) -> None:
        super().__init__(more_calls_label(len(calls)), Text(), classes=classes)
        self.calls = tuple(calls)
        self.call_classes = call_classes
        self._revealing = False
        self.add_class("more-calls", update=False)  # not mounted yet: no style pass

    def _visual_key(self) -> Hashable:
        return (len(self.calls), self.get_component_rich_style("fold--title"))

    def _height_key(self) -> Hashable:
        return len(self.calls)

    def _title_text(self) -> Text:
        return Text(f" {self.fold_title} ", style=self.get_component_rich_style("fold--title"))

    def _renderable(self) -> RenderableType:
        return self._title_text()  # never a body, even when `x` marked every fold open

    def next_folds(self, open_folds: bool = False) -> list[Fold]:
        """Fold widgets for the next batch (prepared now: at most `CALLS_SHOWN` calls)."""
        batch = prepare_calls([call_view(call) for call in self.calls[:CALLS_SHOWN]])
        self.calls = self.calls[CALLS_SHOWN:]
        self.fold_title = more_calls_label(len(self.calls))
        return [
            Fold(f"→ {name}", args, collapsed=not open_folds, classes=self.call_classes)
            for name, args in batch
        ]

    def toggle(self) -> None:
        """Reveal the next batch before this row (or in its place when it is the last)."""
        self.call_later(self.reveal)

    async def reveal(self) -> list[Fold]:
        """Mount the next batch of tool calls before this row; drop the row when none remain."""
        parent = self.parent
        if self._revealing or not isinstance(parent, Widget) or not self.calls:
            return []
        self._revealing = True
        try:
            # (the transcript's `x` opened every fold: a batch revealed then opens too)
            folds = self.next_folds(open_folds=bool(getattr(parent, "folds_open", False)))
            await parent.mount_all(folds, before=self)
            if self.calls:
                self.refresh(layout=True)
                self.call_after_refresh(self.scroll_visible, animate=False)
            else:
                if self.has_class("-end"):
                    folds[-1].add_class("-end")
                if self.has_focus:
                    folds[0].focus()
                await self.remove()
            return folds
        finally:
            self._revealing = False


def _contains(text: Text, terms: Sequence[str]) -> bool:
    plain = text.plain.lower()
    return any(term and term.lower() in plain for term in terms)


def message_parts(
    view: MessageView, terms: Sequence[str] = (), match: bool = False, open_hits: bool = False
) -> list[MessagePart]:
    """The widgets of one message, in order: header (+ body), reasoning, output, tool calls.

    Header and body share one widget unless a reasoning fold sits between them. With
    ``open_hits`` (the transcript's find) the terms are marked in the reasoning and tool-call
    folds too, and a fold that contains one is open.
    """
    prepared = view.prepared or prepare(view)
    classes = part_classes(view, match)
    header = message_header(view, match=True) if match else prepared.header
    body = prepared.body
    output = prepared.output
    if match and terms and isinstance(body, Text):
        body = _highlighted(body, terms)
    elif match and terms and body is not None:
        body = MarkedRender(body, terms)  # the hit keeps its Markdown, terms marked
    if match and output is not None:
        output = _highlighted(output, terms)
    reasoning = prepared.reasoning
    calls: list[tuple[str, Text, bool]] = [(name, args, False) for name, args in prepared.calls]
    if match and open_hits and terms:
        if reasoning is not None and _contains(reasoning, terms):
            reasoning = _highlighted(reasoning, terms)
        calls = [
            (name, _highlighted(args, terms), True) if _contains(Text(name + "\n") + args, terms) else call
            for call in calls
            for name, args, _ in (call,)
        ]
    parts: list[MessagePart] = []
    if reasoning is not None:
        parts.append(MessageBlock(view, header, None, terms=terms, match=match, classes=classes))
        parts.append(Fold("reasoning", reasoning, collapsed=reasoning is prepared.reasoning, classes=classes))
        if body is not None:
            parts.append(MessagePart(body, classes=classes))
    else:
        parts.append(MessageBlock(view, header, body, terms=terms, match=match, classes=classes))
    if output is not None:
        lines = view.text.count("\n") + 1
        parts.append(Fold(f"result ({lines} lines)", output, collapsed=not match, classes=classes))
    for name, args, hit in calls:
        parts.append(Fold(f"→ {name}", args, collapsed=not hit, classes=f"{classes} -call"))
    if view.more_calls:
        parts.append(MoreCalls(view.more_calls, classes=f"{classes} -call", call_classes=f"{classes} -call"))
    parts[-1].add_class("-end", update=False)  # not mounted yet: no style pass (~1.5 ms each)
    return parts


def divider_text(divider: Divider) -> Text:
    """The one line between two segments of a compression chain (inert: store text)."""
    kind = one_line(divider.edge_kind, 20) or "root"
    label = one_line(divider.title) or one_line(divider.session_id)
    return Text(
        f"── segment {divider.index}/{divider.count} · {label} · {kind} · "
        f"{plain_count(divider.message_count)} msgs ──",
        no_wrap=True,
        overflow="ellipsis",
    )


class DividerBlock(Static):
    """The line between two segments of a compression chain."""

    virtual_size: reactive[Size] = reactive(Size(0, 0), layout=False, repaint=False)  # as `MessagePart`'s

    def __init__(self, divider: Divider) -> None:
        super().__init__(divider_text(divider), classes="segment-divider")
        self.divider = divider


class HeadBlock(Fold):
    """The session's head: a working session's activity, then its system prompt as a fold
    (closed at first, like reasoning; Enter, space, a click or `x` open it)."""

    def __init__(self, head: SessionHead) -> None:
        noun = plural(head.prompt_lines, "line")
        title = f"system prompt ({noun}, {plural(head.prompt_chars, 'character')})"
        super().__init__(title, Text(head.prompt), classes="session-head")
        self.head = head
        self.can_focus = bool(head.prompt)

    def _visual_key(self) -> Hashable:
        return (self.head.activity, super()._visual_key())

    def _height_key(self) -> Hashable:
        return (bool(self.head.activity), super()._height_key())

    def _activity(self) -> Text | None:
        if not self.head.activity:
            return None
        return Text(f"● working: {self.head.activity}", style="bold", no_wrap=True, overflow="ellipsis")

    def _renderable(self) -> RenderableType:
        parts: list[RenderableType] = []
        activity = self._activity()
        if activity is not None:
            parts.append(activity)
        if self.head.prompt:
            parts.append(super()._renderable())
        return Group(*parts)

    def toggle(self) -> None:
        if self.head.prompt:
            super().toggle()

    def on_click(self, event: events.Click) -> None:
        """A click on the title line toggles (the activity line above it does not)."""
        width = max(1, self.content_region.width)
        above = 1 if self._activity() is not None else 0
        title_rows = -(-self._title_text().cell_len // width)
        if self.head.prompt and (self.collapsed or above <= event.y < above + title_rows):
            event.stop()
            self.toggle()
