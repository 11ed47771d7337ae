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

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, ClassVar

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.highlighter import JSONHighlighter
from rich.measure import Measurement
from rich.padding import Padding
from rich.segment import Segment
from rich.style import Style as RichStyle
from rich.text import Text
from textual import events, on
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.content import Content
from textual.css.styles import RulesMap
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.strip import Strip
from textual.style import Style as VisualStyle
from textual.visual import RenderOptions, RichVisual, Visual
from textual.widget import Widget
from textual.widgets import Button, Static

from hermes_tui.app.render import (
    clock_time,
    content_text,
    highlight_terms,
    human_count,
    plain_count,
    pretty_json,
    tool_call_parts,
    truncate_text,
)
from hermes_tui.safe_text import as_text, inert, is_inert, one_line

if TYPE_CHECKING:
    from rich.markdown import Markdown

# Mounting runs on the event loop: 40 messages at once blocked it for up to 1 s on long sessions
# (the list froze while it loaded). A first window of FIRST_WINDOW fills the screen; the rest
# arrive CHUNK at a time as the reader scrolls. A message is 1-3 widgets (`message_parts`).
FIRST_WINDOW = 12
CHUNK = 20
BEFORE_TARGET = 4
#: Tool calls of one message prepared and mounted at first, and revealed per press of the
#: "more tool calls" row. One message with 5,000 calls took 12.6 s to appear and 300+ MB when
#: every call became a widget.
CALLS_SHOWN = 50
#: Longest tool-call arguments, reasoning and header fields kept for display.
MAX_CALL_CHARS = 6000
MAX_CALL_LINES = 200
MAX_REASONING_CHARS = 8000
_JSON = JSONHighlighter()


@dataclass(frozen=True)
class MessageView:
    """What one message block needs, prepared in a worker thread."""

    id: int
    role: str
    text: str
    dropped: int = 0
    tool_calls: tuple[tuple[str, str], ...] = ()
    tool_name: str | None = None
    tool_call_id: str | None = None
    reasoning: str = ""
    timestamp: Any = None  # as stored: `clock_time` shows a marker for one that is not a time
    token_count: Any = None
    finish_reason: str | None = None
    active: bool = True
    compacted: bool = False
    session_id: str = ""
    prepared: Prepared | None = field(default=None, compare=False, repr=False)
    #: The stored tool calls past the first `CALLS_SHOWN`, prepared only when revealed.
    more_calls: tuple[Any, ...] = field(default=(), compare=False, repr=False)


@dataclass(frozen=True)
class Divider:
    """A segment boundary when a compression chain is read as one transcript."""

    session_id: str
    index: int
    count: int
    title: str = ""
    edge_kind: str | None = None
    message_count: int = 0


Item = MessageView | Divider


@dataclass
class TranscriptData:
    """Everything a TranscriptView shows, built in a worker."""

    session_id: str
    items: list[Item] = field(default_factory=list)
    chain: bool = False


def call_list(value: Any) -> list[Any]:
    """The stored ``tool_calls`` as a list of calls, whatever shape they arrived in.

    The store decodes the JSON; what it could not decode (or a writer stored as something other
    than a list) becomes one call whose name says so and whose arguments show the value.
    """
    if value is None or (isinstance(value, (str, bytes, bytearray, list, tuple, dict)) and not value):
        return []
    if isinstance(value, list):
        return value
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, dict):
        return [value]
    if isinstance(value, (str, bytes, bytearray, memoryview)):
        return [{"name": "tool_calls (not valid JSON)", "arguments": as_text(value)}]
    return [{"name": f"tool_calls ({type(value).__name__}, not a list)", "arguments": value}]


def call_view(call: Any) -> tuple[str, str]:
    """(name, arguments) of one tool call, inert and cut to `MAX_CALL_CHARS`."""
    name, args = tool_call_parts(call)
    args, cut = truncate_text(args, max_chars=MAX_CALL_CHARS, max_lines=MAX_CALL_LINES)
    if cut:
        args += f"\n… {cut:,} more characters"
    return name, args


def _message_id(value: Any) -> int:
    try:
        return int(value or 0)
    except (TypeError, ValueError, OverflowError):
        return 0


def _field(value: Any, width: int) -> str | None:
    """A one-line header field (tool name, finish reason), None when empty."""
    return one_line(value, width) or None


