"""A store its owner keeps in `journal_mode=DELETE` (written by hermes-agent 0.19.0) stays so
through our `migrate=False` writes, and the peer can open and append to it afterwards."""

from __future__ import annotations

from pathlib import Path

import apsw
import pytest

from hermes_tui.state import SessionDB

pytestmark = pytest.mark.peer


def _pragma(path: Path, sql: str) -> list[tuple]:
    """One statement on a fresh read-write APSW connection (read-only ones leave -wal/-shm)."""
    c = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READWRITE)
    try:
        return c.execute(sql).fetchall()
    finally:
        c.close()


def test_delete_mode_store_written_by_the_peer_stays_delete_mode(tmp_path: Path, peer_factory) -> None:
    path = tmp_path / "state.db"
    peer = peer_factory(path)
    for s in range(4):
        peer.call("create_session", f"p{s}", "cli", model="m")
        peer.call("append_message", f"p{s}", "user", content=f"peer wrote docker note {s}")
    peer.call("close")  # upstream's TRUNCATE checkpoint: everything is in the file
    assert _pragma(path, "PRAGMA journal_mode=DELETE") == [("delete",)]

    db = SessionDB(path, migrate=False)
    try:
        assert db.capabilities()["schema_version"] == 22  # a v22 file, left at v22
        assert db.set_session_title("p0", "Renamed by hermes-tui")
        mine = db.append_message("p1", "user", content="zebrafish appended by hermes-tui")
        res = db.delete_sessions_batched(["p2", "p3"], batch_messages=1)
        assert res["deleted"] == 2
        for i in range(55):  # past the 50-write PASSIVE checkpoint
            db.append_message("p1", "assistant", content=f"reply {i}")
        assert db._maintainer.wait("checkpoint", 1)
        assert db._scalar("PRAGMA journal_mode") == "delete"
        assert set(db.fts_integrity_check().values()) == {"ok"}
    finally:
        db.close()
    assert _pragma(path, "PRAGMA journal_mode") == [("delete",)]
    assert not Path(f"{path}-wal").exists() and not Path(f"{path}-shm").exists()
    assert _pragma(path, "PRAGMA integrity_check") == [("ok",)]

    peer2 = peer_factory(path)
    assert peer2.call("get_session", "p0")["title"] == "Renamed by hermes-tui"
    assert peer2.call("get_session", "p2") is None
    theirs = peer2.call("append_message", "p1", "user", content="zebrafish appended by the peer")
    assert theirs > mine
    hits = {r["id"] for r in peer2.call("search_messages", "zebrafish")}
    assert {mine, theirs} <= hits
    assert len(peer2.call("get_messages", "p1")) == 58
    peer2.call("close")
    assert _pragma(path, "PRAGMA integrity_check") == [("ok",)]
    with SessionDB(path, read_only=True) as ro:
        assert ro.message_count("p1") == 58
