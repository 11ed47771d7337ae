"""The live follower's rhythm and status reports: hot right after changes, fast while the
store keeps changing (a user watching an agent write never touches a key, and at the slow rate
a new message took 0.5-1 s to show), slow once quiet; statuses read only for the visible rows
the changes name, and reported only when their label would change."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from typing import Any

import pytest

from hermes_tui.app.live_follow import LiveFollower, LiveUpdate
from hermes_tui.app.stores_follow import StoresFollower, follow_one
from hermes_tui.state.live import Changes
from tests._wait import wait_until


class _Watcher:
    """Reports a new message on every poll while `writing` is set, nothing otherwise."""

    def __init__(self, writing: threading.Event) -> None:
        self.writing = writing
        self.next_id = 0

    def care(self, ids: Iterable[str]) -> None:
        pass

    def poll(self) -> Changes:
        if not self.writing.is_set():
            return Changes()
        self.next_id += 1
        return Changes(messages={"s": [self.next_id]})


class _Store:
    db_path = "/nowhere/state.db"

    def __init__(self, writing: threading.Event) -> None:
        self.writing = writing

    def change_watcher(self, care_about: Iterable[str] = (), **kw: Any) -> _Watcher:
        return _Watcher(self.writing)

    def live_status(self, session_ids: Iterable[str], now: float | None = None) -> dict[str, dict[str, Any]]:
        return {}


class _Ticks:
    """The follower's rhythm clock, moved on only by its own waits (`_Sleeps`)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class _Sleeps:
    """The follower's wake-up: each wait records its length and moves the clock on by it, so
    the follower's loop runs at once, its rhythm read from the waits it asked for."""

    def __init__(self, ticks: _Ticks) -> None:
        self.ticks = ticks
        self.waits: list[tuple[float, float]] = []  # (clock when it slept, for how long)
        self.woken = 0  # `set()` calls: something asked for a poll now

    def wait(self, seconds: float) -> bool:
        self.waits.append((self.ticks.now, seconds))
        self.ticks.now += seconds
        return False

    def set(self) -> None:
        self.woken += 1

    def is_set(self) -> bool:
        return False

    def clear(self) -> None:
        pass

    def close(self) -> None:
        pass


def rhythm(changing_for: float, run_for: float, **kw: Any) -> tuple[LiveFollower, _Sleeps]:
    """Run the follower's loop over one store on this thread with an injected clock, over a store
    whose every poll finds a change for `changing_for` seconds, then nothing; stopped after
    `run_for`. Returns the store's rhythm (`LiveFollower`) and the waits."""
    ticks = _Ticks()
    sleeps = _Sleeps(ticks)
    start = ticks.now
    writing = threading.Event()
    store = _Store(writing)

    def watching(care_about: Iterable[str] = (), **_kw: Any) -> _Watcher:
        watcher = _Watcher(writing)
        poll = watcher.poll

        def timed_poll() -> Changes:
            writing.set() if ticks.now < start + changing_for else writing.clear()
            return poll()

        watcher.poll = timed_poll  # type: ignore[method-assign]
        return watcher

    store.change_watcher = watching  # type: ignore[method-assign]
    following = follow_one(store, lambda u: None, ticks=ticks, wakeup=sleeps, use_signal=False, **kw)
    following.run(cancelled=lambda: ticks.now > start + run_for)
    # one wait after each poll, of the interval it chose (the loop sleeps until a due time:
    # rounded, the float sum's last bits aside)
    sleeps.waits = [(t, round(s, 9)) for t, s in sleeps.waits]
    assert following.polls == len(sleeps.waits)
    follower = following.follower(None)
    assert follower is not None
    return follower, sleeps


