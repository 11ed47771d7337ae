"""`SessionDB.write_signal()`: readable after another process writes the store's files, not after
reads, not after writes to other files of the directory; survives the `-wal` going and coming.

Writers are real subprocesses (the stdlib `sqlite3` only ever in a subprocess)."""

from __future__ import annotations

import os
import select
import subprocess
import sys
from pathlib import Path

import pytest

from hermes_tui.state import RECHECKS_S, Recheck, SessionDB
from hermes_tui.state.write_signal import WriteSignal, write_signal, write_signals

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux's")

SQL = "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.executescript(sys.argv[2]); c.commit()"


def elsewhere(path: Path, sql: str) -> None:
    """Run `sql` on `path` in another process (its own SQLite library)."""
    subprocess.run([sys.executable, "-c", SQL, str(path), sql], check=True, timeout=60)


def readable(signal: WriteSignal, timeout: float) -> bool:
    ready, _, _ = select.select([signal], [], [], timeout)
    return bool(ready)


@pytest.fixture
def store(tmp_path: Path) -> SessionDB:
    db = SessionDB(db_path=tmp_path / "state.db")
    db.create_session("s1", source="cli")
    return db


def test_a_commit_by_another_process_signals_and_reads_do_not(store: SessionDB) -> None:
    signal = store.write_signal()
    assert isinstance(signal, WriteSignal)
    with signal:
        store.get_session("s1")  # this process reads: -wal and -shm exist, nothing is written
        elsewhere(store.db_path, "SELECT count(*) FROM messages;")  # another process reads
        assert not readable(signal, 0.3)
        assert not signal.drain()
        elsewhere(store.db_path, "UPDATE sessions SET title = 'from elsewhere' WHERE id = 's1';")
        assert readable(signal, 5)
        assert signal.drain()
        assert not readable(signal, 0.1)  # drained: quiet again until the next write
        assert not signal.drain()
    assert store.get_session("s1")["title"] == "from elsewhere"


def test_other_files_of_the_directory_wake_but_do_not_count(store: SessionDB, tmp_path: Path) -> None:
    with store.write_signal() as signal:  # type: ignore[union-attr]
        (tmp_path / "config.yaml").write_text("model: x\n")
        (tmp_path / "state.db.bak").write_bytes(b"not the store")
        assert readable(signal, 5)
        assert not signal.drain()


def test_the_wal_going_and_coming_back_still_signals(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    elsewhere(path, "PRAGMA journal_mode=WAL; CREATE TABLE t (x);")
    wal = Path(str(path) + "-wal")
    assert not wal.exists()  # the last connection's close checkpointed and removed it
    with write_signal(path) as signal:  # type: ignore[union-attr]
        elsewhere(path, "INSERT INTO t VALUES (1);")  # a new -wal, written, then removed again
        assert readable(signal, 5)
        assert signal.drain()
        elsewhere(path, "INSERT INTO t VALUES (2);")
        assert readable(signal, 5)
        assert signal.drain()


def test_a_rollback_journal_store_signals_too(tmp_path: Path) -> None:
    path = tmp_path / "plain.db"
    elsewhere(path, "PRAGMA journal_mode=DELETE; CREATE TABLE t (x);")
    with write_signal(path) as signal:  # type: ignore[union-attr]
        elsewhere(path, "INSERT INTO t VALUES (1);")
        assert readable(signal, 5)
        assert signal.drain()


def test_no_signal_where_there_is_nothing_to_watch(tmp_path: Path) -> None:
    assert write_signal(None) is None
    assert write_signal(":memory:") is None
    assert write_signal(tmp_path / "no such dir" / "state.db") is None


def test_a_commit_lost_in_an_overflowed_queue_still_signals_every_store(tmp_path: Path) -> None:
    """When the kernel's event queue overflows (`fs.inotify.max_queued_events`), the events after
    it are dropped, a commit's among them: the signal names every store it watches (the one
    store's `WriteSignal` said yes; the many stores' `WriteSignals` said none and the commit
    waited for the timer poll)."""
    limit = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
    if limit > 100_000:
        pytest.skip(f"max_queued_events is {limit}: too many files to overflow it")
    paths = []
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        paths.append(tmp_path / name / "state.db")
        elsewhere(paths[-1], "CREATE TABLE t (x);")
    signals = write_signals()
    assert signals is not None
    try:
        with write_signal(paths[0]) as one:  # type: ignore[union-attr]
            assert all(signals.add(p) for p in paths)
            for i in range(limit + 16):  # other files of a watched directory: each an event
                os.close(os.open(tmp_path / "a" / f"other-{i}", os.O_CREAT | os.O_WRONLY, 0o600))
            elsewhere(paths[0], "INSERT INTO t VALUES (1);")  # its events dropped: the queue is full
            assert signals.drain() == {str(p) for p in paths}
            assert one.drain()
    finally:
        signals.close()


def test_rechecks_space_out_after_a_signalled_poll_that_found_nothing_and_stop_when_found() -> None:
    recheck = Recheck()
    assert recheck.after_poll(woken=False, found=False) is None  # a timer poll: its own interval
    pauses = [recheck.pause(woken=True, found=False, interval=60.0)]
    pauses += [recheck.pause(woken=False, found=False, interval=60.0) for _ in RECHECKS_S]
    assert pauses == [*RECHECKS_S, 60.0]  # growing, then the interval once they run out
    assert recheck.pause(woken=True, found=False, interval=0.1) == RECHECKS_S[0]  # a write restarts
    assert recheck.pause(woken=False, found=False, interval=0.04) == 0.04  # never past the interval
    assert recheck.pause(woken=False, found=True, interval=60.0) == 60.0  # found: the series ends
    assert recheck.after_poll(woken=False, found=False) is None
