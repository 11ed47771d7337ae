"""Each store's newest-first search bounds built ahead, one store at a time, on a thread of its
own (`Federation.prepare_search`): no store's first search builds them inline."""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Sequence

from .db import SessionDB
from .store_threads import PROGRESS_STEPS


class SearchPreparation:
    """One thread building each store's newest-first search bounds in turn, so that no store's
    first search builds them inline: 0.7 s at 1M messages and 3-4 s at 10M, which the next
    keystroke's cancel would throw away (a search lane aborts its statements).

    Each build waits until `quiet_for()` (seconds since the widgets last read) reaches
    `quiet_s`, or until `hurry()` (a search asked for them). It runs on this thread's own
    connections, which a search's cancel never reaches; a search arriving meanwhile waits for
    its store's build instead of scanning again, and a store whose search got there first is
    skipped cheaply. `add` queues a store that opened since; the thread ends once the queue is
    done after `finish()` (no store will join any more). `stop()` aborts a build in progress
    (a progress handler: an interrupt alone misses a statement that starts just after it)."""

    def __init__(self, dbs: Sequence[SessionDB], quiet_for: Callable[[], float], quiet_s: float) -> None:
        self._queue: deque[SessionDB] = deque(dbs)
        self._more = threading.Condition()
        self._finished = False
        self._quiet_for = quiet_for
        self._quiet_s = quiet_s
        self._stopped = threading.Event()
        self._hurry = threading.Event()
        self._thread = threading.Thread(target=self._run, name="hermes-prepare-search", daemon=True)
        self._thread.start()

    def add(self, db: SessionDB) -> None:
        """Build `db`'s bounds too (a store that opened after this started)."""
        with self._more:
            self._queue.append(db)
            self._more.notify()

    def finish(self) -> None:
        """No store will be added any more: end once the queued ones are built."""
        with self._more:
            self._finished = True
            self._more.notify_all()

    def _next(self) -> SessionDB | None:
        with self._more:
            self._more.wait_for(lambda: bool(self._queue) or self._finished or self._stopped.is_set())
            return None if self._stopped.is_set() or not self._queue else self._queue.popleft()

    def _run(self) -> None:
        while (db := self._next()) is not None:
            while not self._hurry.is_set() and (wait := self._quiet_s - self._quiet_for()) > 0:
                self._hurry.wait(wait)
            if self._stopped.is_set():
                return
            try:
                conn = db._conn()  # this thread's own, idle once the build is done: a small cache
                conn.execute("PRAGMA cache_size = 16")  # (one pass over an index; the OS caches it)
                conn.set_progress_handler(self._stopped.is_set, PROGRESS_STEPS)
                db.prepare_search()
            except Exception:  # noqa: BLE001 - that store's first search builds it and reports
                pass

    def hurry(self) -> None:
        """Build without waiting for quiet any more."""
        self._hurry.set()

    def stop(self, timeout: float = 5.0) -> None:
        """Abort the build in progress and build no more (waits for the thread)."""
        with self._more:
            self._stopped.set()
            self._more.notify_all()
        self._hurry.set()
        self._thread.join(timeout)