def message_view(row: dict[str, Any]) -> MessageView:
    """Turn a `get_messages` dict into a MessageView with its renderables prepared (runs in a
    worker: may be slow). Every text field is inert; no stored value makes it raise."""
    role = one_line(row.get("role"), 40) or "?"
    raw = content_text(row.get("content"))
    if role == "tool" and raw[:1] in ("[", "{"):
        raw = inert(pretty_json(raw))
    text, dropped = truncate_text(raw)
    calls = call_list(row.get("tool_calls"))
    shown = tuple(call_view(call) for call in calls[:CALLS_SHOWN])
    reasoning_raw = row.get("reasoning") or row.get("reasoning_content") or ""
    if not isinstance(reasoning_raw, (str, bytes, bytearray, memoryview)):
        reasoning_raw = pretty_json(reasoning_raw)
    reasoning, rcut = truncate_text(reasoning_raw, max_chars=MAX_REASONING_CHARS, max_lines=MAX_CALL_LINES)
    reasoning = inert(reasoning)
    if rcut:
        reasoning += f"\n… {rcut:,} more characters"
    active = row.get("active")
    view = MessageView(
        id=_message_id(row.get("id")),
        role=role,
        text=text,
        dropped=dropped,
        tool_calls=shown,
        tool_name=_field(row.get("tool_name"), 80),
        tool_call_id=_field(row.get("tool_call_id"), 80),
        reasoning=reasoning,
        timestamp=row.get("timestamp"),
        token_count=row.get("token_count"),
        finish_reason=_field(row.get("finish_reason"), 40),
        active=active is None or bool(active),
        compacted=bool(row.get("compacted")),
        session_id=one_line(row.get("session_id")),
        more_calls=tuple(calls[CALLS_SHOWN:]),
    )
    return replace(view, prepared=prepare(view))


ROLES = frozenset({"user", "assistant", "tool", "system"})


@dataclass(frozen=True)
class Prepared:
    """The renderables of one message as shown when it is not the search hit.

    Built in the loading worker: parsing Markdown and highlighting JSON cost ~1 ms a message,
    which used to run on the event loop in `compose`. Shared Text objects are never mutated on
    the loop; the matched message copies them before highlighting its terms.
    """

    header: Text
    body: RenderableType | None
    output: Text | None
    calls: tuple[tuple[str, Text], ...]
    reasoning: Text | None


def message_header(view: MessageView, match: bool = False) -> Text:
    """Role, tool name, #id, UTC time, tokens, finish reason, rewound/compacted, match marker."""
    text = Text(overflow="ellipsis")
    text.append(view.role, style="bold")
    if view.tool_name and view.role == "tool":
        text.append(f" {view.tool_name}")
    text.append(f"  #{view.id}", style="dim")
    if view.timestamp is not None:
        text.append(f"  {clock_time(view.timestamp)}", style="dim")
    if view.token_count:
        text.append(f"  {human_count(view.token_count)} tok", style="dim")
    if view.finish_reason:
        text.append(f"  {view.finish_reason}", style="dim")
    if not view.active:
        text.append("  compacted" if view.compacted else "  rewound", style="italic")
    if match:
        text.append("  ◆ match", style="bold")
    return text


def _body_source(view: MessageView) -> str:
    if view.dropped:
        return view.text + f"\n\n… {view.dropped:,} more characters not shown"
    return view.text


def _tool_output(view: MessageView) -> Text:
    body = Text(view.text + (f"\n… {view.dropped:,} more characters" if view.dropped else ""))
    if view.text[:1] in "[{":
        _JSON.highlight(body)
    return body


_WARM_LEXERS: set[str] = set()


def _warm_code_blocks(markdown: Markdown) -> None:
    """Load the Pygments lexers and theme a Markdown body's code blocks will use.

    A lexer's first instance compiles its regexes (50-100 ms for some languages), and rich only
    creates it while rendering, on the event loop. Here, in the worker, it is compiled once per
    process; later instances reuse the compiled tables.
    """
    names = {
        (token.info or "").partition(" ")[0] or "text"
        for token in markdown.parsed
        if token.type in {"fence", "code_block"}
    }
    if not names - _WARM_LEXERS:
        return
    from pygments.lexers import get_lexer_by_name
    from pygments.util import ClassNotFound
    from rich.syntax import Syntax

    Syntax.get_theme(markdown.code_theme)
    for name in names - _WARM_LEXERS:
        _WARM_LEXERS.add(name)
        try:
            get_lexer_by_name(name)
        except ClassNotFound:
            pass


