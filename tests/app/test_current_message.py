"""One current message for every message action (issue #33, item 2).

The message the reader is on — the find match they landed on, the search hit, a focused fold, the
one Home/End went to, else the first one on screen — is the one `y m` and `y c` copy. After
ctrl+f landed on a message, `y c` used to name the system prompt at the top ("Message 169 has no
code block.") and a message made only of tool calls had "no text".
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from hermes_tui.app.handoff import tool_calls_text
from hermes_tui.app.screens.main import MainScreen
from hermes_tui.app.widgets.transcript_pane import Transcript
from hermes_tui.state import SessionDB, content_text

from ._support import make_app, settle
from .test_handoff import open_on, press_copy, toasts

POOL_TITLE = "连接池泄漏（进行中）"
CI_TITLE = "Fix flaky CI on the payments service"


def messages_of(path: Path, title: str) -> tuple[str, list[dict]]:  # type: ignore[type-arg]
    with SessionDB(path, read_only=True, migrate=False) as db:
        row = db.get_session_by_title(title)
        assert row is not None
        return str(row["id"]), db.get_messages(row["id"], include_inactive=True)


async def find(pilot, text: str) -> None:  # type: ignore[no-untyped-def]
    """ctrl+f, type ``text``, wait for the match, Esc (the match stays the current message)."""
    await pilot.press("ctrl+f", *text)
    await settle(pilot)
    await pilot.press("escape")
    await settle(pilot)


async def test_copy_after_find_uses_the_match_and_a_tool_call_message_copies_its_calls(
    demo_db: Path,
) -> None:
    """The reported flow, with the real clock: ctrl+f lands on the grep call, Esc, `y c` says
    *that* message has no code block, `y m` copies its tool call; then ctrl+f on the answer's
    code and `y c` copies that code block."""
    sid, rows = messages_of(demo_db, POOL_TITLE)
    calls = next(r for r in rows if r["role"] == "assistant" and r.get("tool_calls"))
    app = make_app(demo_db, now=time.time)
    async with app.run_test(size=(120, 36)) as pilot:
        main = await open_on(pilot, sid, focus_list=False)
        main.query_one("#transcript", Transcript).focus()
        await find(pilot, "getconn")
        await press_copy(pilot, "c")
        assert f"Message {calls['id']} has no code block." in toasts(app)
        await press_copy(pilot, "m")
        assert app.clipboard == 'grep\n{\n  "pattern": "pool.getconn",\n  "path": "app/"\n}'
        assert any(f"Copied the tool calls of message {calls['id']}" in t for t in toasts(app))
        await find(pilot, "fetchone")
        await press_copy(pilot, "c")
        assert (
            app.clipboard == "with pool.connection() as conn:\n    return conn.execute(sql, args).fetchone()"
        )


async def test_home_end_and_scrolling_move_the_current_message(demo_db: Path) -> None:
    """At 80×24 the session does not fit: End makes the last message current, Home the first;
    a find match stays current after Esc, until the reader scrolls it off screen."""
    sid, rows = messages_of(demo_db, CI_TITLE)
    by_id = {r["id"]: r for r in rows}
    app = make_app(demo_db)
    async with app.run_test(size=(80, 24)) as pilot:
        main = await open_on(pilot, sid, focus_list=False)
        transcript = main.query_one("#transcript", Transcript)
        transcript.focus()
        await pilot.press("end")
        await settle(pilot)
        await press_copy(pilot, "m")
        assert app.clipboard == content_text(rows[-1]["content"])
        await pilot.press("home")
        await settle(pilot)
        await press_copy(pilot, "m")
        assert app.clipboard == content_text(rows[0]["content"])
        await find(pilot, "50 passed")
        hit = transcript.current_message()
        assert hit is not None and by_id[hit.id]["role"] == "tool"
        await press_copy(pilot, "m")
        assert app.clipboard == content_text(by_id[hit.id]["content"])
        for _ in range(60):  # the reader scrolls back up, line by line, to the top
            await pilot.press("up")
        await settle(pilot)
        assert transcript.scroll_y == 0
        await press_copy(pilot, "m")
        assert app.clipboard == content_text(rows[0]["content"])


async def test_a_focused_fold_names_its_message(demo_db: Path) -> None:
    """Tab onto a tool-call fold: that message is the current one, whatever is at the top."""
    sid, rows = messages_of(demo_db, CI_TITLE)
    second_call = [r for r in rows if r["role"] == "assistant" and r.get("tool_calls")][1]
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        main = await open_on(pilot, sid, focus_list=False)
        transcript = main.query_one("#transcript", Transcript)
        transcript.scroll_home(animate=False)
        transcript.focus()
        await settle(pilot)
        for _ in range(40):  # Tab from fold to fold down to the message's first
            if transcript.focused_fold is not None and transcript.current_id == second_call["id"]:
                break
            await pilot.press("tab")
            await settle(pilot)
        assert transcript.focused_fold is not None and app.focused is transcript
        assert isinstance(app.screen, MainScreen)
        await press_copy(pilot, "m")
        assert app.clipboard == tool_calls_text(second_call["tool_calls"])
        assert json.loads(app.clipboard.partition("\n")[2]) == json.loads(
            second_call["tool_calls"][0]["function"]["arguments"]
        )


def test_tool_calls_text_names_each_call_and_indents_its_arguments() -> None:
    calls = [
        {"function": {"name": "grep", "arguments": '{"pattern": "x"}'}},
        {"name": "flat", "arguments": {"a": [1, 2]}},
        {"name": "bare"},
        "not a dict",
    ]
    assert tool_calls_text(calls) == (
        'grep\n{\n  "pattern": "x"\n}\n\n'
        'flat\n{\n  "a": [\n    1,\n    2\n  ]\n}\n\n'
        "bare\n\ntool call\nnot a dict"
    )
