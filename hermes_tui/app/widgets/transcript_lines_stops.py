"""What the widget transcript's focusable, hoverable and selectable widgets did, in
`LinesTranscript` (a mixin of it, kept apart so each module stays one readable file).

A *stop* is a place the focus can be on inside the view, as ``(key, fold)``: a fold title or a
message's "… more tool calls" row (``(item key, fold)``; focusable fold widgets once), or
a "more messages" row of the window (``(("w", "before"|"after"), 0)``, the `Button`s there). Tab and
shift+Tab walk them, Enter/space activates the focused one, the mouse highlights the one under it.
Text selection: each drawn cell carries its offset in the text (``{"offset": (x, line)}`` in its
style's meta, as Textual's `Log` does), with the border and padding cells left out of the text.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import TYPE_CHECKING, Any

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.selection import Selection
from textual.strip import Strip

from hermes_tui.app.widgets.transcript_items import MessageView, item_index
from hermes_tui.app.widgets.transcript_lines_items import MORE_CALLS, Rendered

if TYPE_CHECKING:
    from textual.screen import Screen

    from hermes_tui.app.widgets.transcript_items import Item

#: A focus stop: (an item's key, or ``("w", where)`` for a window's "more" row; the fold).
Stop = tuple[Hashable, int]


def window_row(where: str) -> Stop:
    """The stop of the window's "more" row ``where`` ("before" or "after")."""
    return (("w", where), 0)


def with_offsets(strip: Strip, line: int, prefix: int) -> Strip:
    """``strip`` with each cell's place in the line's text in its style's meta (Textual's
    selection reads it): the first ``prefix`` characters (border, padding) are not text and
    count as its start."""
    segments = []
    x = -prefix
    for text, style, control in strip:
        meta = Style.from_meta({"offset": (max(0, x), line)})
        segments.append(Segment(text, style + meta if style else meta, control))
        x += len(text)
    return Strip(segments, strip.cell_length)


def restyled(strip: Strip, start: int, end: int, style: Style) -> Strip:
    """``strip`` with ``style`` over its characters ``start`` to ``end`` (the selection's look)."""
    segments = []
    at = 0
    for segment in strip:
        text, own, control = segment
        lo, hi = max(start, at), min(end, at + len(text))
        if control or lo >= hi:
            segments.append(segment)
        else:
            if lo > at:
                segments.append(Segment(text[: lo - at], own))
            segments.append(Segment(text[lo - at : hi - at], (own or Style()) + style))
            if hi < at + len(text):
                segments.append(Segment(text[hi - at :], own))
        at += len(text)
    return Strip(segments, strip.cell_length)