def test_follower_polls_hot_after_a_change_then_fast_then_slow() -> None:
    """Hot (every 0.01 s) while each poll finds a change and `hot_for_s` after the last one,
    then fast until `idle_input_s` has passed without a change or a key, then slow; `touch()`
    (a key) makes it fast again."""
    follower, sleeps = rhythm(0.2, 3, fast_s=0.05, slow_s=0.5, idle_input_s=0.6, hot_s=0.01, hot_for_s=0.3)
    last_change = follower._last_change
    assert 1000 + 0.2 - 0.01 <= last_change < 1000 + 0.2
    hot = [t for t, s in sleeps.waits if s == 0.01]
    fast = [t for t, s in sleeps.waits if s == 0.05]
    slow = [t for t, s in sleeps.waits if s == 0.5]
    assert len(hot) + len(fast) + len(slow) == len(sleeps.waits)
    assert [s for _t, s in sleeps.waits] == sorted(s for _t, s in sleeps.waits)  # hot, fast, slow
    assert len(hot) >= 45  # 0.2 s of changes and 0.3 s after, every 0.01 s (not every 0.05 s)
    assert hot[-1] < last_change + 0.3 <= fast[0]
    assert fast[-1] < last_change + 0.6 <= slow[0]
    follower.touch()
    assert follower.interval == 0.05


class _StatusStore(_Store):
    """Statuses from `states`, recording which ids each call asked for."""

    def __init__(self, writing: threading.Event, states: dict[str, dict[str, Any]]) -> None:
        super().__init__(writing)
        self.states = states
        self.asked: list[list[str]] = []

    def change_watcher(self, care_about: Iterable[str] = (), **kw: Any) -> _Watcher:
        return self.watcher

    def live_status(self, session_ids: Iterable[str], now: float | None = None) -> dict[str, dict[str, Any]]:
        ids = list(session_ids)
        self.asked.append(ids)
        return {i: dict(self.states[i]) for i in ids if i in self.states}


def _following(
    store: _StatusStore, reports: list[LiveUpdate], visible: list[str], **kw: Any
) -> tuple[StoresFollower, threading.Thread]:
    """A follower of ``store`` showing ``visible``, started on its own thread."""
    store.watcher = _Watcher(store.writing)
    follower = follow_one(store, reports.append, **kw)
    follower.show(None, visible)
    thread = threading.Thread(target=follower.run)
    thread.start()
    return follower, thread


def test_statuses_are_read_for_the_changed_visible_rows_and_reported_when_their_label_changes() -> None:
    writing = threading.Event()
    states = {
        "s": {"state": "working", "idle_s": 1.0, "last_role": "user", "last_message_id": 1},
        "a": {"state": "idle", "idle_s": 700.0, "last_role": "assistant", "last_message_id": 5},
        "b": {"state": "waiting", "idle_s": 3.0, "last_role": "assistant", "last_message_id": 7},
    }
    store = _StatusStore(writing, states)
    reports: list[LiveUpdate] = []
    follower, thread = _following(
        store, reports, ["s", "a", "b"], fast_s=0.01, slow_s=0.01, status_every_s=0.3
    )

    try:
        wait_until(lambda: reports, "reports")  # the visible rows, all read and reported once
        assert sorted(store.asked[0]) == ["a", "b", "s"]
        assert sorted(reports[0].statuses or {}) == ["a", "b", "s"]
        store.asked.clear()
        writing.set()  # a message in "s" on every poll: only "s" is read again
        wait_until(lambda: len(store.asked) >= 3, "len(store.asked) >= 3")
        writing.clear()
        assert all(ids == ["s"] for ids in store.asked[:3])
        # "s" shows the same label (working, same message): not reported again
        assert all(not r.statuses for r in reports[1:])
        states["a"]["idle_s"] = 719.0  # still "idle 11m": nothing to redraw
        states["b"]["state"] = "idle"
        states["b"]["idle_s"] = 600.0
        n = len(reports)
        wait_until(
            lambda: any(r.statuses for r in reports[n:]), "any(r.statuses for r in reports[n:])"
        )  # the periodic refresh
        fresh = [r.statuses for r in reports[n:] if r.statuses]
        assert fresh[0] == {"b": states["b"]}
    finally:
        follower.stop()
        thread.join(5)
    assert not thread.is_alive()


