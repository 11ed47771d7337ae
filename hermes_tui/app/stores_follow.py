"""The browser's one live follower: every open store, one of them or three hundred (one store
is a federation of one: `follow_one`, `on_this_thread`).

Why not a `LiveFollower` thread per store, as before: 300 profiles were 300 polling threads,
each with its own connection, inotify instance and wake-up pipe; on 2 cores they kept 121 % of a
CPU busy while the list sat idle. Here one thread keeps every store's rhythm (a `LiveFollower`
per store that never runs a thread of its own: its care/show ids, statuses and reports) and
runs the polls that fall due on the stores' own threads (`Federation.submit_each`: one task per
pool thread, so a store keeps its one connection, and its watcher's cursor stays valid).

Where Linux inotify is there, one instance watches every store's directory (`WriteSignals`)
and a written store is polled right after its commit, as with one store. The timer polls stay
(a write the signal cannot see is still found), spread so that all the stores together make at
most `POLLS_PER_S` timer polls a second; a store that changed lately keeps the hot rhythm, and
with a few stores each one polls exactly as a `LiveFollower` of its own would.

One store (the browser on one file): its polls run on the follower's own thread
(`on_this_thread`: the watcher's cursor is that thread's connection's), so following it costs
one thread and one connection, as it always did.
"""

from __future__ import annotations

import os
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from functools import partial
from typing import Any

from hermes_tui.app.live_follow import LiveFollower, LiveUpdate
from hermes_tui.state import Changes, SessionDB, write_signals

#: Timer polls a second over all the stores together (each an unchanged `PRAGMA data_version`):
#: 300 stores are each polled every 1.5 s without a write signal, 7 stores at their own rhythm.
POLLS_PER_S = 200.0
#: The longest sleep without a due poll (stores added meanwhile wake the thread anyway).
MAX_SLEEP_S = 1.0
#: A store whose poll failed is tried again this long after.
ERROR_BACKOFF_S = 2.0
#: Polls woken by write signals start at least this far apart: with 8 agents writing 20 messages
#: a second each, a poll per commit was 130 polls and list reorders a second (the browser at 78 %
#: of a core against 37 %). The browser takes live changes in at most five times a second (the
#: transcript, `live_follow.APPLY_EVERY_S`; the list's order twice, `live_rules.ORDER_EVERY_S`;
#: each read brings every commit since), so one agent's commits 50 ms apart polled each (20 polls
#: and reports a second, ~2.5 % of a core: the follower thread and the reports' handling) read
#: four times what was drawn. 0.12 s rather than 0.1 (the same as `live_follow.HOT_S`): polls
#: 0.1 s apart fell on the end of the transcript's 0.2 s interval and started an append at every
#: other one, five a second; at 0.12 every other poll is past it, about four a second as with a
#: poll per commit (`live_app_bench.py` `g1` against `B1`: 126 against 139 appends in 30 s, 11
#: against 12-13 % of a core, commit → on screen p95 +5 ms). The first commit after a quiet
#: spell is still polled at once.
SIGNAL_GAP_S = 0.12

#: A store's name in the follower: its profile, or None for the one store of a single-store
#: browser (as `OneStore` names it).
Profile = str | None
SubmitEach = Callable[[Mapping[Any, Callable[[SessionDB], Any]]], dict[Any, Future[Any]]]


def on_this_thread(db: Any) -> SubmitEach:
    """`submit_each` for one store: each call runs at once on the calling thread (the
    follower's), its answer a finished future."""

    def submit_each(calls: Mapping[Any, Callable[[SessionDB], Any]]) -> dict[Any, Future[Any]]:
        out: dict[Any, Future[Any]] = {}
        for profile, call in calls.items():
            fut: Future[Any] = Future()
            try:
                fut.set_result(call(db))
            except Exception as exc:  # the follower reports it (once) and backs off
                fut.set_exception(exc)
            out[profile] = fut
        return out

    return submit_each


class _Wakeup:
    """`threading.Event`'s `set`/`is_set`/`clear`/`wait`, and a `fileno()` readable once set (a
    self-pipe), so one `select` waits for it and for the store's write signal together."""

    def __init__(self) -> None:
        self._flag = threading.Event()
        self._lock = threading.Lock()
        self._r, self._w = os.pipe()
        os.set_blocking(self._r, False)
        os.set_blocking(self._w, False)
        self._closed = False

    def fileno(self) -> int:
        return self._r

    def set(self) -> None:
        self._flag.set()
        with self._lock:  # never a write to a closed (maybe reused) descriptor
            if self._closed:
                return
            try:
                os.write(self._w, b"\0")
            except BlockingIOError:  # the pipe is full: it is readable already
                pass

    def is_set(self) -> bool:
        return self._flag.is_set()

    def clear(self) -> None:
        self._flag.clear()
        with self._lock:
            if self._closed:
                return
            try:
                while os.read(self._r, 4096):
                    pass
            except BlockingIOError:
                pass

    def wait(self, timeout: float) -> bool:
        return self._flag.wait(timeout)

    def close(self) -> None:
        with self._lock:
            if not self._closed:
                self._closed = True
                os.close(self._r)
                os.close(self._w)