def _inert_markdown(markdown: Markdown) -> None:
    """Make the parsed tokens inert: Markdown decodes character references, so the inert source
    ``&#x202E;`` or ``&#13;`` would come back as a bidi override or a carriage return."""
    stack = list(markdown.parsed)
    while stack:
        token = stack.pop()
        if token.content and not is_inert(token.content):
            token.content = inert(token.content)
        if token.attrs:
            for key, value in list(token.attrs.items()):
                if isinstance(value, str) and not is_inert(value):
                    token.attrs[key] = one_line(value)
        if token.info and not is_inert(token.info):
            token.info = one_line(token.info)
        if token.children:
            stack.extend(token.children)


def prepare_calls(calls: Sequence[tuple[str, str]]) -> tuple[tuple[str, Text], ...]:
    """Highlighted argument Texts of prepared tool calls (JSON colouring, agent text as data)."""
    out = []
    for name, args in calls:
        text = Text(args)
        _JSON.highlight(text)
        out.append((name, text))
    return tuple(out)


def prepare(view: MessageView) -> Prepared:
    """Build every renderable of a message that does not depend on it being the search hit.

    Agent text goes into `Text` and `Markdown` as data, never through markup parsing.
    """
    body: RenderableType | None = None
    output: Text | None = None
    if view.role == "tool":
        output = _tool_output(view)
    elif view.text:
        if view.role in {"user", "assistant"}:
            from rich.markdown import Markdown  # deferred: ~90 ms of imports off the startup path

            body = Markdown(_body_source(view))
            _inert_markdown(body)
            _warm_code_blocks(body)
        else:
            body = Text(_body_source(view))
    reasoning = Text(view.reasoning) if view.reasoning else None
    return Prepared(message_header(view), body, output, prepare_calls(view.tool_calls), reasoning)


def _highlighted(text: Text, terms: Sequence[str]) -> Text:
    """A copy of ``text`` with the search terms highlighted (the shared original is untouched)."""
    if not terms:
        return text
    copy = text.copy()
    highlight_terms(copy, terms)
    return copy


def part_classes(view: MessageView, match: bool) -> str:
    """CSS classes every widget of one message carries (role colour, hidden, hit)."""
    classes = ["msg", f"-role-{view.role if view.role in ROLES else 'other'}"]
    if not view.active:
        classes.append("-inactive")
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
        Binding("enter,space", "toggle", "Toggle", show=False),
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

    def action_toggle(self) -> None:
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
        Binding("enter,space,x", "toggle", "Show more tool calls", show=False),
    ]

    def __init__(self, calls: Sequence[Any], *, classes: str, call_classes: str) -> None:
        super().__init__(more_calls_label(len(calls)), Text(), classes=classes)
        self.calls = tuple(calls)
        self.call_classes = call_classes
        self._revealing = False
        self.add_class("more-calls")

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
        if self._revealing or parent is None or not self.calls:
            return []
        self._revealing = True
        try:
            transcript = parent if isinstance(parent, TranscriptView) else None
            folds = self.next_folds(open_folds=transcript is not None and transcript._folds_open)
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


def message_parts(view: MessageView, terms: Sequence[str] = (), match: bool = False) -> list[MessagePart]:
    """The widgets of one message, in order: header (+ body), reasoning, output, tool calls.

    Header and body share one widget unless a reasoning fold sits between them.
    """
    prepared = view.prepared or prepare(view)
    classes = part_classes(view, match)
    header = message_header(view, match=True) if match else prepared.header
    body = prepared.body
    output = prepared.output
    if match and view.role != "tool" and view.text:
        body = _highlighted(Text(_body_source(view)), terms)  # the hit: literal, terms marked
    if match and output is not None:
        output = _highlighted(output, terms)
    parts: list[MessagePart] = []
    if prepared.reasoning is not None:
        parts.append(MessageBlock(view, header, None, terms=terms, match=match, classes=classes))
        parts.append(Fold("reasoning", prepared.reasoning, classes=classes))
        if body is not None:
            parts.append(MessagePart(body, classes=classes))
    else:
        parts.append(MessageBlock(view, header, body, terms=terms, match=match, classes=classes))
    if output is not None:
        lines = view.text.count("\n") + 1
        parts.append(Fold(f"result ({lines} lines)", output, collapsed=not match, classes=classes))
    for name, args in prepared.calls:
        parts.append(Fold(f"→ {name}", args, classes=f"{classes} -call"))
    if view.more_calls:
        parts.append(MoreCalls(view.more_calls, classes=f"{classes} -call", call_classes=f"{classes} -call"))
    parts[-1].add_class("-end")
    return parts