class Stops:
    """Focus, hover and selection over the view's lines; `LinesTranscript` provides the rest."""

    if TYPE_CHECKING:
        items: list[Item]
        start: int
        end: int
        scroll_y: float
        focused_fold: Stop | None
        current_id: int | None
        _growing: bool
        mouse_hover: bool
        _drawn_cursor: int | None
        _selectable_cache: dict[int, tuple[Strip, int, Strip]]
        hovered: Stop | None
        _starts: list[int]
        _rendered: list[Rendered]
        _lines: list[Strip]
        _prefixes: list[int]
        _revealed: dict[Hashable, Any]

        @property
        def screen(self) -> Screen[Any]: ...
        @property
        def scrollable_content_region(self) -> Any: ...
        @property
        def text_selection(self) -> Selection | None: ...
        def _item_key(self, item: Item) -> Hashable: ...
        def _rerender(self, index: int) -> None: ...
        def _redraw_window(self) -> None: ...
        def _repaint_lines(self, first: int = 0) -> None: ...
        def _recolour(self, message_id: int | None) -> None: ...
        def _set_current(self, message_id: int | None) -> None: ...
        def set_class(self, add: bool, *class_names: str, update: bool = True) -> Any: ...
        def scroll_to(self, *args: Any, **kwargs: Any) -> Any: ...
        def refresh(self, *args: Any, **kwargs: Any) -> Any: ...
        def grow(self, where: str) -> None: ...
        def toggle_fold(self, index: int, fold: int) -> None: ...
        def item_at(self, line: int) -> int | None: ...

    # ------------------------------------------------------------------ where the stops are
    def _stop_lines(self) -> list[tuple[int, Stop]]:
        """Every stop of the window with its first line, top first."""
        stops: list[tuple[int, Stop]] = []
        if self.start > 0 and self._starts and self._starts[0] > 0:
            stops.append((0, window_row("before")))
        for k, rendered in enumerate(self._rendered):
            key = self._item_key(self.items[self.start + k])
            for y, fold in enumerate(rendered.titles):
                if fold is not None and (y == 0 or rendered.titles[y - 1] != fold):
                    stops.append((self._starts[k] + y, (key, fold)))
        if self.end < len(self.items) and self._starts:
            stops.append((self._starts[-1], window_row("after")))
        return stops

    def stop_at(self, line: int) -> Stop | None:
        """The stop drawn at virtual line ``line`` (a "more" row with the blank line under it, a
        title on every line it wraps to), if any."""
        if self.start > 0 and self._starts and line < self._starts[0]:
            return window_row("before")
        if self.end < len(self.items) and self._starts and line >= self._starts[-1]:
            return window_row("after")
        index = self.item_at(line)
        if index is None:
            return None
        fold = self._rendered[index - self.start].titles[line - self._starts[index - self.start]]
        return None if fold is None else (self._item_key(self.items[index]), fold)

    def _index_of_key(self, key: Hashable) -> int | None:
        for k, item in enumerate(self.items[self.start : self.end]):
            if self._item_key(item) == key:
                return self.start + k
        return None

    def _focused_place(self) -> tuple[int, int] | None:
        """(item index, fold) of the focused fold (or "more tool calls" row) while it is in the
        window; None for a window row."""
        if self.focused_fold is None:
            return None
        index = self._index_of_key(self.focused_fold[0])
        return None if index is None else (index, self.focused_fold[1])

    def _redraw_stop(self, stop: Stop | None) -> None:
        if stop is None:
            return
        if stop in (window_row("before"), window_row("after")):
            self._redraw_window()
            return
        index = self._index_of_key(stop[0])
        if index is not None:
            self._rerender(index)

    # ------------------------------------------------------------------ focus
    def focus_stop(self, stop: Stop | None) -> None:
        """Give the focus to ``stop``, or take it from the one that has it; a fold's message
        becomes the current one (as a focused `Fold` names its message)."""
        before = self.focused_fold
        self.focused_fold = stop
        self.set_class(stop is not None, "-fold-focused")
        for changed in {before, stop}:
            self._redraw_stop(changed)
        self._recolour(self._drawn_cursor)  # (its look follows whether a fold has the focus)
        place = self._focused_place()
        if place is not None:
            item = self.items[place[0]]
            if isinstance(item, MessageView):
                self._set_current(item.id)

    def _focus_fold(self, place: tuple[int, int] | None) -> None:
        """Focus fold ``place`` (item index, fold), or none."""
        self.focus_stop(None if place is None else (self._item_key(self.items[place[0]]), place[1]))

    def action_focus_fold(self, step: int) -> None:
        """Tab / shift+Tab: the next / previous stop in the window takes the focus (as Tab went
        from fold to fold and to the "more" buttons); past the last (or first) the focus leaves
        the transcript."""
        stops = self._stop_lines()
        lines = [line for line, stop in stops if stop == self.focused_fold]
        if lines:
            ahead = [t for t in stops if (t[0] > lines[0] if step > 0 else t[0] < lines[0])]
        else:
            top = round(self.scroll_y)
            ahead = [t for t in stops if (t[0] >= top if step > 0 else t[0] < top)]
        if not ahead:
            self.focus_stop(None)
            if step > 0:
                self.screen.focus_next()
            else:
                self.screen.focus_previous()
            return
        line, stop = ahead[0] if step > 0 else ahead[-1]
        self.focus_stop(stop)
        self._scroll_to_line(line)

    def _scroll_to_line(self, line: int) -> None:
        """Bring the focused stop into view. The window does not grow for it at an edge (as a
        scroll there does): the "more" row Tab went to would move away from under the reader."""
        view = self.scrollable_content_region.height
        if not self.scroll_y <= line < self.scroll_y + view:
            self._growing = True
            try:
                self.scroll_to(y=max(0, line - view // 2), animate=False, immediate=True)
            finally:
                self._growing = False

    def activate(self, stop: Stop) -> None:
        """What Enter (or a click) on ``stop`` does: a "more" row grows the window, a "more tool
        calls" row reveals the next batch (the focus then on the first revealed call once none
        are left, as the row goes), a fold opens or closes."""
        if stop in (window_row("before"), window_row("after")):
            where = stop[0][1]  # type: ignore[index]
            self.grow(where)
            if self.focused_fold == stop and stop not in {s for _, s in self._stop_lines()}:
                self.focus_stop(None)  # (the row went: the window holds every item that way)
            return
        index = self._index_of_key(stop[0])
        if index is None:
            return
        if stop[1] != MORE_CALLS:
            self.toggle_fold(index, stop[1])
            return
        folds = max((f for f in self._rendered[index - self.start].titles if f is not None), default=-1)
        self.toggle_fold(index, MORE_CALLS)
        if self.focused_fold == stop and MORE_CALLS not in self._rendered[index - self.start].titles:
            self.focus_stop((stop[0], folds + 1))  # the first revealed call

    def action_toggle_current_fold(self) -> None:
        """Enter/space: the focused stop (else the current message's first fold) acts."""
        if self.focused_fold is not None:
            self.activate(self.focused_fold)
            return
        index = item_index(self.items, self.current_id)
        if index is None or not self.start <= index < self.end:
            return
        titles = self._rendered[index - self.start].titles
        fold = next((t for t in titles if t is not None), None)
        if fold is not None:
            self.activate((self._item_key(self.items[index]), fold))

    # ------------------------------------------------------------------ hover
    def on_mouse_move(self, event: events.MouseMove) -> None:
        """The stop under the mouse is drawn hovered (`Fold:hover`, `Button:hover`)."""
        offset = event.get_content_offset(self)  # type: ignore[arg-type]
        self._hover(None if offset is None else self.stop_at(round(self.scroll_y) + offset.y))

    def on_leave(self, event: events.Leave) -> None:
        self._hover(None)

    def _hover(self, stop: Stop | None) -> None:
        if stop != self.hovered:
            before, self.hovered = self.hovered, stop
            for changed in {before, stop}:
                self._redraw_stop(changed)

    # ------------------------------------------------------------------ selection
    @property
    def allow_select(self) -> bool:
        return True

    def get_selection(self, selection: Selection) -> tuple[str, str] | None:
        """The selected text: the window's lines without their border and padding cells."""
        text = "\n".join(
            strip.text[prefix:].rstrip() for strip, prefix in zip(self._lines, self._prefixes, strict=True)
        )
        return selection.extract(text), "\n"

    def selection_updated(self, selection: Selection | None) -> None:
        self._repaint_lines()

    def watch_mouse_hover(self, hovered: bool) -> None:
        self._repaint_lines()  # (the cells' offsets come or go: `_selectable`)

    def _selectable(self, strip: Strip, line: int) -> Strip:
        """Line ``line`` with its cells' offsets, the selected part in the selection's look.

        Only while the mouse is over the view (a selection starts there) or a selection is in
        it: the offsets change nothing on screen, but they keep Rich from joining equal-looking
        cells when a screenshot is exported, so every snapshot's SVG would differ."""
        selection = self.text_selection
        if selection is None and not self.mouse_hover:
            return strip
        prefix = self._prefixes[line]
        cached = self._selectable_cache.get(line)
        if cached is not None and cached[0] is strip and cached[1] == prefix:
            strip = cached[2]
        else:
            if len(self._selectable_cache) > 4096:
                self._selectable_cache.clear()
            offsets = with_offsets(strip, line, prefix)
            self._selectable_cache[line] = (strip, prefix, offsets)
            strip = offsets
        span = None if selection is None else selection.get_span(line)
        if span is None:
            return strip
        start, end = span
        stop = len(strip.text) if end == -1 else prefix + end
        look = self.screen.get_component_rich_style("screen--selection")
        return restyled(strip, prefix + start, stop, look)
