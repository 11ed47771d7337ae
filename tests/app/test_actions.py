"""Pilot tests for the session actions: rename, delete, read-only refusal, prune, export, stats."""

from __future__ import annotations

import time
from pathlib import Path

from textual.widgets import Button, Checkbox, Input, Static

from hermes_tui.app.screens.delete import DeleteDialog
from hermes_tui.app.screens.main import MainScreen
from hermes_tui.app.screens.prune import PruneDialog
from hermes_tui.app.screens.rename import RenameDialog
from hermes_tui.formatting import plural
from hermes_tui.state import SessionDB
from tests._wait import pilot_until

from ._support import make_app, settle


def sid_of(path: Path, title: str) -> str:
    with SessionDB(path, read_only=True, migrate=False) as db:
        row = db.get_session_by_title(title)
        assert row is not None
        return str(row["id"])


def title_of(path: Path, sid: str) -> str | None:
    with SessionDB(path, read_only=True, migrate=False) as db:
        return db.get_session_title(sid)


def exists(path: Path, sid: str) -> bool:
    with SessionDB(path, read_only=True, migrate=False) as db:
        return db.get_session(sid) is not None


def plain(widget: Static) -> str:
    return str(widget.render())


async def open_on(pilot, sid: str) -> MainScreen:  # type: ignore[no-untyped-def]
    await settle(pilot)
    main = pilot.app.screen
    assert isinstance(main, MainScreen)
    main.open_session(sid)
    await settle(pilot)
    main.session_list.focus()
    await pilot.pause()
    return main


async def rename_to(pilot, text: str) -> RenameDialog:  # type: ignore[no-untyped-def]
    await pilot.press("r")
    await settle(pilot)
    dialog = pilot.app.screen
    assert isinstance(dialog, RenameDialog)
    dialog.query_one("#rename-input", Input).value = text
    await settle(pilot)
    return dialog


async def test_rename_ok(demo_db: Path) -> None:
    sid = sid_of(demo_db, "Nightly backup report")
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_on(pilot, sid)
        await pilot.press("r")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, RenameDialog)
        assert dialog.query_one("#rename-input", Input).value == "Nightly backup report"
        dialog.query_one("#rename-input", Input).value = "  Nightly   backup, renamed "
        await settle(pilot)
        assert "will be saved as: Nightly backup, renamed" in plain(dialog.query_one("#rename-check", Static))
        await pilot.press("enter")
        await settle(pilot)
        assert not isinstance(app.screen, RenameDialog)
        assert title_of(demo_db, sid) == "Nightly backup, renamed"
        assert any("Renamed" in (n.title or "") for n in app._notifications)


async def test_rename_clash_names_the_holder(demo_db: Path) -> None:
    sid = sid_of(demo_db, "Nightly backup report")
    holder = sid_of(demo_db, "Kubernetes deploy rollback")
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_on(pilot, sid)
        dialog = await rename_to(pilot, "Kubernetes deploy rollback")
        check = plain(dialog.query_one("#rename-check", Static))
        assert f"already in use by session {holder}" in check
        assert dialog.query_one("#ok", Button).disabled
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, RenameDialog)
        assert title_of(demo_db, sid) == "Nightly backup report"


async def test_rename_taken_meanwhile_names_the_holder_once(demo_db: Path) -> None:
    """Another session takes the title between the dialog's check and Enter: the write refuses
    and the dialog names the holder once (the check line), where the status line repeated the
    same sentence with a 'TitleError:' prefix. Real clock."""
    sid = sid_of(demo_db, "Nightly backup report")
    holder = sid_of(demo_db, "Kubernetes deploy rollback")
    app = make_app(demo_db, now=time.time)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_on(pilot, sid)
        dialog = await rename_to(pilot, "Brand new title")
        assert "will be saved as: Brand new title" in plain(dialog.query_one("#rename-check", Static))
        with SessionDB(demo_db, migrate=False) as db:  # another process, meanwhile
            assert db.set_session_title(holder, "Brand new title")
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, RenameDialog)
        check = plain(dialog.query_one("#rename-check", Static))
        status = plain(dialog.query_one("#status", Static))
        assert f"already in use by session {holder}" in check
        assert (check + status).count(holder) == 1, (check, status)
        assert "TitleError" not in status and "nothing was written" in status
    assert title_of(demo_db, sid) == "Nightly backup report"


