"""Find in the transcript: ctrl+f or `/` in the transcript, incremental, i/N, n/N and
Enter/shift+Enter, folds opened on a hit, far hits windowed, Esc clears.

The find searches every message record in memory (not only the mounted window) and moves the
bounded window to the match.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from textual.app import App, ComposeResult
from textual.pilot import Pilot
from textual.widgets import Input

from hermes_tui.app.screens.main import MainScreen
from hermes_tui.app.styles import stylesheet_paths
from hermes_tui.app.widgets.find_bar import FindBar
from hermes_tui.app.widgets.search import SearchPane
from hermes_tui.app.widgets.transcript_items import (
    MAX_WINDOW,
    MessageView,
    TranscriptData,
    find_hits,
    message_view,
)
from hermes_tui.app.widgets.transcript_pane import Transcript
from hermes_tui.state import SessionDB

from ._support import drawn_as_match, make_app, settle
from .test_actions import open_on, sid_of
from .test_transcript import drawn_message, marked_pieces, strips_text

CI_SESSION = "Fix flaky CI on the payments service"


class FindApp(App[None]):
    """A bare transcript (the find bar is mounted beside it on first use)."""

    CSS_PATH: ClassVar = stylesheet_paths()

    def compose(self) -> ComposeResult:
        yield Transcript(id="transcript")


def filler(n: int, start: int) -> list[dict[str, Any]]:
    return [
        {"id": i, "role": "user" if i % 2 else "assistant", "content": f"filler message {i}"}
        for i in range(start, start + n)
    ]


async def show(pilot: Pilot[None], rows: list[dict[str, Any]], **kw: Any) -> Transcript:
    transcript = pilot.app.query_one(Transcript)
    await transcript.show(TranscriptData(session_id="s", items=[message_view(r) for r in rows]), **kw)
    transcript.focus()
    await pilot.pause()
    return transcript


async def wait(pilot: Pilot[None]) -> None:
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()
    await pilot.pause()


def bar_of(pilot: Pilot[None]) -> FindBar:
    return pilot.app.screen.query_one(FindBar)


def marked(transcript: Transcript, message_id: int, needle: str) -> list[str]:
    """The pieces of a message drawn highlighted, equal (case-insensitively) to ``needle``."""
    pieces = marked_pieces(strips_text(drawn_message(transcript, message_id)))
    return [piece for piece in pieces if piece.lower() == needle]


def matched(transcript: Transcript) -> list[int]:
    """The ids of the window's messages drawn as the match."""
    window = transcript.items[transcript.start : transcript.end]
    return [i.id for i in window if isinstance(i, MessageView) and drawn_as_match(transcript, i.id)]


def folds(transcript: Transcript, message_id: int) -> list[str]:
    """A message's fold titles as drawn ("▶ title" closed, "▼ title" open)."""
    index = transcript.index_of(message_id)
    text = "" if index is None else transcript.item_text(index) or ""
    return [
        line.lstrip("▎ ").rstrip() for line in text.split("\n") if line.lstrip("▎ ").startswith(("▶", "▼"))
    ]


THREE = [
    {"id": 1, "role": "user", "content": "Where is the NEEDLE?"},
    *filler(5, 2),
    {"id": 7, "role": "assistant", "content": "a needle here"},
    *filler(5, 8),
    {"id": 13, "role": "user", "content": "last Needle"},
]


def test_find_hits_scans_every_record_case_insensitively() -> None:
    views = [message_view(r) for r in THREE]
    assert find_hits(views, "needle") == [0, 6, 12]
    assert find_hits(views, "nothing") == []
    rewound = message_view({"id": 99, "role": "user", "content": "needle", "active": 0})
    assert find_hits([rewound], "needle") == [0]
    assert find_hits([rewound], "needle", include_inactive=False) == []


async def test_typing_highlights_the_match_and_counts() -> None:
    app = FindApp()
    async with app.run_test(size=(100, 30)) as pilot:
        transcript = await show(pilot, THREE)
        await pilot.press("ctrl+f")
        await pilot.pause()
        bar = bar_of(pilot)
        assert bar.display and isinstance(app.focused, Input) and app.focused.id == "find-input"
        await pilot.press(*"needle")
        await wait(pilot)
        assert bar.count_text == "1/3"
        assert transcript.find_hits == [0, 6, 12]
        assert matched(transcript) == [1]
        assert marked(transcript, 1, "needle") == ["NEEDLE"]
        await pilot.press(*"zz")
        await wait(pilot)
        assert bar.count_text == "no match"
        assert matched(transcript) == []


async def test_next_and_previous_wrap_around() -> None:
    app = FindApp()
    async with app.run_test(size=(100, 30)) as pilot:
        transcript = await show(pilot, THREE)
        await pilot.press("ctrl+f", *"needle")
        await wait(pilot)
        bar = bar_of(pilot)
        seen = []
        for key in ("enter", "enter", "enter", "shift+enter"):
            await pilot.press(key)
            await wait(pilot)
            seen.append(bar.count_text)
        assert seen == ["2/3", "3/3", "1/3", "3/3"]
        assert matched(transcript) == [13]
        transcript.focus()  # n / N from the transcript itself
        await pilot.pause()
        await pilot.press("n")
        await wait(pilot)
        assert bar.count_text == "1/3"
        await pilot.press("N", "N")
        await wait(pilot)
        assert bar.count_text == "2/3"
        assert matched(transcript) == [7]


