"""The follower polls right after another process commits (the store's write signal), not at
its next tick, so the browser reads and draws in the writer's pause after a commit (issue #18:
a draw that lands on an agent's append doubled its p99 on 2 cores).

Real subprocess writers, the real clock; every wait polls a condition with a timeout."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hermes_tui.app.live_follow import LiveUpdate
from hermes_tui.app.stores_follow import SIGNAL_GAP_S, follow_one
from hermes_tui.state import SessionDB
from hermes_tui.state.write_signal import write_signal
from tests._wait import WAIT_S, pilot_until, wait_until

from .test_live import Writer, following_tail, transcript_text

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux's")

#: The follower's own ticks, far beyond any wait of a test: only the signal makes it poll.
LONG_S = 10 * WAIT_S


class Following:
    """A follower of one store on its own thread, with ticks too slow to matter."""

    def __init__(self, db: SessionDB, **kw: Any) -> None:
        self.reports: list[LiveUpdate] = []
        self.follower = follow_one(
            db, self.reports.append, fast_s=LONG_S, slow_s=LONG_S, hot_s=LONG_S, hot_for_s=0, **kw
        )
        self.thread = threading.Thread(target=self.follower.run)
        self.thread.start()
        wait_until(lambda: self.follower.polls >= 1, "the first poll")

    def new_sessions(self) -> list[str]:
        return [s["id"] for r in self.reports for s in r.changes.new_sessions]

    def stop(self) -> None:
        self.follower.stop()
        self.thread.join(WAIT_S)
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
        wait_until(lambda: signalled.new_sessions() == ["probe"], "the signalled follower saw it")
        assert signalled.follower.signalled >= 1
        # one transaction's pages wake it once or twice (it settles), not once per page
        assert signalled.follower.polls - polls <= 3
        assert polling.new_sessions() == [] and polling.follower.polls == 1  # its next tick is far
        writer.call("append_message", "probe", "user", content="second")
        wait_until(lambda: any(r.changes.messages.get("probe") for r in signalled.reports), "the append")
    finally:
        writer.close()
        signalled.stop()
        polling.stop()


def test_a_stream_of_commits_is_polled_at_most_every_signal_gap(demo_db: Path, db: SessionDB) -> None:
    """Eight agents commit ~160 times a second: a poll each would be most of a core."""
    following = Following(db)
    follower = following.follower
    store = follower.follower(None)  # the store's polls
    assert store is not None
    woken_at: list[float] = []  # the follower's clock at each poll a write woke
    found: list[bool] = []  # and whether it found the commit
    poll_once = store.poll_once

    def recording(after_write: float | None = None) -> Any:
        changes = poll_once(after_write)
        if after_write is not None:
            woken_at.append(after_write)
            found.append(bool(changes))
        return changes

    store.poll_once = recording  # type: ignore[method-assign]
    writer = Writer(demo_db)
    try:
        writer.call("create_session", "burst", "cli")
        wait_until(lambda: "burst" in following.new_sessions(), "the new session")
        polls = follower.polls
        for i in range(60):
            writer.call("append_message", "burst", "user", content=f"burst {i}")

        def seen() -> int:
            return sum(len(r.changes.messages.get("burst", [])) for r in following.reports)

        wait_until(lambda: seen() == 60, "every message, none lost")
        assert follower.polls - polls < 60  # fewer polls than commits
        # by its own clock; a poll that found nothing (the commit a moment behind its write) is
        # looked at again sooner (`Recheck`), and a write meanwhile is read by that recheck
        gaps = [b - a for a, b, hit in zip(woken_at, woken_at[1:], found, strict=False) if hit]
        assert woken_at and min(gaps, default=SIGNAL_GAP_S) >= SIGNAL_GAP_S
    finally:
        writer.close()
        following.stop()


def test_writes_to_other_files_of_the_directory_do_not_poll(demo_db: Path, db: SessionDB) -> None:
    """The follower's signal reads the directory's events and ignores other files' (a gateway log
    beside the store is written all the time). The writes are done, so their events are queued."""
    signal = write_signal(demo_db)
    assert signal is not None
    try:
        for i in range(20):
            (demo_db.parent / "gateway.log").write_text(f"line {i}\n")
        assert not signal.drain()  # every event read, none of the store's files
        db.create_session("probe", "cli")
        assert signal.drain()  # the store's own write does wake it
    finally:
        signal.close()


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
    following.follower.stop()
    following.thread.join(WAIT_S)  # its tick is 10 × longer: only the stop can have woken it
    assert not following.thread.is_alive()
    following.follower.wake()  # after the stop: must not write to a closed descriptor
    assert open_fds() == before


async def test_the_browser_follows_an_append_through_the_signal(demo_db: Path) -> None:
    async with following_tail(demo_db) as (_app, pilot, main, writer):
        follower = main.follower
        assert follower is not None and follower.has_signal
        signalled = follower.signalled
        writer.call("append_message", "tail", "assistant", content="fresh from elsewhere")
        await pilot_until(pilot, lambda: "fresh from elsewhere" in transcript_text(main), "the append")
        assert follower.signalled > signalled
