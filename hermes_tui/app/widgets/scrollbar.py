"""A vertical scrollbar that paints its lines in one pass, and only when they change.

Why: while the browser follows a writer, every append moves the transcript's thumb, and
Textual repaints the bar line by line through its general styling path (background, tint,
borders, padding, opacity for each of ~45 one-cell lines): 2.4 ms of a ~16 ms append, the
largest single cost left. A scrollbar has no border, padding or text: its lines are the bar's
own segments over the widget's base style, which is what Textual's path produces for it
(`tests/app/test_scrollbar.py` compares the two in every theme, hovered, grabbed and at many
positions). Anything else (a horizontal bar) takes Textual's path.

And Textual asks every vertical bar of a scrolling widget to repaint whenever the screen is laid
out, changed or not (`_scroll_update`); the repaint comes a frame later, so each live append
drew a second frame for the bars alone. A refresh that would paint the same lines is dropped.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.style import Style
from textual.geometry import Region
from textual.scrollbar import ScrollBar, ScrollBarRender
from textual.strip import Strip
from textual.widget import Widget

if TYPE_CHECKING:
    from typing import Self


class PaintedScrollBar(ScrollBar):
    """Textual's `ScrollBar`, its vertical lines painted directly and kept until they change."""

    def __init__(self, vertical: bool = True, name: str | None = None, *, thickness: int = 1) -> None:
        super().__init__(vertical, name, thickness=thickness)
        self._painted: tuple[tuple[object, ...], list[Strip]] | None = None

    def _paint_key(self) -> tuple[tuple[object, ...], ScrollBarRender, Style] | None:
        """Everything the lines depend on, from what `render` returns now (its colours follow the
        theme, hover and grab), with that renderable and the base style; None: not a bar this class paints."""
        width, height = self.size
        if not self.vertical or not width or not height or self.parent is None:
            return None
        bar = self.render()
        if type(bar) is not ScrollBarRender:  # (a custom `renderer`: Textual's path)
            return None
        base = self.rich_style
        key = (width, height, bar.virtual_size, bar.window_size, bar.position, bar.thickness, bar.style, base)
        return key, bar, base

    def render_lines(self, crop: Region) -> list[Strip]:
        paint = self._paint_key()
        if paint is None:
            self._painted = None
            return super().render_lines(crop)
        key, bar, base = paint
        if self._painted is None or self._painted[0] != key:
            width, height = self.size
            console = self.app.console
            rows = console.render_lines(bar, console.options.update_dimensions(width, height), pad=False)
            self._painted = (key, [Strip(row, width).apply_style(base) for row in rows])
        return [line.crop(crop.x, crop.right) for line in self._painted[1][crop.y : crop.bottom]]

    def refresh(
        self, *regions: Region, repaint: bool = True, layout: bool = False, recompose: bool = False
    ) -> Self:
        """Drop a repaint that would paint the lines already on screen."""
        if (
            repaint
            and not (regions or layout or recompose)
            and self._painted is not None
            and self._is_mounted
            and (paint := self._paint_key()) is not None
            and paint[0] == self._painted[0]
        ):
            return self
        return super().refresh(*regions, repaint=repaint, layout=layout, recompose=recompose)

    def join_frame(self) -> bool:
        """Paint a repaint this bar asked for in the frame its screen is drawing now (called just
        before the screen renders), instead of in a frame of its own after it.

        A live append lays the screen out, and the transcript's thumb moves in that layout: its
        repaint came a frame later, ~20 ms after the append's frame, often just as the writer
        committed again (the frame on a commit is what slows an agent's append on 2 cores)."""
        if not self._repaint_required or not self._is_mounted or not self.display:
            return False
        compositor = self.screen._compositor
        if self not in compositor.visible_widgets:
            return False
        compositor.update_widgets({self})
        self._repaint_required = False  # (its `_check_refresh` would post it for the next frame)
        return True


def painted_vertical_scrollbar(widget: Widget) -> ScrollBar:
    """Textual's `Widget.vertical_scrollbar` with a `PaintedScrollBar`: a scrolling widget's
    `vertical_scrollbar` property returns this (the transcript's and the session list's)."""
    bar = widget._vertical_scrollbar
    if bar is None:
        bar = widget._vertical_scrollbar = PaintedScrollBar(
            vertical=True, name="vertical", thickness=widget.scrollbar_size_vertical
        )
        bar.display = False
        widget.app._start_widget(widget, bar)
    return bar
