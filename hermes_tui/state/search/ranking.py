"""One FTS5 index's answer in the order asked: the rank plans and the newest-first one.

Rank order is bm25 over every match for Latin queries (upstream's order, kept exactly: `_ranked`
scores each match once into a top-K list), and over the newest `RANK_WINDOW` matches for CJK
queries (`_ranked_recent`), which upstream does not rank at all. Newest first walks the index by
rowid (`newest.py`). Small stores and queries with a handful of matches take one statement.
"""

from __future__ import annotations

import json
import time
from typing import Any

import apsw

from .. import sql_fragments as Q
from ..fts_query import expand_prefixes
from ..text import read_rows
from .model import FTS5, NEWEST_BY_ID_SQL, Route, SortOrder
from .newest import NewestMixin
from .sql import fts_query_sql, result_select, rowids_in


class RankingMixin(NewestMixin):
    """`_fts_route`: an index's page of results for a MATCH, filters and order."""

    SHARE_TTL_S = 60.0

    def _filter_share(
        self,
        source_filter: list[str] | None,
        exclude_sources: list[str] | None,
        role_filter: list[str] | None,
    ) -> float:
        """About what share of all messages the filters keep. It only sizes `_ranked`'s first
        top-K list: a wrong guess costs a wider retry, never a wrong row. Source shares come from
        `sessions.message_count` (re-read at most once a minute); a role filter guesses 1/3 a role."""
        share = 1.0
        if source_filter is not None or exclude_sources is not None:
            shares = self._source_shares()
            if shares is None:
                share = 0.25
            else:
                keep = set(shares) if source_filter is None else set(source_filter)
                share = sum(shares.get(src, 0.0) for src in keep - set(exclude_sources or ()))
        if role_filter:
            share *= min(1.0, len(set(role_filter)) / 3)
        return share

    def _source_shares(self) -> dict[str, float] | None:
        """Each source's share of `sessions.message_count` (None: the counts are not kept)."""
        cached = self._source_shares_cache
        now = time.monotonic()
        if cached is not None and now - cached[0] < self.SHARE_TTL_S:
            return cached[1]
        shares: dict[str, float] | None = None
        if self.has_column("sessions", "message_count"):
            counts = {
                src: max(int(n or 0), 0)
                for src, n in self._tuples("SELECT source, SUM(message_count) FROM sessions GROUP BY source")
            }
            total = sum(counts.values())
            shares = {src: n / total for src, n in counts.items()} if total else None
        self._source_shares_cache = (now, shares)
        return shares

    def _fts_route(
        self,
        route: Route,
        match: str,
        filters: tuple[list[str], list[Any]],
        order: SortOrder,
        limit: int,
        offset: int,
        probed: bool = False,
        share: float = 1.0,
        matches: int | None = None,
        expanded: str | None = None,
    ) -> list[dict[str, Any]]:
        """One index's answer; `probed`: `_probe` already found a row for `match` here; `share`:
        about how many messages pass the filters (`_filter_share`), a hint for `_ranked`;
        `matches`: the index's rows for `match` (filters aside) as `_probe_first` counted them, up
        to `SMALL_PLAN_MIN`; `expanded`: `match` with its prefixes expanded, if already known."""
        table = route.index
        order_sql = order.fts_sql
        few = matches is not None and matches < self.SMALL_PLAN_MIN and limit >= 0
        if order is SortOrder.NEWEST and limit >= 0:
            if route is FTS5:
                match = expanded or expand_prefixes(match, self._prefix_terms) or match
            if few:
                # A handful of matches: one statement sorts them all, by the walk's order (the
                # walk and the id-range statement were two FTS5 cursors: 2 of 3 statements).
                return self._fts_query(table, match, filters, NEWEST_BY_ID_SQL, limit, offset)
            ids = self._newest_ids(table, match, filters, limit + offset)
            if not ids:
                return []
            where, params = filters
            # Without the range the `rank` tie-breaker is computed for every match (200 ms for a
            # common word at 1M).
            filters = ([*where, rowids_in(table, ids)], [*params, json.dumps(ids)])
            # Ties on the timestamp go by id, as `_newest_ids` chose them. Upstream's `rank`
            # tie-breaker makes bm25 compute its IDF over the whole index first: 36 ms of a
            # 37 ms `"config.yaml"` query at 1M, for an order that only matters on equal times.
            order_sql = NEWEST_BY_ID_SQL
        elif not probed and matches is None and not self._any_match(table, match):
            # A ranked statement prepares FTS5's sorter even for zero rows (124 µs against 35 µs
            # for this probe); no-hit queries also try the v23 fallback indexes, so this adds up.
            return []
        elif order is SortOrder.RANK and limit >= 0:
            if route.windowed_rank and not Q.todays_hermes(self):
                return self._ranked_recent(table, match, filters, limit, offset, share)
            if route.windowed_rank:
                # Today's Hermes ranks every match of these indexes (bm25's order). A page of their
                # phrases costs a seek per id (0.3 ms each at 100k): it is read as one range, which
                # reads at most the doclist the ranking just scored, without scoring it.
                return self._ranked(table, match, filters, limit, offset, share, span=self.RANGE_PAGE_MAX)
            if few:
                # `_ranked_joined`'s single statement: it scores only the few rows that pass,
                # in `_ranked`'s order (`+rank`, ties in scan order).
                return self._fts_query(table, match, filters, "ORDER BY +rank", limit, offset)
            many = None if matches is None else matches >= self.SMALL_PLAN_MIN
            return self._ranked(table, match, filters, limit, offset, share, many=many)
        return self._fts_query(table, match, filters, order_sql, limit, offset)

    # Up to this many messages (by the largest id) rank order runs upstream's single statement
    # when the query has at least `SMALL_PLAN_MIN` matches. `_ranked` scores each match once but
    # runs three statements, each opening an FTS5 cursor (parse, doclists): at 10k messages (~1k
    # matches) that cost more than the second scoring it saves, 1.3-2.5x upstream's time with a
    # source filter; at 100k and up it wins. With a handful of matches FTS5's own rank sorter
    # loses instead (it prepares a nested statement per query: ~65 µs of a 140 µs search).
    # With a source or role filter the single statement runs up to `FILTERED_FACTOR` times as
    # many messages: `_ranked`'s top-K list then misses whenever other messages rank first (a
    # cron job's short "error" lines in another source), and widening it scores every match
    # again and checks thousands of ids (20.6 ms at 124k messages, upstream 16, the single
    # statement on this index 10.6); on a store without such skew it was 6.0 against 7.6.
    SMALL_STORE_MAX = 20_000

    FILTERED_FACTOR = 10

    SMALL_PLAN_MIN = 32

    def _matches_at_least(self, table: str, match: str, n: int) -> bool:
        """`match` has at least `n` rows in `table` (a rowid walk of at most `n` ids, no scoring)."""
        sql = f"SELECT count(*) FROM (SELECT rowid FROM {table} WHERE {table} MATCH ? LIMIT +?)"
        return int(self._scalar(sql, (match, n), default=0) or 0) >= n

    def _small_store(self, filtered: bool = False) -> bool:
        """At most `SMALL_STORE_MAX` messages (times `FILTERED_FACTOR` for a `filtered` rank
        order; the largest id, re-read at most once a minute)."""
        now = time.monotonic()
        cached = self._top_id_cache
        if cached is None or now - cached[0] >= self.SHARE_TTL_S:
            cached = (now, int(self._scalar("SELECT COALESCE(MAX(id), 0) FROM messages", default=0) or 0))
            self._top_id_cache = cached
        return cached[1] <= self.SMALL_STORE_MAX * (self.FILTERED_FACTOR if filtered else 1)

    def _any_match(self, table: str, match: str) -> bool:
        """Does the index have any row for `match` (filters aside)? One doclist seek, no scoring."""
        return bool(
            self._conn().execute(f"SELECT 1 FROM {table} WHERE {table} MATCH ? LIMIT 1", (match,)).fetchall()
        )

    # Ranked CJK queries (bigram and trigram indexes) score at most this many of the most
    # recently written matches; Latin queries on the unicode61 index are always ranked whole.
    RANK_WINDOW = 1024

    def _ranked_recent(
        self,
        table: str,
        match: str,
        filters: tuple[list[str], list[Any]],
        limit: int,
        offset: int,
        share: float = 1.0,
    ) -> list[dict[str, Any]]:
        """bm25 order over the newest `RANK_WINDOW` matches of a CJK query (widened as needed).

        A common 1–2 character CJK term matches a third of all CJK messages, and bm25 must score
        every match before the first row comes back (51k rows, 80 ms at 1M; 3-character trigram
        queries 45-60 ms). Upstream does not rank 1–2 character queries at all (a LIKE scan,
        newest first); here the best matches among the most recently written ones come first.
        The window is found by a rowid walk of the doclist (no scoring), and it is widened ×8,
        then dropped, when the filters leave too few rows.
        """
        window = max(self.RANK_WINDOW, 4 * (limit + offset))
        conn = self._conn()
        while True:
            floor: list[tuple[Any, ...]] = conn.execute(
                f"SELECT rowid FROM {table} WHERE {table} MATCH ? ORDER BY rowid DESC LIMIT 1 OFFSET +?",
                (match, window - 1),
            ).fetchall()
            if not floor:  # fewer matches than the window: rank them all
                return self._ranked(table, match, filters, limit, offset, share, span=window)
            rows = self._ranked(
                table, match, filters, limit, offset, share, floor=int(floor[0][0]), span=window
            )
            if len(rows) >= limit:
                return rows
            window *= 8

    # `_ranked` scores into a top-K list of at most this many rows; past it (or when the filters
    # look that selective) joining every match and scoring only the rows that pass is cheaper.
    RANK_TOP_MAX = 65536

    def _ranked(
        self,
        table: str,
        match: str,
        filters: tuple[list[str], list[Any]],
        limit: int,
        offset: int,
        share: float = 1.0,
        floor: int | None = None,
        many: bool | None = None,
        span: int | None = None,
    ) -> list[dict[str, Any]]:
        """Upstream's `ORDER BY rank … LIMIT … OFFSET` over the filtered matches, exactly, for less.
        (`many`: whether `match` has at least `SMALL_PLAN_MIN` rows, if the probe counted them;
        `span`: at most how many matches lie between the first and the last id of any page, when
        known: see `_ranked_page`.)

        FTS5's own rank order runs a nested statement that scores every match twice (the sort key
        and the `rank` it hands back) and sorts all of them, before the outer query joins a row.
        Here `+rank` (the same function, so a configured rank is honoured) is a plain sort key:
        each match is scored once into a top-K list. SQLite's sorter and its top-K list both keep
        ties in scan order (rowid ascending), as FTS5's sorter does, so the order is the same.
        The best ids are then joined and filtered a chunk at a time, about as many as the page
        needs (K and the chunks from `share`; K widened while too few pass), and only the page
        gets a snippet.
        """
        need = limit + offset
        if limit == 0:
            return []
        if (
            floor is None
            and self._small_store(filtered=share < 1.0)
            and (many if many is not None else self._matches_at_least(table, match, self.SMALL_PLAN_MIN))
        ):
            return self._fts_query(table, match, filters, "ORDER BY rank", limit, offset)  # the same order
        conn = self._conn()
        where, params = filters
        lo = f" AND rowid >= {int(floor)}" if floor is not None else ""
        check = (
            "SELECT m.id FROM json_each(?) j CROSS JOIN messages m ON m.id = j.value "
            "CROSS JOIN sessions s ON s.id = m.session_id"
            + (" WHERE " + " AND ".join(where) if where else "")
        )
        expect = need / share if share > 0 else float("inf")  # ids to read for `need` to pass
        if 4 * expect > self.RANK_TOP_MAX:
            return self._ranked_joined(table, match, filters, limit, offset, floor)
        k = min(self.RANK_TOP_MAX, int(4 * expect) + 64)
        kept: list[int] = []
        checked = 0
        step = int(1.25 * expect) + 8
        with conn:  # one read snapshot for the ids, the filter and the page
            while True:
                ids = [
                    r[0]
                    for r in conn.execute(
                        f"SELECT rowid FROM {table} WHERE {table} MATCH ?{lo} ORDER BY +rank LIMIT +?",
                        (match, k),
                    )
                ]
                # A wider list starts with the narrower one (same order), so checking resumes.
                while len(kept) < need and checked < len(ids):
                    chunk = ids[checked : checked + step]
                    ok = {r[0] for r in conn.execute(check, [json.dumps(chunk), *params])}
                    kept += [i for i in chunk if i in ok]
                    checked += len(chunk)
                    step *= 2
                if len(kept) >= need or len(ids) < k:
                    return self._ranked_page(table, match, kept[offset:need], span)
                if k >= self.RANK_TOP_MAX:
                    return self._ranked_joined(table, match, filters, limit, offset, floor)
                # Widen to what the pass rate so far says is needed, at least 8x.
                k = min(self.RANK_TOP_MAX, max(8 * k, 2 * need * k // max(len(kept), 1)))
        raise AssertionError("unreachable: the loop returns")  # apsw's `with conn` may swallow, says its stub

    def _ranked_joined(
        self,
        table: str,
        match: str,
        filters: tuple[list[str], list[Any]],
        limit: int,
        offset: int,
        floor: int | None,
    ) -> list[dict[str, Any]]:
        """`_ranked` for filters that keep almost nothing: every match joined, only rows that pass
        scored (`+rank` again, so the same order)."""
        where, params = filters
        if floor is not None:
            where = [*where, f"{table}.rowid >= {int(floor)}"]
        return self._fts_query(table, match, (where, params), "ORDER BY +rank", limit, offset)

    # A page whose ids lie among at most this many matches is read with one cursor over their
    # rowid range: walking that many matches' doclists (~0.3 µs each for a CJK phrase at 100k)
    # costs less than a cursor per id (100-300 µs each: its terms looked up in every segment).
    RANGE_PAGE_MAX = 8192

    def _ranked_page(
        self, table: str, match: str, ids: list[int], span: int | None = None
    ) -> list[dict[str, Any]]:
        """The result rows of `ids` (in that order) with their snippets: one seek per id, or one
        rowid range when that is cheaper: for a prefix query (whose every cursor first merges all
        the prefix's doclists), and when the ids lie among at most `RANGE_PAGE_MAX` matches
        (`span`, known for the windowed CJK rank: the window). A CJK page of 20 took 1.6-5.7 ms
        by seeks at 100k messages, 0.3-1.0 ms by range."""
        if not ids:
            return []
        one_cursor = "*" in match or (span is not None and span <= self.RANGE_PAGE_MAX)
        where = rowids_in(table, ids) if one_cursor else f"{table}.rowid IN (SELECT value FROM json_each(?))"
        sql = f"{result_select(table)} WHERE {table} MATCH ? AND {where}"
        by_id = {r["id"]: r for r in read_rows(self._conn(), sql, (match, json.dumps(ids)))}
        return [by_id[i] for i in ids if i in by_id]

    def _fts_query(
        self,
        table: str,
        match: str,
        filters: tuple[list[str], list[Any]],
        order_sql: str,
        limit: int,
        offset: int,
    ) -> list[dict[str, Any]]:
        where, params = filters
        sql = fts_query_sql(table, tuple(where), order_sql)
        return read_rows(self._conn(), sql, [match, *params, limit, offset])

    _PREFIX_MAX_TERMS = 32

    def _prefix_terms(self, prefix: str) -> list[str] | None:
        """Terms of `messages_fts` starting with `prefix` (None: none, or too many to list).

        Read from an `fts5vocab` table in the connection's TEMP schema, so the file is untouched
        (read-only opens included)."""
        conn = self._conn()
        try:
            # Listing the terms counts their documents (~12 ms for `deploy*` at 1M), so a list is
            # kept until any connection commits (data_version: others; total_changes: this one).
            version = (conn.execute("PRAGMA data_version").fetchall()[0][0], conn.total_changes())
            cache = self._prefix_cache
            key = (id(conn), prefix)  # per connection: each sees its own data_version
            hit = cache.get(key)
            if hit is not None and hit[0] == version:
                terms = hit[1]
            else:
                conn.execute(
                    "CREATE VIRTUAL TABLE IF NOT EXISTS temp.hermes_vocab_messages_fts "
                    "USING fts5vocab(main, 'messages_fts', 'row')"
                )
                terms = [
                    t
                    for (t,) in conn.execute(
                        "SELECT term FROM temp.hermes_vocab_messages_fts WHERE term >= ? AND "
                        "term < ? LIMIT +?",
                        (prefix, prefix + "\U0010ffff", self._PREFIX_MAX_TERMS + 1),
                    )
                ]
                cache.put(key, (version, terms))
        except apsw.Error:
            return None
        return terms if 0 < len(terms) <= self._PREFIX_MAX_TERMS else None
