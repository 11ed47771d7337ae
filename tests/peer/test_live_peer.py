"""Change detection against the real writer: hermes-agent 0.19.0 appends, creates, compresses,
deletes and checkpoints in its own process while we poll its file read-only."""

from __future__ import annotations

import pytest

from hermes_tui.state import SessionDB
from tests._wait import WAIT_S, wait_until

pytestmark = pytest.mark.peer


def _poll_until(reader: SessionDB, cur, care, pred, timeout: float = WAIT_S):
    """Poll (as a follower does) until `pred(all changes so far)`; returns (changes list, cursor)."""
    seen = []
    state = {"cur": cur}

    def met() -> bool:
        ch, state["cur"] = reader.changes_since(state["cur"], care)
        if ch:
            seen.append(ch)
        return bool(pred(seen))

    wait_until(met, "the changes satisfy the test", timeout=timeout, poll=0.02)
    return seen, state["cur"]


def test_peer_writer_every_message_once_sessions_compression_deletion_checkpoint(peer_factory, tmp_path):
    peer = peer_factory(tmp_path / "state.db")
    peer.call("create_session", "agent-1", "cli")
    peer.call("append_message", "agent-1", "user", content="hello")
    peer.call("create_session", "doomed", "telegram")
    reader = SessionDB(tmp_path / "state.db", read_only=True)
    try:
        cur = reader.change_cursor(care_about=["agent-1", "doomed"])
        care = ["agent-1", "doomed"]
        # 1. a real appender thread in the peer process, polled while it writes
        peer.run_appender("agent-1", 60, interval_s=0.01)
        seen, cur = _poll_until(
            reader, cur, care, lambda s: sum(len(c.messages.get("agent-1", [])) for c in s) >= 60
        )
        got = [m for c in seen for m in c.messages.get("agent-1", [])]
        result = peer.stop_appender()
        assert not result["errors"]
        assert got == result["appended"]  # every message, once, in order
        # 2. the writer TRUNCATE-checkpoints between our polls: we hold no read transaction
        busy = peer.exec("result = list(dbs[1]._conn.execute('PRAGMA wal_checkpoint(TRUNCATE)').fetchone())")
        assert busy[0] == 0
        assert (tmp_path / "state.db-wal").stat().st_size == 0
        # 3. a new session, a compression (end with 'compression', then the child), a deletion
        peer.call("create_session", "other", "discord")
        peer.call("end_session", "agent-1", "compression")
        peer.call("create_session", "agent-2", "cli", parent_session_id="agent-1")
        peer.call("append_message", "agent-2", "user", content="summary")
        peer.call("delete_session", "doomed")
        seen, cur = _poll_until(
            reader, cur, care, lambda s: any(c.continued for c in s) and any(c.deleted for c in s)
        )
        new = [r["id"] for c in seen for r in c.new_sessions]
        assert new == ["other", "agent-2"]
        assert [c for ch in seen for c in ch.children] == [
            {"id": "agent-2", "parent_session_id": "agent-1", "edge_kind": "compression"}
        ]
        assert {k: v for ch in seen for k, v in ch.continued.items()} == {"agent-1": "agent-2"}
        assert {k: v for ch in seen for k, v in ch.ended.items()} == {"agent-1": "compression"}
        assert [d for ch in seen for d in ch.deleted] == ["doomed"]
        assert sum(ch.message_count for ch in seen) == 1
        # 4. quiet store: a poll does nothing
        assert not reader.changes_since(cur, care)[0]
        status = reader.live_status(["agent-2", "agent-1"])
        assert status["agent-1"]["state"] == "ended" and status["agent-2"]["state"] == "working"
    finally:
        reader.close()
