"""Opening one APSW connection: file checks, permissions, pragmas, error translation.

Every connection of the store is made here, so they all agree: `foreign_keys=ON` on writable
ones, a 1 s busy timeout (fast-polling, see `busy_handler`). Opening never changes the journal
mode: a file is switched to WAL only by `enable_wal`, which `SessionDB` calls for a store it
initialises or migrates (`migrate=True`); a store opened with `migrate=False` or read-only keeps
the mode its owner chose. `store_error` turns every APSW exception into a `StoreError` with one
human line, so no raw SQLite error escapes opening or the write path.
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

from .errors import (
    DiskFullError,
    IntegrityError,
    LockTimeout,
    NotADatabaseError,
    ReadOnlyError,
    StorageError,
    StoreError,
)
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


def _sqlite_message(exc: BaseException) -> str:
    """SQLite's own words, on one line, without APSW's class-name prefix."""
    text = str(exc).removeprefix(f"{type(exc).__name__}: ")
    return " ".join(text.split()) or type(exc).__name__


#: APSW exception classes → the `StoreError` and its line (``{path}``, ``{msg}``: SQLite's words),
#: first match wins; anything else is a plain `StoreError`.
_SQLITE_ERRORS: tuple[tuple[type[apsw.Error] | tuple[type[apsw.Error], ...], type[StoreError], str], ...] = (
    (apsw.NotADBError, NotADatabaseError, "{path} is not an SQLite database (SQLite: {msg})"),
    (apsw.CorruptError, NotADatabaseError, "{path} is corrupt (SQLite: {msg})"),
    (
        apsw.FullError,
        DiskFullError,
        "cannot write to {path}: the disk is full (SQLite: {msg}); nothing was saved",
    ),
    (apsw.ReadOnlyError, ReadOnlyError, "{path} is read-only (SQLite: {msg})"),
    ((apsw.PermissionsError, apsw.AuthError), ReadOnlyError, "{path}: permission denied (SQLite: {msg})"),
    (
        apsw.CantOpenError,
        StorageError,
        "unable to open {path} or its -wal/-shm/-journal file (SQLite: {msg})",
    ),
    (apsw.IOError, StorageError, "disk I/O error on {path} or its -wal/-shm/-journal file (SQLite: {msg})"),
    ((apsw.BusyError, apsw.LockedError), LockTimeout, "{path} is locked by another process (SQLite: {msg})"),
    (apsw.ConstraintError, IntegrityError, "{msg}"),
)


def store_error(exc: apsw.Error, path: Path | str) -> StoreError:
    """The `StoreError` (one human line naming the file) for an APSW exception.

    Used by opening and by the write path, so no raw SQLite error reaches the app or the CLI;
    the original stays chained as `__cause__` for debugging.
    """
    msg = _sqlite_message(exc)
    for kinds, error, template in _SQLITE_ERRORS:
        if isinstance(exc, kinds):
            return error(template.format(path=path, msg=msg))
    return StoreError(f"{path}: SQLite error: {msg}")


def os_error(exc: OSError, path: Path | str, doing: str) -> StoreError:
    """The `StoreError` for an OS-level failure while `doing` something with `path`."""
    reason = exc.strerror or str(exc)
    if isinstance(exc, PermissionError):
        return ReadOnlyError(f"cannot {doing} {path}: permission denied")
    if isinstance(exc, NotADirectoryError):
        return StorageError(f"cannot {doing} {path}: a component of the path is not a folder")
    return StorageError(f"cannot {doing} {path}: {reason}")


def sqlite_file_size(path: Path) -> int | None:
    """Size of the database file (None: nothing there); raise if it cannot be a database.

    Refuses a folder, a special file (a FIFO would block SQLite's open), an unreadable file, and
    a symbolic link to nothing (SQLite would create the target through it). Never opens the
    file itself: closing *any* descriptor on a database releases every POSIX lock this process
    holds on it (POSIX locks belong to the process, not the descriptor), so a header read here
    while another connection of ours had the file open let other processes delete its WAL from
    under it. Whether the content is SQLite is left to SQLite's own open (`NotADBError`).
    """
    try:
        st = os.lstat(path)
        if stat.S_ISLNK(st.st_mode):
            try:
                st = os.stat(path)
            except FileNotFoundError as exc:
                raise StorageError(
                    f"{path} is a symbolic link to {os.readlink(path)}, which does not exist "
                    "(no database is created through a link)"
                ) from exc
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise os_error(exc, path, "read") from exc
    if stat.S_ISDIR(st.st_mode):
        raise NotADatabaseError(f"{path} is a directory, not an SQLite database")
    if not stat.S_ISREG(st.st_mode):
        raise NotADatabaseError(
            f"{path} is not a regular file (a device, socket or pipe), not an SQLite database"
        )
    if not os.access(path, os.R_OK):
        raise ReadOnlyError(f"cannot read {path}: permission denied")
    return st.st_size


def check_sqlite_file(path: Path) -> bool:
    """True if `path` exists and is non-empty (see `sqlite_file_size` for what it refuses)."""
    return bool(sqlite_file_size(path))


def create_private_file(path: Path) -> bool:
    """Create a new empty database file with mode 0600 (never reopening an existing one).

    True if this call created it; False if something appeared there meanwhile (checked again)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except PermissionError as exc:
        raise ReadOnlyError(f"cannot create folder {path.parent}: permission denied") from exc
    except OSError as exc:
        raise os_error(exc, path.parent, "create folder") from exc
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except FileExistsError:
        sqlite_file_size(path)  # created meanwhile: refuse it if it is a link to nothing, a folder…
        return False
    except PermissionError as exc:
        raise ReadOnlyError(f"cannot create {path}: folder is not writable") from exc
    except OSError as exc:
        raise os_error(exc, path, "create") from exc
    os.close(fd)
    return True


def tighten_sidecars(path: Path) -> None:
    """chmod 0600 the -wal/-shm of a database we created (regular files only, never links)."""
    for suffix in ("-wal", "-shm"):
        side = Path(str(path) + suffix)
        with contextlib.suppress(OSError):
            st = os.lstat(side)
            if stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) != 0o600:
                os.chmod(side, 0o600)


