"""Damaged legacy stores written by the real hermes-agent 0.19.0: `diagnose` finds the damage,
`repair` fixes it with the file's own FTS DDL, keeps every row, and 0.19.0 opens, writes and
searches the repaired file."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import apsw
import pytest

from hermes_tui.state import SessionDB, diagnose, repair

pytestmark = pytest.mark.peer

DAMAGE = r"""
import sqlite3, sys
path, kind, table = sys.argv[1:4]
c = sqlite3.connect(path, isolation_level=None)
if kind == "dup":
    c.execute("PRAGMA writable_schema=ON")
    c.execute("INSERT INTO sqlite_master SELECT * FROM sqlite_master WHERE name = ?", (table,))
    c.execute("PRAGMA writable_schema=OFF")
elif kind == "fts":
    assert c.execute(f"DELETE FROM {table}_data WHERE id > 10").rowcount > 0
elif kind == "content":
    assert c.execute(f"DELETE FROM {table}_content WHERE id % 3 = 0").rowcount > 0
c.close()
"""


def _damage(path: Path, kind: str, table: str) -> None:
    subprocess.run([sys.executable, "-c", DAMAGE, str(path), kind, table], check=True, timeout=60)


def _fts_sql(path: Path) -> dict[str, str]:
    c = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return dict(
            c.execute("SELECT name, sql FROM sqlite_master WHERE name LIKE 'messages_fts%'").fetchall()
        )
    finally:
        c.close()


@pytest.fixture
def legacy(tmp_path: Path, peer_factory) -> Path:
    """A legacy-layout store written by 0.19.0 (3 sessions, 31 messages), closed."""
    path = tmp_path / "state.db"
    peer = peer_factory(path)
    for s in range(3):
        peer.call("create_session", f"p{s}", "cli", model="m")
        for i in range(10):
            peer.call("append_message", f"p{s}", "user", content=f"peer wrote docker note {s}-{i} 東京タワー")
    peer.call("append_message", "p0", "tool", content="kubernetes output", tool_name="terminal")
    peer.close()
    return path


@pytest.mark.parametrize(
    ("kind", "table", "strategy"),
    [
        ("dup", "messages_fts", "dedup_schema"),
        ("dup", "messages_fts_trigram_update", "dedup_schema"),
        ("fts", "messages_fts", "rebuild_fts"),
        ("fts", "messages_fts_trigram", "rebuild_fts"),
        ("content", "messages_fts", "rebuild_fts"),
    ],
)
def test_damaged_legacy_file_is_repaired_and_the_peer_keeps_writing(
    legacy: Path, tmp_path: Path, peer_factory, kind: str, table: str, strategy: str
) -> None:
    ddl = _fts_sql(legacy)
    _damage(legacy, kind, table)
    report = diagnose(legacy)
    assert report["fts_layout"] == "legacy"
    assert not report["healthy"] and report["repairable"], report
    if kind == "dup":
        assert [d["name"] for d in report["duplicates"]] == [table]
    else:
        assert report["fts"][table] != "ok"

    fixed = repair(legacy, backup_dir=tmp_path / "backups")
    assert fixed["repaired"], fixed
    assert fixed["strategy"] == strategy
    assert (fixed["sessions"], fixed["messages"]) == (3, 31)
    assert Path(fixed["backup_path"]).exists()
    assert _fts_sql(legacy) == ddl  # the file's own DDL: still 0.19.0's legacy layout

    with SessionDB(legacy, migrate=False) as db:
        assert db.capabilities()["fts_layout"] == "legacy"
        assert set(db.fts_integrity_check().values()) == {"ok"}
        assert len(db.search_messages("docker", limit=100)) == 30
        assert db.search_messages("タワー", limit=5)

    peer = peer_factory(legacy)
    peer.call("append_message", "p1", "user", content="written by the peer after the repair: zebrafish")
    hits = peer.call("search_messages", "zebrafish")
    assert [h["session_id"] for h in hits] == ["p1"]
    assert len(peer.call("search_messages", "docker", limit=100)) == 30
    peer.close()
    with SessionDB(legacy, read_only=True) as db:
        assert db.message_count() == 32
        assert db.search_messages("zebrafish")
