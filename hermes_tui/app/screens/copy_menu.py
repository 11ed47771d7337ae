"""CopyMenu: after `y`, one more key says what to copy (as in vim's "yank" + a motion)."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static

#: (key, what, the toast's noun) in the menu's order.
CHOICES: tuple[tuple[str, str, str], ...] = (
    ("i", "session id", "the session id"),
    ("r", "resume command", "the resume command"),
    ("m", "current message (its tool calls if it has no text)", "the message"),
    ("c", "code block of the current message", "the code block"),
    ("t", "whole transcript as Markdown", "the transcript"),
)


class CopyMenu(ModalScreen[str | None]):
    """Returns the chosen key (``i``/``r``/``m``/``c``/``t``), or None on Esc."""

    DEFAULT_CSS = """
    CopyMenu {
        align: center middle;
        background: $background 60%;
    }
    CopyMenu #dialog {
        width: 52;
        height: auto;
        border: round $accent;
        border-title-color: $accent;
        background: $surface;
        padding: 0 1;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        *(Binding(key, f"choose({key!r})", f"Copy {what}", show=False) for key, what, _noun in CHOICES),
        Binding("escape,q,y", "choose(None)", "Copy: cancel", show=False),
    ]

    def compose(self) -> ComposeResult:
        body = Text()
        for key, what, _noun in CHOICES:
            body.append(f" {key} ", style="bold reverse")
            body.append(f"  {what}\n")
        body.append(" esc ", style="bold reverse")
        body.append("  cancel")
        with Vertical(id="dialog") as dialog:
            dialog.border_title = "Copy to the clipboard"
            yield Static(body, id="copy-choices")

    def action_choose(self, key: str | None) -> None:
        self.dismiss(key)
