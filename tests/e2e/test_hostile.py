"""Hostile stored text: escape sequences a message carries must never reach the
terminal, in the browser (raw pty bytes) or in the headless commands (stdout)."""

from __future__ import annotations

import re
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
