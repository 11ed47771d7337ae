"""FindBar: the one-line find box under the transcript (ctrl+f, or `/` in the transcript).

It only edits and shows: every keystroke hands the query to its transcript (`LinesTranscript`), which scans
its message records (all of them, not only the mounted window) off the event loop, moves the
window to the hit and sends the "i/N" count back here. Enter / shift+Enter step to the next /
previous match, Esc closes the bar and clears the highlight.
"""

from __future__ import annotations

from typing import ClassVar, Protocol

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.widgets import Input, Static

from hermes_tui.safe_text import one_line


class Searched(Protocol):
    """What the bar drives: the transcript (`LinesTranscript`) it is mounted beside (not imported: it
    imports this module)."""

    def find(self, query: str) -> None: ...

    async def step_find(self, delta: int) -> None: ...

    async def close_find(self) -> None: ...


class FindBar(Horizontal):
    """The find box and its match count, mounted beside the transcript it searches."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close find"),
        Binding("shift+enter", "step(-1)", "Previous match"),
        Binding("down", "step(1)", "Next match", show=False),
        Binding("up", "step(-1)", "Previous match", show=False),
    ]

    def __init__(self, transcript: Searched, *, id: str | None = None) -> None:  # noqa: A002
        super().__init__(id=id, classes="find-bar")
        self.transcript = transcript

    def compose(self) -> ComposeResult:
        yield Static(Text("Find:"), classes="find-label")
        yield Input(placeholder="text in this transcript…", id="find-input", compact=True)
        yield Static(Text(""), id="find-count")

    @property
    def input(self) -> Input:
        """The find box."""
        return self.query_one("#find-input", Input)

    @property
    def count_text(self) -> str:
        """What the count label shows ("3/17", "no match", "…")."""
        return str(self.query_one("#find-count", Static).render())

    def show_count(self, text: str) -> None:
        """Show the match count (our own text, made inert and kept to one line anyway)."""
        self.query_one("#find-count", Static).update(Text(one_line(text, 40)))

    @on(Input.Changed, "#find-input")
    def _changed(self, event: Input.Changed) -> None:
        event.stop()
        self.transcript.find(event.value)

    @on(Input.Submitted, "#find-input")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_step(1)

    def action_step(self, delta: int) -> None:
        """Next (+1) or previous (-1) match, wrapping around."""
        self.call_later(self.transcript.step_find, delta)

    def action_close(self) -> None:
        """Esc: hide the bar, clear the highlight, give the focus back to the transcript."""
        self.call_later(self.transcript.close_find)