async def test_rename_too_long_and_suggest(demo_db: Path) -> None:
    sid = sid_of(demo_db, "Nightly backup report")
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_on(pilot, sid)
        dialog = await rename_to(pilot, "x" * 150)
        assert "too long" in plain(dialog.query_one("#rename-check", Static)).lower()
        assert dialog.has_class("-invalid")
        dialog.query_one("#rename-input", Input).value = "Nightly backup report"
        await settle(pilot)
        await pilot.click("#suggest")
        await settle(pilot)
        assert dialog.query_one("#rename-input", Input).value == "Nightly backup report #2"
        await pilot.press("escape")
        await settle(pilot)
        assert title_of(demo_db, sid) == "Nightly backup report"


async def test_rename_clear(demo_db: Path) -> None:
    sid = sid_of(demo_db, "Nightly backup report")
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_on(pilot, sid)
        dialog = await rename_to(pilot, "")
        assert "will be cleared" in plain(dialog.query_one("#rename-check", Static))
        await pilot.press("enter")
        await settle(pilot)
        assert title_of(demo_db, sid) is None


async def test_rename_transfer_from_compression_ancestor(demo_db: Path) -> None:
    root = sid_of(demo_db, "Postgres upgrade runbook")
    tip = sid_of(demo_db, "Postgres upgrade runbook #3")
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_on(pilot, tip)
        dialog = await rename_to(pilot, "Postgres upgrade runbook")
        check = plain(dialog.query_one("#rename-check", Static))
        assert f"moves over from compression ancestor {root}" in check, check


async def test_delete_with_cascade(demo_db: Path) -> None:
    parent = sid_of(demo_db, "CI flakiness deep dive")
    branch = sid_of(demo_db, "CI flakiness: try pytest-randomly")
    with SessionDB(demo_db, read_only=True, migrate=False) as db:
        cascade = db.delegate_children([parent])
    assert cascade
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_on(pilot, parent)
        await pilot.press("D")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, DeleteDialog)
        text = plain(dialog.query_one("#delete-plan", Static))
        assert "Delegate children deleted with it (1)" in text
        assert cascade[0] in text
        assert "orphaned (1)" in text and branch in text
        await pilot.click("#confirm")
        await settle(pilot, rounds=3)
        assert not isinstance(app.screen, DeleteDialog)
    assert not exists(demo_db, parent)
    assert not any(exists(demo_db, c) for c in cascade)
    assert exists(demo_db, branch)
    with SessionDB(demo_db, read_only=True, migrate=False) as db:
        assert (db.get_session(branch) or {}).get("parent_session_id") is None


async def test_delete_cancelled_writes_nothing(demo_db: Path) -> None:
    sid = sid_of(demo_db, "Nightly backup report")
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_on(pilot, sid)
        await pilot.press("D")
        await settle(pilot)
        await pilot.click("#cancel")
        await settle(pilot)
        assert isinstance(app.screen, MainScreen)
    assert exists(demo_db, sid)


async def test_read_only_refuses_every_write(demo_db: Path) -> None:
    before = demo_db.read_bytes()
    app = make_app(demo_db, read_only=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        for key in ("r", "D", "P"):
            await pilot.press(key)
            await settle(pilot)
            assert isinstance(app.screen, MainScreen), key
        notes = [n.message for n in app._notifications]
        for what in ("rename", "delete", "prune"):
            assert any(f"read-only: {what} refused" in m for m in notes), notes
    assert demo_db.read_bytes() == before


async def test_prune_preview_confirm(demo_db: Path) -> None:
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("P")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, PruneDialog)
        dialog.query_one("#prune-days", Input).value = ""  # the runbook chain is only 5 days old
        dialog.query_one("#prune-title", Input).value = "postgres upgrade"
        await settle(pilot, rounds=3)
        plan = dialog.plan
        assert plan is not None and plan["sessions"] >= 1
        text = plain(dialog.query_one("#prune-preview", Static))
        assert plural(plan["sessions"], "session") in text
        summary = plain(dialog.query_one("#prune-excluded-summary", Static))
        assert "Excluded" in summary and "still open" in summary
        ids = list(plan["ids"]) + list(plan["cascade_ids"])
        dialog.query_one("#prune-export", Checkbox).value = True
        await pilot.click("#confirm")
        await settle(pilot, rounds=3)
        assert not isinstance(app.screen, PruneDialog)
    assert not any(exists(demo_db, i) for i in ids)
    assert exists(demo_db, sid_of(demo_db, "Postgres upgrade runbook #3"))
    exports = list(Path.home().glob("hermes-prune-*.jsonl"))
    assert len(exports) == 1
    assert len(exports[0].read_text().splitlines()) == len(ids)


