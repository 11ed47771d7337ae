"""Damaged stores: `diagnose` finds what is wrong without writing, `repair` backs the
file up, fixes duplicate `sqlite_master` rows and broken FTS indexes keeping every row, and leaves
a file it cannot repair exactly as it was. v23 files written by our store (the legacy layout,
written by hermes-agent 0.19.0, is in tests/peer/test_repair_peer.py)."""

from __future__ import annotations

import hashlib
import importlib
import os
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import apsw
import pytest

from hermes_tui.state import (
    NotADatabaseError,
    SessionDB,
    StoreError,
    diagnose,
    is_fts_corruption_error,
    is_malformed_db_error,
    repair,
    repair_state_db_schema,
)

# `hermes_tui.state.repair` is the function (exported under its module's name): the module itself.
repair_mod = importlib.import_module("hermes_tui.state.repair")

# Damage is done in a subprocess with the stdlib's SQLite (never both libraries on one file in
# one process): `dup TABLE` adds a second sqlite_master row for TABLE, `fts TABLE` deletes the
# index's data blocks past the structure record.
DAMAGE = r"""
import sqlite3, sys
path, kind, table = sys.argv[1:4]
c = sqlite3.connect(path, isolation_level=None)
if kind == "dup":
    c.execute("PRAGMA writable_schema=ON")
    c.execute("INSERT INTO sqlite_master SELECT * FROM sqlite_master WHERE name = ?", (table,))
    c.execute("PRAGMA writable_schema=OFF")
elif kind == "fts":
    n = c.execute(f"DELETE FROM {table}_data WHERE id > 10").rowcount
    assert n > 0, n
elif kind == "content":
    n = c.execute(f"DELETE FROM {table}_content WHERE id % 3 = 0").rowcount
    assert n > 0, n
c.close()
"""


def damage(path: Path, kind: str, table: str = "messages_fts") -> None:
    subprocess.run([sys.executable, "-c", DAMAGE, str(path), kind, table], check=True, timeout=60)


def digest(path: Path) -> tuple[str, int]:
    return hashlib.sha256(path.read_bytes()).hexdigest(), os.stat(path).st_mtime_ns


def make_store(path: Path, sessions: int = 3, per_session: int = 20) -> None:
    with SessionDB(path) as db:
        for s in range(sessions):
            db.create_session(f"s{s}", "cli", model="m")
            for i in range(per_session):
                db.append_message(f"s{s}", "user", f"docker deployment note {s}-{i} 東京タワー")
            db.append_message(f"s{s}", "tool", "kubernetes output", tool_name="terminal")


def check_sound(path: Path, sessions: int, messages: int) -> None:
    """Opens for writing, every row kept, every FTS index passes, search finds, a write works."""
    with SessionDB(path, migrate=False) as db:
        assert db.session_count() == sessions
        assert db.message_count() == messages
        assert set(db.fts_integrity_check().values()) == {"ok"}
        assert len(db.search_messages("docker", limit=500)) == messages - sessions
        assert db.search_messages("タワー", limit=5)
        db.append_message("s0", "user", "after the repair: zebrafish")
        assert db.search_messages("zebrafish")


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path = tmp_path / "state.db"
    make_store(path)
    return path


def test_is_malformed_db_error_matches_upstream_markers() -> None:
    assert is_malformed_db_error(apsw.CorruptError("malformed database schema (messages_fts) - x"))
    assert is_malformed_db_error(sqlite3.DatabaseError("database disk image is malformed"))
    assert is_malformed_db_error(NotADatabaseError("/x is corrupt (SQLite: malformed database schema (t))"))
    assert not is_malformed_db_error(apsw.BusyError("database is locked"))
    assert not is_malformed_db_error(ValueError("malformed database schema"))  # not a database error


def test_duplicate_schema_row_is_browsable_read_only_and_diagnosed_without_writing(store: Path) -> None:
    damage(store, "dup")
    before = digest(store)
    with pytest.raises(StoreError) as info:
        SessionDB(store, migrate=False)  # read-write: refused, the file is not touched
    assert is_malformed_db_error(info.value), info.value
    assert digest(store) == before
    with SessionDB(store, read_only=True) as db:  # read-only: browsable despite the damage
        assert len(db.session_order().ids) == 3
        assert db.message_count() == 63
    assert digest(store) == before
    report = diagnose(store)
    assert digest(store) == before
    assert report["readable"] and not report["healthy"] and report["repairable"]
    assert "already exists" in report["schema_error"]
    assert [(d["type"], d["name"], d["count"]) for d in report["duplicates"]] == [
        ("table", "messages_fts", 2)
    ]
    assert (report["sessions"], report["messages"]) == (3, 63)
    assert report["fts_layout"] == "v23"
    assert any("sqlite_master holds 2 rows" in p for p in report["problems"])


def test_repair_removes_duplicate_schema_rows_after_a_private_backup(store: Path, tmp_path: Path) -> None:
    damage(store, "dup", "messages_fts")
    damage(store, "dup", "messages_fts_trigram_insert")
    report = repair(store, backup_dir=tmp_path / "backups")
    assert report["repaired"], report
    assert report["strategy"] == "dedup_schema"
    assert (report["sessions"], report["messages"]) == (3, 63)
    backup = Path(report["backup_path"])
    assert backup.parent == tmp_path / "backups"
    assert stat.S_IMODE(os.stat(backup).st_mode) == 0o600
    assert not Path(str(backup) + ".part").exists()
    # The backup is the damaged original: both duplicates are still in it.
    assert [d["name"] for d in diagnose(backup)["duplicates"]] == [
        "messages_fts",
        "messages_fts_trigram_insert",
    ]
    assert diagnose(store)["healthy"]
    check_sound(store, 3, 63)


