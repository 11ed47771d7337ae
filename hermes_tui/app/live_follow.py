"""The browser's live follower: one thread polls the store and posts what changed.

Why a thread of its own: a `ChangeWatcher`'s cursor belongs to the connection of the thread
that polls it, and a poll — even an unchanged one, a single `PRAGMA data_version` — must never
run on the event loop. `SessionDB.changes_since` and `live_status` each end their short read
transaction before returning, so nothing is held between polls and a writer's checkpoint always
gets through.

Rhythm: `FAST_S` while the user is at the keyboard or the store keeps changing, `SLOW_S` once
`IDLE_INPUT_S` passed without input (`touch()` is called on every key and mouse press) and
without a change (a user watching an agent write never touches a key, and at 1 Hz a new message
took 0.5-1 s to show), at once when a poll says `more` or the UI asks (`wake()`). Live statuses
of the visible rows are recomputed when something changed, when the visible ids change, and
every `STATUS_EVERY_S` (the "idle 12m" labels age).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from hermes_tui.state import Changes

FAST_S = 0.25
SLOW_S = 1.0
IDLE_INPUT_S = 30.0
STATUS_EVERY_S = 30.0
ERROR_BACKOFF_S = 2.0


class _Store(Protocol):
    def change_watcher(self, care_about: Iterable[str] = (), **kw: Any) -> Any: ...

    def live_status(
        self, session_ids: Iterable[str], now: float | None = None
    ) -> dict[str, dict[str, Any]]: ...


@dataclass
class LiveUpdate:
    """One report of the follower: what changed (maybe nothing) and fresh statuses (or None)."""

    changes: Changes = field(default_factory=Changes)
    statuses: dict[str, dict[str, Any]] | None = None
    error: str | None = None


class LiveFollower:
    """Polls `db` from the thread that calls `run()` until `stop()`; reports through `report`.

    `care()`, `show()`, `touch()`, `wake()` and `stop()` are safe from any thread (the UI's).
    """

    def __init__(
        self,
        db: _Store,
        report: Callable[[LiveUpdate], None],
        *,
        clock: Callable[[], float] = time.time,
        fast_s: float = FAST_S,
        slow_s: float = SLOW_S,
        idle_input_s: float = IDLE_INPUT_S,
        status_every_s: float = STATUS_EVERY_S,
    ) -> None:
        self.db = db
        self.report = report
        self.clock = clock
        self.fast_s = fast_s
        self.slow_s = slow_s
        self.idle_input_s = idle_input_s
        self.status_every_s = status_every_s
        self._lock = threading.Lock()
        self._care: list[str] = []
        self._visible: list[str] = []
        self._visible_dirty = False
        self._last_input = time.monotonic()
        self._last_change = float("-inf")  # monotonic time of the last poll that saw a change
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._watcher: Any = None
        self.polls = 0  # polls run (tests and the bench read it)

    # ------------------------------------------------------------------ from the UI thread
    def care(self, ids: Iterable[str]) -> None:
        """The ids whose ends, titles and deletions matter (visible rows + the open session)."""
        ids = list(dict.fromkeys(i for i in ids if i))
        with self._lock:
            self._care = ids
            watcher = self._watcher
        if watcher is not None:
            watcher.care(ids)

    def show(self, ids: Iterable[str]) -> None:
        """The rows on screen, whose live status the list shows; recomputed when they change."""
        ids = list(dict.fromkeys(i for i in ids if i))
        with self._lock:
            if ids != self._visible:
                self._visible = ids
                self._visible_dirty = True
        self._wake.set()

    def touch(self) -> None:
        """The user pressed a key or the mouse: poll at the fast rate again."""
        self._last_input = time.monotonic()

    def wake(self) -> None:
        """Poll now rather than at the next tick."""
        self._wake.set()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    @property
    def interval(self) -> float:
        """Seconds to the next poll: fast while the user is active or the store changes, slow
        after a spell with neither."""
        quiet = time.monotonic() - max(self._last_input, self._last_change)
        return self.fast_s if quiet < self.idle_input_s else self.slow_s

    # ------------------------------------------------------------------ the polling thread
    def run(self, cancelled: Callable[[], bool] = lambda: False) -> None:
        """The thread body: poll, report, sleep (wakeable) until stopped or cancelled."""
        with self._lock:
            care = list(self._care)
        try:
            self._watcher = self.db.change_watcher(care)
        except Exception as exc:  # the store went away while opening: say so, then stop
            self.report(LiveUpdate(error=f"{type(exc).__name__}: {exc}"))
            return
        with self._lock:  # ids set while the watcher was being made
            if self._care != care:
                self._watcher.care(self._care)
        last_status = float("-inf")
        failing = False
        while not self._stop.is_set() and not cancelled():
            try:
                changes = self._watcher.poll()
                self.polls += 1
                if changes:
                    self._last_change = time.monotonic()
                with self._lock:
                    visible, dirty = list(self._visible), self._visible_dirty
                    self._visible_dirty = False
                statuses = None
                due = time.monotonic() - last_status >= self.status_every_s
                if visible and (changes or dirty or due):
                    statuses = self.db.live_status(visible, self.clock())
                    last_status = time.monotonic()
                if changes or statuses is not None:
                    self.report(LiveUpdate(changes, statuses))
                failing = False
            except Exception as exc:  # a vanished or locked file: report once, keep trying
                if not failing:
                    self.report(LiveUpdate(error=f"{type(exc).__name__}: {exc}"))
                failing = True
                self._wake.wait(ERROR_BACKOFF_S)
                self._wake.clear()
                continue
            if changes.more:
                continue
            self._wake.wait(self.interval)
            self._wake.clear()
