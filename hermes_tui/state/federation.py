"""Several profiles' stores as one: a merged session list and a federated search.

Ids are only unique within a store, so everything here is addressed by `(profile, id)`.

The stores open and are read on a bounded pool of threads, each store always on the same one,
its home (`store_threads.py`: `SessionDB` keeps one APSW connection per thread, so a store is
always read through the same connection, and the stores are read in parallel). They open in the
background unless asked to wait (`open_stores(wait=False)`): a store is in `profiles` once it
opened, `listen` hears of each one that answers, so a browser over 300 profiles shows the first
ones at once. Every per-store call goes through `Federation.call`/`map`; a failure in one store
is recorded as a `ProfileError` for that profile and never fails the whole list or search.
Searches and their counts run on a second bounded set of threads (`submit_search`), so they
never queue behind the list's reads; a new query first stops what the previous ones still run
there (`cancel_searches`: queued calls dropped, running statements aborted by a progress
handler). `prepare_search` builds each store's newest-first search bounds ahead, on a thread of
its own (`SearchPreparation`), which those cancels never reach.

**The merged list** is an exact k-way merge of each store's own `session_order`: the stores'
orders are taken as they are (so each store's rows keep their relative order, even while an
agent writes to it) and interleaved by the order's key, descending, unknown (NULL) keys last,
ties by profile name and then the store's own order (id descending). The ids of every store are
loaded (as `session_order` does for one store) and, by default, their order keys with them
(`session_order(with_keys=True)`, the same statement: `OrderKeys`). With every key in hand, any
position is found without merging what comes before it: an item's merged position is its own
position plus, in each other run, the count of items before it (one `bisect` per run: that is
`index_of`), and the item at merged position `i` is found by selection over all runs at once
(`_starts`: a weighted median of the runs' middle items as the pivot, each round dropping a
quarter of what is left), so a page anywhere costs O(runs · log n · log N) comparisons plus the
page itself (N items in all: 300 stores cost what 300 bisects do, not 300² of them). The merge can
also read keys through another `KeySource`: `RowKeys` reads them block by block from list rows,
as the merge reaches them, and then the merge reads forward from the start (a deep jump in a
100k-session list reads every row before it). The keys and the lazy merge are in `federation_merge.py`;
the search bounds built ahead in `federation_prepare.py`.

**The federated search** runs `search()` on every store in parallel and merges the pages:
newest (oldest) first exactly by timestamp, ties by profile then the store's own order (id).
Best-match order cannot merge by score: `search()` returns no bm25 score, and scores of
different FTS5 indexes are not comparable anyway (bm25 depends on each index's document count
and average length, so the same message scores differently in a small and a large store). It
interleaves the stores by rank *position*: every store's best hit, then every store's second
best, and so on, ties by profile. Paging over the merged order fetches from each store only as
far as the merge reaches.
"""

from __future__ import annotations

import heapq
import math
import operator
import threading
from bisect import bisect_left, bisect_right
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future
from concurrent.futures import wait as wait_futures
from dataclasses import dataclass, field, replace
from functools import partial
from itertools import islice
from typing import Any, TypeVar, cast

from .db import SessionDB
from .errors import StoreError
from .federation_merge import Key, KeySource, LazyMerge, OrderKeys, asc_key, desc_key, run_key
from .federation_merge import RowKeys as RowKeys  # (the other key source, named here for callers)
from .federation_merge import row_key as row_key
from .federation_prepare import SearchPreparation
from .list_order import ORDERS, SessionFilter, SessionOrder
from .profiles import StoreRef, StoreStatus, classify_error, file_status, open_store, store_workers
from .store_threads import SearchLanes, Token, Worker, run_here, submit_each

T = TypeVar("T")


@dataclass(frozen=True)
class ProfileError:
    """One store's failure in a federated operation: shown next to that profile only."""

    profile: str
    kind: str  # the exception's class name
    message: str
    #: The exception itself (not compared), for a caller that reports it as it was raised.
    error: BaseException | None = field(default=None, compare=False, repr=False)

    @classmethod
    def of(cls, profile: str, exc: BaseException) -> ProfileError:
        return cls(profile, type(exc).__name__, str(exc) or type(exc).__name__, exc)


@dataclass
class Outcome:
    """Per-profile results of `Federation.map`: values of the stores that answered, errors of the rest."""

    values: dict[str, Any] = field(default_factory=dict)
    errors: dict[str, ProfileError] = field(default_factory=dict)


