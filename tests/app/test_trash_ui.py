"""Nothing is lost in the browser: delete and prune go to the trash, `u` undoes them,
and the trash screen (T) lists, restores (after a confirmation) and empties entries."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Button, DataTable, Input, Static

from hermes_tui.app.screens.delete import DeleteDialog
from hermes_tui.app.screens.main import MainScreen
from hermes_tui.app.screens.prune import PruneDialog
from hermes_tui.app.screens.trash import ConfirmDialog, TrashScreen
from hermes_tui.app.undo import undo_entries
from hermes_tui.state import SessionDB

from ._support import make_app, settle


def snapshot(path: Path) -> tuple[list[str], int]:
    with SessionDB(path, read_only=True, migrate=False) as db:
        return sorted(db.session_order().ids), db.message_count()


def trash_of(path: Path) -> list[dict]:  # type: ignore[type-arg]
    with SessionDB(path, read_only=True, migrate=False) as db:
        return db.list_trash()


def notes(app) -> list[str]:  # type: ignore[no-untyped-def]
    return [str(n.message) for n in app._notifications]


async def ready(pilot) -> MainScreen:  # type: ignore[no-untyped-def]
    await settle(pilot)
    main = pilot.app.screen
    assert isinstance(main, MainScreen)
    main.session_list.focus()
    await pilot.pause()
    return main


async def test_delete_selection_then_u_brings_the_sessions_back(demo_db: Path) -> None:
    before = snapshot(demo_db)
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        main = await ready(pilot)
        await pilot.press("space", "down", "space", "D")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, DeleteDialog)
        plan_text = str(dialog.query_one("#delete-plan", Static).render())
        assert "moved to the trash" in plan_text and "cannot be undone" not in plan_text
        n = len(dialog.plan["ids"]) + len(dialog.plan["cascade_ids"])  # type: ignore[index]
        await pilot.press("ctrl+d")
        await settle(pilot, rounds=3)
        assert isinstance(app.screen, MainScreen)
        assert any(m.startswith(f"Deleted {n} sessions — u to undo") for m in notes(app)), notes(app)
        gone = snapshot(demo_db)
        assert len(gone[0]) == len(before[0]) - n
        assert main.session_list.total == len(gone[0])
        assert len(undo_entries(app)) == 1
        await pilot.press("u")
        await settle(pilot, rounds=3)
        assert any(f"Restored {n} sessions" in m for m in notes(app)), notes(app)
        assert main.session_list.total == len(before[0])  # the list reloaded
        assert undo_entries(app) == []
        await pilot.press("u")  # nothing left to undo: says so, writes nothing
        await settle(pilot)
        assert any("Nothing to undo" in m for m in notes(app))
    assert snapshot(demo_db) == before
    assert [e["status"] for e in trash_of(demo_db)] == ["restored"]


async def test_prune_then_undo(demo_db: Path) -> None:
    before = snapshot(demo_db)
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot)
        await pilot.press("P")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, PruneDialog)
        dialog.query_one("#prune-days", Input).value = ""
        dialog.query_one("#prune-title", Input).value = "postgres upgrade"
        await settle(pilot, rounds=3)
        plan = dialog.plan
        assert plan is not None and plan["ids"]
        assert "They go to the trash" in str(dialog.query_one("#prune-preview", Static).render())
        ids = list(plan["ids"]) + list(plan["cascade_ids"])
        await pilot.click("#confirm")
        await settle(pilot, rounds=3)
        assert not isinstance(app.screen, PruneDialog)
        word = "session" if len(ids) == 1 else "sessions"
        assert any(m.startswith(f"Pruned {len(ids)} {word} — u to undo") for m in notes(app)), notes(app)
        assert not set(ids) & set(snapshot(demo_db)[0])
        [entry] = trash_of(demo_db)
        assert entry["what"] == "prune" and entry["sessions"] == len(ids)
        await pilot.press("u")
        await settle(pilot, rounds=3)
    assert snapshot(demo_db) == before


async def test_undo_reports_a_conflict_and_keeps_live_data(demo_db: Path) -> None:
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        main = await ready(pilot)
        sid = main.session_list.selected_id
        assert sid is not None
        await pilot.press("D")
        await settle(pilot)
        await pilot.press("ctrl+d")
        await settle(pilot, rounds=3)
        with SessionDB(demo_db) as db:  # someone starts a new session under the same id
            db.create_session(sid, "cli")
        await pilot.press("u")
        await settle(pilot, rounds=3)
        assert any("1 conflict" in m and f"{sid}: conflict" in m for m in notes(app)), notes(app)
    with SessionDB(demo_db, read_only=True, migrate=False) as db:
        assert db.message_count(sid) == 0  # the live (new) session was not overwritten


async def test_trash_screen_lists_restores_and_empties(demo_db: Path) -> None:
    before = snapshot(demo_db)
    with SessionDB(demo_db) as db:
        ids = before[0]
        first = db.trash_sessions(ids[:2])
        second = db.trash_sessions(ids[2:3], what="prune")
    app = make_app(demo_db)
    async with app.run_test(size=(140, 44)) as pilot:
        main = await ready(pilot)
        await pilot.press("T")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, TrashScreen)
        table = screen.query_one("#trash-table", DataTable)
        assert table.row_count == 2
        cells = [str(c) for c in table.get_row(second["trash_entry"])]
        assert cells[1] == "prune" and cells[2] == "1" and cells[5] == "deleted"
        # Enter on the newest (the prune): a confirmation says what comes back; Esc declines.
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmDialog)
        body = str(app.screen.query_one("#confirm-body", Static).render())
        assert "1 session" in body and ids[2] in body
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, TrashScreen)
        assert ids[2] not in snapshot(demo_db)[0]
        # Down to the delete's entry, restore it for real.
        await pilot.press("down", "enter")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmDialog)
        assert ids[0] in str(app.screen.query_one("#confirm-body", Static).render())
        await pilot.press("y")
        await settle(pilot, rounds=3)
        assert app.screen is screen
        assert "Restored 2 sessions" in str(screen.query_one("#trash-result", Static).render())
        assert str(table.get_row(first["trash_entry"])[5]) == "restored"
        assert set(ids[:2]) <= set(snapshot(demo_db)[0])
        # x empties the highlighted entry (after an explicit confirmation).
        table.move_cursor(row=table.get_row_index(second["trash_entry"]))
        await pilot.press("x")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmDialog)
        await pilot.press("ctrl+d")
        await settle(pilot, rounds=2)
        assert table.row_count == 1
        assert [e["id"] for e in trash_of(demo_db)] == [first["trash_entry"]]
        # X empties all: declined first, then confirmed with the button.
        await pilot.press("X")
        await settle(pilot)
        await pilot.press("escape")
        await settle(pilot)
        assert len(trash_of(demo_db)) == 1
        await pilot.press("X")
        await settle(pilot)
        await pilot.click("#confirm")
        await settle(pilot, rounds=2)
        assert table.row_count == 0
        assert "The trash is empty" in str(screen.query_one("#status", Static).render())
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen is main
        assert main.session_list.total == len(before[0]) - 1  # the pruned one stayed gone
    assert trash_of(demo_db) == []


async def test_trash_screen_conflicts_are_listed_per_session(demo_db: Path) -> None:
    ids = snapshot(demo_db)[0]
    with SessionDB(demo_db) as db:
        db.trash_sessions(ids[:2])
        db.create_session(ids[1], "cli")  # one id is taken again
    app = make_app(demo_db)
    async with app.run_test(size=(140, 44)) as pilot:
        await ready(pilot)
        await pilot.press("T")
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        await pilot.press("y")
        await settle(pilot, rounds=3)
        result = str(app.screen.query_one("#trash-result", Static).render())
        assert "Restored 1 session" in result and "1 conflict" in result
        assert f"{ids[1]}: conflict: a session with this id exists again" in result


async def test_read_only_trash_lists_but_refuses_restore_and_empty(demo_db: Path) -> None:
    ids = snapshot(demo_db)[0]
    with SessionDB(demo_db) as db:
        db.trash_sessions(ids[:1])
    before = demo_db.read_bytes()
    app = make_app(demo_db, read_only=True)
    async with app.run_test(size=(140, 44)) as pilot:
        await ready(pilot)
        await pilot.press("u")
        await settle(pilot)
        await pilot.press("T")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, TrashScreen)
        assert screen.query_one("#trash-table", DataTable).row_count == 1
        for key in ("enter", "x", "X"):
            await pilot.press(key)
            await settle(pilot)
            assert app.screen is screen, key
        refused = notes(app)
        for what in ("undo", "restore", "emptying the trash"):
            assert any(f"read-only: {what} refused" in m for m in refused), refused
    assert demo_db.read_bytes() == before
    assert len(trash_of(demo_db)) == 1


async def test_undo_and_trash_are_in_the_palette_and_help(demo_db: Path) -> None:
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        main = await ready(pilot)
        from hermes_tui.app.commands import SessionCommands

        provider = SessionCommands(app.screen)
        labels = {label: keys for label, keys, _h, _cb in provider.palette_actions(main)}
        assert labels["Trash"] == "T"
        assert labels["Undo the last delete, prune, archive or pin"] == "u"
        assert not main.query(Button)  # nothing but the registry was needed


async def test_deleting_the_open_session_shows_no_error(demo_db: Path) -> None:
    """The screen reloads the shown session after any write of its own; after a delete of that
    very session the reload finds nothing. That used to pop "Could not open session: session …
    not found" after every delete of the session on screen (seen in a real terminal)."""
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        main = await ready(pilot)
        sid = main.session_list.selected_id
        await settle(pilot, rounds=3)
        assert sid is not None and main.current_session == sid
        await pilot.press("D")
        await settle(pilot)
        await pilot.press("ctrl+d")
        await settle(pilot, rounds=4)
        assert isinstance(app.screen, MainScreen)
        errors = [str(n.message) for n in app._notifications if n.severity == "error"]
        assert errors == [], errors
        assert any(m.startswith("Deleted 1 session") for m in notes(app)), notes(app)
        assert main.current_session != sid


