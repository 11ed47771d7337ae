"""A hermes-agent 0.19.0 store whose writer crashed is read with what only its -wal holds, and
neither the database file nor the -wal is written by browsing it: `SessionDB(migrate=False)`,
`SessionDB(read_only=True)`, `hermes-tui sessions list` and `sessions repair --check` (issue #33,
item 9; the browser: tests/app/test_crashed_store_ui.py). Before, the first open-and-close
checkpointed the -wal into the file and deleted it."""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes_tui.cli import sessions
from hermes_tui.state import SessionDB, diagnose

from .crashed import PER_SESSION, SESSIONS, copy_store, crashed_peer_store, db_and_wal

pytestmark = pytest.mark.peer


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # the CJK side index goes there


@pytest.fixture(scope="module")
def crashed(peer_venv_python: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    path = tmp_path_factory.mktemp("crashed") / "state.db"
    return path, crashed_peer_store(path, peer_venv_python)


@pytest.mark.parametrize("kw", [{"migrate": False}, {"read_only": True}], ids=["migrate_false", "read_only"])
def test_sessiondb_reads_the_wal_and_writes_neither_file(crashed, tmp_path: Path, kw: dict) -> None:
    src, total = crashed
    p = copy_store(src, tmp_path / "copy")
    before = db_and_wal(p)
    with SessionDB(p, **kw) as d:
        assert d.message_count() == total
        assert d.get_session(f"peer-{SESSIONS - 1}")["title"] == f"Crashed writer {SESSIONS - 1}"
        assert len(d.search_messages("zeppelin", limit=100)) == total
        assert len(d.search_messages("部署", limit=100)) == total  # the side index reads it too
    assert db_and_wal(p) == before


def test_cli_list_and_repair_check_write_neither_file(crashed, tmp_path: Path, capsys) -> None:
    src, total = crashed
    p = copy_store(src, tmp_path / "copy")
    before = db_and_wal(p)
    assert sessions.main(["--db", str(p), "list", "--json"]) == 0
    out = capsys.readouterr().out
    assert all(f"peer-{s}" in out for s in range(SESSIONS))
    assert db_and_wal(p) == before
    assert sessions.main(["--db", str(p), "repair", "--check"]) == 0
    assert "healthy" in capsys.readouterr().out
    assert db_and_wal(p) == before
    report = diagnose(p)
    assert report["healthy"] and report["messages"] == SESSIONS * PER_SESSION
    assert db_and_wal(p) == before
