"""Fork → resume in a real terminal (issue #35): the installed browser on a store hermes-agent
0.19.0 wrote; `B` on the open transcript forks it at the highlighted message, the fork is
selected, and `R` execs a `hermes` stub that receives exactly `--resume=<the fork's id>`."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from hermes_tui.state import SessionDB

from .conftest import PeerDB, SessionSpec, write_sessions
from .terminal import Terminal, terminal_env
from .test_pick_resume import stub


def test_fork_then_resume_execs_hermes_on_the_fork(
    peer_db: Callable[..., PeerDB], hermes_tui_bin: Path, home: Path, db_path: Path, tmp_path: Path
) -> None:
    db = peer_db()
    write_sessions(
        db,
        [
            SessionSpec(
                "sess-alpha",
                "Alpha project",
                [("user", "first question"), ("assistant", "first answer"), ("user", "second question")],
                offset_s=100,
            )
        ],
    )
    db.close()
    argv_file = stub(tmp_path / "bin")
    env = terminal_env(home)
    env["PATH"] = f"{tmp_path / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    t = Terminal([str(hermes_tui_bin), "--db", str(db_path)], env, cwd=tmp_path)
    try:
        t.wait_for("Alpha project")
        t.press("enter")  # open the session: the transcript takes the focus
        t.wait_for("second question")
        t.press("B")
        t.wait_for("will be copied")  # the dialog: its title prefilled, the count checked
        t.press("enter")
        t.wait_for("Forked sess-alpha")
        t.press("R")
        assert t.wait_exit() == 0
    finally:
        t.close()
    with SessionDB(db_path, read_only=True, migrate=False) as store:
        forks = [
            s["id"] for s in store.list_sessions_rich(limit=20) if s.get("parent_session_id") == "sess-alpha"
        ]
    assert len(forks) == 1
    assert argv_file.read_text().splitlines() == [f"--resume={forks[0]}"]
