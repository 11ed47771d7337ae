"""`hermes-tui sessions archive|unarchive|pin|unpin REF…`: the store's lineage-wide flags from the
command line (text and JSON, errors, --all/--profile, --read-only, a store without the column).

The store is `conftest.build`'s (our v23: `archived` and `pinned`); the v31 writer's side (hidden,
the Bot Chat, auto_archived) and a v22 file written by hermes-agent 0.19.0 are in
tests/peer/test_v31_write_cli.py."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import apsw
import pytest

from hermes_tui.state import SessionDB
from tests.cli._cli import run

from .conftest import build


@pytest.fixture(autouse=True)
def no_tty(monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))


@pytest.fixture
def store(tmp_path) -> Path:
    path = tmp_path / "state.db"
    build(path)
    return path


def flags(path: Path, *ids: str) -> dict[str, tuple[int, int]]:
    with SessionDB(path, read_only=True) as db:
        return {i: (db.get_session(i)["archived"], db.get_session(i)["pinned"]) for i in ids}


def test_archive_spans_the_compression_lineage_and_says_how_many_rows(store, capsys) -> None:
    code, out, err = run(capsys, "--db", store, "archive", "comp-tip")
    assert code == 0, err
    assert out == "Archived comp-tip “Long chat #2” with its compression lineage (2 of 2 sessions changed).\n"
    assert flags(store, "comp-root", "comp-tip", "cli-docker") == {
        "comp-root": (1, 0),
        "comp-tip": (1, 0),
        "cli-docker": (0, 0),
    }
    code, out, _ = run(capsys, "--db", store, "archive", "Long chat")  # the root, by title: no change
    assert code == 0
    assert out == "comp-root “Long chat”: already archived (all 2 sessions of its compression lineage).\n"
    code, out, _ = run(capsys, "--db", store, "unarchive", "comp-root", "--json")
    doc = json.loads(out)
    assert code == 0
    assert (doc["action"], doc["flag"], doc["value"], doc["rows"], doc["changed"]) == (
        "unarchive",
        "archived",
        False,
        2,
        2,
    )
    (entry,) = doc["sessions"]
    assert entry["id"] == "comp-root" and entry["title"] == "Long chat" and entry["found"] is True
    assert entry["lineage"] == ["comp-root", "comp-tip"] and entry["changed"] == ["comp-root", "comp-tip"]
    assert flags(store, "comp-root", "comp-tip") == {"comp-root": (0, 0), "comp-tip": (0, 0)}


def test_pin_and_unpin_several_references(store, capsys) -> None:
    code, out, err = run(capsys, "--db", store, "pin", "Docker fix", "tg-solo", "cli-docker")
    assert code == 0, err
    assert out.splitlines() == ["Pinned cli-docker “Docker fix”.", "Pinned tg-solo."]  # one line per session
    assert flags(store, "cli-docker", "tg-solo", "tg-parent") == {
        "cli-docker": (0, 1),
        "tg-solo": (0, 1),
        "tg-parent": (0, 0),
    }
    code, out, _ = run(capsys, "--db", store, "unpin", "tg-solo", "tg-parent", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["changed"] == 1 and doc["rows"] == 2
    assert [(e["id"], e["changed"]) for e in doc["sessions"]] == [("tg-solo", ["tg-solo"]), ("tg-parent", [])]
    assert flags(store, "tg-solo", "cli-docker") == {"tg-solo": (0, 0), "cli-docker": (0, 1)}


def test_every_reference_is_resolved_before_anything_is_written(store, capsys) -> None:
    before = store.read_bytes()
    code, out, err = run(capsys, "--db", store, "pin", "cli-docker", "no-such-session")
    assert code == 3 and out == ""
    assert err.startswith("error: no session is 'no-such-session'")
    code, out, _ = run(capsys, "--db", store, "archive", "c", "--json")  # an id prefix of several
    assert code == 7 and json.loads(out)["kind"] == "ambiguous"
    assert store.read_bytes() == before


def test_read_only_refuses_and_leaves_the_file_alone(store, capsys) -> None:
    before = store.read_bytes()
    for verb in ("archive", "unarchive", "pin", "unpin"):
        code, out, err = run(capsys, "--db", store, "--read-only", verb, "cli-docker")
        assert code == 4 and out == ""
        assert (
            err == f"error: '{verb}' writes to the database, but --read-only was given; nothing was changed\n"
        )
    assert store.read_bytes() == before


def test_a_store_without_the_column_refuses_with_the_reason(store, capsys) -> None:
    conn = apsw.Connection(str(store))
    conn.execute("ALTER TABLE sessions DROP COLUMN pinned")
    conn.close()
    code, out, err = run(capsys, "--db", store, "pin", "cli-docker", "--json")
    assert code == 4
    assert json.loads(out) == {
        "error": "this store (schema v23) has no pins: its sessions table has no `pinned` column"
        " (a newer Hermes adds it); nothing was changed",
        "kind": "refused",
    }
    code, out, err = run(capsys, "--db", store, "archive", "cli-docker")  # archived exists
    assert code == 0 and out == "Archived cli-docker “Docker fix”.\n"


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    root = tmp_path / ".hermes"
    (root / "profiles" / "work").mkdir(parents=True)
    (root / "profiles" / "broken").mkdir()
    (root / "profiles" / "broken" / "state.db").write_bytes(b"this is no database " * 100)
    build(root / "state.db")
    build(root / "profiles" / "work" / "state.db")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("HERMES_HOME", str(root))
    return root


def test_all_and_profile_pick_the_store_of_each_reference(home, capsys) -> None:
    work, default = home / "profiles" / "work" / "state.db", home / "state.db"
    code, out, err = run(capsys, "pin", "--all", "cli-docker")  # in both stores
    assert code == 7 and "ambiguous" in err and "PROFILE:ID" in err
    code, out, err = run(capsys, "pin", "--all", "work:cli-docker", "default:tg-solo")
    assert code == 0
    assert out.splitlines() == ["Pinned work:cli-docker “Docker fix”.", "Pinned default:tg-solo."]
    assert err.startswith("warning: broken: not a database — ") and err.count("\n") == 1
    assert flags(work, "cli-docker", "tg-solo") == {"cli-docker": (0, 1), "tg-solo": (0, 0)}
    assert flags(default, "cli-docker", "tg-solo") == {"cli-docker": (0, 0), "tg-solo": (0, 1)}
    code, out, err = run(capsys, "archive", "--profile", "work", "comp-tip", "--json")
    doc = json.loads(out)
    assert code == 0 and err == ""
    assert [(e["profile"], e["id"], e["lineage"]) for e in doc["sessions"]] == [
        ("work", "comp-tip", ["comp-root", "comp-tip"])
    ]
    assert doc["errors"] == [] and doc["rows"] == 2 and doc["changed"] == 2
    assert flags(work, "comp-root")["comp-root"][0] == 1 and flags(default, "comp-root")["comp-root"][0] == 0
    code, out, err = run(capsys, "unpin", "--all", "--read-only", "work:cli-docker")
    assert code == 4 and "--read-only" in err
    assert flags(work, "cli-docker")["cli-docker"] == (0, 1)


def test_delete_names_a_pinned_session_and_still_deletes_it(store, capsys) -> None:
    assert run(capsys, "--db", store, "pin", "tg-solo")[0] == 0
    code, out, err = run(capsys, "--db", store, "delete", "tg-solo", "cli-docker", "--yes")
    assert code == 0, err
    listed = [line for line in out.splitlines() if line.startswith("  - ")]
    assert [line.endswith("[pinned]") for line in listed] == [True, False]  # in the order given
    with SessionDB(store, read_only=True) as db:
        assert db.get_session("tg-solo") is None
