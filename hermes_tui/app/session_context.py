"""What the screens, dialogs and actions may use of the browser, without importing it.

`BrowserApp` is the app as a screen sees it (a Protocol: `HermesApp` is one), so the main
screen and the action handlers never import `app.py`, which imports them. `SessionContext`
is what a dialog gets instead of the main screen: the stores, the clock, notifications and a
"sessions changed" callback (the main screen builds it: `MainScreen.session_context`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from textual.notifications import SeverityLevel

from hermes_tui.app.render import Clock

if TYPE_CHECKING:
    from hermes_tui.app.prefetch import OpenPrefetch
    from hermes_tui.app.settings import Settings
    from hermes_tui.state import SessionDB, SessionFilter


class BrowserApp(Protocol):
    """The app's names the screens and actions use (`hermes_tui.app.app.HermesApp`)."""

    db_path: Path
    read_only: bool
    prefetch: OpenPrefetch | None
    db: SessionDB | None
    settings: Settings
    now: Clock

    def remember(self, **changes: Any) -> None: ...

    def display_path(self, path: Path) -> str: ...

    def resume_command_text(self, session_id: str) -> str: ...

    def resume_session(self, session_id: str) -> None: ...


class Notify(Protocol):
    """`textual.dom.DOMNode.notify`'s shape (plain text: pass ``markup=False`` for store text)."""

    def __call__(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None: ...


@dataclass(frozen=True)
class SessionContext:
    """A dialog's view of the browser: everything it may touch besides its own store."""

    #: The open store of a profile (None: the one store, or the open transcript's store).
    db_for: Callable[[str | None], SessionDB | None]
    #: The clock (injected: tests fix it).
    now: Clock
    notify: Notify
    #: A write changed these sessions (maybe none named): the browser re-reads what it shows.
    sessions_changed: Callable[[tuple[str, ...]], None]
    #: How the header names a file.
    display_path: Callable[[Path], str]
    #: The list's filter and order now (an export of "the list" reads the same sessions).
    list_view: Callable[[], tuple[SessionFilter, str]]
