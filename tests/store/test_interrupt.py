"""`interrupt()` aborts reads only: a superseded search stops, a write in flight never rolls back."""

from __future__ import annotations

import threading
from pathlib import Path

import apsw

from hermes_tui.state import SessionDB
from tests._wait import wait_until

BOUNDED_READ = (
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 2000000) SELECT count(*) FROM c"
)
LONG_READ = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"


def _run(fn, box: dict) -> threading.Thread:
    def target() -> None:
        box["ident"] = threading.get_ident()
        box["started"].set()
        try:
            box["result"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            box["error"] = exc

    box["started"] = threading.Event()
    t = threading.Thread(target=target)
    t.start()
    box["started"].wait(5)
    return t


def _wait_running(db: SessionDB, ident: int) -> None:
    """Until the thread's connection exists (its query is about to run or running)."""

    def opened() -> bool:
        with db._conns_lock:
            return ident in db._conn_by_thread

    wait_until(opened, "the reader opened its connection")


def test_interrupt_one_thread_aborts_its_read(tmp_path: Path) -> None:
    db = SessionDB(tmp_path / "state.db")
    try:
        box: dict = {}
        t = _run(lambda: db._scalar(LONG_READ), box)
        _wait_running(db, box["ident"])
        deadline = threading.Event()
        while t.is_alive() and not deadline.wait(0.05):
            db.interrupt(box["ident"])
        t.join(10)
        assert isinstance(box.get("error"), apsw.InterruptError), box
        assert db.interrupt(123456789) == 0  # a thread that never opened a connection
    finally:
        db.close()


def test_interrupt_all_spares_a_write_in_flight(tmp_path: Path) -> None:
    db = SessionDB(tmp_path / "state.db")
    try:
        db.create_session("s", "cli")
        in_write = threading.Event()
        release = threading.Event()

        def slow_write(conn: apsw.Connection) -> None:
            conn.execute("UPDATE sessions SET title = 'kept' WHERE id = 's'")
            in_write.set()
            conn.execute(BOUNDED_READ).fetchall()  # a statement running inside the write

        box: dict = {}
        t = _run(lambda: db._execute_write(slow_write), box)
        assert in_write.wait(10)
        while t.is_alive():  # every connection, repeatedly: the writer's is skipped each time
            db.interrupt()
            release.wait(0.01)
        t.join(10)
        assert "error" not in box, box
        assert db.get_session("s")["title"] == "kept"
    finally:
        db.close()
