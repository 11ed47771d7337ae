"""`hermes-tui sessions fork REF --at MESSAGE_ID|-N [--title T] [--json]` on the CLI test store
(`conftest.build`): `cli-docker` ("Docker fix") holds four live messages and a rewound fifth."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from hermes_tui.state import SessionDB
from tests.cli._cli import run


@pytest.fixture(autouse=True)
def no_tty(monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))


def messages(db_path, sid):
    with SessionDB(db_path, read_only=True) as db:
        return db.get_messages(sid)


def all_ids(db_path):
    with SessionDB(db_path, read_only=True) as db:
        return {r[0] for r in db._conn().execute("SELECT id FROM sessions")}


def test_fork_at_minus_n_prints_the_new_id_alone(db_path, capsys):
    source = messages(db_path, "cli-docker")
    code, out, err = run(capsys, "fork", "Docker fix", "--at", "-2", "--db", db_path)
    assert code == 0, err
    new_id = out.strip()
    assert out == new_id + "\n" and new_id in err and "hermes --resume " + new_id in err
    with SessionDB(db_path, read_only=True) as db:
        row = db.get_session(new_id)
        assert row["parent_session_id"] == "cli-docker" and row["title"] == "Docker fix #2"
        live = [m for m in source if m.get("active", 1) == 1]
        assert [m["content"] for m in db.get_messages(new_id)] == [m["content"] for m in live[:3]]
        assert json.loads(row["model_config"])["_branched_at_message"] == live[2]["id"]


def test_fork_json_by_id_with_a_title(db_path, capsys):
    first = messages(db_path, "cli-docker")[0]["id"]
    code, out, _ = run(
        capsys, "fork", "cli-docker", "--at", first, "--title", "Other way", "--json", "--db", db_path
    )
    assert code == 0
    doc = json.loads(out)
    assert {"id", "parent", "messages"} <= set(doc)
    assert doc["parent"] == "cli-docker" and doc["messages"] == 1 and doc["title"] == "Other way"
    assert doc["at"] == first and not doc["errors"]
    assert [m["content"] for m in messages(db_path, doc["id"])] == ["How do I fix the docker deployment?"]


def test_minus_one_is_the_last_live_message_not_the_rewound_one(db_path, capsys):
    code, out, _ = run(capsys, "fork", "cli-docker", "--at=-1", "--json", "--db", db_path)
    assert code == 0
    doc = json.loads(out)
    assert doc["messages"] == 4
    assert messages(db_path, doc["id"])[-1]["content"] == "Restart the nginx container."


@pytest.mark.parametrize(
    ("argv", "code"),
    [
        (("--at", "0"), 2),
        (("--at", "abc"), 2),
        (("--at", "-99"), 2),  # more than the session has
        ((), 2),  # --at is required
        (("--at", "-1", "--title", "  "), 8),
        (("--at", "-1", "--title", "Long chat"), 8),  # held by comp-root
        (("--at", "-1", "--read-only"), 4),
    ],
)
def test_refusals_create_nothing(db_path, capsys, argv, code):
    before = all_ids(db_path)
    got, out, err = run(capsys, "fork", "cli-docker", *argv, "--db", db_path)
    assert got == code, err
    assert out == "" and err
    assert all_ids(db_path) == before


def test_a_message_of_another_session_or_a_rewound_one(db_path, capsys):
    other = messages(db_path, "comp-root")[0]["id"]
    code, _out, err = run(capsys, "fork", "cli-docker", "--at", other, "--db", db_path)
    assert code == 3 and "no message" in err
    with SessionDB(db_path, read_only=True) as db:  # get_messages leaves rewound rows out
        rows = db._conn().execute("SELECT id FROM messages WHERE session_id = 'cli-docker' AND active = 0")
        (rewound,) = (r[0] for r in rows)
    code, _out, err = run(capsys, "fork", "cli-docker", "--at", rewound, "--db", db_path)
    assert code == 8 and "rewound" in err


def test_hostile_title_is_shown_inert(db_path, capsys):
    code, out, err = run(
        capsys, "fork", "cli-docker", "--at", "-1", "--title", "x\x1b]52;c;aGk=\x07\u202ey", "--db", db_path
    )
    assert code == 0
    for raw in ("\x1b", "\x07", "\u202e"):
        assert raw not in out + err


def test_console_script_forks_and_hermes_can_resume_by_id(db_path):
    """The installed command with the real clock: the id it prints is a session whose id has
    Hermes' shape and whose start is now."""
    script = Path(sys.executable).parent / "hermes-tui"
    if not script.exists():
        pytest.skip("hermes-tui console script is not installed")
    import time

    t0 = time.time()
    proc = subprocess.run(
        [str(script), "sessions", "fork", "cli-docker", "--at", "-1", "--db", str(db_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    new_id = proc.stdout.strip()
    with SessionDB(db_path, read_only=True) as db:
        row = db.get_session(new_id)
    assert row is not None and t0 - 1 <= row["started_at"] <= time.time() + 1
    assert len(new_id) == 22 and new_id[8] == "_" and new_id[15] == "_"