def test_follower_stays_fast_while_the_store_changes_and_slows_once_it_is_quiet() -> None:
    """No key for far longer than `idle_input_s`, but every poll sees a change: it stays hot
    (a user watching an agent write touches no key); quiet for `idle_input_s`, it is slow."""
    follower, sleeps = rhythm(0.9, 1.5, fast_s=0.02, slow_s=0.5, idle_input_s=0.2, hot_for_s=0.1)
    assert follower.hot_s == 0.02
    writing = [s for t, s in sleeps.waits if t < 1000 + 0.9]
    assert len(writing) >= 40 and set(writing) == {0.02}  # 0.9 s at 0.02 s, never slow
    quiet = [t for t, s in sleeps.waits if s == 0.5]
    assert quiet and quiet[0] >= follower._last_change + 0.2  # slow once quiet for idle_input_s
    assert sleeps.waits[-1][1] == 0.5
    follower.touch()
    assert follower.interval == 0.02


def test_rows_that_only_moved_are_not_news_rows_that_came_into_view_are() -> None:
    """A live reorder reports the same visible rows in another order: no status read, no
    early poll. A row scrolled into view is read at once. (Polled by hand, on this thread.)"""
    writing = threading.Event()
    states = {
        i: {"state": "waiting", "idle_s": 3.0, "last_role": "assistant", "last_message_id": 1} for i in "abcd"
    }
    store = _StatusStore(writing, states)
    store.watcher = _Watcher(writing)
    sleeps = _Sleeps(_Ticks())
    follower = LiveFollower(store, lambda u: None, ticks=sleeps.ticks, wakeup=sleeps, status_every_s=600)
    follower.show(["a", "b", "c"])
    follower.ensure_watcher()
    follower.poll_once()
    assert sorted(store.asked[-1]) == ["a", "b", "c"]
    woken, asked = sleeps.woken, len(store.asked)
    follower.show(["c", "a", "b"])  # reordered: nothing to read
    assert sleeps.woken == woken  # no early poll
    follower.poll_once()
    assert len(store.asked) == asked  # and the next one reads no status
    follower.show(["c", "a", "d"])  # "d" came into view: read now, not at the next tick
    assert sleeps.woken == woken + 1
    follower.poll_once()
    assert sorted(store.asked[-1]) == ["a", "c", "d"]


def test_a_follower_whose_store_fails_to_open_closes_its_wakeup_pipe() -> None:
    """The store fails to open its watcher: said once (it tries again every `ERROR_BACKOFF_S`,
    as for every store of several); once stopped, its wake-up pipe is closed."""

    class _Failing(_Store):
        def change_watcher(self, care_about: Iterable[str] = (), **kw: Any) -> _Watcher:
            raise OSError("gone")

    reports: list[LiveUpdate] = []
    follower = follow_one(_Failing(threading.Event()), reports.append, use_signal=False)
    thread = threading.Thread(target=follower.run)
    thread.start()
    try:
        wait_until(lambda: reports, "the failure reported")
    finally:
        follower.stop()
        thread.join(5)
    assert not thread.is_alive()
    assert [r.error for r in reports] == ["OSError: gone"]
    assert follower._wake._closed


class _Signal:
    """A write signal that fires once, right away, then stays quiet."""

    def __init__(self) -> None:
        self.fired = False

    def wait(self, timeout: float, also: Any = None) -> bool:
        if not self.fired:
            self.fired = True
            return True
        also.wait(timeout)
        return False

    def close(self) -> None:
        pass


class _AsSignals:
    """A one-store write signal as the follower's `WriteSignals` (which store was written)."""

    def __init__(self, signal: Any) -> None:
        self.signal = signal
        self.paths: list[str] = []

    def add(self, path: str) -> bool:
        self.paths.append(path)
        return True

    def wait(self, timeout: float, also: Any = None) -> set[str]:
        return set(self.paths) if self.signal.wait(timeout, also=also) else set()

    def close(self) -> None:
        self.signal.close()


