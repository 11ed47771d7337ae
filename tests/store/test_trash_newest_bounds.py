"""Newest-first search after a trash restore.

Restored messages come back under their old ids. The newest-first walk stops early using
per-block timestamp bounds (`_block_max`); bounds read while the messages were in the trash are
too low for them, and the walk would stop before reaching them. A restore raises this process's
bounds and marks the store (`MESSAGES_RESTORED_KEY`) so other processes rebuild theirs.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes_tui.state import SessionDB
from hermes_tui.state.core import MESSAGES_RESTORED_KEY

pytestmark = pytest.mark.usefixtures("xdg_cache")


def populate(db: SessionDB) -> None:
    """`recent` holds the lowest ids and the newest timestamps; `old` 1,000 older matches above."""
    db.create_session("recent", "cli")
    db.append_messages(
        "recent", [{"role": "user", "content": f"needle r{i}", "timestamp": 50_000 + i} for i in range(300)]
    )
    db.end_session("recent", "done")
    db.create_session("old", "cli")
    db.append_messages(
        "old", [{"role": "user", "content": f"needle o{i}", "timestamp": 1_000 + i} for i in range(1000)]
    )


def newest(db: SessionDB) -> set[str]:
    return {r["session_id"] for r in db.search("needle", sort="newest", limit=5, context=False).results}


def test_a_restore_in_this_process_raises_its_bounds(tmp_path: Path) -> None:
    with SessionDB(tmp_path / "state.db") as db:
        populate(db)
        entry = db.trash_sessions(["recent"])
        assert newest(db) == {"old"}  # the bounds are read now, without `recent`
        built = db._blockmax_cache
        db.restore_trash(entry["trash_entry"])
        assert newest(db) == {"recent"}
        assert db._blockmax_cache is not built and db._blockmax_cache[0] == built[0]  # raised, not rebuilt
        assert db.get_meta(MESSAGES_RESTORED_KEY)


def test_a_restore_by_another_process_makes_this_one_rebuild(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    with SessionDB(path) as writer:
        populate(writer)
        entry = writer.trash_sessions(["recent"])
        with SessionDB(path, migrate=False) as browser:
            assert newest(browser) == {"old"}
            writer.restore_trash(entry["trash_entry"])
            assert newest(browser) == {"recent"}
