"""HelpScreen: every key binding of the app, the main screen, its panes and dialogs, in one table.

Built from the live binding maps (not a hand-written list) so it cannot drift from the code;
the dialogs' keys are read from their classes. Under the table: the list marks and, in plain
words, which index answered a search (the route the search pane shows).
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

from hermes_tui.app.render import EDGE_LABELS, EDGE_MARKS, FLAG_MARKS

LEGEND = (
    "List marks: "
    + ", ".join(f"{mark} = {EDGE_LABELS[kind]}" for kind, mark in EDGE_MARKS.items())
    + ", + = has children; before the title: "
    + ", ".join(f"{mark} {word}" for _key, mark, word in FLAG_MARKS)
    + " (archived and hidden sessions are listed by the views of A and the filter bar)."
    " Lineage: ★ the live tip, ◀ the selected session."
)


ROUTES_HELP = (
    "Search routes (named under the search box): word index = whole words and prefixes (word*), "
    "the fastest; CJK index = Chinese, Japanese and Korean text by character pairs; substring "
    "index = runs of 3+ characters anywhere, e.g. a word glued to CJK text; CJK side index = "
    "short CJK queries answered from a separate cache file (your database is not changed; "
    "while it is first built it answers for the messages it holds, and the newer ones are "
    "scanned); substring scan = every message is read (slower on big stores; used while an "
    "index is missing)."
)

_KEY_NAMES = {
    "slash": "/",
    "question_mark": "?",
    "asterisk": "*",
    "escape": "esc",
    "less_than_sign": "<",
    "greater_than_sign": ">",
    "equals_sign": "=",
}


def key_label(keys: str) -> str:
    """Textual key names as a person types them: ``slash,question_mark`` → ``/, ?``."""
    return ", ".join(_KEY_NAMES.get(k.strip(), k.strip()) for k in keys.split(","))


def dialog_sections() -> list[tuple[str, list[Binding]]]:
    """The keys of every action dialog, from their classes' BINDINGS."""
    from hermes_tui.app.screens.delete import DeleteDialog
    from hermes_tui.app.screens.export import ExportDialog
    from hermes_tui.app.screens.prune import PruneDialog
    from hermes_tui.app.screens.rename import RenameDialog

    return [
        (name, [b for b in cls.BINDINGS if isinstance(b, Binding)])
        for name, cls in (
            ("rename dialog", RenameDialog),
            ("delete dialog", DeleteDialog),
            ("prune dialog", PruneDialog),
            ("export dialog", ExportDialog),
        )
    ]


def binding_rows(sections: Iterable[tuple[str, Iterable[Binding]]]) -> list[tuple[str, str, str]]:
    """(section, keys, description) for every binding that has a description; the keys of one
    action make one row (a binding map holds ``<,ctrl+left`` as two bindings)."""
    rows: list[tuple[str, str, str]] = []
    for section, bindings in sections:
        keys: dict[str, list[str]] = {}
        described: dict[str, str] = {}
        for b in bindings:
            if not b.description:
                continue
            described.setdefault(b.action, b.description)
            labels = keys.setdefault(b.action, [])
            labels.extend(k for k in key_label(b.key).split(", ") if k not in labels)
        rows.extend((section, ", ".join(keys[action]), desc) for action, desc in described.items())
    return rows


class HelpScreen(ModalScreen[None]):
    """Modal list of bindings; any of Esc, q, ? closes it."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,question_mark", "dismiss", "Close help"),
    ]

    def __init__(self, sections: list[tuple[str, list[Binding]]]) -> None:
        super().__init__()
        known = {name for name, _b in sections}
        self.sections = sections + [s for s in dialog_sections() if s[0] not in known]

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
            yield Static(Text(ROUTES_HELP), id="help-routes")

    async def action_dismiss(self, result: None = None) -> None:
        self.dismiss(None)
