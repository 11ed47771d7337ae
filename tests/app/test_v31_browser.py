"""The browser on a file of today's Hermes (schema v31): the archived view (A, the view menu,
remembered), hidden sessions on request, pinned first with its mark, the unread dot, the activity
description, the reset edge, archive/unarchive/pin/unpin keys with undo, the rename dialog's
released title and Hermes' Bot Chat refusal, a search hit in a chain's earlier segment, the prune
dialog's pinned exclusions, and the footer at 80 and 120 columns.

The store is the demo reshaped as a v31 file (`_v31.py`); the e2e test drives the same flows on
a file the v31 writer itself wrote.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from textual.command import DiscoveryHit
from textual.widgets import Button, Input, Select, Static

from hermes_tui.app.flag_actions import VERBS, flag_message
from hermes_tui.app.screens.main import MainScreen
from hermes_tui.app.screens.prune import PruneDialog
from hermes_tui.app.screens.rename import RenameDialog
from hermes_tui.app.settings import load as load_settings
from hermes_tui.app.undo import FlagChange, undo_entries
from hermes_tui.app.widgets.lineage import LineageTree
from hermes_tui.app.widgets.session_list import SessionList
from hermes_tui.state import SessionDB, SessionFilter
from tests._wait import pilot_until, wait_until

from ._support import make_app, settle
from ._v31 import (
    ARCHIVED,
    ARCHIVED_2,
    BOT_CHAT,
    BUSY,
    DOING,
    GHOST,
    GHOST_TITLE,
    PINNED,
    RESET_CHILD,
    reshape_v31,
)
from .test_palette import palette, plain


@pytest.fixture
def v31_db(demo_db: Path) -> Path:
    reshape_v31(demo_db)
    return demo_db


def main_of(app: Any) -> MainScreen:
    screen = app.screen
    assert isinstance(screen, MainScreen)
    return screen


def store_ids(path: Path, **kw: Any) -> list[str]:
    with SessionDB(path, read_only=True, migrate=False) as db:
        return list(db.session_order(SessionFilter(**kw)).ids)


def sql(path: Path, statement: str, params: Any = ()) -> None:
    """A write by another program (our store's own connection, as the owner would write)."""
    with SessionDB(path, migrate=False) as db:
        db._execute_write(lambda c: c.execute(statement, params))


def flags(path: Path, sid: str) -> dict[str, Any]:
    with SessionDB(path, read_only=True, migrate=False) as db:
        (row,) = db.list_rows([sid])
        return {k: row[k] for k in ("archived", "pinned", "hidden")}


def row_text(sessions: SessionList, index: int) -> str:
    """What the list draws for row `index` (scrolled into view)."""
    top = int(sessions.scroll_offset.y)
    return "".join(seg.text for seg in sessions.render_line(index - top + 1))


def toasts(app: Any) -> list[str]:
    return [f"{n.title}: {n.message}" for n in app._notifications]


def shown_keys(app: Any) -> dict[str, str]:
    return {k: b.binding.description for k, b in app.screen.active_bindings.items() if b.binding.show}


async def select_row(pilot: Any, sid: str) -> MainScreen:
    """Open `sid` and put the focus back on the list, its row under the cursor."""
    await settle(pilot)
    main = main_of(pilot.app)
    main.open_session(sid)
    await settle(pilot)
    main.session_list.focus()
    await settle(pilot)
    assert main.session_list.selected_id == sid
    return main


# ---------------------------------------------------------------------- views
async def test_archived_view_with_A_and_the_view_menu_is_remembered(
    v31_db: Path, private_settings: Path
) -> None:
    default = store_ids(v31_db, pinned_first=True)
    archived = store_ids(v31_db, archived="only")
    assert sorted(archived) == sorted([ARCHIVED, ARCHIVED_2])
    assert ARCHIVED not in default and BOT_CHAT not in default
    app = make_app(v31_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        main = main_of(app)
        sessions = main.session_list
        assert list(sessions._ids) == default
        assert sessions.border_title == f"Sessions {len(default)}"
        await pilot.press("A")
        await settle(pilot)
        assert list(sessions._ids) == archived
        assert sessions.border_title == "Archived 2"
        assert "2 archived sessions" in str(main.query_one("#info", Static).render())
        assert main.query_one("#filter-view", Select).value == "archived"
        assert "▼" in row_text(sessions, 0)
        assert app.settings.view == "archived"
        # Another filter narrows the view: "N of M" counts the archived view.
        await pilot.press("f")
        main.query_one("#filter-text", Input).value = "retro"
        await settle(pilot)
        assert list(sessions._ids) == [ARCHIVED_2]
        assert sessions.border_title == "Archived 1 of 2 · filter: title~retro"
        main.query_one("#filter-text", Input).value = ""
        await pilot.press("escape")
        await settle(pilot)
    # Remembered: the next start shows the archived view.
    wait_until(
        lambda: load_settings(private_settings).settings.view == "archived", "the settings file says archived"
    )
    app = make_app(v31_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        main = main_of(app)
        assert list(main.session_list._ids) == archived
        await pilot.press("A")  # and back to Hermes' list
        await settle(pilot)
        assert list(main.session_list._ids) == default
        assert main.query_one("#filter-view", Select).is_blank()
        await pilot.press("A", "F")  # F clears the view with the other filters
        await settle(pilot)
        assert list(main.session_list._ids) == default


async def test_hidden_sessions_only_on_request(v31_db: Path) -> None:
    app = make_app(v31_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        main = main_of(app)
        sessions = main.session_list
        assert BOT_CHAT not in sessions._ids
        await pilot.press("f")
        main.query_one("#filter-view", Select).value = "hidden"
        await settle(pilot)
        ids = list(sessions._ids)
        assert ids == store_ids(v31_db, include_hidden=True, pinned_first=True)
        assert BOT_CHAT in ids and ARCHIVED not in ids
        assert str(sessions.border_title).startswith("Sessions + hidden ")
        text = row_text(sessions, ids.index(BOT_CHAT))
        assert "◌ Bot Chat" in text
        main.query_one("#filter-view", Select).value = "all"
        await settle(pilot)
        assert {BOT_CHAT, ARCHIVED, ARCHIVED_2} <= set(sessions._ids)


# ---------------------------------------------------------------------- marks
async def test_pinned_first_with_its_mark_and_the_unread_dot(v31_db: Path) -> None:
    with SessionDB(v31_db, read_only=True, migrate=False) as db:
        (unread,) = [r["id"] for r in db.list_rows(store_ids(v31_db)) if r["unread"]]
    app = make_app(v31_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        main = main_of(app)
        sessions = main.session_list
        ids = list(sessions._ids)
        assert ids[0] == PINNED  # 30 days old, yet first: pinned first in the default order
        assert ids[1:] == [i for i in store_ids(v31_db) if i != PINNED]
        assert row_text(sessions, 0)[5:].startswith("* Pinned: relea")
        unread_row = row_text(sessions, ids.index(unread))
        assert unread_row[5:7] == "● "
        assert sum("●" in row_text(sessions, i) for i in range(len(ids))) == 2  # unread + working
        await pilot.press("o")  # by start time: an explicit sort, the pin keeps its place
        await settle(pilot)
        assert main.order == "started"
        with SessionDB(v31_db, read_only=True, migrate=False) as db:
            assert list(sessions._ids) == list(db.session_order(SessionFilter(), order="started").ids)
        assert sessions._ids[0] != PINNED


async def test_activity_description_of_a_working_session(v31_db: Path) -> None:
    app = make_app(v31_db)
    async with app.run_test(size=(120, 40)) as pilot:
        main = await select_row(pilot, BUSY)
        sessions = main.session_list
        index = sessions.cursor
        assert "● working" in row_text(sessions, index)  # the Live column at this width
        detail = str(main.query_one("#transcript-title", Static).render())
        assert f"● {DOING} · " in detail
        await pilot.press("z")  # the list alone at 120 columns: the title keeps the room
        await settle(pilot)
        assert "● working" in row_text(sessions, index)
    app = make_app(v31_db)
    async with app.run_test(size=(160, 40)) as pilot:
        main = await select_row(pilot, BUSY)
        await pilot.press("z")  # zoomed at 160: a wide Live column says what it is doing
        await settle(pilot)
        assert f"● {DOING}" in row_text(main.session_list, main.session_list.cursor)
    app = make_app(v31_db)
    async with app.run_test(size=(80, 24)) as pilot:
        main = await select_row(pilot, BUSY)
        lines = str(main.query_one("#transcript-title", Static).render()).splitlines()
        assert lines[1].startswith(f"● {DOING}")  # first on the line: an 80-column pane shows it


async def test_reset_edge_in_the_lineage_and_the_list(v31_db: Path) -> None:
    app = make_app(v31_db)
    async with app.run_test(size=(120, 40)) as pilot:
        main = await select_row(pilot, RESET_CHILD)
        assert row_text(main.session_list, main.session_list.cursor)[2] == "r"
        tree = main.query_one("#lineage", LineageTree)
        labels = {node.data["id"]: str(node.label) for node in tree._node_of.values() if node.data}
        assert labels[RESET_CHILD].startswith("[r] ")
        assert "reset (started afresh)" in labels[RESET_CHILD]


# ---------------------------------------------------------------------- archive and pin keys
async def test_archive_key_then_archived_view_then_unarchive_and_undo_real_clock(v31_db: Path) -> None:
    """m archives the row under the cursor (the row that took its place is selected), A shows it
    in the archived view, m there unarchives it, u archives it again. Real clock."""
    app = make_app(v31_db, now=time.time)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        main = main_of(app)
        sessions = main.session_list
        ids = list(sessions._ids)
        index = len(ids) // 2
        victim, after = ids[index], ids[index + 1]
        await select_row(pilot, victim)
        assert shown_keys(app)["m"] == "Archive"
        await pilot.press("m")
        await settle(pilot)
        assert flags(v31_db, victim)["archived"] == 1
        assert victim not in sessions._ids
        await pilot_until(pilot, lambda: main.current_session == after, "the next row open")
        assert sessions.cursor == index and sessions.selected_id == after
        assert "Archived: Archived 1 session — u to undo · A shows the archive." in toasts(app)
        await pilot.press("A")
        await settle(pilot)
        assert victim in sessions._ids
        await select_row(pilot, victim)
        assert shown_keys(app)["m"] == "Unarchive"
        await pilot.press("m")
        await settle(pilot)
        assert flags(v31_db, victim)["archived"] == 0
        assert victim not in sessions._ids
        assert any(t.startswith("Unarchived: Unarchived 1 session — u to undo.") for t in toasts(app))
        await pilot.press("u")
        await settle(pilot)
        assert flags(v31_db, victim)["archived"] == 1  # undone: archived again
        assert victim in sessions._ids
        assert "Undone: Undone: archived 1 session." in toasts(app)
        await pilot.press("u")  # and the archive before it
        await settle(pilot)
        assert flags(v31_db, victim)["archived"] == 0
        assert undo_entries(app) == []


async def test_archive_the_selection(v31_db: Path) -> None:
    app = make_app(v31_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        main = main_of(app)
        sessions = main.session_list
        first, second = list(sessions._ids)[3:5]
        await select_row(pilot, first)
        await pilot.press("space", "space")
        await settle(pilot)
        assert sessions.selected_ids == [first, second]
        await pilot.press("m")
        await settle(pilot)
        assert flags(v31_db, first)["archived"] == flags(v31_db, second)["archived"] == 1
        assert not sessions.selection
        assert {first, second}.isdisjoint(sessions._ids)
        (change,) = undo_entries(app)
        assert isinstance(change, FlagChange) and set(change.changed) == {first, second}
        await pilot.press("u")
        await settle(pilot)
        assert flags(v31_db, first)["archived"] == flags(v31_db, second)["archived"] == 0


async def test_pin_key_puts_the_row_first_and_u_unpins(v31_db: Path) -> None:
    app = make_app(v31_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        main = main_of(app)
        sessions = main.session_list
        victim = list(sessions._ids)[6]
        await select_row(pilot, victim)
        assert shown_keys(app)["b"] == "Pin"
        await pilot.press("b")
        await settle(pilot)
        assert flags(v31_db, victim)["pinned"] == 1
        assert list(sessions._ids)[:2] == [victim, PINNED]  # the pins, most recently active first
        assert sessions.cursor == 0 and sessions.selected_id == victim  # the cursor went with it
        assert row_text(sessions, 0)[5:7] == "* "
        assert shown_keys(app)["b"] == "Unpin"
        await pilot.press("u")
        await settle(pilot)
        assert flags(v31_db, victim)["pinned"] == 0
        assert list(sessions._ids)[0] == PINNED


async def test_archiving_a_pinned_session_keeps_it_in_the_list_as_hermes_sidebar(v31_db: Path) -> None:
    """A pin is an explicit keep (Hermes' sidebar lists with `include_pinned=True`): archived, a
    pinned session stays first in the default list, its key then unarchives; the order
    without pins (started) leaves it out, as Hermes' own list does."""
    app = make_app(v31_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        main = main_of(app)
        sessions = main.session_list
        await select_row(pilot, PINNED)
        assert shown_keys(app)["m"] == "Archive"
        await pilot.press("m")
        await settle(pilot)
        assert flags(v31_db, PINNED) == {"archived": 1, "pinned": 1, "hidden": 0}
        assert list(sessions._ids)[0] == PINNED
        assert list(sessions._ids) == store_ids(v31_db, pinned_first=True)
        assert shown_keys(app)["m"] == "Unarchive"
        assert PINNED not in store_ids(v31_db)
        await pilot.press("m")
        await settle(pilot)
        assert flags(v31_db, PINNED)["archived"] == 0


async def test_pinning_a_hidden_session_unhides_it_and_undo_hides_it_again(v31_db: Path) -> None:
    sql(v31_db, "UPDATE sessions SET title = 'Helper chat' WHERE id = ?", (BOT_CHAT,))
    app = make_app(v31_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        main = main_of(app)
        await pilot.press("f")
        main.query_one("#filter-view", Select).value = "hidden"
        await settle(pilot)
        await select_row(pilot, BOT_CHAT)
        await pilot.press("b")
        await settle(pilot)
        assert flags(v31_db, BOT_CHAT) == {"archived": 0, "pinned": 1, "hidden": 0}
        assert any("Pinning made 1 hidden session visible." in t for t in toasts(app))
        await pilot.press("u")
        await settle(pilot)
        assert flags(v31_db, BOT_CHAT) == {"archived": 0, "pinned": 0, "hidden": 1}


async def test_flag_keys_refused_read_only(v31_db: Path) -> None:
    before = v31_db.read_bytes()
    app = make_app(v31_db, read_only=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("down", "m", "b")  # (the first row is pinned: b would unpin it)
        await settle(pilot)
        notes = toasts(app)
        assert any("read-only: archive refused" in n for n in notes), notes
        assert any("read-only: pin refused" in n for n in notes), notes
    assert v31_db.read_bytes() == before


async def test_pin_refused_on_a_file_without_the_column(demo_db: Path) -> None:
    """0.19.0's files have no `pinned`: the key says so in the store's words, nothing is written."""
    sql(demo_db, "ALTER TABLE sessions DROP COLUMN pinned")
    before = demo_db.read_bytes()
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("b")
        await settle(pilot)
        notes = toasts(app)
        assert any(n.startswith("Not pinned: ") and "has no pins" in n for n in notes), notes
        assert undo_entries(app) == []
    assert demo_db.read_bytes() == before


# ---------------------------------------------------------------------- rename
async def test_rename_says_a_title_is_released_from_a_ghost(v31_db: Path) -> None:
    app = make_app(v31_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await select_row(pilot, PINNED)
        await pilot.press("r")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, RenameDialog)
        dialog.query_one("#rename-input", Input).value = GHOST_TITLE
        await settle(pilot)
        check = str(dialog.query_one("#rename-check", Static).render())
        assert f"✓ will be saved as: {GHOST_TITLE}" in check
        assert f"released from session {GHOST}" in check
        await pilot.press("enter")
        await settle(pilot)
    with SessionDB(v31_db, read_only=True, migrate=False) as db:
        assert db.get_session_title(PINNED) == GHOST_TITLE
        assert db.get_session_title(GHOST) is None


async def test_rename_of_the_bot_chat_shows_hermes_reason(v31_db: Path) -> None:
    app = make_app(v31_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        main = main_of(app)
        main.open_session(BOT_CHAT)  # hidden: not in the list, opened from elsewhere
        await settle(pilot)
        await pilot.press("r")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, RenameDialog)
        dialog.query_one("#rename-input", Input).value = "My chat"
        await settle(pilot)
        check = str(dialog.query_one("#rename-check", Static).render())
        assert "✗ This is the bot's canonical Bot Chat" in check
        assert dialog.query_one("#ok", Button).disabled


async def test_rename_refused_at_write_says_hermes_reason_not_taken(v31_db: Path) -> None:
    """The session became the canonical Bot Chat between the check and the write: the status
    says Hermes' reason (it said "the title was taken meanwhile")."""
    app = make_app(v31_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await select_row(pilot, PINNED)
        await pilot.press("r")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, RenameDialog)
        dialog.query_one("#rename-input", Input).value = "Renamed meanwhile"
        await settle(pilot)
        sql(v31_db, "UPDATE sessions SET title = 'Old bot' WHERE id = ?", (BOT_CHAT,))
        sql(v31_db, "UPDATE sessions SET title = 'Bot Chat', hidden = 1 WHERE id = ?", (PINNED,))
        await pilot.press("enter")
        await settle(pilot)
        status = str(dialog.query_one("#status", Static).render())
        assert status.startswith("Not renamed, nothing was written: This is the bot's canonical Bot Chat")
        assert "taken meanwhile" not in status
    with SessionDB(v31_db, read_only=True, migrate=False) as db:
        assert db.get_session_title(PINNED) == "Bot Chat"


# ---------------------------------------------------------------------- search and prune
async def test_a_hit_in_an_earlier_segment_of_a_chain_selects_the_chains_row(demo_db: Path) -> None:
    with SessionDB(demo_db, migrate=False) as db:
        segment = db.get_session_by_title("Postgres upgrade runbook #2")
        assert segment is not None
        root = db.get_lineage(segment["id"])["root"]
        tip = db.get_compression_tip(root)
        listed = db.session_order(SessionFilter()).ids
        assert root != tip and root not in listed and tip in listed
        db.append_message(root, "user", "the zanzibar checklist", timestamp=segment["started_at"] - 5)
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        main = main_of(app)
        sessions = main.session_list
        assert sessions.cursor == 0 and sessions.selected_id != tip
        await pilot.press("slash", *"zanzibar")
        await settle(pilot)
        await pilot.press("down", "enter")
        await settle(pilot)
        assert main.current_session == root
        await pilot.press("escape", "escape")  # transcript → results → the list
        await settle(pilot)
        assert not main.has_class("-searching")
        assert sessions.selected_id == tip  # the chain's row
        assert main.current_session == root  # the hit's transcript stays
        await pilot.press("down", "up")  # leaving the row and coming back opens the tip
        await settle(pilot)
        assert main.current_session == tip


async def test_prune_lists_pinned_sessions_as_excluded(v31_db: Path) -> None:
    app = make_app(v31_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("P")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, PruneDialog)
        dialog.query_one("#prune-days", Input).value = "7"
        dialog.query_one("#prune-title", Input).value = "Pinned"
        await settle(pilot, rounds=3)
        assert dialog.plan is not None and dialog.plan["sessions"] == 0
        summary = str(dialog.query_one("#prune-excluded-summary", Static).render())
        assert "Excluded (1): 1 pinned" in summary


# ---------------------------------------------------------------------- footer
async def test_footer_keys_fit_80_and_120_columns(v31_db: Path) -> None:
    app = make_app(v31_db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        keys = shown_keys(app)
        assert {"enter", "slash", "f", "D", "m", "b", "question_mark", "q"} <= set(keys), keys
        assert not {"a", "A", "r", "space"} & set(keys)  # they work; help and the filter bar name them
        await pilot.press("A")
        await settle(pilot)
        assert main_of(app).session_list.total == 2
        keys = shown_keys(app)  # in the archived view, A is the way back, F is not needed
        assert {"A", "m", "question_mark", "q"} <= set(keys) and "F" not in keys, keys
        assert keys["m"] == "Unarchive"
        await pilot.press("A")  # (remembered: the next start would show the archive)
        await settle(pilot)
    app = make_app(v31_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        keys = shown_keys(app)
        assert {"A", "r", "D", "m", "b", "question_mark", "q"} <= set(keys), keys
        assert keys["A"] == "Archived" and keys["b"] == "Unpin"  # the cursor is on the pinned row


# ---------------------------------------------------------------------- palette
async def test_palette_offers_the_views_and_the_flag_verbs(v31_db: Path) -> None:
    app = make_app(v31_db)
    async with app.run_test(size=(120, 40)) as pilot:
        main = await select_row(pilot, RESET_CHILD)
        hits = await palette(pilot)
        shown = {hit.text: plain(hit.display) for hit in hits if isinstance(hit, DiscoveryHit)}
        for text, key in {
            "Archive the selected session(s)": "m",
            "Unarchive the selected session(s)": "m",
            "Pin the selected session(s)": "b",
            "Unpin the selected session(s)": "b",
            "Archived sessions ↔ Hermes' list": "A",
            "Undo the last delete, prune, archive or pin": "u",
        }.items():
            assert shown.get(text) == f"{text}  [{key}]", (text, shown.get(text))
        await pilot.press("escape")
        await settle(pilot)
        hits = await palette(pilot, "pin the sel")
        assert plain(hits[0].match_display) == "Pin the selected session(s)  [b]"
        await pilot.press("enter")
        await settle(pilot)
        assert flags(v31_db, RESET_CHILD)["pinned"] == 1
        assert main.session_list._ids[0] == RESET_CHILD


# ---------------------------------------------------------------------- toast wording
def _entry(sid: str, changed: list[str], **kw: Any) -> dict[str, Any]:
    base = {"id": sid, "found": True, "lineage": changed or [sid], "changed": changed, "unhidden": []}
    return {**base, "auto_archived_cleared": [], "bot_chat": False, **kw}


def test_flag_messages() -> None:
    archive, pin = VERBS["archive"], VERBS["pin"]
    chain = {"sessions": [_entry("a", ["a", "a2", "a3"])], "rows": 3, "changed": 3}
    assert flag_message(archive, chain) == (
        "Archived 1 session with its compression chain (3 sessions in all) — u to undo · A shows the archive."
    )
    assert flag_message(archive, chain, archived_view=True).endswith("(3 sessions in all) — u to undo.")
    same = {"sessions": [_entry("a", []), _entry("b", [])], "rows": 2, "changed": 0}
    assert flag_message(pin, same) == "Nothing changed: they were already pinned."
    gone = {"sessions": [_entry("x", [], found=False)], "rows": 0, "changed": 0}
    assert flag_message(pin, gone) == "Nothing changed: the session no longer exists."
    entries = [_entry("b", ["b"], bot_chat=True), _entry("y", [], found=False)]
    bot = {"sessions": entries, "rows": 1, "changed": 1}
    assert flag_message(pin, bot) == (
        "Pinned 1 session — u to undo. The Bot Chat stays hidden (Bot Mode reaches it through its bot)."
        " 1 session no longer exists: y."
    )
