"""Everything of the live view that reaches into Textual's internals, in one place.

While the browser follows a writer, some of the garbage Textual leaves for a full collection is
avoidable: `Strip.divide` and `Strip.crop_extend` cache their result in the strip, and when that
result is the strip itself (a cut at its own length, nothing cropped) the strip becomes its own
reference cycle. `install()` stops it (same results, freed by reference counting) so full collections
find less: following one writer at 20 messages/s on a 1M store, 3 full collections in 40 s
instead of 5, 0.18-0.23 s of CPU in them instead of 0.50, and commit -> on screen p95 0.40 s
instead of 0.57-0.72 s (bench/results/live-public-1m-20261205.json, `x1` against `B1`). A user
feels that (each collection freezes the screen), so the app installs it unless
`HERMES_TUI_TEXTUAL_TUNING=0`.

It relies on Textual's internals (`Strip.divide`'s and `Strip.crop_extend`'s caching); Textual
is pinned exactly, `REQUIRED` and `missing()` name what it
needs, and `tests/app/test_textual_private.py` fails loudly when a Textual release changes any
of it. At run time a Textual without them gets no tuning and a warning in the log.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence

from rich.style import Style
from textual.strip import Strip

#: The environment variable that turns the tuning off (`0`).
ENV = "HERMES_TUI_TEXTUAL_TUNING"
#: (owner, attribute) pairs `install()` relies on, checked before anything is replaced.
REQUIRED: tuple[tuple[type, str], ...] = ((Strip, "divide"), (Strip, "crop_extend"))
_installed = False
_divide = Strip.divide
_crop_extend = Strip.crop_extend


class TextualChanged(RuntimeError):
    """A Textual release no longer has what `install()` relies on."""


def wanted() -> bool:
    """The tuning is wanted (always, unless `HERMES_TUI_TEXTUAL_TUNING=0`)."""
    return os.environ.get(ENV, "") != "0"


def missing() -> list[str]:
    """What `install()` needs and this Textual lacks (empty: all there)."""
    return [f"{owner.__name__}.{name}" for owner, name in REQUIRED if not callable(getattr(owner, name, 0))]


def _divide_no_self_cycle(self: Strip, cuts: Iterable[int]) -> Sequence[Strip]:
    cuts = list(cuts)
    if [cut for cut in cuts if cut <= self.cell_length] == [self.cell_length]:
        return [self]
    return _divide(self, cuts)


def _crop_extend_no_self_cycle(self: Strip, start: int, end: int, style: Style | None) -> Strip:
    if start <= 0 and end == self.cell_length:
        return self
    return _crop_extend(self, start, end, style)


def installed() -> bool:
    return _installed


def install() -> None:
    """Apply the tuning (idempotent); `TextualChanged` when this Textual lacks what it needs."""
    global _installed
    gone = missing()
    if gone:
        raise TextualChanged(f"hermes-tui's Textual tuning needs {', '.join(gone)}; unset {ENV}")
    Strip.divide = _divide_no_self_cycle  # type: ignore[method-assign]
    Strip.crop_extend = _crop_extend_no_self_cycle  # type: ignore[method-assign]
    _installed = True


def uninstall() -> None:
    """Textual's own methods back (tests)."""
    global _installed
    Strip.divide = _divide  # type: ignore[method-assign]
    Strip.crop_extend = _crop_extend  # type: ignore[method-assign]
    _installed = False