async def test_prune_cancel_writes_nothing(demo_db: Path) -> None:
    before = demo_db.read_bytes()
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("P")
        await settle(pilot)
        assert isinstance(app.screen, PruneDialog)
        assert app.screen.plan is not None
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, MainScreen)
    assert demo_db.read_bytes() == before


async def test_prune_cancel_between_batches(demo_db: Path) -> None:
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("P")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, PruneDialog)
        dialog.query_one("#prune-days", Input).value = ""
        await settle(pilot, rounds=3)
        plan = dialog.plan
        assert plan is not None and plan["ids"]
        dialog.cancel_event.set()  # as if Cancel was pressed before the first batch
        dialog.busy = True
        dialog.add_class("-running")
        dialog.prune_worker(list(plan["ids"]), False)
        await settle(pilot, rounds=3)
    assert all(exists(demo_db, i) for i in plan["ids"])


async def test_export_writes_and_refuses_to_overwrite(demo_db: Path) -> None:
    from hermes_tui.app.screens.export import ExportDialog

    sid = sid_of(demo_db, "Nightly backup report")
    target = Path.home() / "out.jsonl"
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_on(pilot, sid)
        await pilot.press("e")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, ExportDialog)
        assert dialog.query_one("#export-path", Input).value == f"~/{sid}.json"
        dialog.fmt = "jsonl"
        dialog.query_one("#export-path", Input).value = str(target)
        await pilot.click("#confirm")
        await settle(pilot)
        assert not isinstance(app.screen, ExportDialog)
        lines = target.read_text().splitlines()
        assert len(lines) == 1 and sid in lines[0]
        target.write_text("keep me")
        await pilot.press("e")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, ExportDialog)
        dialog.query_one("#export-path", Input).value = str(target)
        await pilot.click("#confirm")
        await settle(pilot)
        assert isinstance(app.screen, ExportDialog)
        assert "exists" in plain(dialog.query_one("#status", Static))
        assert target.read_text() == "keep me"
        dialog.query_one("#export-overwrite", Checkbox).value = True
        # A button ignores a click while its press effect (0.2 s) still shows, as for a user.
        confirm = dialog.query_one("#confirm", Button)
        await pilot_until(pilot, lambda: not confirm.has_class("-active"), "the Export button is ready again")
        await pilot.click("#confirm")
        await settle(pilot)
        assert target.read_text() != "keep me"


async def test_export_lineage_markdown(demo_db: Path) -> None:
    from hermes_tui.app.screens.export import ExportDialog

    tip = sid_of(demo_db, "Postgres upgrade runbook #3")
    target = Path.home() / "chain.md"
    app = make_app(demo_db, read_only=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_on(pilot, tip)
        await pilot.press("e")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, ExportDialog)
        dialog.scope, dialog.fmt = "lineage", "md"
        dialog.query_one("#export-path", Input).value = str(target)
        await pilot.click("#confirm")
        await settle(pilot)
    text = target.read_text()
    assert text.count("<!-- segment ") == 3


async def test_stats_screen_and_optimize(demo_db: Path) -> None:
    from hermes_tui.app.screens.stats import StatsScreen

    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("S")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, StatsScreen)
        assert screen.data is not None
        assert "Store health" in plain(screen.query_one("#stats-health", Static))
        await pilot.click("#optimize")
        await settle(pilot, rounds=3)
        assert any(n.title == "Optimize storage" for n in app._notifications)
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, MainScreen)


async def test_deleting_the_selected_session_selects_the_row_that_took_its_place(demo_db: Path) -> None:
    """After a delete the list is read again; the deleted row's place goes to the next row, and
    that session opens (the reload used to jump to the first row while the live follower's
    reorder kept the place: which one the user got depended on which landed last)."""
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        main = app.screen
        assert isinstance(main, MainScreen)
        await settle(pilot)
        ids = list(main.session_list._ids)
        index = len(ids) // 2
        victim, after = ids[index], ids[index + 1]
        await open_on(pilot, victim)
        assert main.session_list.cursor == index
        await pilot.press("D")
        await settle(pilot)
        assert isinstance(app.screen, DeleteDialog)
        await pilot.press("ctrl+d")
        await settle(pilot, rounds=3)
        assert not exists(demo_db, victim)
        await pilot_until(pilot, lambda: main.current_session == after, "the next row open")
        assert main.session_list.cursor == index
        assert main.session_list.selected_id == after
