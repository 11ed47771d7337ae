"""The pieces of a message the transcript draws that are more than its record: the search
terms marked in a body (`MarkedRender`, `_highlighted`), the "more tool calls" row's words and a
chain divider's line. `transcript_lines_items` draws a message from them.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.measure import Measurement
from rich.segment import Segment
from rich.text import Text

from hermes_tui.app.render import highlight_terms, plain_count
from hermes_tui.app.widgets.transcript_items import Divider
from hermes_tui.safe_text import one_line


def _highlighted(text: Text, terms: Sequence[str]) -> Text:
    """A copy of ``text`` with the search terms highlighted (the shared original is untouched)."""
    if not terms:
        return text
    copy = text.copy()
    highlight_terms(copy, terms)
    return copy


class MarkedRender:
    """A renderable (a message's Markdown body) with the search terms marked in the lines it
    renders to, so the hit keeps its Markdown: it used to be shown as its literal source, the
    one way terms could be marked in a `Text`. A term cut by a line wrap is not marked."""

    def __init__(self, renderable: RenderableType, terms: Sequence[str]) -> None:
        self.renderable = renderable
        self.terms = tuple(terms)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        natural = options.update(height=None)
        for line in console.render_lines(self.renderable, natural, pad=False):
            text = Text(end="")
            for segment in line:
                if not segment.control:
                    text.append(segment.text, segment.style)
            highlight_terms(text, self.terms)
            yield from text.render(console)
            yield Segment.line()

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement.get(console, options, self.renderable)


def _contains(text: Text, terms: Sequence[str]) -> bool:
    plain = text.plain.lower()
    return any(term and term.lower() in plain for term in terms)


def more_calls_label(remaining: int) -> str:
    """The title of the row standing for a message's not-yet-shown tool calls."""
    noun = "tool call" if remaining == 1 else "tool calls"
    return f"… and {remaining:,} more {noun} (press x / Enter to show more)"


def divider_text(divider: Divider) -> Text:
    """The one line between two segments of a compression chain (inert: store text)."""
    kind = one_line(divider.edge_kind, 20) or "root"
    label = one_line(divider.title) or one_line(divider.session_id)
    return Text(
        f"── segment {divider.index}/{divider.count} · {label} · {kind} · "
        f"{plain_count(divider.message_count)} msgs ──",
        no_wrap=True,
        overflow="ellipsis",
    )
