"""The transcript's window of drawn items stays bounded however it is read.

Every message record is in memory; only `MAX_WINDOW` items at most have lines. End and Home
draw a fresh window where they land, growing at one end drops items at the other, a jump to a
far message draws around it, live appends at the bottom drop from the front, and dropping
above the viewport keeps the reader's text where it was.
"""

from __future__ import annotations

import re
from typing import ClassVar

from textual import on
from textual.app import App, ComposeResult
from textual.pilot import Pilot

from hermes_tui.app.styles import stylesheet_paths
from hermes_tui.app.widgets.transcript_items import (
    FOLLOW_DROP_STEP,
    FOLLOW_WINDOW,
    JUMP_WINDOW,
    MAX_WINDOW,
    TranscriptData,
    message_view,
)
from hermes_tui.app.widgets.transcript_pane import Transcript
from hermes_tui.formatting import plural
from tests.app._support import transcript_rows as rows


class WindowApp(App[None]):
    """A bare transcript, with every WindowChanged it posts recorded."""

    CSS_PATH: ClassVar = stylesheet_paths()

    def __init__(self) -> None:
        super().__init__()
        self.windows: list[tuple[int, int, int]] = []

    def compose(self) -> ComposeResult:
        yield Transcript(id="transcript")

    @on(Transcript.WindowChanged)
    def window_changed(self, message: Transcript.WindowChanged) -> None:
        self.windows.append((message.start, message.end, message.total))


async def open_view(pilot: Pilot[None], n: int, target_id: int | None = None) -> Transcript:
    transcript = pilot.app.query_one(Transcript)
    data = TranscriptData(session_id="s", items=[message_view(r) for r in rows(n)])
    await transcript.show(data, target_id=target_id)
    transcript.focus()
    await pilot.pause()
    return transcript


HEADER = re.compile(r"^▎ \S.*?  #(\d+)(?:  |$)")


def mounted_ids(transcript: Transcript) -> list[int]:
    """The ids of the messages drawn in the window (their headers, top to bottom)."""
    ids = []
    for line in transcript.window_text().split("\n"):
        found = HEADER.match(line)
        if found:
            ids.append(int(found.group(1)))
    return ids


def assert_consistent(transcript: Transcript) -> None:
    """The drawn messages are exactly items[start:end], the "more" rows count what is not."""
    ids = mounted_ids(transcript)
    expected = [item.id for item in transcript.items[transcript.start : transcript.end]]  # type: ignore[union-attr]
    assert ids == expected
    assert transcript.end - transcript.start <= MAX_WINDOW
    drawn = [line.strip() for line in transcript.window_text().split("\n") if line.strip()]
    before = f"▲ {plural(transcript.start, 'earlier message')}"
    after = f"▼ {plural(len(transcript.items) - transcript.end, 'more message')}"
    assert (drawn[0] == before) == (transcript.start > 0)
    assert (drawn[-1] == after) == (transcript.end < len(transcript.items))


def screen_line(transcript: Transcript, message_id: int) -> int:
    """The row of the view message ``message_id``'s header is drawn on (negative: above it)."""
    for line, text in enumerate(transcript.window_text().split("\n")):
        found = HEADER.match(text)
        if found and int(found.group(1)) == message_id:
            return line - round(transcript.scroll_y)
    raise AssertionError(f"#{message_id} is not drawn")


async def test_end_mounts_the_tail_only_and_home_the_head() -> None:
    app = WindowApp()
    async with app.run_test(size=(100, 30)) as pilot:
        transcript = await open_view(pilot, 3000)
        await pilot.press("end")
        await pilot.pause()
        assert transcript.end == 3000 and transcript.end - transcript.start == JUMP_WINDOW
        assert len(transcript.children) < 4 * JUMP_WINDOW
        assert_consistent(transcript)
        assert transcript.at_bottom
        assert app.windows[-1] == (3000 - JUMP_WINDOW, 3000, 3000)
        await pilot.press("home")
        await pilot.pause()
        assert (transcript.start, transcript.end) == (0, JUMP_WINDOW)
        assert transcript.scroll_y == 0
        assert_consistent(transcript)
        assert app.windows[-1] == (0, JUMP_WINDOW, 3000)


async def test_pagedown_storm_stays_bounded_then_home() -> None:
    app = WindowApp()
    async with app.run_test(size=(100, 30)) as pilot:
        transcript = await open_view(pilot, 3000)
        await pilot.press(*["pagedown"] * 40)
        await pilot.pause()
        assert transcript.end > MAX_WINDOW + 60, "the storm read far into the session"
        assert transcript.start > 0
        assert_consistent(transcript)
        assert len(transcript.children) <= 3 * MAX_WINDOW + 2
        assert app.windows[-1] == (transcript.start, transcript.end, 3000)
        await pilot.press("home")
        await pilot.pause()
        assert transcript.start == 0 and transcript.end - transcript.start <= MAX_WINDOW
        assert_consistent(transcript)
        assert transcript.scroll_y == 0


async def test_pageup_from_the_end_grows_before_and_drops_the_end() -> None:
    app = WindowApp()
    async with app.run_test(size=(100, 30)) as pilot:
        transcript = await open_view(pilot, 1000)
        await pilot.press("end")
        await pilot.pause()
        await pilot.press(*["pageup"] * 40)
        await pilot.pause()
        assert transcript.start < 1000 - MAX_WINDOW - 50, "scrolling up mounted earlier messages"
        assert transcript.end < 1000  # the tail was dropped
        assert_consistent(transcript)


