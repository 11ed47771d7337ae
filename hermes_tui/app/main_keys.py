"""The main screen's keys: the screen's own, the keys each pane shows in the footer, and the
session actions' keys, all declared as class `BINDINGS` (`bindings.with_keys`).

Every key works from every pane through the screen's (hidden) bindings; each pane shows the
keys that apply to it (as lazygit and k9s do), so Textual's stock Footer follows the focus. The
session actions are registered at run time (`actions.ACTIONS`), so the classes that bind them
are made once they are (`main_screen_keys`, `pane_classes`).
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.binding import Binding, BindingType
from textual.screen import Screen

from hermes_tui.app import actions
from hermes_tui.app.bindings import FitsFooter, declared_bindings, fitted, with_keys
from hermes_tui.app.controllers.panes import footer_keys
from hermes_tui.app.widgets.lineage import LineageTree
from hermes_tui.app.widgets.search import SearchPane
from hermes_tui.app.widgets.session_list import SessionList
from hermes_tui.app.widgets.transcript_pane import Transcript

#: The screen's keys: every one works from every pane; none shows in the footer from here.
SCREEN_KEYS: list[BindingType] = [
    # A priority binding: checked when the key arrives, before it is queued at the focused
    # pane. Otherwise keys typed in the same read as `/` were already queued at the list and
    # its `q` reached the app (quit) after `/` had moved the focus. Off in text boxes.
    Binding("slash", "search", "Search", show=False, priority=True),
    Binding("escape", "back", "Back", show=False),
    Binding("n", "next_hit", "Next hit", show=False),
    Binding("N", "prev_hit", "Prev hit", show=False),
    Binding("c", "chain", "Chain", show=False),
    Binding("i", "toggle_inactive", "Rewound", show=False),
    Binding("f", "filters", "Filters", show=False),
    Binding("F", "clear_filters", "Clear filters", show=False),
    Binding("o", "cycle_order", "Order", show=False),
    Binding("z", "zoom", "Zoom", show=False),
    Binding("s", "focus_sessions", "Sessions", show=False),
    Binding("t", "focus_transcript", "Transcript", show=False),
    Binding("l", "focus_lineage", "Lineage", show=False),
    Binding("ctrl+r", "reload", "Reload", show=False),
    Binding("a", "active_now", "Active now", show=False),
    Binding("A", "toggle_archived", "Archived sessions ↔ Hermes' list", show=False),
    Binding("L", "live_tip", "Live tip", show=False),
    Binding("G", "jump_new", "Newest messages", show=False),
    # Find in the transcript: priority, so it works from every pane and box.
    Binding(
        "ctrl+f",
        "find",
        "Find in the transcript (n/N, Enter/shift+Enter: next/previous)",
        show=False,
        priority=True,
    ),
    Binding("d", "open_demo", "Open demo"),  # shown only when no database is open
    # Panes, remembered in the settings file.
    Binding("less_than_sign,ctrl+left", "resize_list(-1)", "Narrower session list", show=False),
    Binding("greater_than_sign,ctrl+right", "resize_list(1)", "Wider session list", show=False),
    Binding("equals_sign", "resize_list(0)", "Session list at its automatic width", show=False),
    # ctrl+b is tmux's prefix (tmux never passes it on): ctrl+s (s for sessions, as `s`
    # focuses them) works everywhere.
    Binding("ctrl+b,ctrl+s", "toggle_pane('list')", "Show/hide the session list", show=False),
    Binding("ctrl+l", "toggle_pane('lineage')", "Show/hide the lineage", show=False),
    Binding("ctrl+t", "toggle_pane('transcript')", "Show/hide the transcript", show=False),
    Binding("p", "toggle_profiles", "Profiles: current ↔ all", show=False),
]

#: What the footer shows for each focused pane; each acts like the screen's own (hidden) binding.
PANE_KEYS: dict[str, tuple[tuple[str, str, str], ...]] = {
    "#sessions": (
        ("slash", "screen.search", "Search"),
        ("f", "screen.filters", "Filters"),
        ("F", "screen.clear_filters", "Clear filters"),
        ("a", "screen.active_now", "Active now"),
        ("A", "screen.toggle_archived", "Archived"),
    ),
    "#transcript": (
        ("x", "toggle_folds", "Folds"),
        ("n", "screen.next_hit", "Next hit"),
        ("N", "screen.prev_hit", "Prev hit"),
        ("c", "screen.chain", "Chain"),
        ("i", "screen.toggle_inactive", "Rewound"),
        ("L", "screen.live_tip", "Live tip"),
        ("slash", "screen.search", "Find"),  # `/` in the transcript finds in it
        ("z", "screen.zoom", "Zoom"),
        ("ctrl+s", "screen.toggle_pane('list')", "List"),
    ),
    "#lineage": (
        ("enter", "jump", "Open session"),
        ("L", "screen.live_tip", "Live tip"),
        ("slash", "screen.search", "Search"),
        ("z", "screen.zoom", "Zoom"),
        ("ctrl+s", "screen.toggle_pane('list')", "List"),
    ),
    "#search": (("escape", "screen.back", "Back"),),
}
#: Registered session actions (`actions.py`) the list pane's footer shows (of two sharing a key,
#: the one that `applies` to the cursor row; under a dialog, where the footer checks nothing,
#: the one bound last: archive, pin).
LIST_ACTIONS = ("rename", "delete", "unarchive", "archive", "unpin", "pin")
#: The list pane's keys that show only when they fit the footer (`panes.footer_keys`).
FITTED = frozenset(footer_keys(0, "default", False))


class ListPane(FitsFooter, SessionList):
    """The session list, with its optional footer keys shown as `Panes.fit_footer` says."""


@dataclass(frozen=True)
class PaneClasses:
    """The panes' classes, each with the keys it shows (`pane_classes`)."""

    sessions: type[ListPane]
    search: type[SearchPane]
    lineage: type[LineageTree]
    transcript: type[Transcript]


