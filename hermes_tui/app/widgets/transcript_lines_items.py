"""How `LinesTranscript` draws one transcript item (a message, a chain's divider, the session's
head) as lines: the same renderables as `message_parts` (`transcript_items.Prepared`), behind
the message's left border and padding cell, in the colours of the view's component classes, each
item's lines cached per width and state. A mixin of `LinesTranscript` (kept apart so each module
stays one readable file): it reads the view's state (folds, the marked message, the focused fold).
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rich.console import RenderableType
from rich.padding import Padding
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.color import Color
from textual.strip import Strip

from hermes_tui.app.widgets.message_parts import (
    MarkedRender,
    _contains,
    _highlighted,
    divider_text,
    more_calls_label,
)
from hermes_tui.app.widgets.transcript_items import (
    ROLES,
    Divider,
    Item,
    MessageView,
    Prepared,
    SessionHead,
    message_header,
    prepare,
)
from hermes_tui.formatting import plural
from hermes_tui.state import FOLD_HIDDEN, FOLD_INACTIVE

if TYPE_CHECKING:
    from textual.app import App
    from textual.css.styles import RenderStyles

#: The left border of a message (Textual's `wide` border's left edge) and its padding cell.
BORDER = "▎"
#: The fold number of a message's "… and N more tool calls" row.
MORE_CALLS = -1


def _role(view: MessageView) -> str:
    return view.role if view.role in ROLES else "other"


@dataclass(frozen=True)
class Rendered:
    """One item's lines at one width, and for each line the fold whose title it is (else None)."""

    strips: list[Strip]
    titles: list[int | None]
    #: The cells each line starts with that are not text (border, padding): not selectable.
    prefix: int = 0
    #: Its first lines are a top margin, which collapses into the margin of what is above it
    #: (Textual collapses adjacent vertical margins: the divider's into a message's).
    margin_top: int = 0


