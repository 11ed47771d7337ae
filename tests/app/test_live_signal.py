"""The follower polls right after another process commits (the store's write signal), not at
its next tick, so the browser reads and draws in the writer's pause after a commit (issue #18:
a draw that lands on an agent's append doubled its p99 on 2 cores).

Real subprocess writers, the real clock; every wait polls a condition with a timeout."""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from hermes_tui.app.live_follow import SIGNAL_GAP_S, LiveFollower, LiveUpdate
from hermes_tui.state import SessionDB

from .test_live import Writer, following_tail, transcript_text, until

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux's")

LONG_S = 60.0  # the follower's own ticks: only the signal can make it poll within a test


def wait_for(predicate: Callable[[], Any], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


class Following:
    """A follower on its own thread, with ticks too slow to matter."""

    def __init__(self, db: SessionDB, **kw: Any) -> None:
        self.reports: list[LiveUpdate] = []
        self.follower = LiveFollower(
            db, self.reports.append, fast_s=LONG_S, slow_s=LONG_S, hot_s=LONG_S, hot_for_s=0, **kw
        )
        self.thread = threading.Thread(target=self.follower.run)
        self.thread.start()
        assert wait_for(lambda: self.follower.polls >= 1, 10), "the first poll"

    def new_sessions(self) -> list[str]:
        return [s["id"] for r in self.reports for s in r.changes.new_sessions]

    def stop(self) -> None:
        self.follower.stop()
        self.thread.join(5)
        assert not self.thread.is_alive()


@pytest.fixture
def db(demo_db: Path) -> Iterator[SessionDB]:
    with SessionDB(demo_db, migrate=False) as store:
        yield store


def test_a_commit_elsewhere_is_reported_at_once_not_at_the_next_tick(demo_db: Path, db: SessionDB) -> None:
    signalled = Following(db)
    polling = Following(db, use_signal=False)  # the control: ticks only
    writer = Writer(demo_db)
    try:
        assert signalled.follower.has_signal and not polling.follower.has_signal
        polls = signalled.follower.polls
        writer.call("create_session", "probe", "cli")
        assert wait_for(lambda: signalled.new_sessions() == ["probe"], 5), signalled.reports
        assert signalled.follower.signalled >= 1
        # one transaction's pages wake it once or twice (it settles), not once per page
        assert signalled.follower.polls - polls <= 3
        assert not wait_for(lambda: polling.new_sessions(), 1.0)  # its next tick is a minute away
        writer.call("append_message", "probe", "user", content="second")
        assert wait_for(lambda: any(r.changes.messages.get("probe") for r in signalled.reports), 5)
    finally:
        writer.close()
        signalled.stop()
        polling.stop()


def test_a_stream_of_commits_is_polled_at_most_every_signal_gap(demo_db: Path, db: SessionDB) -> None:
    """Eight agents commit ~160 times a second: a poll each would be most of a core."""
    following = Following(db)
    writer = Writer(demo_db)
    try:
        writer.call("create_session", "burst", "cli")
        assert wait_for(lambda: "burst" in following.new_sessions(), 5)
        polls, started = following.follower.polls, time.monotonic()
        for i in range(60):
            writer.call("append_message", "burst", "user", content=f"burst {i}")
        elapsed = time.monotonic() - started

        def seen() -> int:
            return sum(len(r.changes.messages.get("burst", [])) for r in following.reports)

        assert wait_for(lambda: seen() == 60, 5), seen()  # every message, none lost
        assert following.follower.polls - polls <= elapsed / SIGNAL_GAP_S + 3
        assert following.follower.polls - polls < 60  # fewer polls than commits
    finally:
        writer.close()
        following.stop()


def test_writes_to_other_files_of_the_directory_do_not_poll(demo_db: Path, db: SessionDB) -> None:
    following = Following(db)
    try:
        polls = following.follower.polls
        for i in range(20):
            (demo_db.parent / "gateway.log").write_text(f"line {i}\n")
        time.sleep(0.5)
        assert following.follower.polls == polls
        assert following.follower.signalled == 0
    finally:
        following.stop()


def test_stop_ends_a_follower_waiting_on_the_signal_and_closes_what_it_opened(db: SessionDB) -> None:
    def open_fds() -> int:
        """Pipes and inotify instances this process holds (the store's own files aside)."""
        kinds = []
        for fd in os.listdir("/proc/self/fd"):
            try:
                kinds.append(os.readlink(f"/proc/self/fd/{fd}"))
            except OSError:
                continue
        return sum(k.startswith(("pipe:", "anon_inode:inotify")) for k in kinds)

    before = open_fds()
    following = Following(db)
    assert following.follower.has_signal
    assert open_fds() > before  # the signal and the wake-up pipe
    t = time.monotonic()
    following.stop()
    assert time.monotonic() - t < 2  # not the minute-long tick
    following.follower.wake()  # after the stop: must not write to a closed descriptor
    assert open_fds() == before


async def test_the_browser_follows_an_append_through_the_signal(demo_db: Path) -> None:
    async with following_tail(demo_db) as (_app, pilot, main, writer):
        follower = main.follower
        assert follower is not None and follower.has_signal
        signalled = follower.signalled
        writer.call("append_message", "tail", "assistant", content="fresh from elsewhere")
        await until(pilot, lambda: "fresh from elsewhere" in transcript_text(main), what="the append")
        assert follower.signalled > signalled
