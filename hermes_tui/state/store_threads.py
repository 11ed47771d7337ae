"""The threads a federation reads its stores on: a bounded pool where each store has a home.

Why a home thread per store: `SessionDB` keeps one connection per thread, so a store always read
on the same thread stays at one connection, and a cursor kept on that connection (a live
watcher's) stays valid. Why a bounded pool rather than a thread per store: with 300 profiles that
was 300 threads (606 with their live followers, 2,999 with 2,700 empty profile folders), all
contending for the GIL on two cores.

Stores open on a second bounded set of workers, each taking the next store to open as it comes
free, and are then handed to a home (the one with the fewest stores): a store that is slow to
open (locked, cold, on a network file system) holds up one opener, never the reads of the stores
already open. The opener's connection is closed once the home has its own
(`SessionDB.release_connection`), so each store keeps one connection for its reads. Searches run
on a third bounded set of threads (`SearchLanes`), so they never queue behind the list's reads,
and a new query stops what the previous ones still run there.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Mapping
from concurrent.futures import CancelledError, Future, ThreadPoolExecutor
from typing import Any, TypeVar

from .db import SessionDB

T = TypeVar("T")

#: VM steps between two checks of a search thread's progress handler: well under a millisecond of
#: SQLite work, and few enough calls into Python (each must take the GIL back from the UI thread):
#: a LIKE scan of 1M messages made 400 calls (4,000 at every 1,000 steps).
PROGRESS_STEPS = 10_000


def run_here(fn: Callable[..., T], *args: Any, **kwargs: Any) -> Future[T]:
    """`fn(*args, **kwargs)` run now on this thread, as a done future."""
    fut: Future[T] = Future()
    try:
        fut.set_result(fn(*args, **kwargs))
    except BaseException as exc:
        fut.set_exception(exc)
    return fut


class Worker:
    """One thread of a pool: a home of stores (their reads, in the order asked: `submit`), or an
    opener (`background(worker)`, the next store to open, until it returns False: nothing left;
    then the thread ends)."""

    def __init__(self, name: str, background: Callable[[Worker], bool] | None = None) -> None:
        self._tasks: deque[tuple[Future[Any], Callable[..., Any], tuple[Any, ...], dict[str, Any]]] = deque()
        self._cond = threading.Condition()
        self._closed = False
        self._background = background
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)
        self.thread.start()

    def submit(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> Future[T]:
        """Run `fn` on this thread (at once when called from it: no deadlock); a closed worker
        gives a failed future."""
        if threading.current_thread() is self.thread:
            return run_here(fn, *args, **kwargs)
        fut: Future[T] = Future()
        with self._cond:
            if self._closed:
                fut.set_exception(RuntimeError("the store's thread is closed"))
                return fut
            self._tasks.append((fut, fn, args, kwargs))
            self._cond.notify()
        return fut

    def _run(self) -> None:
        background = self._background
        while True:
            with self._cond:
                while not self._tasks and background is None and not self._closed:
                    self._cond.wait()
                if self._tasks:
                    fut, fn, args, kwargs = self._tasks.popleft()
                elif self._closed:
                    return
                else:
                    fut = None
            if fut is None:
                assert background is not None
                if not background(self):
                    return  # nothing left to open: an opener ends
                continue
            if not fut.set_running_or_notify_cancel():
                continue
            try:
                fut.set_result(fn(*args, **kwargs))
            except BaseException as exc:  # noqa: BLE001 - the caller's future carries it
                fut.set_exception(exc)

    def shutdown(self, wait: bool = True) -> None:
        """Run what was asked already, then end (no more background work)."""
        with self._cond:
            self._closed = True
            self._background = None
            self._cond.notify_all()
        if wait and threading.current_thread() is not self.thread:
            self.thread.join()


def submit_each(
    homes: Mapping[str, Worker], dbs: Mapping[str, SessionDB], calls: Mapping[str, Callable[[SessionDB], T]]
) -> dict[str, Future[T]]:
    """`calls[profile](db)` for each profile on its home thread, as one task per thread (a poll
    of 300 stores is a few thread hops, not 300). Profiles without a home are left out."""
    futures: dict[str, Future[T]] = {}
    groups: dict[Worker, list[tuple[SessionDB, Callable[[SessionDB], T], Future[T]]]] = {}
    for profile, fn in calls.items():
        home, db = homes.get(profile), dbs.get(profile)
        if home is None or db is None:
            continue
        fut: Future[T] = Future()
        futures[profile] = fut
        groups.setdefault(home, []).append((db, fn, fut))

    def run(items: list[tuple[SessionDB, Callable[[SessionDB], T], Future[T]]]) -> None:
        for db, fn, fut in items:
            if not fut.set_running_or_notify_cancel():
                continue
            try:
                fut.set_result(fn(db))
            except BaseException as exc:  # noqa: BLE001 - the caller's future carries it
                fut.set_exception(exc)

    for home, items in groups.items():
        done = home.submit(run, items)
        failed = done.exception() if done.done() else None
        if failed is not None:  # the worker is closed: every call fails
            for _db, _fn, fut in items:
                if fut.set_running_or_notify_cancel():
                    fut.set_exception(failed)
    return futures


class Token:
    """One call on a search thread; `cancelled` makes its SQLite statements abort."""

    __slots__ = ("cancelled",)

    def __init__(self) -> None:
        self.cancelled = False


class SearchLane:
    """A search thread: one worker whose connection to each store it serves has a progress
    handler that aborts the statement of a cancelled call (`sqlite3_interrupt` alone misses a
    statement that starts just after it, and would hit whatever the connection runs next)."""

    def __init__(self, name: str) -> None:
        self.current: Token | None = None
        self._installed: set[int] = set()  # id() of the stores whose connection has the handler
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)
        self.ident: int = self.executor.submit(threading.get_ident).result()

    def install(self, db: SessionDB) -> None:
        """The abort handler on this thread's connection to `db` (once; on this thread)."""
        if id(db) in self._installed:
            return
        try:
            db._conn().set_progress_handler(self._abort, PROGRESS_STEPS)
        except Exception:  # noqa: BLE001 - a closed or broken store: each call reports it
            return
        self._installed.add(id(db))

    def _abort(self) -> bool:
        token = self.current
        return token is not None and token.cancelled

    def run(self, token: Token, fn: Callable[..., T], db: SessionDB, *args: Any, **kwargs: Any) -> T:
        if token.cancelled:
            raise CancelledError
        self.install(db)
        self.current = token
        try:
            return fn(db, *args, **kwargs)
        finally:
            self.current = None


class SearchLanes:
    """Up to `size` search threads, started as stores are first searched; each store keeps the
    lane it was given (so it has one search connection, whatever the number of queries)."""

    def __init__(self, size: int) -> None:
        self.size = max(1, size)
        self._lanes: list[SearchLane] = []
        self._by_profile: dict[str, SearchLane] = {}

    def lane(self, profile: str) -> SearchLane:
        """`profile`'s lane (call under the federation's search lock)."""
        lane = self._by_profile.get(profile)
        if lane is None:
            if len(self._lanes) < self.size:
                self._lanes.append(SearchLane(f"hermes-search-{len(self._lanes)}"))
            lane = self._lanes[len(self._by_profile) % len(self._lanes)]
            self._by_profile[profile] = lane
        return lane

    def shutdown(self) -> None:
        for lane in self._lanes:  # no search still using a connection
            lane.executor.shutdown(wait=True, cancel_futures=True)
        self._lanes.clear()
        self._by_profile.clear()
