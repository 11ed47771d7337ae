"""End-to-end: the installed ``hermes-tui --all`` in a real pty over three profiles' stores (issue
#20) — one of them written live by hermes-agent 0.19.0 while the browser runs — and one store
that is a text file (its badge shows, the others keep working). Real clock."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

pytest.importorskip("pexpect", reason="e2e tests need the dev extras (pexpect, pyte)")
pytest.importorskip("pyte", reason="e2e tests need the dev extras (pexpect, pyte)")

from hermes_tui.state import SessionDB  # noqa: E402

from .conftest import PeerDB  # noqa: E402


def _ours(path: Path, sid: str, title: str, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with SessionDB(path) as db:
        db.create_session(sid, "cli")
        db.append_message(sid, "user", text)
        db.set_session_title(sid, title)


def test_all_profiles_with_a_live_hermes_agent_and_a_broken_store(
    peer_db: Callable[..., PeerDB],
    term,  # type: ignore[no-untyped-def]
    db_path: Path,
) -> None:
    root = db_path.parent
    _ours(db_path, "same-id", "Default project", "osprey notes at home")
    _ours(root / "profiles" / "work" / "state.db", "same-id", "Work project", "osprey notes at work")
    (root / "profiles" / "broken").mkdir(parents=True)
    (root / "profiles" / "broken" / "state.db").write_text("not a database\n")
    agent_path = root / "profiles" / "agent" / "state.db"
    agent_path.parent.mkdir(parents=True)
    agent = peer_db(agent_path)
    agent.call("create_session", "agent-1", "telegram", model="m")
    agent.call("set_session_title", "agent-1", "Agent first")
    agent.call("append_message", "agent-1", "user", content="osprey from the agent")

    t = term("--all")
    t.wait_for("⚠ broken: not a database")
    t.wait_for(re.compile(r"Sessions 3\b"))
    for text in ("Default project", "Work project", "Agent first", "Profile"):
        t.wait_for(text)
    # the agent keeps writing while the browser is open: the merged list follows it
    agent.call("create_session", "agent-2", "telegram", model="m")
    agent.call("set_session_title", "agent-2", "Agent second")
    agent.call("append_message", "agent-2", "user", content="osprey again, live")
    t.wait_for(re.compile(r"Sessions 4\b"), timeout=10)
    t.wait_for("Agent second", timeout=10)
    # one search over every store, hits per profile
    t.press("/")
    t.type("osprey")
    t.wait_for(re.compile(r"4 hits"), timeout=10)
    t.wait_for(re.compile(r"agent 2"))
    # p narrows to the current profile (the default store) and back
    t.press("escape")
    t.wait_for(re.compile(r"Sessions 4\b"))  # the list is back (Esc alone, not alt+p)
    t.press("p")
    t.wait_for("profile=default", timeout=10)
    t.press("p")
    t.wait_for(re.compile(r"Sessions 4\b"), timeout=10)
    t.press("q")
    assert t.wait_exit() == 0
