"""The Line-API transcript (`widgets/transcript_lines.py`, the app's transcript): it draws what
the widget transcript before it drew, cell for cell (`GOLDEN`), and keeps its behaviours (the window
of a huge session, live appends that follow or count "new below", folds, hidden rows, the
message cursor, find), without a widget per message.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any, ClassVar

import pytest
from textual.app import App, ComposeResult
from textual.geometry import Region
from textual.pilot import Pilot
from textual.strip import Strip
from textual.widgets import Static

from hermes_tui.app.styles import stylesheet_paths
from hermes_tui.app.widgets.transcript_items import (
    CALLS_SHOWN,
    FIRST_WINDOW,
    FOLLOW_DROP_STEP,
    FOLLOW_WINDOW,
    JUMP_WINDOW,
    MAX_WINDOW,
    Divider,
    MessageView,
    SessionHead,
    TranscriptData,
    message_view,
)
from hermes_tui.app.widgets.transcript_lines import LinesTranscript
from hermes_tui.state import FOLD_HIDDEN
from tests._wait import pilot_until
from tests.app._support import transcript_rows as rows

#: The pane's size, which the app's stylesheet gives `#transcript` (the view here is `#lines`).
PANE_CSS = "#lines { height: 1fr; padding: 0 1; }"


class LinesApp(App[None]):
    CSS_PATH: ClassVar = stylesheet_paths()
    CSS = PANE_CSS

    def __init__(self) -> None:
        super().__init__()
        self.notes: list[str] = []

    def compose(self) -> ComposeResult:
        yield LinesTranscript(id="lines")

    def notify(self, message: str, *args: Any, **kwargs: Any) -> None:
        self.notes.append(message)
        super().notify(message, *args, **kwargs)


#: What the widget transcript drew (the transcript before this one, one widget per message part),
#: cell for cell, per test: recorded from the Line-API view while a test compared the two side by
#: side and found them equal (branch s42-lines, before the widget view was removed). A
#: `WidthApp` gives the view the width it had there (half of a 160-column screen).
GOLDEN: dict[str, list[dict[str, Any]]] = json.loads(
    (Path(__file__).parent / "transcript_lines_golden.json").read_text(encoding="utf-8")
)


class Elsewhere(Static, can_focus=True):
    """Somewhere else for the focus to go (one line under the transcript)."""

    DEFAULT_CSS = "Elsewhere { height: 1; }"


class WidthApp(App[None]):
    """The Line-API transcript, at the width it had beside the widget transcript; with
    ``elsewhere``, a focusable line under it."""

    CSS_PATH: ClassVar = stylesheet_paths()
    CSS = PANE_CSS

    def __init__(self, elsewhere: bool = False) -> None:
        super().__init__()
        self.elsewhere = elsewhere

    def compose(self) -> ComposeResult:
        yield LinesTranscript(id="lines")
        if self.elsewhere:
            yield Elsewhere("elsewhere")


def runs(strip: Strip) -> list[list[Any]]:
    """A line as runs of [text, [colour, background, bold, italic, dim, underline]] (as recorded)."""
    out: list[list[Any]] = []
    for ch, look in cells(strip):
        key = None
        if look is not None:
            color, bg, bold, italic, dim, underline = look
            key = [
                None if color is None else (color.triplet.hex if color.triplet else color.name),
                None if bg is None else (bg.triplet.hex if bg.triplet else bg.name),
                bold,
                italic,
                dim,
                underline,
            ]
        if out and out[-1][1] == key:
            out[-1][0] += ch
        else:
            out.append([ch, key])
    return out


def assert_drawn_as_before(test: str, n: int, view: LinesTranscript, mine: list[Strip]) -> None:
    """``mine`` is, cell for cell, what the widget transcript drew (`GOLDEN[test][n]`)."""
    golden = GOLDEN[test][n]
    assert list(view.outer_size) == golden["outer"]
    assert len(mine) == len(golden["lines"])
    for y, (strip, want) in enumerate(zip(mine, golden["lines"], strict=True)):
        assert runs(strip) == want, f"line {y}: {strip.text!r}"


async def open_lines(
    pilot: Pilot[None], data_rows: list[dict[str, Any]], target: int | None = None
) -> LinesTranscript:
    view = pilot.app.query_one(LinesTranscript)
    await view.show(
        TranscriptData(session_id="s", items=[message_view(r) for r in data_rows]), target_id=target
    )
    view.focus()
    await pilot.pause()
    return view


def window_lines(view: LinesTranscript) -> list[str]:
    """Every line of the window, as text (what `render_line` returns, scrolled to each)."""
    out = []
    height = view.scrollable_content_region.height
    for line in range(view.virtual_size.height):
        if not view.scroll_y <= line < view.scroll_y + height:
            view.scroll_to(y=line, animate=False, immediate=True)
        out.append(view.render_line(line - round(view.scroll_y)).text.rstrip())
    return out


def content_text(view: LinesTranscript) -> list[str]:
    return window_lines(view)


def visible_text(view: LinesTranscript) -> str:
    return "\n".join(view.render_line(y).text for y in range(view.scrollable_content_region.height))


def cells(strip: Strip) -> list[tuple[str, Any]]:
    """Each cell of a line: its character, colours and text style."""
    out = []
    for segment in strip:
        st = segment.style
        look = (st.color, st.bgcolor, st.bold, st.italic, st.dim, st.underline) if st else None
        out += [(ch, look) for ch in segment.text]
    return out


def lines_transcript_lines(view: LinesTranscript) -> list[Strip]:
    """What the Line-API transcript draws inside its border and padding, every line."""
    out = []
    inner = view.scrollable_content_region
    for line in range(view.virtual_size.height):
        if not view.scroll_y <= line < view.scroll_y + inner.height:
            view.scroll_to(y=line, animate=False, immediate=True)
        y = 1 + line - round(view.scroll_y)  # (the border row above)
        strip = view.render_lines(Region(0, y, view.outer_size.width, 1))[0]
        out.append(strip.crop(2, 2 + inner.width))  # (the border and padding columns)
    return out


async def test_lines_draw_what_the_widget_transcript_draws() -> None:
    """Header, Markdown body, the role's border and padding, folds (closed and all open),
    reasoning, JSON output and the margin under each message, the message cursor on the first
    one: the same characters in the same colours and styles, cell for cell."""
    data_rows = [
        {"id": 1, "role": "user", "content": "Fix the **build**, please.\n\n- one\n- two"},
        {
            "id": 2,
            "role": "assistant",
            "content": "Looking at it:\n\n```python\nprint('hi')\n```",
            "reasoning": "the build fails on import",
            "tool_calls": [{"function": {"name": "terminal", "arguments": '{"cmd": "make"}'}}],
        },
        {"id": 3, "role": "tool", "tool_name": "terminal", "content": '{"ok": true, "lines": 3}'},
        {"id": 4, "role": "system", "content": "a note"},
    ]
    app = WidthApp()
    async with app.run_test(size=(80, 60)) as pilot:
        items = [message_view(r) for r in data_rows]
        lines = app.query_one(LinesTranscript)
        await lines.show(TranscriptData(session_id="s", items=list(items)))
        app.set_focus(None)
        await pilot.pause()
        test = "test_lines_draw_what_the_widget_transcript_draws"
        assert_drawn_as_before(test, 0, lines, lines_transcript_lines(lines))
        assert "▶ reasoning" in "\n".join(window_lines(lines))
        # Every fold open (`x`): still the same lines.
        lines.focus()
        await pilot.press("x")
        app.set_focus(None)
        await pilot.pause()
        assert "  the build fails on import" in "\n".join(window_lines(lines))
        assert_drawn_as_before(test, 1, lines, lines_transcript_lines(lines))


async def test_a_live_append_at_the_end_follows_and_the_window_stays_bounded() -> None:
    app = LinesApp()
    async with app.run_test(size=(100, 30)) as pilot:
        view = await open_lines(pilot, rows(30))
        await pilot.press("end")
        await pilot.pause()
        assert view.at_bottom
        next_id = 31
        for _ in range(30):
            batch = [message_view(r) for r in rows(4, start=next_id)]
            next_id += 4
            assert await view.append_items(batch)
            await pilot.pause()
            assert view.at_bottom, "it follows the end"
            assert view.end == len(view.items)
            assert view.end - view.start <= FOLLOW_WINDOW + FOLLOW_DROP_STEP
        assert view.last_message_id == next_id - 1
        assert f"#{next_id - 1}" in visible_text(view)
        assert view.new_below == 0
        assert len(view.children) == 0, "no widget per message"
        # The same message again (a compaction copy already shown) is not appended twice.
        assert not await view.append_items([message_view(rows(1, start=next_id - 1)[0])])


async def test_scrolled_up_a_live_append_stays_put_and_counts_new_below() -> None:
    app = LinesApp()
    async with app.run_test(size=(100, 30)) as pilot:
        view = await open_lines(pilot, rows(200))
        before = visible_text(view)
        assert not await view.append_items([message_view(r) for r in rows(3, start=201)])
        await pilot.pause()
        assert view.new_below == 3
        assert view.scroll_y == 0 and visible_text(view) == before
        await pilot.press("end")
        await pilot.pause()
        assert view.at_bottom and view.new_below == 0
        assert "#203" in visible_text(view)


async def test_a_huge_session_renders_a_window_that_moves_with_the_reader() -> None:
    app = LinesApp()
    async with app.run_test(size=(100, 30)) as pilot:
        view = await open_lines(pilot, rows(3000))
        assert (view.start, view.end) == (0, FIRST_WINDOW)
        assert "▼ 2,988 more messages" in "\n".join(content_text(view))
        view.scroll_to(y=0, animate=False, immediate=True)
        await pilot.press(*["pagedown"] * 30)
        await pilot.pause()
        assert view.end > FIRST_WINDOW, "reading on renders the next items"
        assert view.end - view.start <= MAX_WINDOW
        await pilot.press("end")
        await pilot.pause()
        assert (view.start, view.end) == (3000 - JUMP_WINDOW, 3000) and view.at_bottom
        assert "#3000" in visible_text(view)
        view.scroll_to(y=0, animate=False, immediate=True)
        top_text = visible_text(view).splitlines()
        assert "▲ 2,960 earlier messages" in top_text[0]
        await pilot.pause()  # reaching the top renders the chunk before; the reader's text stays
        assert view.start == 3000 - JUMP_WINDOW - 20
        assert visible_text(view).splitlines()[2:] == top_text[2:]
        await pilot.press("home")
        await pilot.pause()
        assert view.start == 0 and view.scroll_y == 0 and "#1 " in visible_text(view)


def line_of(view: LinesTranscript, needle: str) -> int:
    """The virtual line (in the window) whose text holds ``needle`` (a message's header when it
    is ``#id``)."""
    for line, text in enumerate(window_lines(view)):
        if needle in text if not needle.startswith("#") else text.endswith(needle):
            return line
    raise AssertionError(f"{needle!r} not drawn")


async def test_a_click_on_a_fold_title_opens_and_closes_it() -> None:
    app = LinesApp()
    async with app.run_test(size=(100, 30)) as pilot:
        view = await open_lines(pilot, rows(3))
        title = line_of(view, "▶ → terminal")
        view.scroll_to(y=0, animate=False, immediate=True)
        height = view.virtual_size.height
        await pilot.click(LinesTranscript, offset=(5, title + 1))  # (+1: the border row)
        await pilot.pause()
        assert "▼ → terminal" in visible_text(view)
        assert '"cmd": "ls 1"' in visible_text(view)
        assert view.virtual_size.height > height
        await pilot.click(LinesTranscript, offset=(5, title + 1))
        await pilot.pause()
        assert "▶ → terminal" in visible_text(view) and view.virtual_size.height == height


async def test_a_message_with_many_tool_calls_reveals_them_a_batch_at_a_time() -> None:
    calls = [{"function": {"name": f"tool{i}", "arguments": "{}"}} for i in range(120)]
    app = LinesApp()
    async with app.run_test(size=(100, 30)) as pilot:
        view = await open_lines(pilot, [{"id": 1, "role": "assistant", "content": "x", "tool_calls": calls}])
        text = "\n".join(content_text(view))
        assert f"→ tool{CALLS_SHOWN - 1}" in text and f"→ tool{CALLS_SHOWN} " not in text
        assert "… and 70 more tool calls" in text
        more = line_of(view, "… and 70 more tool calls")
        fold = view.fold_at(more)
        assert fold is not None
        view.toggle_fold(*fold)
        text = "\n".join(content_text(view))
        assert "→ tool99" in text and "→ tool100" not in text and "… and 20 more tool calls" in text


async def test_hidden_rows_show_on_h() -> None:
    data_rows = [
        {"id": 1, "role": "user", "content": "shown"},
        {"id": 2, "role": "user", "content": "scaffolding", "fold": FOLD_HIDDEN},
    ]
    app = LinesApp()
    async with app.run_test(size=(100, 30)) as pilot:
        view = await open_lines(pilot, data_rows)
        assert "scaffolding" not in visible_text(view) and view.hidden_rows == 1
        await pilot.press("h")
        await pilot.pause()
        assert "scaffolding" in visible_text(view) and "hidden" in visible_text(view)
        assert app.notes[-1:] == ["1 hidden row shown (model-facing: Hermes never shows them)"]
        await pilot.press("h")
        await pilot.pause()
        assert "scaffolding" not in visible_text(view)


async def test_the_message_cursor_moves_with_brackets_and_is_drawn() -> None:
    app = LinesApp()
    async with app.run_test(size=(100, 30)) as pilot:
        view = await open_lines(pilot, rows(40))
        current = view.current_message()
        assert isinstance(current, MessageView) and current.id == 1
        await pilot.press("right_square_bracket", "right_square_bracket")
        await pilot.pause()
        assert view.current_id == 3
        y = line_of(view, "#3") - round(view.scroll_y)
        cursor = view.get_component_rich_style("lines--current-focus").bgcolor
        assert cursor is not None
        assert all(
            s.style is not None and s.style.bgcolor == cursor for s in view.render_line(y) if s.text.strip()
        )
        other = line_of(view, "#2") - round(view.scroll_y)
        assert all(s.style is None or s.style.bgcolor != cursor for s in view.render_line(other))
        view.scroll_to(y=0, animate=False, immediate=True)  # (`line_of` scrolled through the window)
        for _ in range(30):
            await pilot.press("right_square_bracket")
        await pilot.pause()
        assert view.current_id == 33
        assert "#33 " in visible_text(view), "the cursor is scrolled into view (the window grew)"


async def test_find_marks_the_match_steps_through_hits_and_puts_the_search_hit_back() -> None:
    app = LinesApp()
    async with app.run_test(size=(100, 30)) as pilot:
        view = await open_lines(pilot, rows(300), target=3)  # opened at a search hit
        await pilot.press("ctrl+f")
        bar = view.find_bar
        assert bar is not None and app.focused is bar.input
        await pilot.press(*"question 21")  # 21, and the user messages among 210..219
        await pilot_until(pilot, lambda: bar.count_text == "1/5", "the first match is counted")
        assert [view.items[i].id for i in view.find_hits] == [21, 210, 213, 216, 219]  # type: ignore[union-attr]
        assert view.target_id == 21 and "◆ match" in visible_text(view)
        await pilot.press("shift+enter")
        await pilot_until(pilot, lambda: bar.count_text == "5/5", "the previous match wraps around")
        assert view.target_id == 219 and "#219" in visible_text(view)
        assert view.start <= 218 < view.end
        await pilot.press("enter")
        await pilot_until(pilot, lambda: bar.count_text == "1/5", "the next match wraps around")
        assert view.target_id == 21
        await pilot.press("escape")
        await pilot_until(pilot, lambda: not view.finding, "the find closes")
        assert not bar.display and app.focused is view
        assert view.target_id == 3, "the search hit is marked again"


@pytest.mark.parametrize(
    "case", ["search hit", "hidden rows shown", "head and divider", "focused", "more tool calls"]
)
async def test_lines_draw_each_state_as_the_widget_transcript_does(case: str) -> None:
    """The marked search hit (terms highlighted, its output open, its accent border and
    background), folded-away rows shown by `h` (faded, italic), a working session's head and a
    chain's divider, the cursor's colour with the focus: cell for cell the same."""
    data_rows = [
        {"id": 1, "role": "user", "content": "find the needle here"},
        {
            "id": 2,
            "role": "assistant",
            "content": "a **needle** in markdown",
            "tool_calls": [{"function": {"name": "grep", "arguments": '{"q": "needle"}'}}],
        },
        {"id": 3, "role": "tool", "tool_name": "grep", "content": '{"found": "needle"}'},
        {"id": 4, "role": "user", "content": "scaffold", "fold": FOLD_HIDDEN},
    ]
    items: list[Any] = [message_view(r) for r in data_rows]
    if case == "head and divider":
        head = SessionHead(
            "s", activity="thinking hard", prompt="You are helpful.", prompt_lines=1, prompt_chars=16
        )
        items = [head, Divider("s", 1, 2, "first", None, 2), *items]
    if case == "more tool calls":
        calls = [{"function": {"name": f"tool{i}", "arguments": "{}"}} for i in range(CALLS_SHOWN + 7)]
        items.append(message_view({"id": 5, "role": "assistant", "content": "many", "tool_calls": calls}))
    target, terms = (3, ("needle",)) if case == "search hit" else (None, ())
    app = WidthApp()
    async with app.run_test(size=(80, 60)) as pilot:
        lines = app.query_one(LinesTranscript)
        await lines.show(TranscriptData(session_id="s", items=list(items)), target_id=target, terms=terms)
        app.set_focus(None)
        await pilot.pause()
        if case == "hidden rows shown":
            lines.action_toggle_hidden_rows()
            await pilot.pause()
        if case == "focused":
            lines.focus()
            await pilot.pause()
        mine = lines_transcript_lines(lines)
        assert_drawn_as_before(
            f"test_lines_draw_each_state_as_the_widget_transcript_does[{case}]", 0, lines, mine
        )
        shown = "\n".join(window_lines(lines))
        if case == "search hit":
            assert "◆ match" in shown and "▼ result (3 lines)" in shown
        elif case == "hidden rows shown":
            assert "scaffold" in shown
        elif case == "head and divider":
            assert "● working: thinking hard" in shown and "── segment 1/2 · first" in shown
        elif case == "more tool calls":
            assert "… and 7 more tool calls" in shown


async def test_an_empty_session_and_a_cleared_view_show_the_note_as_the_widget_transcript_does() -> None:
    app = WidthApp()
    async with app.run_test(size=(80, 30)) as pilot:
        lines = app.query_one(LinesTranscript)
        for n, step in enumerate(("empty", "cleared")):
            if step == "empty":
                await lines.show(TranscriptData(session_id="s", items=[]))
            else:
                await lines.clear_transcript("The session was deleted.")
            app.set_focus(None)
            await pilot.pause()
            mine = lines_transcript_lines(lines)
            assert [s.text.strip() for s in mine if s.text.strip()] == [
                "This session has no messages." if step == "empty" else "The session was deleted."
            ]
            test = "test_an_empty_session_and_a_cleared_view_show_the_note_as_the_widget_transcript_does"
            assert_drawn_as_before(test, n, lines, mine)


async def test_the_head_follows_the_sessions_activity_and_the_window_is_told() -> None:
    head = SessionHead("s", activity="reading files", prompt="p", prompt_lines=1, prompt_chars=1)
    windows: list[tuple[int, int, int]] = []
    app = LinesApp()
    async with app.run_test(
        size=(100, 30),
        message_hook=lambda m: (
            windows.append((m.start, m.end, m.total))
            if isinstance(m, LinesTranscript.WindowChanged)
            else None
        ),
    ) as pilot:
        view = app.query_one(LinesTranscript)
        await view.show(TranscriptData(session_id="s", items=[head, *(message_view(r) for r in rows(100))]))
        await pilot.pause()
        assert "● working: reading files" in visible_text(view)
        view.update_activity({"id": "s", "last_activity_description": "running tests"})
        await pilot.pause()
        assert "● working: running tests" in visible_text(view)
        view.update_activity({"id": "s", "ended_at": 5.0, "last_activity_description": "x"})
        await pilot.pause()
        assert "working" not in visible_text(view)
        assert windows[-1] == (0, FIRST_WINDOW, 101)
        await pilot.press("end")
        await pilot.pause()
        assert windows[-1] == (101 - JUMP_WINDOW, 101, 101)


async def test_rewound_rows_follow_the_screens_show_inactive_class() -> None:
    """The screen's `i` toggles `-show-inactive` on the screen (the widget transcript's rows
    follow it by CSS): the Line-API view follows it at its next frame."""
    data_rows = [
        {"id": 1, "role": "user", "content": "kept"},
        {"id": 2, "role": "user", "content": "taken back", "active": 0},
    ]
    app = LinesApp()
    async with app.run_test(size=(100, 30)) as pilot:
        view = await open_lines(pilot, data_rows)
        assert "taken back" not in visible_text(view)
        app.screen.add_class("-show-inactive")
        await pilot_until(pilot, lambda: "taken back" in visible_text(view), "the rewound row shows")
        assert "rewound" in visible_text(view)
        app.screen.remove_class("-show-inactive")
        await pilot_until(pilot, lambda: "taken back" not in visible_text(view), "it is folded away again")


async def test_the_more_rows_look_like_the_widget_transcripts_buttons() -> None:
    """A window in the middle of a session: "▲ N earlier" above, "▼ N more" below, each a
    compact button's look and the blank line under it."""
    app = WidthApp()
    async with app.run_test(size=(80, 60)) as pilot:
        lines = app.query_one(LinesTranscript)
        items = [message_view(r) for r in rows(200)]
        await lines.show(TranscriptData(session_id="s", items=list(items)), target_id=100)
        app.set_focus(None)
        await pilot.pause()
        mine = lines_transcript_lines(lines)
        assert "▲ 95 earlier messages" in mine[0].text and "▼ 89 more messages" in mine[-2].text
        assert_drawn_as_before("test_the_more_rows_look_like_the_widget_transcripts_buttons", 0, lines, mine)


async def test_tab_focuses_the_folds_in_turn_as_the_widget_transcripts_folds() -> None:
    """Tab onto a fold: its title drawn focused, its message the current one, the view's border
    and cursor as while a `Fold` has the focus (cell for cell, border included); Enter toggles
    it; past the last fold Tab leaves the transcript."""
    data_rows = [
        {"id": 1, "role": "user", "content": "run it"},
        {
            "id": 2,
            "role": "assistant",
            "content": "running",
            "tool_calls": [
                {"function": {"name": "first", "arguments": "{}"}},
                {"function": {"name": "second", "arguments": '{"n": 2}'}},
            ],
        },
        {"id": 3, "role": "tool", "tool_name": "second", "content": "done"},
    ]
    app = WidthApp(elsewhere=True)
    async with app.run_test(size=(80, 41)) as pilot:
        lines = app.query_one(LinesTranscript)
        items = [message_view(r) for r in data_rows]
        await lines.show(TranscriptData(session_id="s", items=list(items)))
        await pilot.pause()
        lines.focus()
        await pilot.press("tab", "tab")
        await pilot.pause()
        assert lines.focused_fold == (("m", 2), 1) and lines.current_id == 2
        test = "test_tab_focuses_the_folds_in_turn_as_the_widget_transcripts_folds"
        assert_drawn_as_before(test, 0, lines, lines_transcript_lines(lines))
        mine = [
            lines.render_lines(Region(0, y, lines.outer_size.width, 1))[0]
            for y in (0, lines.outer_size.height - 1)
        ]
        border = [
            [ch for text, look in row for ch in [(c, look) for c in text]][:3]
            for row in GOLDEN[test][1]["lines"]
        ]
        drawn = [[(c, look) for text, look in runs(strip) for c in text][:3] for strip in mine]
        assert drawn == border, "the border looks unfocused"
        await pilot.press("enter")
        await pilot.pause()
        assert '"n": 2' in visible_text(lines)
        await pilot.press("tab", "tab")
        await pilot.pause()
        assert app.focused is not lines and lines.focused_fold is None


async def test_messages_appended_before_the_view_has_a_width_show_once_it_has_one() -> None:
    """A live append can come before the first layout (the pane hidden, the app starting): the
    window stays consistent and the messages are drawn once the view is laid out."""
    app = LinesApp()
    async with app.run_test(size=(100, 30)) as pilot:
        view = app.query_one(LinesTranscript)
        view.display = False
        await pilot.pause()
        await view.show(TranscriptData(session_id="s", items=[message_view(r) for r in rows(3)]))
        await view.append_items([message_view(r) for r in rows(2, start=4)])
        assert (view.start, view.end) == (0, 5)
        view.display = True
        await pilot_until(pilot, lambda: "#5" in visible_text(view), "the appended message is drawn")
        assert line_of(view, "#1") < line_of(view, "#5")


async def test_a_new_theme_redraws_the_lines_in_its_colours() -> None:
    app = LinesApp()
    async with app.run_test(size=(100, 30)) as pilot:
        view = await open_lines(pilot, rows(6))
        user = line_of(view, "#3")

        def border_colour() -> Any:
            view.scroll_to(y=0, animate=False, immediate=True)
            style = list(view.render_line(user))[0].style
            return style.color if style else None

        assert border_colour() == view.get_component_rich_style("lines--border-user").color
        before = border_colour()
        app.theme = "gruvbox"
        await pilot_until(
            pilot,
            lambda: border_colour() == view.get_component_rich_style("lines--border-user").color != before,
            "the user's border takes the new theme's primary colour",
        )


async def test_a_message_is_parsed_once_while_it_is_in_the_window(monkeypatch: pytest.MonkeyPatch) -> None:
    """Drawing a message again (the cursor's colour moving on and off it, `x` opening and
    closing its folds) does not parse its Markdown again: the live path's records come
    unprepared (`transcript_items`), and a redraw parsed them every time (a followed append
    redraws the cursor's message)."""
    import hermes_tui.app.widgets.transcript_lines_items as drawn

    parsed: Counter[int] = Counter()
    prepare = drawn.prepare

    def spy(view: MessageView) -> Any:
        parsed[view.id] += 1
        return prepare(view)

    monkeypatch.setattr(drawn, "prepare", spy)
    app = LinesApp()
    async with app.run_test(size=(100, 30)) as pilot:
        view = app.query_one(LinesTranscript)
        items = [message_view(r, prepared=False) for r in rows(6)]
        await view.show(TranscriptData(session_id="s", items=list(items)))
        view.focus()
        await pilot.pause()
        await pilot.press("right_square_bracket", "right_square_bracket", "left_square_bracket")
        await pilot.press("x")
        await pilot.pause()
        await pilot.press("x")
        await pilot.pause()
        assert view.current_id == 2
        assert set(parsed) == {1, 2, 3, 4, 5, 6} and all(n == 1 for n in parsed.values()), parsed
