"""The live follower's rhythm and status reports: hot right after changes, fast while the
store keeps changing (a user watching an agent write never touches a key, and at the slow rate
a new message took 0.5-1 s to show), slow once quiet; statuses read only for the visible rows
the changes name, and reported only when their label would change."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from typing import Any

from hermes_tui.app.live_follow import LiveFollower, LiveUpdate
from hermes_tui.state.live import Changes


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
    def __init__(self, writing: threading.Event) -> None:
        self.writing = writing

    def change_watcher(self, care_about: Iterable[str] = (), **kw: Any) -> _Watcher:
        return _Watcher(self.writing)

    def live_status(self, session_ids: Iterable[str], now: float | None = None) -> dict[str, dict[str, Any]]:
        return {}


def test_follower_polls_hot_after_a_change_then_fast_then_slow() -> None:
    writing = threading.Event()
    writing.set()
    follower = LiveFollower(
        _Store(writing), lambda u: None, fast_s=0.05, slow_s=0.5, idle_input_s=0.6, hot_s=0.01, hot_for_s=0.3
    )
    thread = threading.Thread(target=follower.run)
    thread.start()
    try:
        time.sleep(0.2)
        assert follower.interval == 0.01
        before = follower.polls
        time.sleep(0.2)
        assert follower.polls - before >= 8  # about 0.2 / 0.01, not 0.2 / 0.05
        writing.clear()
        time.sleep(0.4)  # past hot_for_s since the last change, within idle_input_s
        assert follower.interval == 0.05
        time.sleep(0.4)  # past idle_input_s: slow
        assert follower.interval == 0.5
    finally:
        follower.stop()
        thread.join(5)
    assert not thread.is_alive()


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


def wait(predicate: Any) -> None:
    deadline = time.monotonic() + 5
    while not predicate():
        assert time.monotonic() < deadline
        time.sleep(0.005)


def _following(
    store: _StatusStore, reports: list[LiveUpdate], visible: list[str], **kw: Any
) -> tuple[LiveFollower, threading.Thread]:
    """A follower of ``store`` showing ``visible``, started on its own thread."""
    store.watcher = _Watcher(store.writing)
    follower = LiveFollower(store, reports.append, **kw)
    follower.show(visible)
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
        wait(lambda: reports)  # the visible rows, all read and reported once
        assert sorted(store.asked[0]) == ["a", "b", "s"]
        assert sorted(reports[0].statuses or {}) == ["a", "b", "s"]
        store.asked.clear()
        writing.set()  # a message in "s" on every poll: only "s" is read again
        wait(lambda: len(store.asked) >= 3)
        writing.clear()
        assert all(ids == ["s"] for ids in store.asked[:3])
        # "s" shows the same label (working, same message): not reported again
        assert all(not r.statuses for r in reports[1:])
        states["a"]["idle_s"] = 719.0  # still "idle 11m": nothing to redraw
        states["b"]["state"] = "idle"
        states["b"]["idle_s"] = 600.0
        n = len(reports)
        wait(lambda: any(r.statuses for r in reports[n:]))  # the periodic refresh
        fresh = [r.statuses for r in reports[n:] if r.statuses]
        assert fresh[0] == {"b": states["b"]}
    finally:
        follower.stop()
        thread.join(5)
    assert not thread.is_alive()


def test_follower_stays_fast_while_the_store_changes_and_slows_once_it_is_quiet() -> None:
    writing = threading.Event()
    writing.set()
    reports: list[LiveUpdate] = []
    follower = LiveFollower(
        _Store(writing), reports.append, fast_s=0.02, slow_s=0.5, idle_input_s=0.2, hot_for_s=0.1
    )
    thread = threading.Thread(target=follower.run)
    thread.start()
    try:
        time.sleep(0.5)  # well past idle_input_s without input, but every poll saw a change
        assert follower.interval == 0.02
        before = follower.polls
        time.sleep(0.4)
        assert follower.polls - before >= 5  # about 0.4 / 0.02, not 0.4 / 0.5
        writing.clear()
        time.sleep(0.35)  # quiet for longer than idle_input_s: slow rate
        assert follower.interval == 0.5
        follower.touch()
        assert follower.interval == 0.02
    finally:
        follower.stop()
        thread.join(5)
    assert not thread.is_alive()
    assert any(r.changes.messages for r in reports)


def test_rows_that_only_moved_are_not_news_rows_that_came_into_view_are() -> None:
    """A live reorder reports the same visible rows in another order: no status read, no
    early poll. A row scrolled into view is read at once."""
    writing = threading.Event()
    states = {
        i: {"state": "waiting", "idle_s": 3.0, "last_role": "assistant", "last_message_id": 1} for i in "abcd"
    }
    store = _StatusStore(writing, states)
    follower, thread = _following(
        store, [], ["a", "b", "c"], fast_s=60, slow_s=60, hot_s=60, status_every_s=600
    )

    try:
        wait(lambda: follower.polls >= 1 and store.asked)
        time.sleep(0.2)  # the wake of the first show() may give one more poll: let it pass
        polls, asked = follower.polls, len(store.asked)
        follower.show(["c", "a", "b"])  # reordered: nothing to read
        time.sleep(0.3)
        assert (follower.polls, len(store.asked)) == (polls, asked)
        follower.show(["c", "a", "d"])  # "d" came into view: read now, not at the next tick
        wait(lambda: len(store.asked) > asked)
        assert sorted(store.asked[-1]) == ["a", "c", "d"]
    finally:
        follower.stop()
        thread.join(5)
    assert not thread.is_alive()


def test_a_follower_whose_store_fails_to_open_closes_its_wakeup_pipe() -> None:
    class _Failing(_Store):
        def change_watcher(self, care_about: Iterable[str] = (), **kw: Any) -> _Watcher:
            raise OSError("gone")

    reports: list[LiveUpdate] = []
    follower = LiveFollower(_Failing(threading.Event()), reports.append)
    follower.run()
    assert reports and reports[0].error == "OSError: gone"
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
    follower = LiveFollower(_PublishedLate(), reports.append, fast_s=60, slow_s=60, hot_s=60)
    thread = threading.Thread(target=follower.run)
    thread.start()
    try:
        wait(lambda: any(r.changes.messages for r in reports))
        assert follower.signalled == 1
    finally:
        follower.stop()
        thread.join(5)
    assert not thread.is_alive()
