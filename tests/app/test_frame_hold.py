"""A live append's frame waits for the writer's next commit while a writer streams
(`hermes_tui/app/frame_hold.py`, issue #18): the mount lands in one pause between commits, the
frame in the next, and nothing waits longer than `HOLD_MAX_S`, after a key, or once writes stop.

Real subprocess writers and the real clock for the screen's part."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from textual.app import App, ComposeResult
from textual.widgets import Static

from hermes_tui.app.frame_hold import FrameHold, WriteRhythm
from hermes_tui.app.screens.main import MainScreen
from tests._wait import pilot_until

from .test_live import Writer, following_tail, live_app, transcript_text

# ------------------------------------------------------------------ the rhythm


def test_one_write_is_not_a_stream() -> None:
    rhythm = WriteRhythm(stream_gap_s=0.15)
    assert not rhythm.streaming(10.0)
    rhythm.note(10.0)
    assert not rhythm.streaming(10.01)


def test_writes_close_together_are_a_stream_until_they_stop() -> None:
    rhythm = WriteRhythm(stream_gap_s=0.15)
    rhythm.note(10.0)
    rhythm.note(10.05)
    assert rhythm.streaming(10.06)
    assert not rhythm.streaming(10.05 + 0.2)  # no commit for a while: nothing is coming


def test_a_write_after_a_quiet_spell_is_not_a_stream() -> None:
    rhythm = WriteRhythm(stream_gap_s=0.15)
    rhythm.note(10.0)
    rhythm.note(10.05)
    rhythm.note(15.0)  # the agent paused: the next message is not due soon
    assert not rhythm.streaming(15.01)
    rhythm.note(14.0)  # an older time (reports out of order) changes nothing
    assert not rhythm.streaming(15.01)


# ------------------------------------------------------------------ the hold


class Frames(App[None]):
    """One Static; `frames` counts what reaches the terminal."""

    def compose(self) -> ComposeResult:
        yield Static("before", id="text")

    def on_mount(self) -> None:
        self.frames = 0
        display = self._display

        def counted(screen: Any, update: Any) -> None:
            if update is not None:
                self.frames += 1
            display(screen, update)

        self._display = counted  # type: ignore[method-assign]


async def test_a_hold_keeps_the_frame_until_released() -> None:
    app = Frames()
    async with app.run_test(size=(40, 5)) as pilot:
        await pilot.pause(0.05)
        hold = FrameHold(app.screen, max_s=5.0)
        hold.hold()
        frames = app.frames
        app.query_one("#text", Static).update("after")
        await pilot.pause(0.2)
        assert hold.held and app.frames == frames  # nothing drawn meanwhile
        hold.release()
        await pilot.pause(0.1)
        assert not hold.held and app.frames > frames
        hold.release()  # twice: nothing to do


async def test_a_hold_ends_by_itself_after_max_s() -> None:
    app = Frames()
    async with app.run_test(size=(40, 5)) as pilot:
        await pilot.pause(0.05)
        hold = FrameHold(app.screen, max_s=0.05)
        hold.hold()
        hold.hold()  # one hold at a time
        frames = app.frames
        app.query_one("#text", Static).update("after")
        await pilot_until(pilot, lambda: app.frames > frames, "a frame once the hold's max_s passed")
        assert not hold.held
        assert hold.holds == 1
        assert app._batch_count == 0  # noqa: SLF001


# ------------------------------------------------------------------ the browser


linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the write signal is inotify")


def stream(writer: Writer, sid: str, n: int, every_s: float) -> threading.Thread:
    """Append ``n`` messages to ``sid``, one every ``every_s``, from a thread."""

    def run() -> None:
        for i in range(n):
            writer.call("append_message", sid, "assistant", content=f"streamed {i}")
            time.sleep(every_s)

    thread = threading.Thread(target=run)
    thread.start()
    return thread


@linux_only
async def test_a_streaming_writer_gets_its_frames_held_and_every_message_shows(demo_db: Path) -> None:
    async with following_tail(demo_db) as (app, pilot, main, writer):
        assert main.follower is not None and main.follower.has_signal
        thread = stream(writer, "tail", 40, 0.05)
        await pilot_until(pilot, lambda: "streamed 39" in transcript_text(main), "the last message")
        thread.join(10)
        assert main.frame_hold.holds > 0  # the frames of a stream waited for a commit
        await pilot_until(pilot, lambda: not main.frame_hold.held, "the hold to end", timeout=1.0)
        assert app._batch_count == 0  # noqa: SLF001
        text = transcript_text(main)
        assert all(f"streamed {i}" in text for i in range(40))


@linux_only
async def test_a_message_after_a_quiet_spell_is_drawn_at_once(demo_db: Path) -> None:
    async with following_tail(demo_db) as (_app, pilot, main, writer):
        await pilot.pause(0.5)
        writer.call("append_message", "tail", "assistant", content="one answer")
        await pilot_until(pilot, lambda: "one answer" in transcript_text(main), "the answer")
        await pilot.pause(0.3)
        writer.call("append_message", "tail", "assistant", content="a second answer")
        await pilot_until(pilot, lambda: "a second answer" in transcript_text(main), "the second")
        assert main.frame_hold.holds == 0


@pytest.mark.parametrize(
    ("before", "key"),
    [((), "down"), (("slash",), "x")],  # a list key; a letter typed in the search box, which stops its keys
    ids=["a list key", "typing in the search box"],
)
async def test_input_draws_a_held_frame_at_once(demo_db: Path, before: tuple[str, ...], key: str) -> None:
    """The app releases the hold on input, before any widget can stop the event."""
    app = live_app(demo_db)
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.pause(0.3)
        main = app.screen
        assert isinstance(main, MainScreen)
        await pilot.press(*before)
        await pilot.pause(0.1)
        assert main.has_class("-searching") == bool(before)
        main.frame_hold.max_s = 30.0
        main.frame_hold.hold()
        await pilot.press(key)
        assert not main.frame_hold.held
        assert app._batch_count == 0  # noqa: SLF001