async def test_a_hit_in_a_collapsed_fold_opens_it() -> None:
    rows = [
        {"id": 1, "role": "user", "content": "start"},
        {
            "id": 2,
            "role": "assistant",
            "content": "plain answer",
            "reasoning": "I should check the Quokka first",
            "tool_calls": [
                {"function": {"name": "terminal", "arguments": '{"cmd": "ls"}'}},
                {"function": {"name": "search", "arguments": '{"q": "wombat facts"}'}},
            ],
        },
        {"id": 3, "role": "tool", "tool_name": "search", "content": "the wombat is a marsupial"},
    ]
    app = FindApp()
    async with app.run_test(size=(100, 40)) as pilot:
        transcript = await show(pilot, rows)
        shown = folds(transcript, 2) + folds(transcript, 3)
        assert len(shown) == 4 and all(title.startswith("▶") for title in shown)
        await pilot.press("ctrl+f", *"quokka")
        await wait(pilot)
        assert folds(transcript, 2) == ["▼ reasoning", "▶ → terminal", "▶ → search"]  # no hit: closed
        assert marked(transcript, 2, "quokka") == ["Quokka"]
        await pilot.press("ctrl+a", "ctrl+k", *"wombat")  # select all + delete, then a new query
        await wait(pilot)
        assert bar_of(pilot).count_text == "1/2"
        assert folds(transcript, 2) == ["▶ reasoning", "▶ → terminal", "▼ → search"]
        assert marked(transcript, 2, "wombat") == ["wombat"]
        await pilot.press("enter")
        await wait(pilot)
        assert folds(transcript, 3) == ["▼ result (1 lines)"]
        assert marked(transcript, 3, "wombat") == ["wombat"]
        assert folds(transcript, 2)[-1] == "▶ → search"  # the previous match is closed again


async def test_a_far_hit_in_5000_messages_windows_there() -> None:
    rows = filler(5000, 1)
    rows[3999] = {"id": 4000, "role": "assistant", "content": "the only Kestrel in here"}
    app = FindApp()
    async with app.run_test(size=(100, 30)) as pilot:
        transcript = await show(pilot, rows)
        assert transcript.end < 50
        await pilot.press("ctrl+f", *"kestrel")
        await wait(pilot)
        assert bar_of(pilot).count_text == "1/1"
        assert transcript.start <= 3999 < transcript.end
        assert transcript.end - transcript.start <= MAX_WINDOW
        assert drawn_as_match(transcript, 4000)
        drawn = transcript.window_text().split("\n")
        line = next(k for k, text in enumerate(drawn) if "#4000 " in text or text.endswith("#4000"))
        assert transcript.scroll_offset.y <= line < transcript.scroll_offset.y + transcript.size.height


async def test_escape_closes_the_bar_and_clears_the_marking() -> None:
    app = FindApp()
    async with app.run_test(size=(100, 30)) as pilot:
        transcript = await show(pilot, THREE, target_id=13, terms=("last",))  # a search hit
        assert matched(transcript) == [13]
        await pilot.press("ctrl+f", *"where")
        await wait(pilot)
        assert matched(transcript) == [1]
        assert transcript.target_id == 1 and transcript.terms == ("where",)
        await pilot.press("escape")
        await wait(pilot)
        bar = bar_of(pilot)
        assert not bar.display and not transcript.finding
        assert app.focused is transcript
        assert bar.input.value == ""
        assert matched(transcript) == [13]  # the search hit is back
        assert transcript.terms == ("last",)
        await pilot.press("n")  # the find is closed: n does nothing here
        await wait(pilot)
        assert not transcript.finding


async def test_main_screen_ctrl_f_and_slash(demo_db: Path) -> None:
    """ctrl+f from any pane finds in the transcript; `/` finds only from the transcript."""
    sid = sid_of(demo_db, CI_SESSION)
    with SessionDB(demo_db, read_only=True, migrate=False) as db:
        expected = sum("passed" in str(m["content"] or "").lower() for m in db.get_messages(sid))
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        main = await open_on(pilot, sid)
        assert isinstance(main, MainScreen)
        transcript = main.query_one("#transcript", Transcript)
        await pilot.press("slash")  # from the session list: the session search
        await pilot.pause()
        assert main.has_class("-searching") and app.focused is main.query_one("#search-input", Input)
        await pilot.press("escape")
        await settle(pilot)
        await pilot.press("ctrl+f", *"passed")
        await settle(pilot)
        bar = main.query_one(FindBar)
        assert bar.display and transcript.find_hits
        assert len(transcript.find_hits) >= expected >= 1
        assert bar.count_text == f"1/{len(transcript.find_hits)}"
        await pilot.press("escape")
        await settle(pilot)
        assert not bar.display and app.focused is transcript
        await pilot.press("slash")  # from the transcript: its find
        await pilot.pause()
        assert bar.display and app.focused is bar.input
        assert not main.has_class("-searching")


async def test_n_steps_the_find_while_a_session_search_is_open(demo_db: Path) -> None:
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        main = app.screen
        assert isinstance(main, MainScreen)
        await pilot.press("slash", *"passed")
        await settle(pilot)
        search = main.query_one("#search", SearchPane)
        assert search.hits
        await pilot.press("down", "enter")  # open a hit: the transcript has the focus
        await settle(pilot)
        transcript = main.query_one("#transcript", Transcript)
        assert transcript.data is not None
        await pilot.press("ctrl+f", "e")
        await settle(pilot)
        assert len(transcript.find_hits) >= 2
        chosen = search.highlighted
        before = transcript.find_pos
        session = main.current_session
        transcript.focus()
        await pilot.pause()
        await pilot.press("n")
        await settle(pilot)
        total = len(transcript.find_hits)
        assert main.query_one(FindBar).count_text == f"{(before + 1) % total + 1}/{total}"
        assert search.highlighted == chosen and main.current_session == session  # not the search's n
