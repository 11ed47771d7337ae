"""A vertical scrollbar that paints its lines in one pass (the transcript's).

Why: while the browser follows a writer, every append moves the transcript's thumb, and
Textual repaints the bar line by line through its general styling path (background, tint,
borders, padding, opacity for each of ~45 one-cell lines): 2.4 ms of a ~16 ms append, the
largest single cost left. A scrollbar has no border, padding or text: its lines are the bar's
own segments over the widget's base style, which is what Textual's path produces for it
(`tests/app/test_scrollbar.py` compares the two in every theme, hovered, grabbed and at many
positions). Anything else (a horizontal bar) takes Textual's path.
"""

from __future__ import annotations

from textual.geometry import Region
from textual.scrollbar import ScrollBar
from textual.strip import Strip


class PaintedScrollBar(ScrollBar):
    """Textual's `ScrollBar`, its vertical lines painted directly and kept until they change."""

    def __init__(self, vertical: bool = True, name: str | None = None, *, thickness: int = 1) -> None:
        super().__init__(vertical, name, thickness=thickness)
        self._painted: tuple[tuple[object, ...], list[Strip]] | None = None

    def _lines(self) -> list[Strip]:
        width, height = self.size
        base = self.rich_style
        key = (
            width,
            height,
            self.window_virtual_size,
            self.window_size,
            self.position,
            bool(self.grabbed),
            self.mouse_over,
            base,
        )
        if self._painted is not None and self._painted[0] == key:
            return self._painted[1]
        console = self.app.console
        options = console.options.update_dimensions(width, height)
        rows = console.render_lines(self.render(), options, pad=False)
        lines = [Strip(row, width).apply_style(base) for row in rows]
        self._painted = (key, lines)
        return lines

    def render_lines(self, crop: Region) -> list[Strip]:
        width, height = self.size
        if not self.vertical or not width or not height:
            return super().render_lines(crop)
        lines = self._lines()
        return [line.crop(crop.x, crop.right) for line in lines[crop.y : crop.bottom]]
