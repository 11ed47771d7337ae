"""The transcript on a file of today's Hermes: one message per display group (a compaction's
archived original and its live copy are one message), the rows Hermes never paints folded behind
`h` with their count in the subtitle, the session head (system prompt folded like reasoning, a
working session's activity), a search hit on a folded copy, live copies not repeated; and a
0.19.0-era file (the demo, our v23) as before."""

from __future__ import annotations

import time
from pathlib import Path

import apsw
import pytest

from hermes_tui.app.screens.main import MainScreen
from hermes_tui.app.widgets.transcript_items import MessageView, SessionHead, find_hits
from hermes_tui.app.widgets.transcript_pane import Transcript
from hermes_tui.state import SessionDB
from tests._wait import pilot_until

from ._display import ACTIVITY, HIDDEN, PROMPT, SHOWN, SID, build_display_store
from ._support import make_app, settle
from .test_actions import open_on, sid_of
from .test_transcript import CI_SESSION

SIZE = (120, 40)


@pytest.fixture
def display_db(tmp_path: Path) -> Path:
    return build_display_store(tmp_path / "state.db")


def _messages(transcript: Transcript) -> list[MessageView]:
    return [i for i in transcript.items if isinstance(i, MessageView)]


def _drawn(transcript: Transcript, message_id: int) -> str:
    """The text of the lines the message is drawn as ("" when folded away or not in the window)."""
    index = transcript.index_of(message_id)
    return (transcript.item_text(index) or "").strip() if index is not None else ""


def _painted(transcript: Transcript, message_id: int) -> bool:
    return bool(_drawn(transcript, message_id))


def _subtitle(transcript: Transcript) -> str:
    return str(transcript.border_subtitle)


async def test_one_message_per_display_group_and_hidden_rows_folded(display_db: Path) -> None:
    app = make_app(display_db)
    async with app.run_test(size=SIZE) as pilot:
        main = await open_on(pilot, SID)
        transcript = main.query_one("#transcript", Transcript)
        messages = _messages(transcript)
        # The archived original (4) and its live copy (6) are one message, at the original's place.
        assert [m.id for m in messages] == [1, 2, 3, 6, 5, 7, 8, 9]
        assert next(m for m in messages if m.id == 6).members == (6, 4)
        assert all(m.id != 4 for m in messages)  # drawn once, as the live copy's message
        assert [m.id for m in messages if m.fold is None] == SHOWN
        assert all(_painted(transcript, i) for i in SHOWN[:4])
        assert not any(_painted(transcript, i) for i in HIDDEN)
        assert "2 hidden (h)" in _subtitle(transcript)
        assert "rewound" not in _subtitle(transcript)  # compaction-archived turns are Hermes' display
        # The archived turns are painted as any other (no rewound styling), marked compacted.
        first = next(m for m in messages if m.id == 1)
        assert first.fold is None and "compacted" in _drawn(transcript, 1)


async def test_h_shows_and_folds_the_hidden_rows(display_db: Path) -> None:
    app = make_app(display_db)
    async with app.run_test(size=SIZE) as pilot:
        main = await open_on(pilot, SID)
        transcript = main.query_one("#transcript", Transcript)
        transcript.focus()
        await settle(pilot)
        shown = {b.key: b.description for b in (a.binding for a in main.active_bindings.values()) if b.show}
        assert shown.get("h") == "Hidden rows"
        await pilot.press("h")
        await settle(pilot)
        assert transcript.showing_hidden_rows
        assert all(_painted(transcript, i) for i in HIDDEN)
        assert "  hidden" in _drawn(transcript, 5).splitlines()[0]
        assert "2 hidden (shown)" in _subtitle(transcript)
        await pilot.press("h")
        await settle(pilot)
        assert not transcript.showing_hidden_rows
        assert not any(_painted(transcript, i) for i in HIDDEN)
        assert "2 hidden (h)" in _subtitle(transcript)
        # The find skips what is folded away.
        needle = "context summary"
        assert find_hits(transcript.items, needle, include_hidden=False) == []
        assert [transcript.items[i].id for i in find_hits(transcript.items, needle)] == [5]  # type: ignore[union-attr]


async def test_a_file_without_hidden_rows_has_no_h_key(demo_db: Path) -> None:
    app = make_app(demo_db)
    async with app.run_test(size=SIZE) as pilot:
        main = await open_on(pilot, sid_of(demo_db, CI_SESSION))
        transcript = main.query_one("#transcript", Transcript)
        transcript.focus()
        await settle(pilot)
        shown = {b.key for b in (a.binding for a in main.active_bindings.values()) if b.show}
        assert "h" not in shown
        assert "hidden" not in _subtitle(transcript)
        assert not any(isinstance(i, SessionHead) for i in transcript.items)  # no system prompt
        assert all(m.members == (m.id,) for m in _messages(transcript))


