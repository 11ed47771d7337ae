"""The open transcript takes a burst of live messages in a few grouped updates (issue #18).

Each live append is a mount, a scroll and a layout of the whole screen (~40 ms at 1M rows); one
per follower report made 8-10 a second at 20 msg/s, a third of a core on the event loop, and
the writer's p99 grew with it. `Pacer` groups them: one read of the open session in flight, the
starts at least `APPLY_EVERY_S` apart, the first after a quiet spell at once.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from textual.widgets import Static

from hermes_tui.app.live_follow import APPLY_EVERY_S, Pacer
from hermes_tui.app.widgets.transcript_items import MessageView
from hermes_tui.app.widgets.transcript_pane import Transcript
from tests._wait import pilot_until

from .test_live import Writer, live_app, open_live


class _Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def test_pacer_starts_at_once_then_groups_and_merges_flags() -> None:
    clock = _Clock()
    pace = Pacer(0.2, clock)
    assert pace.ask() == 0.0  # quiet before: at once
    assert pace.start() is False
    assert pace.ask(True) is None  # one in flight: merged into the next run
    assert pace.ask() is None
    clock.t += 0.05
    wait = pace.finished()
    assert wait is not None and abs(wait - 0.15) < 1e-9  # 0.2 after the last start
    assert pace.ask() is None  # the timer is set: nothing more
    clock.t += 0.15
    assert pace.due() == 0.0
    assert pace.start() is True  # the flag asked for while the first ran
    assert pace.finished() is None  # nothing asked meanwhile
    clock.t += 1.0
    assert pace.ask() == 0.0
    assert pace.starts == 2


def test_pacer_timer_firing_while_running_waits_for_the_run() -> None:
    clock = _Clock()
    pace = Pacer(0.2, clock)
    pace.start()
    pace.finished()
    assert pace.ask() is not None  # timed
    pace.running = True  # a run started by another path meanwhile
    assert pace.due() is None
    clock.t += 1.0
    assert pace.finished() == 0.0


def test_a_quiet_pacer_starts_with_the_first_commit_after_its_interval() -> None:
    """`quiet_s`: the run lands right after a commit (an ask), in the writer's pause; the timer
    only catches the last commit of a burst, `quiet_s` after the interval."""
    clock = _Clock()
    pace = Pacer(0.2, clock, quiet_s=0.05)
    assert pace.ask() == 0.0  # quiet before: at once
    pace.start()
    assert pace.finished() is None
    clock.t += 0.05
    wait = pace.ask()  # a commit within the interval: wait for the next one, or the fallback
    assert wait is not None and abs(wait - (0.15 + 0.05)) < 1e-9
    clock.t += 0.1
    assert pace.ask() is None  # still within the interval: merged
    clock.t += 0.08  # 0.23 s after the start: the interval is over
    assert pace.ask(True) == 0.0  # a commit now starts the run, the timer still out
    assert pace.start() is True
    assert pace.finished() is None
    clock.t += 0.02
    assert pace.due() is None  # the stale timer: everything asked was covered
    # the last commit of a burst: no commit follows, the timer starts it
    clock.t += 0.03
    wait = pace.ask()
    assert wait is not None and abs(wait - (0.15 + 0.05)) < 1e-9
    clock.t += wait
    assert pace.due() == 0.0
    pace.start()
    assert pace.starts == 3


def test_without_quiet_the_timer_alone_starts_the_next_run() -> None:
    clock = _Clock()
    pace = Pacer(0.2, clock)
    pace.start()
    pace.finished()
    clock.t += 0.05
    assert pace.ask() is not None
    clock.t += 0.18  # the interval is over, but a timer is out: it starts the run
    assert pace.ask() is None


@contextlib.asynccontextmanager
async def following(db: Path, sid: str, first: str) -> AsyncIterator[tuple[Any, Any, Writer]]:
    """A session `sid` with one user message written by a subprocess writer, open and followed
    in the live app: `(pilot, main screen, writer)`."""
    writer = Writer(db)
    try:
        writer.call("create_session", sid, "cli")
        writer.call("append_message", sid, "user", content=first)
        app = live_app(db)
        async with app.run_test(size=(160, 50)) as pilot:
            yield pilot, await open_live(pilot, sid), writer
    finally:
        writer.close()


def _shown_texts(transcript: Transcript) -> list[str]:
    return [i.text for i in transcript.items if isinstance(i, MessageView)]


async def test_a_burst_is_a_few_grouped_appends_and_every_message_shows(demo_db: Path) -> None:
    async with following(demo_db, "burst", "first") as (pilot, main, writer):
        main.session_list.focus()  # a user watching
        assert main.follower is not None
        store = main.follower.follower(None)  # the one store's rhythm
        assert store is not None
        store.hot_s = 0.02  # reports as often as the writer commits
        transcript = main.query_one("#transcript", Transcript)
        title = main.query_one("#transcript-title", Static)
        layouts: list[bool] = []
        title_refresh = title.refresh

        def spy_refresh(*regions: Any, **kw: Any) -> Any:
            layouts.append(bool(kw.get("layout", False)))
            return title_refresh(*regions, **kw)

        title.refresh = spy_refresh  # type: ignore[method-assign]
        mounts = 0
        started: list[float] = []  # the pacer's clock when the run behind each append started
        append = transcript.append_items

        async def counted(items: Any) -> bool:
            nonlocal mounts
            before = len(transcript.items)
            out = await append(items)
            if len(transcript.items) > before:
                mounts += 1
                started.append(main.session_pace._last_start)
            return out

        transcript.append_items = counted  # type: ignore[method-assign]
        n = 40
        for i in range(n):
            writer.call("append_message", "burst", "assistant", content=f"burst message {i}")
            await asyncio.sleep(0.02)
        await pilot_until(
            pilot, lambda: _shown_texts(transcript)[-1:] == [f"burst message {n - 1}"], "the last message"
        )
        assert _shown_texts(transcript) == ["first"] + [f"burst message {i}" for i in range(n)]
        # One update per follower report would be about one per message here: the runs start
        # at least APPLY_EVERY_S apart (by the pacer's own clock), each taking what came.
        assert 1 <= mounts < n / 3
        gaps = [b - a for a, b in zip(started, started[1:], strict=False)]
        assert all(gap >= APPLY_EVERY_S for gap in gaps), gaps
        await pilot_until(pilot, lambda: transcript.at_bottom, "following at the end")
        assert transcript.new_below == 0
        # The title shows the new count without laying the screen out again.
        await pilot_until(pilot, lambda: f"{n + 1} msgs" in str(title.content), "the title's count")
        assert layouts and not any(layouts)

        # Scrolled up, a burst counts "N new ↓" (grouped too) and `G` jumps there. The last
        # append's own scroll to the end runs after a refresh: scrolled up before it ran, the
        # view went back to the end under load and the burst was followed, not counted.
        await pilot_until(pilot, lambda: not transcript._tail_pending, "the last append's scroll done")
        transcript.scroll_home(animate=False, immediate=True)
        await pilot_until(pilot, lambda: transcript.scroll_y == 0 and not transcript.at_bottom, "scrolled up")
        await pilot.pause(0.1)
        assert transcript.scroll_y == 0
        for i in range(10):
            writer.call("append_message", "burst", "user", content=f"unread {i}")
            await asyncio.sleep(0.02)
        await pilot_until(pilot, lambda: transcript.new_below == 10, "10 new below")
        assert "10 new ↓ G" in str(transcript.border_subtitle)
        await pilot.press("G")
        await pilot_until(pilot, lambda: transcript.new_below == 0, "the marker gone")
        await pilot_until(pilot, lambda: transcript.at_bottom, "at the end")


async def test_a_failed_live_read_does_not_stop_following(demo_db: Path) -> None:
    async with following(demo_db, "flaky", "before") as (pilot, main, writer):
        transcript = main.query_one("#transcript", Transcript)
        db = main.db
        assert db is not None
        real = db.list_rows
        failed = []

        def failing(ids: Any, *a: Any, **kw: Any) -> Any:
            if not failed:
                failed.append(True)
                raise RuntimeError("disk I/O error")
            return real(ids, *a, **kw)

        db.list_rows = failing  # type: ignore[method-assign]
        try:
            writer.call("append_message", "flaky", "assistant", content="lost read")
            await pilot_until(pilot, lambda: failed, "the failing read")
            await asyncio.sleep(APPLY_EVERY_S)
            writer.call("append_message", "flaky", "assistant", content="after the failure")
            await pilot_until(
                pilot,
                lambda: "after the failure" in _shown_texts(transcript),
                "following again after a failed read",
            )
            assert "lost read" in _shown_texts(transcript)  # read with the next one
        finally:
            db.list_rows = real  # type: ignore[method-assign]
