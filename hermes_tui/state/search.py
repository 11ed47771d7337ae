"""`search_messages`: sanitise, route to the right index, snippet, add context (v23 layout).

Routes, in order: `fts5` (the unicode61 index) for ordinary queries; for CJK queries `fts_cjk`
(bigram index, when it is built and the query has no lone CJK character), then `trigram`
(every CJK token ≥ 3 characters), then `like_scan`. Unlike upstream, the LIKE route evaluates
AND/OR/NOT exactly, honours the visibility filter, and its snippets carry the same `>>>`/`<<<`
markers as FTS5's (computed here). No query raises: the worst case is `[]`.

Files of today's Hermes (schema v24+) are searched by its rules, the v31 writer's
`hermes_state_search.py`: its sanitizer, hidden display rows never found, a tool-role search read
from the rows, a Latin miss retried as substrings (cjk, trigram) then as any of its words
(`_todays_latin`), the CJK LIKE scan for any token, newest first (docs/store-api.md, Search).

Routes are `Route` values (their `name` is the public `SearchOutcome.route`) and orders are
`SortOrder` values; SQL text is built from them, never compared.

Orders: newest first walks the index by rowid and stops early (`_newest_ids`); rank order is
bm25 over every match for Latin queries (upstream's order, kept exactly), and over the newest
`RANK_WINDOW` matches for CJK queries (`_ranked_recent`), which upstream does not rank at all.

Every `LIMIT`/`OFFSET` here is bound as `+?`: SQLite offers a bare `LIMIT ?` to a virtual table's
planner, which marks the parameter so that each new binding re-prepares the statement (18-25 µs
of a 40 µs FTS5 statement at 10k messages); `+?` is the same value as an expression.
"""

from __future__ import annotations

import contextlib
import enum
import functools
import itertools
import json
import re
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

import apsw

from . import sql_fragments as Q
from .connection import store_error
from .core import MESSAGES_RESTORED_KEY, BoundedCache, _Core, placeholders
from .fts_query import (
    MAX_FTS5_QUERY_CHARS,
    OPERATORS,
    QueryTooComplex,
    bound_query,
    contains_cjk,
    count_cjk,
    expand_prefixes,
    has_lone_cjk_run,
    parse_bool,
    quote_tokens,
    sanitize_fts5_query,
)
from .side_index import MAX_INLINE_LAG
from .text import CONTENT_JSON_PREFIX, content_text, read_rows, read_tuples, upstream_preview

if TYPE_CHECKING:
    from .side_index import SideIndex

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")

SNIPPET_TOKENS = 40
_PLAIN_WORD = re.compile(r"[A-Za-z0-9]{3,}")
_RESULT_KEYS = (
    "id",
    "session_id",
    "role",
    "snippet",
    "timestamp",
    "tool_name",
    "source",
    "model",
    "session_started",
)


def _store_errors(method: F) -> F:
    """SQLite's errors from a search (a damaged FTS index: "fts5: corruption found…") surface as
    the store's one-line `StoreError`s, as every other public method's do."""

    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except apsw.Error as exc:
            raise store_error(exc, self.db_path) from exc

    return wrapper  # type: ignore[return-value]


def _as_bound(value: Any) -> float:
    """A block's MAX(timestamp) as a float bound, in SQLite's own order: NULL is below every
    number, and a text or blob value (another writer's bad timestamp) above every number."""
    if value is None:
        return float("-inf")
    if isinstance(value, (int, float)):
        return float(value)
    return float("inf")


class SortOrder(enum.Enum):
    """The result orders `search(sort=…)` offers; any other `sort` value means rank order."""

    RANK = "rank"
    NEWEST = "newest"
    OLDEST = "oldest"

    @classmethod
    def parse(cls, sort: str | None) -> SortOrder:
        key = sort.strip().lower() if isinstance(sort, str) else ""
        return cls.NEWEST if key == "newest" else cls.OLDEST if key == "oldest" else cls.RANK

    @property
    def fts_sql(self) -> str:
        """The `ORDER BY` of an FTS route in this order (upstream's, `rank` breaking time ties)."""
        if self is SortOrder.NEWEST:
            return "ORDER BY m.timestamp DESC, rank"
        if self is SortOrder.OLDEST:
            return "ORDER BY m.timestamp ASC, rank"
        return "ORDER BY rank"


#: Newest first with ties by id (`_newest_ids`'s choice), and the LIKE/side routes' orders.
NEWEST_BY_ID_SQL = "ORDER BY m.timestamp DESC, m.id DESC"
OLDEST_BY_ID_SQL = "ORDER BY m.timestamp ASC, m.id ASC"


@dataclass(frozen=True)
class Route:
    """A way `search()` answers: `name` is the public `SearchOutcome.route`; `table` the FTS5
    index it reads (None: it reads no index of the store); `windowed_rank`: rank order scores only
    the newest `RANK_WINDOW` matches (CJK indexes, see `_ranked_recent`; not on files of today's
    Hermes, which ranks every match)."""

    name: str
    table: str | None = None
    windowed_rank: bool = False

    @property
    def index(self) -> str:
        assert self.table is not None, f"route {self.name} reads no FTS index"
        return self.table


FTS5 = Route("fts5", "messages_fts")
FTS_CJK = Route("fts_cjk", "messages_fts_cjk", windowed_rank=True)
TRIGRAM = Route("trigram", "messages_fts_trigram", windowed_rank=True)
CJK_SIDE = Route("cjk_side")
#: The side index while it is built: it answers for the ids it holds, LIKE for the newer rest.
CJK_SIDE_PARTIAL = Route("cjk_side_partial")
LIKE_SCAN = Route("like_scan")
INTERRUPTED = Route("interrupted")
EMPTY = Route("empty")


@dataclass
class SearchOutcome:
    results: list[dict[str, Any]] = field(default_factory=list)
    route: str = EMPTY.name
    query: str = ""


def like_snippet(text: str, terms: list[str], width: int = 120) -> str:
    """A window around the first match with every term marked `>>>…<<<` (case-insensitive)."""
    if not text:
        return ""
    low = text.lower()
    first = min((p for p in (low.find(t.lower()) for t in terms if t) if p >= 0), default=0)
    start = max(0, first - 40)
    window = text[start : start + width]
    pattern = "|".join(re.escape(t) for t in sorted(set(terms), key=len, reverse=True) if t)
    if pattern:
        window = re.sub(f"({pattern})", r">>>\1<<<", window, flags=re.IGNORECASE)
    return ("..." if start > 0 else "") + window + ("..." if start + width < len(text) else "")


def with_marked_snippets(rows: list[dict[str, Any]], terms: list[str]) -> list[dict[str, Any]]:
    """Snippets for routes without FTS5's `snippet()` (LIKE, side index): marked in Python, from the
    content, or from content + tool fields when the terms only occur in the latter."""
    for r in rows:
        text = content_text(r.pop("_content"))
        tc = r.pop("_tc") or ""
        if not any(t.lower() in text.lower() for t in terms):
            text = " ".join(x for x in (text, r.get("tool_name") or "", tc) if x)
        r["snippet"] = like_snippet(text, terms)
        r["_flat"] = True
    return rows


_MARKED_RE = re.compile(r">>>(.*?)<<<", re.DOTALL)


def _latin_terms(q: str) -> list[str]:
    """The words of a sanitised Latin query, quotes, prefix stars and operators removed."""
    terms = [t.strip('"').rstrip("*") for t in q.replace('"', " ").split() if t.upper() not in OPERATORS]
    return [t for t in terms if t]


class ParsedQuery(NamedTuple):
    """What `search()` derives from the typed text alone (no data): kept per query string.

    (A tuple: built for every new query string, where a frozen dataclass cost 1.5 µs more.)"""

    q: str  # sanitised and bounded: the MATCH of the primary index
    cjk: bool
    plain_word: bool  # one plain ASCII word: the trigram probe can stand for both v23 retries
    # FTS5 rejects it (an operator first or last, as `AND OR "" ***` leaves `OR ""`): upstream
    # answers `[]` after the error; this answers it without opening the index.
    rejected: bool = False


# Raw queries longer than this are parsed every time instead of being kept.
_PARSE_CACHE_MAX_CHARS = 512


@functools.lru_cache(maxsize=256)
def _parse_cached(query: str, todays: bool = False) -> ParsedQuery | None:
    return _parse(query, todays)


def _parse(query: str, todays: bool = False) -> ParsedQuery | None:
    word = _ascii_word(query)
    if word is not None:
        return ParsedQuery(word, False, len(word) >= 3) if word else None
    q = bound_query(sanitize_fts5_query(query, todays))  # `QueryTooComplex` is raised, never kept
    if not q:
        return None
    cjk = contains_cjk(q)
    words = q.split()
    rejected = not cjk and (words[0] in OPERATORS or words[-1] in OPERATORS)  # (FTS5's are uppercase)
    return ParsedQuery(q, cjk, _PLAIN_WORD.fullmatch(q.strip('"').strip()) is not None, rejected)


