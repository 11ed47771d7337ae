"""The store's machinery: per-thread connections, reads as dicts, and the one write path.

Every mutation runs through `_execute_write`: `BEGIN IMMEDIATE` (lock contention surfaces at
the start, not at commit), the caller's statements, `COMMIT`; rollback on any error; on
SQLITE_BUSY/LOCKED up to `_WRITE_MAX_RETRIES` attempts with random 20–150 ms sleeps outside
the in-process lock (breaking the convoy SQLite's deterministic backoff creates); a PASSIVE
checkpoint every 50 successful writes and a round of bounded FTS merges every 1,000, both run
by `_Maintainer` on its own thread and connection, so no caller's write pays for them. Nothing
rewrites a whole index.
"""

from __future__ import annotations

import contextlib
import os
import random
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Self, TypeVar

import apsw

from . import fts_upkeep as U
from . import schema as S
from .connection import (
    allow_checkpoint_on_close,
    close_as_found,
    create_private_file,
    open_connection,
    os_error,
    sidecar,
    sqlite_file_size,
    store_error,
    tighten_sidecars,
)
from .errors import LockTimeout, NotAHermesStore, ReadOnlyError, StoreError
from .fts_schema import FtsLayout, detect_layout
from .paths import default_db_path
from .schema_init import check_store_unopened, initialize
from .text import read_rows, read_tuples

if TYPE_CHECKING:
    from .side_index import SideIndex

T = TypeVar("T")
K = TypeVar("K")
V = TypeVar("V")

MIN_SQLITE = (3, 51, 3)
# A `state_meta` key a trash restore sets to a new token in each of its transactions: restored
# messages come back under their old ids, so any process's newest-first bounds (`_block_max`)
# built since they were deleted may be too low for them; a new token means "rebuild".
MESSAGES_RESTORED_KEY = "hermes_tui_messages_restored"
CONTENDED_AFTER_S = 0.001  # a BEGIN IMMEDIATE slower than this waited for another writer
CONTENDED_YIELD_S = (0.001, 0.004)  # the step back before the next write (the busy poll range)


def sqlite_version_tuple() -> tuple[int, ...]:
    return tuple(int(p) for p in apsw.sqlite_lib_version().split("."))


def rows_as_dicts(cursor: apsw.Cursor) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    cols: list[str] | None = None
    for row in cursor:
        if cols is None:
            cols = [d[0] for d in cursor.get_description()]
        out.append(dict(zip(cols, row, strict=True)))
    return out


def _is_lock_error(exc: BaseException) -> bool:
    return isinstance(exc, (apsw.BusyError, apsw.LockedError))


class _Maintainer:
    """Background upkeep on a thread (and connection) of its own: PASSIVE checkpoints and
    bounded FTS merges, so no caller's write pays for either.

    A PASSIVE checkpoint never takes the write lock, but copying the WAL after an FTS merge took
    up to 8 ms of the 50th append's latency. Jobs are flags, so requests that arrive while one
    runs coalesce into the next run; `stop()` is seen between merge steps.
    """

    def __init__(self, jobs: dict[str, Callable[[], None]]):
        self._jobs = jobs
        self._pending: set[str] = set()
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self.stopping = False
        self._thread: threading.Thread | None = None
        self.completed: dict[str, int] = dict.fromkeys(jobs, 0)
        self._done = threading.Condition()

    def request(self, job: str) -> None:
        with self._lock:
            self._pending.add(job)
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="hermes-tui-upkeep", daemon=True)
                self._thread.start()
        self._wake.set()

    def _loop(self) -> None:
        while True:
            self._wake.wait()
            self._wake.clear()
            while True:
                if self.stopping:
                    return
                with self._lock:
                    job = next((j for j in self._jobs if j in self._pending), None)
                    if job is not None:
                        self._pending.discard(job)
                if job is None:
                    break
                self._run(job)

    def run_pending(self, job: str) -> None:
        """Run `job` now if it was requested (from inside a long job, e.g. a waiting merge round)."""
        with self._lock:
            if job not in self._pending:
                return
            self._pending.discard(job)
        self._run(job)

    def _run(self, job: str) -> None:
        with contextlib.suppress(Exception):
            self._jobs[job]()
        with self._done:
            self.completed[job] += 1
            self._done.notify_all()

    def wait(self, job: str, count: int, timeout: float = 10.0) -> bool:
        """Block until `job` has run `count` times (for tests: the runs are asynchronous)."""
        with self._done:
            return self._done.wait_for(lambda: self.completed[job] >= count, timeout)

    def stop(self) -> None:
        with self._lock:
            thread, self._thread = self._thread, None
        if thread is not None:
            self.stopping = True
            self._wake.set()
            thread.join(timeout=30)


