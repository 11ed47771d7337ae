"""`hermes-tui sessions trash …` and the trash entries `delete`/`prune` write."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

from hermes_tui.state import SessionDB
from tests.cli._cli import run

from .conftest import one_store


def dump(db_path: Path) -> dict[str, list]:
    with SessionDB(db_path, read_only=True) as db:
        c = db._conn()
        return {
            t: sorted(c.execute(f"SELECT * FROM {t}").fetchall(), key=repr)
            for t in ("sessions", "messages", "session_model_usage")
        }


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture(autouse=True)
def no_tty(monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))


@pytest.fixture(autouse=True)
def private_data_home(tmp_path, monkeypatch):
    """The user data folder (fallback trash, the trash's link key) inside the test's folder."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))


def _entry_from(out: str) -> str:
    line = next(ln for ln in out.splitlines() if ln.startswith("moved to trash: "))
    return line.split()[3]


def test_delete_prints_its_entry_and_trash_restore_undoes_it(db_path, capsys):
    before = dump(db_path)
    code, out, _ = run(capsys, "delete", "Docker fix", "comp-root", "--yes", "--db", db_path)
    assert code == 0
    entry = _entry_from(out)
    assert f"restore with `hermes-tui sessions --db {db_path} trash restore {entry}`" in out
    assert (db_path.parent / ".hermes-tui-trash" / "state.db" / entry / "manifest.json").exists()

    code, out, _ = run(capsys, "trash", "list", "--db", db_path)
    assert code == 0 and entry in out and "delete" in out and "Docker fix" in out and "deleted" in out
    code, out, _ = run(capsys, "trash", "show", entry[:12], "--db", db_path)  # a unique prefix
    assert code == 0 and "cli-docker “Docker fix”" in out and "comp-root" in out

    code, out, _ = run(capsys, "trash", "restore", entry, "--db", db_path)
    assert code == 0 and "Restored 2 sessions" in out
    assert dump(db_path) == before
    code, out, _ = run(capsys, "search", "nginx", "--db", db_path, "--json")
    assert {r["session_id"] for r in json.loads(out)["results"]} == {"cli-docker"}
    code, out, _ = run(capsys, "trash", "list", "--db", db_path, "--json")
    assert json.loads(out)["entries"][0]["status"] == "restored"


def test_prune_json_carries_the_entry_and_restore_json_per_session(db_path, capsys):
    code, out, _ = run(capsys, "prune", "--source", "telegram", "--yes", "--json", "--db", db_path)
    doc = one_store(json.loads(out))
    assert code == 0 and doc["trash_entry"] == doc["result"]["trash_entry"]
    code, out, _ = run(capsys, "trash", "show", doc["trash_entry"], "--json", "--db", db_path)
    shown = json.loads(out)
    assert shown["what"] == "prune" and set(shown["deleted_ids"]) == {"tg-parent", "tg-sub", "tg-solo"}
    # the title is taken meanwhile: restored without it, said per session
    with SessionDB(db_path, migrate=False) as db:
        db.create_session("new", "cli")
        db.set_session_title("new", "Weekly plan")
    code, out, _ = run(capsys, "trash", "restore", doc["trash_entry"], "--json", "--db", db_path)
    res = json.loads(out)
    by = {s["id"]: s for s in res["sessions"]}
    assert code == 0 and res["restored"] == 3 and "held by session new" in by["tg-parent"]["notes"][0]
    code, out, _ = run(capsys, "trash", "restore", doc["trash_entry"], "--db", db_path)
    assert code == 0 and "Restored 0 sessions" in out and "tg-solo: already restored from this entry" in out


def test_restore_conflict_is_reported_and_nothing_live_overwritten(db_path, capsys):
    _, out, _ = run(capsys, "delete", "tg-solo", "--yes", "--db", db_path)
    entry = _entry_from(out)
    with SessionDB(db_path, migrate=False) as db:
        db.create_session("tg-solo", "cli", model="someone-else")
    code, out, _ = run(capsys, "trash", "restore", entry, "--db", db_path)
    assert code == 0 and "! tg-solo: not restored: a session with this id exists again" in out
    assert "1 session not restored (conflicts above); nothing live was overwritten." in out
    with SessionDB(db_path, read_only=True) as db:
        assert db.get_session("tg-solo")["model"] == "someone-else"


def test_no_trash_is_explicit_and_writes_no_entry(db_path, capsys):
    code, out, _ = run(capsys, "delete", "tg-solo", "--yes", "--no-trash", "--db", db_path)
    assert code == 0 and "moved to trash" not in out and "cannot be restored" in out
    code, out, _ = run(capsys, "trash", "list", "--db", db_path)
    assert code == 0 and "The trash is empty." in out
    assert not (db_path.parent / ".hermes-tui-trash").exists()


def test_dry_run_writes_no_entry(db_path, capsys):
    assert run(capsys, "delete", "tg-solo", "--dry-run", "--db", db_path)[0] == 0
    assert run(capsys, "prune", "--source", "telegram", "--dry-run", "--db", db_path)[0] == 0
    assert not (db_path.parent / ".hermes-tui-trash").exists()


def test_trash_empty_asks_and_older_than(db_path, capsys, monkeypatch):
    _, out, _ = run(capsys, "delete", "tg-solo", "--yes", "--db", db_path)
    first = _entry_from(out)
    code, _, err = run(capsys, "trash", "empty", "--db", db_path)
    assert code == 4 and "--yes" in err  # no terminal: refused
    code, out, _ = run(capsys, "trash", "empty", "--older-than", "1d", "--yes", "--db", db_path)
    assert code == 0 and "Removed 0 trash entries" in out
    monkeypatch.setattr(sys, "stdin", _Tty("n\n"))
    code, _, err = run(capsys, "trash", "empty", "--db", db_path)
    assert code == 4 and "Remove 1 trash entry for good?" in err
    monkeypatch.setattr(sys, "stdin", _Tty("y\n"))
    code, out, _ = run(capsys, "trash", "empty", "--db", db_path, "--json")
    assert code == 0 and json.loads(out)["removed"] == [first]
    code, out, _ = run(capsys, "trash", "list", "--db", db_path, "--json")
    assert json.loads(out) == {"entries": [], "skipped": []}


def test_trash_empty_retention_flags(db_path, capsys):
    _, out, _ = run(capsys, "delete", "tg-solo", "--yes", "--db", db_path)
    code, out, _ = run(
        capsys, "trash", "empty", "--retention", "--trash-max-mb", "0", "--json", "--db", db_path
    )
    assert code == 0 and len(json.loads(out)["removed"]) == 1
    assert run(capsys, "trash", "empty", "--retention", "--older-than", "1d", "--db", db_path)[0] == 2


def test_delete_retention_flag_drops_older_entries(db_path, capsys):
    _, out, _ = run(capsys, "delete", "tg-solo", "--yes", "--db", db_path)
    first = _entry_from(out)
    code, out, _ = run(capsys, "delete", "cli-open", "--yes", "--trash-keep", "0s", "--db", db_path)
    assert code == 0 and "Trash retention removed 1 older entry." in out
    code, out, _ = run(capsys, "trash", "list", "--json", "--db", db_path)
    assert first not in [e["id"] for e in json.loads(out)["entries"]]


def test_entry_references_are_exact(db_path, capsys):
    run(capsys, "delete", "tg-solo", "--yes", "--db", db_path)
    run(capsys, "delete", "cli-open", "--yes", "--db", db_path)
    code, _, err = run(capsys, "trash", "restore", "20", "--db", db_path)
    assert code == 7 and "matches 2 trash entries" in err
    code, out, _ = run(capsys, "trash", "show", "nope", "--json", "--db", db_path)
    assert code == 3 and json.loads(out)["kind"] == "not_found"
    assert run(capsys, "trash", "restore", "../x", "--db", db_path)[0] == 3
    assert run(capsys, "trash", "--db", db_path)[0] == 2  # an action is required


def test_restore_and_empty_refused_read_only(db_path, capsys):
    _, out, _ = run(capsys, "delete", "tg-solo", "--yes", "--db", db_path)
    entry = _entry_from(out)
    code, _, err = run(capsys, "trash", "restore", entry, "--read-only", "--db", db_path)
    assert code == 4 and "read-only" in err
    assert run(capsys, "trash", "empty", "--yes", "--read-only", "--db", db_path)[0] == 4
    assert run(capsys, "trash", "list", "--read-only", "--db", db_path)[0] == 0


def test_store_strings_in_trash_output_are_inert(db_path, capsys):
    with SessionDB(db_path, migrate=False) as db:
        db.set_session_title("tg-solo", "evil \x1b[31mred\x1b]0;pwned\x07 title")
    _, out, _ = run(capsys, "delete", "tg-solo", "--yes", "--db", db_path)
    entry = _entry_from(out)
    for argv in (("trash", "list"), ("trash", "show", entry)):
        code, out, _ = run(capsys, *argv, "--db", db_path)
        assert code == 0 and "\x1b" not in out and "\x07" not in out and "evil" in out


# ---------------------------------------------------------------- untrusted trash files
def _manifest(db_path: Path, entry: str) -> Path:
    return db_path.parent / ".hermes-tui-trash" / "state.db" / entry / "manifest.json"


def test_a_damaged_entry_is_reported_and_every_other_command_still_works(db_path, capsys):
    """One malformed manifest made `trash list`, every restore and `empty` fail, and a later
    delete exit 1 without printing its entry id."""
    _, out, _ = run(capsys, "delete", "tg-solo", "--yes", "--db", db_path)
    good = _entry_from(out)
    _, out, _ = run(capsys, "delete", "cli-open", "--yes", "--db", db_path)
    bad = _entry_from(out)
    man = _manifest(db_path, bad)
    man.write_text(json.dumps({**json.loads(man.read_text()), "sessions": 5}))
    before = dump(db_path)

    code, out, err = run(capsys, "trash", "list", "--db", db_path)
    assert code == 0 and good in out and bad in out and "damaged" in out
    assert f"warning: trash entry {bad} is damaged and was skipped: " in err
    code, out, _ = run(capsys, "trash", "list", "--json", "--db", db_path)
    doc = json.loads(out)
    assert code == 0 and {e["id"]: e["status"] for e in doc["entries"]} == {good: "deleted", bad: "damaged"}
    [skipped] = doc["skipped"]
    assert skipped["id"] == bad and "sessions" in skipped["reason"] and skipped["path"].endswith(bad)

    code, _, err = run(capsys, "trash", "show", bad, "--db", db_path)
    assert code == 1 and "damaged" in err and "sessions" in err
    code, out, _ = run(capsys, "trash", "restore", bad, "--json", "--db", db_path)
    assert code == 1 and "damaged" in json.loads(out)["error"]
    assert dump(db_path) == before

    code, out, err = run(capsys, "trash", "restore", good, "--db", db_path)
    assert code == 0 and "Restored 1 session" in out and f"trash entry {bad} is damaged" in err
    code, out, _ = run(capsys, "trash", "restore", good, "--json", "--db", db_path)
    assert code == 0 and [s["id"] for s in json.loads(out)["skipped"]] == [bad]

    code, out, _ = run(capsys, "delete", "old-one", "--yes", "--db", db_path)
    assert code == 0 and _entry_from(out)
    code, out, _ = run(capsys, "trash", "empty", "--yes", "--json", "--db", db_path)
    assert code == 0 and bad in json.loads(out)["removed"] and len(json.loads(out)["removed"]) == 3
    code, out, _ = run(capsys, "trash", "list", "--json", "--db", db_path)
    assert json.loads(out) == {"entries": [], "skipped": []}


def test_a_symlinked_trash_folder_is_reported_not_followed(db_path, capsys, tmp_path):
    victim = tmp_path / "victim" / "state.db" / "20200101T000000Z-aaaaaa"
    victim.mkdir(parents=True)
    (victim / "precious.txt").write_text("keep")
    (db_path.parent / ".hermes-tui-trash").symlink_to(tmp_path / "victim")
    code, out, err = run(capsys, "trash", "list", "--db", db_path)
    assert code == 0 and "The trash is empty." in out
    assert "warning: trash folder " in err and "is a link, not a folder: never followed" in err
    code, out, err = run(capsys, "trash", "empty", "--yes", "--db", db_path)
    assert code == 0 and (victim / "precious.txt").exists()
    code, out, _ = run(capsys, "trash", "empty", "--yes", "--json", "--db", db_path)
    assert json.loads(out)["removed"] == [] and json.loads(out)["skipped"][0]["id"] is None
