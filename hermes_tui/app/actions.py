"""Registry of the key-bound actions of the main screen, and the session an action applies to.

Each `ActionSpec` becomes a key binding on the main screen, listed in help and offered by the
command palette; its handler receives the MainScreen (with `db`, `session_list`,
`selected_session_id`, `session_context` and `post_message(SessionsChanged(...))`), so a new
action needs no edit of MainScreen. This module does not import the screen (the screen imports
it): the helpers below read the screen through `ActionTarget`. Nothing registers itself on
import: the app calls `register_actions()` and `register_handoff_actions()` (`session_actions`,
`handoff_actions`) before it builds the main screen.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from hermes_tui.app.screens.dialog_base import READ_ONLY_MESSAGE, error_text

if TYPE_CHECKING:
    from textual.screen import Screen
    from textual.widget import Widget

    from hermes_tui.app.session_context import Notify
    from hermes_tui.app.widgets.session_list import SessionList
    from hermes_tui.state import SessionDB


T = TypeVar("T")


class ActionTarget(Protocol):
    """What finding an action's session reads of the main screen."""

    @property
    def session_list(self) -> SessionList: ...

    @property
    def focused(self) -> Widget | None: ...

    @property
    def selected_session_id(self) -> str | None: ...

    @property
    def db(self) -> SessionDB | None: ...

    @property
    def notify(self) -> Notify: ...


@dataclass(frozen=True)
class ActionSpec:
    """One key-bound action: ``handler(screen)`` runs on the event loop (it starts workers).

    ``palette`` is the command palette's wording (``description`` when empty) and ``help``
    its one-line explanation there. ``applies`` (on the event loop, memory only) says whether
    the key does this action now: two actions can share a key (archive / unarchive), the
    footer shows the one that applies and the key runs it; the palette offers both.
    """

    name: str
    key: str
    description: str
    handler: Callable[[Any], Any]  # called with the MainScreen
    show: bool = True
    palette: str = ""
    help: str = ""
    applies: Callable[[Any], bool] | None = None  # called with the MainScreen


ACTIONS: list[ActionSpec] = []


def register(spec: ActionSpec) -> ActionSpec:
    """Add (or replace, by name) an action; call before the app is constructed."""
    ACTIONS[:] = [a for a in ACTIONS if a.name != spec.name]
    ACTIONS.append(spec)
    return spec


def register_all(specs: Iterable[ActionSpec]) -> None:
    """`register` each of `specs` (idempotent: a spec replaces its namesake)."""
    for spec in specs:
        register(spec)


def find(name: str) -> ActionSpec | None:
    """The registered action called ``name``."""
    return next((a for a in ACTIONS if a.name == name), None)


def target_session(screen: ActionTarget) -> str | None:
    """The one session an action applies to: exactly the row the user has selected.

    With the list focused it is the row under the cursor. The transcript follows the cursor
    only after a debounce and a load, so `selected_session_id` (transcript first) could still
    name the previous row: D pressed right after a cursor move deleted the wrong session.
    From the transcript, lineage or search panes it is the session the transcript shows.
    """
    sessions = screen.session_list
    if screen.focused is sessions:
        return sessions.selected_id
    return screen.selected_session_id


def need_session(screen: ActionTarget) -> str | None:
    """`target_session`, with a warning toast when there is none."""
    sid = target_session(screen)
    if sid is None:
        screen.notify("No session is selected.", severity="warning")
    return sid


def chosen_sessions(screen: ActionTarget, what: str, title: str) -> tuple[list[str], bool] | None:
    """(ids, from the selection) that action `what` acts on: the list's selection, else the
    session selected (`need_session`); None, after saying why, when there is none or the
    selection spans several profiles (a write acts on one store)."""
    sessions = screen.session_list
    if len(sessions.selection_profiles) > 1:
        screen.notify(
            f"The selection spans several profiles: {what} acts on one profile's store at a time "
            "(p narrows the list to one profile).",
            title=title,
            severity="warning",
            markup=False,
        )
        return None
    selected = sessions.selected_ids
    if selected:
        return selected, True
    sid = need_session(screen)
    return ([sid], False) if sid is not None else None


def run_store_call(
    screen: Screen[Any],
    call: Callable[[], T],
    done: Callable[[T | None, str | None], None],
    group: str,
    description: str,
) -> None:
    """Run a store `call` in a thread worker (no SQL on the event loop); on the loop after it,
    `done(result, None)`, or `done(None, error)` with the error on one line."""
    app = screen.app

    def run() -> None:
        try:
            result = call()
        except Exception as exc:
            app.call_from_thread(done, None, error_text(exc))
            return
        app.call_from_thread(done, result, None)

    screen.run_worker(run, thread=True, exit_on_error=False, group=group, description=description)


def refuse_if_read_only(screen: ActionTarget, what: str) -> bool:
    """Notify and return True when the open store is read-only (nothing is written)."""
    db = screen.db
    if db is not None and db.read_only:
        screen.notify(
            READ_ONLY_MESSAGE.format(what=what), title="Read-only", severity="warning", markup=False
        )
        return True
    return False
