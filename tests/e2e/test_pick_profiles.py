"""End-to-end: the installed `hermes-tui pick --all` over two profiles' stores, one written by
hermes-agent 0.19.0: the UI draws on the terminal while stdout is a pipe, and only the picked
session's resume command comes out, naming that session's own profile and its chain's tip."""

from __future__ import annotations

import shlex
from collections.abc import Callable
from pathlib import Path

from hermes_tui.state import SessionDB

from .conftest import PeerDB
from .terminal import Terminal, terminal_env
from .test_pick_resume import write_chain


def test_pick_all_prints_the_resume_command_of_the_hits_profile(
    peer_db: Callable[..., PeerDB], hermes_tui_bin: Path, home: Path, db_path: Path, tmp_path: Path
) -> None:
    # the default store has a session with the same id as work's compressed root, not compressed
    with SessionDB(db_path) as db:
        db.create_session("chain-root", "cli")
        db.append_message("chain-root", "user", "an ordinary chat at home")
        db.set_session_title("chain-root", "Home root")
    work = home / ".hermes" / "profiles" / "work" / "state.db"
    work.parent.mkdir(parents=True)
    write_chain(peer_db(work))
    out = tmp_path / "picked"
    script = (
        f"out=$({shlex.quote(str(hermes_tui_bin))} pick --all --format resume --query compressed);"
        f' rc=$?; printf "%s" "$out" > {shlex.quote(str(out))}; exit $rc'
    )
    t = Terminal(["/bin/sh", "-c", script], terminal_env(home), cwd=tmp_path)
    try:
        t.wait_for("long compressed chat")  # the hit in work's store, drawn on the terminal
        # both stores open: counts per profile in the header (Hermes' list: work's chain once)
        t.wait_for("default 1 · work 3")
        t.wait_for("1 hit · work 1")
        t.press("enter")
        assert t.wait_exit() == 0
    finally:
        t.close()
    assert out.read_text() == "hermes -p work --resume=chain-tip"
