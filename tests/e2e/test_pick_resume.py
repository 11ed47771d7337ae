"""The installed hermes-tui handing over to the shell, on stores written by hermes-agent 0.19.0:
`pick` draws on the terminal while its stdout is a pipe (exit 0 + exactly the id, or 1 + nothing),
and R execs a `hermes` stub that receives exactly `--resume <tip id>` (and `-p` for a profile)."""

from __future__ import annotations

import os
import shlex
import time
from collections.abc import Callable
from pathlib import Path

from hermes_tui.state import SessionDB

from .conftest import PeerDB, SessionSpec, write_sessions
from .terminal import Terminal, terminal_env


def write_chain(db: PeerDB) -> None:
    """Two plain sessions and a compression chain root → tip, all through 0.19.0's API."""
    write_sessions(
        db,
        [
            SessionSpec(
                "sess-alpha", "Alpha project", [("user", "alpha talks about zebrafish")], offset_s=300
            ),
            SessionSpec("sess-bravo", "Bravo project", [("user", "bravo message")], offset_s=200),
        ],
    )
    db.call("create_session", "chain-root", "cli", model="m")
    db.call("append_message", "chain-root", "user", content="long compressed chat")
    db.call("end_session", "chain-root", "compression")
    time.sleep(0.01)
    db.call("create_session", "chain-tip", "cli", model="m", parent_session_id="chain-root")
    db.call("append_message", "chain-tip", "user", content="continued after compression")
    db.call("set_session_title", "chain-root", "Chain root")
    db.close()


def stub(folder: Path, name: str = "hermes") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / name
    script.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > "{folder}/{name}.argv"\n')
    script.chmod(0o755)
    return folder / f"{name}.argv"


def test_pick_prints_exactly_the_id_with_stdout_captured(
    peer_db: Callable[..., PeerDB], hermes_tui_bin: Path, home: Path, db_path: Path, tmp_path: Path
) -> None:
    write_chain(peer_db())
    out = tmp_path / "picked"
    script = (
        f"out=$({shlex.quote(str(hermes_tui_bin))} pick --query zebrafish --db {shlex.quote(str(db_path))});"
        f' rc=$?; printf "%s" "$out" > {shlex.quote(str(out))}; exit $rc'
    )
    t = Terminal(["/bin/sh", "-c", script], terminal_env(home), cwd=tmp_path)
    try:
        t.wait_for("alpha talks about")  # the UI is drawn on the terminal, the hit listed
        t.press("enter")
        assert t.wait_exit() == 0
    finally:
        t.close()
    assert out.read_text() == "sess-alpha"


def test_pick_escape_prints_nothing_and_exits_1(
    peer_db: Callable[..., PeerDB], hermes_tui_bin: Path, home: Path, db_path: Path, tmp_path: Path
) -> None:
    write_chain(peer_db())
    out = tmp_path / "picked"
    script = (
        f"out=$({shlex.quote(str(hermes_tui_bin))} pick --db {shlex.quote(str(db_path))});"
        f' rc=$?; printf "%s" "$out" > {shlex.quote(str(out))}; exit $rc'
    )
    t = Terminal(["/bin/sh", "-c", script], terminal_env(home), cwd=tmp_path)
    try:
        t.wait_for("search messages…")  # picker mode opens in search, drawn on the terminal
        t.wait_for("4 sessions")
        t.press("escape")
        assert t.wait_exit() == 1
    finally:
        t.close()
    assert out.read_text() == ""


def _resume_in_terminal(hermes_tui_bin: Path, home: Path, store: Path, tmp_path: Path) -> list[str]:
    argv_file = stub(tmp_path / "bin")
    env = terminal_env(home)
    env["PATH"] = f"{tmp_path / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    t = Terminal([str(hermes_tui_bin), "--db", str(store)], env, cwd=tmp_path)
    try:
        t.wait_for("Chain root")
        t.search("compressed")
        t.wait_for("long compressed chat")
        t.press("down", "enter")  # open the hit: the transcript of chain-root
        t.wait_for("chain-root · cli")
        t.press("R")
        assert t.wait_exit() == 0
    finally:
        t.close()
    return argv_file.read_text().splitlines()


def test_resume_execs_hermes_on_the_tip(
    peer_db: Callable[..., PeerDB], hermes_tui_bin: Path, home: Path, db_path: Path, tmp_path: Path
) -> None:
    write_chain(peer_db())
    with SessionDB(db_path, read_only=True, migrate=False) as db:
        assert db.get_compression_tip("chain-root") == "chain-tip"
    assert _resume_in_terminal(hermes_tui_bin, home, db_path, tmp_path) == ["--resume", "chain-tip"]


def test_resume_from_a_profile_store_passes_the_profile(
    peer_db: Callable[..., PeerDB], hermes_tui_bin: Path, home: Path, tmp_path: Path
) -> None:
    store = home / ".hermes" / "profiles" / "work" / "state.db"
    store.parent.mkdir(parents=True)
    write_chain(peer_db(store))
    argv = _resume_in_terminal(hermes_tui_bin, home, store, tmp_path)
    assert argv == ["-p", "work", "--resume", "chain-tip"]
