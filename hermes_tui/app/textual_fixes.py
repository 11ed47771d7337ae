"""Two of Textual's strip caches keep a strip alive by itself; this stops them doing that.

`Strip.divide` caches its result in the strip, and when the cut is the strip's own length the
result is ``[self]``; `Strip.crop_extend` caches ``self`` when nothing is cropped or extended.
Either makes the strip a reference cycle (strip -> cache -> strip), so it and its eight caches
outlive their last use until a full collection. The compositor divides nearly every line it
paints, so while the browser follows a writer about half of all the garbage a full collection
frees was strips (4,200 strips, ~50,000 objects in 20 s), and those collections paused the screen
for 0.4-1.2 s. Returning ``self`` without caching it gives the same results with no cycle: the
strips are freed by reference counting as soon as nothing shows them.

Applied once, on import of the app (`install()` is idempotent); Textual 8.2.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rich.style import Style
from textual.strip import Strip

_divide = Strip.divide
_crop_extend = Strip.crop_extend


def _divide_no_self_cycle(self: Strip, cuts: Iterable[int]) -> Sequence[Strip]:
    cuts = list(cuts)
    length = self.cell_length
    if [cut for cut in cuts if cut <= length] == [length]:
        return [self]
    return _divide(self, cuts)


def _crop_extend_no_self_cycle(self: Strip, start: int, end: int, style: Style | None) -> Strip:
    if start <= 0 and end == self.cell_length:
        return self
    return _crop_extend(self, start, end, style)


def install() -> None:
    """Replace the two methods (the results are the ones Textual's return)."""
    Strip.divide = _divide_no_self_cycle  # type: ignore[method-assign]
    Strip.crop_extend = _crop_extend_no_self_cycle  # type: ignore[method-assign]
