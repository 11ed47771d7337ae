"""A -wal another program left behind (its writer crashed, or still runs) is never checkpointed by
a store that only reads: the database file and the -wal keep their bytes, the -wal's committed
transactions are read, and a file that is not a Hermes store is refused before any connection
that could write is opened (issue #33, item 9).

SQLite's last connection to close a WAL database copies the -wal into it and deletes the -wal,
whether or not it wrote; SessionDB's connections never do unless the store writes."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import threading
from pathlib import Path

import apsw
import pytest

from hermes_tui.state import NotAHermesStore, ReadOnlyError, SessionDB, diagnose
from tests._unprivileged import needs_privilege_drop, run_unprivileged
from tests.store.test_open_safety import folder_state, probe, shared_dir  # noqa: F401 - a fixture

BROWSE = [
    pytest.param({"migrate": False}, id="migrate_false"),
    pytest.param({"read_only": True}, id="read_only"),
    pytest.param({"read_only": True, "migrate": False}, id="read_only_migrate_false"),
]

_CRASHED_FOREIGN = r"""
import apsw, os, sys
c = apsw.Connection(sys.argv[1])
c.execute("PRAGMA journal_mode=WAL").fetchall()
c.execute("PRAGMA wal_autocheckpoint=0")
c.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
for i in range(100):
    c.execute("INSERT INTO notes (body) VALUES (?)", ("note %d " % i + "x" * 300,))
os._exit(0)  # killed: no checkpoint, the -wal and -shm stay
"""

_CRASHED_STORE = r"""
import os, sys
from hermes_tui.state import SessionDB
d = SessionDB(sys.argv[1])
for i in range(3):
    d.create_session("s%d" % i, "cli", model="m")
    for j in range(5):
        d.append_message("s%d" % i, "user", "written before the crash %d %d" % (i, j))
os._exit(0)  # killed: the last transactions are only in the -wal
"""


def crashed(script: str, path: Path) -> None:
    subprocess.run([sys.executable, "-c", script, str(path)], check=True, timeout=120)
    assert Path(f"{path}-wal").stat().st_size > 0 and Path(f"{path}-shm").exists()


def digest(path: Path) -> tuple[int, int, str]:
    st = os.stat(path)
    return st.st_size, st.st_mtime_ns, hashlib.sha256(path.read_bytes()).hexdigest()


def db_and_wal(path: Path) -> dict[str, tuple[int, int, str]]:
    return {"db": digest(path), "wal": digest(Path(f"{path}-wal"))}


@pytest.mark.parametrize("kw", [*BROWSE, pytest.param({}, id="migrate_true")])
def test_a_foreign_wal_file_left_by_a_crashed_writer_is_refused_untouched(tmp_path: Path, kw: dict) -> None:
    p = tmp_path / "other.db"
    crashed(_CRASHED_FOREIGN, p)
    before = folder_state(tmp_path)  # the database, its -wal and its -shm
    with pytest.raises(NotAHermesStore, match="not a Hermes session store"):
        SessionDB(p, **kw)
    assert folder_state(tmp_path) == before


def test_a_foreign_wal_file_without_its_shm_is_refused_and_gets_none(tmp_path: Path) -> None:
    p = tmp_path / "other.db"
    crashed(_CRASHED_FOREIGN, p)
    Path(f"{p}-shm").unlink()
    before = folder_state(tmp_path)
    for kw in ({"migrate": False}, {"read_only": True}, {}):
        with pytest.raises(NotAHermesStore):
            SessionDB(p, **kw)
        assert folder_state(tmp_path) == before


@pytest.mark.parametrize("kw", BROWSE)
def test_a_crashed_writers_store_is_read_with_its_wal_never_checkpointed(tmp_path: Path, kw: dict) -> None:
    p = tmp_path / "state.db"
    crashed(_CRASHED_STORE, p)
    before = db_and_wal(p)
    with SessionDB(p, **kw) as d:
        assert d.message_count() == 15  # what only the -wal holds is read
        assert d.get_messages("s2")[-1]["content"] == "written before the crash 2 4"
        assert [r["id"] for r in d.search_messages("crash")]
    assert db_and_wal(p) == before
    with SessionDB(p, **kw) as d:  # and again: nothing was lost either
        assert d.message_count() == 15
    assert db_and_wal(p) == before


def test_a_browser_that_writes_is_a_writer_and_checkpoints_on_close(tmp_path: Path) -> None:
    p = tmp_path / "state.db"
    crashed(_CRASHED_STORE, p)
    with SessionDB(p, migrate=False) as d:
        assert not d.is_writer
        d.set_session_title("s0", "renamed")
        assert d.is_writer
    assert not Path(f"{p}-wal").exists()  # upstream's TRUNCATE checkpoint, then SQLite's close
    c = apsw.Connection(f"file:{p}?immutable=1", flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
    assert c.execute("SELECT count(*) FROM messages").fetchall() == [(15,)]  # all in the file now
    assert c.execute("SELECT title FROM sessions WHERE id = 's0'").fetchall() == [("renamed",)]
    c.close()


@pytest.mark.parametrize("kw", BROWSE)
def test_browsing_a_quiet_wal_store_leaves_its_folder_as_found(tmp_path: Path, kw: dict) -> None:
    """No -wal beside it: SQLite creates an empty -wal and -shm to read it, removed at close."""
    p = tmp_path / "state.db"
    with SessionDB(p) as d:
        d.create_session("s", "cli")
        d.append_message("s", "user", "hello")
    assert not Path(f"{p}-wal").exists()
    before = folder_state(tmp_path)
    with SessionDB(p, **kw) as d:
        assert d.message_count() == 1
        assert Path(f"{p}-wal").exists()  # SQLite's, while it is open
    assert folder_state(tmp_path) == before


def test_a_wal_another_process_wrote_while_we_browsed_is_not_checkpointed(tmp_path: Path) -> None:
    p = tmp_path / "state.db"
    with SessionDB(p) as d:
        d.create_session("s", "cli")
    browser = SessionDB(p, migrate=False)
    assert browser.get_session("s")["title"] is None
    writer = apsw.Connection(str(p))  # another program: writes, then closes (not the last one)
    writer.execute("UPDATE sessions SET title = 'set by another program' WHERE id = 's'")
    writer.close()
    before = db_and_wal(p)
    assert before["wal"][0] > 0
    assert browser.get_session("s")["title"] == "set by another program"
    browser.close()  # now the last connection: SQLite's close would checkpoint and delete the -wal
    assert db_and_wal(p) == before


def test_a_look_in_progress_never_leaves_an_open_unable_to_write(tmp_path: Path) -> None:
    """SQLite shares one -shm mapping per file in a process: an open made while a look maps it
    read-only would stay read-only. The open waits for the look to end."""
    from hermes_tui.state.connection import looking

    p = tmp_path / "state.db"
    crashed(_CRASHED_STORE, p)
    outcome: list[object] = []

    def open_and_write() -> None:
        try:
            with SessionDB(p, migrate=False) as d:
                d.append_message("s0", "user", "written by a store opened during a look")
                outcome.append(d.message_count("s0"))
        except BaseException as exc:  # reported below
            outcome.append(exc)

    with looking(p) as conn:
        assert conn is not None
        assert conn.execute("SELECT count(*) FROM messages").fetchall() == [(15,)]
        t = threading.Thread(target=open_and_write)
        t.start()
        t.join(1.0)  # the open waits for the look (without the wait it wrote, or failed, by now)
    t.join(60)
    assert outcome == [6]


# ------------------------------------------------------------ repair --check (diagnose)
@pytest.mark.parametrize("layout", ["quiet", "crashed", "wal_without_shm"])
def test_diagnose_creates_and_writes_no_file(tmp_path: Path, layout: str) -> None:
    p = tmp_path / "state.db"
    if layout == "quiet":
        with SessionDB(p) as d:
            d.create_session("s", "cli")
    else:
        crashed(_CRASHED_STORE, p)
        if layout == "wal_without_shm":
            Path(f"{p}-shm").unlink()
    before = folder_state(tmp_path)
    report = diagnose(p)
    assert report["healthy"], report
    assert report["messages"] == (0 if layout == "quiet" else 15)
    assert folder_state(tmp_path) == before  # -shm included: mapped read-only


def test_diagnose_of_a_foreign_wal_file_writes_nothing(tmp_path: Path) -> None:
    p = tmp_path / "other.db"
    crashed(_CRASHED_FOREIGN, p)
    before = folder_state(tmp_path)
    assert not diagnose(p)["healthy"]
    assert folder_state(tmp_path) == before


_DIAGNOSE = r"""
import json, sys
from hermes_tui.state import diagnose
try:
    r = diagnose(sys.argv[1])
    out = {"healthy": r["healthy"], "messages": r["messages"], "error": r["error"]}
