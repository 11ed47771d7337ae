"""Everything of the live view that reaches into Textual's internals, off by default.

While the browser follows a writer, some of the garbage Textual leaves for a full collection is
avoidable: `Strip.divide` and `Strip.crop_extend` cache their result in the strip, and when that
result is the strip itself (a cut at its own length, nothing cropped) the strip becomes its own
reference cycle; an unmounted widget keeps the lines its styles cache drew until its own cycle is
collected. `install()` stops both (same results, freed by reference counting) so full collections
find less. It relies on Textual's internals (`Strip.divide`'s and `Strip.crop_extend`'s caching,
`Widget._styles_cache`), so it is opt-in (`HERMES_TUI_TEXTUAL_TUNING=1` in the environment) and
`REQUIRED` names what it needs: `install()` refuses, loudly, when a Textual release renamed any
of it, and `tests/app/test_textual_private.py` fails.

Measured (bench/results/live-public-1m-20261205.json, phases `x`): see docs/performance.md.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence

from rich.style import Style
from textual.strip import Strip
from textual.widget import Widget

#: The environment variable that turns the tuning on (`1`).
ENV = "HERMES_TUI_TEXTUAL_TUNING"
#: (owner, attribute) pairs `install()` relies on, checked before anything is replaced.
REQUIRED: tuple[tuple[type, str], ...] = ((Strip, "divide"), (Strip, "crop_extend"))
_installed = False
_divide = Strip.divide
_crop_extend = Strip.crop_extend


class TextualChanged(RuntimeError):
    """A Textual release no longer has what `install()` relies on."""


def wanted() -> bool:
    """The tuning was asked for (`HERMES_TUI_TEXTUAL_TUNING=1`)."""
    return os.environ.get(ENV, "") == "1"


def missing() -> list[str]:
    """What `install()` needs and this Textual lacks (empty: all there)."""
    gone = [f"{owner.__name__}.{name}" for owner, name in REQUIRED if not callable(getattr(owner, name, 0))]
    try:
        Widget()._styles_cache.clear()
    except AttributeError:
        gone.append("Widget._styles_cache.clear")
    return gone


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


def forget_lines(widget: Widget) -> None:
    """Drop the lines ``widget``'s styles cache drew (as it unmounts), when installed."""
    if _installed:
        widget._styles_cache.clear()
