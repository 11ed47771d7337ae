"""HelpScreen: every key binding of the app, the main screen and its panes, in one table.

Built from the live binding maps (not a hand-written list) so it cannot drift from the code.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

LEGEND = (
    "List marks: c = compression continuation, b = branch, d = delegate, o = other child, "
    "+ = has children. Lineage: ★ the live tip, ◀ the selected session."
)


def binding_rows(sections: Iterable[tuple[str, Iterable[Binding]]]) -> list[tuple[str, str, str]]:
    """(section, keys, description) for every binding that has a description."""
    rows: list[tuple[str, str, str]] = []
    for section, bindings in sections:
        seen: set[str] = set()
        for b in bindings:
            if not b.description or b.action in seen:
                continue
            seen.add(b.action)
            keys = ", ".join(
                k.replace("slash", "/").replace("question_mark", "?").replace("asterisk", "*")
                for k in b.key.split(",")
            )
            rows.append((section, keys, b.description))
    return rows


class HelpScreen(ModalScreen[None]):
    """Modal list of bindings; any of Esc, q, ? closes it."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,question_mark", "dismiss", "Close help"),
    ]

    def __init__(self, sections: list[tuple[str, list[Binding]]]) -> None:
        super().__init__()
        self.sections = sections

    def compose(self) -> ComposeResult:
        table = Table(box=None, expand=True, show_header=True, header_style="bold")
        table.add_column("Where", no_wrap=True)
        table.add_column("Keys", no_wrap=True, style="bold")
        table.add_column("Does")
        last = None
        for section, keys, desc in binding_rows(self.sections):
            table.add_row(Text(section if section != last else ""), Text(keys), Text(desc))
            last = section
        with VerticalScroll(id="help-body") as body:
            body.border_title = "Keys"
            body.border_subtitle = "Esc closes"
            yield Static(table, id="help-table")
            yield Static(Text(LEGEND), id="help-legend")

    async def action_dismiss(self, result: None = None) -> None:
        self.dismiss(None)
