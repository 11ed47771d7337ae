"""Opening files safely: browsing never writes, the journal mode stays as found, foreign files are
never changed, and every failure is one clear `StoreError` (never a raw APSW exception)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import apsw
import pytest

from hermes_tui.state import (
    DiskFullError,
    LockTimeout,
    NotADatabaseError,
    NotAHermesStore,
    SessionDB,
    StorageError,
    StoreError,
)
from hermes_tui.state import core as core_module
from tests._unprivileged import needs_privilege_drop, run_unprivileged

BROWSE_MODES = [
    pytest.param({"migrate": False}, id="migrate_false"),
    pytest.param({"read_only": True}, id="read_only"),
    pytest.param({"read_only": True, "migrate": False}, id="read_only_migrate_false"),
]


def folder_state(folder: Path) -> dict[str, tuple[int, int, str]]:
    """Every entry of `folder`: size, mtime and content hash (sidecars appearing show up too)."""
    out = {}
    for entry in sorted(folder.iterdir()):
        st = os.lstat(entry)
        digest = hashlib.sha256(entry.read_bytes()).hexdigest() if stat.S_ISREG(st.st_mode) else "-"
        out[entry.name] = (st.st_size, st.st_mtime_ns, digest)
    return out


def journal_mode(path: Path) -> str:
    """Read (never set) the mode; read-write, since a read-only connection leaves -wal/-shm behind."""
    c = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READWRITE)
    try:
        return str(c.execute("PRAGMA journal_mode").fetchall()[0][0]).lower()
    finally:
        c.close()


def make_store(path: Path, sessions: int = 3) -> None:
    with SessionDB(path) as d:
        for i in range(sessions):
            d.create_session(f"s{i}", "cli", model="m")
            d.append_message(f"s{i}", "user", f"hello number {i}")


def to_delete_mode(path: Path) -> None:
    c = apsw.Connection(str(path))
    assert c.execute("PRAGMA journal_mode=DELETE").fetchall()[0][0] == "delete"
    c.close()


def make_foreign(path: Path, journal: str = "delete") -> None:
    c = apsw.Connection(str(path))
    c.execute(f"PRAGMA journal_mode={journal}").fetchall()
    c.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
    c.execute("INSERT INTO notes (body) VALUES ('groceries'), ('call mum')")
    c.close()


def one_line(exc: BaseException) -> str:
    text = str(exc)
    assert text and "\n" not in text
    return text


# ------------------------------------------------------------ 1. browsing never writes
@pytest.mark.parametrize("kw", BROWSE_MODES)
def test_browsing_refuses_a_zero_byte_file_and_leaves_it_alone(tmp_path: Path, kw: dict) -> None:
    p = tmp_path / "state.db"
    p.touch()
    before = folder_state(tmp_path)
    with pytest.raises(NotAHermesStore) as ei:
        SessionDB(p, **kw)
    assert one_line(ei.value) == f"{p} is empty (0 bytes): not a Hermes session store"
    assert folder_state(tmp_path) == before


@pytest.mark.parametrize("kw", BROWSE_MODES)
def test_browsing_refuses_a_text_file_and_leaves_it_alone(tmp_path: Path, kw: dict) -> None:
    p = tmp_path / "notes.txt"
    p.write_text("just some notes\n" * 500)
    before = folder_state(tmp_path)
    with pytest.raises(NotADatabaseError) as ei:
        SessionDB(p, **kw)
    assert "not an SQLite database" in one_line(ei.value)
    assert folder_state(tmp_path) == before


@pytest.mark.parametrize("kw", [*BROWSE_MODES, pytest.param({}, id="migrate_true")])
def test_a_directory_is_refused_and_nothing_created_beside_it(tmp_path: Path, kw: dict) -> None:
    p = tmp_path / "state.db"
    p.mkdir()
    before = folder_state(tmp_path)
    with pytest.raises(NotADatabaseError) as ei:
        SessionDB(p, **kw)
    assert "is a directory" in one_line(ei.value)
    assert folder_state(tmp_path) == before and list(p.iterdir()) == []


@pytest.mark.parametrize("journal", ["delete", "wal"])
@pytest.mark.parametrize("kw", BROWSE_MODES)
def test_browsing_refuses_a_foreign_sqlite_file_and_leaves_it_alone(
    tmp_path: Path, kw: dict, journal: str
) -> None:
    p = tmp_path / "other.db"
    make_foreign(p, journal)
    before = folder_state(tmp_path)
    with pytest.raises(NotAHermesStore) as ei:
        SessionDB(p, **kw)
    assert (
        one_line(ei.value) == f"{p} is an SQLite database but not a Hermes session store (no sessions table)"
    )
    assert isinstance(ei.value, NotADatabaseError)  # callers catching the broader error keep working
    assert folder_state(tmp_path) == before
    assert journal_mode(p) == journal


@pytest.mark.parametrize("kw", BROWSE_MODES)
def test_browsing_a_missing_path_creates_nothing(tmp_path: Path, kw: dict) -> None:
    p = tmp_path / "absent.db"
    with pytest.raises(StoreError) as ei:
        SessionDB(p, **kw)
    assert "does not exist" in one_line(ei.value)
    assert list(tmp_path.iterdir()) == []


def test_a_hermes_file_whose_tables_are_not_hermes_is_refused_by_browsing(tmp_path: Path) -> None:
    p = tmp_path / "web.db"
    c = apsw.Connection(str(p))
    c.execute("CREATE TABLE sessions (token TEXT PRIMARY KEY, expires REAL); CREATE TABLE messages (x)")
    c.close()
    with pytest.raises(NotAHermesStore, match="its sessions table lacks id, source"):
        SessionDB(p, migrate=False)
    with pytest.raises(NotAHermesStore, match="another application"):
        SessionDB(p)


def test_browsing_a_valid_store_still_works(tmp_path: Path) -> None:
    p = tmp_path / "state.db"
    make_store(p)
    for kw in ({"migrate": False}, {"read_only": True}):
        with SessionDB(p, **kw) as d:
            assert d.get_session("s1")["source"] == "cli"
            assert d.capabilities()["schema_version"] == 23


# ------------------------------------------------------------ 2. journal mode left as found
def test_migrate_false_writes_in_delete_mode_and_keeps_it(tmp_path: Path) -> None:
    p = tmp_path / "state.db"
    make_store(p, sessions=4)
    to_delete_mode(p)
    d = SessionDB(p, migrate=False)
    try:
        assert d.set_session_title("s0", "Renamed in delete mode")
        d.append_message("s1", "user", "appended in delete mode")
        res = d.delete_sessions_batched(["s2", "s3"], batch_messages=1)
        assert res["deleted"] == 2 and res["batches"] == 2
        errors: list[BaseException] = []

        def other_thread() -> None:  # a second connection (per thread) must not switch it either
            try:
                for i in range(60):  # past the 50-write PASSIVE checkpoint
                    d.append_message("s1", "assistant", f"thread write {i}")
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        t = threading.Thread(target=other_thread)
        t.start()
        t.join(60)
        assert errors == []
        assert d._maintainer.wait("checkpoint", 1)  # the PASSIVE checkpoint ran, harmlessly
        assert d._scalar("PRAGMA journal_mode") == "delete"
        assert not Path(f"{p}-wal").exists()
    finally:
        d.close()
    assert journal_mode(p) == "delete"
    assert not Path(f"{p}-wal").exists() and not Path(f"{p}-shm").exists()
    c = apsw.Connection(str(p), flags=apsw.SQLITE_OPEN_READONLY)
    assert c.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    c.close()
    with SessionDB(p, read_only=True) as ro:
        assert ro.get_session("s0")["title"] == "Renamed in delete mode"
        assert ro.get_session("s2") is None and ro.get_session("s3") is None
        assert ro.message_count("s1") == 62
        assert [r["id"] for r in ro.search_messages('"delete mode"')]
    assert journal_mode(p) == "delete"


def test_read_only_keeps_delete_mode(tmp_path: Path) -> None:
    p = tmp_path / "state.db"
    make_store(p)
    to_delete_mode(p)
    before = folder_state(tmp_path)
    with SessionDB(p, read_only=True) as d:
        assert d.message_count() == 3
    assert folder_state(tmp_path) == before


def test_migrate_true_switches_a_hermes_store_to_wal_as_upstream(tmp_path: Path) -> None:
    p = tmp_path / "state.db"
    make_store(p)
    to_delete_mode(p)
    with SessionDB(p) as d:
        assert d._scalar("PRAGMA journal_mode") == "wal"
    assert journal_mode(p) == "wal"


def test_a_newer_store_in_delete_mode_is_left_untouched_by_migrate_true(tmp_path: Path) -> None:
    p = tmp_path / "state.db"
    make_store(p)
    c = apsw.Connection(str(p))
    c.execute("UPDATE schema_version SET version = 31")
    c.execute("PRAGMA journal_mode=DELETE").fetchall()
    c.close()
    before = folder_state(tmp_path)
    with SessionDB(p) as d:
        assert d.capabilities()["schema_version"] == 31
    assert folder_state(tmp_path) == before


# ------------------------------------------------------------ 3. foreign files are never changed
@pytest.mark.parametrize("journal", ["delete", "wal"])
def test_migrate_true_refuses_a_foreign_database_and_writes_nothing(tmp_path: Path, journal: str) -> None:
    p = tmp_path / "notes.db"
    make_foreign(p, journal)
    before = folder_state(tmp_path)
    with pytest.raises(NotAHermesStore) as ei:
        SessionDB(p)
    msg = one_line(ei.value)
    assert (
        "another application (notes)" in msg and "nothing was written" in msg and "adopt_foreign=True" in msg
    )
    assert folder_state(tmp_path) == before
    assert journal_mode(p) == journal


def test_adopt_foreign_adds_the_hermes_tables_and_keeps_the_rest(tmp_path: Path) -> None:
    p = tmp_path / "notes.db"
    make_foreign(p)
    with SessionDB(p, adopt_foreign=True) as d:
        d.create_session("s", "cli")
        d.append_message("s", "user", "adopted")
        assert d.capabilities()["schema_version"] == 23
        assert d._tuples("SELECT body FROM notes ORDER BY id") == [("groceries",), ("call mum",)]
    with SessionDB(p) as d:  # now a Hermes store: opens without the flag
        assert d.message_count("s") == 1


def test_an_sqlite_file_marked_by_another_application_is_foreign(tmp_path: Path) -> None:
    p = tmp_path / "marked.db"
    c = apsw.Connection(str(p))
    c.execute("PRAGMA application_id = 1234")
    c.close()
    before = folder_state(tmp_path)
    with pytest.raises(NotAHermesStore, match="another application"):
        SessionDB(p)
    assert folder_state(tmp_path) == before


@pytest.mark.parametrize("make", ["zero_bytes", "empty_sqlite", "new_path"])
def test_an_empty_file_or_new_path_is_initialised(tmp_path: Path, make: str) -> None:
    p = tmp_path / "sub" / "state.db" if make == "new_path" else tmp_path / "state.db"
    if make == "zero_bytes":
        p.touch()
    elif make == "empty_sqlite":
        c = apsw.Connection(str(p))
        c.execute("VACUUM")
        c.close()
    with SessionDB(p) as d:
        d.create_session("s", "cli")
        assert d.capabilities()["schema_version"] == 23
    assert journal_mode(p) == "wal"


@pytest.mark.parametrize("kw", [*BROWSE_MODES, pytest.param({}, id="migrate_true")])
def test_a_dangling_symlink_is_refused_and_its_target_never_created(tmp_path: Path, kw: dict) -> None:
    link = tmp_path / "state.db"
    target = tmp_path / "elsewhere" / "real.db"
    target.parent.mkdir()
    link.symlink_to(target)
    with pytest.raises(StorageError) as ei:
        SessionDB(link, **kw)
    assert "symbolic link" in one_line(ei.value) and str(target) in str(ei.value)
    assert not target.exists() and list(target.parent.iterdir()) == []
    assert link.is_symlink()


def test_a_symlink_to_a_store_still_opens(tmp_path: Path) -> None:
    real = tmp_path / "real.db"
    make_store(real)
    link = tmp_path / "state.db"
    link.symlink_to(real)
    with SessionDB(link, migrate=False) as d:
        d.append_message("s0", "user", "through the link")
    with SessionDB(real, read_only=True) as d:
        assert d.message_count("s0") == 2


# ------------------------------------------------------------ 4. every failure is one StoreError
def test_disk_full_in_the_write_path_is_a_store_error_and_rolls_back(tmp_path: Path) -> None:
    p = tmp_path / "state.db"
    make_store(p)
    with SessionDB(p) as d:
        conn = d._conn()
        pages = conn.execute("PRAGMA page_count").fetchall()[0][0]
        conn.execute(f"PRAGMA max_page_count = {pages}").fetchall()
        with pytest.raises(DiskFullError) as ei:
            d.append_message("s0", "user", "x" * 200_000)
        assert "disk is full" in one_line(ei.value) and not isinstance(ei.value, apsw.Error)
        assert d.message_count("s0") == 1  # rolled back
        conn.execute("PRAGMA max_page_count = 1073741823").fetchall()
        d.append_message("s0", "user", "fits again")
        assert d.message_count("s0") == 2


def test_disk_full_while_initialising_is_a_store_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_open = core_module.open_connection

    def tiny_disk(path: Path, *, read_only: bool) -> apsw.Connection:
        conn = real_open(path, read_only=read_only)
        conn.execute("PRAGMA max_page_count = 2").fetchall()  # SQLITE_FULL at the 3rd page
        return conn

    monkeypatch.setattr(core_module, "open_connection", tiny_disk)
    with pytest.raises(DiskFullError):
        SessionDB(tmp_path / "state.db")


def test_io_error_at_open_and_in_the_write_path(tmp_path: Path) -> None:
    """A -journal that is a folder: SQLite reports a disk I/O error on every lock it takes."""
    p = tmp_path / "state.db"
    make_store(p)
    to_delete_mode(p)
    journal = Path(f"{p}-journal")
    journal.mkdir()
    for kw in ({}, {"migrate": False}, {"read_only": True}):
        with pytest.raises(StorageError) as ei:
            SessionDB(p, **kw)
        assert "disk I/O error" in one_line(ei.value)
    journal.rmdir()
    with SessionDB(p, migrate=False) as d:
        journal.mkdir()
        with pytest.raises(StorageError, match="disk I/O error"):
            d.append_message("s0", "user", "cannot be journalled")
        journal.rmdir()
        d.append_message("s0", "user", "journalled")
        assert d.message_count("s0") == 2


def test_cannot_open_when_the_wal_is_a_folder(tmp_path: Path) -> None:
    p = tmp_path / "state.db"
    make_store(p)
    Path(f"{p}-wal").mkdir()
    for kw in ({}, {"migrate": False}, {"read_only": True}):
        with pytest.raises(StorageError) as ei:
            SessionDB(p, **kw)
        assert "unable to open" in one_line(ei.value)


def test_a_path_under_a_file_is_a_store_error(tmp_path: Path) -> None:
    (tmp_path / "file.txt").write_text("x")
    for kw in ({}, {"migrate": False}, {"read_only": True}):
        with pytest.raises(StorageError) as ei:
            SessionDB(tmp_path / "file.txt" / "state.db", **kw)
        assert "not a folder" in one_line(ei.value)


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    p = tmp_path / "state.db"
    os.mkfifo(p)
    for kw in ({}, {"migrate": False}, {"read_only": True}):
        with pytest.raises(NotADatabaseError, match="not a regular file"):
            SessionDB(p, **kw)


def test_a_lock_held_through_the_open_is_a_lock_timeout(tmp_path: Path) -> None:
    p = tmp_path / "state.db"
    make_store(p)
    to_delete_mode(p)
    holder = apsw.Connection(str(p))
    holder.execute("BEGIN EXCLUSIVE")
    holder.execute("INSERT INTO state_meta(key, value) VALUES ('held', '1')")
    try:
        with pytest.raises(LockTimeout) as ei:
            SessionDB(p, migrate=False)
        assert "locked" in one_line(ei.value)
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_a_constraint_failure_stays_an_integrity_error(tmp_path: Path) -> None:
    from hermes_tui.state import IntegrityError

    with SessionDB(tmp_path / "state.db") as d:
        with pytest.raises(IntegrityError) as ei:
            d._execute_write(
                lambda c: c.execute(
                    "INSERT INTO messages (session_id, role, timestamp) VALUES ('nobody', 'user', 1)"
                )
            )
        assert "FOREIGN KEY" in one_line(ei.value)


def test_any_other_sqlite_error_in_the_write_path_is_a_store_error(tmp_path: Path) -> None:
    with SessionDB(tmp_path / "state.db") as d:
        with pytest.raises(StoreError) as ei:
            d._execute_write(lambda c: c.execute("INSERT INTO no_such_table VALUES (1)"))
        assert not isinstance(ei.value, apsw.Error) and "no such table" in one_line(ei.value)


# ------------------------------------------------------------ permissions (as an unprivileged user)
_PROBE = r"""
import json, sys
from hermes_tui.state import SessionDB
path, kw = sys.argv[1], json.loads(sys.argv[2])
try:
    with SessionDB(path, **kw) as d:
        out = {"ok": [r[0] for r in d._tuples("SELECT id FROM sessions ORDER BY id")]}
