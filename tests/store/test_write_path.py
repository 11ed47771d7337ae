"""The write path: contention (T73), lock_wait_hook, read-only stores, non-SQLite files."""

from __future__ import annotations

import threading
import time

import apsw
import pytest
from conftest import count

from hermes_tui.state import LockTimeout, NotADatabaseError, ReadOnlyError, SessionDB
from tests._wait import WAIT_S, wait_until


def hold_lock(path, seconds, ready: threading.Event, releasing: threading.Event | None = None):
    conn = apsw.Connection(str(path))
    conn.execute("BEGIN IMMEDIATE")
    ready.set()
    time.sleep(seconds)  # the scenario: another process holding the lock this long
    if releasing is not None:
        releasing.set()  # before the commit: a write that waited for it returns after this
    conn.execute("COMMIT")
    conn.close()


def test_t73_waits_for_the_lock(db, db_path):
    db.create_session("s", "cli")
    waits = []
    db.lock_wait_hook = lambda attempt, waited: waits.append((attempt, waited))
    ready, releasing = threading.Event(), threading.Event()
    t = threading.Thread(target=hold_lock, args=(db_path, 1.5, ready, releasing), daemon=True)
    t.start()
    assert ready.wait(WAIT_S)
    mid = db.append_message("s", "user", "after the lock")
    assert releasing.is_set()  # it waited for the holder (longer than one busy wait), not failed
    t.join(WAIT_S)
    assert mid == 1
    assert waits and waits[0][0] == 1
    assert [w[0] for w in waits] == list(range(1, len(waits) + 1))


def test_t73_lock_timeout(db, db_path):
    db.create_session("s", "cli")
    db._WRITE_MAX_RETRIES = 3
    ready = threading.Event()
    t = threading.Thread(target=hold_lock, args=(db_path, 5.0, ready), daemon=True)
    t.start()
    assert ready.wait(5)
    attempts: list[int] = []
    db.lock_wait_hook = lambda attempt, _waited: attempts.append(attempt)
    with pytest.raises(LockTimeout):
        db.append_message("s", "user", "never")
    assert attempts == [1, 2, 3]  # gave up after its 3 attempts, not when the 5 s hold ended
    assert count(db, "messages") == 0
    assert db.get_session("s")["message_count"] == 0