class _StoreWake:
    """A store's follower's wake-up inside the shared one: `set` (its `wake`, `show`) makes the
    store's poll due now and wakes the shared thread."""

    def __init__(self, owner: StoresFollower, profile: Profile) -> None:
        self._owner = owner
        self._profile = profile

    def set(self) -> None:
        self._owner._due_now(self._profile)

    def is_set(self) -> bool:
        return False

    def clear(self) -> None:
        pass

    def wait(self, timeout: float) -> bool:  # never waited on: the shared thread sleeps
        return False

    def close(self) -> None:
        pass


@dataclass
class _Followed:
    follower: LiveFollower
    path: str
    #: Monotonic time the next poll is due (0: at once; inf: while one runs, until it answers).
    next_at: float = 0.0
    busy: bool = False  # a poll is running on the store's thread
    failing: bool = False
    by_signal: bool = False  # the next poll was asked for by a write to its files
    signalled_at: float = float("-inf")  # monotonic time of the last poll a write started


class StoresFollower:
    """Follows several stores from one thread (`run`) until `stop()`; reports each store's
    `LiveUpdate` through `report(profile, update)`.

    `submit_each` runs `{profile: fn}` as `fn(db)` on each store's own thread (the federation's).
    `add`, `care`, `show`, `touch`, `wake` and `stop` are safe from any thread (the UI's).
    """

    def __init__(
        self,
        submit_each: SubmitEach,
        report: Callable[[Profile, LiveUpdate], None],
        *,
        clock: Callable[[], float] = time.time,
        ticks: Callable[[], float] = time.monotonic,
        use_signal: bool = True,
        signals: Any = None,
        wakeup: Any = None,
        polls_per_s: float = POLLS_PER_S,
        **rhythm: float,
    ) -> None:
        self._submit_each = submit_each
        self._report = report
        self._clock = clock
        #: The rhythm's clock (due times, hot, fast, slow, the signal gap): monotonic; a test
        #: passes its own (with a `wakeup` whose waits move it on).
        self._ticks = ticks
        self._rhythm = rhythm  # each store's `LiveFollower` rhythm (fast_s, slow_s, ...: tests)
        self._polls_per_s = polls_per_s
        self._lock = threading.Lock()
        self._stores: dict[Profile, _Followed] = {}
        self._by_path: dict[str, Profile] = {}
        self._unwatched: list[str] = []  # store paths whose directories are not watched yet
        self._done: deque[tuple[Profile, Future[Any], bool]] = deque()
        self._wake: Any = wakeup if wakeup is not None else _Wakeup()
        self._stop = threading.Event()
        #: `add(path)`, `wait(timeout, also) -> written paths`, `close()` (`WriteSignals`).
        self._signals = signals if signals is not None else write_signals() if use_signal else None
        self.polls = 0  # polls started (tests and the bench read it)
        self.signalled = 0  # polls started by a write signal
        self.has_signal = False  # a store's directory is watched (writes wake its polls)

    # ------------------------------------------------------------------ from the UI thread
    def stop(self) -> None:
        """Safe from any thread: the stop wakes the thread, which then ends."""
        self._stop.set()
        self._wake.set()

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    def add(self, profile: Profile, db: Any) -> None:
        """Follow `profile`'s store too (its first poll is due at once)."""
        with self._lock:
            if profile in self._stores or self._stop.is_set():
                return
            follower = LiveFollower(
                db,
                partial(self._report, profile),
                clock=self._clock,
                ticks=self._ticks,
                wakeup=_StoreWake(self, profile),
                **self._rhythm,
            )
            path = str(db.db_path)
            self._stores[profile] = _Followed(follower, path)
            self._by_path[path] = profile
            self._unwatched.append(path)
        self._wake.set()

    @property
    def profiles(self) -> list[Profile]:
        with self._lock:
            return list(self._stores)

    def follower(self, profile: Profile) -> LiveFollower | None:
        with self._lock:
            st = self._stores.get(profile)
        return st.follower if st is not None else None

    def care(self, profile: Profile, ids: list[str]) -> None:
        """`profile`'s ids whose ends, titles and deletions matter (see `LiveFollower.care`)."""
        follower = self.follower(profile)
        if follower is not None:
            follower.care(ids)

    def show(self, profile: Profile, ids: list[str]) -> None:
        """`profile`'s rows on screen (see `LiveFollower.show`)."""
        follower = self.follower(profile)
        if follower is not None:
            follower.show(ids)

    def touch(self) -> None:
        """The user pressed a key: every store at the fast rate again."""
        with self._lock:
            followers = [st.follower for st in self._stores.values()]
        for follower in followers:
            follower.touch()

    def wake(self) -> None:
        """Poll every store now."""
        with self._lock:
            for st in self._stores.values():
                st.next_at = 0.0
        self._wake.set()

    def _due_now(self, profile: Profile) -> None:
        with self._lock:
            st = self._stores.get(profile)
            if st is not None:
                st.next_at = 0.0
        self._wake.set()

    # ------------------------------------------------------------------ the polling thread
    def run(self, cancelled: Callable[[], bool] = lambda: False) -> None:
        """The thread body: start the polls that are due, take their answers, sleep until the
        next one is due, a store is written, or `wake()`; until stopped (or ``cancelled``)."""
        try:
            while not self._stop.is_set() and not cancelled():
                self._wake.clear()
                self._watch_new()
                self._take_answers()
                self._start_due()
                self._sleep(self._next_in())
        finally:
            if self._signals is not None:
                self._signals.close()
            self._wake.close()

    def _watch_new(self) -> None:
        with self._lock:
            paths, self._unwatched = self._unwatched, []
        if self._signals is not None:
            for path in paths:
                if self._signals.add(path):
                    self.has_signal = True

    def _interval(self, follower: LiveFollower) -> float:
        """`follower`'s own interval; a store that is not hot waits its turn among the others."""
        interval = follower.interval
        if interval <= follower.hot_s:
            return interval
        return max(interval, len(self._stores) / self._polls_per_s)

    def _start_due(self) -> None:
        now = self._ticks()
        calls: dict[Profile, Callable[[SessionDB], Any]] = {}
        by_signal: dict[Profile, bool] = {}
        with self._lock:
            for profile, st in self._stores.items():
                if st.busy or st.next_at > now:
                    continue
                st.busy, st.next_at = True, float("inf")
                after_write = None
                by_signal[profile], st.by_signal = st.by_signal, False
                if by_signal[profile]:
                    st.signalled_at = after_write = now
                    self.signalled += 1
                calls[profile] = _poll_call(st.follower, after_write)
        if not calls:
            return
        self.polls += len(calls)
        futures = self._submit_each(calls)
        for profile in calls:
            fut = futures.get(profile)
            if fut is None:  # the store is not open any more: never polled again
                continue
            fut.add_done_callback(partial(self._answered, profile, by_signal[profile]))

    def _answered(self, profile: Profile, by_signal: bool, fut: Future[Any]) -> None:
        """A poll ended (on the store's thread): the follower thread takes it."""
        self._done.append((profile, fut, by_signal))
        self._wake.set()

    def _take_answers(self) -> None:
        while self._done:
            profile, fut, by_signal = self._done.popleft()
            now = self._ticks()
            with self._lock:
                st = self._stores[profile]
                st.busy = False
                asked = st.next_at  # inf, or when a `wake`/`show`/write meanwhile wants a poll
            try:
                changes = fut.result()
            except Exception as exc:  # a vanished or locked file: report once, keep trying
                if not st.failing:
                    self._report(profile, LiveUpdate(error=f"{type(exc).__name__}: {exc}"))
                st.failing = True
                with self._lock:
                    st.next_at = now + ERROR_BACKOFF_S
                continue
            st.failing = False
            if changes.more:
                due = now
            else:  # a write woke it and it found nothing: the commit may be a moment behind
                due = now + st.follower.recheck.pause(by_signal, bool(changes), self._interval(st.follower))
            with self._lock:
                st.next_at = min(due, asked, st.next_at)

    def _next_in(self) -> float:
        now = self._ticks()
        with self._lock:
            due = [st.next_at for st in self._stores.values() if not st.busy]
        if self._done:
            return 0.0
        return min(MAX_SLEEP_S, max(0.0, min(due, default=now + MAX_SLEEP_S) - now))

    def _sleep(self, seconds: float) -> None:
        """Until the next poll is due, `wake()` (or an answer), or a write to a store's files
        (polls woken by writes at least `SIGNAL_GAP_S` apart per store)."""
        if seconds <= 0:
            return
        if self._signals is None or self._all_signalled():
            self._wake.wait(seconds)
            return
        written = self._signals.wait(seconds, also=self._wake)
        if not written:
            return
        now = self._ticks()
        with self._lock:
            for path in written:
                st = self._stores.get(self._by_path[path]) if path in self._by_path else None
                if st is None:
                    continue
                st.by_signal = True
                st.next_at = min(st.next_at, max(now, st.signalled_at + SIGNAL_GAP_S))

    def _all_signalled(self) -> bool:
        """Every store's next poll was set by a write already (at most `SIGNAL_GAP_S` after its
        last): more writes cannot bring any sooner, so the thread sleeps until one is due
        instead of waking for each commit (one agent: 20 wake-ups a second besides the polls);
        the writes meanwhile are read at the next wait."""
        with self._lock:
            return bool(self._stores) and all(st.by_signal for st in self._stores.values())


def _poll_call(follower: LiveFollower, after_write: float | None) -> Callable[[SessionDB], Changes]:
    """One poll of `follower`'s store, on the store's thread (its watcher is made there first)."""

    def poll(_db: SessionDB) -> Changes:
        follower.ensure_watcher()
        return follower.poll_once(after_write)

    return poll


def follow_one(db: Any, report: Callable[[LiveUpdate], None], **kw: Any) -> StoresFollower:
    """The follower of one store (a federation of one: its name None), its polls on the
    follower's thread; ``report`` gets each `LiveUpdate`."""
    follower = StoresFollower(on_this_thread(db), lambda _profile, update: report(update), **kw)
    follower.add(None, db)
    return follower
