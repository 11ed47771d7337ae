"""The trash on a file written and owned by hermes-agent 0.19.0 (legacy FTS layout, schema v22):
delete and prune through the trash, restore identical rows, and the owner keeps writing,
searching and deleting afterwards."""

from __future__ import annotations

import sys
from pathlib import Path

import apsw
import pytest

from hermes_tui.state import SessionDB

pytestmark = pytest.mark.peer

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "store"))
from test_trash import fts_check, table_dump  # noqa: E402


def _corpus(peer) -> None:
    for s in range(6):
        sid = f"p{s}"
        peer.call("create_session", sid, "cli" if s % 2 else "telegram", model="m-peer")
        peer.call("append_message", sid, "user", content=f"peer question {s} about quokka 日本語")
        peer.call(
            "append_message",
            sid,
            "assistant",
            content=f"peer answer {s}",
            tool_calls=[
                {"id": f"c{s}", "type": "function", "function": {"name": "terminal", "arguments": "{}"}}
            ],
        )
        peer.call("append_message", sid, "tool", content="tool output wombat", tool_name="terminal")
        peer.call(
            "update_token_counts",
            sid,
            input_tokens=100 + s,
            output_tokens=50,
            model="m-peer",
            estimated_cost_usd=0.1 * s + 1 / 3,
        )
        peer.call("set_session_title", sid, f"Peer session {s}")
        if s != 5:
            peer.call("end_session", sid, "user_exit")
    peer.call("create_session", "p0-cont", "cli", parent_session_id="p0")  # a child the delete orphans
    peer.call("append_message", "p0-cont", "user", content="continuation")
    peer.call(
        "create_session", "p1-sub", "cli", parent_session_id="p1", model_config={"_delegate_from": "p1"}
    )
    peer.call("append_message", "p1-sub", "tool", content="delegate output", tool_name="terminal")


def _fts_integrity(path: Path) -> None:
    conn = apsw.Connection(str(path))
    try:
        for (name,) in conn.execute(
            "SELECT name FROM sqlite_master WHERE type='table' AND sql LIKE '%fts5%'"
        ):
            conn.execute(f"INSERT INTO {name}({name}) VALUES('integrity-check')")
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    finally:
        conn.close()


def test_trash_round_trip_on_a_peer_file_and_the_owner_keeps_writing(tmp_path: Path, peer_factory) -> None:
    path = tmp_path / "state.db"
    peer = peer_factory(path)
    _corpus(peer)
    peer.call("close")

    db = SessionDB(path, migrate=False)
    try:
        assert db.capabilities()["fts_layout"] == "legacy" and db.capabilities()["schema_version"] == 22
        before = table_dump(db)
        deleted = db.trash_sessions(["p0", "p1"], cascade_delegates=True)
        assert set(deleted["deleted_ids"]) == {"p0", "p1", "p1-sub"}
        pruned = db.trash_sessions(["p2", "p3", "p5"], what="prune", require_ended=True)
        assert pruned["deleted_ids"] == ["p2", "p3"]  # p5 is still open
        assert db.search_messages("quokka") and not {
            r["session_id"] for r in db.search_messages("quokka")
        } & {"p0", "p1", "p2", "p3"}
        for entry in (pruned["trash_entry"], deleted["trash_entry"]):
            assert db.restore_trash(entry)["conflicts"] == 0
        assert table_dump(db) == before
        fts_check(db)
        assert {r["session_id"] for r in db.search_messages("quokka", limit=50)} == {
            f"p{i}" for i in range(6)
        }
        assert db.capabilities()["fts_layout"] == "legacy"  # structure untouched
    finally:
        db.close()
    _fts_integrity(path)

    owner = peer_factory(path)
    assert owner.call("get_session", "p0-cont")["parent_session_id"] == "p0"
    assert owner.call("get_session", "p1")["title"] == "Peer session 1"
    hits = {r["session_id"] for r in owner.call("search_messages", "quokka", limit=50)}
    assert {"p0", "p1", "p2", "p3"} <= hits  # restored text is in the owner's index
    assert {r["session_id"] for r in owner.call("search_messages", "wombat", limit=50)} >= {"p0", "p2"}
    mid = owner.call("append_message", "p0", "user", content="owner writes after restore platypus")
    assert [r["id"] for r in owner.call("search_messages", "platypus")] == [mid]
    assert len(owner.call("get_messages", "p0")) == 4
    assert owner.call("delete_session", "p2") is True  # the owner's own delete of a restored session
    owner.call("close")
    _fts_integrity(path)