_ASCII_WORD = re.compile(r" *([A-Za-z0-9]+) *")


def _ascii_word(query: str) -> str | None:
    """What the sanitizer and the bounds make of one ASCII word, without running them (None: not
    one word; "": an operator alone, which sanitizes to nothing). Most searches are one word,
    typed a letter at a time: each letter is a new string, and the full parse was ~20 µs of a
    60 µs search with no hits (a property test checks this equals the full parse)."""
    m = _ASCII_WORD.fullmatch(query) if len(query) <= MAX_FTS5_QUERY_CHARS else None
    if m is None:
        return None
    word = m.group(1)
    return "" if word.upper() in OPERATORS else word


def parse_query(query: str, todays: bool = False) -> ParsedQuery | None:
    """`query` sanitised as the file's writer does (`todays`: today's Hermes) and bounded (None:
    nothing left to search).

    Every keystroke, re-sort and filter change searches again: sanitising and bounding cost
    ~5 µs, a quarter of a search with no hits, so short queries are kept (an LRU of 256)."""
    if len(query) <= _PARSE_CACHE_MAX_CHARS:
        return _parse_cached(query, todays)
    return _parse(query, todays)


#: Sources today's Hermes keeps out of its trigram and cjk indexes (`FTS_TRIGRAM_EXCLUDED_SOURCES`).
UNINDEXED_SOURCES = frozenset({"cron", "subagent"})


def trigram_eligible(q: str) -> bool:
    """Today's Hermes' `_trigram_eligible_tokens`: every non-operator token has 3+ characters (a
    shorter one has no trigram, and one such token empties an implicit AND)."""
    tokens = [t for t in q.strip('"').strip().split() if t.upper() not in OPERATORS]
    return bool(tokens) and all(len(t) >= 3 for t in tokens)


_UNIT = re.compile(r'"[^"]+"|\S+')


def or_relaxed(q: str) -> str | None:
    """Today's Hermes' `_or_relaxed_query`: an implicit AND of 2+ units (a quoted phrase is one)
    as an OR of them; None with an explicit OR or NOT, or fewer than two units."""
    units: list[str] = []
    for unit in _UNIT.findall(q):
        up = unit.upper()
        if up in ("OR", "NOT"):
            return None
        if up != "AND":
            units.append(unit)
    return " OR ".join(units) if len(units) >= 2 else None


def strip_cjk_wildcards(q: str) -> str:
    """Today's Hermes' `_strip_cjk_wildcards`: the trailing `*`s of each token go (no CJK route
    honours them); a token of stars alone is kept."""
    if "*" not in q:
        return q
    return " ".join(t if t.upper() in OPERATORS else (t.rstrip("*") or t) for t in q.split()) or q


def any_token_like(raw: str) -> tuple[str, list[Any], list[str]] | None:
    """Today's Hermes' CJK LIKE scan: a row holding any non-operator token (each as typed, `NOT`
    and implicit ANDs included) in its content, tool name or tool calls."""
    tokens = [t for t in raw.split() if t.upper() not in OPERATORS] or ([raw] if raw else [])
    if not tokens:
        return None
    params: list[Any] = []
    for tok in tokens:
        esc = "%" + tok.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        params += [esc, esc, esc]
    one = (
        "(m.content LIKE ? ESCAPE '\\' OR m.tool_name LIKE ? ESCAPE '\\' OR m.tool_calls LIKE ? ESCAPE '\\')"
    )
    return "(" + " OR ".join([one] * len(tokens)) + ")", params, [t.strip('"') for t in tokens]


def _rowids_in(table: str, ids: list[int]) -> str:
    """A WHERE term keeping an FTS5 scan to `ids` (bound as one JSON array) with one cursor.

    FTS5 serves `rowid IN (…)` with a cursor per id, and a prefix query's cursor first merges
    every doclist of the prefix (24 ms an id for `deploy*` at 1M); a rowid range is one cursor.
    The `+` keeps the list a filter on that scan, checked before any join (`m.id IN` joined
    every match in the range first: 234 against 34 ms).
    """
    return (
        f"{table}.rowid BETWEEN {int(min(ids))} AND {int(max(ids))} "
        f"AND +{table}.rowid IN (SELECT value FROM json_each(?))"
    )


# `content` starts with `CONTENT_JSON_PREFIX` (a multimodal message), as SQL: the bounds are TEXT
# with their NUL (comparisons use the whole length; text functions would stop at the NUL).
_JSON_PREFIX_BOUNDS = tuple(
    "CAST(X'" + v.encode().hex().upper() + "' AS TEXT)"
    for v in (CONTENT_JSON_PREFIX, CONTENT_JSON_PREFIX[:-1] + ";")
)
_MULTIMODAL_SQL = f"(m.content >= {_JSON_PREFIX_BOUNDS[0]} AND m.content < {_JSON_PREFIX_BOUNDS[1]})"


@functools.lru_cache(maxsize=8)
def _result_select(table: str) -> str:
    """The result columns of an FTS route, `snippet()` included, joined as upstream joins them;
    `_multimodal` tells `_flatten_snippets` which rows need their text (no second statement)."""
    return (
        f"SELECT m.id, m.session_id, m.role, snippet({table}, -1, '>>>', '<<<', '...', "
        f"{SNIPPET_TOKENS}) AS snippet, "
        "m.timestamp, m.tool_name, s.source, s.model, s.started_at AS session_started, "
        f"{_MULTIMODAL_SQL} AS _multimodal "
        f"FROM {table} JOIN messages m ON m.id = {table}.rowid JOIN sessions s ON s.id = m.session_id"
    )


@functools.lru_cache(maxsize=64)
def _fts_query_sql(table: str, where: tuple[str, ...], order_sql: str) -> str:
    """`_fts_query`'s statement (kept: a search with a few hits is otherwise a tenth text-building)."""
    return (
        f"{_result_select(table)} WHERE {table} MATCH ?"
        + "".join(" AND " + w for w in where)
        + f" {order_sql} LIMIT +? OFFSET +?"
    )


def _ids_between(
    filters: tuple[list[str], list[Any]], above: int | None, upto: int
) -> tuple[list[str], list[Any]]:
    """`filters` narrowed to message ids in (above, upto] (`above` None: no lower bound)."""
    where, params = filters
    low = "" if above is None else f"m.id > {int(above)} AND "
    return [*where, f"{low}m.id <= {int(upto)}"], params


@functools.lru_cache(maxsize=32)
def _probe_sql(tables: tuple[str, ...]) -> str:
    """One `EXISTS` per index, parameters in order (built once per index list)."""
    return "SELECT " + ", ".join(
        f"EXISTS(SELECT 1 FROM {t} WHERE {t} MATCH ?{i + 1})" for i, t in enumerate(tables)
    )


@functools.lru_cache(maxsize=16)
def _first_probe_sql(retry_tables: tuple[str, ...], cap: int) -> str:
    """The primary index's matches counted up to `cap` (a rowid walk, no scoring), and only
    when there are none whether each of `retry_tables` has a row (`CASE` is lazy; NULL: not asked)."""
    count = f"SELECT count(*) AS n FROM (SELECT 1 FROM messages_fts WHERE messages_fts MATCH ?1 LIMIT {cap})"
    if not retry_tables:
        return count
    cases = "".join(
        f", CASE WHEN n = 0 THEN EXISTS(SELECT 1 FROM {t} WHERE {t} MATCH ?{i + 2}) END"
        for i, t in enumerate(retry_tables)
    )
    return f"SELECT n{cases} FROM ({count})"


_Facts = BoundedCache[tuple[str, bool], tuple[tuple[int, int], dict[Any, Any]]]
# `SearchMixin._query_facts`' entries, per connection: a version (data_version, total_changes) is
# one connection's own counter, and the entries go with their connection (weak keys).
_FACTS: weakref.WeakKeyDictionary[apsw.Connection, _Facts] = weakref.WeakKeyDictionary()
_FACTS_LOCK = threading.Lock()


def _connection_facts(conn: apsw.Connection) -> _Facts:
    cache = _FACTS.get(conn)
    if cache is None:
        with _FACTS_LOCK:
            cache = _FACTS.setdefault(conn, BoundedCache(128))
    return cache


def _glued_text(content: Any, tool_name: str | None, tool_calls: str | None, terms: list[str]) -> bool:
    """Does a term of a v23 retry touch a CJK character in this row's text?"""
    text = " ".join(x for x in (content_text(content), tool_name or "", tool_calls or "") if x)
    for term in terms:
        # ASCII terms fold ASCII only, as the trigram index does (`_live_fallbacks` relies on it).
        flags = re.IGNORECASE | (re.ASCII if term.isascii() else 0)
        for m in re.finditer(re.escape(term), text, flags):
            before = text[m.start() - 1] if m.start() > 0 else ""
            after = text[m.end()] if m.end() < len(text) else ""
            if (before and contains_cjk(before)) or (after and contains_cjk(after)):
                return True
    return False