async def test_growing_after_drops_above_without_moving_the_text() -> None:
    app = WindowApp()
    async with app.run_test(size=(100, 30)) as pilot:
        transcript = await open_view(pilot, 1000, target_id=500)
        assert transcript.start == 495  # id 500 is item 499; BEFORE_TARGET = 4
        while transcript.end - transcript.start < MAX_WINDOW:
            transcript.grow("after")
            await pilot.pause()
        transcript.scroll_to(y=transcript.max_scroll_y - 15, animate=False, immediate=True)
        await pilot.pause()
        top = next(i for i in mounted_ids(transcript) if screen_line(transcript, i) >= 0)  # (on screen)
        y_before = screen_line(transcript, top)
        start = transcript.start
        transcript.grow("after")
        await pilot.pause()
        await pilot.pause()
        assert transcript.start > start, "items were dropped from the front"
        assert screen_line(transcript, top) == y_before
        assert_consistent(transcript)


async def test_growing_before_keeps_the_text_in_place() -> None:
    app = WindowApp()
    async with app.run_test(size=(100, 30)) as pilot:
        transcript = await open_view(pilot, 1000, target_id=500)
        await pilot.pause()
        y_before = screen_line(transcript, 496)
        transcript.grow("before")
        await pilot.pause()
        await pilot.pause()
        assert transcript.start == 475
        assert screen_line(transcript, 496) == y_before
        assert_consistent(transcript)


async def test_jump_far_mounts_only_around_the_target() -> None:
    app = WindowApp()
    async with app.run_test(size=(100, 30)) as pilot:
        transcript = await open_view(pilot, 3000)
        transcript._window_around(1700)
        await pilot.pause()
        assert transcript.start <= 1700 < transcript.end
        assert transcript.end - transcript.start == JUMP_WINDOW
        assert_consistent(transcript)


async def test_live_append_at_the_bottom_follows_and_drops_the_front() -> None:
    app = WindowApp()
    async with app.run_test(size=(100, 30)) as pilot:
        transcript = await open_view(pilot, 300)
        await pilot.press("end")
        await pilot.pause()
        for batch in range(10):
            followed = await transcript.append_items([message_view(r) for r in rows(20, 301 + 20 * batch)])
            await pilot.pause()
            assert followed
        assert transcript.end == 500 == len(transcript.items)
        assert FOLLOW_WINDOW <= transcript.end - transcript.start < FOLLOW_WINDOW + FOLLOW_DROP_STEP
        assert transcript.at_bottom and transcript.new_below == 0
        assert_consistent(transcript)


async def test_following_one_message_at_a_time_drops_the_front_in_steps() -> None:
    """Each removal costs Textual a second layout of the screen: a writer's messages arriving
    one by one drop the window's front once per `FOLLOW_DROP_STEP`, not once per message."""
    app = WindowApp()
    async with app.run_test(size=(100, 30)) as pilot:
        transcript = await open_view(pilot, 300)
        await pilot.press("end")
        await pilot.pause()
        starts = {transcript.start}
        for i in range(100):
            assert await transcript.append_items([message_view(r) for r in rows(1, 301 + i)])
            await pilot.pause()
            starts.add(transcript.start)
            assert transcript.end - transcript.start < FOLLOW_WINDOW + FOLLOW_DROP_STEP
        assert len(starts) <= 100 // FOLLOW_DROP_STEP + 1  # one drop per append: 21
        assert transcript.at_bottom and transcript.new_below == 0
        assert_consistent(transcript)


async def test_live_append_scrolled_up_mounts_only_what_fits() -> None:
    app = WindowApp()
    async with app.run_test(size=(100, 30)) as pilot:
        transcript = await open_view(pilot, 60)
        while transcript.end < 60:
            transcript.grow("after")
        await pilot.pause()
        transcript.scroll_home(animate=False)
        await pilot.pause()
        followed = await transcript.append_items([message_view(r) for r in rows(200, 61)])
        await pilot.pause()
        assert not followed
        assert transcript.new_below == 200
        assert (transcript.start, transcript.end) == (0, MAX_WINDOW)
        assert transcript.scroll_y == 0
        assert_consistent(transcript)
        await pilot.press("end")
        await pilot.pause()
        assert transcript.end == 260 and transcript.new_below == 0
        assert_consistent(transcript)


async def test_a_followed_append_lays_the_screen_out_once() -> None:
    """Textual's default asks for a second layout of the whole screen after one that placed new
    widgets (their and the view's grown virtual size): ~20 ms each while following a writer."""
    app = WindowApp()
    async with app.run_test(size=(100, 30)) as pilot:
        transcript = await open_view(pilot, 300)
        await pilot.press("end")
        await pilot.pause(0.2)
        screen = app.screen
        layouts = 0
        original = screen._refresh_layout

        def counted(*args: object, **kwargs: object) -> None:
            nonlocal layouts
            layouts += 1
            original(*args, **kwargs)  # type: ignore[arg-type]

        screen._refresh_layout = counted  # type: ignore[method-assign]
        for i in range(10):  # 50 items at the end: no drop of the front
            assert await transcript.append_items([message_view(r) for r in rows(1, 301 + i)])
            await pilot.pause(0.1)
        assert layouts <= 12  # 20 before
