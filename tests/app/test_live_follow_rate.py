"""The live follower stays at its fast rate while the store keeps changing (issue #18 bench:
a user watching an agent write never touches a key, and at the slow rate a new message took
0.5-1 s to show)."""

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


def test_follower_stays_fast_while_the_store_changes_and_slows_once_it_is_quiet() -> None:
    writing = threading.Event()
    writing.set()
    reports: list[LiveUpdate] = []
    follower = LiveFollower(_Store(writing), reports.append, fast_s=0.02, slow_s=0.5, idle_input_s=0.2)
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
