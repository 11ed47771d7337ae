"""Bounded work for huge messages: one message with 5,000 tool calls, a 5 MB tool output.

Before: 5,000 tool calls were all prepared in the worker and mounted as 5,000 folds (12.6 s to
appear, 14.4 s frozen when `x` opened them, 300-370 MB). Now a message prepares and mounts its
first `CALLS_SHOWN` calls and one "… and N more tool calls" row that reveals the next batch.
These tests count prepared calls, widgets and traced memory rather than wall time.
"""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path
from typing import Any

from hermes_tui.app.render import MAX_RENDER_CHARS
from hermes_tui.app.screens.main import MainScreen
from hermes_tui.app.widgets.message_parts import more_calls_label
from hermes_tui.app.widgets.transcript_items import CALLS_SHOWN, MAX_CALL_LINES, message_view
from hermes_tui.app.widgets.transcript_pane import Transcript
from hermes_tui.state import SessionDB

from ._support import make_app, settle

N_CALLS = 5000


def calls(n: int) -> list[dict[str, Any]]:
    return [
        {
            "id": f"c{i}",
            "type": "function",
            "function": {
                "name": f"tool_{i}",
                "arguments": json.dumps({"path": f"/f/{i}", "text": "lorem " * 20}),
            },
        }
        for i in range(n)
    ]


def build(path: Path, n: int) -> None:
    db = SessionDB(path)
    try:
        db.create_session("big", "cli")
        db.append_message("big", "user", content="do many things")
        db.append_message("big", "assistant", content="on it", tool_calls=calls(n))
        db.append_message("big", "tool", content="done", tool_name="tool_0", tool_call_id="c0")
    finally:
        db.close()


def test_a_message_prepares_only_its_first_calls() -> None:
    row = {"id": 1, "role": "assistant", "content": "x", "tool_calls": calls(N_CALLS)}
    tracemalloc.start()
    try:
        view = message_view(row)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert view.prepared is not None
    assert len(view.tool_calls) == len(view.prepared.calls) == CALLS_SHOWN
    assert len(view.more_calls) == N_CALLS - CALLS_SHOWN
    assert peak < 8_000_000, peak  # all 5,000 prepared: 11.5 MB; the first 50: 1.6 MB
    # Drawn: the first calls' folds, then one row for the rest (the app test below counts them).
    assert (
        more_calls_label(len(view.more_calls)) == "… and 4,950 more tool calls (press x / Enter to show more)"
    )


def test_huge_tool_output_and_reasoning_are_cut_before_any_parsing() -> None:
    big_json = json.dumps([{"line": i, "text": "x" * 40} for i in range(100_000)])  # ~5.6 MB
    tracemalloc.start()
    try:
        view = message_view({"id": 1, "role": "tool", "content": big_json, "reasoning": "r\n" * 50_000})
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(view.text) == MAX_RENDER_CHARS and view.dropped == len(big_json) - MAX_RENDER_CHARS
    assert view.text.startswith('[{"line": 0')  # shown as stored: not parsed and re-indented
    assert view.reasoning.count("\n") == MAX_CALL_LINES  # kept lines, then the "… more" note
    assert peak < 4 * len(big_json), peak  # parsed and re-indented: 92 MB; cut first: 0.4 MB


def titles(transcript: Transcript) -> list[tuple[int, str]]:
    """The fold titles drawn in the window (line, "▶ title" or "▼ title"); the "more tool
    calls" row is not one of them."""
    out = []
    for line, text in enumerate(transcript.window_text().split("\n")):
        shown = text.lstrip("▎ ")
        if shown.startswith(("▶", "▼")):
            out.append((line, shown))
    return out


def fold_count(transcript: Transcript) -> int:
    return len(titles(transcript))