def stable_plans(conn: apsw.Connection) -> None:
    """Plan each statement once, whatever values are bound (SQLite's QPSG).

    APSW's SQLite is built with STAT4, and without QPSG a statement with an equality then a range
    on one index (`session_id = ? AND timestamp <= ?`) is marked to be planned again whenever a
    parameter is bound: APSW binds on every execute, so it was re-parsed every time (~6 µs). FTS5's
    own segment lookup is such a statement, run once per segment of every index a MATCH opens:
    18 of the 25 µs of a one-word probe of a two-segment index. The plans it gives up depend on
    bound values (STAT4 samples, `LIKE ?` prefixes on NOCASE indexes), and no store of ours has either.
    """
    conn.config(apsw.SQLITE_DBCONFIG_ENABLE_QPSG, 1)


def _connect(path: Path, params: str, flags: int) -> apsw.Connection:
    """Open and touch the schema, so "not a database" and "cannot open" surface here (raw APSW
    errors: the caller decides on fallbacks). Never creates the file: `SessionDB` does that itself
    (mode 0600), so a file deleted meanwhile is an error, not a new world-readable database."""
    conn = apsw.Connection("file:" + quote(str(path)) + params, flags=flags | apsw.SQLITE_OPEN_URI)
    try:
        conn.set_busy_handler(busy_handler())
        stable_plans(conn)
        try:
            conn.execute("SELECT count(*) FROM sqlite_master").fetchall()
        except apsw.CorruptError as exc:
            # Read-only only: skip sqlite_master rows that do not parse (duplicate objects, the
            # damage upstream's repair exists for), so a damaged store can still be browsed and
            # diagnosed; a read-only connection cannot write anything.
            if not (flags & apsw.SQLITE_OPEN_READONLY) or "malformed database schema" not in str(exc).lower():
                raise
            conn.execute("PRAGMA writable_schema=ON")
            conn.execute("SELECT count(*) FROM sqlite_master").fetchall()
    except BaseException:
        with contextlib.suppress(apsw.Error):
            conn.close()
        raise
    return conn