class ItemLines:
    """One item's lines; `LinesTranscript` provides the state they depend on."""

    if TYPE_CHECKING:
        app: App[Any]
        _width: int
        _cache: dict[Hashable, dict[Hashable, Rendered]]
        _prepared: dict[Hashable, Prepared]
        _toggled: set[tuple[Hashable, int]]
        _revealed: dict[Hashable, tuple[tuple[str, Text], ...]]
        _over: Color | None
        _open_hits: bool
        folds_open: bool
        show_inactive: bool
        show_hidden: bool
        target_id: int | None
        terms: tuple[str, ...]
        focused_fold: tuple[Hashable, int] | None
        hovered: tuple[Hashable, int] | None
        _drawn_cursor: int | None

        def cursor_look(self) -> str: ...

        @property
        def rich_style(self) -> Style: ...
        def get_component_rich_style(
            self, *names: str, partial: bool = False, default: Style | None = None
        ) -> Style: ...
        def get_component_styles(self, *names: str) -> RenderStyles: ...

    # ------------------------------------------------------------------ one item's lines
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

    def fold_open(self, item: Item, fold: int) -> bool:
        return self.folds_open != ((self._item_key(item), fold) in self._toggled)

    def _item_lines(self, item: Item) -> Rendered:
        """An item's lines in its state now, from the cache when drawn so before (`render_line`
        puts the widget's style, or the cursor's background, under them). Before the view has a
        width (not laid out yet) none: the first layout renders the window."""
        if self._width <= 0:
            return Rendered([], [])
        key = self._item_key(item)
        match = isinstance(item, MessageView) and item.id == self.target_id
        on_cursor = isinstance(item, MessageView) and item.id == self._drawn_cursor
        cursor = self.cursor_look() if on_cursor else None
        state = (
            self.app.theme,
            item.activity if isinstance(item, SessionHead) else None,
            self._width,
            self.folds_open,
            frozenset(f for f in self._toggled if f[0] == key),
            len(self._revealed.get(key, ())),
            isinstance(item, MessageView) and self._shown(item),
            (self.terms, self._open_hits) if match else None,
            self.focused_fold[1] if self.focused_fold and self.focused_fold[0] == key else None,
            self.hovered[1] if self.hovered and self.hovered[0] == key else None,
            cursor,
        )
        cached = self._cache.setdefault(key, {})
        rendered = cached.get(state)
        if rendered is None:
            if isinstance(item, Divider):
                rendered = self._render_divider(item)
            elif isinstance(item, SessionHead):
                rendered = self._render_head(item)
            elif not self._shown(item):
                rendered = Rendered([], [])
            else:
                rendered = self._render_message(item, match, cursor)
            cached.clear()  # one state per item: a toggle or a resize replaces it
            cached[state] = rendered
        return rendered

    def _rich_strips(self, renderable: RenderableType, width: int, style: Style | None = None) -> list[Strip]:
        """``renderable``'s lines at ``width``, on ``style`` (else the widget's text colour: not
        under the border and padding cells, which Textual gives the background alone)."""
        console = self.app.console
        options = console.options.update(width=width, max_width=width, height=None, highlight=False)
        style = style or Style(color=self.rich_style.color)
        lines = console.render_lines(renderable, options, style=style, pad=False)
        return [Strip(line).adjust_cell_length(width) for line in lines]

    def _look(self, *names: str) -> Style:
        """Components' colour and text style (the last one's over the others), without their
        background: `render_line` puts the background (plain, the cursor's, a match's) under
        everything, as a widget's own background is under its component styles."""
        full = self.get_component_rich_style(*names)
        color = full.color
        if self._over is not None:  # a colour with alpha blends into the background under it
            styles = self.get_component_styles(names[-1])
            under = self._over + styles.background  # (its own, when it has one)
            color = (under + styles.color).rich_color
        return Style(
            color=color,
            bold=full.bold,
            italic=full.italic,
            dim=full.dim,
            underline=full.underline,
            reverse=full.reverse,
            strike=full.strike,
        )

    def _fold_title(self, label: str, key: Hashable, fold: int) -> Text:
        """A fold's title (`Fold > .fold--title`), focused (`Fold:focus`) or under the mouse
        (`Fold:hover`) with its own background over the view's; the focus's look wins."""
        if self.focused_fold == (key, fold):
            name = "lines--fold-focus"
        elif self.hovered == (key, fold):
            name = "lines--fold-hover"
        else:
            return Text(f" {label} ", style=self._look("lines--fold-title"))
        under = self._over or Color.from_rich_color(self.rich_style.bgcolor)
        background = under + self.get_component_styles(name).background
        style = self._look(name) + Style(bgcolor=background.rich_color)
        return Text(f" {label} ", style=style)

    def _message_parts(self, view: MessageView, match: bool) -> list[tuple[RenderableType, int | None]]:
        """What a message shows, in order, each part with the fold it is the title of."""
        key = self._item_key(view)
        prepared = view.prepared or self._prepared.get(key)
        if prepared is None:  # (parsed once while it is in the window: redrawn, it is not again)
            prepared = self._prepared[key] = prepare(view)
        terms = self.terms if match else ()
        role = _role(view)
        header = message_header(view, match=True) if match else prepared.header.copy()
        header.stylize_before(Style(color=self._look(f"lines--header-{role}").color))
        body = prepared.body
        if match and terms and isinstance(body, Text):
            body = _highlighted(body, terms)
        elif match and terms and body is not None:
            body = MarkedRender(body, terms)
        folds: list[tuple[str, Text]] = []
        if prepared.reasoning is not None:
            hit = match and self._open_hits and bool(terms)
            folds.append(
                ("reasoning", _highlighted(prepared.reasoning, terms) if hit else prepared.reasoning)
            )
        if prepared.output is not None:
            output = _highlighted(prepared.output, terms) if match else prepared.output
            folds.append((f"result ({view.text.count(chr(10)) + 1} lines)", output))
        for name, args in (*prepared.calls, *self._revealed.get(key, ())):
            hit = match and self._open_hits and bool(terms)
            folds.append((f"→ {name}", _highlighted(args, terms) if hit else args))
        muted = self._look("lines--fold-body")
        parts: list[tuple[RenderableType, int | None]] = [(header, None)]
        if prepared.reasoning is None and body is not None:
            parts.append((body, None))
        output_fold = -1 if prepared.output is None else int(prepared.reasoning is not None)
        for n, (title, text) in enumerate(folds):
            # A match's output is open; the find's match opens its folds that hold a term.
            is_open = (
                self.fold_open(view, n)
                or (match and n == output_fold)
                or (match and self._open_hits and bool(terms) and _contains(Text(title) + text, terms))
            )
            parts.append((self._fold_title(f"{'▼' if is_open else '▶'} {title}", key, n), n))
            if is_open:
                parts.append((Padding(text, (0, 0, 0, 2), style=muted), None))
            if n == 0 and prepared.reasoning is not None and body is not None:
                parts.append((body, None))
        remaining = len(view.more_calls) - len(self._revealed.get(key, ()))
        if remaining > 0:
            parts.append((self._fold_title(more_calls_label(remaining), key, MORE_CALLS), MORE_CALLS))
        return parts

    def _render_message(self, view: MessageView, match: bool, cursor: str | None = None) -> Rendered:
        """Header, body and folds behind the message's left border, then a blank margin line."""
        width = self._width
        inner = max(1, width - 2)
        strips: list[Strip] = []
        titles: list[int | None] = []
        faded = view.fold is not None  # a rewound or hidden row, shown by its toggle
        base = Style(color=self.rich_style.color, italic=True if faded else None)
        # The background its colours blend into (a component colour with alpha, `$text-muted`):
        # the match's, else the cursor's when it is drawn on it, else the view's own.
        name = "lines--match" if match else cursor
        under = None if name is None else self.get_component_rich_style(name).bgcolor
        self._over = None if under is None else Color.from_rich_color(under)
        try:
            for renderable, fold in self._message_parts(view, match):
                lines = self._rich_strips(renderable, inner, base)
                strips.extend(lines)
                titles.extend([fold] * len(lines))
        finally:
            self._over = None
        border = "lines--border-match" if match else f"lines--border-{_role(view)}"
        if faded:
            strips = self._edged([self._faded(strip, 0.6) for strip in strips], border, fade=0.6)
        else:
            strips = self._edged(strips, border)
        if match:
            bg = Style(bgcolor=self.get_component_rich_style("lines--match").bgcolor)
            strips = [strip.apply_style(bg) for strip in strips]
        return Rendered([*strips, Strip.blank(width)], [*titles, None], prefix=2)

    def _faded(self, strip: Strip, opacity: float) -> Strip:
        """The line blended into the transcript's background as the widget transcript draws its
        folded-away rows (`opacity: 60%`: 60 % for their content, 36 % for their border, which
        Textual 8.2.8 blends twice; compared cell by cell in `test_transcript_lines`)."""
        background = Color.from_rich_color(self.rich_style.bgcolor)
        segments = []
        for segment in strip.apply_style(Style(bgcolor=self.rich_style.bgcolor)):
            style = segment.style or Style()
            if style.color is not None:
                style += Style(color=background.blend(Color.from_rich_color(style.color), opacity).rich_color)
            if style.bgcolor is not None:
                style += Style(
                    bgcolor=background.blend(Color.from_rich_color(style.bgcolor), opacity).rich_color
                )
            segments.append(Segment(segment.text, style))
        return Strip(segments, strip.cell_length)

    def _render_divider(self, divider: Divider) -> Rendered:
        text = divider_text(divider)
        # Cut at the width, the spaces at the cut left plain (as the widget transcript's `Static`
        # cut it: no ellipsis, a cut between two words is not drawn in the divider's style).
        text.truncate(self._width, overflow="crop")
        text.rstrip()
        text.stylize_before(self._look("lines--divider"))
        blank = Strip.blank(self._width)
        lines = [blank, *self._rich_strips(text, self._width), blank]
        return Rendered(lines, [None, None, None], margin_top=1)

    def _render_head(self, head: SessionHead) -> Rendered:
        parts: list[tuple[RenderableType, int | None]] = []
        if head.activity:
            activity = Text(f"● working: {head.activity}", style="bold", no_wrap=True, overflow="ellipsis")
            parts.append((activity, None))
        if head.prompt:
            noun = plural(head.prompt_lines, "line")
            title = f"system prompt ({noun}, {plural(head.prompt_chars, 'character')})"
            is_open = self.fold_open(head, 0)
            parts.append((self._fold_title(f"{'▼' if is_open else '▶'} {title}", self._item_key(head), 0), 0))
            if is_open:
                parts.append((Padding(Text(head.prompt), (0, 0, 0, 2)), None))
        # A fold (its text muted) with a border and no padding (the head is not a message).
        muted = self._look("lines--fold-body")
        strips: list[Strip] = []
        titles: list[int | None] = []
        for renderable, fold in parts:
            lines = self._rich_strips(renderable, max(1, self._width - 1), muted)
            strips.extend(lines)
            titles.extend([fold] * len(lines))
        edged = self._edged(strips, "lines--border-head", padding=False)
        return Rendered([*edged, Strip.blank(self._width)], [*titles, None], prefix=1)

    def _edged(
        self, strips: list[Strip], component: str, padding: bool = True, fade: float | None = None
    ) -> list[Strip]:
        """Each line behind the left border (the component's colour, ``fade``d into the
        background for a folded-away row) and its padding cell."""
        colour = self.get_component_rich_style(component).color
        if fade is not None and colour is not None:  # (blended twice, rounded each time)
            background = Color.from_rich_color(self.rich_style.bgcolor)
            once = background.blend(Color.from_rich_color(colour), fade)
            colour = background.blend(once, fade).rich_color
        edge = [Segment(BORDER, Style(color=colour))]
        if padding:
            edge.append(Segment(" "))
        return [Strip([*edge, *strip], self._width) for strip in strips]
