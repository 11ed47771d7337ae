"""Several Hermes profiles' stores in the browser: which stores to open, and the
per-store reads the main screen, the session list and the search pane make through them.

The store layer does the hard parts (`hermes_tui.state.profiles`: discovery and a status per
store; `hermes_tui.state.federation`: one thread per store, the exact merged order, federated
search). This module adapts them to the widgets, which were written for one store:

- `StoreChoice` is what the command line asked for (`--all`, `--profile NAME`, `--db PATH`…)
  and `StoreChoice.refs()` the stores it names.
- `BrowserStores` wraps the `Federation`: the list's row and live-status sources, the search
  pane's searcher / titles / counter (each new query stops the searches the previous keystrokes
  left running), and `db_for(profile)` for actions on the owning store. Its first order starts
  each store's one-time newest-first search build in the background (`prepare_search`). The
  stores open in the background on a bounded pool: `settle` waits for the first ones, and an
  order leaves out the stores that have not answered `ARRIVE_S` after the first (`pending`), so
  300 profiles show the first stores' sessions at once and merge the others as they answer.
- `MergedKeys` is the session list's sequence over a `MergedOrder`: keys `(profile, id)`, read
  in chunks where a worker asked (`peek` never reads, so drawing never waits).
- `federated_prefetch.federate` makes an app open several stores, and starts opening them and
  merging the first page while Textual starts; `open_chosen` takes that result.

Ids are only unique within a store: in federated mode every key is `(profile, id)`.
Nothing here imports Textual; every method that reads a store is called from a worker thread.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, overload

from rich.text import Text

from hermes_tui.app.header_text import HeaderFacts, stores_header
from hermes_tui.app.usage_view import FederatedUsage, UsageSource
from hermes_tui.state import (
    FederatedSearch,
    Federation,
    MergedOrder,
    ProfileError,
    SessionDB,
    SessionFilter,
    StoreRef,
    StoreStatus,
    discover_stores,
    hermes_root,
    open_stores,
    same_file_key,
)

#: A federated list key: (profile, session id).
Key = tuple[str, str]

#: The stores' search builds (`BrowserStores.prepare_search`) wait for this long without a read by
#: the list or the search (as full collections wait for quiet input, `gc_policy.py`): the first
#: jumps after first paint would otherwise share two cores with a 0.7 s scan at 1M messages.
PREPARE_QUIET_S = 1.0

#: Keys a live re-merge reads ahead (two of the list's pages).
LIVE_FIRST = 2 * 50

#: How long an order (and the first open) waits for the other stores once the first answered:
#: a few small stores all answer well within it, so they paint at once, merged exactly; 300
#: stores, or one that is slow (locked, cold, on a network file system), answer later and are
#: merged in then (`OrderResult.pending`, `Federation.listen`).
ARRIVE_S = 0.15


@dataclass(frozen=True)
class StoreChoice:
    """The stores the browser was asked to open.

    `all_profiles`: every discovered store (`--all`); `profiles`: the named ones (`--profile`,
    repeatable); `paths`: explicit files (`--db`, repeatable). `home` stands in for
    `$HERMES_HOME` (tests). The *current* store (what `p` toggles back to) is the first named
    profile, else the first path, else the store `$HERMES_HOME` points at.
    """

    all_profiles: bool = False
    profiles: tuple[str, ...] = ()
    paths: tuple[Path, ...] = ()
    home: Path | None = None
    #: The current profile when it is not the one the rest implies (`all_stores` keeps it).
    prefer: str | None = None

    def refs(self) -> tuple[list[StoreRef], str | None]:
        """`(stores to open, the current profile)`; an unknown `--profile` name is a ref whose
        status says so (the others still open). Only `stat` is used here: opening classifies."""
        found = discover_stores(self.paths, home=self.home, probe=False)
        by_name = {r.profile: r for r in found}
        path_refs = [r for p in self.paths for r in found if same_file_key(r.path) == same_file_key(p)]
        current = next((r.profile for r in found if r.current), None)
        if self.all_profiles:
            chosen = list(found)
        else:
            chosen = []
            for name in dict.fromkeys(self.profiles):
                ref = by_name.get(name)
                if ref is None:  # its badge says "missing", the others open
                    path = hermes_root(self.home) / "profiles" / name / "state.db"
                    ref = StoreRef(name, path, "profile", status=StoreStatus.MISSING)
                chosen.append(ref)
            chosen += [r for r in path_refs if r not in chosen]
        if self.prefer is not None:
            current = self.prefer
        elif self.profiles:
            current = self.profiles[0]
        elif self.paths and path_refs:
            current = path_refs[0].profile
        if current not in {r.profile for r in chosen}:
            current = next((r.profile for r in chosen if r.usable), None)
        return chosen, current


def all_stores(choice: StoreChoice, current: str | None = None) -> StoreChoice:
    """The choice `p` widens to: every discovered store, plus the explicit paths; `current`
    (default: the choice's own current profile) stays the one `p` narrows back to."""
    prefer = current or choice.prefer or (choice.profiles[0] if choice.profiles else None)
    return StoreChoice(all_profiles=True, paths=choice.paths, home=choice.home, prefer=prefer)


def open_chosen(app: Any, choice: StoreChoice, read_only: bool) -> tuple[BrowserStores, list[str], list[str]]:
    """The stores of `choice` with their source and model lists (a worker thread): those the
    prefetch opened when it is for this choice, else opened now (the first ones: `settle`)."""
    prefetch = getattr(app, "stores_prefetch", None)
    if prefetch is not None:
        app.stores_prefetch = None
        got = prefetch.take(choice, read_only)
        if got is not None:
            return got.stores, got.sources, got.models
        prefetch.discard()
    stores = BrowserStores.open(choice, read_only, wait=False)
    try:
        stores.settle()
        return stores, stores.values("source"), stores.values("model")
    except BaseException:
        stores.close()
        raise


class Arrivals:
    """The profiles that answered since the screen last took them (`take`), with one message on
    its way at a time: `post` is called by the first `add`, then not again until the screen
    `rearm`s (a moment after it took them, so 300 stores answering over a second are a handful of
    messages and re-merges, not 300). `add` is safe from any thread (the federation's listener)."""

    def __init__(self, post: Callable[[], object]) -> None:
        self._post = post
        self._lock = threading.Lock()
        self._profiles: set[str] = set()
        self._posted = False

    def add(self, profile: str) -> None:
        with self._lock:
            self._profiles.add(profile)
            if self._posted:
                return
            self._posted = True
        self._post()

    def poke(self) -> None:
        """Post one message even though nobody answered (the screen catches up with stores that
        answered before it listened)."""
        with self._lock:
            if self._posted:
                return
            self._posted = True
        self._post()

    def take(self) -> set[str]:
        """The profiles that answered since the last `take` (no message is posted until
        `rearm`)."""
        with self._lock:
            out, self._profiles = self._profiles, set()
        return out

    def rearm(self) -> None:
        """Post again for what answered since the last `take`, or on the next `add`."""
        with self._lock:
            if not self._profiles:
                self._posted = False
                return
        self._post()


class MergedKeys(Sequence[Key]):
    """The session list's keys over a `MergedOrder`, merged lazily and safely across threads.

    `MergedOrder` is not thread-safe, so every read of it happens under a lock, from a worker
    (the list's page worker slices; `ensure`); the event loop only `peek`s at positions already
    read (None otherwise: the row is drawn as a placeholder until its page arrives). Positions
    are kept in chunks of `CHUNK`, each read on its own: with the stores' keys in hand the
    merged order finds any chunk by binary search, so a far jump reads only the chunk it lands
    in (not every position before it). Slicing or iterating reads as far as needed.
    """

    CHUNK = 256

    def __init__(self, merged: MergedOrder) -> None:
        self.merged = merged
        self._chunks: dict[int, list[Key]] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self.merged)

    def ensure(self, start: int, stop: int) -> None:
        """Read positions `start … stop-1` (a worker thread)."""
        size = self.CHUNK
        start, stop = max(0, start), min(max(0, stop), len(self.merged))
        if start >= stop:
            return
        wanted = range(start // size, (stop - 1) // size + 1)
        if all(c in self._chunks for c in wanted):
            return
        with self._lock:
            missing = [c for c in wanted if c not in self._chunks]
            while missing:  # each run of consecutive missing chunks in one read
                first = last = missing.pop(0)
                while missing and missing[0] == last + 1:
                    last = missing.pop(0)
                got = self.merged.pairs(first * size, (last - first + 1) * size)
                for c in range(first, last + 1):
                    self._chunks[c] = got[(c - first) * size : (c - first + 1) * size]

    def upto(self, stop: int) -> None:
        """Read positions `0 … stop-1` (a worker thread)."""
        self.ensure(0, stop)

    def peek(self, index: int) -> Key | None:
        """The key at `index` if already read (never merges: safe on the event loop)."""
        if index < 0:
            return None
        chunk = self._chunks.get(index // self.CHUNK)
        offset = index % self.CHUNK
        return chunk[offset] if chunk is not None and offset < len(chunk) else None

    @overload
    def __getitem__(self, index: int) -> Key: ...
    @overload
    def __getitem__(self, index: slice) -> list[Key]: ...
    def __getitem__(self, index: int | slice) -> Key | list[Key]:
        if isinstance(index, slice):
            start, stop, step = index.indices(len(self))
            if step == 1:
                self.ensure(start, stop)
            else:
                self.ensure(0, len(self))
            return [self._get(i) for i in range(start, stop, step)]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        self.ensure(index, index + 1)
        return self._get(index)

    def _get(self, index: int) -> Key:
        return self._chunks[index // self.CHUNK][index % self.CHUNK]

    def __iter__(self) -> Iterator[Key]:
        self.ensure(0, len(self))
        return iter([self._get(i) for i in range(len(self))])

    def __contains__(self, key: object) -> bool:
        return isinstance(key, tuple) and len(key) == 2 and self.index_or_none(key) is not None

    def index_or_none(self, key: Key) -> int | None:
        """Position of `key` (binary searched when the stores' keys are in hand; otherwise
        merged as far as it is), or None. A worker thread: it may wait for another read."""
        with self._lock:
            found = self.merged.index_of(key[0], key[1])
        if found is not None:
            self.ensure(found, found + 1)
        return found

    def index(self, value: Any, start: int = 0, stop: int | None = None) -> int:
        found = self.index_or_none(value) if isinstance(value, tuple) and len(value) == 2 else None
        if found is None or found < start or (stop is not None and found >= stop):
            raise ValueError(f"{value!r} is not in the list")
        return found


@dataclass
class OrderResult:
    """A merged order as the list shows it (built in a worker)."""

    keys: MergedKeys | list[Key]
    keep_index: int | None
    counts: dict[str, int]
    errors: dict[str, ProfileError]
    total: int
    seconds: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)
    #: Stores left out because they had not answered yet (merged again when they do).
    pending: list[str] = field(default_factory=list)


class BrowserStores:
    """The open stores of a federated browser and the reads the widgets make through them.

    `refs` keeps every store with its status (badges for the failed ones); `current` is the
    profile `p` narrows the list to. Every method reading a store runs from a worker thread
    and reaches each store on its own thread (`Federation`).
    """

    def __init__(self, fed: Federation, current: str | None, choice: StoreChoice) -> None:
        self.fed = fed
        self.choice = choice
        self._current = current
        self._search: FederatedSearch | None = None
        self._search_key: tuple[Any, ...] | None = None
        self._search_lock = threading.Lock()
        #: Hits per profile of the last counted search (the search pane's status line).
        self.last_counts: dict[str, tuple[int, bool]] = {}
        #: An order computed ahead (`seed_order`): (filter, order, result, first rows, versions).
        self._seeded: tuple[SessionFilter, str, OrderResult, list[dict[str, Any]], dict[str, int]] | None = (
            None
        )
        #: `hurry()` of the stores' search builds, once started (`prepare_search`).
        self._hurry_prepare: Callable[[], None] | None = None
        #: When a widget last read through these stores (the search builds wait for quiet).
        self._last_read = time.monotonic()
        #: The stores the filter menus' values were last read from (`values`).
        self.values_from: set[str] = set()
        #: Every store that answered so far (opened, failed, or came with a late order), and who
        #: hears of the next ones (`listen`): heard from the start, as the first merge may be
        #: read (while Textual starts) before the screen listens.
        self._answers_lock = threading.Lock()
        self._answered: set[str] = set()
        self._listener: Callable[[str], None] | None = None
        fed.listen(self._heard)

    @classmethod
    def open(cls, choice: StoreChoice, read_only: bool = False, *, wait: bool = True) -> BrowserStores:
        """Discover the chosen stores and open them on a bounded pool (a worker thread); with
        `wait=False` they open in the background (`settle` waits for the first ones)."""
        refs, current = choice.refs()
        return cls(open_stores(refs, read_only=read_only, wait=wait), current, choice)

    def _heard(self, profile: str) -> None:
        with self._answers_lock:
            self._answered.add(profile)
            listener = self._listener
        if listener is not None:
            listener(profile)

    def listen(self, fn: Callable[[str], None]) -> None:
        """Call `fn(profile)` (on a pool thread) each time a store answers, and at once for each
        one that answered before: a store late for the first merge whose order came before the
        screen listened would otherwise be waited for forever (`StoresWatch.behind` counts a
        pending store as on its way)."""
        with self._answers_lock:
            self._listener = fn
            before = sorted(self._answered)
        for profile in before:
            fn(profile)

    def settle(self, grace: float = ARRIVE_S) -> None:
        """Until a store is open (or none is left to open), then `grace` seconds more for the
        others (a worker thread): a few stores are then all open, 300 are not yet."""
        self.fed.wait(first=True)
        self.fed.wait(grace)

    # ------------------------------------------------------------------ stores
    @property
    def current(self) -> str | None:
        """The profile `p` narrows to: the chosen one while it is open or still opening, else
        the first open store."""
        wanted = self._current
        if wanted is not None and (wanted in self.fed.dbs or wanted in self.fed.opening):
            return wanted
        profiles = self.fed.profiles
        return profiles[0] if profiles else None

    @property
    def refs(self) -> list[StoreRef]:
        return self.fed.refs

    @property
    def profiles(self) -> list[str]:
        """The open stores' profiles."""
        return self.fed.profiles

    @property
    def failed(self) -> list[StoreRef]:
        """Stores that could not be opened (each shown as a badge with its reason)."""
        return self.fed.failed

    @property
    def opening(self) -> list[str]:
        """Stores still opening (they join the list as they answer)."""
        return self.fed.opening

    def db_for(self, profile: str | None) -> SessionDB | None:
        """The open store of `profile` (None if it is not open)."""
        return self.fed.dbs.get(profile) if profile is not None else None

    def submit_each(self, calls: Any) -> dict[str, Future[Any]]:
        """``{profile: fn}`` run as ``fn(db)`` on each store's own thread (the live follower's
        polls: `Federation.submit_each`)."""
        return self.fed.submit_each(calls)

    def key(self, profile: str | None, session_id: Any) -> Any:
        """The list's key of a session: `(profile, id)`."""
        return (profile, session_id)

    #: Over several stores a session's profile is shown (the transcript's title, the palette).
    shows_profile = True

    def db_at(self, path: Any) -> SessionDB | None:
        """The open store whose file is ``path`` (None if none is)."""
        return next((db for db in self.fed.dbs.values() if db.db_path == path), None)

    def each(
        self, fn: Callable[..., Any], profiles: Sequence[str] | None, *args: Any
    ) -> list[tuple[str | None, Any]]:
        """``fn(db, *args)`` on each store of ``profiles`` (None: every open store) in parallel
        (worker thread): ``[(profile, answer)]`` in the stores' order; a store that fails is
        left out."""
        got = self.fed.map(fn, profiles, *args)
        return [(p, got.values[p]) for p in self.profiles if p in got.values]

    def title_rows(
        self, flt: SessionFilter, profiles: Sequence[str] | None, limit: int
    ) -> list[dict[str, Any]]:
        """The list rows (each with its ``profile``) of the first ``limit`` sessions of ``flt``
        over ``profiles``' merged order, most recently active first (worker thread)."""
        merged = self.fed.session_order(flt, order="last_active", profiles=profiles)
        return self.list_rows(MergedKeys(merged)[:limit])

    def header(self, facts: HeaderFacts) -> tuple[Text, str | None]:
        """The info line over the stores (each profile's sessions, a badge per store that failed)
        and its tooltip (the failures' reasons)."""
        return stores_header(facts.ready, facts.counts, self._read_only, len(self.opening), self.failed)

    def usage_source(self) -> UsageSource | None:
        """What the Usage screen reads: every open store, added up (None when none is open)."""
        profiles = tuple(self.profiles)
        return FederatedUsage(self.fed, profiles) if profiles else None

    def _read_only(self, profile: str) -> bool:
        ref = self.ref(profile)
        return ref is not None and (ref.read_only or self.fed.read_only)

    def ref(self, profile: str) -> StoreRef | None:
        try:
            return self.fed.ref(profile)
        except KeyError:
            return None

    def close(self) -> None:
        self.fed.close()  # stops the search builds first

    def prepare_search(self) -> None:
        """Build every store's newest-first search bounds in the background, once (as the
        one-store browser does after first paint): otherwise the first newest-first search of
        each store builds them inline (0.7 s at 1M messages, 3-4 s at 10M), and the next
        keystroke, which cancels that search, throws the build away. The builds wait for a quiet
        moment (`PREPARE_QUIET_S` without a read by the list or the search) or the first search,
        whichever comes first."""
        if self._hurry_prepare is None:
            self._hurry_prepare = self.fed.prepare_search(self._quiet_for, PREPARE_QUIET_S).hurry

    def _read(self) -> None:
        self._last_read = time.monotonic()

    def _searching(self) -> None:
        """A search needs the builds now: they start (or go on) without waiting for quiet, on
        their own thread, where the next keystroke's cancel cannot throw them away."""
        self.prepare_search()
        assert self._hurry_prepare is not None
        self._hurry_prepare()

    def _quiet_for(self) -> float:
        """Seconds since a widget last read through these stores."""
        return time.monotonic() - self._last_read

    # ------------------------------------------------------------------ the list
    def order(
        self,
        flt: SessionFilter,
        order: str,
        profiles: Sequence[str] | None,
        keep: Key | None,
        first: int,
        active_since: tuple[float, float] | None = None,
        *,
        prepare: bool = True,
    ) -> OrderResult:
        """The merged order of `profiles` (None: every open store) with its first `first` keys
        merged and the position of `keep` (worker thread). `active_since=(now, within_s)` keeps
        only the sessions active now ("active now", `a`). `prepare`: start the search's one-time
        build (`prepare_search`) once this order is on its way to the screen (the open prefetch,
        which runs while Textual starts, passes False)."""
        self._read()
        try:
            seeded = self._take_seeded(flt, order, profiles, active_since)
            if seeded is not None:
                if keep is not None:
                    seeded.keep_index = seeded.keys.index_or_none(keep)  # type: ignore[union-attr]
                return seeded
            merged = self.fed.session_order(flt, order=order, profiles=profiles, within=ARRIVE_S)
            keys = MergedKeys(merged)
            if active_since is not None:
                return self._active_only(keys, merged, keep, active_since)
            keys.upto(first)
            keep_index = keys.index_or_none(keep) if keep is not None else None
            return OrderResult(
                keys, keep_index, merged.counts, dict(merged.errors), len(merged), pending=merged.pending
            )
        finally:
            if prepare:  # after first paint's order, on a thread of its own (list and search
                self.prepare_search()  # threads stay free)

    def orders(
        self,
        flt: SessionFilter,
        order: str,
        profiles: Sequence[str] | None,
        keep: Key | None,
        first: int,
        active_since: tuple[float, float] | None = None,
        cancelled: Callable[[], bool] = lambda: False,
    ) -> Iterator[OrderResult]:
        """The order as the list takes it (`order()`: the first one is the one the open prefetch
        merged, when it is the one asked for)."""
        yield self.order(flt, order, profiles, keep, first, active_since)

    def live_order(
        self,
        flt: SessionFilter,
        order: str,
        profiles: Sequence[str] | None,
        active_since: tuple[float, float] | None,
        moves: Any = None,
    ) -> OrderResult:
        """The merged order again after live changes (worker thread), its first page merged.
        (``moves``, one store's incremental order, is for `OneStore`: the stores' orders are
        merged again.)"""
        return self.order(flt, order, profiles, None, first=LIVE_FIRST, active_since=active_since)

    def seed_order(
        self, flt: SessionFilter, order: str, result: OrderResult, first_rows: list[dict[str, Any]]
    ) -> None:
        """Keep `result` (an `order()` over every store, computed ahead while the app starts) for
        the first `order()` asking for the same list, with the rows of its first page."""
        versions = self.fed.map(SessionDB.data_version).values
        self._seeded = (flt, order, result, first_rows, versions)

    def _take_seeded(
        self,
        flt: SessionFilter,
        order: str,
        profiles: Sequence[str] | None,
        active_since: tuple[float, float] | None,
    ) -> OrderResult | None:
        """The seeded order if it is the one asked for and no store changed since (each store's
        `data_version` on the connection that read it); used once."""
        seeded, self._seeded = self._seeded, None
        if seeded is None or profiles is not None or active_since is not None:
            return None
        s_flt, s_order, result, rows, versions = seeded
        if (s_flt, s_order) != (flt, order) or self.fed.map(SessionDB.data_version).values != versions:
            return None
        if rows:
            result.extra["first_rows"] = rows
        return result

    def _active_only(
        self, keys: MergedKeys, merged: MergedOrder, keep: Key | None, since: tuple[float, float]
    ) -> OrderResult:
        """The "active now" filter over every store: the merged order kept to each store's active sessions
        (a few hundred at most), in order. Walks the whole merged order once, as one store's
        filter walks its ids."""
        now, within = since
        got = self.fed.map(SessionDB.active_sessions, merged.profiles, now, within)
        active = {(p, sid) for p, ids in got.values.items() for sid in ids}
        kept = [k for k in keys if k in active]
        counts = {p: sum(1 for k in kept if k[0] == p) for p in merged.profiles}
        errors = {**merged.errors, **got.errors}
        keep_index = kept.index(keep) if keep in active and keep in kept else None
        return OrderResult(kept, keep_index, counts, errors, len(merged), pending=merged.pending)

    def list_rows(self, keys: Sequence[Key]) -> list[dict[str, Any]]:
        """List rows of `keys` in their order, each with its `profile`; read from every store of
        the page in parallel (rows deleted meanwhile are left out; a failing store raises)."""
        self._read()
        wanted: dict[str, list[str]] = {}
        for profile, sid in keys:
            wanted.setdefault(profile, []).append(sid)
        dbs = self.fed.dbs
        futures: dict[str, Future[list[dict[str, Any]]]] = {
            p: self.fed.submit(p, SessionDB.list_rows, ids) for p, ids in wanted.items() if p in dbs
        }
        found: dict[Key, dict[str, Any]] = {}
        for p, fut in futures.items():
            for row in fut.result():
                found[(p, row["id"])] = {**row, "profile": p}
        return [found[k] for k in keys if k in found]

    def live_status(self, keys: Sequence[Key], now: float) -> dict[Key, dict[str, Any]]:
        """Live statuses keyed `(profile, id)` (the Live column)."""
        self._read()
        wanted: dict[str, list[str]] = {}
        for profile, sid in keys:
            wanted.setdefault(profile, []).append(sid)
        dbs = self.fed.dbs
        futures = {
            p: self.fed.submit(p, SessionDB.live_status, ids, now) for p, ids in wanted.items() if p in dbs
        }
        out: dict[Key, dict[str, Any]] = {}
        for p, fut in futures.items():  # read in parallel, one store per thread
            for sid, status in fut.result().items():
                out[(p, sid)] = status
        return out

    def values(self, column: str) -> list[str]:
        """Distinct `source`/`model` values over every open store, most common first (the
        stores read are kept in `values_from`: stores that open later are read again)."""
        names = self.fed.profiles
        self.values_from = set(names)
        got = self.fed.map(SessionDB.distinct_values, names, column)
        totals: dict[str, int] = {}
        for pairs in got.values.values():
            for value, n in pairs:
                if value:
                    totals[str(value)] = totals.get(str(value), 0) + int(n or 0)
        return [v for v, _n in sorted(totals.items(), key=lambda kv: (-kv[1], kv[0]))]

    # ------------------------------------------------------------------ search
    def searcher(self, profiles: Sequence[str] | None = None) -> Any:
        """The search pane's `searcher` over `profiles` (None: every open store)."""
        names = tuple(profiles) if profiles is not None else None

        def search(query: str, **kwargs: Any) -> tuple[list[dict[str, Any]], str]:
            limit = int(kwargs.pop("limit", 20))
            offset = int(kwargs.pop("offset", 0))
            sort = kwargs.pop("sort", "newest")
            self._read()
            self._searching()
            key = (query, sort, names, tuple(sorted((k, repr(v)) for k, v in kwargs.items())))
            if offset == 0:
                # A new query (each keystroke): what the previous ones left running or queued on
                # the stores' search threads is stopped first, so this one does not wait for it.
                self.fed.cancel_searches()
            with self._search_lock:
                if offset == 0 or self._search is None or self._search_key != key:
                    self._search = self.fed.search(query, sort=sort or "rank", profiles=names, **kwargs)
                    self._search_key = key
                hits = self._search.page(offset, limit)
                routes = sorted({r for r in self._search.routes.values() if r and r != "empty"})
                errors = dict(self._search.errors)
            if errors and not hits and len(errors) >= len(self._search.profiles):
                first = next(iter(errors.values()))
                raise RuntimeError(f"{first.profile}: {first.message}")
            return hits, "+".join(routes) if routes else "empty"

        return search

    def titles(self, keys: list[Key]) -> dict[Key, dict[str, Any]]:
        """The search pane's `titles`: list rows by `(profile, id)`."""
        return {(r["profile"], r["id"]): r for r in self.list_rows(keys)}

    def counter(self, profiles: Sequence[str] | None = None) -> Any:
        """The search pane's `counter`: `(total, exact, {profile: (n, exact)})` over `profiles`
        (None: every store open when it counts)."""
        names = list(profiles) if profiles is not None else None

        def count(query: str, **kwargs: Any) -> tuple[int, bool, dict[str, tuple[int, bool]]]:
            cap = int(kwargs.pop("cap", 10_000))
            self._read()
            self._searching()
            got = self.fed.map_search(SessionDB.search_count, names, query, cap=cap, **kwargs)
            per = {p: (int(n), bool(exact)) for p, (n, exact) in got.values.items()}
            self.last_counts = per
            return sum(n for n, _e in per.values()), all(e for _n, e in per.values()), per

        return count
