"""Opening one APSW connection: file checks, permissions, pragmas, error translation.

Every connection of the store is made here, so they all agree: `foreign_keys=ON` on writable
ones, a 1 s busy timeout (fast-polling, see `busy_handler`). Opening never changes the journal
mode: a file is switched to WAL only by `enable_wal`, which `SessionDB` calls for a store it
initialises or migrates (`migrate=True`); a store opened with `migrate=False` or read-only keeps
the mode its owner chose. `store_error` turns every APSW exception into a `StoreError` with one
human line, so no raw SQLite error escapes opening or the write path.

No connection checkpoints when it closes (`SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE`): SQLite's last
connection would otherwise copy whatever the -wal holds (a crashed writer's transactions, another
program's) into the database file and delete the -wal, even if it never wrote. Only a store that
writes lets its close checkpoint (`allow_checkpoint_on_close`, see `SessionDB.close`). Before any
of these, `looking` opens a file in a way that creates and writes nothing, to decide whether it is
a Hermes store at all.
"""

from __future__ import annotations

import contextlib
import os
import random
import stat
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
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


def sidecar(path: Path, suffix: str) -> Path:
    """The database's `-wal`, `-shm` or `-journal` file."""
    return Path(str(path) + suffix)


def allow_checkpoint_on_close(conn: apsw.Connection, allow: bool = True) -> None:
    """Let (or stop) SQLite's close of the last connection to the file checkpoint the -wal into the
    database and delete the -wal and -shm. Every connection starts with it off (`_connect`)."""
    conn.config(apsw.SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 0 if allow else 1)


class _ShmGuard:
    """Keeps a `readonly_shm` look (`looking`) from overlapping another open of the same file.

    SQLite shares one -shm mapping among all of a process's connections to a file, opened by the
    first one: a connection opened while a look holds it read-only would stay unable to write
    (every write "attempt to write a readonly database") for as long as it lives. So an open
    waits while a look of its file is in progress, and a look waits for opens in progress (each
    is one `_connect`: a schema read, or up to the busy timeout).
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._looks: Counter[tuple[int, int]] = Counter()
        self._opens: Counter[tuple[int, int]] = Counter()
        self._mine = threading.local()  # the keys this thread is looking at

    @staticmethod
    def _key(path: Path) -> tuple[int, int] | None:
        try:
            st = os.stat(path)
        except OSError:
            return None
        return st.st_dev, st.st_ino  # SQLite's own key: one -shm mapping per inode

    @contextlib.contextmanager
    def opening(self, path: Path) -> Iterator[None]:
        key = self._key(path)
        if key is None:
            yield
            return
        if key in getattr(self._mine, "keys", ()):
            raise RuntimeError(f"{path} is opened by the thread looking at it (it would wait forever)")
        with self._cond:
            self._cond.wait_for(lambda: not self._looks[key])
            self._opens[key] += 1
        try:
            yield
        finally:
            with self._cond:
                self._opens[key] -= 1
                if not self._opens[key]:
                    del self._opens[key]
                self._cond.notify_all()

    @contextlib.contextmanager
    def look(self, path: Path) -> Iterator[bool]:
        """Yields whether the look may map the -shm read-only (False: the file is gone)."""
        key = self._key(path)
        if key is None:
            yield False
            return
        with self._cond:
            self._cond.wait_for(lambda: not self._opens[key])
            self._looks[key] += 1
        mine: set[tuple[int, int]] = self._mine.__dict__.setdefault("keys", set())
        mine.add(key)
        try:
            yield True
        finally:
            mine.discard(key)
            with self._cond:
                self._looks[key] -= 1
                if not self._looks[key]:
                    del self._looks[key]
                self._cond.notify_all()


_SHM = _ShmGuard()


def _connect(path: Path, params: str, flags: int, schema_errors: list[str] | None = None) -> apsw.Connection:
    """Open and touch the schema, so "not a database" and "cannot open" surface here (raw APSW
    errors: the caller decides on fallbacks). Never creates the file: `SessionDB` does that itself
    (mode 0600), so a file deleted meanwhile is an error, not a new world-readable database.
    The connection never checkpoints on close (`allow_checkpoint_on_close` turns that back on).
    A read-only connection to a file whose schema does not parse skips the bad rows, and puts
    SQLite's error in `schema_errors`."""
    conn = apsw.Connection("file:" + quote(str(path)) + params, flags=flags | apsw.SQLITE_OPEN_URI)
    try:
        allow_checkpoint_on_close(conn, False)
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
            if schema_errors is not None:
                schema_errors.append(_sqlite_message(exc))
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


