"""One store's live follow: its rhythm, what it cares about, its polls and their reports
(`LiveFollower`); the thread that runs the polls of every open store, one or many, is
`stores_follow.StoresFollower`.

Why off the event loop: a `ChangeWatcher`'s cursor belongs to the connection of the thread
that polls it, and a poll — even an unchanged one, a single `PRAGMA data_version` — must never
run on the event loop. `SessionDB.changes_since` and `live_status` each end their short read
transaction before returning, so nothing is held between polls and a writer's checkpoint always
gets through.

Rhythm: `HOT_S` for `HOT_FOR_S` after a poll saw a change (agents write in bursts: a message
waited for the next poll 125 ms on average at 4 Hz, a third of the 300 ms budget from commit to
screen), `FAST_S` while the user is at the keyboard or the store changed in the last
`IDLE_INPUT_S` (`touch()` is called on every key and mouse press; a user watching an agent write
never touches a key), `SLOW_S` after a spell with neither, at once when a poll says `more` or the
UI asks (`wake()`). An unchanged poll is one `PRAGMA data_version`.

Right after each commit: where Linux inotify is there, the follower thread
(`stores_follow.StoresFollower`) also wakes when a program writes a store's files and polls
that store, rechecking at growing delays (`Recheck`) until the commit is published; so what the
browser draws comes in the writer's pause after a commit. The timer polls stay: a write the
signal cannot see (another machine's) is still found.

Live statuses: when a poll saw changes, only the visible sessions they name are read again (a
status derives from a session's last message, its end and its start); all visible rows when the
visible ids change, and every `STATUS_EVERY_S` (the "idle 12m" labels age by the minute). A status
is reported only when what its label shows changed (state, idle minutes, last message), so an
idle list is not redrawn.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from hermes_tui.state import Changes, Recheck

HOT_S = 0.12  # as `stores_follow.SIGNAL_GAP_S` (why 0.12 there)
HOT_FOR_S = 10.0
FAST_S = 0.25
SLOW_S = 1.0
IDLE_INPUT_S = 30.0
STATUS_EVERY_S = 60.0


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
    #: Monotonic time of the write signal that started this poll (None: a timer or `wake()`).
    after_write: float | None = None


class LiveFollower:
    """One store's live follow: `StoresFollower`'s thread asks it when to poll (`interval`,
    `recheck`) and runs its polls (`poll_once`), which report through `report`.

    `care()`, `show()`, `touch()` and `wake()` are safe from any thread (the UI's).
    """

    def __init__(
        self,
        db: _Store,
        report: Callable[[LiveUpdate], None],
        *,
        clock: Callable[[], float] = time.time,
        ticks: Callable[[], float] = time.monotonic,
        fast_s: float = FAST_S,
        slow_s: float = SLOW_S,
        idle_input_s: float = IDLE_INPUT_S,
        status_every_s: float = STATUS_EVERY_S,
        hot_s: float = HOT_S,
        hot_for_s: float = HOT_FOR_S,
        wakeup: Any = None,
    ) -> None:
        self.db = db
        self.report = report
        self.clock = clock
        #: The rhythm's clock (hot, fast, slow, the signal gap): monotonic; a test passes its own.
        self.ticks = ticks
        self.hot_s = min(hot_s, fast_s)
        self.hot_for_s = hot_for_s
        self.fast_s = fast_s
        self.slow_s = slow_s
        self.idle_input_s = idle_input_s
        self.status_every_s = status_every_s
        self._lock = threading.Lock()
        self._care: list[str] = []
        self._visible: list[str] = []
        self._visible_dirty = False
        self._last_input = self.ticks()
        self._last_change = float("-inf")  # monotonic time of the last poll that saw a change
        #: Its `set()` asks for a poll now: `StoresFollower` passes the store's (`_StoreWake`).
        self._wake: Any = wakeup if wakeup is not None else threading.Event()
        self._watcher: Any = None
        self._shown: dict[str, tuple[Any, ...]] = {}  # what each reported status's label shows
        self.polls = 0  # polls run (tests and the bench read it)
        #: A poll a write woke that found nothing polls again soon (the commit is published a
        #: moment after its last write): `StoresFollower` asks it after each poll.
        self.recheck = Recheck()
        self._last_status = float("-inf")  # monotonic time all visible statuses were last read

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
        """The rows on screen, whose live status the list shows; recomputed when they change.

        Rows that only moved (a live reorder: with 8 writers, on almost every poll) are not news:
        waking for them polled the store again at once, past the write signal's gap, and read
        every visible status each time (62 polls a second, half the browser's CPU)."""
        ids = list(dict.fromkeys(i for i in ids if i))
        with self._lock:
            if set(ids) == set(self._visible):
                self._visible = ids
                return
            self._visible = ids
            self._visible_dirty = True
        self._wake.set()

    def touch(self) -> None:
        """The user pressed a key or the mouse: poll at the fast rate again."""
        self._last_input = self.ticks()

    def wake(self) -> None:
        """Poll now rather than at the next tick."""
        self._wake.set()

    @property
    def interval(self) -> float:
        """Seconds to the next poll: hot right after changes, fast while the user is active or
        the store changed lately, slow after a spell with neither."""
        now = self.ticks()
        if now - self._last_change < self.hot_for_s:
            return self.hot_s
        quiet = now - max(self._last_input, self._last_change)
        return self.fast_s if quiet < self.idle_input_s else self.slow_s

    # ------------------------------------------------------------------ the polling thread
    def ensure_watcher(self) -> None:
        """Make the change watcher, on the thread that will poll (its cursor belongs to that
        thread's connection); raises what the store raises."""
        if self._watcher is not None:
            return
        with self._lock:
            care = list(self._care)
        self._watcher = self.db.change_watcher(care)
        with self._lock:  # ids set while the watcher was being made
            if self._care != care:
                self._watcher.care(self._care)

    def poll_once(self, after_write: float | None = None) -> Changes:
        """One poll: what changed, the statuses of the visible rows it may have changed (all of
        them when the rows changed or `status_every_s` passed), reported if any; raises what the
        store raises. On the watcher's thread."""
        changes: Changes = self._watcher.poll()
        self.polls += 1
        if changes:
            self._last_change = self.ticks()
        with self._lock:
            visible, dirty = list(self._visible), self._visible_dirty
            self._visible_dirty = False
        due = self.ticks() - self._last_status >= self.status_every_s
        ask = visible if dirty or due else [i for i in visible if i in _touched(changes)]
        statuses = None
        if ask:
            statuses = self._news(self.db.live_status(ask, self.clock()))
            if dirty or due:
                self._last_status = self.ticks()
        if changes or statuses:
            self.report(LiveUpdate(changes, statuses or None, after_write=after_write))
        return changes

    def _news(self, statuses: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        """The statuses whose label would show something else than last reported."""
        out = {}
        for sid, st in statuses.items():
            idle = st.get("idle_s")
            minutes = int(idle // 60) if st.get("state") == "idle" and isinstance(idle, int | float) else None
            shown = (st.get("state"), minutes, st.get("last_role"), st.get("last_message_id"))
            if self._shown.get(sid) != shown:
                self._shown[sid] = shown
                out[sid] = st
        if len(self._shown) > 4096:  # rows scrolled past long ago: forget, report again if seen
            self._shown = {sid: self._shown[sid] for sid in statuses}
        return out


def _touched(ch: Changes) -> set[str]:
    """Sessions whose live status the changes may have changed."""
    ids = set(ch.messages)
    ids.update(ch.ended, ch.reopened, ch.reactivated, ch.deleted)
    ids.update(r["id"] for r in ch.new_sessions)
    return ids


#: The open transcript takes live messages at most this often: every application is a mount,
#: a scroll and a layout of the whole screen (~40 ms at 1M rows, 8-10 a second at 20 msg/s was a
#: third of a core), so a burst is grouped into at most five a second; the first message after a
#: quiet spell still goes at once.
APPLY_EVERY_S = 0.2
#: ... and, the interval over, with the next commit, or this long after the interval when none
#: comes (`Pacer.quiet_s`): commit → screen stays within 0.2 + 0.05 s plus the read and the frame.
APPLY_QUIET_S = 0.05


class Pacer:
    """Paces one kind of live refresh: one at a time, and starts at least `every_s` apart.

    The screen asks (`ask`) on every report; the answer is 0.0 (start now: call `start`),
    a delay (set one timer, then call `due`), or None (one is already running or timed: the ask
    is merged into it). `flag` asks accumulate (OR) until the next `start` returns them.
    `finished` ends a run and answers like `ask` for what was asked meanwhile.

    `quiet_s` > 0 starts a run with a commit rather than with a clock: once `every_s` has passed,
    the next ask (a report, made right after a commit when the follower has a write signal)
    starts at once, and the timer, `quiet_s` later, only catches the last commit of a burst. So
    the work lands in the writer's pause after a commit, not on its next append.
    """

    def __init__(
        self,
        every_s: float = APPLY_EVERY_S,
        clock: Callable[[], float] = time.monotonic,
        quiet_s: float = 0.0,
    ) -> None:
        self.every_s = every_s
        self.quiet_s = quiet_s
        self.clock = clock
        self.running = False
        self.pending = False
        self.timed = False
        self._flag = False
        self._last_start = float("-inf")
        self.starts = 0  # runs started (tests and the bench read it)

    def ask(self, flag: bool = False) -> float | None:
        self._flag = self._flag or flag
        self.pending = True
        return self._next()

    def _next(self) -> float | None:
        if self.running or not self.pending:
            return None
        wait = self._last_start + self.every_s - self.clock()
        if self.timed and not (self.quiet_s > 0 and wait <= 0):
            return None
        if wait > 0:
            self.timed = True
            return wait + self.quiet_s
        return 0.0

    def due(self) -> float | None:
        """The timer fired: start now (0.0) unless a run is in flight (it re-asks when done)."""
        self.timed = False
        return self._next()

    def start(self) -> bool:
        """A run starts now: it covers every ask so far; returns their merged flag."""
        flag, self._flag = self._flag, False
        self.pending = False
        self.running = True
        self._last_start = self.clock()
        self.starts += 1
        return flag

    def finished(self) -> float | None:
        self.running = False
        return self._next()
