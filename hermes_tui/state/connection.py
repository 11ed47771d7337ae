"""Opening one APSW connection: file checks, permissions, pragmas, tokenizer.

Every connection of the store is made here, so they all agree: WAL (never downgraded),
`foreign_keys=ON`, a 1 s busy timeout (fast-polling, see `busy_handler`), and the `cjk_unicode61` tokenizer registered — a
database carrying cjk triggers refuses every message insert from a connection without it.
"""

from __future__ import annotations

import contextlib
import os
import random
import stat
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

import apsw

from .errors import NotADatabaseError, ReadOnlyError, StoreError
from .schema import BUSY_TIMEOUT_MS

BUSY_POLL_S = (0.001, 0.004)  # how often a blocked connection retries the lock (random in range)


def busy_handler(timeout_ms: int = BUSY_TIMEOUT_MS) -> Callable[[int], bool]:
    """A busy handler with SQLite's timeout semantics but fast, jittered polling.

    SQLite's own handler backs off to 100 ms sleeps, and a lock is only taken when a poll lands
    in the gap between two of another writer's transactions; with several writers appending,
    one could lose every poll for a second (p99 539 ms at 4 writers). Polling every 1–4 ms
    keeps waits near the other writers' transaction time. Gives up after `timeout_ms`.
    """
    started = [0.0]
    limit = timeout_ms / 1000

    def handler(prior_calls: int) -> bool:
        now = time.monotonic()
        if prior_calls == 0:
            started[0] = now
        elif now - started[0] >= limit:
            return False
        time.sleep(random.uniform(*BUSY_POLL_S))
        return True

    return handler


def check_sqlite_file(path: Path) -> bool:
    """True if `path` exists and is non-empty; raise if it is a folder or unreadable.

    Never opens the file itself: closing *any* descriptor on a database releases every POSIX
    lock this process holds on it (SQLite's "how to corrupt" §2.2), so a header read here while
    another connection of ours had the file open let other processes delete its WAL from under
    it. Whether the content is SQLite is left to SQLite's own open (`NotADBError`).
    """
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return False
    except PermissionError as exc:
        raise ReadOnlyError(f"cannot read {path}: permission denied") from exc
    if stat.S_ISDIR(st.st_mode):
        raise NotADatabaseError(f"{path} is a directory, not an SQLite database")
    if not os.access(path, os.R_OK):
        raise ReadOnlyError(f"cannot read {path}: permission denied")
    return st.st_size > 0


def create_private_file(path: Path) -> None:
    """Create a new empty database file with mode 0600 (never reopening an existing one)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except PermissionError as exc:
        raise ReadOnlyError(f"cannot create folder {path.parent}: permission denied") from exc
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except FileExistsError:
        return
    except PermissionError as exc:
        raise ReadOnlyError(f"cannot create {path}: folder is not writable") from exc
    os.close(fd)


def tighten_sidecars(path: Path) -> None:
    """chmod 0600 the -wal/-shm of a database we created (regular files only, never links)."""
    for suffix in ("-wal", "-shm"):
        side = Path(str(path) + suffix)
        with contextlib.suppress(OSError):
            st = os.lstat(side)
            if stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) != 0o600:
                os.chmod(side, 0o600)


def open_connection(path: Path, *, read_only: bool) -> apsw.Connection:
    """A configured connection; translates SQLite's open errors into the store's."""
    try:
        if read_only:
            uri = "file:" + quote(str(path)) + "?mode=ro"
            conn = apsw.Connection(uri, flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
        else:
            conn = apsw.Connection(
                "file:" + quote(str(path)),
                flags=apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE | apsw.SQLITE_OPEN_URI,
            )
        conn.set_busy_handler(busy_handler())
        # Touch the schema so "not a database" and "cannot open" surface here.
        conn.execute("SELECT count(*) FROM sqlite_master").fetchall()
    except apsw.NotADBError as exc:
        raise NotADatabaseError(f"{path} is not an SQLite database (SQLite: {str(exc).removeprefix('NotADBError: ')})") from exc
    except apsw.CorruptError as exc:
        raise NotADatabaseError(f"{path} is corrupt: {exc}") from exc
    except apsw.CantOpenError as exc:
        raise StoreError(f"unable to open database file {path}") from exc
    if not read_only:
        _enable_wal(conn)
        conn.execute("PRAGMA foreign_keys=ON")
    return conn


def _enable_wal(conn: apsw.Connection) -> None:
    """WAL unless the filesystem cannot do it; never downgrade a database already in WAL."""
    mode = conn.execute("PRAGMA journal_mode").fetchall()[0][0]
    if str(mode).lower() == "wal":
        return
    try:
        conn.execute("PRAGMA journal_mode=WAL").fetchall()
    except apsw.ReadOnlyError as exc:
        raise ReadOnlyError(f"database file is read-only: {exc}") from exc
    except (apsw.ProtocolError, apsw.AuthError):
        conn.execute("PRAGMA journal_mode=DELETE").fetchall()
