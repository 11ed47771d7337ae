"""A file descriptor that becomes readable when some program writes the store's files.

Why: a follower that only polls on a timer draws at moments unrelated to the agents' writes, and
on a 2-core machine a draw that lands on an agent's append doubles that append's p99 (measured
in `bench/live_app_bench.py`: 4.0 ms against 2.1 alone, the same whether the browser drew five
times a second or once). Woken within a millisecond or two of each commit, the browser reads and
draws in the pause right after it, when the agent has just finished.

How: Linux inotify on the store's directory (the `-wal` and `-journal` files come and go, so the
directory is watched, not the files), for writes to the database, its `-wal` and its `-journal`.
Every write of a transaction makes an event, commits and uncommitted pages alike; the caller
confirms with `PRAGMA data_version` (`SessionDB.data_version`, or a `ChangeWatcher` poll).
SQLite writes pages with `write()`, which inotify sees; what it changes through `mmap` (the
`-shm` index) it does not, and readers only touch the `-shm`, so reading never wakes anyone.

A hint, never the only source: inotify misses writes made on another machine (NFS, a shared
mount) and is absent outside Linux. Followers keep polling on their timer as well.
"""

from __future__ import annotations

import os
import select
import sys
import time
from pathlib import Path
from typing import Any

#: The files whose writes mean "maybe a commit": the database, its WAL and its rollback journal.
SUFFIXES = ("", "-wal", "-journal")
#: The watch descriptor of inotify's "queue overflowed" event (`IN_Q_OVERFLOW`, no file name).
OVERFLOW_WD = -1
#: After a write, wait this long before saying so: a transaction writes its pages within ~1 ms,
#: so one poll then sees the commit instead of one poll per page.
SETTLE_S = 0.002


#: A poll woken by a write that found nothing polls again at these delays (each after the poll
#: before it found nothing): the signal sees the commit's last WAL frame being written, but the
#: commit is published a moment after, in the `-shm` index (written through mmap, which makes no
#: event). On a busy machine the publication can come later than one short recheck (a single
#: 20 ms one missed it under load, and the commit then waited for the next tick: in tests, a
#: minute), so the rechecks space out; each is one `PRAGMA data_version`. Every follower (the
#: browser's, the federated one and the CLI's) uses them through `Recheck`.
RECHECKS_S = (0.02, 0.05, 0.1, 0.2, 0.5, 1.0)


class Recheck:
    """When a follower polls again after a poll, given whether a write signal woke that poll
    and whether it found anything: the next of `RECHECKS_S`, or None (the follower's own
    interval). A poll that found something, or the delays run out, ends the series; a poll a
    write woke starts it again."""

    def __init__(self, delays: tuple[float, ...] = RECHECKS_S) -> None:
        self.delays = delays
        self._next = len(delays)  # no series running

    def after_poll(self, woken: bool, found: bool) -> float | None:
        if found:
            self._next = len(self.delays)
            return None
        if woken:
            self._next = 0
        if self._next >= len(self.delays):
            return None
        delay = self.delays[self._next]
        self._next += 1
        return delay

    def pause(self, woken: bool, found: bool, interval: float) -> float:
        """The pause before the next poll: a recheck's delay, never longer than ``interval``."""
        delay = self.after_poll(woken, found)
        return interval if delay is None else min(delay, interval)


