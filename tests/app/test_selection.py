"""Multi-select in the session list and deleting the selection (Pilot)."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import ProgressBar, Static

from hermes_tui.app.screens.delete import DeleteDialog
from hermes_tui.app.screens.main import MainScreen
from hermes_tui.app.widgets.session_list import MAX_PAGES, SELECTED_MARK, SessionList
from hermes_tui.formatting import plural
from hermes_tui.state import SessionDB

from ._support import make_app, settle
from .test_actions import exists, open_on, plain, sid_of
from .test_session_list import ListApp, N
from .test_session_list import settle as list_settle


def line_text(sessions: SessionList, index: int) -> str:
    """The rendered text of list row ``index`` (must be on screen)."""
    y = index - int(sessions.scroll_offset.y) + 1
    return "".join(seg.text for seg in sessions.render_line(y))


async def ready(pilot) -> tuple[MainScreen, SessionList]:  # type: ignore[no-untyped-def]
    await settle(pilot)
    main = pilot.app.screen
    assert isinstance(main, MainScreen)
    sessions = main.session_list
    sessions.focus()
    await pilot.pause()
    return main, sessions


async def test_space_toggles_and_moves_down(demo_db: Path) -> None:
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        _main, sessions = await ready(pilot)
        ids = list(sessions._ids)
        assert sessions.cursor == 0 and not sessions.selection
        assert SELECTED_MARK not in line_text(sessions, 0)
        await pilot.press("space", "space")
        await pilot.pause()
        assert sessions.selection == {ids[0], ids[1]}
        assert sessions.cursor == 2
        assert str(sessions.border_title).endswith("· 2 selected")
        assert line_text(sessions, 0).startswith(SELECTED_MARK)
        assert line_text(sessions, 1).startswith(SELECTED_MARK)
        assert not line_text(sessions, 2).startswith(SELECTED_MARK)
        await pilot.press("up", "space")
        await pilot.pause()
        assert sessions.selection == {ids[0]}
        assert sessions.selected_ids == [ids[0]]
        assert str(sessions.border_title).endswith("· 1 selected")


async def test_shift_arrows_extend_a_range_from_the_anchor(demo_db: Path) -> None:
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        _main, sessions = await ready(pilot)
        ids = list(sessions._ids)
        await pilot.press("down", "down", "down")
        await pilot.press("shift+down", "shift+down", "shift+down")
        await pilot.pause()
        assert sessions.cursor == 6
        assert sessions.selected_ids == ids[3:7]
        await pilot.press("shift+up")
        await pilot.pause()
        assert sessions.selected_ids == ids[3:6]
        # A plain move drops the anchor; a new range adds to what is selected.
        await pilot.press("down", "down", "down", "down", "shift+down")
        await pilot.pause()
        assert sessions.selected_ids == ids[3:6] + ids[9:11]
        # A range upward from a new anchor.
        await pilot.press("home", "down", "shift+up")
        await pilot.pause()
        assert sessions.selected_ids == ids[0:2] + ids[3:6] + ids[9:11]
        assert sessions.cursor == 0


async def test_shift_click_extends_a_range(demo_db: Path) -> None:
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        _main, sessions = await ready(pilot)
        ids = list(sessions._ids)
        # Row i is at widget y = 1 (border) + 1 (header) + i.
        await pilot.click("#sessions", offset=(10, 2 + 2))
        await pilot.pause()
        assert sessions.cursor == 2 and not sessions.selection
        await pilot.click("#sessions", offset=(10, 2 + 5), shift=True)
        await pilot.pause()
        assert sessions.selected_ids == ids[2:6]
        assert sessions.cursor == 5


async def test_select_all_then_escape_clears_and_escape_still_goes_back(demo_db: Path) -> None:
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        main, sessions = await ready(pilot)
        await pilot.press("ctrl+a")
        await pilot.pause()
        assert sessions.selection == set(sessions._ids) and len(sessions.selection) == sessions.total
        assert str(sessions.border_title) == f"Sessions {sessions.total} · {sessions.total} selected"
        await pilot.press("z")
        await pilot.pause()
        assert main.has_class("-zoom-left")
        await pilot.press("escape")
        await pilot.pause()
        assert not sessions.selection and main.has_class("-zoom-left")
        assert str(sessions.border_title) == f"Sessions {sessions.total}"
        await pilot.press("escape")  # no selection: Back, as before
        await pilot.pause()
        assert not main.has_class("-zoom-left")
        await pilot.press("asterisk")
        await pilot.pause()
        assert len(sessions.selection) == sessions.total


async def test_select_all_matches_the_current_filter(demo_db: Path) -> None:
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        main, sessions = await ready(pilot)
        total = sessions.total
        await pilot.press("ctrl+a")
        await pilot.pause()
        assert len(sessions.selection) == total
        main.query_one("#filter-text").value = "postgres"  # type: ignore[attr-defined]
        await settle(pilot)
        narrowed = set(sessions._ids)
        assert 0 < len(narrowed) < total
        assert sessions.selection == narrowed  # dropped: no longer in the list
        sessions.clear_selection()
        sessions.focus()
        await pilot.press("ctrl+a")
        await pilot.pause()
        assert sessions.selection == narrowed


async def test_selection_survives_paging_and_drops_vanished_ids(demo_db: Path) -> None:
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        main, sessions = await ready(pilot)
        ids = list(sessions._ids)
        await pilot.press("space", "space", "space")
        await pilot.press("end", "pageup", "home")
        sessions.invalidate()  # re-paging after a write elsewhere
        await settle(pilot)
        assert sessions.selected_ids == ids[:3]
        assert line_text(sessions, 1).startswith(SELECTED_MARK)
        with SessionDB(demo_db, migrate=False) as db:  # another process deletes one of them
            assert db.delete_sessions_batched([ids[1]], cascade_delegates=False)["deleted"] == 1
        await pilot.press("ctrl+r")
        await settle(pilot)
        assert sessions.selected_ids == [ids[0], ids[2]]
        assert str(main.session_list.border_title).endswith("· 2 selected")


async def test_select_all_at_100k_holds_ids_not_rows() -> None:
    app = ListApp()
    async with app.run_test(size=(100, 30)) as pilot:
        await list_settle(pilot)
        sessions = app.query_one(SessionList)
        sessions.focus()
        await pilot.press("ctrl+a")
        await pilot.pause()
        assert len(sessions.selection) == N
        assert len(sessions.selected_ids) == N
        await pilot.press("end")
        await list_settle(pilot)
        assert line_text(sessions, N - 1).startswith(SELECTED_MARK)
        assert len(sessions._pages) <= MAX_PAGES
        assert sum(app.fetched) <= MAX_PAGES * 100
        sessions.set_order(app.ids[: N // 2])  # a reload with half of them gone
        assert len(sessions.selection) == N // 2


# ---------------------------------------------------------------------- delete many
async def test_delete_acts_on_the_selection(demo_db: Path) -> None:
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        _main, sessions = await ready(pilot)
        ids = list(sessions._ids)
        chosen = ids[4:7]
        await pilot.press("down", "down", "down", "down", "space", "space", "space")
        await pilot.pause()
        assert sessions.selected_ids == chosen
        with SessionDB(demo_db, read_only=True, migrate=False) as db:
            plan = db.plan_delete(chosen)
        await pilot.press("D")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, DeleteDialog)
        assert dialog.ids == chosen
        title = plain(dialog.query_one("#dialog-title", Static))
        assert "3 sessions selected" in title
        text = plain(dialog.query_one("#delete-plan", Static))
        assert "Selected (3)" in text
        assert all(sid in text for sid in chosen)
        assert (
            f"{plural(plan['sessions'], 'session')} and {plural(plan['messages'], 'message')} will be deleted"
            in text
        )
        await pilot.click("#confirm")
        await settle(pilot, rounds=3)
        assert isinstance(app.screen, MainScreen)
        assert not sessions.selection
        with SessionDB(demo_db, read_only=True, migrate=False) as db:
            left = len(db.session_order().ids)  # Hermes' list: cascaded delegates were never in it
        assert left < len(ids) and str(sessions.border_title) == f"Sessions {left}"
        notes = [n.message for n in app._notifications]
        assert any(f"Deleted {plan['sessions']} session" in m for m in notes), notes
    assert not any(exists(demo_db, sid) for sid in chosen)
    assert exists(demo_db, ids[3]) and exists(demo_db, ids[7])


async def test_delete_selection_lists_cascade_and_orphans(demo_db: Path) -> None:
    parent = sid_of(demo_db, "CI flakiness deep dive")
    other = sid_of(demo_db, "Nightly backup report")
    branch = sid_of(demo_db, "CI flakiness: try pytest-randomly")
    with SessionDB(demo_db, read_only=True, migrate=False) as db:
        cascade = db.delegate_children([parent])
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        main = await open_on(pilot, parent)
        sessions = main.session_list
        await pilot.press("space")
        main.open_session(other)
        await settle(pilot)
        sessions.focus()
        await pilot.press("space")
        await pilot.pause()
        assert sessions.selection == {parent, other}
        await pilot.press("D")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, DeleteDialog)
        text = plain(dialog.query_one("#delete-plan", Static))
        assert "Selected (2)" in text
        assert f"Delegate children deleted with it ({len(cascade)})" in text and cascade[0] in text
        assert "orphaned (1)" in text and branch in text
        await pilot.click("#cancel")
        await settle(pilot)
        assert isinstance(app.screen, MainScreen)
        assert sessions.selection == {parent, other}  # backing out keeps the selection
    assert exists(demo_db, parent) and exists(demo_db, other)


async def test_delete_many_in_batches_cancelled_between_batches(demo_db: Path) -> None:
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        _main, sessions = await ready(pilot)
        ids = list(sessions._ids)
        with SessionDB(demo_db, read_only=True, migrate=False) as db:
            planned = db.plan_delete(ids)["sessions"]  # with the delegates Hermes' list folds away
        await pilot.press("ctrl+a", "D")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, DeleteDialog)
        assert len(dialog.ids) == len(ids)
        dialog.batch_messages = 10  # many short batches on the small demo
        seen: list[tuple[int, int, float]] = []
        original = dialog._progress

        def progress(done: int, total: int) -> None:
            original(done, total)
            bar = dialog.query_one("#progress", ProgressBar)
            seen.append((done, total, bar.progress))
            if done > 0:
                dialog.action_close()  # Cancel while running: stop after this batch

        dialog._progress = progress  # type: ignore[method-assign]
        await pilot.click("#confirm")
        await settle(pilot, rounds=3)
        assert isinstance(app.screen, MainScreen)
        assert seen[0][0] == 0 and seen[-1][0] > 0 and seen[-1][2] == seen[-1][0]
        deleted = seen[-1][0]
        assert 0 < deleted < len(ids)
        notes = [n.message for n in app._notifications]
        assert any(f"Delete cancelled: {deleted} of {planned}" in m for m in notes), notes
        assert not sessions.selection
    with SessionDB(demo_db, read_only=True, migrate=False) as db:
        left = db.session_order().ids
    assert 0 < len(left) < len(ids)


async def test_delete_selection_refused_read_only(demo_db: Path) -> None:
    before = demo_db.read_bytes()
    app = make_app(demo_db, read_only=True)
    async with app.run_test(size=(120, 40)) as pilot:
        _main, sessions = await ready(pilot)
        await pilot.press("space", "space", "D")
        await settle(pilot)
        assert isinstance(app.screen, MainScreen)
        assert len(sessions.selection) == 2
        notes = [n.message for n in app._notifications]
        assert any("read-only: delete refused" in m for m in notes), notes
    assert demo_db.read_bytes() == before
