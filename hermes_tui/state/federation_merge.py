"""The merged session list's keys and its lazy k-way merge (`federation.MergedOrder` uses them).

A store's order keys come from a `KeySource`: `OrderKeys` (every key, read with the order, so any
position is found by binary search) or `RowKeys` (block by block, from list rows). `row_key` is
the value `session_order` sorts by, and `desc_key`/`asc_key`/`run_key` the comparable keys of a
merge: unknown (NULL) keys last, ties by profile, then the store's own order. `LazyMerge` merges
the runs only as far as asked.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from typing import Any, Protocol

from .db import SessionDB
from .listing import ORDERS, SessionOrder

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1

Key = float | int | None


class KeySource(Protocol):
    """Where the merge gets a store's order keys: `keys(db, order, start, stop)` returns the keys
    of `order.ids[start:stop]`, aligned, with exactly the value `session_order` sorted by.
    `with_keys`: whether the stores' orders should be taken with `session_order(with_keys=True)`."""

    with_keys: bool

    def keys(self, db: SessionDB, order: SessionOrder, start: int, stop: int) -> list[Key]: ...


def _num(value: Any) -> float | int:
    """`num_sql`'s value from a cleaned row: a number, else 0."""
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else 0


def row_key(order: str, row: dict[str, Any]) -> Key:
    """The key `session_order(order=…)` sorts by, recomputed from a `list_rows` row (whose
    values are cleaned exactly as the order's SQL cleans them: dates outside [0, 3000-01-01]
    and non-numbers unknown, counters that are not numbers 0)."""
    if order == "last_active":
        return row.get("last_active")
    if order == "started":
        return row.get("started_at")
    if order == "messages":
        return _num(row.get("message_count"))
    if order == "tokens":
        a, b = _num(row.get("input_tokens")), _num(row.get("output_tokens"))
        total = a + b
        if isinstance(total, int) and not _INT64_MIN <= total <= _INT64_MAX:
            return float(a) + float(b)  # SQLite's integer `+` overflows into REAL
        return total
    if order == "cost":
        actual = row.get("actual_cost_usd")
        return (
            actual
            if isinstance(actual, (int, float)) and not isinstance(actual, bool)
            else _num(row.get("estimated_cost_usd"))
        )
    raise ValueError(f"unknown order {order!r}; expected one of {', '.join(ORDERS)}")


class RowKeys:
    """Keys through the public `list_rows` (one query per block of ids).

    Reads a block's list rows to learn their keys: a few ms per 256 rows, paid only for the part
    of the list the merge reaches (a deep jump pays for every row before it: seconds at 100k).
    `OrderKeys` is the default. An id deleted since the order was taken keeps its predecessor's
    key (its row is skipped when the page is read), so the store's run stays in order.
    """

    with_keys = False

    def keys(self, db: SessionDB, order: SessionOrder, start: int, stop: int) -> list[Key]:
        ids = order.ids[start:stop]
        by_id = {r["id"]: row_key(order.order, r) for r in db.list_rows(ids)}
        out: list[Key] = []
        prev: Key = None
        for i in ids:
            prev = by_id.get(i, prev)
            out.append(prev)
        return out


class OrderKeys:
    """Keys taken with the ids (`session_order(with_keys=True)`: one statement per store, the
    very values it sorted by), so reaching any position of the merged list costs only the merge
    itself. An order taken without keys (another caller's) falls back to `RowKeys`."""

    with_keys = True

    def __init__(self) -> None:
        self._fallback = RowKeys()

    def keys(self, db: SessionDB, order: SessionOrder, start: int, stop: int) -> list[Key]:
        if order.keys is None:
            return self._fallback.keys(db, order, start, stop)
        return order.keys[start:stop]


def desc_key(value: Any) -> tuple[int, Any]:
    """Sort key for "largest first, unknown last" (SQLite's `ORDER BY x DESC` with NULLs);
    a non-number (never produced by the stores' cleaned values) sorts with the unknown ones."""
    if (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and not (isinstance(value, float) and math.isnan(value))
    ):
        return (0, -value)
    return (1, 0)


def asc_key(value: Any) -> tuple[int, Any]:
    """Sort key for "smallest first, unknown last"."""
    if (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and not (isinstance(value, float) and math.isnan(value))
    ):
        return (0, value)
    return (1, 0)


class _Run(Protocol):
    """One store's ordered sequence, readable from the front: `key(pos)` (None past the end)."""

    profile: str

    def key(self, pos: int) -> tuple[Any, ...] | None: ...


class LazyMerge:
    """Merges runs by `(run key, profile rank, position)`, only as far as it is asked to.

    Each run's relative order is kept whatever its keys are (a run is only read forward), so
    the merge is exact for sorted runs and still loses or repeats nothing for a store whose
    order changed underneath."""

    def __init__(self, runs: Sequence[_Run]) -> None:
        self.runs = list(runs)
        ranks = {p: i for i, p in enumerate(sorted(r.profile for r in self.runs))}
        self._rank = [ranks[r.profile] for r in self.runs]
        self.merged: list[tuple[int, int]] = []  # (run index, position in the run)
        self._heap: list[tuple[tuple[Any, ...], int, int, int]] = []
        self._next: tuple[int, int] | None = None
        self._started = False

    def _push(self, run: int, pos: int) -> None:
        key = self.runs[run].key(pos)
        if key is not None:
            heapq.heappush(self._heap, (key, self._rank[run], pos, run))

    def ensure(self, n: int) -> int:
        """Merge until `n` items are known or every run is exhausted; returns how many are known."""
        if len(self.merged) >= n:
            return len(self.merged)
        if not self._started:
            self._started = True
            for i in range(len(self.runs)):
                self._push(i, 0)
        while len(self.merged) < n:
            if self._next is not None:  # the successor of the last item, read only now it is needed
                self._push(*self._next)
                self._next = None
            if not self._heap:
                break
            _key, _rank, pos, run = heapq.heappop(self._heap)
            self.merged.append((run, pos))
            self._next = (run, pos + 1)
        return len(self.merged)

    @property
    def exhausted(self) -> bool:
        return self._started and not self._heap and self._next is None


def run_key(order: SessionOrder, pos: int, key: Key) -> tuple[Any, ...]:
    """The merge's key of item `pos` of a store's order: pinned items (`filter.pinned_first`:
    the first `order.pinned`) before every other, then `desc_key`."""
    return (0 if pos < order.pinned else 1, *desc_key(key))
