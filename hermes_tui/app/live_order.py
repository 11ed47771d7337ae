"""The session list's order, kept up to date from live changes instead of re-read on each one.

While agents write, the follower reports changes several times a second; re-reading the whole
order (`session_order`: one MAX seek per session, ~90 ms of SQLite and 20k-100k ids decoded at
1M messages) on each of them cost the browser half a core and slowed the writers. Here the
order is read whole once (with its keys), then each batch of changes moves only the sessions
it names: their keys are read again (`order_keys`, a primary-key lookup each), those that still
match the filter are re-inserted at their place (binary search on the same `key DESC, id DESC`
order SQLite sorts by), the others are dropped. New sessions are inserted the same way.

Changes that do not name their sessions (`reset`, deletions counted but not named; under a
filter without children, a parent that ended, re-opened or went, or a new compression tip)
make the next update read the whole order again, and so does any update once `FULL_EVERY_S` has passed since
the last whole read: writes the follower cannot see (token totals, archive flags set by another
program) are picked up within that time, as a re-read on every change picked them up before.

`note()` runs on the UI thread, `ordered()` in one worker at a time (the screen's live-order
gate); a lock hands the noted ids over.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from typing import Any, Protocol

from hermes_tui.app.list_views import narrowed, view_base
from hermes_tui.state import Changes, SessionFilter, order_sort_key

FULL_EVERY_S = 30.0


class _Store(Protocol):
    def session_order(
        self, filter: SessionFilter | None = ..., order: str = ..., with_keys: bool = ...
    ) -> Any: ...

    def order_keys(
        self, session_ids: Iterable[str], filter: SessionFilter | None = ..., order: str = ...
    ) -> dict[str, Any]: ...

    def order_scope(self, session_ids: Iterable[str], filter: SessionFilter | None = ...) -> set[str]: ...

    def list_count(self, filter: SessionFilter | None = ...) -> int: ...

    def active_sessions(self, now: float | None = ..., within_s: float = ...) -> list[str]: ...


def changed_ids(ch: Changes) -> set[str]:
    """The sessions whose place in an order (or presence under a filter) the changes may move."""
    ids: set[str] = {r["id"] for r in ch.new_sessions}
    ids.update(ch.messages, ch.reactivated, ch.ended, ch.reopened, ch.titles, ch.deleted)
    return ids


class IncrementalOrder:
    """The ids of the list for one (filter, order), updated by the sessions that changed."""

    def __init__(self, *, clock: Any = time.monotonic, full_every_s: float = FULL_EVERY_S) -> None:
        self.clock = clock
        self.full_every_s = full_every_s
        self._lock = threading.Lock()
        self._pending: set[str] = set()
        self._recount = True  # the store's session count may have changed
        self._full = True
        self._parents = False  # a session ended, re-opened or went: its children may change kind
        self._adopting: set[str] = set()  # parents of new sessions: their rows count children
        self._what: tuple[SessionFilter, str] | None = None
        self._ids: list[str] = []
        self._keys: dict[str, Any] = {}
        self._read_at = float("-inf")
        self._total: int | None = None
        self.full_reads = 0  # whole-order reads (tests and the bench read them)
        self.moved = 0  # sessions re-keyed incrementally
        #: The sessions whose rows the last `ordered()`'s changes may have changed (the ones it
        #: re-keyed, new sessions' parents): every other one kept its place and its row. None:
        #: it read the whole order, or a parent ended, re-opened or went (any row may differ).
        self.last_moved: set[str] | None = None

    # ------------------------------------------------------------------ UI thread
    def note(self, ch: Changes) -> None:
        """Remember what `ch` may have moved, for the next `ordered()`."""
        with self._lock:
            if ch.reset or ch.sessions_removed:
                self._full = True
            self._pending |= changed_ids(ch)
            if ch.new_sessions or ch.deleted or ch.sessions_removed or ch.reset:
                self._recount = True
            if ch.ended or ch.reopened or ch.deleted or ch.sessions_removed or ch.continued:
                self._parents = True
            if any(r.get("edge_kind") == "compression" for r in ch.new_sessions):
                self._parents = True  # a new tip: folded, its chain is listed under another id
            self._adopting |= {
                str(r["parent_session_id"])
                for r in (*ch.new_sessions, *ch.children)
                if r.get("parent_session_id")
            }

    def invalidate(self) -> None:
        """The list was reloaded (or the store changed under it): read the whole order next time."""
        with self._lock:
            self._full = True
            self._recount = True

    # ------------------------------------------------------------------ worker thread
    def base(self, db: _Store, flt: SessionFilter, order: str) -> list[str]:
        """`session_order(flt, order).ids` as of now (a copy: the caller may keep it)."""
        with self._lock:
            pending, self._pending = self._pending, set()
            full, self._full = self._full, False
            parents, self._parents = self._parents, False
            adopting, self._adopting = self._adopting, set()
        # Without children, a session's presence depends on its parent (a branch's children
        # are listed once it ended 'branched'; a deleted parent's children become roots), and
        # the changes name the parent only: read the whole order then.
        full = full or (parents and not flt.include_children)
        now = self.clock()
        if full or self._what != (flt, order) or now - self._read_at >= self.full_every_s:
            so = db.session_order(flt, order=order, with_keys=True)
            self._ids = list(so.ids)
            keys = so.keys or [None] * len(so.ids)
            if flt.pinned_first:  # the pinned ones first: keys as `order_keys` gives them
                keys = [(1 if i < so.pinned else 0, k) for i, k in enumerate(keys)]
            self._keys = dict(zip(so.ids, keys, strict=True))
            self._what = (flt, order)
            self._read_at = now
            self.full_reads += 1
            self.last_moved = None
            return list(self._ids)
        # The rows of the moved sessions and of new sessions' parents are all that changed, unless
        # a parent ended, re-opened or went (its children's rows show their kind by it).
        self.last_moved = None if parents else set(adopting)
        if pending:
            # Folded (Hermes' list), a change in any session of a chain may move the tip the
            # chain is listed as, or list it as another: every session of the chain is dropped
            # (`order_scope`) and `order_keys` gives the tip back with the chain's key.
            scope = db.order_scope(pending, flt)
            fresh = db.order_keys(scope, flt, order)
            for sid in scope | fresh.keys():
                if sid in self._keys:
                    self._remove(sid)
            for sid, key in fresh.items():
                self._insert(sid, key)
            self.moved += len(pending)
            if self.last_moved is not None:
                self.last_moved |= scope | fresh.keys()
        return list(self._ids)

    def ordered(
        self, db: _Store, flt: SessionFilter, order: str, active_since: tuple[float, float] | None = None
    ) -> tuple[list[str], int]:
        """The list's ids and the store's session count, as the screen's full order read gives
        them: `active_since` = (now, within_s) keeps the "active now" sessions only."""
        ids = self.base(db, flt, order)
        with self._lock:
            recount, self._recount = self._recount, False
        if not narrowed(flt) and active_since is None:
            total = len(ids)
        elif recount or self._total is None:
            total = db.list_count(view_base(flt))  # the length of the view with no filter
        else:
            total = self._total
        self._total = total
        if active_since is not None:
            recent = set(db.active_sessions(*active_since))
            ids = [i for i in ids if i in recent]
        return ids, total

    def _find(self, sk: tuple[Any, ...]) -> int:
        """Index of the first id that sorts after `sk` (the list descends)."""
        ids, keys = self._ids, self._keys
        lo, hi = 0, len(ids)
        while lo < hi:
            mid = (lo + hi) // 2
            other = ids[mid]
            if order_sort_key(other, keys[other]) > sk:
                lo = mid + 1
            else:
                hi = mid
        return lo

    def _remove(self, sid: str) -> None:
        index = self._find(order_sort_key(sid, self._keys[sid]))
        del self._keys[sid]
        if index < len(self._ids) and self._ids[index] == sid:
            del self._ids[index]
        else:  # keys out of step with the list (cannot happen): fall back to a scan
            self._ids.remove(sid)

    def _insert(self, sid: str, key: Any) -> None:
        self._ids.insert(self._find(order_sort_key(sid, key)), sid)
        self._keys[sid] = key
