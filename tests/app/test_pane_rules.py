"""The panes' decisions as pure functions (`controllers/panes.py`): no app."""

from __future__ import annotations

from hermes_tui.app.controllers.panes import READING_COLS, auto_list_width, footer_keys, pane_hidden
from hermes_tui.app.settings import Settings


def test_footer_keys_fit_the_width_and_the_view() -> None:
    narrow = footer_keys(80, "default", filtered=False)
    assert not any(narrow.values())
    wide = footer_keys(130, "default", filtered=True)
    assert all(wide.values())
    archived = footer_keys(80, "archived", filtered=False)
    assert archived["screen.toggle_archived"] and not archived["screen.clear_filters"]


def test_the_list_takes_what_the_transcript_does_not_need_on_a_wide_screen() -> None:
    assert auto_list_width(120) is None  # 40 columns: under 52 %, the stylesheet's split
    assert auto_list_width(200) == 200 - READING_COLS


def test_hidden_panes() -> None:
    shown = Settings()
    assert not pane_hidden(shown, {"sessions", "left"}, searching=False)
    no_list = Settings(show_list=False)
    assert pane_hidden(no_list, {"sessions", "left"}, searching=False)
    assert not pane_hidden(no_list, {"sessions", "left"}, searching=True)  # search shows over it
    assert pane_hidden(Settings(show_transcript=False), {"transcript", "right"}, searching=False)
    assert pane_hidden(Settings(show_lineage=False), {"lineage"}, searching=True)