# English letters from the most to the least frequent (digits count as "k"): a guess at which
# trigram of a word has the shortest doclist (`SearchMixin._glued_candidates` checks it first).
_LETTER_RANK = {c: i for i, c in enumerate("etaoinshrdlcumwfgypbvkjxqz")}


def _rarest_trigram(word: str) -> str:
    """The trigram of `word` (3+ ASCII letters or digits) whose letters are rarest in English."""
    low = word.lower()
    rank = _LETTER_RANK

    def rarity(i: int) -> int:
        return rank.get(low[i], 21) + rank.get(low[i + 1], 21) + rank.get(low[i + 2], 21)

    best = max(range(len(low) - 2), key=rarity)
    return low[best : best + 3]


def _may_glue(word: str, content: Any, tool_name: Any, tool_calls: Any) -> bool:
    """False only when no text of the row holds both the lowercase ASCII `word` (in any case)
    and a CJK character: a cheap no before `_glued_text` (10 µs a row), as a word of letters and
    digits touches CJK only inside one field (`_glued_text` joins them with spaces). Content
    that is not plain text (stored JSON, bytes) is a maybe."""
    if not isinstance(content, str) or content.startswith(CONTENT_JSON_PREFIX):
        return True
    return any(
        isinstance(v, str) and word in v.lower() and contains_cjk(v) for v in (content, tool_name, tool_calls)
    )


def _source_connection(db: _Core) -> apsw.Connection:
    """A private connection for the background side-index build (never shared across threads)."""
    from .connection import open_connection

    return open_connection(db.db_path, read_only=True)


