"""Registry of session actions bound on the main screen (rename, prune, delete, export, stats).

The actions issue adds entries here instead of editing MainScreen: each `ActionSpec` becomes a
key binding, listed in the footer/help and offered by the command palette, whose handler
receives the MainScreen (with `selected_session_id`, `selected_row`, `db`, and
`post_message(SessionsChanged(...))`). Nothing registers itself on import: the app calls
`hermes_tui.app.session_actions.register_actions()` before it builds the main screen.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hermes_tui.app.screens.main import MainScreen


@dataclass(frozen=True)
class ActionSpec:
    """One key-bound action: ``handler(screen)`` runs on the event loop (it starts workers).

    ``palette`` is the command palette's wording (``description`` when empty) and ``help``
    its one-line explanation there.
    """

    name: str
    key: str
    description: str
    handler: Callable[[MainScreen], Any]
    show: bool = True
    palette: str = ""
    help: str = ""


ACTIONS: list[ActionSpec] = []


def register(spec: ActionSpec) -> ActionSpec:
    """Add (or replace, by name) an action; call before the app is constructed."""
    ACTIONS[:] = [a for a in ACTIONS if a.name != spec.name]
    ACTIONS.append(spec)
    return spec


def find(name: str) -> ActionSpec | None:
    """The registered action called ``name``."""
    return next((a for a in ACTIONS if a.name == name), None)