except BaseException as exc:
    out = {"error": type(exc).__name__, "module": type(exc).__module__, "message": str(exc)}
print(json.dumps(out))
"""


def probe(path: Path, **kw: object) -> dict:
    """Open `path` in a subprocess as an unprivileged user (root ignores permissions)."""
    proc = run_unprivileged(_PROBE, str(path), json.dumps(kw))
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A folder the unprivileged user can reach (pytest's tmp_path is private to root)."""
    d = Path(tempfile.mkdtemp(prefix="hermes-open-safety-", dir="/tmp"))
    d.chmod(0o755)
    try:
        yield d
    finally:
        for root, dirs, _files in os.walk(d):
            for name in dirs:
                os.chmod(os.path.join(root, name), 0o755)
        d.chmod(0o755)
        shutil.rmtree(d, ignore_errors=True)


def _read_only_folder(folder: Path) -> None:
    for entry in folder.iterdir():
        entry.chmod(0o444)
    folder.chmod(0o555)


@needs_privilege_drop
def test_a_wal_store_in_a_read_only_folder_is_read_without_its_shm(shared_dir: Path) -> None:
    folder = shared_dir / "ro"
    folder.mkdir()
    p = folder / "state.db"
    make_store(p)
    assert journal_mode(p) == "wal" and not Path(f"{p}-wal").exists()
    _read_only_folder(folder)
    before = folder_state(folder)
    assert probe(p, read_only=True) == {"ok": ["s0", "s1", "s2"]}
    assert folder_state(folder) == before
    out = probe(p, migrate=False)
    assert out["error"] == "ReadOnlyError" and "read_only=True" in out["message"]