class _PublishedLate(_Store):
    """The commit a write signalled is seen one poll later (published after its last write)."""

    def __init__(self) -> None:
        super().__init__(threading.Event())
        self.polled = 0

    def write_signal(self) -> _Signal:
        return _Signal()

    def change_watcher(self, care_about: Iterable[str] = (), **kw: Any) -> Any:
        store = self

        class Late(_Watcher):
            def poll(self) -> Changes:
                store.polled += 1  # 1: the first poll, 2: woken by the write, too early
                return Changes(messages={"s": [1]}) if store.polled == 3 else Changes()

        return Late(self.writing)


def test_a_write_whose_poll_found_nothing_is_polled_again_soon() -> None:
    """The signal comes with the commit's last write; the commit is published a moment later.
    A woken poll that found nothing looks once more, not at the next tick (a minute here)."""
    reports: list[LiveUpdate] = []
    store = _PublishedLate()
    follower = follow_one(
        store, reports.append, signals=_AsSignals(store.write_signal()), fast_s=60, slow_s=60, hot_s=60
    )
    thread = threading.Thread(target=follower.run)
    thread.start()
    try:
        wait_until(
            lambda: any(r.changes.messages for r in reports), "any(r.changes.messages for r in reports)"
        )
        assert follower.signalled == 1
    finally:
        follower.stop()
        thread.join(5)
    assert not thread.is_alive()


class _TimedSignal:
    """A write signal on the injected clock: fires once, after `after` s; then each wait runs
    its whole timeout on the clock (through the follower's wake-up, which records it)."""

    def __init__(self, ticks: _Ticks, after: float) -> None:
        self.ticks = ticks
        self.after = after
        self.fired_at: float | None = None

    def wait(self, timeout: float, also: Any = None) -> bool:
        if self.fired_at is None and timeout >= self.after:
            self.ticks.now += self.after
            self.fired_at = self.ticks.now
            return True
        also.wait(timeout)
        return False

    def close(self) -> None:
        pass


def test_a_commit_published_later_than_one_recheck_is_still_polled_soon() -> None:
    """Under load the commit a write announced is published in the `-shm` index later than one
    20 ms recheck: the follower looks again at growing delays (`RECHECKS_S`), so it reports the
    commit well before its next tick (a minute here), by the follower's own clock."""
    ticks = _Ticks()
    sleeps = _Sleeps(ticks)
    signal = _TimedSignal(ticks, after=1.0)
    reports: list[tuple[float, LiveUpdate]] = []

    class _Late(_Store):
        def write_signal(self) -> _TimedSignal:
            return signal

        def change_watcher(self, care_about: Iterable[str] = (), **kw: Any) -> Any:
            class Late(_Watcher):
                def poll(self) -> Changes:  # published 0.15 s after the write that signalled it
                    published = signal.fired_at is not None and ticks.now >= signal.fired_at + 0.15
                    return Changes(messages={"s": [1]}) if published else Changes()

            return Late(self.writing)

    follower = follow_one(
        _Late(threading.Event()),
        lambda u: reports.append((ticks.now, u)),
        ticks=ticks,
        wakeup=sleeps,
        signals=_AsSignals(signal),
        fast_s=60,
        slow_s=60,
        hot_s=60,
    )
    follower.run(cancelled=lambda: bool(reports) or ticks.now > 1000.0 + 600)
    assert signal.fired_at is not None and reports
    seen_at = reports[0][0]
    assert 0.15 <= seen_at - signal.fired_at < 0.5, seen_at - signal.fired_at
    assert follower.polls <= 6  # a few rechecks (each one `PRAGMA data_version`), not a busy loop


