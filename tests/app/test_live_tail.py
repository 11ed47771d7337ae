"""The open transcript keeps following a writer that appends faster than frames are drawn.

The bench saw it drop out of `tail -f` mode within seconds at 20 messages/s: dropping the
window's front moved the offset up until the deferred scroll to the end, and a freshly mounted
message grew once laid out; either way the next append found the view "not at the bottom" and
counted "N new ↓" instead of following.
"""

from __future__ import annotations

import asyncio
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from textual._styles_cache import StylesCache
from textual.geometry import Region

from hermes_tui.app.widgets.transcript_pane import Transcript
from tests._wait import pilot_until

from .test_live import Writer, live_app, open_live, transcript_text

N = 170  # past the transcript's window of mounted items (120)


def _tall_session(writer: Writer, sid: str, n: int = 30) -> None:
    """A session taller than a 120x30 view (following scrolls it; its scrollbar is there)."""
    writer.call("create_session", sid, "cli")
    for i in range(n):
        writer.call("append_message", sid, "user", content=f"before {i}")


async def _at_its_end(pilot: Any, sid: str) -> tuple[Any, Transcript]:
    """The session open and its transcript at the end (`G`), following."""
    main = await open_live(pilot, sid)
    transcript = main.query_one("#transcript", Transcript)
    await pilot.press("G")
    await pilot_until(pilot, lambda: transcript.at_bottom and "before 29" in transcript_text(main), "the end")
    return main, transcript


async def test_transcript_keeps_following_a_fast_writer(demo_db: Path) -> None:
    writer = Writer(demo_db)
    try:
        writer.call("create_session", "fast", "cli")
        app = live_app(demo_db)
        async with app.run_test(size=(160, 50)) as pilot:
            main = await open_live(pilot, "fast")
            main.session_list.focus()  # a user watching: the list has the focus, no key pressed
            transcript = main.query_one("#transcript", Transcript)
            marked = 0
            for i in range(N):
                writer.call("append_message", "fast", "user", content=f"appender message {i}")
                await asyncio.sleep(0.04)
                marked = max(marked, transcript.new_below)
            last = f"appender message {N - 1}"
            await pilot_until(
                pilot,
                lambda: transcript.items and getattr(transcript.items[-1], "text", "") == last,
                "the last message",
            )
            await pilot.pause(0.2)
            assert max(marked, transcript.new_below) == 0  # never stopped following
            assert transcript.end == len(transcript.items) and transcript.start > 0
            await pilot_until(pilot, lambda: transcript.at_bottom, "the view at the end")
    finally:
        writer.close()


async def test_a_short_transcript_follows_whatever_its_offset(demo_db: Path) -> None:
    """Content shorter than the view shows its end: the next message follows, no "N new ↓".

    Textual's compositor puts an anchored view that is shorter than the screen at a negative
    offset (CI saw -11 with a maximum of 0, after following had left it at -23); the old check
    ``scroll_y >= max_scroll_y - 1`` then said "not at the bottom" and a new session's next
    messages were counted as new below instead of followed."""
    writer = Writer(demo_db)
    try:
        writer.call("create_session", "short", "cli")
        app = live_app(demo_db)
        async with app.run_test(size=(160, 50)) as pilot:
            main = await open_live(pilot, "short")
            transcript = main.query_one("#transcript", Transcript)
            writer.call("append_message", "short", "user", content="first")
            await pilot_until(pilot, lambda: transcript.message_count == 1, "the first message")
            await pilot.pause(0.3)
            assert transcript.max_scroll_y == 0
            transcript.set_reactive(Transcript.scroll_y, -11)  # as the compositor leaves it
            transcript._tail_at = None  # a layout since following moved the offset
            writer.call("append_message", "short", "user", content="second")
            await pilot_until(pilot, lambda: transcript.message_count == 2, "the second message")
            assert transcript.new_below == 0
    finally:
        writer.close()