def main_screen_keys() -> list[Binding]:
    """A key for every registered session action (hidden: the panes show theirs)."""
    return [
        Binding(spec.key, f"run_action({spec.name!r})", spec.description, show=False)
        for spec in actions.ACTIONS
    ]


def pane_keys(selector: str) -> list[Binding]:
    """The keys ``selector``'s pane shows, ahead of its own bindings of those keys. A key the
    screen checks first (priority) is priority on the pane too, or the screen's hidden binding
    replaces the pane's in the footer. Of two actions sharing a key the one listed last comes
    first (it is the one a dialog's footer, which checks nothing, shows: archive, pin)."""
    screen = declared_bindings_of_screen()
    keys = [
        Binding(key, action, description, priority=any(b.priority for b in screen.get(key, [])))
        for key, action, description in PANE_KEYS[selector]
    ]
    if selector == "#sessions":
        for name in LIST_ACTIONS:
            spec = actions.find(name)
            if spec is not None:
                keys.append(Binding(spec.key, f"screen.run_action({name!r})", spec.description))
        keys += [b for group in declared_bindings(SessionList).values() for b in group if b.action in FITTED]
    groups: dict[str, list[Binding]] = {}
    for binding in keys:
        shown = fitted(binding) if binding.action in FITTED else [binding]
        groups[binding.key] = [*shown, *groups.get(binding.key, [])]
    return [b for group in groups.values() for b in group]


def declared_bindings_of_screen() -> dict[str, list[Binding]]:
    """The main screen's keys by key (Textual's `Screen` keys, then `SCREEN_KEYS`)."""
    table: dict[str, list[Binding]] = {}
    for binding in Binding.make_bindings(SCREEN_KEYS):
        table.setdefault(binding.key, []).append(binding)
    return {**declared_bindings(Screen), **table}


def pane_classes() -> PaneClasses:
    """Each pane's class with the keys it shows (`pane_keys`); made once per set of actions."""
    return PaneClasses(
        sessions=with_keys(ListPane, pane_keys("#sessions")),
        search=with_keys(SearchPane, pane_keys("#search")),
        lineage=with_keys(LineageTree, pane_keys("#lineage")),
        transcript=with_keys(Transcript, pane_keys("#transcript")),
    )