#: Runs one upkeep step in its own write transaction: whether it did work, None to stop.
StepRunner = Callable[[Callable[[apsw.Connection], bool]], "bool | None"]


class _QuietWatch:
    """Has any connection committed to the file in the last `idle_s`? (`PRAGMA data_version`
    changes when another connection commits, our own caller's included.)"""

    def __init__(self, conn: apsw.Connection, idle_s: float):
        self._conn = conn
        self._idle_s = idle_s
        self._version = self._read()
        self._changed_at = time.monotonic()

    def _read(self) -> int:
        rows: list[tuple[Any, ...]] = self._conn.execute("PRAGMA data_version").fetchall()
        return int(rows[0][0])

    def now(self) -> bool:
        version = self._read()
        if version != self._version:
            self._version, self._changed_at = version, time.monotonic()
        return time.monotonic() - self._changed_at >= self._idle_s

    def reset(self) -> None:
        self._changed_at = time.monotonic()


class BoundedCache(Generic[K, V]):
    """A dict of at most `maxsize` entries that drops the least recently used one when full
    (rather than emptying itself); the store's memo caches are these, declared in `_Core`."""

    def __init__(self, maxsize: int):
        self.maxsize = maxsize
        self._data: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()  # the store is used from worker threads

    def get(self, key: K) -> V | None:
        with self._lock:
            value = self._data.get(key)
            if value is not None:
                self._data.move_to_end(key)
            return value

    def put(self, key: K, value: V) -> None:
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            while len(self._data) > self.maxsize:
                self._data.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()

    def __len__(self) -> int:
        return len(self._data)


class _ThreadState(threading.local):
    """What the store keeps per thread, declared (class attributes are each thread's defaults)."""

    conn: apsw.Connection | None = None
    side_pending: list[int] | None = None  # message ids a write deleted/rewrote (search's side index)
    side_defer: bool = False  # inside `_side_batch()`: the side index is cleaned when it ends


#: A write guard: a context entered around every write (`_execute_write`), after the read-only check.
WriteGuard = Callable[[], AbstractContextManager[object]]