async def test_a_followed_append_repaints_its_lines_and_the_count_row_not_the_whole_view(
    demo_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A followed append scrolls the view's lines (each row shows a new line) and changes the
    count in its subtitle, not the rest of its own paint: the top border row is not painted
    again (Textual repaints a whole widget for a `refresh()` or a new subtitle, ~3 ms an append
    for the widget transcript), and the bottom row shows the new count. Scrolled up, an append
    below the view repaints only that count row."""
    writer = Writer(demo_db)
    try:
        _tall_session(writer, "paint")
        app = live_app(demo_db)
        async with app.run_test(size=(120, 30)) as pilot:
            main, transcript = await _at_its_end(pilot, "paint")

            def bottom_row() -> str:
                width, height = transcript.outer_size  # (`size` is the content's)
                return transcript.render_lines(Region(0, height - 1, width, 1))[0].text

            await pilot_until(pilot, lambda: "30 msgs" in bottom_row(), "the count")
            painted: list[int] = []
            render_line = StylesCache.render_line

            def spy(self: StylesCache, styles: Any, y: int, *args: Any, **kwargs: Any) -> Any:
                if styles.node is transcript:
                    painted.append(y)
                return render_line(self, styles, y, *args, **kwargs)

            monkeypatch.setattr(StylesCache, "render_line", spy)
            for i in range(3):
                writer.call("append_message", "paint", "assistant", content=f"fresh {i}")
                await pilot_until(pilot, lambda i=i: f"{31 + i} msgs" in bottom_row(), f"count {31 + i}")
                await pilot_until(pilot, lambda i=i: f"fresh {i}" in transcript_text(main), f"fresh {i}")
            assert transcript.at_bottom
            bottom = transcript.outer_size.height - 1
            assert bottom in painted and 0 not in painted
            assert set(painted) <= set(range(1, bottom + 1))

            transcript.scroll_home(animate=False, immediate=True)  # the reader scrolls up
            await pilot.pause(0.3)
            painted.clear()
            for i in range(3):
                writer.call("append_message", "paint", "assistant", content=f"below {i}")
                await pilot_until(pilot, lambda i=i: f"{i + 1} new" in bottom_row(), f"{i + 1} new below")
            assert painted and set(painted) == {bottom}
    finally:
        writer.close()


async def test_a_followed_append_renders_its_new_message_once(
    demo_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new message is rendered to lines once (its strips are cached: neither the frames after
    it nor the next appends render it again), and each followed append paints the view in one
    frame, or two when the scrollbar's repaint falls in a frame of its own (the widget
    transcript: its parts asked for a repaint of their own after the layout that placed them)."""
    writer = Writer(demo_db)
    try:
        _tall_session(writer, "once")
        app = live_app(demo_db)
        async with app.run_test(size=(120, 30)) as pilot:
            main, transcript = await _at_its_end(pilot, "once")
            rendered: Counter[int] = Counter()
            render_message = Transcript._render_message

            def render_spy(self: Transcript, view: Any, *args: Any) -> Any:
                if view.id != self._drawn_cursor:  # (the cursor's message is drawn again)
                    rendered[view.id] += 1
                return render_message(self, view, *args)

            frames = 0
            render_lines = Transcript.render_lines

            def paint_spy(self: Transcript, crop: Region) -> Any:
                nonlocal frames
                if sys._getframe(1).f_code.co_name == "_get_renders" and crop.height > 1:
                    frames += 1  # (a frame painting its lines; one row: the count alone)
                return render_lines(self, crop)

            monkeypatch.setattr(Transcript, "_render_message", render_spy)
            monkeypatch.setattr(Transcript, "render_lines", paint_spy)
            ids = []
            for i in range(5):
                frames = 0
                mid = writer.call("append_message", "once", "assistant", content=f"fresh {i}")
                ids.append(mid)
                await pilot_until(pilot, lambda i=i: f"fresh {i}" in transcript_text(main), f"fresh {i}")
                await asyncio.sleep(0.3)  # (frames after it: none should render it again)
                assert frames in (1, 2), (i, frames)
                assert all(rendered[m] == 1 for m in ids), (i, rendered)
            assert transcript.at_bottom
    finally:
        writer.close()
