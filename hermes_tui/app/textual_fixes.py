"""Fixes for two costs of Textual 8.2 while the browser follows a writer.

**A removal laid the screen out twice.** `App._prune` returns an `AwaitRemove` and also queues
it (`call_next`), so when the caller awaits it too its completion runs twice; each run asks the
parent for a layout of the whole screen, and the second came after the frame that had already
placed the removal: one more layout (~18 ms on a 2-core VM) each time the followed transcript
dropped its oldest messages, most of the frames still being drawn when the writer's next append
came that were not the append's own. `_once` runs a removal's completion once.

**Strips kept alive by themselves.** Two of Textual's strip caches keep a strip alive by
itself; this stops them doing that.

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

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from rich.style import Style
from textual.await_remove import AwaitRemove
from textual.strip import Strip

_divide = Strip.divide
_crop_extend = Strip.crop_extend
_await_remove_init = AwaitRemove.__init__


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


def _once(callback: Callable[[], Any]) -> Callable[[], Any]:
    """``callback`` on its first call only (a removal's completion: after its tasks are done,
    running it again has nothing left to do but ask for another layout)."""
    done = False

    def run() -> Any:
        nonlocal done
        if done:
            return None
        done = True
        return callback()

    return run


def _await_remove_once(
    self: AwaitRemove, tasks: list[Any], post_remove: Callable[[], Any] | None = None
) -> None:
    _await_remove_init(self, tasks, _once(post_remove) if post_remove is not None else None)


def install() -> None:
    """Replace the methods (the results are the ones Textual's give, the removal's completion
    runs once)."""
    Strip.divide = _divide_no_self_cycle  # type: ignore[method-assign]
    Strip.crop_extend = _crop_extend_no_self_cycle  # type: ignore[method-assign]
    AwaitRemove.__init__ = _await_remove_once  # type: ignore[method-assign]