def _folder_writable(path: Path) -> bool:
    folder = path.parent
    try:
        return os.access(folder, os.W_OK) and bool(os.stat(folder).st_mode & 0o222)
    except OSError:
        return False


def _open_read_only(path: Path) -> apsw.Connection:
    """`mode=ro`; in a read-only folder, where SQLite cannot create a WAL database's -shm file,
    fall back to `immutable=1` only when there is no -wal file.

    Without a -wal every committed page is in the database file itself, so reading it as
    immutable shows exactly what is there (nobody can be writing in WAL mode: that needs the
    -wal and -shm files the folder refuses). With a -wal, immutable would silently hide the
    transactions in it, so that is an error saying why instead.
    """
    try:
        return _connect(path, "?mode=ro", apsw.SQLITE_OPEN_READONLY)
    except (apsw.ReadOnlyError, apsw.CantOpenError) as exc:
        if _folder_writable(path):
            raise store_error(exc, path) from exc
        if os.path.lexists(str(path) + "-wal"):
            raise ReadOnlyError(
                f"cannot read {path}: its folder is read-only; a WAL database needs its -shm file, which "
                "cannot be created there, to read the -wal file beside it (copy the database with its -wal "
                "to a writable folder)"
            ) from exc
        first = exc
    except apsw.Error as exc:
        raise store_error(exc, path) from exc
    try:
        return _connect(path, "?mode=ro&immutable=1", apsw.SQLITE_OPEN_READONLY)
    except apsw.Error as exc:
        raise store_error(first, path) from exc


def open_immutable(path: Path) -> apsw.Connection | None:
    """A connection that creates nothing and takes no lock (`immutable=1`), or None if the file has a
    -wal (immutable would not see it) or SQLite cannot read it. Only for a first look at a file
    before a read-only open: SQLite's read-only connections to a WAL file create -wal and -shm
    files they cannot remove, so a file that turns out not to be a store would be left with two."""
    if os.path.lexists(str(path) + "-wal"):
        return None
    try:
        return _connect(path, "?mode=ro&immutable=1", apsw.SQLITE_OPEN_READONLY)
    except apsw.Error:
        return None  # the real open reports it


def open_connection(path: Path, *, read_only: bool) -> apsw.Connection:
    """A configured connection; never changes the file; every failure is a `StoreError`."""
    if read_only:
        return _open_read_only(path)
    try:
        conn = _connect(path, "", apsw.SQLITE_OPEN_READWRITE)
    except apsw.Error as exc:
        raise store_error(exc, path) from exc
    try:
        conn.execute("PRAGMA foreign_keys=ON")
    except apsw.Error as exc:
        with contextlib.suppress(apsw.Error):
            conn.close()
        raise store_error(exc, path) from exc
    return conn


def journal_mode(conn: apsw.Connection) -> str:
    return str(conn.execute("PRAGMA journal_mode").fetchall()[0][0]).lower()


def enable_wal(conn: apsw.Connection) -> None:
    """Switch a store we own to WAL, as upstream does, unless the filesystem cannot do it; never
    downgrade a database already in WAL. Only for `migrate=True` opens of a (new or) Hermes file:
    the journal mode of anything else is left as found."""
    if journal_mode(conn) == "wal":
        return
    try:
        conn.execute("PRAGMA journal_mode=WAL").fetchall()
    except (apsw.ProtocolError, apsw.AuthError):
        conn.execute("PRAGMA journal_mode=DELETE").fetchall()