def test_busy_handler_polls_fast_and_gives_up_after_the_timeout(monkeypatch):
    from hermes_tui.state import connection

    clock = [100.0]
    sleeps: list[float] = []
    monkeypatch.setattr(connection.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(connection.time, "sleep", sleeps.append)
    handler = connection.busy_handler(1000)
    assert handler(0) is True
    clock[0] += 0.5
    assert handler(1) is True
    clock[0] += 0.499
    assert handler(2) is True
    clock[0] += 0.002
    assert handler(3) is False  # a second has passed since the first call for this lock
    assert handler(0) is True  # a new lock: the clock restarts
    assert all(0.001 <= s <= 0.004 for s in sleeps) and len(sleeps) == 4


def test_a_lock_released_during_the_busy_wait_is_taken_in_that_wait(db, db_path, monkeypatch):
    """The holder lets go while the writer waits in its busy handler: the write goes through in
    that same wait (no BusyError, no 20-150 ms retry). How fast the handler polls is
    `test_busy_handler_polls_fast_and_gives_up_after_the_timeout` (injected clock)."""
    from hermes_tui.state import connection

    db.create_session("s", "cli")
    waiting, released = threading.Event(), threading.Event()
    real = connection.busy_handler

    def watched(timeout_ms: int = connection.BUSY_TIMEOUT_MS):
        handler = real(timeout_ms)

        def first_waits_for_the_release(prior_calls: int) -> bool:
            if prior_calls == 0:  # the writer is waiting: the holder lets go now (its clock
                waiting.set()  # starts after this, so a slow machine never makes it a retry)
                released.wait(WAIT_S)
            return handler(prior_calls)

        return first_waits_for_the_release

    monkeypatch.setattr(connection, "busy_handler", watched)  # the writer thread's new connection
    retries: list[int] = []
    db.lock_wait_hook = lambda attempt, _waited: retries.append(attempt)
    holder = apsw.Connection(str(db_path))
    holder.execute("BEGIN IMMEDIATE")
    written: list[int] = []
    writer = threading.Thread(target=lambda: written.append(db.append_message("s", "user", "after a hold")))
    writer.start()
    try:
        wait_until(waiting.is_set, "the writer waits for the lock in its busy handler")
        holder.execute("COMMIT")
    finally:
        released.set()
        holder.close()
    writer.join(WAIT_S)
    assert written == [1]
    assert retries == []  # inside the one busy-handler wait


def test_read_only_refuses_writes(db, db_path):
    db.create_session("s", "cli")
    db.append_message("s", "user", "x")
    db.close()
    mtime = db_path.stat().st_mtime_ns
    ro = SessionDB(db_path=db_path, read_only=True)
    try:
        for op in (
            lambda: ro.create_session("n", "cli"),
            lambda: ro.append_message("s", "user", "y"),
            lambda: ro.set_session_title("s", "t"),
            lambda: ro.delete_session("s"),
        ):
            with pytest.raises(ReadOnlyError):
                op()
        assert ro.get_session("n") is None
        assert ro.message_count() == 1
        assert ro.capabilities()["read_only"] is True
    finally:
        ro.close()
    assert db_path.stat().st_mtime_ns == mtime


def test_not_a_database(tmp_path):
    p = tmp_path / "state.db"
    p.write_bytes(b"this is certainly not an sqlite file" * 100)
    before = p.read_bytes()
    with pytest.raises(NotADatabaseError):
        SessionDB(db_path=p)
    assert p.read_bytes() == before


def test_rollback_on_error_inside_write(db):
    db.create_session("s", "cli")

    def boom(c):
        c.execute("INSERT INTO state_meta(key, value) VALUES ('x', 'y')")
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        db._execute_write(boom)
    assert db.get_meta("x") is None
    db.set_meta("x", "z")  # the connection is usable afterwards
    assert db.get_meta("x") == "z"


def test_data_version_changes_on_foreign_commit(db, db_path):
    v0 = db.data_version()
    other = apsw.Connection(str(db_path))
    other.execute("INSERT INTO state_meta(key, value) VALUES ('o', '1')")
    other.close()
    assert db.data_version() != v0


def test_threads_get_their_own_connection(db):
    db.create_session("s", "cli")
    errors = []

    def work(n):
        try:
            for i in range(10):
                db.append_message("s", "user", f"t{n} {i}")
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    ts = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(20)
    assert errors == []
    assert db.get_session("s")["message_count"] == 40 and count(db, "messages") == 40


def test_a_second_open_keeps_the_first_connections_locks(db, db_path):
    """Opening another SessionDB on a file we already hold must not drop our POSIX locks: if it
    did, another process closing its connection would think it was the last one and delete the
    WAL and shm under us (the next read fails with a disk I/O error)."""
    import subprocess
    import sys
    from pathlib import Path

    db.create_session("s", "cli")
    db.append_message("s", "user", "kept in the WAL")
    second = SessionDB(db_path)
    second.close()  # the second store's own connections go; the first must keep its locks
    code = (
        "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute('SELECT 1 FROM "
        "sessions').fetchall(); c.close()"
    )
    subprocess.run([sys.executable, "-c", code, str(db_path)], check=True, timeout=30)
    assert Path(str(db_path) + "-wal").exists() and Path(str(db_path) + "-shm").exists()
    assert db.get_messages("s")[0]["content"] == "kept in the WAL"


def test_every_50th_write_checkpoints_passively_off_the_callers_thread(db, db_path):
    db.create_session("ck", "cli")
    marker = "checkpoint-marker-7f3a"
    every = db._CHECKPOINT_EVERY_N_WRITES
    # Opening a new file is a write (the schema) too: count from the store's own tally, up to
    # the write just before a checkpoint is due (a fixed 49 here raced the upkeep thread).
    i = 0
    while db._write_count % every != every - 1:
        db.append_message("ck", "user", f"{marker} {i}")
        i += 1
    assert db._maintainer.completed["checkpoint"] == 0
    assert marker.encode() not in db_path.read_bytes()  # still only in the WAL
    db.append_message("ck", "user", f"{marker} last")  # the 50th write
    assert db._maintainer.wait("checkpoint", 1)
    assert marker.encode() in db_path.read_bytes()  # the checkpoint copied the pages into the file
    thread = db._maintainer._thread
    assert thread is not None and thread.name == "hermes-tui-upkeep" and thread.is_alive()
    db.close()
    assert not thread.is_alive()


def test_a_write_that_waited_for_the_lock_steps_back_before_the_next(db, db_path, monkeypatch):
    db.create_session("y", "cli")
    db.append_message("y", "user", "uncontended")
    assert db._contended is False
    ready = threading.Event()
    t = threading.Thread(target=hold_lock, args=(db_path, 0.05, ready), daemon=True)
    t.start()
    ready.wait(5)
    db.append_message("y", "user", "waited for the other writer")
    t.join()
    assert db._contended is True
    sleeps = []
    real_sleep = time.sleep
    monkeypatch.setattr("hermes_tui.state.core.time.sleep", lambda s: (sleeps.append(s), real_sleep(s)))
    db.append_message("y", "user", "steps back first")
    assert len(sleeps) == 1 and 0.001 <= sleeps[0] <= 0.004
    assert db._contended is False
    db.append_message("y", "user", "no step back now")
    assert len(sleeps) == 1
