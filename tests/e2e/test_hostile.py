"""Hostile stored text: escape sequences a message carries must never reach the
terminal, in the browser (raw pty bytes) or in the headless commands (stdout)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

pytest.importorskip("pexpect", reason="e2e tests need the dev extras (pexpect, pyte)")
pytest.importorskip("pyte", reason="e2e tests need the dev extras (pexpect, pyte)")

from .conftest import PeerDB, SessionSpec, write_sessions
from .terminal import Terminal, terminal_env

#: OSC 52 (set the clipboard), CSI 2J (clear the screen), an OSC 8 link and OSC 0 (window title).
HOSTILE = (
    "payload begins \x1b]52;c;aGVsbG8=\x07 clipboard \x1b[2J cleared "
    "\x1b]8;;http://evil.example/\x1b\\click here\x1b]8;;\x1b\\ and \x1b]0;pwned title\x07 ends"
)
OSC = re.compile(rb"\x1b\](\d+);")


def hostile_store(db: PeerDB) -> None:
    write_sessions(
        db,
        [
            SessionSpec(
                id="sess-plain",
                title="Plain project",
                offset_s=120,
                messages=[("user", "an ordinary question"), ("assistant", "an ordinary answer")],
            ),
            # untitled: the list shows its first prompt, which is the hostile text
            SessionSpec(
                id="sess-hostile",
                title=None,
                offset_s=60,
                messages=[("user", HOSTILE), ("assistant", "I will not run that")],
            ),
        ],
    )
    db.close()


def run_browser(term: Callable[..., Terminal], db_path: Path, search: str) -> Terminal:
    """Open the store, search ``search``, open the first hit, quit; the terminal's raw bytes."""
    t = term("--db", db_path)
    t.wait_for(re.compile(r"Sessions 2\b"))
    t.search(search)
    t.wait_for(re.compile(r"\b[1-9]\d* hits?\b"))
    t.press("down")
    t.press("enter")
    t.wait_for("◆ match")
    return t


def forbidden(raw: bytes) -> list[bytes]:
    """The content's sequences found in the raw output (Textual never sends these itself)."""
    return [seq for seq in (b"\x1b]52", b"\x1b]0;", b"\x1b]8;", b"aGVsbG8=\x07") if seq in raw]


def leave(t: Terminal) -> None:
    """Esc back to the session list (transcript → results → list), then ``q``."""
    t.escape_until(re.compile(r"Sessions \d"))
    t.press("q")
    assert t.wait_exit() == 0


def osc_codes(raw: bytes) -> set[bytes]:
    return set(OSC.findall(raw))


def test_browser_never_emits_sequences_from_content(
    peer_db: Callable[..., PeerDB], term, db_path: Path, tmp_path: Path
) -> None:
    # Baseline: what Textual itself emits on an ordinary store, through the same steps.
    plain_path = tmp_path / "plain" / "state.db"
    plain_path.parent.mkdir()
    plain = peer_db(plain_path)
    write_sessions(
        plain,
        [
            SessionSpec(id="sess-a", title="A", messages=[("user", "ordinary payload")]),
            SessionSpec(id="sess-b", title="B", messages=[("user", "other words")]),
        ],
    )
    plain.close()
    base = run_browser(term, plain_path, "payload")
    leave(base)
    baseline = bytes(base.raw)

    hostile_store(peer_db())
    t = term("--db", db_path)
    try:
        t.wait_for(re.compile(r"Sessions 2\b"))
        t.search("payload")
        t.wait_for(re.compile(r"\b1 hits?\b"))
        t.press("down")
        t.press("enter")
        t.wait_for("◆ match")
        t.wait_for("␛]52")  # the sequence is shown as text in the transcript
        assert "␛]0;pwned title" in t.screen_text()
        leave(t)  # through the list, whose preview shows the hostile first prompt
    except AssertionError as exc:
        leaked = forbidden(bytes(t.raw))
        if leaked:  # say why the screen went wrong: the content drove the terminal
            raise AssertionError(f"content escape sequences reached the terminal: {leaked}") from exc
        raise
    raw = bytes(t.raw)
    assert forbidden(raw) == []
    assert osc_codes(raw) <= osc_codes(baseline), osc_codes(raw) - osc_codes(baseline)
    assert raw.count(b"\x1b[2J") <= baseline.count(b"\x1b[2J")
    assert "pwned" not in t.screen.title and "pwned" not in t.screen.icon_name  # OSC 0 did not retitle


