"""End to end: in the installed ``hermes-tui`` in a real pty, on a store written by
hermes-agent 0.19.0, a multi-select delete says "u to undo", ``u`` brings the sessions back, and
the peer reads them back identical and searchable, and keeps writing to its file."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

pytest.importorskip("pexpect", reason="e2e tests need the dev extras (pexpect, pyte)")
pytest.importorskip("pyte", reason="e2e tests need the dev extras (pexpect, pyte)")

from .conftest import PeerDB
from .test_browser import five_sessions, wait_ready

ROWS = "SELECT id, title, started_at, ended_at, message_count, parent_session_id FROM sessions ORDER BY id"
MESSAGES = "SELECT id, session_id, role, content, timestamp FROM messages ORDER BY id"


def test_delete_then_u_brings_the_sessions_back(peer_db: Callable[..., PeerDB], term, db_path: Path) -> None:
    five_sessions(peer_db())
    reader = peer_db()
    before = (reader.sql(ROWS), reader.sql(MESSAGES))
    reader.close()
    t = term("--db", db_path)
    wait_ready(t, 5)
    t.wait_for("Echo project")
    t.press("space")  # the first two rows: echo, then delta
    t.wait_for("1 selected")
    t.press("space")
    t.wait_for("2 selected")
    t.press("D")
    t.wait_for("moved to the trash")
    t.press("ctrl+d")
    t.wait_for(re.compile(r"Sessions 3\b"))
    t.wait_for("Deleted 2 sessions — u to undo")
    during = peer_db()
    assert [r[0] for r in during.sql("SELECT id FROM sessions ORDER BY id")] == [
        "sess-alpha",
        "sess-bravo",
        "sess-charlie",
    ]
    during.close()
    t.press("u")
    t.wait_for(re.compile(r"Sessions 5\b"))
    t.wait_for("Restored 2 sessions")
    t.press("q")
    assert t.wait_exit() == 0
    after = peer_db()
    assert (after.sql(ROWS), after.sql(MESSAGES)) == before
    hits = {m["session_id"] for m in after.call("search_messages", "lorem")}
    assert hits == {f"sess-{n}" for n in ("alpha", "bravo", "charlie", "delta", "echo")}
    after.call("append_message", "sess-echo", "user", content="written by the owner after the undo")
    assert [m["session_id"] for m in after.call("search_messages", "owner")] == ["sess-echo"]
    assert after.sql("PRAGMA integrity_check") == [["ok"]]
    after.sql("INSERT INTO messages_fts(messages_fts) VALUES('integrity-check')", write=True)
    after.close()