class WriteSignals:
    """One inotify instance for the files of many stores (`add`): `wait` says which were written.

    A browser over 300 profiles would otherwise need 300 inotify instances, more than Linux
    gives a user by default (`fs.inotify.max_user_instances` is 128): one instance with a watch
    per directory stays within the default limits (watches: 8,192 and more)."""

    def __init__(self) -> None:
        from inotify_simple import INotify  # Linux only (see `write_signals`)

        self._inotify = INotify(nonblocking=True)
        #: Watch descriptor → {file name of the store or its sidecars: the store's path}.
        self._names: dict[int, dict[str, str]] = {}

    def add(self, db_path: str | os.PathLike[str]) -> bool:
        """Watch the store at `db_path` too; False where its directory cannot be watched (the
        caller's timer polls still find its commits)."""
        try:
            self.watch(db_path)
        except OSError:
            return False
        return True

    def watch(self, db_path: str | os.PathLike[str]) -> None:
        """`add`, raising the `OSError` where the directory cannot be watched."""
        from inotify_simple import flags

        path = Path(db_path)
        wd = self._inotify.add_watch(path.parent, flags.MODIFY | flags.CREATE | flags.MOVED_TO)
        names = self._names.setdefault(wd, {})
        for suffix in SUFFIXES:
            names[path.name + suffix] = str(path)

    def fileno(self) -> int:
        return self._inotify.fileno()

    def drain(self) -> set[str]:
        """Read every pending event without blocking: the stores whose files were written."""
        hit: set[str] = set()
        while True:
            try:
                events = self._inotify.read(timeout=0)
            except BlockingIOError:
                break
            if not events:
                break
            for event in events:
                if event.wd == OVERFLOW_WD:  # the kernel dropped events: any store may be written
                    hit.update(path for names in self._names.values() for path in names.values())
                    continue
                names = self._names.get(event.wd, {})
                if not event.name:  # the directory itself: any of its stores
                    hit.update(names.values())
                elif event.name in names:
                    hit.add(names[event.name])
        return hit

    def wait(self, timeout: float, also: Any = None, settle_s: float = SETTLE_S) -> set[str]:
        """The stores written (`settle_s` after the first write seen), or an empty set when
        `also` became readable or `timeout` passed. Writes to other files are read and ignored."""
        deadline = time.monotonic() + timeout
        fds = [self] if also is None else [self, also]
        while (left := deadline - time.monotonic()) > 0:
            try:
                readable, _, _ = select.select(fds, [], [], left)
            except (OSError, ValueError):  # `also` closed meanwhile: its owner is stopping
                return set()
            if not readable or (also is not None and also in readable):
                return set()
            time.sleep(settle_s)
            hit = self.drain()
            if hit:
                return hit
        return set()

    def close(self) -> None:
        self._inotify.close()


class WriteSignal:
    """Readable (`fileno()`) after a write to one store's files; `drain()` resets it.

    A `WriteSignals` watching one store, its answers read as yes/no: one implementation of the
    watch, the event matching and the wait, whether a follower watches one store or many."""

    def __init__(self, db_path: str | os.PathLike[str]) -> None:
        self._signals = WriteSignals()
        try:
            self._signals.watch(db_path)
        except OSError:
            self._signals.close()
            raise

    def fileno(self) -> int:
        return self._signals.fileno()

    def drain(self) -> bool:
        """Read every pending event without blocking: did any concern the store's files?"""
        return bool(self._signals.drain())

    def wait(self, timeout: float, also: Any = None, settle_s: float = SETTLE_S) -> bool:
        """Until the store's files are written (True, `settle_s` after the write), `also` (a file
        descriptor or an object with `fileno()`) is readable, or `timeout` s pass (False).
        Writes to other files of the directory are read and ignored."""
        return bool(self._signals.wait(timeout, also, settle_s))

    def close(self) -> None:
        self._signals.close()

    def __enter__(self) -> WriteSignal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def write_signals() -> WriteSignals | None:
    """A `WriteSignals`, or None where there is none to be had (not Linux, no inotify, or the
    user's inotify instances used up): the caller then only polls."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return WriteSignals()
    except (ImportError, OSError):
        return None


def write_signal(db_path: str | os.PathLike[str] | None) -> WriteSignal | None:
    """A `WriteSignal` for the store at `db_path`, or None where there is none to be had: not
    Linux, an in-memory store, a directory that cannot be watched, or the user's inotify limits
    reached (`fs.inotify.max_user_instances`/`max_user_watches`): the caller then only polls."""
    if not sys.platform.startswith("linux") or db_path is None or str(db_path) in ("", ":memory:"):
        return None
    try:
        return WriteSignal(db_path)
    except (ImportError, OSError):
        return None
