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

from hermes_tui.app.widgets.transcript import MessagePart, TranscriptView
from hermes_tui.app.widgets.transcript_pane import Transcript
from tests._wait import pilot_until

from .test_live import Writer, live_app, open_live, transcript_text

N = 170  # past the transcript's window of mounted items (120)


def _tall_session(writer: Writer, sid: str, n: int = 30) -> None:
    """A session taller than a 120x30 view (following scrolls it; its scrollbar is there)."""
    writer.call("create_session", sid, "cli")
    for i in range(n):
        writer.call("append_message", sid, "user", content=f"before {i}")


async def _at_its_end(pilot: Any, sid: str) -> tuple[Any, TranscriptView]:
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


async def test_a_followed_append_repaints_only_the_transcripts_count_row(
    demo_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An append changes the transcript's children and the count in its subtitle, not its own
    paint (background and border, behind the messages): of that paint only the bottom border row,
    where the count is, is painted again (Textual repainted all of it, ~3 ms an append), and that
    row shows the new count."""
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
            assert painted and set(painted) == {transcript.outer_size.height - 1}
    finally:
        writer.close()


async def test_a_followed_append_paints_its_new_message_once(
    demo_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The layout that places a new message paints it, and nothing asks for it again: Textual's
    styling at mount asked each new part for a repaint, posted once it was mounted (usually after
    that layout), and the part's size set by the layout asked for another, so every followed
    append painted its new parts again in a frame of their own."""
    writer = Writer(demo_db)
    try:
        _tall_session(writer, "once")
        app = live_app(demo_db)
        async with app.run_test(size=(120, 30)) as pilot:
            main, transcript = await _at_its_end(pilot, "once")
            painted: Counter[str | None] = Counter()
            render_lines = MessagePart.render_lines

            def spy(self: MessagePart, crop: Region) -> Any:
                if sys._getframe(1).f_code.co_name == "_get_renders":  # the compositor's paint
                    painted[self.id] += 1
                return render_lines(self, crop)

            asked: Counter[str | None] = Counter()
            on_update = type(main)._on_update

            async def update_spy(self: Any, message: Any) -> None:
                asked[message.widget.id] += 1
                await on_update(self, message)

            monkeypatch.setattr(MessagePart, "render_lines", spy)
            monkeypatch.setattr(type(main), "_on_update", update_spy)
            for i in range(5):
                painted.clear()
                asked.clear()
                mid = writer.call("append_message", "once", "assistant", content=f"fresh {i}")
                await pilot_until(pilot, lambda i=i: f"fresh {i}" in transcript_text(main), f"fresh {i}")
                await asyncio.sleep(0.3)  # (frames after it: none should paint it again)
                assert asked[f"msg-{mid}"] == 0, (i, asked[f"msg-{mid}"])
                assert painted[f"msg-{mid}"] in (1, 2), (i, painted[f"msg-{mid}"])
            # Painted by the layout that places it, and again by the frame that repaints the
            # transcript's scrollbar (Textual asks a bar to repaint after each layout, a frame
            # later, and paints what lies under the bar's clip with it); issue 36 dropped the
            # private-API scrollbar that joined the two frames. A part that asks for a repaint of
            # its own (`asked`) is the bug this test is for.
            assert transcript.at_bottom
    finally:
        writer.close()