class _Core:
    """Connections, reads, writes, lifecycle. The mixins build the API on top of this.

    The mixins depend on this class only: helpers they share live here, the methods they call on
    each other are declared below (`if TYPE_CHECKING`, implemented by exactly one mixin), and the
    ways they hook into the core are explicit lists filled by `_install_hooks()` (write guards,
    steps after opening, steps before closing, steps before each upkeep round) rather than
    overrides calling `super()`.
    """

    _WRITE_MAX_RETRIES = S._WRITE_MAX_RETRIES
    _WRITE_RETRY_MIN_S = S._WRITE_RETRY_MIN_S
    _WRITE_RETRY_MAX_S = S._WRITE_RETRY_MAX_S
    _CHECKPOINT_EVERY_N_WRITES = S._CHECKPOINT_EVERY_N_WRITES
    # Upstream 0.19.0's cadence for its full optimize; here a round of bounded merges instead.
    _FTS_UPKEEP_EVERY_N_WRITES = 1000
    _FTS_MERGE_PAUSE_S = 0.010  # after each step and between quiet polls
    _FTS_IDLE_S = 0.2  # no commit by anyone for this long: a quiet moment for one merge step

    def __init__(
        self,
        db_path: str | Path | None = None,
        read_only: bool = False,
        migrate: bool = True,
        *,
        adopt_foreign: bool = False,
    ):
        self.db_path = Path(db_path).expanduser() if db_path is not None else default_db_path()
        self.read_only = bool(read_only)
        self.migrate = bool(migrate) and not self.read_only
        # Add the Hermes tables to another application's SQLite file (refused unless asked).
        self.adopt_foreign = bool(adopt_foreign)
        self.lock_wait_hook: Callable[[int, float], None] | None = None
        #: The time stamped on what this store writes without a time given (a session's start
        #: and end, a message's timestamp, a usage row's first/last seen): a demo or a test that
        #: writes a history sets it; everyone else leaves `time.time`.
        self.clock: Callable[[], float] = time.time
        self._local = _ThreadState()
        self._conns_lock = threading.Lock()
        self._conn_list: list[apsw.Connection] = []
        self._conn_by_thread: dict[int, apsw.Connection] = {}  # for interrupt(thread_id)
        self._writing: set[int] = set()  # id() of connections inside a write: interrupt() spares them
        self._write_lock = threading.RLock()
        self._write_count = 0
        self._contended = False
        self._fts_merge_steps = 0  # merge steps that did work (tests and diagnostics)
        self._maintainer = _Maintainer(
            {"checkpoint": self._passive_checkpoint, "fts_merge": self._fts_merge_round}
        )
        self._closed = False
        # A write was asked for (`_require_writable`): from then on `close()` checkpoints.
        self._asked_to_write = False
        self._wal_was_there = True  # set by `_open`: whether the file had a -wal before we opened it
        self._cjk_impl: str | None = None
        self._columns: dict[str, frozenset[str]] = {}
        self._layout: FtsLayout | None = None
        self._schema_version: int | None = None
        self._trigram_ok = False
        self._fts5_ok = False
        self._created_file = False
        # Search's memo caches (see `SearchMixin`): bounded, and declared here rather than
        # appearing in `self.__dict__` on first use.
        self._source_shares_cache: tuple[float, dict[str, float] | None] | None = None
        self._blockmax_cache: tuple[int, list[float], list[float]] | None = None
        self._blockmax_lock = threading.Lock()
        self._blockmax_epoch: str | None = None  # MESSAGES_RESTORED_KEY when the bounds were read
        self._top_id_cache: tuple[float, int] | None = None  # (when, largest message id)
        self._prefix_cache: BoundedCache[tuple[int, str], tuple[Any, list[str]]] = BoundedCache(256)
        self._side_index: SideIndex | None = None
        # The mixins' hooks into the core, filled once by `_install_hooks()`.
        self._write_guards: list[WriteGuard] = []
        self._open_hooks: list[Callable[[], None]] = []
        self._close_hooks: list[Callable[[], None]] = []
        self._upkeep_pre_steps: list[Callable[[], None]] = []
        self._install_hooks()
        self._open()
        for hook in self._open_hooks:
            hook()

    def _install_hooks(self) -> None:
        """Register the mixins' hooks (`SessionDB` does, naming each method it installs)."""
        raise NotImplementedError("the composed store (SessionDB) installs its mixins' hooks")

    # ------------------------------------------------------------------ opening
    def _open(self) -> None:
        """Check the path, open, refuse what is not a Hermes store, then initialise or migrate.

        Only `migrate=True` may create a file or change one (journal mode included), and never
        another application's database unless `adopt_foreign`; so browsing (`migrate=False`,
        `read_only=True`) leaves whatever it was pointed at byte-identical. Whether an existing
        file is a Hermes store is decided on a connection that creates and writes nothing
        (`check_store_unopened`), before any other is opened. Every failure closes what was
        opened and is a `StoreError` with one line.
        """
        path = self.db_path
        try:
            self._wal_was_there = os.path.lexists(sidecar(path, "-wal"))
            size = sqlite_file_size(path)
            if self.read_only or not self.migrate:
                if size is None:
                    raise StoreError(f"unable to open database file {path}: it does not exist")
                if size == 0:
                    raise NotAHermesStore(f"{path} is empty (0 bytes): not a Hermes session store")
            elif size is None:
                self._created_file = create_private_file(path)
            if size:
                check_store_unopened(self)
            if not self.read_only and not _writable(path):
                raise ReadOnlyError(f"{path} is read-only; open it with read_only=True to browse it")
            initialize(self, self._conn(), adopt_foreign=self.adopt_foreign)
            if self._created_file:
                tighten_sidecars(path)
        except BaseException as exc:
            self._shutdown(checkpoint=False)
            if isinstance(exc, apsw.Error):
                raise store_error(exc, path) from exc
            if isinstance(exc, OSError):
                raise os_error(exc, path, "open") from exc
            raise

    def _new_connection(self) -> apsw.Connection:
        conn = open_connection(self.db_path, read_only=self.read_only)
        impl = _install_tokenizer(conn)
        if self._cjk_impl is None:
            self._cjk_impl = impl
        with self._conns_lock:
            self._conn_list.append(conn)
        return conn

    def _conn(self) -> apsw.Connection:
        """This thread's connection (APSW forbids concurrent use of one connection)."""
        if self._closed:
            raise StoreError("the store is closed")
        conn = self._local.conn
        if conn is None:
            conn = self._new_connection()
            self._local.conn = conn
            with self._conns_lock:
                self._conn_by_thread[threading.get_ident()] = conn
        return conn

    def release_connection(self) -> None:
        """Close this thread's connection (a later call on this thread makes a new one).

        For a store opened on one thread and read on another (a federation opens 300 stores on
        a few threads, each read on a home thread that never waits for a slow open): the opening
        thread's connection would otherwise stay open, idle, for as long as the store. Call it
        once the reading thread has its own connection, so this one is never the last to close
        (closing the last one is when SQLite would checkpoint a WAL)."""
        conn = self._local.conn
        if conn is None:
            return
        self._local.conn = None
        with self._conns_lock:
            if conn in self._conn_list:
                self._conn_list.remove(conn)
            if self._conn_by_thread.get(threading.get_ident()) is conn:
                del self._conn_by_thread[threading.get_ident()]
        with contextlib.suppress(apsw.Error):
            conn.close()

    def refresh_structure(self, conn: apsw.Connection | None = None) -> None:
        """Re-read columns, layout and version (after DDL, ours or another process's)."""
        conn = conn or self._conn()
        master = {
            name: (typ, sql) for typ, name, sql in conn.execute("SELECT type, name, sql FROM sqlite_master")
        }
        meta: dict[str, str] = {}
        if "state_meta" in master:
            meta = {k: v for k, v in conn.execute("SELECT key, value FROM state_meta")}
        self._layout = detect_layout(master, meta)
        cols: dict[str, frozenset[str]] = {}
        for name, (typ, _sql) in master.items():
            if typ == "table" and not name.startswith("sqlite_"):
                cols[name] = frozenset(r[1] for r in conn.execute(f'PRAGMA table_info("{name}")'))
        self._columns = cols
        self._schema_version = None
        if "schema_version" in master:
            row: list[tuple[Any, ...]] = conn.execute("SELECT version FROM schema_version LIMIT 1").fetchall()
            self._schema_version = int(row[0][0]) if row else None

    def has_column(self, table: str, column: str) -> bool:
        return column in self._columns.get(table, ())

    def columns(self, table: str) -> frozenset[str]:
        return self._columns.get(table, frozenset())

    @property
    def layout(self) -> FtsLayout:
        assert self._layout is not None
        return self._layout

    # ------------------------------------------------------------------ reads
    def _rows(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> list[dict[str, Any]]:
        """Rows as dicts; TEXT that is not UTF-8 (another writer's bytes) is read, never raised."""
        return read_rows(self._conn(), sql, params, decode=False)

    def _row(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> dict[str, Any] | None:
        rows = self._rows(sql, params)
        return rows[0] if rows else None

    def _scalar(self, sql: str, params: Sequence[Any] = (), default: Any = None) -> Any:
        rows = read_tuples(self._conn(), sql, params)
        return rows[0][0] if rows else default

    def _tuples(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return read_tuples(self._conn(), sql, params)

    # ------------------------------------------------------------------ writes
    def _require_writable(self) -> None:
        """Refuse a write to a read-only store; otherwise the store is a writer from now on."""
        if self.read_only:
            raise ReadOnlyError("this store was opened read-only; writes are refused")
        self._asked_to_write = True

    def _execute_write(self, fn: Callable[[apsw.Connection], T]) -> T:
        """Run `fn(conn)` in one short `BEGIN IMMEDIATE` transaction with jittered retries,
        inside every registered write guard (e.g. the side index's cleanup)."""
        self._require_writable()
        with contextlib.ExitStack() as guards:
            for guard in self._write_guards:
                guards.enter_context(guard())
            return self._write_with_retries(fn)

    def _write_with_retries(self, fn: Callable[[apsw.Connection], T]) -> T:
        conn = self._conn()
        started = time.monotonic()
        last: BaseException | None = None
        if self._contended:
            # Our last write had to wait for the lock, so other processes are writing too. A
            # writer in a loop re-takes the lock ~50 µs after its commit, before any waiter's
            # poll comes round: step back once so the lock rotates instead of starving them.
            self._contended = False
            time.sleep(random.uniform(*CONTENDED_YIELD_S))
        for attempt in range(self._WRITE_MAX_RETRIES):
            try:
                with self._write_lock, self._marked_writing(conn):
                    result = _immediate(conn, fn, on_begun=self._note_begin_wait)
            except (apsw.BusyError, apsw.LockedError) as exc:
                last = exc
                hook = self.lock_wait_hook
                if hook is not None:
                    with contextlib.suppress(Exception):
                        hook(attempt + 1, time.monotonic() - started)
                if attempt < self._WRITE_MAX_RETRIES - 1:
                    time.sleep(random.uniform(self._WRITE_RETRY_MIN_S, self._WRITE_RETRY_MAX_S))
                    continue
                break
            except apsw.Error as exc:
                # Disk full, read-only file, I/O error, constraint…: one clear `StoreError`.
                raise store_error(exc, self.db_path) from exc
            else:
                self._after_write(conn)
                return result
        waited = time.monotonic() - started
        raise LockTimeout(
            f"database is locked: another process held the write lock for {waited:.1f} s "
            f"({self._WRITE_MAX_RETRIES} attempts)"
        ) from last

    @contextlib.contextmanager
    def _marked_writing(self, conn: apsw.Connection) -> Iterator[None]:
        """While `conn` is inside a write transaction, `interrupt()` leaves it alone."""
        with self._conns_lock:
            self._writing.add(id(conn))
        try:
            yield
        finally:
            with self._conns_lock:
                self._writing.discard(id(conn))

    def _note_begin_wait(self, waited: float) -> None:
        self._contended = waited > CONTENDED_AFTER_S

    def _after_write(self, conn: apsw.Connection) -> None:
        self._write_count += 1
        if self._write_count % self._CHECKPOINT_EVERY_N_WRITES == 0:
            self._maintainer.request("checkpoint")
        if self._write_count % self._FTS_UPKEEP_EVERY_N_WRITES == 0:
            self.request_fts_upkeep()

    def request_fts_upkeep(self) -> None:
        """Ask the upkeep thread for a round of bounded merges (v23 indexes of a writable store)."""
        if not self.read_only and self._layout is not None and self._layout.kind == "v23":
            self._maintainer.request("fts_merge")

    def _fts_merge_round(self) -> None:
        """The upkeep of every v23 index (`_upkeep_index`), one short transaction per step, in
        quiet moments only: a step runs once no connection has committed for `_FTS_IDLE_S`.

        A store under a continuous write load therefore defers upkeep (FTS5's own automerge still
        bounds the segments) instead of adding lock holds to every write. Each step holds the
        in-process write lock (our writers queue behind one step, ~10 ms) and never waits for
        another process's lock: busy means someone is writing, so the step waits for the next
        quiet moment. Checkpoints requested meanwhile still run; `close()` ends a round. The
        registered pre-steps run first (finishing an interrupted storage conversion).
        """
        for step in self._upkeep_pre_steps:
            step()
        conn = self._conn()
        conn.set_busy_timeout(0)
        quiet = _QuietWatch(conn, self._FTS_IDLE_S)

        def run(step: Callable[[apsw.Connection], bool]) -> bool | None:
            while True:
                while not quiet.now():
                    if self._maintainer.stopping or self._closed:
                        return None
                    self._maintainer.run_pending("checkpoint")
                    time.sleep(self._FTS_MERGE_PAUSE_S)
                try:
                    with self._write_lock, self._marked_writing(conn):
                        worked = _immediate(conn, step)
                except (apsw.BusyError, apsw.LockedError):
                    quiet.reset()  # another process is writing: wait for the next quiet moment
                    continue
                time.sleep(self._FTS_MERGE_PAUSE_S)
                return worked

        for table in self._fts_merge_tables():
            if not self._upkeep_index(table, run, U.MERGE_MAX_STEPS):
                return
        self._passive_checkpoint()  # the merged pages are in the WAL until a checkpoint

    def _upkeep_index(self, table: str, run: StepRunner, level_steps: int | None) -> bool:
        """One index's upkeep: `usermerge`, up to `level_steps` level merges, then, if they all
        got done and the small segments are worth it, the incremental full merge to one segment
        (uncapped: a cap would leave the index mid-merge, one segment more, until the next round).

        `run(step)` runs one step in its own write transaction: whether it did work, None to stop.
        Returns False when stopped.
        """
        if run(lambda c: U.ensure_usermerge(c, table)) is None:
            return False
        levels = self._merge_steps(table, run, level_steps)
        if levels is None:
            return False
        if levels == level_steps or not U.wants_full_merge(self._conn(), table):
            return True
        started = run(lambda c: U.start_full_merge(c, table))
        if not started:
            return started is not None
        self._fts_merge_steps += 1
        return self._merge_steps(table, run, None) is not None

    def _merge_steps(self, table: str, run: StepRunner, limit: int | None) -> int | None:
        """Positive `'merge'` steps until one finds no work (or `limit`): how many worked, None if stopped."""
        steps = 0
        while limit is None or steps < limit:
            worked = run(lambda c: U.merge_step(c, table))
            if worked is None:
                return None
            if not worked:
                break
            steps += 1
            self._fts_merge_steps += 1
        return steps

    def _fts_tables(self) -> list[str]:
        """The FTS indexes this connection can write (cjk only with its tokenizer registered)."""
        lay = self.layout
        tables = []
        if lay.kind != "none":
            tables.append("messages_fts")
        if lay.has_trigram:
            tables.append("messages_fts_trigram")
        if lay.has_cjk and self._cjk_impl and not lay.cjk_stale:
            tables.append("messages_fts_cjk")
        return tables

    def _fts_merge_tables(self) -> list[str]:
        """What upkeep merges: those indexes, less a cjk index that is still being built."""
        building = self.layout.cjk_building
        return [t for t in self._fts_tables() if not (building and t == "messages_fts_cjk")]

    def _passive_checkpoint(self) -> None:
        """Best effort, never raises (the checkpointer thread's own connection)."""
        if not self._closed:
            with contextlib.suppress(apsw.Error, StoreError):
                self._conn().wal_checkpoint(mode=apsw.SQLITE_CHECKPOINT_PASSIVE)

    # ------------------------------------------------------------------ lifecycle
    def close(self) -> None:
        """Close every connection. A store that writes (a `migrate=True` open, or any store once
        a write was asked for) TRUNCATE-checkpoints the WAL first and lets SQLite remove it, as
        upstream's `close()` does (a no-op in a rollback-journal store, whose mode `migrate=False`
        keeps). A store that was only read never checkpoints: whatever another program left in
        the -wal stays there, and the database file is not written."""
        self._shutdown(checkpoint=self.is_writer)

    @property
    def is_writer(self) -> bool:
        """Whether `close()` checkpoints: opened with `migrate=True`, or asked to write since."""
        return not self.read_only and (self.migrate or self._asked_to_write)

    def _shutdown(self, checkpoint: bool) -> None:
        """Close every connection; no checkpoint after a failed open (the file stays as found).

        Without a checkpoint, the -wal and -shm that our open made SQLite create beside a WAL
        file are removed again while nothing was written to them (`close_as_found`; for a
        read-only store through one writable connection, when the file and folder allow it).
        """
        if self._closed:
            return
        for hook in self._close_hooks:
            with contextlib.suppress(Exception):
                hook()
        self._maintainer.stop()
        with self._conns_lock:
            conns = list(self._conn_list)
            self._conn_list.clear()
        tidy = bool(conns) and not checkpoint and not self._wal_was_there
        last = conns.pop() if tidy and not self.read_only else None
        if conns and checkpoint:
            with contextlib.suppress(apsw.Error):
                conns[0].wal_checkpoint(mode=apsw.SQLITE_CHECKPOINT_TRUNCATE)
            for conn in conns:
                with contextlib.suppress(apsw.Error):
                    allow_checkpoint_on_close(conn)
        for conn in conns:
            with contextlib.suppress(apsw.Error):
                conn.close()
        if last is not None:
            close_as_found(last, self.db_path)
        elif tidy and os.path.lexists(sidecar(self.db_path, "-wal")) and _writable(self.db_path):
            with contextlib.suppress(StoreError, OSError):
                close_as_found(open_connection(self.db_path, read_only=False), self.db_path)
        self._closed = True
        self._local = _ThreadState()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def interrupt(self, thread_id: int | None = None) -> int:
        """Abort the reads running on this store's connections, from any thread: the connection
        of thread `thread_id` (`threading.get_ident()` of the thread that runs the query), or
        every connection. A write transaction is never interrupted (it would roll back someone's
        rename or delete half-way); returns how many connections were interrupted."""
        with self._conns_lock:
            if thread_id is None:
                conns = list(self._conn_list)
            else:
                one = self._conn_by_thread.get(thread_id)
                conns = [one] if one is not None else []
            hit = 0
            for conn in conns:  # under the lock: no write can begin between the check and the interrupt
                if id(conn) in self._writing:
                    continue
                with contextlib.suppress(apsw.Error):
                    conn.interrupt()  # the one call APSW allows on a connection busy in another thread
                    hit += 1
        return hit

    def data_version(self) -> int:
        """Changes whenever another connection commits (cheap poll for live refresh)."""
        return int(self._scalar("PRAGMA data_version", default=0))

    def capabilities(self) -> dict[str, Any]:
        lay = self.layout
        if not lay.has_cjk:
            cjk_index = "absent"
        elif lay.cjk_stale:
            cjk_index = "stale"
        elif lay.cjk_building:
            cjk_index = "building"
        else:
            cjk_index = "ready"
        return {
            "path": str(self.db_path),
            "sqlite_version": apsw.sqlite_lib_version(),
            "schema_version": self._schema_version,
            "code_schema_version": S.SCHEMA_VERSION,
            "fts_layout": lay.kind,
            "fts5": self._fts5_ok,
            "trigram": self._trigram_ok,
            "cjk": self._cjk_impl,
            "cjk_index": cjk_index,
            "read_only": self.read_only,
            "migrate": self.migrate,
        }

    if TYPE_CHECKING:
        # The methods one mixin calls on another, declared for the type checker (each is
        # implemented by exactly one mixin of `SessionDB`; tests/store/test_structure.py checks).
        # sessions.py
        def get_session(self, session_id: str) -> dict[str, Any] | None: ...

        # messages.py
        def get_messages(
            self, session_id: str, include_inactive: bool = False, limit: int | None = None, offset: int = 0
        ) -> list[dict[str, Any]]: ...
        def get_messages_page(
            self, session_id: str, after_id: int = 0, limit: int = 200, include_inactive: bool = True
        ) -> list[dict[str, Any]]: ...
        def message_count(self, session_id: str | None = None) -> int: ...
        def _session_lineage_root_to_tip(self, session_id: str) -> list[str]: ...
        def _message_values(self, session_id: str, msg: dict[str, Any], ts: float) -> dict[str, Any]: ...
        def _insert_message(self, conn: apsw.Connection, values: dict[str, Any]) -> int: ...
        @staticmethod
        def _tool_call_delta(tool_calls: Any) -> int: ...

        # titles.py
        def _title_conflict(
            self, conn: apsw.Connection, session_id: str, title: str, cols: frozenset[str]
        ) -> tuple[str | None, str | None]: ...
        def get_next_title_in_lineage(self, base_title: str) -> str: ...

        # flags.py
        def set_session_archived(self, session_id: str, archived: bool) -> bool: ...

        # listing.py
        def list_rows(self, ids: Sequence[str]) -> list[dict[str, Any]]: ...
        def search_sessions(
            self, source: str | None = None, limit: int = 20, offset: int = 0
        ) -> list[dict[str, Any]]: ...

        # lineage.py
        def get_compression_tip(self, session_id: str) -> str | None: ...

        # housekeeping.py
        def export_session(self, session_id: str, display: bool = False) -> dict[str, Any] | None: ...

        # display.py
        def display_messages(self, session_id: str, *, hidden: bool = True) -> list[dict[str, Any]]: ...
        def delegate_children(self, session_ids: Sequence[str]) -> list[str]: ...
        def delete_sessions_batched(
            self,
            session_ids: Sequence[str],
            *,
            cascade_delegates: bool = ...,
            require_ended: bool = ...,
            batch_messages: int = ...,
            progress: Callable[[int, int], None] | None = ...,
            cancel: threading.Event | None = ...,
            sessions_dir: Path | None = ...,
            exclude_active_write_guards: bool = ...,
        ) -> dict[str, Any]: ...

        # search.py
        def _side_batch(self) -> AbstractContextManager[None]: ...

        # maintenance.py
        def get_meta(self, key: str) -> str | None: ...
        def set_meta(self, key: str, value: str) -> None: ...
        def vacuum(self) -> int: ...


def _immediate(
    conn: apsw.Connection, fn: Callable[[apsw.Connection], T], on_begun: Callable[[float], None] | None = None
) -> T:
    """`BEGIN IMMEDIATE`, `fn(conn)`, `COMMIT`; rollback on any error. `on_begun` gets the seconds
    BEGIN waited for the lock (the write path's contention signal)."""
    t_begin = time.monotonic()
    conn.execute("BEGIN IMMEDIATE")
    if on_begun is not None:
        on_begun(time.monotonic() - t_begin)
    try:
        result = fn(conn)
        conn.execute("COMMIT")
    except BaseException:
        if not conn.get_autocommit():
            with contextlib.suppress(apsw.Error):
                conn.execute("ROLLBACK")
        raise
    return result


def _writable(path: Path) -> bool:
    """Writable by us *and* not marked read-only (root ignores permissions; we respect them)."""
    for target in (path, path.parent):
        if not os.access(target, os.W_OK) or not (os.stat(target).st_mode & 0o222):
            return False
    return True


def _install_tokenizer(conn: apsw.Connection) -> str | None:
    """Always register the tokenizer, even with `HERMES_CJK_FTS=0` (then `install_cjk_tokenizer`
    declines and the Python twin is registered directly): the variable only stops a new file
    getting a cjk index (`schema_init._may_create_cjk`), and a file that already has cjk triggers
    refuses every insert without the tokenizer."""
    from .cjk import install_cjk_tokenizer, python_tokenizer

    impl = install_cjk_tokenizer(conn)
    if impl is None:
        try:
            python_tokenizer.register(conn)
            impl = "python"
        except apsw.Error:
            return None
    return impl


def statement(sql: str, params: Sequence[Any] = ()) -> Callable[[apsw.Connection], None]:
    """A write of one statement, for `_execute_write` (a typed stand-in for a lambda)."""

    def run(conn: apsw.Connection) -> None:
        conn.execute(sql, params)

    return run


def chunks(seq: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    for i in range(0, len(seq), size):
        yield seq[i : i + size]


def placeholders(items: Iterable[Any]) -> str:
    return ",".join("?" for _ in items)


def live_columns(conn: apsw.Connection, table: str) -> frozenset[str]:
    """`table`'s columns as the file has them now (another program may have added one since this
    store was opened: a write names only what exists at write time); empty without the table.
    `table` is one of the store's own constant names, never input."""
    return frozenset(r[1] for r in conn.execute(f'PRAGMA main.table_info("{table}")'))