class Federation:
    """The open stores of several profiles, read on a bounded pool of threads.

    Build it with `open_stores(refs)`. `refs` keeps every store, the failed ones with their
    status (for badges); `profiles` names the open ones, in the order given. With `wait=False`
    the stores open in the background: `opening` names those that have not answered yet,
    `listen` hears of each as it answers, `wait` waits for them.
    """

    def __init__(
        self,
        refs: Sequence[StoreRef],
        read_only: bool = False,
        *,
        workers: int | None = None,
        wait: bool = True,
    ) -> None:
        self.read_only = read_only
        self.refs: list[StoreRef] = list(refs)
        names = [r.profile for r in self.refs]
        if len(set(names)) != len(names):
            twice = next(n for n in names if names.count(n) > 1)
            raise ValueError(f"profile {twice!r} given twice")
        #: The open stores by profile; replaced whole when one opens (readers iterate it unlocked).
        self.dbs: dict[str, SessionDB] = {}
        self._homes: dict[str, Worker] = {}
        self._lock = threading.Condition()
        self._closed = False
        self._listeners: list[Callable[[str], None]] = []
        self._search_lock = threading.Lock()
        self._search_tokens: dict[Future[Any], Token] = {}
        self._preparations: list[SearchPreparation] = []
        #: Each store's last order, with the store's version when it was read (`_order_of`).
        self._orders: dict[str, tuple[Any, tuple[int, int], tuple[SessionOrder, bool]]] = {}
        todo: deque[int] = deque()
        for i, ref in enumerate(self.refs):
            found = None if ref.usable else file_status(ref.path)
            if found is not None:  # discovery's `stat` said so, and says so still: never opened
                self.refs[i] = replace(ref, status=found[0], reason=found[1])
            else:
                todo.append(i)
        self._todo = todo
        self._unanswered = {self.refs[i].profile for i in todo}
        size = min(workers or store_workers(), len(todo))
        self._workers = [Worker(f"hermes-store-{k}") for k in range(size)]
        self._hosted = [0] * size  # stores at home on each worker
        self._lanes = SearchLanes(max(1, size))
        self._openers = [Worker(f"hermes-open-{k}", self._open_next) for k in range(size)]
        if wait:
            self.wait()

    # ------------------------------------------------------------------ opening
    def _open_next(self, _opener: Worker) -> bool:
        """Open the next store (on an opener's thread), hand it to its home; False when none is
        left. A slow open holds up only this opener: the homes never open anything."""
        with self._lock:
            if self._closed or not self._todo:
                return False
            i = self._todo.popleft()
            ref = self.refs[i]
        try:
            got, db = open_store(ref, self.read_only)
        except Exception as exc:  # noqa: BLE001 - a bug or an odd file: that store's badge
            got, db = replace(ref, status=StoreStatus.UNREADABLE, reason=f"{type(exc).__name__}: {exc}"), None
        home: Worker | None = None
        if db is not None:
            got, home = self._hand_over(got, db)
            if home is None:
                db = None
        with self._lock:
            closed = self._closed
            if not closed:
                self.refs[i] = got
                if db is not None and home is not None:
                    self._homes[got.profile] = home
                    self.dbs = {**self.dbs, got.profile: db}
                    for prep in self._preparations:
                        prep.add(db)
                self._unanswered.discard(got.profile)
                if not self._unanswered:  # no store will join the builds any more
                    for prep in self._preparations:
                        prep.finish()
                self._lock.notify_all()
        if closed:
            if db is not None:
                db.close()
            return False
        self._tell(got.profile)
        return True

    def _hand_over(self, ref: StoreRef, db: SessionDB) -> tuple[StoreRef, Worker | None]:
        """Give `db` to the home with the fewest stores: it makes its connection, then this
        (opening) thread closes its own. None (the store closed, the ref says why) if the home
        cannot reach it."""
        with self._lock:
            k = min(range(len(self._workers)), key=self._hosted.__getitem__)
            self._hosted[k] += 1
            home = self._workers[k]
        try:
            home.submit(_connect, db).result()
        except Exception as exc:  # noqa: BLE001 - vanished meanwhile, or the federation closes
            with self._lock:
                self._hosted[k] -= 1
            db.close()
            status, reason = (
                classify_error(exc, ref.path)
                if isinstance(exc, StoreError)
                else (
                    StoreStatus.UNREADABLE,
                    f"{type(exc).__name__}: {exc}",
                )
            )
            return replace(ref, status=status, reason=reason), None
        db.release_connection()
        return ref, home

    def listen(self, fn: Callable[[str], None]) -> None:
        """Call `fn(profile)` (on a pool thread) each time a store answers from now on: it opened
        or failed to, or an order it was late with (`session_order(within=...)`) arrived."""
        with self._lock:
            self._listeners.append(fn)

    def _tell(self, profile: str) -> None:
        with self._lock:
            listeners = list(self._listeners)
        for fn in listeners:
            try:
                fn(profile)
            except Exception:  # noqa: BLE001 - a listener's bug must not stop the opening
                pass

    @property
    def opening(self) -> list[str]:
        """The profiles whose stores have not answered yet (opened or failed), in order."""
        with self._lock:
            waiting = set(self._unanswered)
        return [r.profile for r in self.refs if r.profile in waiting]

    def wait(self, timeout: float | None = None, *, first: bool = False) -> bool:
        """Until every store answered (`first`: until one is open, or none is left opening);
        False if `timeout` passed first."""

        def done() -> bool:
            return not self._unanswered or (first and bool(self.dbs))

        with self._lock:
            return self._lock.wait_for(done, timeout)

    # ------------------------------------------------------------------ stores
    @property
    def profiles(self) -> list[str]:
        """The open stores' profiles, in discovery order."""
        dbs = self.dbs
        return [r.profile for r in self.refs if r.profile in dbs]

    @property
    def failed(self) -> list[StoreRef]:
        """The stores that answered without opening (each with its status and reason)."""
        with self._lock:  # both at one moment: a store opening meanwhile is in one of them
            dbs, waiting = self.dbs, set(self._unanswered)
        return [r for r in self.refs if r.profile not in dbs and r.profile not in waiting]

    def ref(self, profile: str) -> StoreRef:
        for r in self.refs:
            if r.profile == profile:
                return r
        raise KeyError(profile)

    def db(self, profile: str) -> SessionDB:
        """The open store of `profile` (KeyError if it is not open). Call it through `call`
        to stay on the store's thread."""
        return self.dbs[profile]

    def submit(self, profile: str, fn: Callable[..., T], *args: Any, **kwargs: Any) -> Future[T]:
        """Run `fn(db, *args, **kwargs)` on `profile`'s thread."""
        db = self.dbs[profile]
        return self._homes[profile].submit(fn, db, *args, **kwargs)

    def submit_each(self, calls: Mapping[str, Callable[[SessionDB], T]]) -> dict[str, Future[T]]:
        """`calls[profile](db)` on each open store's thread, one task per thread for all its
        stores (a live poll of 300 stores is a few thread hops); stores not open are left out."""
        return submit_each(self._homes, self.dbs, calls)

    def submit_search(self, profile: str, fn: Callable[..., T], *args: Any, **kwargs: Any) -> Future[T]:
        """Run `fn(db, *args, **kwargs)` on `profile`'s *search* thread (its own connection):
        searches and counts never queue behind the list's page reads, nor these behind them,
        and `cancel_searches` stops what a superseded query left running or queued there."""
        db = self.dbs[profile]
        with self._search_lock:
            lane = self._lanes.lane(profile)
            if threading.get_ident() == lane.ident:
                lane.install(db)
                return run_here(fn, db, *args, **kwargs)
            token = Token()
            fut = lane.executor.submit(lane.run, token, fn, db, *args, **kwargs)
            self._search_tokens[fut] = token
        fut.add_done_callback(self._forget_search)
        return fut

    def _forget_search(self, fut: Future[Any]) -> None:
        with self._search_lock:
            self._search_tokens.pop(fut, None)

    def cancel_searches(self) -> None:
        """Stop every call on the search threads: the queued ones never start, the running ones
        end at their next SQLite progress check (`SQLITE_INTERRUPT`, every `PROGRESS_STEPS` VM steps,
        even a statement that only starts after this call). A new query calls it before it
        submits its own calls, which run undisturbed."""
        with self._search_lock:
            calls = list(self._search_tokens.items())
        for fut, token in calls:
            token.cancelled = True
            fut.cancel()

    def call(self, profile: str, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """`fn(db, *args, **kwargs)` on `profile`'s thread, waited for (exceptions propagate)."""
        return self.submit(profile, fn, *args, **kwargs).result()

    def map(
        self, fn: Callable[..., Any], profiles: Iterable[str] | None = None, *args: Any, **kwargs: Any
    ) -> Outcome:
        """`fn(db, ...)` on every open store (or `profiles`) in parallel. An exception of one
        store is its `ProfileError`; the others' values are kept."""
        dbs = self.dbs
        names = self.profiles if profiles is None else [p for p in profiles if p in dbs]
        return _gather({p: self.submit(p, fn, *args, **kwargs) for p in names})

    def map_search(
        self, fn: Callable[..., Any], profiles: Iterable[str] | None = None, *args: Any, **kwargs: Any
    ) -> Outcome:
        """`map` on the stores' search threads (see `submit_search`)."""
        dbs = self.dbs
        names = self.profiles if profiles is None else [p for p in profiles if p in dbs]
        return _gather({p: self.submit_search(p, fn, *args, **kwargs) for p in names})

    def interrupt(self, profiles: Iterable[str] | None = None) -> None:
        """Cancel running queries of the stores (from any thread): a superseded search."""
        dbs = self.dbs
        for p in self.profiles if profiles is None else profiles:
            if p in dbs:
                dbs[p].interrupt()

    def prepare_search(self, quiet_for: Callable[[], float], quiet_s: float) -> SearchPreparation:
        """Build every store's newest-first search bounds (`SessionDB.prepare_search`) on a
        thread of its own, each once `quiet_for()` (seconds since the caller's last read) reaches
        `quiet_s`, or at once after `hurry()`; see `SearchPreparation`. Stores that open later
        join it."""
        with self._lock:
            prep = SearchPreparation([self.dbs[p] for p in self.profiles], quiet_for, quiet_s)
            self._preparations.append(prep)
            if not self._unanswered:
                prep.finish()
        return prep

    def close(self) -> None:
        """Stop the opening, the searches and the search builds, close every store on its own
        thread, then stop the threads."""
        with self._lock:
            self._closed = True
            self._todo.clear()
            self._unanswered.clear()
            self._lock.notify_all()
            preparations = list(self._preparations)
        for prep in preparations:  # no build left reading a store while it closes
            prep.stop()
        self.cancel_searches()
        with self._search_lock:
            lanes, self._lanes = self._lanes, SearchLanes(1)
        lanes.shutdown()
        for p in list(self.dbs):
            try:
                self.call(p, SessionDB.close)
            except Exception:  # noqa: BLE001 - closing is best effort, the others still close
                pass
        for worker in self._openers + self._workers:
            worker.shutdown(wait=True)
        self.dbs = {}
        self._homes.clear()
        self._orders.clear()

    def __enter__(self) -> Federation:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ views
    def session_order(
        self,
        filter: SessionFilter | None = None,
        order: str = "last_active",
        profiles: Iterable[str] | None = None,
        keys: KeySource | None = None,
        block: int = 256,
        within: float | None = None,
    ) -> MergedOrder:
        """The merged session list of the open stores (or only `profiles`), see `MergedOrder`.
        `within`: seconds to wait for the other stores once the first answered; those still
        reading then are left out, or merged with their last order (`MergedOrder.pending`), and
        heard of by `listen` when done."""
        return MergedOrder(self, filter, order, profiles, keys, block, within)

    def search(
        self, query: str, sort: str | None = "newest", profiles: Iterable[str] | None = None, **kwargs: Any
    ) -> FederatedSearch:
        """A federated search (see `FederatedSearch`); `kwargs` go to each store's `search()`."""
        return FederatedSearch(self, query, sort=sort, profiles=profiles, **kwargs)

    def orders(
        self, names: Sequence[str], flt: SessionFilter, order: str, with_keys: bool, within: float | None
    ) -> tuple[Outcome, list[str]]:
        """Each store's `session_order` (checked for binary search: `_order_checked`), read
        again only where the store changed since (`_order_of`). With `within`, the stores that
        have not answered `within` seconds after the first are `pending`: left out, or with their
        last order when they were read before."""
        key = (flt, order, with_keys)
        futures = {p: self.submit(p, self._order_of, p, key) for p in names}
        if within is None or not futures:
            return _gather(futures), []
        wait_futures(futures.values(), return_when=FIRST_COMPLETED)
        wait_futures(futures.values(), timeout=within)
        pending = [p for p, fut in futures.items() if not fut.done()]
        for p in pending:  # its order lands in the cache; the listeners re-merge
            futures[p].add_done_callback(partial(self._late, p))
        got = _gather({p: f for p, f in futures.items() if p not in pending})
        # A store read before that is late now (its thread busy with a page or a live poll) keeps
        # its last order here, still named pending: left out, its rows left the list (and the
        # cursor its session) until its fresh order arrived.
        for p in pending:
            kept = self._orders.get(p)
            if kept is not None and kept[0] == key:
                got.values[p] = kept[2]
        return got, pending

    def _late(self, profile: str, _fut: Future[Any]) -> None:
        self._tell(profile)

    def _order_of(
        self, db: SessionDB, profile: str, key: tuple[SessionFilter, str, bool]
    ) -> tuple[SessionOrder, bool]:
        """`profile`'s order for `key`, kept from the last call while the store is unchanged:
        no commit by another connection (`PRAGMA data_version`) nor by this one (its total
        changes). A merge over 300 stores re-reads only those that changed (a live change, a
        store that arrived). On the store's thread."""
        version = (db.data_version(), db._conn().total_changes())
        kept = self._orders.get(profile)
        if kept is not None and kept[0] == key and kept[1] == version:
            return kept[2]
        got = _order_checked(db, key[0], key[1], with_keys=key[2])
        self._orders[profile] = (key, version, got)  # read before it: a commit meanwhile reads again
        return got


def _connect(db: SessionDB) -> None:
    """Make this (home) thread's connection to `db` now."""
    db._conn()


def _gather(futures: dict[str, Future[Any]]) -> Outcome:
    """The values of `futures` by profile; an exception is that profile's `ProfileError`."""
    out = Outcome()
    for p, fut in futures.items():
        try:
            out.values[p] = fut.result()
        except Exception as exc:  # noqa: BLE001 - one store's failure is that store's badge
            out.errors[p] = ProfileError.of(p, exc)
    return out


def open_stores(
    refs: Sequence[StoreRef], read_only: bool = False, *, workers: int | None = None, wait: bool = True
) -> Federation:
    """Open the stores in `refs` (`migrate=False`; `read_only` as asked, a store that refuses
    writes opened read-only), at most `workers` at a time (default `store_workers()`), on the
    threads that will read them. Failures become statuses in `Federation.refs`; a ref that
    discovery's `stat` already found failing is never opened. `wait=False` returns at once and
    opens in the background (see `Federation.listen`)."""
    return Federation(refs, read_only=read_only, workers=workers, wait=wait)


# ---------------------------------------------------------------------- the merged session list
def _order_checked(db: SessionDB, *args: Any, **kwargs: Any) -> tuple[SessionOrder, bool]:
    """`session_order(...)` and whether its keys can be binary searched: present, aligned and
    sorted as the merge compares them (checked on the store's thread, where the order arrives)."""
    got = db.session_order(*args, **kwargs)
    keys = got.keys
    if keys is None or len(keys) != len(got.ids):
        return got, False
    return got, _sorted_desc(keys[: got.pinned]) and _sorted_desc(keys[got.pinned :])


def _sorted_desc(keys: list[Key]) -> bool:
    """`keys` are in `desc_key` order: numbers largest first, then only unknowns (None). In C
    loops (200k keys in tens of ms); a NaN or a non-number fails it (the merge then reads forward)."""
    known = len(keys)
    while known and keys[known - 1] is None:
        known -= 1
    head = cast("list[float]", keys[:known])
    if not set(map(type, head)) <= {int, float}:  # a None (unknown) before a number too
        return False
    return all(map(operator.ge, head, islice(head, 1, None)))


class _OrderRun:
    """One store's `SessionOrder` with its keys fetched block by block (on the store's thread)."""

    def __init__(self, owner: MergedOrder, profile: str, order: SessionOrder) -> None:
        self.owner = owner
        self.profile = profile
        self.order = order
        self.keys: list[Key] = []
        self.failed = False

    def fetch_to(self, stop: int) -> None:
        """Fetch keys up to position `stop` (a failure ends the run where it is, recorded)."""
        stop = min(stop, len(self.order.ids))
        if self.failed or stop <= len(self.keys):
            return
        start = len(self.keys)
        try:
            got = self.owner.fed.call(self.profile, self.owner.key_source.keys, self.order, start, stop)
        except Exception as exc:  # noqa: BLE001 - this store's badge, the list goes on
            self.failed = True
            self.owner.errors[self.profile] = ProfileError.of(self.profile, exc)
            return
        self.keys.extend(got)

    def key(self, pos: int) -> tuple[Any, ...] | None:
        if pos >= len(self.order.ids):
            return None
        if pos >= len(self.keys):
            self.fetch_to(pos + self.owner.block)
            if pos >= len(self.keys):
                return None
        return run_key(self.order, pos, self.keys[pos])


class MergedOrder:
    """One virtual list over several stores, in one order: `(profile, id)` pairs and their rows.

    `len()` is exact from the start (the stores' orders are counted); `pairs(offset, n)` and
    `page(offset, n)` merge only as far as `offset + n`. Per-profile counts in `counts`; stores
    that failed in `errors` (a store that fails part-way contributes what was merged before).
    Not thread-safe: use it from one (worker) thread at a time.
    """

    def __init__(
        self,
        fed: Federation,
        filter: SessionFilter | None = None,
        order: str = "last_active",
        profiles: Iterable[str] | None = None,
        keys: KeySource | None = None,
        block: int = 256,
        within: float | None = None,
    ) -> None:
        if order not in ORDERS:
            raise ValueError(f"unknown order {order!r}; expected one of {', '.join(ORDERS)}")
        self.fed = fed
        self.filter = filter or SessionFilter()
        self.order = order
        self.key_source: KeySource = keys or OrderKeys()
        self.block = max(1, int(block))
        dbs = fed.dbs
        asked = fed.profiles if profiles is None else [p for p in profiles if p in dbs]
        with_keys = bool(getattr(self.key_source, "with_keys", False))
        got, pending = fed.orders(asked, self.filter, order, with_keys, within)
        #: Stores that had not answered in time (`within`): left out, or with their last order
        #: when they were read before; merge again when they answer.
        self.pending: list[str] = pending
        self.errors: dict[str, ProfileError] = dict(got.errors)
        names = [p for p in fed.profiles if p in got.values]
        self._runs = [_OrderRun(self, p, got.values[p][0]) for p in names]
        self._merge = LazyMerge(self._runs)
        self._len = sum(len(r.order) for r in self._runs)
        # With every key in hand (`OrderKeys`, the default) any position is found by binary
        # search (`_starts`), so a far jump costs what the first page costs; otherwise the merge
        # has to read forward from the start.
        self._seek = isinstance(self.key_source, OrderKeys) and all(got.values[p][1] for p in names)

    def __len__(self) -> int:
        return self._len

    @property
    def profiles(self) -> list[str]:
        return [r.profile for r in self._runs]

    @property
    def counts(self) -> dict[str, int]:
        """Sessions per profile matching the filter (the header's per-profile counts)."""
        return {r.profile: len(r.order) for r in self._runs}

    def _prefetch(self, target: int) -> None:
        """Fetch, in parallel, about as many keys per store as reaching `target` will need
        (its share of the list, plus a block); the merge fetches any rest itself."""
        if not self._len:
            return
        jobs: dict[str, Future[Any]] = {}
        for run in self._runs:
            want = min(len(run.order), math.ceil(target * len(run.order) / self._len * 1.25) + self.block)
            if want > len(run.keys) and not run.failed:
                jobs[run.profile] = self.fed.submit(
                    run.profile, self.key_source.keys, run.order, len(run.keys), want
                )
        for run in self._runs:
            fut = jobs.get(run.profile)
            if fut is None:
                continue
            try:
                run.keys.extend(fut.result())
            except Exception as exc:  # noqa: BLE001
                run.failed = True
                self.errors[run.profile] = ProfileError.of(run.profile, exc)

    # ------------------------------------------------------------------ seeking (keys in hand)
    def _before(self, run: int, dk: tuple[Any, ...], rank: int) -> int:
        """How many items of `run` come before an item with order key `dk` of the run whose
        profile ranks `rank` (equal keys: the lower-ranked profile first)."""
        order = self._runs[run].order
        keys = order.keys
        assert keys is not None
        # Pinned items (a group of their own, first) are searched apart from the others.
        lo, hi = (0, order.pinned) if dk[0] == 0 else (order.pinned, len(keys))
        if self._merge._rank[run] < rank:
            return bisect_right(keys, dk[1:], lo, hi, key=desc_key)
        return bisect_left(keys, dk[1:], lo, hi, key=desc_key)

    def _position(self, run: int, pos: int) -> int:
        """Merged position of item `pos` of `run`: its place in its run plus every other run's
        items before it (one binary search per run)."""
        keys = self._runs[run].order.keys
        assert keys is not None
        dk, rank = run_key(self._runs[run].order, pos, keys[pos]), self._merge._rank[run]
        return pos + sum(self._before(j, dk, rank) for j in range(len(self._runs)) if j != run)

    def _starts(self, offset: int) -> list[int] | None:
        """Where each run stands once the merged order's first `offset` items are taken (None:
        cannot happen with sorted runs). Only for runs whose keys are sorted (`_seek`).

        The item at merged position `offset` lies, in each run `j`, within `lo[j] … hi[j]-1`
        (at first the whole run). Each round takes the middle item of every run still open,
        picks the weighted median of them (weights: what is left of each run) as the pivot and
        counts the items before it in every run: exactly `offset`, and the pivot is the item;
        fewer, and everything up to it is dropped; more, and everything from it on. The median
        drops at least a quarter of what is left, so O(log N) rounds of O(runs · log n)."""
        sizes = [len(r.order.ids) for r in self._runs]
        if offset >= self._len:
            return sizes
        ranks = self._merge._rank
        lo, hi = [0] * len(sizes), list(sizes)
        while True:
            middles: list[tuple[tuple[Any, ...], int, int, int]] = []
            for j, run in enumerate(self._runs):
                if lo[j] < hi[j]:
                    keys = run.order.keys
                    assert keys is not None
                    mid = (lo[j] + hi[j]) // 2
                    middles.append(
                        ((run_key(run.order, mid, keys[mid]), ranks[j], mid), hi[j] - lo[j], j, mid)
                    )
            if not middles:
                return None
            middles.sort(key=operator.itemgetter(0))
            half, seen, pick = sum(m[1] for m in middles) / 2, 0, 0
            while (seen := seen + middles[pick][1]) < half:
                pick += 1
            (dk, rank, _pos), _weight, pivot, mid = middles[pick]
            split = [
                mid if j == pivot else lo[j] if lo[j] == hi[j] else self._before(j, dk, rank)
                for j in range(len(sizes))
            ]
            before = sum(split)
            if before == offset:
                return split
            if before < offset:  # the pivot and what precedes it are among the first `offset`
                lo = [max(lo[j], split[j] + (j == pivot)) for j in range(len(sizes))]
            else:  # the pivot and what follows it come after
                hi = [min(hi[j], split[j]) for j in range(len(sizes))]

    def _seek_pairs(self, offset: int, n: int) -> list[tuple[str, str]] | None:
        """`pairs(offset, n)` without merging what comes before `offset` (None: cannot seek)."""
        starts = self._starts(offset)
        if starts is None:
            return None
        heap: list[tuple[tuple[Any, ...], int, int, int]] = []
        for j, pos in enumerate(starts):
            keys = self._runs[j].order.keys
            assert keys is not None
            if pos < len(keys):
                heap.append((run_key(self._runs[j].order, pos, keys[pos]), self._merge._rank[j], pos, j))
        heapq.heapify(heap)
        out: list[tuple[str, str]] = []
        while heap and len(out) < n:
            _dk, rank, pos, j = heapq.heappop(heap)
            run = self._runs[j].order
            out.append((self._runs[j].profile, run.ids[pos]))
            if pos + 1 < len(run.ids):
                assert run.keys is not None
                heapq.heappush(heap, (run_key(run, pos + 1, run.keys[pos + 1]), rank, pos + 1, j))
        return out

    def pairs(self, offset: int, n: int) -> list[tuple[str, str]]:
        """`(profile, id)` of the merged positions `offset … offset+n-1` (fewer at the end)."""
        offset, n = max(0, int(offset)), max(0, int(n))
        if self._seek and len(self._merge.merged) < offset + n:
            got = self._seek_pairs(offset, n)
            if got is not None:
                return got
            self._seek = False  # cannot happen with sorted runs; the forward merge is always right
        if len(self._merge.merged) < offset + n and not self._merge.exhausted:
            self._prefetch(offset + n)
            self._merge.ensure(offset + n)
        return [
            (self._runs[run].profile, self._runs[run].order.ids[pos])
            for run, pos in self._merge.merged[offset : offset + n]
        ]

    def all_pairs(self) -> list[tuple[str, str]]:
        """The whole merged order (fetches every key: for tests, exports and small lists)."""
        return self.pairs(0, self._len)

    def page(self, offset: int, n: int) -> list[dict[str, Any]]:
        """The list rows of `pairs(offset, n)`, each with a `profile` field, read from every store
        of the page in parallel. Rows deleted since the order was taken are skipped; a store that
        fails leaves its rows out and its error in `errors`."""
        pairs = self.pairs(offset, n)
        wanted: dict[str, list[str]] = {}
        for profile, sid in pairs:
            wanted.setdefault(profile, []).append(sid)
        futures = {p: self.fed.submit(p, SessionDB.list_rows, ids) for p, ids in wanted.items()}
        found: dict[tuple[str, str], dict[str, Any]] = {}
        for p, fut in futures.items():
            try:
                for row in fut.result():
                    found[(p, row["id"])] = {**row, "profile": p}
            except Exception as exc:  # noqa: BLE001
                self.errors[p] = ProfileError.of(p, exc)
        return [found[pair] for pair in pairs if pair in found]

    def index_of(self, profile: str, session_id: str) -> int | None:
        """Merged position of `(profile, session_id)`, or None (merges as far as it is)."""
        run_index = next((i for i, r in enumerate(self._runs) if r.profile == profile), None)
        if run_index is None:
            return None
        try:
            pos = self._runs[run_index].order.ids.index(session_id)
        except ValueError:
            return None
        if self._seek:
            return self._position(run_index, pos)
        for i, (run, p) in enumerate(self._merge.merged):
            if run == run_index and p == pos:
                return i
        while not self._merge.exhausted:
            start = len(self._merge.merged)
            self._merge.ensure(start + max(self.block, start))
            for i in range(start, len(self._merge.merged)):
                if self._merge.merged[i] == (run_index, pos):
                    return i
        return None


# ---------------------------------------------------------------------- federated search
SORTS = ("newest", "oldest", "rank")


class _SearchRun:
    """One store's search results, read forward a page at a time (on the store's thread)."""

    def __init__(self, owner: FederatedSearch, profile: str) -> None:
        self.owner = owner
        self.profile = profile
        self.results: list[dict[str, Any]] = []
        self.done = False
        self.route: str | None = None

    def take(self, outcome: Any, asked: int) -> None:
        self.results.extend(outcome.results)
        self.route = outcome.route if self.route in (None, "empty") else self.route
        if len(outcome.results) < asked:
            self.done = True

    def fetch(self, count: int) -> None:
        if self.done:
            return
        try:
            out = self.owner.fed.submit_search(
                self.profile, self.owner._search, len(self.results), count
            ).result()
        except Exception as exc:  # noqa: BLE001 - this store's error, the search goes on
            self.done = True
            self.owner.errors[self.profile] = ProfileError.of(self.profile, exc)
            return
        self.take(out, count)

    def key(self, pos: int) -> tuple[Any, ...] | None:
        if pos >= len(self.results):
            if self.done:
                return None
            self.fetch(max(len(self.results), 32))
            if pos >= len(self.results):
                return None
        sort = self.owner.sort
        if sort == "rank":
            return (pos,)
        ts = self.results[pos].get("timestamp")
        return asc_key(ts) if sort == "oldest" else desc_key(ts)


class FederatedSearch:
    """One query over several stores: `page(offset, limit)` of the merged hits (each with a
    `profile` field), `counts()` of hits per profile, `errors` per profile, `routes` per profile.

    `sort`: `"newest"` (default) / `"oldest"` merge exactly by timestamp; `"rank"` (or None) is
    best match, interleaved by each store's rank position (see the module's doc for why not by
    score). Each store is searched with `search(query, limit=…, offset=…, sort=…, **kwargs)`
    (`kwargs`: `source_filter`, `exclude_sources`, `role_filter`, `include_inactive`, `context`;
    `context` defaults to False here). A page reads every store in parallel, each up to
    `offset + limit` hits (fewer once it has them); earlier pages are kept. Not thread-safe.
    """

    def __init__(
        self,
        fed: Federation,
        query: str,
        *,
        sort: str | None = "newest",
        profiles: Iterable[str] | None = None,
        **kwargs: Any,
    ) -> None:
        sort_norm = (sort or "rank").strip().lower()
        if sort_norm not in SORTS:
            raise ValueError(f"unknown sort {sort!r}; expected one of {', '.join(SORTS)}")
        self.fed = fed
        self.query = query
        self.sort = sort_norm
        kwargs.setdefault("context", False)
        self.kwargs = kwargs
        names = fed.profiles if profiles is None else [p for p in profiles if p in fed.dbs]
        self.errors: dict[str, ProfileError] = {}
        self._runs = [_SearchRun(self, p) for p in names]
        self._merge = LazyMerge(self._runs)

    def _search(self, db: SessionDB, offset: int, limit: int) -> Any:
        return db.search(
            self.query,
            limit=limit,
            offset=offset,
            sort=None if self.sort == "rank" else self.sort,
            **self.kwargs,
        )

    @property
    def profiles(self) -> list[str]:
        return [r.profile for r in self._runs]

    @property
    def routes(self) -> dict[str, str | None]:
        """The route that answered in each store (`search().route`)."""
        return {r.profile: r.route for r in self._runs}

    def _fetch_upto(self, need: int) -> None:
        """Every store's hits up to `need` (those it has not read yet), in parallel, one
        `search()` each: whatever the merge reaches, no store can supply more than `need`."""
        short = [r for r in self._runs if not r.done and len(r.results) < need]
        futures = {
            r.profile: self.fed.submit_search(r.profile, self._search, len(r.results), need - len(r.results))
            for r in short
        }
        for run in short:
            try:
                run.take(futures[run.profile].result(), need - len(run.results))
            except Exception as exc:  # noqa: BLE001 - this store's error, the search goes on
                run.done = True
                self.errors[run.profile] = ProfileError.of(run.profile, exc)

    def page(self, offset: int = 0, limit: int = 20) -> list[dict[str, Any]]:
        """Merged hits `offset … offset+limit-1`, each a `search()` result dict plus `profile`."""
        offset, limit = max(0, int(offset)), max(0, int(limit))
        if len(self._merge.merged) < offset + limit and not self._merge.exhausted:
            self._fetch_upto(max(offset + limit, 1))
        self._merge.ensure(offset + limit)
        return [
            {**self._runs[run].results[pos], "profile": self._runs[run].profile}
            for run, pos in self._merge.merged[offset : offset + limit]
        ]

    def counts(self, cap: int = 10_000) -> dict[str, tuple[int, bool]]:
        """Hits per profile, `(n, exact)` as `search_count` gives them (in parallel); a store
        that fails is left out and its error recorded."""
        kw = {
            k: v
            for k, v in self.kwargs.items()
            if k in ("source_filter", "exclude_sources", "role_filter", "include_inactive")
        }
        sort = None if self.sort == "rank" else self.sort
        out = self.fed.map_search(SessionDB.search_count, self.profiles, self.query, cap=cap, sort=sort, **kw)
        self.errors.update(out.errors)
        return dict(out.values)
