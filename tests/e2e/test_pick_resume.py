"""The installed hermes-tui handing over to the shell, on stores written by hermes-agent 0.19.0:
`pick` draws on the whole terminal while its stdout is a pipe (exit 0 + exactly the id, or 1 +
nothing), and R execs a `hermes` stub that receives exactly `--resume=<tip id>` (and `-p` for a
profile, `HERMES_HOME` for a store Hermes does not open by default)."""

from __future__ import annotations

import os
import re
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
    """A ``name`` on PATH recording its arguments (one a line) in ``<name>.argv`` and its
    ``HERMES_HOME`` in ``<name>.home`` (``<unset>`` when there is none)."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / name
    script.write_text(
        f'#!/bin/sh\nprintf "%s" "${{HERMES_HOME-<unset>}}" > "{folder}/{name}.home"\n'
        f'printf "%s\\n" "$@" > "{folder}/{name}.argv"\n'
    )
    script.chmod(0o755)
    return folder / f"{name}.argv"


def recorded_home(argv_file: Path) -> str:
    return argv_file.with_suffix(".home").read_text()


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
        t.wait_for("3 sessions")  # Hermes' list: the chain root → tip once
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
    assert _resume_in_terminal(hermes_tui_bin, home, db_path, tmp_path) == ["--resume=chain-tip"]


def test_resume_from_a_profile_store_passes_the_profile(
    peer_db: Callable[..., PeerDB], hermes_tui_bin: Path, home: Path, tmp_path: Path
) -> None:
    store = home / ".hermes" / "profiles" / "work" / "state.db"
    store.parent.mkdir(parents=True)
    write_chain(peer_db(store))
    argv = _resume_in_terminal(hermes_tui_bin, home, store, tmp_path)
    assert argv == ["-p", "work", "--resume=chain-tip"]


def _footer_rows(t: Terminal) -> list[int]:
    """The rows showing the footer (its first key hint, "↓ Results" while searching)."""
    return [y for y, line in enumerate(t.screen_lines()) if "↓ Results" in line]


def test_pick_with_stdout_captured_fills_the_terminal_and_follows_resizes(
    peer_db: Callable[..., PeerDB], hermes_tui_bin: Path, home: Path, db_path: Path, tmp_path: Path
) -> None:
    """`x=$(hermes-tui pick)` in a 120×40 terminal: the UI takes the size of the terminal it draws
    on (it drew 80×24 from the captured stdout, over a first full-size frame), redraws at a new
    size when the terminal is resized, and leaves the alternate screen when it exits."""
    write_chain(peer_db())
    out = tmp_path / "picked"
    script = (
        "echo before the picker;"
        f" out=$({shlex.quote(str(hermes_tui_bin))} pick --db {shlex.quote(str(db_path))});"
        f' rc=$?; printf "%s" "$out" > {shlex.quote(str(out))}; echo after the picker; sleep 0.5; exit $rc'
    )
    t = Terminal(["/bin/sh", "-c", script], terminal_env(home), cols=120, rows=40, cwd=tmp_path)
    try:
        t.wait_for("3 sessions")  # Hermes' list: the chain root → tip once
        assert "before the picker" not in t.screen_text()  # drawn on the alternate screen
        t.wait_until(lambda: _footer_rows(t) == [39], what="the footer on the last of 40 rows only")
        t.resize(30, 100)
        t.wait_until(lambda: _footer_rows(t) == [29], what="the footer on the last of 30 rows only")
        t.wait_until(lambda: t.screen_lines()[0].endswith("3 sessions"), what="the header redrawn")
        t.press("escape")
        t.wait_for("after the picker")
        # the shell's own lines, as they were before and after: the picker's screen is gone
        assert t.screen_lines()[:2] == ["before the picker", "after the picker"], t.screen_text()
        assert t.wait_exit() == 1
    finally:
        t.close()
    raw = bytes(t.raw)
    entered, left = raw.rfind(b"\x1b[?1049h"), raw.rfind(b"\x1b[?1049l")
    assert 0 <= entered < left, "the alternate screen is left after the last time it was entered"
    assert raw.rfind(b"\x1b[?25h") > entered, "the cursor is shown again"
    assert out.read_text() == ""


def _resume_by_search(
    hermes_tui_bin: Path, home: Path, store: Path, tmp_path: Path, word: str, header: str
) -> Terminal:
    """The browser on ``store``: search ``word``, open its first hit (``header`` shows in the
    transcript), press R. The `hermes` stub from `stub` is first on PATH."""
    env = terminal_env(home)
    env["PATH"] = f"{tmp_path / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    t = Terminal([str(hermes_tui_bin), "--db", str(store)], env, cwd=tmp_path)
    t.wait_for(re.compile(r"Sessions \d"))
    t.search(word)
    t.wait_for(re.compile(r"\b1 hit\b"))
    t.press("down", "enter")
    t.wait_for(header)
    t.press("R")
    return t


def test_resume_passes_the_id_as_one_option_word(
    peer_db: Callable[..., PeerDB], hermes_tui_bin: Path, home: Path, db_path: Path, tmp_path: Path
) -> None:
    """An id that starts with `-` reaches Hermes as `--resume=ID` (`--resume -x` made Hermes'
    argparse read the id as an option)."""
    write_sessions(peer_db(), [SessionSpec("--tui", "Dash id", [("user", "dashing words")])])
    argv_file = stub(tmp_path / "bin")
    t = _resume_by_search(hermes_tui_bin, home, db_path, tmp_path, "dashing", "--tui · cli")
    try:
        assert t.wait_exit() == 0
    finally:
        t.close()
    assert argv_file.read_text().splitlines() == ["--resume=--tui"]
    assert recorded_home(argv_file) == str(home / ".hermes")  # the default store: as inherited


def test_resume_of_a_store_outside_hermes_home_sets_hermes_home(
    peer_db: Callable[..., PeerDB], hermes_tui_bin: Path, home: Path, tmp_path: Path
) -> None:
    """`--db` on another folder's state.db: Hermes is started with HERMES_HOME set to that
    folder (it opens `$HERMES_HOME/state.db`), so it resumes the session from that store."""
    store = tmp_path / "elsewhere" / "state.db"
    store.parent.mkdir()
    write_chain(peer_db(store))
    argv_file = stub(tmp_path / "bin")
    t = _resume_by_search(hermes_tui_bin, home, store, tmp_path, "zebrafish", "sess-alpha · cli")
    try:
        assert t.wait_exit() == 0
    finally:
        t.close()
    assert recorded_home(argv_file) == str(store.parent.resolve())
    assert argv_file.read_text().splitlines() == ["--resume=sess-alpha"]


def test_resume_of_a_file_hermes_cannot_open_says_so(
    peer_db: Callable[..., PeerDB], hermes_tui_bin: Path, home: Path, tmp_path: Path
) -> None:
    """A store file not named state.db cannot be reached by Hermes (no HERMES_HOME names it):
    R says so and runs nothing, rather than resuming a same-id session of another store."""
    store = tmp_path / "backup.db"
    write_chain(peer_db(store))
    argv_file = stub(tmp_path / "bin")
    t = _resume_by_search(hermes_tui_bin, home, store, tmp_path, "zebrafish", "sess-alpha · cli")
    try:
        t.wait_for("opens only a folder's state.db")
        t.press("ctrl+q")
        t.wait_exit()
    finally:
        t.close()
    assert not argv_file.exists()
