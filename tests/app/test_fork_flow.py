"""Fork in the browser (issue #35): the message cursor is highlighted and moved with `[`/`]`,
`B` opens the fork dialog on it (title prefilled and checked as you type, the count copied),
Enter forks, the fork is selected and shown, its lineage names the cut, and `u` moves it to
the trash. Real clock throughout (a fixed clock hid a broken flow before)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from textual.geometry import Region
from textual.pilot import Pilot
from textual.widgets import Button, Input, Static

from hermes_tui.app.screens.fork import ForkDialog
from hermes_tui.app.screens.main import MainScreen
from hermes_tui.app.widgets.lineage import LineageTree
from hermes_tui.app.widgets.transcript_pane import Transcript
from hermes_tui.state import SessionDB
from tests._wait import pilot_until

from ._support import make_app, settle


def store(tmp_path: Path) -> tuple[Path, list[int]]:
    path = tmp_path / "state.db"
    with SessionDB(path) as db:
        db.create_session("other", "cli", model="m")
        db.set_session_title("other", "Taken title")
        db.append_message("other", "user", "elsewhere")
        db.create_session("src", "cli", model="test/model")
        db.set_session_title("src", "Deploy review")
        ids = [
            db.append_message("src", "user" if i % 2 == 0 else "assistant", f"message {i}") for i in range(6)
        ]
    return path, ids


async def open_src(pilot: Pilot[Any]) -> tuple[MainScreen, Transcript]:
    main = pilot.app.screen
    assert isinstance(main, MainScreen)
    await settle(pilot)
    main.open_session("src")
    await pilot_until(pilot, lambda: main.current_session == "src", "src is open")
    await settle(pilot)
    transcript = main.query_one("#transcript", Transcript)
    transcript.focus()
    await settle(pilot)
    return main, transcript


def marked(transcript: Transcript) -> list[int]:
    """The ids of the messages drawn with the cursor's background (each row of the view as it
    is painted, the border row above the first excluded)."""
    names = ("lines--current", "lines--current-focus")
    cursor = {transcript.get_component_rich_style(n).bgcolor for n in names}
    width, height = transcript.outer_size
    found: list[int] = []
    for y in range(1, height - 1):
        strip = transcript.render_lines(Region(0, y, width, 1))[0]
        index = transcript.item_at(round(transcript.scroll_y) + y - 1)
        if index is None or not any(s.style is not None and s.style.bgcolor in cursor for s in strip):
            continue
        item = transcript.items[index]
        if item.id not in found:
            found.append(item.id)
    return found


async def test_the_cursor_is_highlighted_and_moves_by_message(tmp_path: Path) -> None:
    path, ids = store(tmp_path)
    app = make_app(path, now=time.time)
    async with app.run_test(size=(140, 40)) as pilot:
        _main, transcript = await open_src(pilot)
        await pilot_until(pilot, lambda: len(marked(transcript)) == 1, "one message is highlighted")
        first = marked(transcript)[0]
        await pilot.press("right_square_bracket", "right_square_bracket")
        await pilot_until(pilot, lambda: marked(transcript) == [ids[ids.index(first) + 2]], "two messages on")
        assert transcript.current_message() is not None
        assert transcript.current_message().id == ids[ids.index(first) + 2]  # type: ignore[union-attr]
        await pilot.press("left_square_bracket")
        await pilot_until(pilot, lambda: marked(transcript) == [ids[ids.index(first) + 1]], "one back")


async def test_fork_at_the_cursor_selects_the_fork_and_u_removes_it(tmp_path: Path) -> None:
    path, ids = store(tmp_path)
    app = make_app(path, now=time.time)
    async with app.run_test(size=(140, 40)) as pilot:
        main, transcript = await open_src(pilot)
        await pilot.press("home")
        await pilot_until(pilot, lambda: marked(transcript) == [ids[0]], "the first message is current")
        await pilot.press("right_square_bracket", "right_square_bracket")  # the third message
        await pilot_until(pilot, lambda: marked(transcript) == [ids[2]], "the third message is current")
        await pilot.press("B")
        await pilot_until(pilot, lambda: isinstance(app.screen, ForkDialog), "the fork dialog")
        dialog = app.screen
        assert isinstance(dialog, ForkDialog) and dialog.message_id == ids[2]
        field = dialog.query_one("#fork-input", Input)
        check = dialog.query_one("#fork-check", Static)
        await pilot_until(pilot, lambda: field.value == "Deploy review #2", "the lineage's next title")
        await pilot_until(pilot, lambda: "3 messages will be copied" in str(check.render()), "the count")
        # A title another session holds is refused as a rename would be; Enter does nothing.
        field.value = "Taken title"
        await pilot_until(pilot, lambda: str(check.render()).startswith("✗"), "the taken title refused")
        assert dialog.query_one("#ok", Button).disabled
        await pilot.press("enter")
        await settle(pilot)
        assert app.screen is dialog
        field.value = "Deploy review, second try"
        await pilot_until(pilot, lambda: "will be copied" in str(check.render()), "a free title accepted")
        await pilot.press("enter")
        await pilot_until(pilot, lambda: app.screen is main, "the dialog closed")
        await pilot_until(pilot, lambda: main.current_session not in (None, "src"), "the fork is shown")
        fork = main.current_session
        assert fork is not None
        await pilot_until(
            pilot, lambda: main.session_list.selected_id == fork, "the fork selected in the list"
        )
        with SessionDB(path, read_only=True) as db:
            session = db.get_session(fork)
            assert session is not None and session["parent_session_id"] == "src"
            assert session["title"] == "Deploy review, second try"
            assert [m["content"] for m in db.get_messages(fork)] == ["message 0", "message 1", "message 2"]
            assert len(db.get_messages("src")) == 6  # the source is left as it was
        lineage = main.query_one("#lineage", LineageTree)
        await pilot_until(
            pilot,
            lambda: any(n.get("cut_at") == ids[2] for n in (lineage.lineage or {}).get("nodes", [])),
            "the lineage names the cut",
        )
        assert any("Forked src at message" in n.message for n in app._notifications)
        await pilot.press("u")
        await pilot_until(pilot, lambda: fork not in list(main.session_list._ids), "the fork left the list")
        with SessionDB(path, read_only=True) as db:
            assert db.get_session(fork) is None
            entries = db.list_trash()
            assert len(entries) == 1 and entries[0]["sessions"] == 1
            assert "Deploy review, second try" in entries[0]["titles"]


async def test_fork_refuses_a_read_only_store(tmp_path: Path) -> None:
    path, _ids = store(tmp_path)
    app = make_app(path, now=time.time, read_only=True)
    async with app.run_test(size=(140, 40)) as pilot:
        _main, _transcript = await open_src(pilot)
        await pilot.press("B")
        await settle(pilot)
        assert not isinstance(app.screen, ForkDialog)
        assert any("fork refused" in n.message for n in app._notifications)
    with SessionDB(path, read_only=True) as db:
        assert [s["id"] for s in db.list_sessions_rich(limit=10)] in (["src", "other"], ["other", "src"])