def _open_read_only(path: Path, schema_errors: list[str] | None = None) -> apsw.Connection:
    """`mode=ro`; in a read-only folder, where SQLite cannot create a WAL database's -shm file,
    fall back to `immutable=1` only when there is no -wal file.

    Without a -wal every committed page is in the database file itself, so reading it as
    immutable shows exactly what is there (nobody can be writing in WAL mode: that needs the
    -wal and -shm files the folder refuses). With a -wal, immutable would silently hide the
    transactions in it, so that is an error saying why instead.
    """
    try:
        with _SHM.opening(path):
            return _connect(path, "?mode=ro", apsw.SQLITE_OPEN_READONLY, schema_errors)
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
        return _connect(path, "?mode=ro&immutable=1", apsw.SQLITE_OPEN_READONLY, schema_errors)
    except apsw.Error as exc:
        raise store_error(first, path) from exc


@contextlib.contextmanager
def looking(path: Path, schema_errors: list[str] | None = None) -> Iterator[apsw.Connection | None]:
    """A connection to look at a file before opening it, which creates and writes nothing (None
    when no such connection can be had: the real open then decides, and reports).

    SQLite's usual connections are not that: opening a WAL database creates its -wal and -shm
    when they are missing (a read-only connection cannot remove them again), rebuilds the -shm's
    index after a crashed writer, and the last one to close checkpoints the -wal. So:

    - no -wal: `immutable=1` (every committed page is in the database file; no lock, no file);
    - a -wal and its -shm: `mode=ro&readonly_shm=1`, the -shm mapped read-only (SQLite reads a
      crashed writer's -wal into memory instead of fixing the -shm);
    - a -wal without a -shm: a connection in `locking_mode=EXCLUSIVE`, which keeps the -wal's
      index in memory (it needs the database file writable, and holds its lock for the look:
      nobody else has the file open, or the -shm would exist), with `query_only`.
    """
    conn: apsw.Connection | None = None
    try:
        if not os.path.lexists(sidecar(path, "-wal")):
            conn = _try_connect(path, "?mode=ro&immutable=1", apsw.SQLITE_OPEN_READONLY, schema_errors)
            yield conn
        elif os.path.lexists(sidecar(path, "-shm")):
            with _SHM.look(path) as known:
                params = "?mode=ro&readonly_shm=1" if known else "?mode=ro"
                conn = _try_connect(path, params, apsw.SQLITE_OPEN_READONLY, schema_errors)
                yield conn
        else:
            conn = _exclusive_look(path)
            yield conn
    finally:
        if conn is not None:
            with contextlib.suppress(apsw.Error):
                conn.close()


def _try_connect(
    path: Path, params: str, flags: int, schema_errors: list[str] | None = None
) -> apsw.Connection | None:
    try:
        return _connect(path, params, flags, schema_errors)
    except apsw.Error:
        return None  # the real open reports it


def _exclusive_look(path: Path) -> apsw.Connection | None:
    try:
        flags = apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_URI
        conn = apsw.Connection("file:" + quote(str(path)), flags=flags)
    except apsw.Error:
        return None
    try:
        allow_checkpoint_on_close(conn, False)
        conn.set_busy_handler(busy_handler(200))
        conn.execute("PRAGMA query_only=1")
        conn.execute("PRAGMA locking_mode=EXCLUSIVE").fetchall()
        conn.execute("SELECT count(*) FROM sqlite_master").fetchall()
    except apsw.Error:
        with contextlib.suppress(apsw.Error):
            conn.close()
        return None
    return conn


def close_as_found(conn: apsw.Connection, path: Path) -> None:
    """Close the last connection of a store that was only read, through a writable connection,
    removing the -wal and -shm its open created (the caller knows there was no -wal before).

    SQLite's own close does that when it checkpoints, so it is allowed only while the -wal is
    empty, checked under the write lock, and the connection is closed inside that transaction
    (SQLite rolls it back and checkpoints in the one call): nobody can append meanwhile. With
    frames in it (another process wrote since), nothing is checkpointed and the files stay.
    Never raises.
    """
    if os.path.lexists(sidecar(path, "-wal")):  # (a rollback-journal store has none)
        with contextlib.suppress(apsw.Error, OSError):
            conn.set_busy_timeout(0)
            conn.execute("BEGIN IMMEDIATE")
            if os.lstat(sidecar(path, "-wal")).st_size == 0:
                allow_checkpoint_on_close(conn)
            else:
                conn.execute("ROLLBACK")
    with contextlib.suppress(apsw.Error):
        conn.close()


def open_connection(
    path: Path, *, read_only: bool, schema_errors: list[str] | None = None
) -> apsw.Connection:
    """A configured connection; never changes the file; every failure is a `StoreError`.
    (`schema_errors`: see `_connect`; read-only connections only.)"""
    if read_only:
        return _open_read_only(path, schema_errors)
    try:
        with _SHM.opening(path):
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