def more_row(transcript: Transcript) -> tuple[int, str]:
    """The message's "… and N more tool calls" row: its line and text (it is drawn once)."""
    drawn = transcript.window_text().split("\n")
    rows = [line for line, text in enumerate(drawn) if "more tool calls" in text]
    assert len(rows) == 1, rows
    first = rows[0]
    stop = transcript.stop_at(first)
    end = first + 1
    while end < len(drawn) and transcript.stop_at(end) == stop:  # (a narrow pane wraps it)
        end += 1
    return first, " ".join(text.lstrip("▎ ").strip() for text in drawn[first:end])


def focus_more_row(transcript: Transcript) -> None:
    """The row takes the focus (as the widget transcript's focusable row did)."""
    transcript.focus()
    transcript.focus_stop(transcript.stop_at(more_row(transcript)[0]))


async def test_five_thousand_tool_calls_mount_a_batch_and_reveal_more(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    build(path, N_CALLS)
    app = make_app(path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        main = app.screen
        assert isinstance(main, MainScreen)
        tracemalloc.start()
        try:
            main.open_session("big")
            await settle(pilot)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        transcript = main.query_one("#transcript", Transcript)
        assert transcript.message_count == 3
        # 3 messages: header/body widgets, the first batch of calls, the "more" row, the tool output
        assert fold_count(transcript) == CALLS_SHOWN + 1
        assert len(transcript.children) <= CALLS_SHOWN + 6
        assert peak < 40_000_000, peak  # every call a widget: 238 MB traced; a batch: 8 MB
        assert more_row(transcript)[1].startswith("… and 4,950 more tool calls")

        focus_more_row(transcript)
        await pilot.press("enter")
        await settle(pilot)
        assert fold_count(transcript) == 2 * CALLS_SHOWN + 1
        assert more_row(transcript)[1].startswith("… and 4,900 more tool calls")
        await pilot.press("x")  # the row's own key: next batch, not every fold of the window
        await settle(pilot)
        assert fold_count(transcript) == 3 * CALLS_SHOWN + 1
        names = [title[2:].strip() for line, title in titles(transcript) if "→" in title]
        assert names == [f"→ tool_{i}" for i in range(3 * CALLS_SHOWN)]  # in order
        calls_at = [line for line, title in titles(transcript) if "→" in title]
        assert all(line < more_row(transcript)[0] for line in calls_at)  # before the row

        transcript.focus_stop(None)  # the transcript itself has the focus (a click on its text)
        await pilot.press("x")  # opens only what is shown
        await settle(pilot)
        opened = [title for _, title in titles(transcript) if title.startswith("▼")]
        assert len(opened) == 3 * CALLS_SHOWN + 1
        focus_more_row(transcript)
        await pilot.press("enter")  # a batch revealed while folds are open comes open
        await settle(pilot)
        assert all(title.startswith("▼") for _, title in titles(transcript))
        assert fold_count(transcript) == 4 * CALLS_SHOWN + 1


async def test_last_batch_replaces_the_row(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    build(path, CALLS_SHOWN + 20)
    app = make_app(path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        main = app.screen
        assert isinstance(main, MainScreen)
        main.open_session("big")
        await settle(pilot)
        transcript = main.query_one("#transcript", Transcript)
        line, text = more_row(transcript)
        assert text.strip() == "… and 20 more tool calls (press x / Enter to show more)"
        transcript.scroll_to(y=line, animate=False, immediate=True)  # (in view)
        await settle(pilot)
        await pilot.click(transcript, offset=(6, 1 + line - round(transcript.scroll_y)))
        await settle(pilot)
        assert "more tool calls" not in transcript.window_text()
        calls_shown = [(line, title) for line, title in titles(transcript) if "→" in title]
        assert len(calls_shown) == CALLS_SHOWN + 20
        drawn = transcript.window_text().split("\n")
        assert not drawn[calls_shown[-1][0] + 1].strip()  # the message's last line keeps its margin
        assert app.focused is transcript
        first_revealed = calls_shown[CALLS_SHOWN][0]
        assert transcript.stop_at(first_revealed) == transcript.focused_fold