def headless(hermes_tui_bin: Path, home: Path, *args: str | Path) -> subprocess.CompletedProcess[bytes]:
    """``hermes-tui sessions ...`` with stdout a pipe (no pty), bytes kept as they are."""
    return subprocess.run(
        [str(hermes_tui_bin), "sessions", *map(str, args)],
        capture_output=True,
        env=terminal_env(home),
        timeout=60,
        check=False,
    )


def test_headless_show_and_search_never_print_content_escapes(
    peer_db: Callable[..., PeerDB], hermes_tui_bin: Path, home: Path, db_path: Path
) -> None:
    hostile_store(peer_db())
    for args in (("show", "--db", db_path, "sess-hostile"), ("search", "--db", db_path, "payload")):
        proc = headless(hermes_tui_bin, home, *args)
        assert proc.returncode == 0, proc.stderr.decode(errors="replace")
        assert b"\x1b" not in proc.stdout, proc.stdout
        assert b"\x1b" not in proc.stderr, proc.stderr
        out = proc.stdout.decode("utf-8")
        assert "␛]52" in out and "payload" in out, out


def test_headless_delete_by_title_never_takes_a_lookalike(
    peer_db: Callable[..., PeerDB], hermes_tui_bin: Path, home: Path, db_path: Path
) -> None:
    """``proj`` and an unrelated ``proj #2`` (newer): deleting ``proj`` by title removes exactly ``proj``
    or refuses and names the candidates — never ``proj #2`` (upstream's title lookup prefers the
    newest ``#N`` variant)."""
    db = peer_db()
    write_sessions(
        db,
        [
            SessionSpec(id="sess-proj", title="proj", offset_s=300, messages=[("user", "the original")]),
            SessionSpec(
                id="sess-other", title="proj #2", offset_s=60, messages=[("user", "an unrelated one")]
            ),
        ],
    )
    db.close()
    assert db.call("get_session", "sess-other")["parent_session_id"] is None  # unrelated, not a lineage
    db.close()
    proc = headless(hermes_tui_bin, home, "delete", "--db", db_path, "--yes", "proj")
    out = (proc.stdout + proc.stderr).decode("utf-8", errors="replace")
    left = {r[0] for r in db.sql("SELECT id FROM sessions")}
    db.close()
    assert "sess-other" in left, f"the lookalike 'proj #2' was deleted:\n{out}"
    if proc.returncode == 0:
        assert left == {"sess-other"}, out
    else:
        assert left == {"sess-proj", "sess-other"}, out
        assert "sess-proj" in out and "sess-other" in out, f"a refusal names the candidates:\n{out}"


# ---------------------------------------------------------------------- ids and profile names
#: Session ids and a profile folder name carrying the sequences (ids are any text to Hermes).
OSC_ID = "osc\x1b]52;c;aGVsbG8=\x07id"
TITLE_ID = "-\x1b]0;pwned title\x07\u202eid"
EVIL_PROFILE = "evil\x1b]0;pwned\x07\u202e"


def hostile_id_home(peer_db: Callable[..., PeerDB], home: Path) -> Path:
    """`$HERMES_HOME` with two hostile ids in the default store and a plain one in a profile
    whose folder name is hostile, all written by hermes-agent 0.19.0."""
    root = home / ".hermes"
    default = peer_db(root / "state.db")
    write_sessions(
        default,
        [
            SessionSpec(OSC_ID, None, [("user", "quince words")], offset_s=300),
            SessionSpec(TITLE_ID, None, [("user", "rhubarb words")], offset_s=200),
        ],
    )
    default.close()
    folder = root / "profiles" / EVIL_PROFILE
    folder.mkdir(parents=True)
    evil = peer_db(folder / "state.db")
    write_sessions(evil, [SessionSpec("plain-id", None, [("user", "spinach words")], offset_s=100)])
    evil.close()
    return root