async def test_the_head_shows_the_system_prompt_folded_and_the_activity(display_db: Path) -> None:
    """Real clock."""
    app = make_app(display_db, now=time.time)
    async with app.run_test(size=SIZE) as pilot:
        main = await open_on(pilot, SID)
        transcript = main.query_one("#transcript", Transcript)
        assert isinstance(transcript.items[0], SessionHead)  # the head comes first
        text = transcript.item_text(0) or ""
        assert f"working: {ACTIVITY}" in text
        assert "system prompt (3 lines" in text
        assert "careful release engineer" not in text  # folded, like reasoning
        transcript.focus()
        await pilot.press("tab")  # the first fold: the head's (a focused Fold in the widget view)
        await pilot.press("enter")
        await settle(pilot)
        opened = transcript.item_text(0) or ""
        assert all(line in opened for line in PROMPT.splitlines())
        assert f"working: {ACTIVITY}" in opened


async def test_no_activity_once_the_session_ended(display_db: Path) -> None:
    conn = apsw.Connection(str(display_db))
    conn.execute(
        "UPDATE sessions SET ended_at = started_at + 500, end_reason = 'user_exit' WHERE id = ?", (SID,)
    )
    conn.close()
    app = make_app(display_db)
    async with app.run_test(size=SIZE) as pilot:
        main = await open_on(pilot, SID)
        transcript = main.query_one("#transcript", Transcript)
        assert isinstance(transcript.items[0], SessionHead)
        text = transcript.item_text(0) or ""
        assert "working:" not in text and "system prompt" in text


async def test_a_hit_on_an_archived_copy_opens_at_its_message(display_db: Path) -> None:
    """A search hit names any row (the writer's search finds compaction-archived ones): the one
    shown for it is marked."""
    app = make_app(display_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        main = pilot.app.screen
        assert isinstance(main, MainScreen)
        main.open_session(SID, 4, ("staging",))
        await settle(pilot)
        transcript = main.query_one("#transcript", Transcript)
        assert transcript.target_id == 6
        # Drawn as the match (the widget view's -match class): its header alone on the match's
        # background, its border in the match's colour.
        match = transcript.get_component_rich_style("lines--border-match").color
        shown = [transcript.render_line(y) for y in range(transcript.scrollable_content_region.height)]
        headers = {line.text.split("  #")[1].split()[0]: list(line) for line in shown if "  #" in line.text}
        border = {n: next(seg.style for seg in line if seg.text.strip()) for n, line in headers.items()}
        backs = {n: {seg.style.bgcolor for seg in line if seg.style} for n, line in headers.items()}
        assert len(headers) > 1 and border["6"] is not None and border["6"].color == match
        assert [n for n in headers if backs[n] != backs[next(m for m in headers if m != "6")]] == ["6"]


async def test_live_copies_are_not_repeated_and_the_activity_follows(display_db: Path) -> None:
    app = make_app(display_db)
    async with app.run_test(size=SIZE) as pilot:
        main = await open_on(pilot, SID)
        transcript = main.query_one("#transcript", Transcript)

        def write(conn: apsw.Connection) -> None:  # a new generation carries 9 (its group) and adds a turn
            conn.execute(
                "INSERT INTO messages (id, session_id, role, content, timestamp, active, compacted, "
                "display_order, display_identity) SELECT 20, session_id, role, content, timestamp, 1, 0, 9, "
                "display_identity FROM messages WHERE id = 9"
            )
            conn.execute(
                "INSERT INTO messages (id, session_id, role, content, timestamp, active, compacted, "
                "display_order, display_identity) "
                "VALUES (21, ?, 'user', 'and the rollback plan?', ?, 1, 0, 21, X'01')",
                (SID, time.time()),
            )
            conn.execute(
                "UPDATE sessions SET last_activity_description = 'calling the model' WHERE id = ?", (SID,)
            )

        with SessionDB(display_db, migrate=False) as db:  # (our file: its index has our tokenizer)
            db._execute_write(write)
        await pilot_until(pilot, lambda: 21 in [m.id for m in _messages(transcript)], "the new turn arrives")
        ids = [m.id for m in _messages(transcript)]
        assert ids[-2:] == [9, 21] and 20 not in ids
        assert transcript.last_message_id == 21
        await pilot_until(  # the head follows what the session is doing
            pilot, lambda: "working: calling the model" in (transcript.item_text(0) or ""), "the activity"
        )