def test_the_shared_follower_rechecks_a_store_at_growing_delays_after_a_write_found_nothing() -> None:
    """`StoresFollower` (several stores, one thread) keeps each store's rechecks too: a poll a
    write woke that found nothing, then one more that found nothing, are followed by the next
    of `RECHECKS_S`, not by the store's interval (here a minute)."""
    from concurrent.futures import Future

    from hermes_tui.state import RECHECKS_S

    follower = StoresFollower(lambda calls: {}, lambda p, u: None, use_signal=False, fast_s=60, slow_s=60)
    follower.add("p", _Store(threading.Event()))
    store = follower._stores["p"]
    store.follower.hot_s = store.follower.fast_s = 60.0  # its own interval: a minute

    def answered(by_signal: bool) -> float:
        """The store's next poll, in seconds from now, after a poll that found nothing."""
        done: Future[Changes] = Future()
        done.set_result(Changes())
        store.busy, store.next_at = True, float("inf")
        follower._done.append(("p", done, by_signal))
        before = time.monotonic()
        follower._take_answers()
        return store.next_at - before

    assert answered(by_signal=True) == pytest.approx(RECHECKS_S[0], abs=0.01)
    assert answered(by_signal=False) == pytest.approx(RECHECKS_S[1], abs=0.01)
    assert answered(by_signal=False) == pytest.approx(RECHECKS_S[2], abs=0.01)
    follower.stop()
    follower._wake.close()


class _CommitStream:
    """`WriteSignals` on the injected clock: a writer committing every `every_s` (one agent at
    20 messages/s) whether or not the follower listens. A wait returns at once when commits
    came since the last one heard (their events queued), else at the next commit within its
    timeout; with none, it runs its whole timeout on the clock (through the follower's
    wake-up). `wakes`: the waits a commit ended (the follower thread woken by a write)."""

    def __init__(self, ticks: _Ticks, every_s: float) -> None:
        self.ticks = ticks
        self.every_s = every_s
        self.next_commit = ticks.now + every_s
        self.wakes = 0
        self.paths: list[str] = []

    def add(self, path: str) -> bool:
        self.paths.append(path)
        return True

    def wait(self, timeout: float, also: Any = None) -> set[str]:
        if self.next_commit <= self.ticks.now + timeout:
            self.ticks.now = max(self.ticks.now, self.next_commit)
            while self.next_commit <= self.ticks.now:  # the queued events, read at once
                self.next_commit += self.every_s
            self.wakes += 1
            return set(self.paths)
        also.wait(timeout)
        return set()

    def close(self) -> None:
        pass


def _followed_stream(seconds: float) -> tuple[StoresFollower, _CommitStream, _Sleeps]:
    """One store's follower over `seconds` of commits every 50 ms, on its own clock; every poll
    finds the commits since the last one."""
    ticks = _Ticks()
    sleeps = _Sleeps(ticks)
    stream = _CommitStream(ticks, 0.05)
    writing = threading.Event()
    writing.set()
    follower = follow_one(_Store(writing), lambda u: None, ticks=ticks, wakeup=sleeps, signals=stream)
    start = ticks.now
    follower.run(cancelled=lambda: ticks.now >= start + seconds)
    return follower, stream, sleeps


def test_a_writer_committing_20_times_a_second_is_polled_about_8_times_a_second() -> None:
    """The browser takes live changes in at most five times a second (`APPLY_EVERY_S`; the
    reads bring every commit since): a poll per commit (20 a second, one agent) read and
    reported four times what was drawn, 2.5 % of a core; polls every 0.1 s still started an
    append every 0.2 s, five a second, one more than needed (why 0.12: `SIGNAL_GAP_S`).
    Counted on the follower's own clock: 10 s of commits every 50 ms, each found by a poll."""
    follower, _stream, _sleeps = _followed_stream(10.0)
    assert follower.polls <= 10 / 0.12 + 2, follower.polls  # not 200, nor 100
    assert follower.polls >= 10 / 0.12 - 2  # still one every 0.12 s: a commit waits at most that


def test_writes_while_a_poll_is_on_its_way_do_not_wake_the_follower() -> None:
    """Once a write has set the store's next poll (`SIGNAL_GAP_S` after the last), the commits
    before it cannot bring it sooner: the thread sleeps until it is due rather than waking for
    each (one agent: 20 wake-ups a second besides the 10 polls, each a select, a read of the
    inotify events and the loop, ~0.7 % of a core). Counted on its own clock over 10 s."""
    follower, stream, _sleeps = _followed_stream(10.0)
    assert stream.wakes <= follower.polls + 2, (stream.wakes, follower.polls)  # not 200
    assert follower.polls >= 10 / 0.12 - 2  # and the polls are as many as before
