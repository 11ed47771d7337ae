"""What a person typed, parsed once per search call: the `ParsedQuery` every route reads.

The sanitizer (`fts_query.sanitize_fts5_query`, hermes-agent 0.19.0's or, on files of today's
Hermes, the v31 writer's), the bounds (`fts_query.bound_query`) and the CJK classification run
once in `parse_query`; every other form a route needs (quoted tokens for the CJK indexes, the
boolean form the LIKE scan evaluates, the terms snippets mark, today's Hermes' retry forms) is
derived from it on first use and kept with it, so no route sanitizes, splits or quotes again.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, overload

from ..fts_query import (
    MAX_FTS5_QUERY_CHARS,
    OPERATORS,
    BoolQuery,
    bound_query,
    contains_cjk,
    count_cjk,
    has_lone_cjk_run,
    parse_bool,
    quote_tokens,
    sanitize_fts5_query,
)

T = TypeVar("T")

_PLAIN_WORD = re.compile(r"[A-Za-z0-9]{3,}")


def latin_terms(q: str) -> list[str]:
    """The words of a sanitised Latin query, quotes, prefix stars and operators removed."""
    terms = [t.strip('"').rstrip("*") for t in q.replace('"', " ").split() if t.upper() not in OPERATORS]
    return [t for t in terms if t]


class _Once(Generic[T]):
    """A value derived from a `ParsedQuery` on first read, then a plain attribute.

    (`functools.cached_property` takes a lock on every first read in Python 3.11; a parsed query
    is only ever derived to the same value, so a race costs a recomputation, never a wrong one.)"""

    def __init__(self, derive: Callable[[Any], T]) -> None:
        self.derive = derive
        self.name = derive.__name__
        self.__doc__ = derive.__doc__

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> _Once[T]: ...
    @overload
    def __get__(self, obj: object, owner: type | None = None) -> T: ...
    def __get__(self, obj: object | None, owner: type | None = None) -> T | _Once[T]:
        if obj is None:
            return self
        value = obj.__dict__[self.name] = self.derive(obj)
        return value


@dataclass(frozen=True)
class ParsedQuery:
    """What `search()` and `search_count()` derive from the typed text alone (no data), built
    once per query string (`parse_query`) and handed to every route.

    `q` is the sanitised and bounded text, the MATCH of the primary index. The derived forms
    below are computed on first use: a one-word search with hits reads none of them."""

    q: str
    cjk: bool
    plain_word: bool  # one plain ASCII word: the trigram probe can stand for both v23 retries
    # FTS5 rejects it (an operator first or last, as `AND OR "" ***` leaves `OR ""`): upstream
    # answers `[]` after the error; this answers it without opening the index.
    rejected: bool = False
    todays: bool = False  # sanitised by today's Hermes' rules (a v24+ file): its retry forms apply

    # ---- Latin queries
    @_Once
    def terms(self) -> tuple[str, ...]:
        """The words, quotes, prefix stars and operators removed: what snippets mark and what the
        v23 retries check for a CJK neighbour."""
        return tuple(latin_terms(self.q))

    @_Once
    def retry_match(self) -> str:
        """Every token quoted: the MATCH of a Latin query's retry on the cjk and trigram indexes."""
        return quote_tokens(self.q.strip('"').strip())

    @_Once
    def retry_trigram(self) -> bool:
        """v23's trigram retry applies: every word has 3+ characters."""
        return bool(self.terms) and all(len(t) >= 3 for t in self.terms)

    @_Once
    def trigram_ok(self) -> bool:
        """Today's Hermes' trigram retry applies (`trigram_eligible`)."""
        return trigram_eligible(self.q)

    @_Once
    def relaxed(self) -> str | None:
        """Today's Hermes' last retry, any of the words (`or_relaxed`)."""
        return or_relaxed(self.q)

    @_Once
    def boolean(self) -> BoolQuery:
        """`q` as the LIKE scan evaluates it (a tool-role search of today's Hermes, the ids an
        interrupted conversion left out of the index)."""
        return parse_bool(self.q)

    # ---- CJK queries
    @_Once
    def cjk_raw(self) -> str:
        """The text the CJK routes read: quotes gone, and on today's files each token's
        trailing stars (`strip_cjk_wildcards`)."""
        return (strip_cjk_wildcards(self.q) if self.todays else self.q).strip('"').strip()

    @_Once
    def cjk_match(self) -> str:
        """The MATCH of the cjk and trigram indexes: every token of `cjk_raw` quoted."""
        return quote_tokens(self.cjk_raw)

    @_Once
    def cjk_boolean(self) -> BoolQuery:
        return parse_bool(self.cjk_raw)

    @_Once
    def cjk_trigram(self) -> bool:
        """The trigram index can answer: 3+ CJK characters, and in every CJK token."""
        raw = self.cjk_raw
        tokens = [t for t in raw.split() if t.upper() not in OPERATORS and contains_cjk(t)]
        return count_cjk(raw) >= 3 and all(count_cjk(t) >= 3 for t in tokens)

    @_Once
    def cjk_lone(self) -> bool:
        """A lone CJK character (a run of one), which the bigram index cannot serve."""
        return has_lone_cjk_run(self.cjk_raw)

    @_Once
    def scan_raw(self) -> str:
        """What the side index and the LIKE scan read once no CJK index answered: `cjk_raw`, or
        on today's files any of its tokens (its LIKE scan keeps a row holding any)."""
        raw = self.cjk_raw
        if not self.todays:
            return raw
        return " OR ".join(t for t in raw.split() if t.upper() not in OPERATORS) or raw

    @_Once
    def scan_match(self) -> str:
        """The side index's MATCH: every token of `scan_raw` quoted."""
        return self.cjk_match if self.scan_raw == self.cjk_raw else quote_tokens(self.scan_raw)

    @_Once
    def scan_boolean(self) -> BoolQuery:
        return self.cjk_boolean if self.scan_raw == self.cjk_raw else parse_bool(self.scan_raw)

    @_Once
    def side_eligible(self) -> bool:
        """Only CJK-bearing rows are in the side index: every OR branch must need a CJK term."""
        return all(any(contains_cjk(t) for t in must) for must, _n in self.scan_boolean.groups)

    def wants_unindexed(self, source_filter: Sequence[str] | None) -> bool:
        """The search asks for rows today's Hermes keeps out of its cjk and trigram indexes
        (`UNINDEXED_SOURCES`): `search()` and `search_count()` then skip those indexes."""
        return self.todays and bool(UNINDEXED_SOURCES & set(source_filter or ()))


