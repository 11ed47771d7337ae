"""Every dialog confirms from the keyboard with a key it shows; states read without colour; export
cancel leaves no file; actions act on exactly the selected session (Pilot)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.widgets import Button, Checkbox, Input, RadioButton, Static

from hermes_tui.app.screens.delete import DeleteDialog
from hermes_tui.app.screens.export import ExportDialog
from hermes_tui.app.screens.main import MainScreen
from hermes_tui.app.screens.prune import PruneDialog
from hermes_tui.app.screens.rename import RenameDialog
from hermes_tui.app.widgets.marked import MarkedCheckbox
from hermes_tui.state import SessionDB
from tests._wait import pilot_until

from ._support import make_app, settle
from .test_actions import exists, open_on, plain, sid_of, title_of


def label(pilot: Any, selector: str) -> str:
    return str(pilot.app.screen.query_one(selector, Button).label)


def rendered(widget: Any) -> str:
    """What a toggle draws, as plain text (no colour)."""
    return widget.render().plain


async def test_delete_confirms_with_the_key_it_shows(demo_db: Path) -> None:
    sid = sid_of(demo_db, "Nightly backup report")
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_on(pilot, sid)
        await pilot.press("D")
        await settle(pilot)
        assert isinstance(app.screen, DeleteDialog)
        assert label(pilot, "#confirm") == "Delete (ctrl+d)"
        assert label(pilot, "#cancel") == "Cancel (esc)"
        assert app.screen.focused is app.screen.query_one("#cancel")  # Enter alone cancels
        await pilot.press("ctrl+d")
        await settle(pilot, rounds=3)
        assert isinstance(app.screen, MainScreen)
    assert not exists(demo_db, sid)


async def test_rename_enter_saves_and_ctrl_s_suggests_from_the_field(demo_db: Path) -> None:
    sid = sid_of(demo_db, "Nightly backup report")
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_on(pilot, sid)
        await pilot.press("r")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, RenameDialog)
        assert [label(pilot, b) for b in ("#ok", "#suggest", "#cancel")] == [
            "Rename (enter)",
            "Suggest (ctrl+s)",
            "Cancel (esc)",
        ]
        assert isinstance(dialog.focused, Input)
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert dialog.query_one("#rename-input", Input).value == "Nightly backup report #2"
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, MainScreen)
    assert title_of(demo_db, sid) == "Nightly backup report #2"


async def test_prune_ctrl_d_confirms_only_the_current_preview(demo_db: Path) -> None:
    runbook = {sid_of(demo_db, "Postgres upgrade runbook"), sid_of(demo_db, "Postgres upgrade runbook #2")}
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("P")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, PruneDialog)
        assert label(pilot, "#confirm") == "Delete (ctrl+d)"
        assert "ctrl+d delete" in plain(dialog.query_one("#hint", Static))
        assert dialog.plan is not None and dialog.plan["ids"]  # the default 90 days finds old sessions
        old_plan = set(dialog.plan["ids"])
        assert not old_plan & runbook
        # Narrow the form by typing, then ctrl+d at once: the preview on screen is stale.
        days = dialog.query_one("#prune-days", Input)
        assert dialog.focused is days
        # The typed filters' own preview must not come before ctrl+d (on a loaded machine one
        # pause outlasted the 0.25 s debounce, and its preview made the form current again).
        dialog._preview_due.delay = 3600.0
        await pilot.press("ctrl+u", *"4")
        dialog.query_one("#prune-title", Input).value = "runbook"
        await pilot.pause()
        assert dialog.query_one("#confirm", Button).disabled
        await pilot.press("ctrl+d")
        await pilot.pause()
        assert isinstance(app.screen, PruneDialog) and not dialog.busy
        assert "no current preview" in plain(dialog.query_one("#status", Static))
        assert all(exists(demo_db, i) for i in old_plan)
        # Enter in a field previews now and never deletes.
        await pilot.press("enter")
        await settle(pilot, rounds=3)
        assert isinstance(app.screen, PruneDialog)
        assert dialog.plan is not None and set(dialog.plan["ids"]) == runbook
        assert all(exists(demo_db, i) for i in runbook)
        # ctrl+d with the cursor still in the field (an Input's own ctrl+d deletes a character).
        await pilot.press("ctrl+d")
        await settle(pilot, rounds=3)
        assert isinstance(app.screen, MainScreen)
        assert days.value == "4"
    assert not any(exists(demo_db, i) for i in runbook)
    assert all(exists(demo_db, i) for i in old_plan)


async def test_checkbox_and_radio_states_read_without_colour(demo_db: Path) -> None:
    sid = sid_of(demo_db, "Nightly backup report")
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_on(pilot, sid)
        await pilot.press("e")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, ExportDialog)
        overwrite = dialog.query_one("#export-overwrite", Checkbox)
        assert isinstance(overwrite, MarkedCheckbox)
        assert rendered(overwrite).startswith("[ ] overwrite")
        overwrite.focus()
        await pilot.press("space")
        await pilot.pause()
        assert overwrite.value and rendered(overwrite).startswith("[x] overwrite")
        scope = [rendered(b) for b in dialog.query("#export-scope RadioButton").results(RadioButton)]
        assert scope[0].startswith("(•) this session") and scope[1].startswith("( ) its lineage")
        dialog.query_one("#export-scope").focus()
        await pilot.press("down", "enter")
        await pilot.pause()
        scope = [rendered(b) for b in dialog.query("#export-scope RadioButton").results(RadioButton)]
        assert scope[0].startswith("( )") and scope[1].startswith("(•) its lineage")
        assert dialog.scope == "lineage"
        # ctrl+s exports from wherever the focus is (here: the radio set).
        target = Path.home() / "lineage.json"
        dialog.query_one("#export-path", Input).value = str(target)
        dialog.query_one("#export-scope").focus()
        assert label(pilot, "#confirm") == "Export (ctrl+s)"
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert isinstance(app.screen, MainScreen)
    assert target.exists()


async def test_export_cancel_stops_between_sessions_and_leaves_no_file(demo_db: Path) -> None:
    app = make_app(demo_db)
    target = Path.home() / "all.jsonl"
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("e")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, ExportDialog)
        real = dialog.db.export_session
        calls: list[str] = []

        def export_session(session_id: str, *args: Any, **kw: Any) -> dict[str, Any] | None:
            calls.append(session_id)
            if len(calls) == 3:  # the user presses Esc while the third session is read
                app.call_from_thread(dialog.action_close)
            return real(session_id, *args, **kw)

        dialog.db.export_session = export_session  # type: ignore[method-assign]
        try:
            dialog.scope, dialog.fmt = "filter", "jsonl"
            dialog.query_one("#export-path", Input).value = str(target)
            await pilot.press("ctrl+s")
            # (settle alone could see a quiet app before the key reached the dialog)
            await pilot_until(
                pilot, lambda: isinstance(app.screen, MainScreen), "the cancel closed the dialog"
            )
            await settle(pilot, rounds=3)
        finally:
            del dialog.db.export_session
        assert any("Export cancelled" in n.message for n in app._notifications)
    assert len(calls) == 3  # stopped after the session being read, not after all 34
    assert not target.exists()
    assert not [p.name for p in target.parent.iterdir() if p.name.startswith(".all.jsonl")]


async def test_delete_acts_on_the_row_under_the_cursor(demo_db: Path) -> None:
    """D right after moving the cursor: the transcript still shows the previous row."""
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        main = app.screen
        assert isinstance(main, MainScreen)
        sessions = main.session_list
        first, second = sessions._ids[0], sessions._ids[1]
        main.open_session(first)
        await settle(pilot)
        sessions.focus()
        await pilot.pause()
        assert main.current_session == first
        await pilot.press("down", "D")  # before the debounced load of the new row
        await pilot.pause()
        dialog = app.screen
        assert isinstance(dialog, DeleteDialog)
        assert dialog.ids == [second]
        await pilot.press("escape")
        await settle(pilot)
    with SessionDB(demo_db, read_only=True, migrate=False) as db:
        assert db.get_session(first) and db.get_session(second)
