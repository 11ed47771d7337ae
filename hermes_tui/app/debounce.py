"""One debounce for the app: a timer (Textual's `set_timer`) that knows whether it is pending.

The list's cursor, the search box, live search refreshes and the prune form each wait a moment
before querying. Going through `Debouncer` means tests (and anything else) can ask whether such
a query is still due (`pending`, `any_pending(app)`) instead of sleeping past the delay.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from textual.app import App
    from textual.message_pump import MessagePump
    from textual.timer import Timer

#: Every debouncer made, to answer `any_pending` (dropped with their owners).
_ALL: weakref.WeakSet[Debouncer] = weakref.WeakSet()


class Debouncer:
    """Runs a callback `delay` seconds after the last `restart()`, on `owner`'s timers (so it
    stops with its owner). `pending` is true from a (re)start until the callback has run, been
    cancelled, or the owner has closed."""

    def __init__(
        self, owner: MessagePump, delay: float, callback: Callable[[], object] | None = None
    ) -> None:
        self.owner = owner
        self.delay = delay
        self.callback = callback
        self._timer: Timer | None = None
        self._app: App[Any] | None = None
        _ALL.add(self)

    @property
    def pending(self) -> bool:
        """A callback is due (its owner still runs, so it will fire)."""
        return self._timer is not None and self.owner.is_running

    def restart(self, callback: Callable[[], object] | None = None, delay: float | None = None) -> None:
        """(Re)start the countdown; ``callback`` replaces the one to run, ``delay`` this wait's length."""
        if callback is not None:
            self.callback = callback
        self.cancel()
        self._app = self.owner.app
        self._timer = self.owner.set_timer(self.delay if delay is None else delay, self._fire)

    def start_if_idle(self) -> None:
        """Start the countdown unless one is running (at most one call per `delay`, not reset)."""
        if not self.pending:
            self.restart()

    def cancel(self) -> None:
        """Drop the due call, if any."""
        timer, self._timer = self._timer, None
        if timer is not None:
            timer.stop()

    def _fire(self) -> None:
        self._timer = None
        if self.callback is not None:
            self.callback()


def any_pending(app: App[Any]) -> bool:
    """Is a debounced call of `app`'s still due? (Tests wait for this instead of sleeping.)"""
    return any(d.pending and d._app is app for d in list(_ALL))