except BaseException as exc:
    out = {"raised": type(exc).__name__, "message": str(exc)}
print(json.dumps(out))
"""


def _read_only_folder(folder: Path) -> None:
    for entry in folder.iterdir():
        entry.chmod(0o444)
    folder.chmod(0o555)


@needs_privilege_drop
def test_a_read_only_folder_is_not_damage(shared_dir: Path) -> None:  # noqa: F811 - the fixture
    import json

    quiet, walonly = shared_dir / "quiet", shared_dir / "walonly"
    quiet.mkdir()
    walonly.mkdir()
    with SessionDB(quiet / "state.db") as d:
        d.create_session("s", "cli")
    crashed(_CRASHED_STORE, walonly / "state.db")
    Path(f"{walonly / 'state.db'}-shm").unlink()
    for folder in (quiet, walonly):
        _read_only_folder(folder)

    def run(path: Path) -> dict:
        proc = run_unprivileged(_DIAGNOSE, str(path))
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)

    before = folder_state(quiet), folder_state(walonly)
    assert run(quiet / "state.db") == {"healthy": True, "messages": 0, "error": None}
    out = run(walonly / "state.db")  # its -wal cannot be read there: said so, not "damaged"
    assert out["raised"] == ReadOnlyError.__name__ and "folder is read-only" in out["message"], out
    assert (folder_state(quiet), folder_state(walonly)) == before
    assert probe(quiet / "state.db", read_only=True) == {"ok": ["s"]}


def test_diagnose_falls_back_when_the_look_cannot_be_had_without_waiting_for_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A look that yields no connection must end before the usual read-only open of the same file
    (that open waits for looks to end): it waited for its own look, forever (seen in
    test_repair_crash.py after a killed repair)."""
    from hermes_tui.state import connection

    p = tmp_path / "state.db"
    crashed(_CRASHED_STORE, p)
    real = connection._try_connect

    def no_read_only_shm(path: Path, params: str, flags: int, schema_errors: list[str] | None = None):
        return None if "readonly_shm" in params else real(path, params, flags, schema_errors)

    monkeypatch.setattr(connection, "_try_connect", no_read_only_shm)
    before = folder_state(tmp_path)
    out: list[dict] = []
    t = threading.Thread(target=lambda: out.append(diagnose(p)), daemon=True)
    t.start()
    t.join(60)
    assert not t.is_alive(), "diagnose is waiting for its own look"
    assert out[0]["healthy"] and out[0]["messages"] == 15
    assert set(folder_state(tmp_path)) == set(before)  # nothing created (the fallback is mode=ro)