def recording_hermes(folder: Path) -> Path:
    """A `hermes` on PATH that records its arguments and HERMES_HOME, NUL-separated, as bytes."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "hermes"
    script.write_text(f'#!/bin/sh\nprintf "%s\\0" "$HERMES_HOME" "$@" > "{folder}/hermes.rec"\n')
    script.chmod(0o755)
    return folder / "hermes.rec"


def with_path(env: dict[str, str], folder: Path) -> dict[str, str]:
    return {**env, "PATH": f"{folder}{os.pathsep}{env['PATH']}"}


def pick_in_shell(
    hermes_tui_bin: Path, home: Path, tmp_path: Path, args: str, keys: Callable[[Terminal], None]
) -> tuple[Terminal, int, bytes]:
    """`out=$(hermes-tui pick ARGS)` in a terminal: (terminal, exit status, what stdout got)."""
    out = tmp_path / "picked"
    script = (
        f"out=$({shlex.quote(str(hermes_tui_bin))} pick {args}); rc=$?;"
        f' printf "%s" "$out" > {shlex.quote(str(out))}; exit $rc'
    )
    t = Terminal(["/bin/sh", "-c", script], terminal_env(home), cwd=tmp_path)
    try:
        keys(t)
        status = t.wait_exit()
    finally:
        t.close()
    return t, status, out.read_bytes()


def test_picked_hostile_id_reaches_a_pipe_exactly_and_a_terminal_never(
    peer_db: Callable[..., PeerDB], hermes_tui_bin: Path, home: Path, tmp_path: Path
) -> None:
    hostile_id_home(peer_db, home)

    def choose(t: Terminal) -> None:
        t.wait_for(re.compile(r"\b1 hit\b"))
        t.press("enter")

    # stdout a pipe: the exact id, whatever it holds
    t, status, out = pick_in_shell(hermes_tui_bin, home, tmp_path, "--query quince", choose)
    assert status == 0 and out == OSC_ID.encode()
    assert forbidden(bytes(t.raw)) == []

    # stdout the terminal: refused (status 2), the id shown only through the sanitizer
    t = Terminal([str(hermes_tui_bin), "pick", "--query", "quince"], terminal_env(home), cwd=tmp_path)
    try:
        choose(t)
        assert t.wait_exit() == 2
    finally:
        t.close()
    raw = bytes(t.raw)
    assert forbidden(raw) == [], raw[-400:]
    assert "osc␛]52;c;aGVsbG8=␇id" in raw.decode("utf-8", "replace")

    # --format resume: no quoting puts a control character on a command line; the picker says
    # so and stays, Esc leaves with nothing printed
    def refuse(t: Terminal) -> None:
        choose(t)
        t.wait_for("Cannot pick")
        t.press("escape")

    t, status, out = pick_in_shell(hermes_tui_bin, home, tmp_path, "--format resume --query quince", refuse)
    assert (status, out) == (1, b"")
    assert forbidden(bytes(t.raw)) == []


def test_picked_hostile_profile_name_is_refused_in_a_command(
    peer_db: Callable[..., PeerDB], hermes_tui_bin: Path, home: Path, tmp_path: Path
) -> None:
    """A profile folder whose name holds escapes: drawn inert, never put in a printed command
    (its HERMES_HOME would be); the id alone is printed exactly."""
    hostile_id_home(peer_db, home)

    def refuse(t: Terminal) -> None:
        t.wait_for(re.compile(r"\b1 hit\b"))
        t.press("enter")
        t.wait_for("Cannot pick")
        t.press("escape")

    t, status, out = pick_in_shell(
        hermes_tui_bin, home, tmp_path, "--all --format resume --query spinach", refuse
    )
    assert (status, out) == (1, b"")
    assert forbidden(bytes(t.raw)) == []
    assert "pwned" not in t.screen.title

    def choose(t: Terminal) -> None:
        t.wait_for(re.compile(r"\b1 hit\b"))
        t.press("enter")

    t, status, out = pick_in_shell(hermes_tui_bin, home, tmp_path, "--all --query spinach", choose)
    assert (status, out) == (0, b"plain-id")
    assert forbidden(bytes(t.raw)) == []


def _browse_to(t: Terminal, word: str) -> None:
    t.wait_for(re.compile(r"Sessions \d"))
    t.search(word)
    t.wait_for(re.compile(r"\b1 hit\b"))
    t.press("down", "enter")
    t.wait_for("◆ match")


def test_resume_runs_the_exact_id_and_store_and_never_prints_them_raw(
    peer_db: Callable[..., PeerDB], hermes_tui_bin: Path, home: Path, tmp_path: Path
) -> None:
    """R runs Hermes without a shell: the hostile id and the hostile profile folder reach it
    exactly (`--resume=ID`, `HERMES_HOME`); when Hermes cannot start, the "could not run" line
    shows them through the sanitizer."""
    root = hostile_id_home(peer_db, home)
    record = recording_hermes(tmp_path / "bin")
    env = with_path(terminal_env(home), tmp_path / "bin")
    t = Terminal([str(hermes_tui_bin), "--all"], env, cwd=tmp_path)
    try:
        _browse_to(t, "spinach")
        t.press("R")
        assert t.wait_exit() == 0
    finally:
        t.close()
    assert forbidden(bytes(t.raw)) == []
    folder = str(root / "profiles" / EVIL_PROFILE).encode()
    assert record.read_bytes().split(b"\0")[:-1] == [folder, b"--resume=plain-id"]

    t = Terminal([str(hermes_tui_bin)], env, cwd=tmp_path)
    try:
        _browse_to(t, "rhubarb")
        t.press("R")
        assert t.wait_exit() == 0
    finally:
        t.close()
    assert record.read_bytes().split(b"\0")[:-1] == [str(root).encode(), f"--resume={TITLE_ID}".encode()]

    # a `hermes` that cannot be executed (no #! line): the error names the command, inert
    bad = tmp_path / "badbin"
    bad.mkdir()
    (bad / "hermes").write_text("not a program\n")
    (bad / "hermes").chmod(0o755)
    t = Terminal([str(hermes_tui_bin)], with_path(terminal_env(home), bad), cwd=tmp_path)
    try:
        _browse_to(t, "quince")
        t.press("R")
        assert t.wait_exit() == 127
    finally:
        t.close()
    raw = bytes(t.raw)
    assert forbidden(raw) == [], raw[-400:]
    assert "could not run hermes '--resume=osc␛]52;c;aGVsbG8=␇id'" in raw.decode("utf-8", "replace")


def test_copying_a_hostile_id_sends_only_the_clipboard_sequence(
    peer_db: Callable[..., PeerDB], hermes_tui_bin: Path, home: Path, tmp_path: Path
) -> None:
    """`y i` copies the exact id (OSC 52 carries it base64-encoded); `y r` refuses to make a
    shell line of it; no sequence of the id itself reaches the terminal."""
    import base64

    hostile_id_home(peer_db, home)
    t = Terminal([str(hermes_tui_bin)], terminal_env(home), cwd=tmp_path)
    try:
        _browse_to(t, "quince")
        t.press("y")
        t.wait_for("Copy to the clipboard")
        t.press("i")
        t.wait_for("Copied the session id")
        t.wait_gone("Copy to the clipboard")
        t.press("y")
        t.wait_for("Copy to the clipboard")
        t.press("r")
        t.wait_for("Cannot copy")
        leave(t)
    finally:
        t.close()
    raw = bytes(t.raw)
    payloads = re.findall(rb"\x1b\]52;c;([A-Za-z0-9+/=]*)(?:\x07|\x1b\\)", raw)
    assert [base64.b64decode(p) for p in payloads] == [OSC_ID.encode()]
    without_copy = re.sub(rb"\x1b\]52;c;[A-Za-z0-9+/=]*(?:\x07|\x1b\\)", b"", raw)
    assert forbidden(without_copy) == []