@pytest.mark.parametrize("table", ["messages_fts", "messages_fts_trigram", "messages_fts_cjk"])
def test_broken_v23_index_opens_read_only_and_is_rebuilt(store: Path, table: str) -> None:
    damage(store, "fts", table)
    with SessionDB(store, read_only=True) as db:  # SQLite can read it: the browser can open it
        assert len(db.get_messages("s1")) == 21
        assert "corrupt" in db.diagnose(full=False)["fts"][table]  # and can say what is wrong
        for sort in (None, "newest"):  # a search through the broken index: a StoreError, never apsw's
            try:
                db.search("message", sort=sort)
            except StoreError as exc:
                assert is_fts_corruption_error(exc) or is_malformed_db_error(exc), exc
    report = diagnose(store)
    assert not report["healthy"] and report["repairable"]
    assert report["fts"][table] != "ok" and "corrupt" in report["fts"][table]
    assert all(v == "ok" for t, v in report["fts"].items() if t != table)
    assert report["duplicates"] == [] and report["schema_error"] is None
    fixed = repair_state_db_schema(store)  # upstream's entry point: backup beside the store
    assert fixed["repaired"] and fixed["strategy"] == "rebuild_fts", fixed
    assert Path(fixed["backup_path"]).parent == store.parent
    assert Path(fixed["backup_path"]).name.startswith("state.db.malformed-backup-")
    check_sound(store, 3, 63)


def test_both_kinds_of_damage_at_once(store: Path, tmp_path: Path) -> None:
    damage(store, "fts", "messages_fts")
    damage(store, "dup", "messages_fts")
    report = repair(store, backup_dir=tmp_path / "b")
    assert report["repaired"] and report["strategy"] == "dedup_schema+rebuild_fts", report
    check_sound(store, 3, 63)


def test_rebuild_mid_build_finishes_the_gated_group(store: Path, tmp_path: Path) -> None:
    """A v23 file whose base/trigram rebuild gates are set (a conversion in progress): the broken
    index's whole gate group is rebuilt and the markers cleared, so no row is indexed twice."""
    c = apsw.Connection(str(store))
    c.execute(
        "INSERT OR REPLACE INTO state_meta(key, value) VALUES('fts_rebuild_high_water', '40'),"
        "('fts_rebuild_progress', '20')"
    )
    c.close()
    damage(store, "fts", "messages_fts_trigram")
    report = repair(store, backup_dir=tmp_path / "b")
    assert report["repaired"], report
    c = apsw.Connection(str(store))
    assert c.execute("SELECT count(*) FROM state_meta WHERE key LIKE 'fts_rebuild_%'").fetchall() == [(0,)]
    c.close()
    check_sound(store, 3, 63)


def test_healthy_store_is_left_alone(store: Path, tmp_path: Path) -> None:
    before = digest(store)
    report = repair(store, backup_dir=tmp_path / "b")
    assert report["repaired"] and report["strategy"] == "already_healthy"
    assert report["backup_path"] is None and not (tmp_path / "b").exists()
    assert digest(store) == before


def _smash_messages_table(path: Path) -> None:
    """Overwrite the root page of `messages` with garbage (damage no rebuild can undo)."""
    c = apsw.Connection(str(path))
    root = c.execute("SELECT rootpage FROM sqlite_master WHERE name = 'messages'").fetchall()[0][0]
    page = c.execute("PRAGMA page_size").fetchall()[0][0]
    c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    c.close()
    with open(path, "r+b") as fh:
        fh.seek((root - 1) * page + 8)
        fh.write(b"\xa5" * 64)


def test_unrepairable_file_is_left_exactly_as_it_was(store: Path, tmp_path: Path) -> None:
    _smash_messages_table(store)
    before = digest(store)
    report = diagnose(store)
    assert not report["healthy"] and not report["repairable"]
    result = repair(store, backup_dir=tmp_path / "b")
    assert not result["repaired"]
    assert "cannot be repaired automatically" in result["error"]
    assert "left exactly as it was" in result["error"]
    assert digest(store) == before


def test_failed_verification_rolls_everything_back(store: Path, tmp_path: Path, monkeypatch) -> None:
    damage(store, "fts")
    damage(store, "dup")
    before = digest(store)

    def refuse(*_a: object) -> None:
        raise repair_mod.RepairFailed("verification refused (test)")

    monkeypatch.setattr(repair_mod, "_verify", refuse)
    report = repair(store, backup_dir=tmp_path / "b")
    assert not report["repaired"]
    assert "verification refused (test)" in report["error"] and "left exactly as it was" in report["error"]
    assert digest(store)[0] == before[0]
    again = diagnose(store)
    assert [d["name"] for d in again["duplicates"]] == ["messages_fts"]
    assert again["fts"]["messages_fts"] != "ok"
    assert Path(report["backup_path"]).exists()  # the backup was taken before anything changed


def test_restores_from_the_backup_when_the_committed_file_fails_its_checks(
    store: Path, tmp_path: Path, monkeypatch
) -> None:
    damage(store, "dup")
    real = repair_mod.diagnose
    calls = []

    def diagnose_after_fails(path: object, **kw: object) -> dict:
        calls.append(path)
        out = real(path, **kw)
        if len(calls) == 2:  # the check after the commit
            out = {**out, "healthy": False, "problems": ["simulated failure"]}
        return out

    monkeypatch.setattr(repair_mod, "diagnose", diagnose_after_fails)
    report = repair(store, backup_dir=tmp_path / "b")
    assert not report["repaired"]
    assert "restored from the backup" in report["error"]
    assert [d["name"] for d in real(store)["duplicates"]] == ["messages_fts"]  # the original again
