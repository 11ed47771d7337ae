"""The transcript's `PaintedScrollBar` paints exactly what Textual's own path paints for it.

It skips Textual's per-line styling (the bar has no border, padding or text), so the proof is a
comparison with that path: every theme, idle, hovered and grabbed, at positions along the bar."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.geometry import Offset, Region
from textual.scrollbar import ScrollBar

from hermes_tui.app.widgets.scrollbar import PaintedScrollBar
from hermes_tui.app.widgets.transcript import TranscriptView
from tests._wait import pilot_until

from ._support import make_app, settle


def _segments(lines: list[Any]) -> list[list[tuple[str, Any]]]:
    return [[(seg.text, seg.style) for seg in line] for line in lines]


async def test_the_painted_bar_is_textuals_bar_in_every_theme_and_state(demo_db: Path) -> None:
    app = make_app(demo_db)
    async with app.run_test(size=(120, 30)) as pilot:
        main = pilot.app.screen
        await settle(pilot)
        sid = main.session_list._ids[0]
        main.open_session(sid)
        await pilot_until(pilot, lambda: main.current_session == sid, "a session open")
        transcript = main.query_one("#transcript", TranscriptView)
        for _ in range(4):  # tall enough for a bar: open every fold
            transcript.action_toggle_folds()
            await settle(pilot)
            if transcript.max_scroll_y > 10:
                break
        assert transcript.max_scroll_y > 10, "the demo session should scroll"
        bar = transcript.vertical_scrollbar
        assert isinstance(bar, PaintedScrollBar)
        await pilot_until(pilot, lambda: bar.size.height > 0, "the bar shown")
        width, height = bar.size
        checked = 0
        for theme in sorted(app.available_themes):
            app.theme = theme
            await settle(pilot)
            for step in range(0, 9):
                transcript.scroll_to(y=transcript.max_scroll_y * step / 8, animate=False, immediate=True)
                await pilot.pause()
                for state in ("idle", "hover", "grabbed"):  # (at one position: the state alone changes)
                    bar.mouse_over = state == "hover"
                    bar.grabbed = Offset(0, 1) if state == "grabbed" else None
                    for crop in (Region(0, 0, width, height), Region(0, 3, width, height - 5)):
                        bar._set_dirty()
                        want = _segments(ScrollBar.render_lines(bar, crop))
                        got = _segments(bar.render_lines(crop))
                        assert got == want, (theme, state, step, crop)
                        checked += 1
        bar.grabbed = None
        bar.mouse_over = False
        assert checked >= 2 * 3 * 9 * 2


async def test_the_bar_repaints_for_a_new_theme_at_the_same_position(demo_db: Path) -> None:
    """The kept lines follow what `render` gives now: a theme change with the thumb where it was
    paints the new theme's colours (as Textual's own path does)."""
    app = make_app(demo_db)
    async with app.run_test(size=(120, 30)) as pilot:
        main = pilot.app.screen
        await settle(pilot)
        bar = main.session_list.vertical_scrollbar
        assert isinstance(bar, PaintedScrollBar)
        await pilot_until(pilot, lambda: bar.size.height > 0, "the list's bar shown")
        width, height = bar.size
        crop = Region(0, 0, width, height)
        themes = sorted(app.available_themes)
        assert len(themes) >= 2
        seen = set()
        for theme in themes:
            app.theme = theme
            await settle(pilot)
            got = _segments(bar.render_lines(crop))
            bar._set_dirty()
            assert got == _segments(ScrollBar.render_lines(bar, crop)), theme
            seen.add(repr(got))
        assert len(seen) > 1, "the themes should paint the bar differently"


async def test_a_refresh_that_would_paint_the_same_lines_is_dropped(demo_db: Path) -> None:
    """Textual asks each vertical bar to repaint whenever the screen is laid out; a bar whose
    lines would not change asks for no frame, one whose thumb moved does."""
    app = make_app(demo_db)
    async with app.run_test(size=(120, 30)) as pilot:
        main = pilot.app.screen
        await settle(pilot)
        sessions = main.session_list
        bar = sessions.vertical_scrollbar
        assert isinstance(bar, PaintedScrollBar)
        await pilot_until(pilot, lambda: bar.size.height > 0, "the list's bar shown")
        bar.render_lines(Region(0, 0, *bar.size))  # (what the screen shows now)
        assert sessions.max_scroll_y > 0
        bar._repaint_required = False
        bar.refresh()
        assert not bar._repaint_required, "nothing changed: no repaint"
        sessions.scroll_to(y=sessions.max_scroll_y, animate=False, immediate=True)
        bar._repaint_required = False
        bar.refresh()
        assert bar._repaint_required, "the thumb moved: a repaint"
        await settle(pilot)
        bar._set_dirty()
        crop = Region(0, 0, *bar.size)
        assert _segments(bar.render_lines(crop)) == _segments(ScrollBar.render_lines(bar, crop))
