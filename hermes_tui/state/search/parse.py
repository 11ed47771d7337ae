"""What a person typed, parsed once per search call: the `ParsedQuery` every route reads.

The sanitizer (`fts_query.sanitize_fts5_query`, hermes-agent 0.19.0's or, on files of today's
Hermes, the v31 writer's), the bounds (`fts_query.bound_query`), the CJK classification and the
query forms today's Hermes retries with (`or_relaxed`, `strip_cjk_wildcards`, `trigram_eligible`).
"""

from __future__ import annotations

import functools
import re
from typing import NamedTuple

from ..fts_query import (
    MAX_FTS5_QUERY_CHARS,
    OPERATORS,
    bound_query,
    contains_cjk,
    sanitize_fts5_query,
)

_PLAIN_WORD = re.compile(r"[A-Za-z0-9]{3,}")


def latin_terms(q: str) -> list[str]:
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
