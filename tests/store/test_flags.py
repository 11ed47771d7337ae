"""`set_session_flags` and upstream's `set_session_archived`/`set_session_pinned`/
`set_session_hidden` on our own v23 file: the compression lineage, the counts, what a file
without the column does (the v31 writer's side is tests/peer/test_v31_write.py)."""

from __future__ import annotations

from pathlib import Path

import apsw
import pytest

from hermes_tui.state import FeatureUnavailable, ReadOnlyError, SessionDB, SessionNotFound


@pytest.fixture
def db(tmp_path: Path):
    store = SessionDB(tmp_path / "state.db")
    for sid, parent, end in (
        ("root", None, "compression"),
        ("mid", "root", "compression"),
        ("tip", "mid", None),
        ("branch", "mid", None),  # a child of a compression-ended parent is in its lineage (upstream)
        ("solo", None, None),
    ):
        store.create_session(sid, "cli", parent_session_id=parent)
        if end:
            store.end_session(sid, end)
    yield store
    store.close()


def values(db: SessionDB, flag: str) -> dict[str, int]:
    return {r["id"]: r[flag] for r in db._rows(f"SELECT id, {flag} FROM sessions")}


def test_a_flag_spans_the_compression_lineage_both_ways(db) -> None:
    assert db.session_flags() == {"archived", "pinned"}
    entry = db.set_session_flag("mid", "archived", True)
    assert entry["lineage"] == ["branch", "mid", "root", "tip"]
    assert entry["changed"] == entry["lineage"] and entry["found"]
    assert values(db, "archived") == {"root": 1, "mid": 1, "tip": 1, "branch": 1, "solo": 0}
    assert db.set_session_pinned("solo", True) is True
    assert values(db, "pinned") == {"root": 0, "mid": 0, "tip": 0, "branch": 0, "solo": 1}


def test_bulk_counts_each_row_once(db) -> None:
    done = db.set_session_flags(["tip", "root", "tip", "solo", "gone"], "pinned", True)
    assert [(e["id"], e["found"], len(e["changed"])) for e in done["sessions"]] == [
        ("tip", True, 3),  # up to the root; "branch" hangs off "mid", not above or below "tip"
        ("root", True, 1),  # down to every continuation: "branch" is the one not pinned yet
        ("solo", True, 1),
        ("gone", False, 0),
    ]
    assert (done["rows"], done["changed"]) == (5, 5)
    again = db.set_session_flags(["solo"], "pinned", True)
    assert (again["rows"], again["changed"]) == (1, 0)


def test_unknown_ids_flags_and_read_only(db, tmp_path) -> None:
    assert db.set_session_archived("gone", True) is False
    with pytest.raises(SessionNotFound):
        db.set_session_flag("gone", "pinned", True)
    with pytest.raises(ValueError, match="flag must be one of"):
        db.set_session_flags(["solo"], "title", True)
    with SessionDB(tmp_path / "state.db", read_only=True) as ro, pytest.raises(ReadOnlyError):
        ro.set_session_pinned("solo", True)


def test_a_file_without_the_column_is_refused_and_left_alone(db, tmp_path) -> None:
    path = tmp_path / "state.db"
    with pytest.raises(FeatureUnavailable, match=r"\(schema v23\) has no hidden sessions"):
        db.set_session_hidden("solo", True)
    db.close()
    conn = apsw.Connection(str(path))
    conn.execute("ALTER TABLE sessions DROP COLUMN pinned")
    conn.close()
    before = path.read_bytes()
    with SessionDB(path, migrate=False) as old:
        assert old.session_flags() == {"archived"}
        with pytest.raises(
            FeatureUnavailable, match="has no pins: its sessions table has no `pinned` column"
        ):
            old.set_session_flags(["solo", "tip"], "pinned", True)
        assert old.columns("sessions") and "pinned" not in old.columns("sessions")  # never added
    assert path.read_bytes() == before


def test_a_column_added_by_another_program_since_the_open_is_written(db, tmp_path) -> None:
    """Columns are looked up in the write: a file migrated under an open store is written as it is."""
    other = apsw.Connection(str(tmp_path / "state.db"))
    other.execute("ALTER TABLE sessions ADD COLUMN hidden INTEGER NOT NULL DEFAULT 0")
    other.execute("ALTER TABLE sessions ADD COLUMN auto_archived INTEGER NOT NULL DEFAULT 0")
    other.execute("UPDATE sessions SET hidden = 1, auto_archived = 1 WHERE id = 'solo'")
    other.close()
    entry = db.set_session_flag("solo", "pinned", True)
    assert entry["unhidden"] == ["solo"]
    assert db.set_session_flag("solo", "archived", True)["auto_archived_cleared"] == ["solo"]
    assert db._rows("SELECT hidden, auto_archived, archived, pinned FROM sessions WHERE id = 'solo'") == [
        {"hidden": 0, "auto_archived": 0, "archived": 1, "pinned": 1}
    ]
