"""`hermes-tui sessions repair [--check]` on damaged copies of a store.

Damage is made in a subprocess with the stdlib's SQLite, as in tests/store/test_repair.py (never
both libraries on one file in one process)."""

from __future__ import annotations

import hashlib
import io
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from hermes_tui.cli import errors
from hermes_tui.state import SessionDB, diagnose
from tests.cli._cli import run

from .conftest import build

DAMAGE = r"""
import sqlite3, sys
path, kind, table = sys.argv[1:4]
c = sqlite3.connect(path, isolation_level=None)
if kind == "dup":
    c.execute("PRAGMA writable_schema=ON")
    c.execute("INSERT INTO sqlite_master SELECT * FROM sqlite_master WHERE name = ?", (table,))
    c.execute("PRAGMA writable_schema=OFF")
elif kind == "fts":
    n = c.execute(f"DELETE FROM {table}_data WHERE id > 10").rowcount
    assert n > 0, n
c.close()
"""


def damage(path: Path, kind: str, table: str = "messages_fts") -> None:
    subprocess.run([sys.executable, "-c", DAMAGE, str(path), kind, table], check=True, timeout=60)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def counts(path: Path) -> tuple[int, int]:
    with SessionDB(path, read_only=True) as db:
        return db.session_count(include_archived=True, exclude_children=False), db.message_count()


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture(autouse=True)
def no_tty(monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path = tmp_path / "state.db"
    build(path)
    return path


def test_check_healthy_exits_0(store, capsys) -> None:
    code, out, err = run(capsys, "repair", "--check", "--db", store)
    assert code == 0, err
    assert "healthy" in out and "damaged" not in out
    code, out, _ = run(capsys, "repair", "--check", "--db", store, "--json")
    assert code == 0 and json.loads(out)["healthy"] is True


def test_check_damaged_exits_9_and_changes_nothing(store, capsys) -> None:
    damage(store, "dup")
    before = digest(store)
    code, out, _ = run(capsys, "repair", "--check", "--db", store)
    assert code == errors.EXIT_CODES["damaged"] == 9
    assert (
        "damaged" in out
        and "sqlite_master holds 2 rows" in out
        and "repairable by `sessions repair`: yes" in out
    )
    code, out, _ = run(capsys, "repair", "--check", "--db", store, "--json")
    report = json.loads(out)
    assert code == 9 and report["healthy"] is False and report["repairable"] is True
    assert report["duplicates"][0]["name"] == "messages_fts"
    assert digest(store) == before


def test_repair_needs_confirmation(store, capsys) -> None:
    damage(store, "fts", "messages_fts")
    before = digest(store)
    code, _out, err = run(capsys, "repair", "--db", store)
    assert code == 4 and "refusing to repair without confirmation" in err
    assert digest(store) == before


def test_repair_declined_on_a_terminal(store, capsys, monkeypatch) -> None:
    damage(store, "dup")
    before = digest(store)
    monkeypatch.setattr(sys, "stdin", _Tty("n\n"))
    code, _out, err = run(capsys, "repair", "--db", store)
    assert code == 4 and "not confirmed" in err
    assert digest(store) == before


@pytest.mark.parametrize(
    "kind,table,strategy", [("dup", "messages_fts", "dedup_schema"), ("fts", "messages_fts", "rebuild_fts")]
)
def test_repair_backs_up_and_keeps_every_row(store, tmp_path, capsys, kind, table, strategy) -> None:
    expected = counts(store)
    damage(store, kind, table)
    backups = tmp_path / "backups"
    code, out, err = run(capsys, "repair", "--db", store, "--yes", "--backup-dir", backups)
    assert code == 0, err
    assert f"Repaired ({strategy}): kept {expected[0]} sessions, {expected[1]} messages." in out
    backup = next(backups.iterdir())
    assert f"backup: {backup}" in out
    assert stat.S_IMODE(os.stat(backup).st_mode) == 0o600
    assert not diagnose(backup)["healthy"]  # the backup is the damaged original
    assert diagnose(store)["healthy"] and counts(store) == expected
    with SessionDB(store, read_only=True) as db:
        assert db.search_messages("docker")
    # Healthy now: a second run changes nothing and needs no confirmation.
    after = digest(store)
    code, out, _ = run(capsys, "repair", "--db", store)
    assert code == 0 and "Nothing to repair." in out and digest(store) == after


def test_repair_json_report(store, tmp_path, capsys) -> None:
    damage(store, "dup")
    code, out, _ = run(capsys, "repair", "--db", store, "--yes", "--json", "--backup-dir", tmp_path / "b")
    report = json.loads(out)
    assert code == 0 and report["repaired"] is True and report["strategy"] == "dedup_schema"
    assert Path(report["backup_path"]).exists() and report["actions"]


def test_unrepairable_file_is_left_as_it_was(tmp_path, capsys) -> None:
    path = tmp_path / "state.db"
    path.write_bytes(b"not a database at all, just text" * 200)
    before = digest(path)
    code, _out, err = run(capsys, "repair", "--db", path, "--yes")
    assert code == 9 and "cannot be repaired automatically" in err and "left exactly as it was" in err
    assert digest(path) == before
    code, out, _ = run(capsys, "repair", "--db", path, "--check")
    assert code == 9 and "damaged" in out


def test_repair_refused_read_only_and_missing(store, tmp_path, capsys) -> None:
    damage(store, "dup")
    code, _out, err = run(capsys, "repair", "--db", store, "--yes", "--read-only")
    assert code == 4 and "--read-only" in err
    assert run(capsys, "repair", "--db", tmp_path / "nope.db", "--check")[0] == 3