def _parsed(q: str, cjk: bool, plain_word: bool, rejected: bool, todays: bool) -> ParsedQuery:
    """`ParsedQuery(q, cjk, plain_word, rejected, todays)`, built for a fraction of the cost: a
    frozen dataclass's `__init__` sets each field through `object.__setattr__` (0.6 against
    0.25 µs here), and a search of a query string not searched before (every keystroke) pays it,
    where a search with no hit takes 20 µs. The fields are the same; nothing else is set."""
    parsed = _new(ParsedQuery)
    fields = parsed.__dict__
    fields["q"] = q
    fields["cjk"] = cjk
    fields["plain_word"] = plain_word
    fields["rejected"] = rejected
    fields["todays"] = todays
    return parsed


_new = object.__new__


# Raw queries longer than this are parsed every time instead of being kept.
_PARSE_CACHE_MAX_CHARS = 512


@functools.lru_cache(maxsize=256)
def _parse_cached(query: str, todays: bool = False) -> ParsedQuery | None:
    return _parse(query, todays)


def _parse(query: str, todays: bool = False) -> ParsedQuery | None:
    word = _ascii_word(query)
    if word is not None:
        return _parsed(word, False, len(word) >= 3, False, todays) if word else None
    q = bound_query(sanitize_fts5_query(query, todays))  # `QueryTooComplex` is raised, never kept
    if not q:
        return None
    cjk = contains_cjk(q)
    words = q.split()
    rejected = not cjk and (words[0] in OPERATORS or words[-1] in OPERATORS)  # (FTS5's are uppercase)
    plain = _PLAIN_WORD.fullmatch(q.strip('"').strip()) is not None
    return _parsed(q, cjk, plain, rejected, todays)


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
