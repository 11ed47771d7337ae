"""Our write commands on files the real writers own: after every one of them the owner (the v31
writer on its v31 file, hermes-agent 0.19.0 on its v22 file) creates a session, appends, renames
and finds the new message with its own search. And the flag verbs on those files: hidden sessions
made visible by a pin, the Bot Chat kept hidden, a v22 file's archive (0.19.0 has the column) and
its refused pin."""

from __future__ import annotations

import io
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hermes_tui.cli import sessions
from hermes_tui.state import SessionDB

from .oracle import Peer

pytestmark = pytest.mark.peer

OLD = time.time() - 400 * 86400


@pytest.fixture(autouse=True)
def no_tty(monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))


def run(capsys, *argv: Any) -> tuple[int, str, str]:
    code = sessions.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def corpus(p: Peer) -> None:
    for i in range(4):
        sid = f"s{i}"
        p.call("create_session", sid, "cli", model="m")
        p.call("append_message", sid, "user", content=f"question {i} about quokka", timestamp=OLD + i)
        p.call("append_message", sid, "assistant", content=f"answer {i}", timestamp=OLD + i + 0.5)
        p.call("set_session_title", sid, f"Session {i}")
        p.call("end_session", sid, "compression" if i == 3 else "user_exit")
    p.call("create_session", "s3-next", "cli", parent_session_id="s3")
    p.call("append_message", "s3-next", "user", content="continued", timestamp=OLD + 10)
    p.call("end_session", "s3-next", "user_exit")
    p.call("create_session", "s1-sub", "cli", parent_session_id="s1", model_config={"_delegate_from": "s1"})
    p.call("append_message", "s1-sub", "tool", content="delegate output", tool_name="t", timestamp=OLD + 2)
    p.call("end_session", "s1-sub", "user_exit")


def owner_writes(make: Callable[[Path], Peer], path: Path, n: int) -> None:
    p = make(path)
    try:
        sid = f"owner-{n}"
        p.call("create_session", sid, "cli", model="m")
        mid = p.call("append_message", sid, "user", content=f"written after our command zanzibar{n}")
        assert p.call("set_session_title", sid, f"Owner session {n}") is True
        assert mid in [r["id"] for r in p.call("search_messages", f"zanzibar{n}")]
    finally:
        p.close()


@pytest.mark.parametrize("writer", ["v31", "v22"])
def test_the_owner_keeps_writing_after_each_of_our_commands(
    writer, tmp_path, capsys, peer_factory, peer31_factory
) -> None:
    make = peer31_factory if writer == "v31" else peer_factory
    path = tmp_path / "state.db"
    p = make(path)
    corpus(p)
    p.close()
    db = ["--db", path]
    steps: list[tuple[list[Any], int]] = [
        (["rename", "s0", "Renamed by hermes-tui"], 0),
        (["archive", "s3-next"], 0),
        (["unarchive", "s3"], 0),
        (["pin", "s1"], 0 if writer == "v31" else 4),  # 0.19.0's v22 has no `pinned`
        (["unpin", "s1"], 0 if writer == "v31" else 4),
        (["delete", "--yes", "s2"], 0),
        (["prune", "--before", "2999-01-01", "--yes"], 0),
    ]
    for n, (argv, expected) in enumerate(steps):
        code, _out, err = run(capsys, *db, *argv)
        assert code == expected, (argv, err)
        owner_writes(make, path, n)
    entries = [e["id"] for e in json.loads(run(capsys, *db, "trash", "list", "--json")[1])["entries"]]
    assert len(entries) == 2
    for n, entry in enumerate(entries, len(steps)):
        code, _out, err = run(capsys, *db, "trash", "restore", entry)
        assert code == 0, err
        owner_writes(make, path, n)
    assert run(capsys, *db, "trash", "empty", "--yes")[0] == 0
    owner_writes(make, path, 99)
    with SessionDB(path, read_only=True) as store:
        assert store.get_session_title("s0") == "Renamed by hermes-tui"
        assert {store.get_session(s)["archived"] for s in ("s3", "s3-next")} == {0}
        assert all(store.get_session(f"s{i}") for i in range(4))  # restored
        assert store.capabilities()["schema_version"] == (31 if writer == "v31" else 22)


def test_flag_verbs_on_a_v31_file(tmp_path, capsys, peer31_factory) -> None:
    path = tmp_path / "state.db"
    p = peer31_factory(path)
    corpus(p)
    p.call("set_session_hidden", "s3", True)  # hides the lineage s3 → s3-next
    p.call("create_session", "bot", "cli")
    p.call("set_session_title", "bot", "Bot Chat")
    p.call("set_session_hidden", "bot", True)
    p.close()
    code, out, err = run(capsys, "--db", path, "pin", "s3-next", "Bot Chat")
    assert code == 0, err
    assert out.splitlines() == [
        "Pinned s3-next with its compression lineage (2 of 2 sessions changed);"
        " 2 hidden sessions made visible.",
        "Pinned bot “Bot Chat”; the bot's canonical Bot Chat stays hidden.",
    ]
    code, out, err = run(capsys, "--db", path, "rename", "bot", "Not the bot")
    assert code == 8 and err.startswith(
        "error: This is the bot's canonical Bot Chat — its name is its identity"
    )
    code, out, _ = run(capsys, "--db", path, "archive", "s0", "--json")
    assert code == 0 and json.loads(out)["sessions"][0]["auto_archived_cleared"] == []
    p = peer31_factory(path)
    assert {r["id"] for r in p.call("list_sessions_rich", limit=50)} == {"s1", "s2", "s3-next"}
    assert {r["id"] for r in p.call("list_sessions_rich", limit=50, archived_only=True)} == {"s0"}
    assert p.call("get_session", "bot")["hidden"] == 1


def test_flag_verbs_on_a_v22_file(tmp_path, capsys, peer_factory) -> None:
    path = tmp_path / "state.db"
    p = peer_factory(path)
    corpus(p)
    p.close()
    code, out, err = run(capsys, "--db", path, "archive", "s3")
    assert code == 0, err
    assert out == "Archived s3 “Session 3” with its compression lineage (2 of 2 sessions changed).\n"
    before = path.read_bytes()
    code, out, err = run(capsys, "--db", path, "pin", "s0")
    assert code == 4 and out == ""
    assert err == (
        "error: this store (schema v22, written by hermes-agent 0.19.0) has no pins: its sessions table"
        " has no `pinned` column (a newer Hermes adds it); nothing was changed\n"
    )
    assert path.read_bytes() == before
    p = peer_factory(path)
    assert {r["id"] for r in p.call("list_sessions_rich", limit=50)} == {"s0", "s1", "s2"}
    assert {r["id"] for r in p.call("list_sessions_rich", limit=50, archived_only=True)} == {"s3-next"}
    assert p.call("get_session_title", "s0") == "Session 0"