class DividerBlock(Static):
    """The line between two segments of a compression chain."""

    def __init__(self, divider: Divider) -> None:
        kind = one_line(divider.edge_kind, 20) or "root"
        label = one_line(divider.title) or one_line(divider.session_id)
        text = Text(
            f"── segment {divider.index}/{divider.count} · {label} · {kind} · "
            f"{plain_count(divider.message_count)} msgs ──",
            no_wrap=True,
            overflow="ellipsis",
        )
        super().__init__(text, classes="segment-divider")
        self.divider = divider


class TranscriptView(VerticalScroll, can_focus=True):
    """Scrollable transcript with lazy windows and hit navigation."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up,k", "scroll_up", "Up", show=False),
        Binding("down,j", "scroll_down", "Down", show=False),
        Binding("home", "first", "Top", show=False),
        Binding("end,G", "last", "Bottom", show=False),
        Binding("x", "toggle_folds", "Expand/collapse", show=False),
    ]

    class NewBelow(Message):
        """Messages arrived below while the reader was scrolled up (0: caught up)."""

        def __init__(self, count: int) -> None:
            super().__init__()
            self.count = count

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
        self._growing = False
        self._folds_open = False
        #: Messages appended live below the reader (the "N new ↓" marker); 0 when following.
        self.new_below = 0

    @property
    def message_count(self) -> int:
        """Messages in the loaded transcript (dividers excluded)."""
        return sum(1 for i in self.items if isinstance(i, MessageView))

    async def clear_transcript(self, note: str = "") -> None:
        """Empty the view, optionally leaving a one-line note."""
        self.data = None
        self.items = []
        self.start = self.end = 0
        await self.remove_children()
        if note:
            await self.mount(Static(Text(inert(note)), classes="transcript-note"))

    async def show(
        self, data: TranscriptData, target_id: int | None = None, terms: Sequence[str] = ()
    ) -> None:
        """Replace the content; mount a window around ``target_id`` and scroll to it."""
        self.data = data
        self.items = list(data.items)
        self._set_new_below(0)
        self.target_id = target_id
        self.terms = tuple(terms)
        self._folds_open = False  # a new transcript starts folded, so `x` opens its folds
        with self.app.batch_update():  # one paint for the swap, not an empty view in between
            await self.remove_children()
            if not self.items:
                await self.mount(Static(Text("This session has no messages."), classes="transcript-note"))
                return
            index = self.index_of(target_id) if target_id is not None else None
            if index is None:
                self.start, self.end = 0, min(len(self.items), FIRST_WINDOW)
            else:
                self.start = max(0, index - BEFORE_TARGET)
                self.end = min(len(self.items), index + FIRST_WINDOW)
            await self._mount_range(self.start, self.end)
        self.call_after_refresh(self._scroll_to_target)
        self.post_message(self.WindowChanged(self.start, self.end, len(self.items)))

    @property
    def last_message_id(self) -> int:
        """Id of the newest message shown (0 when none): live appends fetch what is after it."""
        for item in reversed(self.items):
            if isinstance(item, MessageView):
                return item.id
        return 0

    @property
    def at_bottom(self) -> bool:
        """The reader sees the end: every item is mounted and the view is scrolled to the end."""
        return self.end >= len(self.items) and self.scroll_y >= self.max_scroll_y - 1

    def _set_new_below(self, count: int) -> None:
        if count != self.new_below:
            self.new_below = count
            self.post_message(self.NewBelow(count))

    async def append_items(self, items: Sequence[Item]) -> bool:
        """Messages committed since the transcript loaded (live follow), added at the end.

        At the bottom the view follows (like ``tail -f``); scrolled up, it stays put and
        `new_below` counts what arrived (the screen shows "N new ↓", `G`/`end` jumps there).
        Returns whether it followed."""
        if self.data is None:
            return False
        known = {i.id for i in self.items if isinstance(i, MessageView)}
        fresh = [i for i in items if not (isinstance(i, MessageView) and i.id in known)]
        if not fresh:
            return False
        if not self.items:  # the "no messages" note goes; the window starts empty
            await self.remove_children()
            self.start = self.end = 0
        follow = self.at_bottom
        old_len = len(self.items)
        self.items.extend(fresh)
        if self.data.items is not self.items:
            self.data.items.extend(fresh)
        if self.end >= old_len:  # the window reaches the end: mount the new messages
            await self.mount_all(self._parts(fresh))
            self.end = len(self.items)
        else:
            await self.query("#more-after").remove()
            await self.mount(self._more_button("after", len(self.items) - self.end))
        if follow:
            self.call_after_refresh(self.scroll_end, animate=False)
            self._set_new_below(0)
        else:
            self._set_new_below(self.new_below + sum(1 for i in fresh if isinstance(i, MessageView)))
        self.post_message(self.WindowChanged(self.start, self.end, len(self.items)))
        return follow

    def index_of(self, message_id: int | None) -> int | None:
        """Position of a message id in the item list."""
        for i, item in enumerate(self.items):
            if isinstance(item, MessageView) and item.id == message_id:
                return i
        return None

    def _parts(self, items: Sequence[Item]) -> list[Widget]:
        """The widgets of a run of items (1-3 per message, one per divider)."""
        widgets: list[Widget] = []
        for item in items:
            if isinstance(item, Divider):
                widgets.append(DividerBlock(item))
                continue
            match = self.target_id is not None and item.id == self.target_id
            parts = message_parts(item, terms=self.terms if match else (), match=match)
            if self._folds_open:  # `x` opened every fold: a window grown later opens too
                for part in parts:
                    if isinstance(part, Fold):
                        part.set_reactive(Fold.collapsed, False)
            widgets.extend(parts)
        return widgets

    def _more_button(self, where: str, count: int) -> Button:
        label = f"▲ {count} earlier messages" if where == "before" else f"▼ {count} more messages"
        return Button(Content(label), id=f"more-{where}", classes="more", compact=True)

    async def _mount_range(self, start: int, end: int) -> None:
        widgets: list[Widget] = []
        if start > 0:
            widgets.append(self._more_button("before", start))
        widgets.extend(self._parts(self.items[start:end]))
        if end < len(self.items):
            widgets.append(self._more_button("after", len(self.items) - end))
        await self.mount_all(widgets)

    def _scroll_to_target(self) -> None:
        if self.target_id is None:
            self.scroll_home(animate=False)
            return
        found = self.query(f"#msg-{self.target_id}")
        if found:
            self.scroll_to_widget(found.first(), animate=False, top=True)

    async def grow(self, where: str) -> None:
        """Mount the next chunk before or after the window."""
        if self._growing:
            return
        self._growing = True
        try:
            if where == "after" and self.end < len(self.items):
                new_end = min(len(self.items), self.end + CHUNK)
                blocks = self._parts(self.items[self.end : new_end])
                await self.query("#more-after").remove()
                await self.mount_all(blocks)
                self.end = new_end
                if self.end < len(self.items):
                    await self.mount(self._more_button("after", len(self.items) - self.end))
            elif where == "before" and self.start > 0:
                new_start = max(0, self.start - CHUNK)
                blocks = self._parts(self.items[new_start : self.start])
                await self.query("#more-before").remove()
                anchor = self.children[0] if self.children else None
                if anchor is not None:
                    await self.mount_all(blocks, before=anchor)
                else:
                    await self.mount_all(blocks)
                self.start = new_start
                if self.start > 0:
                    await self.mount(self._more_button("before", self.start), before=self.children[0])
                if anchor is not None:
                    self.call_after_refresh(self.scroll_to_widget, anchor, animate=False, top=True)
            self.post_message(self.WindowChanged(self.start, self.end, len(self.items)))
        finally:
            self._growing = False

    @on(Button.Pressed, ".more")
    async def _more_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        await self.grow("before" if event.button.id == "more-before" else "after")

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        if self.new_below and self.end >= len(self.items) and new_value >= self.max_scroll_y - 1:
            self._set_new_below(0)  # the reader reached the new messages
        if self.data is None or self._growing or new_value <= old_value:
            return
        if new_value >= self.max_scroll_y - 2 and self.end < len(self.items):
            self.call_later(self.grow, "after")

    def action_first(self) -> None:
        self.scroll_home(animate=False)

    async def action_last(self) -> None:
        while self.end < len(self.items):
            await self.grow("after")
        self.call_after_refresh(self.scroll_end, animate=False)

    def action_toggle_folds(self) -> None:
        """Expand or collapse every tool/reasoning block in the mounted window."""
        self._folds_open = not self._folds_open
        with self.app.batch_update():
            for fold in self.query(Fold):
                if not isinstance(fold, MoreCalls):
                    fold.collapsed = not self._folds_open
