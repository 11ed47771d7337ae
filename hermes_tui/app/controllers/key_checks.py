"""Which of the main screen's keys apply now (`Screen.check_action`), and when the footer must
be refreshed because that changed.

`key_allowed` decides from `KeyFacts` (what the screen shows; `KeyChecks` reads each fact from
the screen only when a check asks for it): False hides a key from the footer and disables it.
The footer recomposes on every `refresh_bindings()`, so `KeyChecks` refreshes it only when an
answer it shows changed.
"""

from __future__ import annotations

from typing import Any, Protocol, cast

from textual.screen import Screen
from textual.widgets import Input

from hermes_tui.app import actions
from hermes_tui.app.controllers.host import ScreenHost
from hermes_tui.app.widgets.lineage import LineageTree
from hermes_tui.app.widgets.search import SearchPane


class KeyFacts(Protocol):
    """What the main screen's key checks depend on."""

    @property
    def typing(self) -> bool:
        """A text box has the focus."""

    @property
    def opened(self) -> str:
        """The screen's state: "opening", "ready", "missing" or "failed"."""

    @property
    def filtered(self) -> bool:
        """Some filter narrows the list (`FilterBar.active`)."""

    @property
    def hits(self) -> bool:
        """The search pane is open with hits."""

    @property
    def live_tip(self) -> bool:
        """The open session's compression chain went on."""

    def applies(self, name: str) -> bool | None:
        """The registered action ``name`` applies to the session shown."""


def key_allowed(action: str, parameters: tuple[object, ...], state: KeyFacts) -> bool | None:
    """Whether ``action`` applies now (False: hidden from the footer and disabled)."""
    if action == "search":
        return not state.typing
    if action == "open_demo":
        return state.opened in {"missing", "failed"}
    if action == "clear_filters":
        return state.filtered
    if action in {"next_hit", "prev_hit"}:
        return state.hits
    if action == "live_tip":
        return state.live_tip
    if action == "run_action" and parameters:
        return state.applies(str(parameters[0]))
    return True


def action_applies(name: str, screen: Any) -> bool | None:
    """A registered action's `applies` on ``screen`` (True when it has none or is unknown)."""
    spec = actions.find(name)
    if spec is not None and spec.applies is not None:
        return spec.applies(screen)
    return True


class Filters(Protocol):
    """The filter bar (`filter_bar.FilterBar`)."""

    @property
    def active(self) -> bool: ...


class KeysHost(ScreenHost, Protocol):
    """What `KeyChecks` reads of the main screen (besides Textual's own methods)."""

    state: str

    @property
    def filter_bar(self) -> Filters: ...


class KeyChecks:
    """The main screen's `check_action`, and the footer refreshed when its answers changed."""

    def __init__(self, host: KeysHost) -> None:
        self.host = host
        self.screen = cast("Screen[Any]", host)
        #: (session, live tip) the footer's bindings were last refreshed for.
        self.shown_tip: tuple[str | None, str | None] | None = None
        #: Which of the actions sharing a key applied when the footer was last refreshed.
        self.action_keys: tuple[bool, ...] = ()

    # The facts `key_allowed` reads (`KeyFacts`), each read from the screen when asked for.
    @property
    def typing(self) -> bool:
        return isinstance(self.screen.focused, Input)

    @property
    def opened(self) -> str:
        return self.host.state

    @property
    def filtered(self) -> bool:
        return self.host.filter_bar.active

    @property
    def hits(self) -> bool:
        return self.screen.has_class("-searching") and bool(self.screen.query_one("#search", SearchPane).hits)

    @property
    def live_tip(self) -> bool:
        return self.screen.query_one("#lineage", LineageTree).live_tip is not None

    def applies(self, name: str) -> bool | None:
        return action_applies(name, self.screen)

    def allowed(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """`check_action` (`key_allowed`)."""
        return key_allowed(action, parameters, self)

    def refresh_action_keys(self) -> None:
        """Refresh the footer when a key shared by two actions (m: archive / unarchive) now does
        the other one: the footer recomposes on every refresh, so only then."""
        state = tuple(bool(a.applies(self.screen)) for a in actions.ACTIONS if a.applies is not None)
        if state != self.action_keys:
            self.action_keys = state
            self.screen.refresh_bindings()

    def tip_changed(self, shown: tuple[str | None, str | None]) -> None:
        """The footer recomposes on every refresh (700+ times a minute when it ran on each live
        update at 8 writers): only when what `L` offers changed."""
        if shown != self.shown_tip:
            self.shown_tip = shown
            self.screen.refresh_bindings()
