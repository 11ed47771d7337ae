"""Hermes' sticky profile in a real terminal: after `hermes profile use work` (its
`~/.hermes/active_profile`), `hermes` opens work's store, and so does the installed `hermes-tui`
with no store given; `R` there resumes without `-p`. The root's store, opened with `--db`, resumes
with `-p default` (without it Hermes would open work's store and miss the session). Both stores
are written by hermes-agent 0.19.0."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from .conftest import PeerDB, SessionSpec, write_sessions
from .terminal import Terminal, terminal_env
from .test_pick_resume import recorded_home, stub


def test_no_store_given_opens_the_sticky_profile_and_resumes_each_store_right(
    peer_db: Callable[..., PeerDB], hermes_tui_bin: Path, home: Path, db_path: Path, tmp_path: Path
) -> None:
    root = db_path.parent
    work = root / "profiles" / "work" / "state.db"
    work.parent.mkdir(parents=True)
    for path, sid, title in ((db_path, "sess-root", "Root project"), (work, "sess-work", "Work project")):
        db = peer_db(path)
        write_sessions(db, [SessionSpec(sid, title, [("user", "a question"), ("assistant", "an answer")])])
        db.close()
    (root / "active_profile").write_text("work\n", encoding="utf-8")
    argv_file = stub(tmp_path / "bin")
    env = terminal_env(home)
    env["PATH"] = f"{tmp_path / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    for args, title, expected in (
        ((), "Work project", ["--resume=sess-work"]),
        (("--db", str(db_path)), "Root project", ["-p", "default", "--resume=sess-root"]),
    ):
        t = Terminal([str(hermes_tui_bin), *args], env, cwd=tmp_path)
        try:
            t.wait_for(title)
            other = "Root project" if title == "Work project" else "Work project"
            assert other not in t.screen_text()
            t.press("R")
            assert t.wait_exit() == 0
        finally:
            t.close()
        assert argv_file.read_text().splitlines() == expected
        assert recorded_home(argv_file) == str(root)  # the terminal's own HERMES_HOME, untouched
