"""End-to-end live follow: the installed ``hermes-tui`` in a real pty follows a live
hermes-agent 0.19.0 writer — a new session appears in the list, and a message committed to the
open session appears on screen — with the real clock."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

pytest.importorskip("pexpect", reason="e2e tests need the dev extras (pexpect, pyte)")
pytest.importorskip("pyte", reason="e2e tests need the dev extras (pexpect, pyte)")

from .conftest import PeerDB  # noqa: E402


def test_the_terminal_follows_a_live_hermes_agent_writer(
    peer_db: Callable[..., PeerDB],
    term,
    db_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    db = peer_db()
    db.call("create_session", "live-sess", "cli", model="m")
    db.call("set_session_title", "live-sess", "Live project")
    db.call("append_message", "live-sess", "user", content="first question here")
    t = term("--db", db_path)
    t.wait_for(re.compile(r"Sessions 1\b"))
    t.wait_for("Live project")
    t.press("enter")
    t.wait_for("first question here")
    # the writer keeps going while the browser is open (the peer keeps its connection)
    db.call("append_message", "live-sess", "assistant", content="streamed answer arrives")
    t.wait_for("streamed answer arrives", timeout=10)
    db.call("create_session", "live-other", "telegram")
    db.call("set_session_title", "live-other", "Second agent")
    t.wait_for(re.compile(r"Sessions 2\b"), timeout=10)
    t.wait_for("Second agent", timeout=10)
    assert t.has("streamed answer arrives")  # the open transcript stayed
    t.press("q")
    assert t.wait_exit() == 0
