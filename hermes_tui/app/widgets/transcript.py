"""TranscriptView: one session's (or one compression chain's) messages, rendered lazily.

Message dicts are turned into small `MessageView` records in the loading worker (decoding,
truncation, JSON pretty-printing all happen off the event loop). The view mounts a window of
blocks around the target and grows it in chunks when the reader scrolls to an edge, so a
10,000-message session costs the same to open as a 10-message one.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from rich.console import RenderableType
from rich.highlighter import JSONHighlighter
from rich.text import Text
from textual import on
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.message import Message
from textual.widgets import Button, Collapsible, Static

from hermes_tui.app.render import (
    clock_time,
    content_text,
    highlight_terms,
    human_count,
    pretty_json,
    tool_call_parts,
    truncate_text,
)

# Each message is several widgets, and mounting them runs on the event loop: 40 at once blocked
# the loop for up to 1 s on long sessions (the list froze while it loaded). A first window of
# FIRST_WINDOW fills the screen; the rest arrive CHUNK at a time as the reader scrolls.
FIRST_WINDOW = 12
CHUNK = 20
BEFORE_TARGET = 4
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
    timestamp: float | None = None
    token_count: int | None = None
    finish_reason: str | None = None
    active: bool = True
    compacted: bool = False
    session_id: str = ""


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


def message_view(row: dict[str, Any]) -> MessageView:
    """Turn a `get_messages` dict into a MessageView (runs in a worker: may be slow)."""
    role = str(row.get("role") or "?")
    raw = content_text(row.get("content"))
    if role == "tool":
        raw = pretty_json(raw) if raw[:1] in "[{" else raw
    text, dropped = truncate_text(raw)
    calls: list[tuple[str, str]] = []
    for call in row.get("tool_calls") or []:
        name, args = tool_call_parts(call)
        args, cut = truncate_text(args, max_chars=6000, max_lines=200)
        if cut:
            args += f"\n… {cut:,} more characters"
        calls.append((name, args))
    reasoning_raw = row.get("reasoning") or row.get("reasoning_content") or ""
    reasoning, rcut = truncate_text(str(reasoning_raw), max_chars=8000)
    if rcut:
        reasoning += f"\n… {rcut:,} more characters"
    active = row.get("active")
    return MessageView(
        id=int(row.get("id") or 0),
        role=role,
        text=text,
        dropped=dropped,
        tool_calls=tuple(calls),
        tool_name=row.get("tool_name"),
        tool_call_id=row.get("tool_call_id"),
        reasoning=reasoning,
        timestamp=row.get("timestamp"),
        token_count=row.get("token_count"),
        finish_reason=row.get("finish_reason"),
        active=active is None or bool(active),
        compacted=bool(row.get("compacted")),
        session_id=str(row.get("session_id") or ""),
    )


def _plain(text: str) -> Content:
    """Literal Content (Collapsible titles parse strings as markup otherwise)."""
    return Content(text)


class MessageBlock(Vertical):
    """One message: a header line and role-specific body widgets."""

    def __init__(self, view: MessageView, terms: Sequence[str] = (), match: bool = False) -> None:
        classes = [f"-role-{view.role if view.role in {'user', 'assistant', 'tool', 'system'} else 'other'}"]
        if not view.active:
            classes.append("-inactive")
        if view.compacted:
            classes.append("-compacted")
        if match:
            classes.append("-match")
        super().__init__(classes=" ".join(classes), id=f"msg-{view.id}")
        self.view = view
        self.terms = tuple(terms)
        self.match = match

    def _header(self) -> Text:
        v = self.view
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append(v.role, style="bold")
        if v.tool_name and v.role == "tool":
            text.append(f" {v.tool_name}")
        text.append(f"  #{v.id}", style="dim")
        if v.timestamp is not None:
            text.append(f"  {clock_time(v.timestamp)}", style="dim")
        if v.token_count:
            text.append(f"  {human_count(v.token_count)} tok", style="dim")
        if v.finish_reason:
            text.append(f"  {v.finish_reason}", style="dim")
        if not v.active:
            text.append("  compacted" if v.compacted else "  rewound", style="italic")
        if self.match:
            text.append("  ◆ match", style="bold")
        return text

    def _body(self) -> RenderableType:
        v = self.view
        body = v.text
        if v.dropped:
            body += f"\n\n… {v.dropped:,} more characters not shown"
        if self.match or v.role not in {"user", "assistant"}:
            text = Text(body)
            if self.terms:
                highlight_terms(text, self.terms)
            return text
        from rich.markdown import Markdown  # deferred: ~90 ms of imports off the startup path

        return Markdown(body)

    def compose(self) -> Iterable[Static | Collapsible]:
        v = self.view
        yield Static(self._header(), classes="msg-header")
        if v.reasoning:
            yield Collapsible(
                Static(Text(v.reasoning), classes="msg-reasoning"),
                title=_plain("reasoning"),  # type: ignore[arg-type]
                collapsed=True,
                classes="msg-fold",
            )
        if v.role == "tool":
            lines = v.text.count("\n") + 1
            body = Text(v.text + (f"\n… {v.dropped:,} more characters" if v.dropped else ""))
            if v.text[:1] in "[{":
                _JSON.highlight(body)
            if self.terms:
                highlight_terms(body, self.terms)
            yield Collapsible(
                Static(body, classes="msg-tool-output"),
                title=_plain(f"result ({lines} lines)"),  # type: ignore[arg-type]
                collapsed=not self.match,
                classes="msg-fold",
            )
        elif v.text:
            yield Static(self._body(), classes="msg-body")
        for name, args in v.tool_calls:
            text = Text(args)
            _JSON.highlight(text)
            yield Collapsible(
                Static(text, classes="msg-tool-args"),
                title=_plain(f"→ {name}"),  # type: ignore[arg-type]
                collapsed=True,
                classes="msg-fold msg-call",
            )


class DividerBlock(Static):
    """The line between two segments of a compression chain."""

    def __init__(self, divider: Divider) -> None:
        kind = divider.edge_kind or "root"
        label = divider.title or divider.session_id
        text = Text(
            f"── segment {divider.index}/{divider.count} · {label} · {kind} · "
            f"{divider.message_count} msgs ──",
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
        Binding("end", "last", "Bottom", show=False),
        Binding("x", "toggle_folds", "Expand/collapse", show=False),
    ]

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
            await self.mount(Static(Text(note), classes="transcript-note"))

    async def show(
        self, data: TranscriptData, target_id: int | None = None, terms: Sequence[str] = ()
    ) -> None:
        """Replace the content; mount a window around ``target_id`` and scroll to it."""
        self.data = data
        self.items = list(data.items)
        self.target_id = target_id
        self.terms = tuple(terms)
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

    def index_of(self, message_id: int | None) -> int | None:
        """Position of a message id in the item list."""
        for i, item in enumerate(self.items):
            if isinstance(item, MessageView) and item.id == message_id:
                return i
        return None

    def _block(self, item: Item) -> MessageBlock | DividerBlock:
        if isinstance(item, Divider):
            return DividerBlock(item)
        match = self.target_id is not None and item.id == self.target_id
        return MessageBlock(item, terms=self.terms if match else (), match=match)

    def _more_button(self, where: str, count: int) -> Button:
        label = f"▲ {count} earlier messages" if where == "before" else f"▼ {count} more messages"
        return Button(Content(label), id=f"more-{where}", classes="more", compact=True)

    async def _mount_range(self, start: int, end: int) -> None:
        widgets: list[Any] = []
        if start > 0:
            widgets.append(self._more_button("before", start))
        widgets.extend(self._block(item) for item in self.items[start:end])
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
                blocks = [self._block(i) for i in self.items[self.end : new_end]]
                await self.query("#more-after").remove()
                await self.mount_all(blocks)
                self.end = new_end
                if self.end < len(self.items):
                    await self.mount(self._more_button("after", len(self.items) - self.end))
            elif where == "before" and self.start > 0:
                new_start = max(0, self.start - CHUNK)
                blocks = [self._block(i) for i in self.items[new_start : self.start]]
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
        for fold in self.query(Collapsible):
            fold.collapsed = not self._folds_open
