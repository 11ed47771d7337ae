"""System prompts of a v31 file (kept once in `system_prompts`, the row holding its hash) in
`get_session`, `sessions show` (text and JSON) and every export format, against what the v31
writer's own `get_session` resolves: rows it wrote, rows its v25 migration moved out of a
0.19.0 file (inline column emptied), and rows whose hash or inline copy was changed in a copy.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import apsw
import pytest

from hermes_tui.cli import sessions
from hermes_tui.state import SessionDB

from .oracle import V31, Peer, peer_python

pytestmark = pytest.mark.peer

PROMPT_A = "You are Hermes, migrated from 0.19.0.\nKeep answers short.\n" * 30
PROMPT_B = "A second prompt\twith a tab and ```fences``` inside."
PROMPT_NEW = "Written by the v31 writer."
SESSIONS = ("mig-a", "mig-b", "mig-none", "new-a", "new-c", "inline-only", "dangling", "both")


def run(capsys: Any, *argv: Any) -> tuple[int, str, str]:
    code = sessions.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory, peer31_venv_python: Path) -> Any:
    """A 0.19.0 file with inline prompts, migrated by the v31 writer, plus its own sessions;
    then, on the writer's connection, an inline-only row, a dangling hash and a row with both."""
    path = tmp_path_factory.mktemp("v31prompts") / "state.db"
    with Peer(path, python=peer_python()) as old:
        old.call("create_session", "mig-a", "cli", system_prompt=PROMPT_A)
        old.call("append_message", "mig-a", "user", "hello")
        old.call("create_session", "mig-b", "telegram", system_prompt=PROMPT_B)
        old.call("create_session", "mig-none", "cli")
    peer = Peer(path, python=peer31_venv_python, spec=V31)
    try:
        peer.call("create_session", "new-a", "cli", system_prompt=PROMPT_A)
        peer.call("create_session", "new-c", "cli", system_prompt=PROMPT_NEW)
        for sid in ("inline-only", "dangling", "both"):
            peer.call("create_session", sid, "cli", system_prompt=PROMPT_NEW)
        edits = [
            (
                "UPDATE sessions SET system_prompt = 'only inline', system_prompt_hash = NULL WHERE id = ?",
                "inline-only",
            ),
            ("UPDATE sessions SET system_prompt_hash = 'no-such-hash' WHERE id = ?", "dangling"),
            ("UPDATE sessions SET system_prompt = 'stale inline copy' WHERE id = ?", "both"),
        ]
        peer.exec(
            f"edits = {edits!r}\n"
            "dbs[1]._execute_write(lambda c: [c.execute(q, (sid,)) for q, sid in edits])\n"
            "result = None"
        )
        theirs = {sid: peer.call("get_session", sid) for sid in SESSIONS}
        yield path, theirs
    finally:
        peer.close()


def test_the_writer_migrated_the_inline_prompts(store: Any) -> None:
    path, theirs = store
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        raw = dict(conn.execute("SELECT id, system_prompt FROM sessions WHERE id LIKE 'mig-%'").fetchall())
        (version,) = conn.execute("SELECT version FROM schema_version").fetchall()[0]
        hashes = {
            r[0]
            for r in conn.execute("SELECT system_prompt_hash FROM sessions WHERE id IN ('mig-a', 'new-a')")
        }
    finally:
        conn.close()
    assert version == 31 and raw == {"mig-a": None, "mig-b": None, "mig-none": None}
    assert len(hashes) == 1  # one shared row for the same prompt
    assert theirs["mig-a"]["system_prompt"] == PROMPT_A and theirs["mig-b"]["system_prompt"] == PROMPT_B
    assert theirs["dangling"]["system_prompt"] is None
    assert theirs["both"]["system_prompt"] == PROMPT_NEW
    assert theirs["inline-only"]["system_prompt"] == "only inline"


@pytest.mark.parametrize("sid", SESSIONS)
def test_get_session_and_exports_resolve_as_the_writer(store: Any, sid: str) -> None:
    path, theirs = store
    expected = theirs[sid]["system_prompt"]
    with SessionDB(path, read_only=True, migrate=False) as db:
        assert db.get_session(sid)["system_prompt"] == expected
        assert db.export_session(sid)["system_prompt"] == expected
        assert db.export_session_lineage(sid)["system_prompt"] == expected
        assert db.get_session(sid)["tool_names"] == theirs[sid]["tool_names"]


@pytest.mark.parametrize("sid", SESSIONS)
def test_show_prints_the_resolved_prompt(store: Any, sid: str, capsys: Any) -> None:
    path, theirs = store
    expected = theirs[sid]["system_prompt"]
    code, out, _ = run(capsys, "show", sid, "--db", path, "--json")
    assert code == 0 and json.loads(out)["session"]["system_prompt"] == expected
    code, out, _ = run(capsys, "show", sid, "--db", path)
    assert code == 0
    if expected:
        assert f"System prompt ({len(expected):,} characters" in out
        assert all(f"  {ln}" in out for ln in expected.splitlines() if "\t" not in ln)
    else:
        assert "System prompt" not in out


def test_every_export_format_carries_the_prompt(store: Any, capsys: Any, tmp_path: Path) -> None:
    path, theirs = store
    ids = ["mig-a", "mig-b", "new-c", "dangling"]
    code, out, _ = run(capsys, "export", *ids, "--db", path, "--format", "json")
    assert code == 0
    assert {s["id"]: s["system_prompt"] for s in json.loads(out)} == {
        i: theirs[i]["system_prompt"] for i in ids
    }
    code, out, _ = run(capsys, "export", *ids, "--db", path, "--format", "jsonl")
    assert code == 0
    got = {s["id"]: s["system_prompt"] for s in map(json.loads, out.splitlines())}
    assert got == {i: theirs[i]["system_prompt"] for i in ids}
    for sid in ids:
        target = tmp_path / f"{sid}.md"
        code, _out, err = run(capsys, "export", sid, "--db", path, "-o", target)
        assert code == 0, err
        md = target.read_text()
        expected = theirs[sid]["system_prompt"]
        if expected:
            assert "<summary>System prompt</summary>" in md
            body = md.split("<summary>System prompt</summary>", 1)[1].split("</details>", 1)[0]
            assert expected.replace("\t", "␉") in body or expected in body
        else:
            assert "System prompt" not in md
    # The whole store (filters, no ids) is exported too, prompts resolved.
    code, out, _ = run(capsys, "export", "--db", path, "--format", "jsonl")
    got = {s["id"]: s["system_prompt"] for s in map(json.loads, out.splitlines())}
    assert got == {sid: theirs[sid]["system_prompt"] for sid in SESSIONS}
