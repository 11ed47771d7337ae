"""The repair offer: a store that fails to open because `sqlite_master` holds a
duplicate row is diagnosed, repaired with a backup first on R, and opened again; never offered
read-only, nor for a file that is simply not a store."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from textual.widgets import Static

from hermes_tui.app.screens.main import MainScreen
from hermes_tui.app.screens.repair import RepairOffer, looks_damaged
from hermes_tui.state import SessionDB

from ._support import make_app, settle

# Damage is done with the stdlib's SQLite in a subprocess (never both libraries in one process),
# as tests/store/test_repair.py does: a second sqlite_master row for the FTS table.
DUPLICATE = r"""
import sqlite3, sys
c = sqlite3.connect(sys.argv[1], isolation_level=None)
c.execute("PRAGMA writable_schema=ON")
c.execute("INSERT INTO sqlite_master SELECT * FROM sqlite_master WHERE name = 'messages_fts'")
c.execute("PRAGMA writable_schema=OFF")
c.close()
"""


def damage(path: Path) -> None:
    subprocess.run([sys.executable, "-c", DUPLICATE, str(path)], check=True, timeout=60)


def counts(path: Path) -> tuple[int, int]:
    with SessionDB(path, read_only=True, migrate=False) as db:
        return db.session_count(), db.message_count()


def listed(path: Path) -> int:
    """How many sessions the list shows (Hermes' list: children folded)."""
    with SessionDB(path, read_only=True, migrate=False) as db:
        return db.list_count()


def plain(widget: Static) -> str:
    return str(widget.render())


async def test_duplicate_schema_row_is_diagnosed_repaired_and_reopened(demo_db: Path) -> None:
    sessions, messages = counts(demo_db)
    shown = listed(demo_db)
    damage(demo_db)
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, rounds=3)
        main = app.screen
        assert isinstance(main, MainScreen) and main.state == "failed"
        offer = main.query_one(RepairOffer)
        text = plain(offer)
        assert "sqlite_master holds 2 rows for table messages_fts" in text, text
        assert "R… repair: a backup is made first" in text
        assert app.focused is offer
        assert not list(demo_db.parent.glob("*backup*"))  # diagnosing wrote nothing
        await pilot.press("R")
        await settle(pilot, rounds=4)
        assert main.state == "ready"
        assert not main.query(RepairOffer)
        assert main.session_list.total == shown
        repaired = [str(n.message) for n in app._notifications if n.title == "Repair"]
        assert repaired and "backup at" in repaired[0]
    backups = [p for p in demo_db.parent.iterdir() if p.name != demo_db.name and "backup" in p.name]
    assert backups, list(demo_db.parent.iterdir())
    assert counts(demo_db) == (sessions, messages)


async def test_no_repair_offer_read_only(demo_db: Path) -> None:
    damage(demo_db)
    before = demo_db.read_bytes()
    app = make_app(demo_db, read_only=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, rounds=3)
        main = app.screen
        # Read-only, the store reads such a file (skipping the bad row); a repair is never offered.
        assert isinstance(main, MainScreen) and main.state in {"ready", "failed"}
        assert not main.query(RepairOffer)
        await pilot.press("R")
        await settle(pilot)
    assert demo_db.read_bytes() == before


async def test_no_repair_offer_for_a_file_that_is_not_a_store(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    path.write_bytes(b"this is not a database at all\n" * 100)
    app = make_app(path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, rounds=2)
        main = app.screen
        assert isinstance(main, MainScreen) and main.state == "failed"
        assert not main.query(RepairOffer)


def test_damage_words_decide_the_offer() -> None:
    assert looks_damaged("NotADatabaseError: malformed database schema (messages_fts) - duplicate")
    assert not looks_damaged("file is not a database")
    assert looks_damaged("fts5: corruption found reading blob 12 from table messages_fts", fts=True)
    assert not looks_damaged("fts5: corruption found reading blob 12", fts=False)


async def test_b_browses_the_damaged_store_read_only_and_writes_nothing(demo_db: Path) -> None:
    shown = listed(demo_db)
    damage(demo_db)
    before = demo_db.read_bytes()
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, rounds=3)
        main = app.screen
        assert isinstance(main, MainScreen) and main.state == "failed"
        offer = main.query_one(RepairOffer)
        assert "b… browse it read-only" in plain(offer)
        await pilot.press("b")
        await settle(pilot, rounds=4)
        assert main.state == "ready"
        assert not main.query(RepairOffer)
        assert app.read_only and main.db is not None and main.db.read_only
        assert main.session_list.total == shown
        await pilot.press("r")  # rename is refused like any write in --read-only
        await settle(pilot)
        assert any("read-only" in str(n.message) for n in app._notifications)
    assert demo_db.read_bytes() == before


async def test_a_search_through_a_damaged_index_says_how_to_repair(tmp_path: Path) -> None:
    from store.test_repair import damage as damage_kind
    from store.test_repair import make_store

    from hermes_tui.app.widgets.search import DAMAGED_INDEX, SearchPane

    path = tmp_path / "state.db"
    make_store(path)
    damage_kind(path, "fts", "messages_fts")
    app = make_app(path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, rounds=3)
        await pilot.press("slash", *"docker")
        await settle(pilot, rounds=3)
        status = app.screen.query_one(SearchPane).query_one("#search-status")
        assert DAMAGED_INDEX in plain(status), plain(status)
