"""What the widget transcript's focusable and hoverable widgets did, in the Line-API transcript:
a fold title under the mouse takes `Fold:hover`'s look, the "more" rows (a message's "… more tool
calls", the window's "more messages") are reached with Tab and act on Enter, and text is selected
with the mouse (only text: the borders and padding cells are not part of it).
"""

from __future__ import annotations

from rich.style import Style
from textual.color import Color
from textual.geometry import Region

from hermes_tui.app.widgets.transcript_items import CALLS_SHOWN, FIRST_WINDOW
from hermes_tui.app.widgets.transcript_lines import LinesTranscript
from hermes_tui.app.widgets.transcript_lines_stops import window_row
from tests._wait import pilot_until

from .test_transcript_lines import LinesApp, line_of, open_lines, rows


def over(plain: list[Style], view: LinesTranscript, component: str) -> Color:
    """The background a component draws over the background the line had (`plain`'s)."""
    under = Color.from_rich_color(plain[0].bgcolor)
    return under + view.get_component_styles(component).background


def title_cells(view: LinesTranscript, line: int) -> list[Style]:
    """The styles of the text cells of virtual line ``line`` as painted (the view scrolled so
    that it is on screen), the border and padding columns left out."""
    y = 1 + line - round(view.scroll_y)  # (the border row above)
    strip = view.render_lines(Region(0, y, view.outer_size.width, 1))[0]
    cells = strip.crop(3, view.outer_size.width - 2)
    return [(s.style or Style()).clear_meta_and_links() for s in cells if s.text.strip()]


async def test_a_fold_title_under_the_mouse_takes_the_hover_look() -> None:
    app = LinesApp()
    async with app.run_test(size=(100, 30)) as pilot:
        view = await open_lines(pilot, rows(3))
        title = line_of(view, "▶ → terminal")
        view.scroll_to(y=0, animate=False, immediate=True)
        await pilot.pause()
        plain = title_cells(view, title)
        hover = over(plain, view, "lines--fold-hover").rich_color
        assert all(s.bgcolor != hover for s in plain)
        await pilot.hover(LinesTranscript, offset=(8, title + 1))
        await pilot_until(pilot, lambda: view.hovered is not None, "the mouse over the title")
        hovered = title_cells(view, title)
        foreground = view.get_component_rich_style("lines--fold-hover").color
        assert hovered and all(s.bgcolor == hover and s.color == foreground for s in hovered)
        await pilot.hover(LinesTranscript, offset=(8, title + 3))  # off the title: plain again
        await pilot_until(pilot, lambda: view.hovered is None, "the mouse off the title")
        assert title_cells(view, title) == plain


async def test_tab_reaches_the_more_tool_calls_row_and_enter_reveals_the_next_batch() -> None:
    calls = [{"function": {"name": f"tool{i}", "arguments": "{}"}} for i in range(CALLS_SHOWN + 5)]
    app = LinesApp()
    async with app.run_test(size=(100, 30)) as pilot:
        view = await open_lines(pilot, [{"id": 1, "role": "assistant", "content": "x", "tool_calls": calls}])
        more = line_of(view, "… and 5 more tool calls")
        view.scroll_to(y=more, animate=False, immediate=True)
        await pilot.pause()
        plain = title_cells(view, more)
        view.scroll_to(y=0, animate=False, immediate=True)
        await pilot.press(*["tab"] * (CALLS_SHOWN + 1))  # every call's fold, then the row
        await pilot.pause()
        assert view.focused_fold == view.stop_at(more) and app.focused is view
        focused = over(plain, view, "lines--fold-focus").rich_color
        assert all(s.bgcolor == focused for s in title_cells(view, more))  # drawn focused
        await pilot.press("enter")
        await pilot.pause()
        assert "more tool calls" not in view.window_text()
        assert f"▶ → tool{CALLS_SHOWN + 4}" in view.window_text()
        # The row went: the focus is on the first call it revealed.
        assert view.focused_fold == view.stop_at(line_of(view, f"▶ → tool{CALLS_SHOWN}"))


async def test_tab_reaches_the_more_messages_row_and_enter_shows_them() -> None:
    app = LinesApp()
    async with app.run_test(size=(100, 30)) as pilot:
        view = await open_lines(pilot, rows(1000))
        assert view.end == FIRST_WINDOW

        def row_line() -> int:
            drawn = view.window_text().split("\n")
            return next(k for k, text in enumerate(drawn) if "more messages" in text)

        # Tab from fold to fold on to the row below them (the window does not grow under the
        # reader for these scrolls, as it does when a scroll reaches its end).
        for _ in range(FIRST_WINDOW + 1):
            await pilot.press("tab")
            await pilot.pause()
            if view.focused_fold == window_row("after"):
                break
        assert view.focused_fold == window_row("after") and app.focused is view
        view.scroll_to(y=row_line(), animate=False, immediate=True)
        cells = title_cells(view, row_line())  # (read before the window grows at the end)
        assert view.get_component_rich_style("lines--more-focus").reverse
        assert cells and all(s.reverse for s in cells)  # drawn as a focused button
        await pilot.pause()
        end = view.end
        await pilot.press("enter")
        await pilot.pause()
        assert view.end > end  # the window grew over the next chunk
        assert view.focused_fold == window_row("after")  # the row is still there, focused


async def test_the_mouse_selects_text_without_the_borders() -> None:
    data_rows = [
        {"id": 1, "role": "user", "content": "alpha beta gamma"},
        {"id": 2, "role": "assistant", "content": "delta epsilon"},
    ]
    app = LinesApp()
    async with app.run_test(size=(100, 30)) as pilot:
        view = await open_lines(pilot, data_rows)
        first = line_of(view, "alpha beta gamma")
        second = line_of(view, "delta epsilon")
        view.scroll_to(y=0, animate=False, immediate=True)
        await pilot.pause()
        # From "beta" to the end of "delta" (the text starts at column 4: the pane's border and
        # padding, then the message's border and padding).
        await pilot.mouse_down(LinesTranscript, offset=(4 + 6, first + 1))
        await pilot.hover(LinesTranscript, offset=(4 + 4, second + 1))
        await pilot.mouse_up(LinesTranscript, offset=(4 + 4, second + 1))
        await pilot.pause()
        selected = app.screen.get_selected_text()
        assert selected is not None
        lines = selected.splitlines()
        assert lines[0] == "beta gamma" and lines[-1] == "delta"
        assert "▎" not in selected  # no border cell
        look = app.screen.get_component_rich_style("screen--selection")
        painted = title_cells(view, first)
        assert any(s.bgcolor == look.bgcolor for s in painted)  # drawn selected