class SearchMixin(_Core):
    def _search_filters(
        self,
        source_filter: list[str] | None,
        exclude_sources: list[str] | None,
        role_filter: list[str] | None,
        include_inactive: bool,
    ) -> tuple[list[str], list[Any]]:
        where: list[str] = []
        params: list[Any] = []
        if not include_inactive and self.has_column("messages", "active"):
            comp = " OR m.compacted = 1" if self.has_column("messages", "compacted") else ""
            where.append(f"(m.active = 1{comp})")
        if Q.todays_hermes(self) and self.has_column("messages", "display_kind"):
            # Model-facing scaffolding the person never saw: today's Hermes never finds it.
            where.append("COALESCE(m.display_kind, '') <> 'hidden'")
        if source_filter is not None:
            where.append(f"s.source IN ({placeholders(source_filter)})")
            params += list(source_filter)
        if exclude_sources is not None:
            where.append(f"s.source NOT IN ({placeholders(exclude_sources)})")
            params += list(exclude_sources)
        if role_filter:
            where.append(f"m.role IN ({placeholders(role_filter)})")
            params += list(role_filter)
        return where, params

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
            filters = ([*where, _rowids_in(table, ids)], [*params, json.dumps(ids)])
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
        where = _rowids_in(table, ids) if one_cursor else f"{table}.rowid IN (SELECT value FROM json_each(?))"
        sql = f"{_result_select(table)} WHERE {table} MATCH ? AND {where}"
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
        sql = _fts_query_sql(table, tuple(where), order_sql)
        return read_rows(self._conn(), sql, [match, *params, limit, offset])

    @staticmethod
    def _like_where(raw: str) -> tuple[str, list[Any], list[str]] | None:
        """The LIKE route's condition for `raw` (AND/OR/NOT evaluated exactly), its parameters and
        the terms to mark; None when the query has no positive term."""
        bq = parse_bool(raw)
        if not bq.groups:
            return None

        def term_sql(term: str) -> tuple[str, list[str]]:
            esc = "%" + term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            return (
                # COALESCE: NULL LIKE x is NULL, and NOT NULL would drop rows that lack the term.
                "(COALESCE(m.content, '') LIKE ? ESCAPE '\\' OR COALESCE(m.tool_name, '') LIKE ? ESCAPE '\\' "
                "OR COALESCE(m.tool_calls, '') LIKE ? ESCAPE '\\')",
                [esc, esc, esc],
            )

        group_sql: list[str] = []
        params: list[Any] = []
        for must, must_not in bq.groups:
            parts = []
            for t in must:
                s, p = term_sql(t)
                parts.append(s)
                params += p
            for t in must_not:
                s, p = term_sql(t)
                parts.append("NOT " + s)
                params += p
            group_sql.append("(" + " AND ".join(parts) + ")")
        return f"({' OR '.join(group_sql)})", params, bq.terms

    def _unindexed_range(self) -> tuple[int, int] | None:
        """Message ids (lo, hi] the v23 base and trigram indexes do not hold yet: an
        `optimize_fts_storage()` conversion is under way or was interrupted (its rebuild gate)."""
        if not self.layout.base_building:
            return None
        from .fts_schema import REBUILD_HIGH_WATER, REBUILD_PROGRESS

        meta = dict(
            self._tuples(
                "SELECT key, value FROM state_meta WHERE key IN (?, ?)",
                (REBUILD_HIGH_WATER, REBUILD_PROGRESS),
            )
        )
        if REBUILD_HIGH_WATER not in meta:
            return None
        lo, hi = int(meta.get(REBUILD_PROGRESS) or 0), int(meta[REBUILD_HIGH_WATER])
        return (lo, hi) if hi > lo else None

    def _with_gap(
        self,
        route: Route,
        match: str,
        raw: str,
        gap: tuple[int, int],
        filters: tuple[list[str], list[Any]],
        sort: SortOrder,
        limit: int,
        offset: int,
    ) -> list[dict[str, Any]]:
        """An index's matches merged with LIKE matches among the ids it does not hold yet.

        Newest first (or oldest with `SortOrder.OLDEST`); rank order is not comparable across the
        two, so it is newest first too until the conversion ends. LIKE is a substring match: the
        unconverted part may find more than the index would, never less.
        """

        def indexed(order: SortOrder, want: int) -> list[dict[str, Any]]:
            try:
                return (
                    self._fts_route(route, match, filters, order, want, 0)
                    if self._any_match(route.index, match)
                    else []
                )
            except apsw.SQLError:
                return []

        return self._merged_with_gap(indexed, raw, gap, filters, sort, limit, offset)

    def _side_with_gap(
        self,
        raw: str,
        reach: tuple[int, int],
        filters: tuple[list[str], list[Any]],
        sort: SortOrder,
        limit: int,
        offset: int,
    ) -> list[dict[str, Any]]:
        """The CJK side index while it is built: its matches among the ids it holds (up to its
        high water, read once: the builder adds batches meanwhile) merged with LIKE matches among
        the newer ids. The scan shrinks as the build goes on (the whole store when it starts)."""
        held = _ids_between(filters, None, reach[0])
        return self._merged_with_gap(
            lambda order, want: self._side_route(raw, held, order, want, 0),
            raw,
            reach,
            filters,
            sort,
            limit,
            offset,
        )

    def _merged_with_gap(
        self,
        indexed: Callable[[SortOrder, int], list[dict[str, Any]]],
        raw: str,
        gap: tuple[int, int],
        filters: tuple[list[str], list[Any]],
        sort: SortOrder,
        limit: int,
        offset: int,
    ) -> list[dict[str, Any]]:
        """`indexed(order, n)`'s first n rows merged with the LIKE matches among ids (lo, hi]."""
        asc = sort is SortOrder.OLDEST
        want = limit + offset if limit >= 0 else -1
        hits = indexed(SortOrder.OLDEST if asc else SortOrder.NEWEST, want)
        more = self._like_route(raw, _ids_between(filters, gap[0], gap[1]), want, 0, asc=asc)
        merged = sorted(hits + more, key=lambda r: (_as_bound(r["timestamp"]), int(r["id"])), reverse=not asc)
        return merged[offset : offset + limit] if limit >= 0 else merged[offset:]

    def _like_route(
        self,
        raw: str,
        filters: tuple[list[str], list[Any]],
        limit: int,
        offset: int,
        asc: bool = False,
        any_token: bool = False,
    ) -> list[dict[str, Any]]:
        """LIKE over the stored rows, newest (or `asc`: oldest) first: `raw` evaluated as a
        boolean query, or (`any_token`, today's Hermes' CJK scan) any of its tokens."""
        cond = any_token_like(raw) if any_token else self._like_where(raw)
        if cond is None:
            return []
        like, params, terms = cond
        where, fparams = filters
        if not asc and limit >= 0:
            # Newest first: walk back from the newest message and stop at the k newest matches
            # (a common CJK character: a few thousand rows), instead of reading every message to
            # sort the matches (13-23 s at 10M whatever the query).
            ids = self._newest_walk(
                "FROM messages m JOIN sessions s ON s.id = m.session_id",
                like,
                params,
                "m.id",
                filters,
                limit + offset,
            )
            if not ids:
                return []
            where, fparams = [*where, _rowids_in("m", ids)], [*fparams, json.dumps(ids)]
        sql = (
            "SELECT m.id, m.session_id, m.role, m.content AS _content, m.timestamp, m.tool_name, "
            "m.tool_calls AS _tc, "
            "s.source, s.model, s.started_at AS session_started FROM messages m JOIN sessions s ON s.id "
            "= m.session_id "
            f"WHERE {like}"
            + "".join(" AND " + w for w in where)
            + " "
            + (OLDEST_BY_ID_SQL if asc else NEWEST_BY_ID_SQL)
            + " LIMIT +? OFFSET +?"
        )
        return with_marked_snippets(read_rows(self._conn(), sql, [*params, *fparams, limit, offset]), terms)

    @_store_errors
    def search(
        self,
        query: str,
        source_filter: list[str] | None = None,
        exclude_sources: list[str] | None = None,
        role_filter: list[str] | None = None,
        limit: int = 20,
        offset: int = 0,
        sort: str | None = None,
        include_inactive: bool = False,
        context: bool = True,
    ) -> SearchOutcome:
        """(+) `search_messages` plus the route that answered.

        `context=False` leaves each result's `context` empty: three index reads per hit that a
        caller showing only snippets (the browser while typing) does not need.
        """
        if not isinstance(query, str) or not query.strip() or self.layout.kind == "none":
            return SearchOutcome()
        parsed = parse_query(query, Q.todays_hermes(self))
        if parsed is None:
            return SearchOutcome()
        if parsed.rejected:
            return SearchOutcome(query=parsed.q, route=FTS5.name)
        args = (parsed, source_filter, exclude_sources, role_filter, limit, offset, sort, include_inactive)
        if parsed.cjk:  # (the side index is ATTACHed on first use, which no transaction allows)
            return self._search_parsed(*args, context=context)
        # One read transaction for all its statements: each would otherwise take and drop the WAL
        # read lock (5-8 µs of a 30 µs search with a few hits, on a busy machine).
        try:
            with self._conn():
                out = self._search_parsed(*args, context=context)
        except apsw.InterruptError:  # (as inside: an interrupted search answers nothing)
            return SearchOutcome(query=parsed.q, route=INTERRUPTED.name)
        return out

    def _search_parsed(
        self,
        parsed: ParsedQuery,
        source_filter: list[str] | None,
        exclude_sources: list[str] | None,
        role_filter: list[str] | None,
        limit: int,
        offset: int,
        sort: str | None,
        include_inactive: bool,
        context: bool,
    ) -> SearchOutcome:
        q = parsed.q
        order = SortOrder.parse(sort)

        def scope() -> tuple[tuple[list[str], list[Any]], float]:
            """The filters' SQL and share, built once a route needs them (no-hit queries do not)."""
            share = (
                self._filter_share(source_filter, exclude_sources, role_filter)
                if order is SortOrder.RANK
                else 1.0
            )
            return self._search_filters(source_filter, exclude_sources, role_filter, include_inactive), share

        tool_role = "tool" in (role_filter or ())
        cjk_ready = self._cjk_ready()
        todays = Q.todays_hermes(self)
        out = SearchOutcome(query=q, route="")
        try:
            if todays and tool_role:
                # Today's Hermes indexes only a prefix of a tool row: it reads the rows, newest first.
                filters, _share = scope()
                out.results = self._like_route(q, filters, limit, offset, asc=order is SortOrder.OLDEST)
                out.route = LIKE_SCAN.name
            elif parsed.cjk:
                filters, share = scope()
                raw = (strip_cjk_wildcards(q) if todays else q).strip('"').strip()
                gap = self._unindexed_range()
                unindexed = todays and bool(UNINDEXED_SOURCES & set(source_filter or ()))
                for route in self._cjk_routes(raw, order is SortOrder.RANK, tool_role, cjk_ready, unindexed):
                    try:
                        if gap and route is TRIGRAM:
                            out.results = self._with_gap(
                                route, quote_tokens(raw), raw, gap, filters, order, limit, offset
                            )
                        else:
                            out.results = self._fts_route(
                                route, quote_tokens(raw), filters, order, limit, offset, share=share
                            )
                        out.route = route.name
                        break
                    except apsw.SQLError:
                        out.route = ""
                if todays and not out.route:
                    # Its LIKE scan: any of the tokens, newest first whatever the order asked.
                    raw = " OR ".join(t for t in raw.split() if t.upper() not in OPERATORS) or raw
                    order = SortOrder.NEWEST
                reach = self._side_reach() if not out.route and self._side_eligible(raw, tool_role) else None
                if reach is not None:
                    try:
                        if reach[0] >= reach[1]:
                            out.results = self._side_route(raw, filters, order, limit, offset)
                            out.route = CJK_SIDE.name
                        else:
                            out.results = self._side_with_gap(raw, reach, filters, order, limit, offset)
                            out.route = CJK_SIDE_PARTIAL.name
                    except apsw.SQLError:
                        out.route = ""
                if not out.route:
                    out.results = self._like_route(raw, filters, limit, offset, any_token=todays)
                    out.route = LIKE_SCAN.name
            elif todays:
                self._todays_latin(out, parsed, scope, order, limit, offset, cjk_ready)
            else:
                out.route = FTS5.name
                retry = not tool_role and limit != 0
                facts = self._query_facts(q, cjk_ready)
                memo = self._memo

                def routes() -> list[tuple[Route, str]]:
                    """The v23 retries (asked by the probe's stand-ins and the retry itself)."""
                    return memo(facts, "routes", lambda: self._latin_fallback_routes(q, cjk_ready))

                tri = memo(facts, "tri", lambda: self._word_on_trigram(parsed, cjk_ready)) if retry else None
                # What stands for the retries in the probe: a plain word's trigram phrase, or for
                # several words the longest one alone in each retry index.
                stand_ins: tuple[tuple[str, str], ...] = (
                    ((tri,) if tri else memo(facts, "longest", lambda: self._longest_probes(routes())))
                    if retry
                    else ()
                )
                # A prefix probes as its expanded terms: the same rows, without merging every
                # matching doclist (37 of 40 ms of a newest-first `deploy*` at 1M).
                expanded = (
                    memo(facts, "expanded", lambda: expand_prefixes(q, self._prefix_terms) or q)
                    if "*" in q
                    else q
                )
                found = memo(facts, ("found", stand_ins), lambda: self._probe_first(expanded, stand_ins))
                if found is None:  # FTS5 rejects the query (upstream: `[]` as well)
                    return SearchOutcome(query=q, route=FTS5.name)
                n, stood = found
                gap = self._unindexed_range()
                if gap:  # an interrupted conversion: the unconverted ids are read with LIKE
                    out.results = self._with_gap(FTS5, q, q, gap, scope()[0], order, limit, offset)
                elif n:
                    filters, share = scope()
                    out.results = self._fts_route(
                        FTS5,
                        q,
                        filters,
                        order,
                        limit,
                        offset,
                        probed=True,
                        share=share,
                        matches=n,
                        expanded=expanded,
                    )
                if (
                    not out.results
                    and retry
                    and not (
                        tri
                        and (
                            stood == (False,)
                            or memo(facts, "glued", lambda: self._glued_ids(tri, q)) == frozenset()
                        )
                    )
                ):
                    live, probed = memo(
                        facts,
                        "live",
                        lambda: self._live_fallbacks(routes(), None if tri else stood),
                    )
                    if live:
                        filters, share = scope()
                        self._latin_fallback(out, q, filters, order, limit, offset, live, probed, share)
            self._flatten_snippets(out.results, q)
        except apsw.InterruptError:
            return SearchOutcome(query=q, route=INTERRUPTED.name)
        contexts = self._contexts([r["id"] for r in out.results]) if context else {}
        for r in out.results:
            r["context"] = contexts.get(r["id"], [])
        out.results = [{k: r.get(k) for k in _RESULT_KEYS} | {"context": r["context"]} for r in out.results]
        return out

    def _todays_latin(
        self,
        out: SearchOutcome,
        parsed: ParsedQuery,
        scope: Callable[[], tuple[tuple[list[str], list[Any]], float]],
        order: SortOrder,
        limit: int,
        offset: int,
        cjk_ready: bool,
    ) -> None:
        """A Latin query by today's Hermes' routes: the unicode61 index; with no row, the cjk then
        the trigram index (every token of 3+ characters) as a substring match of each token; with
        still none, the index again with any of the words (`or_relaxed`)."""
        q = parsed.q
        out.route = FTS5.name
        expanded = expand_prefixes(q, self._prefix_terms) or q if "*" in q else q
        found = self._probe_first(expanded, ())
        if found is None:  # FTS5 rejects the query: `[]`, as upstream
            return
        filters, share = scope()
        gap = self._unindexed_range()
        if gap:
            out.results = self._with_gap(FTS5, q, q, gap, filters, order, limit, offset)
        elif found[0]:
            out.results = self._fts_route(
                FTS5,
                q,
                filters,
                order,
                limit,
                offset,
                probed=True,
                share=share,
                matches=found[0],
                expanded=expanded,
            )
        if out.results or limit == 0:
            return
        quoted = quote_tokens(q.strip('"').strip())
        retries = [FTS_CJK] if cjk_ready else []
        if self.layout.has_trigram and trigram_eligible(q):
            retries.append(TRIGRAM)
        for route in retries:
            try:
                results = self._fts_route(route, quoted, filters, order, limit, offset, share=share)
            except apsw.SQLError:
                continue
            if results:
                out.results, out.route = results, route.name
                return
        relaxed = or_relaxed(q)
        if relaxed is not None:
            with contextlib.suppress(apsw.SQLError):
                out.results = self._fts_route(FTS5, relaxed, filters, order, limit, offset, share=share)

    def _cjk_ready(self) -> bool:
        lay = self.layout
        return lay.has_cjk and not lay.cjk_stale and not lay.cjk_building and self._cjk_impl is not None

    def _cjk_routes(
        self, raw: str, ranked: bool, tool_role: bool, cjk_ready: bool, unindexed: bool = False
    ) -> list[Route]:
        """The index routes to try, in order, for a CJK query (the first that runs answers);
        `unindexed`: the query wants rows those indexes leave out (today's Hermes' cron and
        sub-agent sources), so none."""
        if unindexed:
            return []
        lay = self.layout
        tokens = [t for t in raw.split() if t.upper() not in OPERATORS and contains_cjk(t)]
        tri_ok = lay.has_trigram and count_cjk(raw) >= 3 and all(count_cjk(t) >= 3 for t in tokens)
        routes: list[Route] = []
        if cjk_ready and not tool_role and not has_lone_cjk_run(raw):
            routes.append(FTS_CJK)
        if tri_ok and not (tool_role and lay.kind == "v23"):
            # Ranking scores every match: one trigram doclist per 3 characters is cheaper
            # than the bigram phrase's position lists, and it is upstream's own route.
            routes.insert(0 if ranked else len(routes), TRIGRAM)
        return routes

    @staticmethod
    def _side_eligible(raw: str, tool_role: bool) -> bool:
        """Only CJK-bearing rows are in the side index: every OR branch must need a CJK term."""
        return not tool_role and all(
            any(contains_cjk(t) for t in must) for must, _n in parse_bool(raw).groups
        )

    # ------------------------------------------------------------ counting
    @_store_errors
    def search_count(
        self,
        query: str,
        source_filter: list[str] | None = None,
        exclude_sources: list[str] | None = None,
        role_filter: list[str] | None = None,
        include_inactive: bool = False,
        cap: int = 10_000,
        sort: str | None = None,
    ) -> tuple[int, bool]:
        """(+) How many messages `search()` with the same arguments pages through: `(n, exact)`.

        The same sanitizer, bounds, routes and filters as `search()` (`sort` only matters for
        CJK queries, whose first index differs by order). Counting stops at `cap`: `(cap, False)`
        means "at least cap". Raises `QueryTooComplex` where `search()` does.
        """
        if not isinstance(query, str) or not query.strip() or self.layout.kind == "none":
            return 0, True
        todays = Q.todays_hermes(self)
        parsed = parse_query(query, todays)
        if parsed is None:
            return 0, True
        q = parsed.q
        cap = max(int(cap), 0)
        ranked = SortOrder.parse(sort) is SortOrder.RANK
        filters = self._search_filters(source_filter, exclude_sources, role_filter, include_inactive)
        tool_role = "tool" in (role_filter or ())
        cjk_ready = self._cjk_ready()
        rows_from = "FROM messages m JOIN sessions s ON s.id = m.session_id"
        try:
            if todays and tool_role:
                like = self._like_where(q)
                return self._count_sql(rows_from, like[0], like[1], filters, cap) if like else (0, True)
            if parsed.cjk:
                raw = (strip_cjk_wildcards(q) if todays else q).strip('"').strip()
                gap = self._unindexed_range()
                unindexed = todays and bool(UNINDEXED_SOURCES & set(source_filter or ()))
                for route in self._cjk_routes(raw, ranked, tool_role, cjk_ready, unindexed):
                    try:
                        counted = self._count_fts(route.index, quote_tokens(raw), filters, cap)
                    except apsw.SQLError:
                        continue
                    return (
                        self._count_gap(raw, gap, filters, cap, counted)
                        if gap and route is TRIGRAM
                        else counted
                    )
                if todays:
                    raw = " OR ".join(t for t in raw.split() if t.upper() not in OPERATORS) or raw
                reach = self._side_reach() if self._side_eligible(raw, tool_role) else None
                if reach is not None:
                    try:
                        self._attach_side()
                        if reach[0] >= reach[1]:
                            return self._count_fts(
                                "cjk_side.side_fts", quote_tokens(raw), filters, cap, alias="f"
                            )
                        held = self._count_fts(
                            "cjk_side.side_fts",
                            quote_tokens(raw),
                            _ids_between(filters, None, reach[0]),
                            cap,
                            alias="f",
                        )
                        return self._count_gap(raw, reach, filters, cap, held)
                    except apsw.SQLError:
                        pass
                like = any_token_like(raw) if todays else self._like_where(raw)
                if like is None:
                    return 0, True
                sql, params, _terms = like
                return self._count_sql(rows_from, sql, params, filters, cap)
            found = self._probe([(FTS5.index, expand_prefixes(q, self._prefix_terms) or q)])
            if found is None:  # FTS5 rejects the query: search() answers `[]`
                return 0, True
            gap = self._unindexed_range()
            if gap:
                indexed = self._count_fts(FTS5.index, q, filters, cap) if found[0] else (0, True)
                return self._count_gap(q, gap, filters, cap, indexed)
            if found[0]:
                n, exact = self._count_fts(FTS5.index, q, filters, cap)
                if n or not exact:
                    return n, exact
            if todays:
                return self._count_todays_retries(q, filters, cap, cjk_ready)
            if tool_role:
                return 0, True
            live, _probed = self._live_fallbacks(self._latin_fallback_routes(q, cjk_ready))
            for route, quoted in live:
                try:
                    n, exact = self._count_glued(route.index, quoted, _latin_terms(q), filters, cap)
                except apsw.SQLError:
                    continue
                if n or not exact:
                    return n, exact
            return 0, True
        except apsw.InterruptError:
            return 0, False

    def _count_todays_retries(
        self, q: str, filters: tuple[list[str], list[Any]], cap: int, cjk_ready: bool
    ) -> tuple[int, bool]:
        """`_todays_latin`'s retries counted: the first index that finds a row answers."""
        quoted = quote_tokens(q.strip('"').strip())
        tries = [(FTS_CJK.index, quoted)] if cjk_ready else []
        if self.layout.has_trigram and trigram_eligible(q):
            tries.append((TRIGRAM.index, quoted))
        relaxed = or_relaxed(q)
        if relaxed is not None:
            tries.append((FTS5.index, relaxed))
        for table, match in tries:
            try:
                n, exact = self._count_fts(table, match, filters, cap)
            except apsw.SQLError:
                continue
            if n or not exact:
                return n, exact
        return 0, True

    def _count_gap(
        self,
        raw: str,
        gap: tuple[int, int],
        filters: tuple[list[str], list[Any]],
        cap: int,
        indexed: tuple[int, bool],
    ) -> tuple[int, bool]:
        """`indexed` plus the LIKE matches among the ids an interrupted conversion left out."""
        like = self._like_where(raw)
        if like is None or not indexed[1]:
            return indexed
        sql, params, _terms = like
        n, exact = self._count_sql(
            "FROM messages m JOIN sessions s ON s.id = m.session_id",
            sql,
            params,
            _ids_between(filters, gap[0], gap[1]),
            cap - indexed[0],
        )
        return (indexed[0] + n, exact)

    def _count_sql(
        self, source: str, cond: str, params: list[Any], filters: tuple[list[str], list[Any]], cap: int
    ) -> tuple[int, bool]:
        where, fparams = filters
        sql = (
            f"SELECT COUNT(*) FROM (SELECT 1 {source} WHERE {cond}"
            + "".join(" AND " + w for w in where)
            + " LIMIT +?)"
        )
        n = int(self._scalar(sql, [*params, *fparams, cap + 1], default=0))
        return (n, True) if n <= cap else (cap, False)

    def _count_fts(
        self, table: str, match: str, filters: tuple[list[str], list[Any]], cap: int, alias: str | None = None
    ) -> tuple[int, bool]:
        """Filtered matches of one index, at most `cap` + 1 of them joined (no scoring)."""
        name = alias or table
        source = (
            f"FROM {table}{' ' + alias if alias else ''} JOIN messages m ON m.id = {name}.rowid "
            "JOIN sessions s ON s.id = m.session_id"
        )
        col = table.rsplit(".", 1)[-1]
        return self._count_sql(source, f"{name}.{col} MATCH ?", [match], filters, cap)

    # A retry's matches are checked for a term glued to CJK one by one: at most this many per cap.
    GLUED_SCAN_FACTOR = 8

    def _count_glued(
        self, table: str, match: str, terms: list[str], filters: tuple[list[str], list[Any]], cap: int
    ) -> tuple[int, bool]:
        """The v23 retry's count: filtered matches whose term touches a CJK character."""
        where, params = filters
        scan = self.GLUED_SCAN_FACTOR * cap + 64
        rows = self._tuples(
            f"SELECT m.content, m.tool_name, m.tool_calls FROM {table} JOIN messages m ON m.id "
            f"= {table}.rowid "
            f"JOIN sessions s ON s.id = m.session_id WHERE {table} MATCH ?"
            + "".join(" AND " + w for w in where)
            + f" ORDER BY {table}.rowid DESC LIMIT +?",
            [match, *params, scan + 1],
        )
        n = sum(1 for content, tool, calls in rows[:scan] if _glued_text(content, tool, calls, terms))
        if n > cap:
            return cap, False
        return n, len(rows) <= scan

    # ------------------------------------------------------------ newest first
    _BLOCK_SHIFT = 8  # 256 ids per block: a tight bound, so one short scan usually settles it

    def _block_max(self) -> list[float]:
        """Prefix maxima of `timestamp` per block of message ids: an upper bound for "any row with
        a smaller id". Built once from the covering (session_id, timestamp) index, then extended
        for new ids; deletes only lower the true maxima, so a cached bound stays valid."""
        top, epoch = self._block_max_key()
        cache = self._blockmax_cache
        if cache is not None and cache[0] >= top and self._blockmax_epoch == epoch:
            return cache[1]
        with self._blockmax_lock:  # a search during `prepare_search` waits for it, not twice the scan
            return self._build_block_max(top, epoch)

    def _block_max_key(self) -> tuple[int, str | None]:
        """The store's largest message id and its restore token (`MESSAGES_RESTORED_KEY`)."""
        if "state_meta" not in self._columns:
            return int(self._scalar("SELECT COALESCE(MAX(id), 0) FROM messages", default=0)), None
        row = self._tuples(
            "SELECT (SELECT COALESCE(MAX(id), 0) FROM messages), "
            "(SELECT value FROM state_meta WHERE key = ?)",
            (MESSAGES_RESTORED_KEY,),
        )
        return int(row[0][0]), row[0][1]

    def _build_block_max(self, top: int, epoch: str | None) -> list[float]:
        cache = self._blockmax_cache
        if self._blockmax_epoch != epoch:  # messages came back under old ids: start over
            cache = None
        elif cache is not None and cache[0] >= top:
            return cache[1]
        start = 0 if cache is None else cache[0] + 1
        blocks = [] if cache is None else list(cache[2])
        got = self._tuples(self._block_max_sql(start, top), (self._BLOCK_SHIFT, start))
        ids_json, max_json = got[0] if got else ("[]", "[]")
        for b, mx in zip(json.loads(ids_json or "[]"), json.loads(max_json or "[]"), strict=True):
            while len(blocks) <= b:
                blocks.append(float("-inf"))
            blocks[b] = max(blocks[b], _as_bound(mx))
        prefix = list(itertools.accumulate(blocks, max))
        self._blockmax_cache = (top, prefix, blocks)
        self._blockmax_epoch = epoch
        return prefix

    def _block_max_restored(self, rows: list[tuple[int, Any]], epoch: str) -> None:
        """This process restored `rows` (id, timestamp) under their old ids, writing `epoch`:
        raise their blocks' bounds, so the next newest-first search need not rebuild them."""
        with self._blockmax_lock:
            cache = self._blockmax_cache
            if cache is None:
                return
            top, _prefix, old = cache
            blocks = list(old)
            for mid, ts in rows:
                b = int(mid) >> self._BLOCK_SHIFT
                if int(mid) <= top:
                    blocks.extend([float("-inf")] * (b + 1 - len(blocks)))
                    blocks[b] = max(blocks[b], _as_bound(ts))
            self._blockmax_cache = (top, list(itertools.accumulate(blocks, max)), blocks)
            self._blockmax_epoch = epoch

    # Extending the bounds by fewer than 1/16 of the store's ids reads the new rows by id: a row
    # of the table costs about as much to read as 16 entries of the (session_id, timestamp) index.
    _BLOCK_EXTEND_BY_ROWID = 16

    def _block_max_sql(self, start: int, top: int) -> str:
        """The block maxima of ids >= `start`, read the cheaper way.

        From scratch, the covering (session_id, timestamp) index is the smallest thing holding
        every timestamp. But it is ordered by session, so `id >= start` still reads all of it:
        extending the bounds after an owner's 10k appends read the whole index of a 10M store
        (54.6 s on a cold 24 GB file); by id it reads only the new rows. One row of two JSON
        arrays, not a row per block (40k blocks at 10M messages: the rows' Python cost was a
        third of the build). A text or blob maximum travels as 'x' (above every number, as
        SQLite orders it)."""
        by_rowid = start > 0 and (top - start) * self._BLOCK_EXTEND_BY_ROWID < top
        if by_rowid:
            index = "NOT INDEXED "
        elif self._has_index("idx_messages_session"):
            index = "INDEXED BY idx_messages_session "
        else:
            index = ""
        return (
            "SELECT json_group_array(b), json_group_array(CASE WHEN typeof(mx) IN ('integer', 'real') "
            "OR mx IS NULL THEN mx ELSE 'x' END) FROM (SELECT id >> ? AS b, MAX(timestamp) AS mx "
            f"FROM messages {index}WHERE id >= ? GROUP BY b)"
        )

    def prepare_search(self) -> None:
        """(+) Build now what the first newest-first search of this process would build: the
        per-block timestamp bounds, one scan of the message index (3–4 s at 10M messages). The
        browser calls it in a worker after first paint, so the first keystroke does not pay it;
        a search arriving meanwhile waits for the rest of this build instead of scanning again."""
        self._block_max()

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

    def _has_index(self, name: str) -> bool:
        return bool(self._scalar("SELECT 1 FROM sqlite_master WHERE type='index' AND name=?", (name,)))

    def _newest_ids(self, table: str, match: str, filters: tuple[list[str], list[Any]], k: int) -> list[int]:
        """Ids of the k newest matches of an FTS index, without scoring every match."""
        return self._newest_walk(
            f"FROM {table} JOIN messages m ON m.id = {table}.rowid JOIN sessions s ON s.id = m.session_id",
            f"{table} MATCH ?",
            [match],
            f"{table}.rowid",
            filters,
            k,
        )

    def _newest_walk(
        self,
        source: str,
        cond: str,
        cond_params: list[Any],
        id_col: str,
        filters: tuple[list[str], list[Any]],
        k: int,
    ) -> list[int]:
        """Ids of the k newest rows of `source` meeting `cond`: walk by id descending and stop
        once no smaller id can be newer than the k-th timestamp found (exact; the bounds are
        the message index's block maxima)."""
        import heapq

        where, params = filters
        prefix: list[float] | None = None  # read only when one batch does not settle it
        top: list[tuple[float, int]] = []  # min-heap of (timestamp, id)
        cursor: int | None = None
        batch = max(200, 4 * k)
        conn = self._conn()
        while True:
            below = "" if cursor is None else f" AND {id_col} < {int(cursor)}"
            rows: list[tuple[Any, ...]] = conn.execute(
                f"SELECT m.id, m.timestamp {source} WHERE {cond}{below}"
                + "".join(" AND " + w for w in where)
                + f" ORDER BY {id_col} DESC LIMIT {batch}",
                [*cond_params, *params],
            ).fetchall()
            for mid, ts in rows:
                item = (_as_bound(ts), int(mid))
                if len(top) < k:
                    heapq.heappush(top, item)
                elif item > top[0]:
                    heapq.heapreplace(top, item)
            if len(rows) < batch:
                break
            cursor = rows[-1][0]
            if len(top) >= k:
                if prefix is None:
                    prefix = self._block_max()
                b = (cursor - 1) >> self._BLOCK_SHIFT
                bound = prefix[min(b, len(prefix) - 1)] if prefix and b >= 0 else float("-inf")
                if bound < top[0][0]:
                    break
            batch = min(batch * 2, 20000)
        return [mid for _ts, mid in top]

    # ------------------------------------------------------------ side index
    @contextlib.contextmanager
    def _side_write_guard(self) -> Iterator[None]:
        """A write guard (`_Core._write_guards`) keeping the side index private: messages a write
        deletes or rewrites (seen by TEMP triggers on this connection) leave the side file before
        the write returns, or, inside `_side_batch()`, when the batch ends."""
        pending = self._watch_messages()
        try:
            yield
        finally:
            if pending and not self._local.side_defer:
                self._side_forget(pending)

    def _watch_messages(self) -> list[int]:
        """This connection's list of message ids deleted or rewritten since the last drain.

        TEMP triggers live in this connection only (the file is untouched, other writers never
        see them) and call back into Python just for deletes and text updates, never appends.
        """
        pending = self._local.side_pending
        if pending is not None:
            return pending
        if "messages" not in self._columns:
            return []
        pending = []
        conn = self._conn()

        def note(*mid: Any) -> None:  # registered with one argument: the message id
            pending.append(mid[0])

        conn.create_scalar_function("hermes_side_note", note, 1)
        conn.execute(
            "CREATE TEMP TRIGGER IF NOT EXISTS hermes_side_delete AFTER DELETE ON main.messages "
            "BEGIN SELECT hermes_side_note(old.id); END;"
            "CREATE TEMP TRIGGER IF NOT EXISTS hermes_side_update AFTER UPDATE OF content, "
            "tool_name, tool_calls "
            "ON main.messages BEGIN SELECT hermes_side_note(old.id); END;"
        )
        self._local.side_pending = pending
        return pending

    def _side_forget(self, pending: list[int]) -> None:
        ids = list(pending)
        pending.clear()
        if ids and self._cjk_impl is not None:
            self._side().forget(ids, self._conn())

    @contextlib.contextmanager
    def _side_batch(self) -> Iterator[None]:
        """Writes inside leave the side index once, at the end (a batched delete rewrites it once)."""
        if self._local.side_defer or self.read_only:
            yield
            return
        self._local.side_defer = True
        try:
            yield
        finally:
            self._local.side_defer = False
            pending = self._local.side_pending
            if pending:
                self._side_forget(pending)

    def _side_check(self) -> None:
        """After opening (a `_Core._open_hooks` step): if this store has a side file, drop from it
        the messages another program deleted since it was last checked, in the background (the
        README's promise: they leave it the next time we open the store)."""
        if self._cjk_impl is not None:
            self._side().check_in_background(lambda: _source_connection(self))

    def _side_stop(self) -> None:
        """Before closing (a `_Core._close_hooks` step): end the side index's background work."""
        if self._side_index is not None:
            self._side_index.stop()

    def _side(self) -> SideIndex:
        side = self._side_index
        if side is None:
            from .side_index import SideIndex

            side = self._side_index = SideIndex(self.db_path)
        return side

    def _side_reach(self) -> tuple[int, int] | None:
        """`(held, newest)`: the side index answers for message ids up to `held`, the store's
        newest is `newest`; `held >= newest` when it answers for every message. It catches up
        inline when only a little behind (10k new messages take ~0.16 s to index; the LIKE
        route it would otherwise take costs ~1 s at 1M), and builds on a background thread
        otherwise. None when it cannot help yet (no side index, or none of it built)."""
        if self._cjk_impl is None:
            return None
        side = self._side()
        top = int(self._scalar("SELECT COALESCE(MAX(id), 0) FROM messages", default=0))
        hw = side.high_water()
        if hw >= top:
            if not side.reconciled:  # built since this store was opened: check it once, aside
                side.build_in_background(lambda: _source_connection(self))
            return top, top
        if hw >= 0 and top - hw <= MAX_INLINE_LAG:
            side.sync(self._conn(), reconcile=False)
            if not side.reconciled:  # forget rows deleted elsewhere, off this search's path
                side.build_in_background(lambda: _source_connection(self))
            return top, top
        side.build_in_background(lambda: _source_connection(self))
        return (hw, top) if hw > 0 else None

    def cjk_index_progress(self, query: str | None = None) -> tuple[int, int] | None:
        """(+) `(indexed, newest)` message ids while the CJK side index is being built or is far
        behind the store: the CJK searches it answers (every CJK query on 0.19.0's files, single
        CJK characters on v23 ones) are substring scans meanwhile (minutes at 10M), and the
        browser says how far the index is. None when no side index applies (or ``query`` has no
        CJK), or when the next CJK search catches up inline."""
        if self._cjk_impl is None or (query is not None and not contains_cjk(query)):
            return None
        top = int(self._scalar("SELECT COALESCE(MAX(id), 0) FROM messages", default=0))
        hw = self._side().high_water()
        if top <= 0 or hw >= top or (hw >= 0 and top - hw <= MAX_INLINE_LAG):
            return None
        return max(0, hw), top

    def build_cjk_side_index(self) -> int:
        """(+) Bring the CJK side index fully up to date now (blocking); returns its high water."""
        return self._side().sync(self._conn())

    def _attach_side(self) -> apsw.Connection:
        """This thread's connection with the side index attached read-only as `cjk_side`."""
        conn = self._conn()
        if not any(r[1] == "cjk_side" for r in conn.execute("PRAGMA database_list")):
            conn.execute("ATTACH DATABASE ? AS cjk_side", (self._side().uri(),))
        return conn

    def _side_route(
        self, raw: str, filters: tuple[list[str], list[Any]], sort: SortOrder, limit: int, offset: int
    ) -> list[dict[str, Any]]:
        conn = self._attach_side()
        where, params = filters
        match = quote_tokens(raw)
        order = OLDEST_BY_ID_SQL if sort is SortOrder.OLDEST else NEWEST_BY_ID_SQL
        if sort is not SortOrder.OLDEST and limit >= 0:
            # Newest first (the LIKE route's only order, so also "rank"): bounded rowid walk,
            # instead of reading every matching message to sort it (a common character: 190 ms).
            ids = self._newest_ids("side_fts", match, filters, limit + offset)
            if not ids:
                return []
            where, params = [*where, _rowids_in("f", ids)], [*params, json.dumps(ids)]
        sql = (
            "SELECT m.id, m.session_id, m.role, m.content AS _content, m.tool_name, m.tool_calls AS "
            "_tc, m.timestamp, "
            "s.source, s.model, s.started_at AS session_started FROM cjk_side.side_fts f "
            "JOIN messages m ON m.id = f.rowid JOIN sessions s ON s.id = m.session_id "
            "WHERE f.side_fts MATCH ?" + "".join(" AND " + w for w in where) + f" {order} LIMIT +? OFFSET +?"
        )
        return with_marked_snippets(
            read_rows(conn, sql, [match, *params, limit, offset]), parse_bool(raw).terms
        )

    def _latin_fallback_routes(self, q: str, cjk_ready: bool) -> list[tuple[Route, str]]:
        """(route, quoted match) of v23's retries for a zero-result Latin query."""
        terms = _latin_terms(q)
        if not terms:
            return []
        quoted = quote_tokens(q.strip('"').strip())
        routes: list[tuple[Route, str]] = []
        if cjk_ready:
            routes.append((FTS_CJK, quoted))
        if self.layout.has_trigram and all(len(t) >= 3 for t in terms):
            routes.append((TRIGRAM, quoted))
        return routes

    def _probe(self, pairs: list[tuple[str, str]]) -> list[bool] | None:
        """Which (index, match) pairs have any row, in one statement (None: FTS5 rejects a match).

        Opening an FTS5 cursor costs 10-40 µs whatever it finds (more with more segments), so a
        query opens as few as it can: the primary index first, the v23 retry indexes only when
        it has no row, and never the same index twice (the ranked route trusts this probe).
        """
        try:
            row = (
                self._conn()
                .execute(_probe_sql(tuple(t for t, _m in pairs)), [m for _t, m in pairs])
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
        sql = _first_probe_sql(tuple(t for t, _m in stand_ins), self.SMALL_PLAN_MIN)
        try:
            row = self._conn().execute(sql, (q, *(m for _t, m in stand_ins))).fetchall()[0]
        except apsw.SQLError:
            return None
        n = int(row[0] or 0)
        return (n, None) if n or not stand_ins else (0, tuple(bool(v) for v in row[1:]))

    @staticmethod
    def _longest_probes(routes: list[tuple[Route, str]]) -> tuple[tuple[str, str], ...]:
        """For a retry of several words without operators: each retry index with the longest word
        alone (an AND needs every word; the longest, likely the rarest, is one doclist)."""
        tokens = [match.split(" ") for _r, match in routes]
        if not routes or not all(
            len(ts) > 1 and not any(t.upper() in OPERATORS for t in ts) for ts in tokens
        ):
            return ()
        return tuple((r.index, max(ts, key=len)) for (r, _m), ts in zip(routes, tokens, strict=True))

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
        cache = _connection_facts(conn)
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

    # A retry's candidates for one word are read and checked whole up to this many rows.
    GLUED_SCAN_MAX = 256

    def _glued_ids(self, tri: tuple[str, str], q: str) -> frozenset[int] | None:
        """Ids of every row where the plain word `q` touches a CJK character (None: more than
        `GLUED_SCAN_MAX` rows may hold it, so unknown). An empty set proves both v23 retries
        empty whatever the filters and order, as each keeps only such rows (`_word_on_trigram`).

        A word whose hits the filters all drop (a rare word in one source) otherwise runs both
        retries in full to find nothing: 0.9 ms at 10k messages, against 0.05 for upstream's
        whole search. Kept with the query's other facts until any connection commits.

        The word's phrase reads every one of its trigrams' doclists, and a common one ("lin" of
        "zeppelin": 980 rows at 10k messages) costs what all of them do: 55 µs at 10k, 150 at 100k
        for 2 and 21 rows. The rows of its rarest-looking trigram alone (by English letter
        rank) are a superset read in 9-13 µs, checked in Python; when that trigram has too
        many rows, the phrase is read as before.
        """
        table, match = tri
        cap = self.GLUED_SCAN_MAX
        fetch = (
            f"SELECT m.id, m.content, m.tool_name, m.tool_calls FROM {table} JOIN messages m ON m.id "
            f"= {table}.rowid WHERE {table} MATCH ? LIMIT +?"
        )
        word = match.strip('"')
        conn = self._conn()
        rows: list[tuple[Any, ...]] = []
        if len(word) > 3:
            rows = conn.execute(fetch, (f'"{_rarest_trigram(word)}"', cap + 1)).fetchall()
        if len(word) <= 3 or len(rows) > cap:
            rows = conn.execute(fetch, (match, cap + 1)).fetchall()
            if len(rows) > cap:
                return None
        terms, low = _latin_terms(q), word.lower()
        return frozenset(
            int(i) for i, c, t, tc in rows if _may_glue(low, c, t, tc) and _glued_text(c, t, tc, terms)
        )

    def _word_on_trigram(self, parsed: ParsedQuery, cjk_ready: bool) -> tuple[str, str] | None:
        """The trigram probe that stands for both v23 retries of one plain ASCII word, if any.

        Every row the cjk retry keeps holds the word literally (`_glued_to_cjk`, ASCII case
        folding) next to CJK, so the trigram index, which covers the same rows, has it too: no
        trigram row, no retry can answer. It rides in the primary probe's statement, opened only
        when the primary index has no row (`_probe_first`): one statement less for a no-hit word.
        """
        # Both retries exist for a plain word (`_latin_fallback_routes`) when the cjk index is
        # ready and the trigram index exists: the word is its trigram route's quoted match.
        if not (parsed.plain_word and cjk_ready and self.layout.trigram_stands_in):
            return None
        return (TRIGRAM.index, '"' + parsed.q.strip('"').strip() + '"')

    def _live_fallbacks(
        self, routes: list[tuple[Route, str]], longest: tuple[bool, ...] | None = None
    ) -> tuple[list[tuple[Route, str]], bool]:
        """The retry routes that have any row for their match, and whether they were probed.

        A retry of several words first probes their longest alone (each index, one statement),
        unless the primary probe already did (`longest`: each route's answer, `_longest_probes`).
        """
        # An AND of quoted tokens needs each of them: its longest token alone (likely the rarest)
        # is one doclist instead of all of them (12 against 30-36 µs at 1M for 3 words).
        tokens = [match.split(" ") for _r, match in routes]
        if longest is not None and len(longest) == len(routes):
            routes = [r for r, hit in zip(routes, longest, strict=True) if hit]
            if not routes:
                return [], True
        elif all(len(ts) > 1 and not any(t.upper() in OPERATORS for t in ts) for ts in tokens):
            found = self._probe(
                [(r.index, max(ts, key=len)) for (r, _m), ts in zip(routes, tokens, strict=True)]
            )
            if found is not None:
                routes = [r for r, hit in zip(routes, found, strict=True) if hit]
                if not routes:
                    return [], True
        found = self._probe([(r.index, match) for r, match in routes])
        if found is None:
            return routes, False
        return [r for r, hit in zip(routes, found, strict=True) if hit], True

    def _latin_fallback(
        self,
        out: SearchOutcome,
        q: str,
        filters: Any,
        order: SortOrder,
        limit: int,
        offset: int,
        routes: list[tuple[Route, str]],
        probed: bool,
        share: float = 1.0,
    ) -> None:
        """v23: a Latin term glued to CJK (`修改youer服务端`) is one unicode61 token; retry quoted.

        Only rows where a term really touches a CJK character are kept: without that check the
        trigram retry would turn every plain word into a substring match (`deploy` → `deployment`).
        """
        terms = _latin_terms(q)
        for route, quoted in routes:
            try:
                # Over-fetch: rows failing the glued check are dropped after the query.
                res = self._fts_route(
                    route,
                    quoted,
                    filters,
                    order,
                    (limit + offset) * 4 + 20 if limit >= 0 else -1,
                    0,
                    probed=probed,
                    share=share,
                )
            except apsw.SQLError:
                continue
            res = [r for r in res if self._glued_to_cjk(r["id"], terms)]
            res = res[offset : offset + limit] if limit >= 0 else res[offset:]
            if res:
                out.results, out.route = res, route.name
                return

    def _glued_to_cjk(self, message_id: int, terms: list[str]) -> bool:
        row = self._tuples("SELECT content, tool_name, tool_calls FROM messages WHERE id = ?", (message_id,))
        return bool(row) and _glued_text(row[0][0], row[0][1], row[0][2], terms)

    def search_messages(
        self,
        query: str,
        source_filter: list[str] | None = None,
        exclude_sources: list[str] | None = None,
        role_filter: list[str] | None = None,
        limit: int = 20,
        offset: int = 0,
        sort: str | None = None,
        include_inactive: bool = False,
    ) -> list[dict[str, Any]]:
        try:
            return self.search(
                query, source_filter, exclude_sources, role_filter, limit, offset, sort, include_inactive
            ).results
        except QueryTooComplex:  # upstream's contract: a query never raises, the worst case is []
            return []

    _sanitize_fts5_query = staticmethod(sanitize_fts5_query)

    def _flatten_snippets(self, rows: list[dict[str, Any]], q: str) -> None:
        """FTS5's `snippet()` cuts the stored text, which for a multimodal message is its JSON
        (`\\x00json:[{"type": "text", …`): those rows get a snippet cut from the one flattened text
        (`content_text`, what the transcript and the exports show), marking what FTS5 marked."""
        # Rows of an FTS route say whether they are multimodal (`_multimodal`); others are looked up.
        if not rows:
            return
        ids = [r["id"] for r in rows if not r.get("_flat") and r.get("_multimodal", 1)]
        if not ids:
            return
        stored = dict(
            read_tuples(
                self._conn(),
                "SELECT id, content FROM messages WHERE id IN (SELECT value FROM json_each(?)) "
                "AND content >= ? AND content < ?",  # the prefix (text functions stop at its NUL)
                (json.dumps(ids), CONTENT_JSON_PREFIX, CONTENT_JSON_PREFIX[:-1] + ";"),
            )
        )
        for r in rows:
            if r["id"] in stored:
                marked = [t for t in _MARKED_RE.findall(r.get("snippet") or "") if t.strip()]
                terms = list(dict.fromkeys(marked)) or _latin_terms(q) or [q.strip('"')]
                r["snippet"] = like_snippet(content_text(stored[r["id"]]), terms)

    def _contexts(self, message_ids: list[int]) -> dict[int, list[dict[str, Any]]]:
        """For each id: the previous message of its session, the match, and the next (by timestamp, id).

        One statement for every hit (0.14 ms for 20, against 1.4 ms one by one); row values keep
        each neighbour one index range (`OR` made SQLite walk the session).
        """
        out: dict[int, list[dict[str, Any]]] = {i: [] for i in message_ids}
        if not message_ids:
            return out
        try:
            rows = self._tuples(
                """WITH t AS (SELECT m.id AS tid, m.session_id AS sid, m.timestamp AS ts
                              FROM json_each(?) j JOIN messages m ON m.id = j.value),
                   n AS (SELECT tid,
                     (SELECT p.id FROM messages p WHERE p.session_id = t.sid
                      AND (p.timestamp, p.id) < (t.ts, t.tid)
                      ORDER BY p.timestamp DESC, p.id DESC LIMIT 1) AS prev,
                     (SELECT p.id FROM messages p WHERE p.session_id = t.sid
                      AND (p.timestamp, p.id) > (t.ts, t.tid)
                      ORDER BY p.timestamp ASC, p.id ASC LIMIT 1) AS nxt FROM t)
                   SELECT n.tid, m.role, m.content FROM n
                   JOIN (SELECT 0 AS o UNION ALL SELECT 1 UNION ALL SELECT 2) x
                   JOIN messages m ON m.id = CASE x.o WHEN 0 THEN n.prev WHEN 1 THEN n.tid ELSE n.nxt END
                   ORDER BY n.tid, x.o""",
                (json.dumps([int(i) for i in message_ids]),),
            )
        except apsw.Error:
            return out
        for tid, role, content in rows:
            out[tid].append({"role": role, "content": upstream_preview(content)[:200]})
        return out