@needs_privilege_drop
def test_a_wal_with_pending_pages_in_a_read_only_folder_is_explained(shared_dir: Path) -> None:
    folder = shared_dir / "ro"
    folder.mkdir()
    src = shared_dir / "live.db"
    make_store(src)
    with SessionDB(src) as d:
        d.append_message("s0", "user", "only in the WAL")
        shutil.copy(src, folder / "state.db")
        shutil.copy(f"{src}-wal", folder / "state.db-wal")
    _read_only_folder(folder)
    before = folder_state(folder)
    out = probe(folder / "state.db", read_only=True)
    assert out["error"] == "ReadOnlyError" and out["module"] == "hermes_tui.state.errors", out
    assert "folder is read-only" in out["message"] and "-shm" in out["message"]
    assert folder_state(folder) == before


@needs_privilege_drop
def test_permission_problems_are_store_errors(shared_dir: Path) -> None:
    folder = shared_dir / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    out = probe(folder / "new.db")
    assert out["error"] == "ReadOnlyError" and "cannot create" in out["message"]
    secret = shared_dir / "secret.db"
    make_store(secret)
    secret.chmod(0o000)
    for kw in ({}, {"migrate": False}, {"read_only": True}):
        out = probe(secret, **kw)
        assert out["error"] == "ReadOnlyError" and "permission denied" in out["message"], out
