"""Probes: which indexes have any row for a MATCH, asked before a route runs.

Opening an FTS5 cursor costs 10-40 µs whatever it finds, so a query opens as few as it can, and
what a connection's probes learned about a query is kept until any connection commits.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import Any, TypeVar

import apsw

from ..core import BoundedCache
from .side import SideMixin
from .sql import first_probe_sql, probe_sql

T = TypeVar("T")

_Facts = BoundedCache[tuple[str, bool], tuple[tuple[int, int], dict[Any, Any]]]


# `SearchMixin._query_facts`' entries, per connection: a version (data_version, total_changes) is
# one connection's own counter, and the entries go with their connection (weak keys).
_FACTS: weakref.WeakKeyDictionary[apsw.Connection, _Facts] = weakref.WeakKeyDictionary()


_FACTS_LOCK = threading.Lock()


def connection_facts(conn: apsw.Connection) -> _Facts:
    cache = _FACTS.get(conn)
    if cache is None:
        with _FACTS_LOCK:
            cache = _FACTS.setdefault(conn, BoundedCache(128))
    return cache


class ProbeMixin(SideMixin):
    """`_probe`/`_probe_first` and the per-connection memo of what they found (`_query_facts`)."""

    def _probe(self, pairs: list[tuple[str, str]]) -> list[bool] | None:
        """Which (index, match) pairs have any row, in one statement (None: FTS5 rejects a match).

        Opening an FTS5 cursor costs 10-40 µs whatever it finds (more with more segments), so a
        query opens as few as it can: the primary index first, the v23 retry indexes only when
        it has no row, and never the same index twice (the ranked route trusts this probe).
        """
        try:
            row = (
                self._conn()
                .execute(probe_sql(tuple(t for t, _m in pairs)), [m for _t, m in pairs])
                .fetchall()[0]
            )
        except apsw.SQLError:
            return None
        return [bool(v) for v in row]

    def _probe_first(
        self, q: str, stand_ins: tuple[tuple[str, str], ...]
    ) -> tuple[int, tuple[bool, ...] | None] | None:
        """How many rows the primary index has for `q`, counted up to `SMALL_PLAN_MIN` (below it:
        exactly), and, only if none, which `stand_ins` (index, match) have a row (None: not
        asked). None: FTS5 rejects `q`.

        One statement either way, and `CASE` opens the stand-ins' cursors only when the primary
        has no row: a word's trigram phrase reads one doclist per three letters (130 of 145 µs for
        a rare word in a 10k store, whose answer then did not need it). The count lets a query with
        a handful of matches be answered by one statement in any order (`_fts_route`).
        """
        sql = first_probe_sql(tuple(t for t, _m in stand_ins), self.SMALL_PLAN_MIN)
        try:
            row = self._conn().execute(sql, (q, *(m for _t, m in stand_ins))).fetchall()[0]
        except apsw.SQLError:
            return None
        n = int(row[0] or 0)
        return (n, None) if n or not stand_ins else (0, tuple(bool(v) for v in row[1:]))

    def _query_facts(self, q: str, cjk_ready: bool) -> dict[Any, Any]:
        """What this connection's probes learned about `q` (filled by `_memo`), kept until any
        connection commits (data_version: others; total_changes: this one).

        A search with no hits was three quarters probes (the primary index, the trigram stand-in
        for the retries, the retries' own probes); typing, re-sorting and filtering repeat a
        query, and checking that nothing changed costs one `PRAGMA data_version`. Results are
        never kept: only which indexes have rows, how many (up to a cap) and the retry proofs.
        """
        conn = self._conn()
        version = (int(conn.execute("PRAGMA data_version").fetchall()[0][0] or 0), conn.total_changes())
        cache = connection_facts(conn)
        key = (q, cjk_ready)
        hit = cache.get(key)
        if hit is not None and hit[0] == version:
            return hit[1]
        facts: dict[Any, Any] = {}
        cache.put(key, (version, facts))
        return facts

    @staticmethod
    def _memo(facts: dict[Any, Any], key: Any, compute: Callable[[], T]) -> T:
        """`facts[key]`, computed once (an exception leaves nothing behind)."""
        if key in facts:
            return facts[key]
        value = facts[key] = compute()
        return value