async def test_trash_screen_shows_a_damaged_entry_with_its_reason(demo_db: Path) -> None:
    """A malformed manifest made the whole trash screen an error; now it is one row that says
    what is wrong, cannot be restored, and can be emptied."""
    import json

    ids = snapshot(demo_db)[0]
    with SessionDB(demo_db) as db:
        good = db.trash_sessions(ids[:1])
        bad = db.trash_sessions(ids[1:2])
    man = Path(bad["trash_path"]) / "manifest.json"
    man.write_text(json.dumps({**json.loads(man.read_text()), "counts": [], "status": "\x1b]52;c;eA==\x07"}))
    app = make_app(demo_db)
    async with app.run_test(size=(140, 44)) as pilot:
        await ready(pilot)
        await pilot.press("T")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, TrashScreen)
        table = screen.query_one("#trash-table", DataTable)
        assert table.row_count == 2
        cells = [str(c) for c in table.get_row(bad["trash_entry"])]
        assert cells[5] == "damaged" and "manifest.json: status" in cells[6]
        assert "\x1b" not in "".join(cells) and "\x07" not in "".join(cells)
        assert str(table.get_row(good["trash_entry"])[5]) == "deleted"
        assert "1 damaged" in str(screen.query_one("#status", Static).render())
        table.move_cursor(row=table.get_row_index(bad["trash_entry"]))
        await pilot.press("enter")
        await settle(pilot)
        assert app.screen is screen  # no restore dialog for it
        status = str(screen.query_one("#status", Static).render())
        assert "cannot be restored" in status and "status must be" in status
        await pilot.press("x")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmDialog)
        assert f"{bad['trash_entry']}: damaged" in str(app.screen.query_one("#confirm-body", Static).render())
        await pilot.press("ctrl+d")
        await settle(pilot, rounds=2)
        assert table.row_count == 1
        table.move_cursor(row=table.get_row_index(good["trash_entry"]))
        await pilot.press("enter")
        await settle(pilot)
        await pilot.press("y")
        await settle(pilot, rounds=3)
        assert "Restored 1 session" in str(screen.query_one("#trash-result", Static).render())
    assert [e["id"] for e in trash_of(demo_db)] == [good["trash_entry"]]
