"""Turning what a person typed into a safe FTS5 query, and telling CJK queries apart.

`sanitize_fts5_query` is hermes-agent 0.19.0's `_sanitize_fts5_query`, step for step, and with
`todays=True` today's Hermes' (the v31 writer's `hermes_state_search._sanitize_fts5_query`: more
characters are FTS5 syntax it strips, and `%` outside CJK): the differential tests compare our
results with each writer's on the same input, so the same input must become the same MATCH string.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from .errors import QueryTooComplex

MAX_FTS5_QUERY_CHARS = 2048
OPERATORS = frozenset({"AND", "OR", "NOT"})
# A search looks up one doclist per word (and per CJK bigram), and bm25 scores every phrase of
# every match: a common word typed 375 times took 10.6 s. Past this many words it is refused.
MAX_QUERY_TERMS = 64
# Repeated words of a plain AND are dropped when every word repeats equally (bm25 order is the
# same, scaled) or when there are more than this many words (the order may then differ a little).
DEDUPE_ALWAYS_ABOVE = 8


_STRIP = re.compile(r"[+{}():\"^]")
#: Today's Hermes' `_FTS5_SPECIAL_CHARS` (`%` is stripped apart, outside CJK).
_STRIP_TODAY = re.compile("[" + re.escape("+{}():\"^@/#&|~[]<>,;!?$=\\'") + "]")
_STARS = re.compile(r"\*+")
_LEADING_STAR = re.compile(r"(?:^|(?<=\s))\*")  # 0.19.0: `(^|\s)\*` -> `\1`
_LEADING_OP = re.compile(r"(?i)^(AND|OR|NOT)\b\s*")
_TRAILING_OP = re.compile(r"(?i)\s+(AND|OR|NOT)\s*$")
_JOINED_TERM = re.compile(r"\b(\w+(?:[._-]\w+)+)\b")
_OP_FIRST = frozenset("aAoOnN")
_OP_LAST = frozenset("dDrRtT")


def _quote_match(m: re.Match[str]) -> str:
    return f'"{m.group(1)}"'


def sanitize_fts5_query(query: str, todays: bool = False) -> str:
    query = query[:MAX_FTS5_QUERY_CHARS]
    quoted: list[str] = []
    pieces: list[str] = []
    i = 0
    while (start := query.find('"', i)) != -1:  # balanced quotes become placeholders
        pieces.append(query[i:start])
        end = query.find('"', start + 1)
        if end == -1:  # an unmatched quote is a space (no quote follows it)
            pieces.append(" ")
            i = start + 1
            break
        quoted.append(query[start : end + 1])
        pieces.append(f"\x00Q{len(quoted) - 1}\x00")
        i = end + 1
    pieces.append(query[i:])
    s = "".join(pieces)
    s = (_STRIP_TODAY if todays else _STRIP).sub(" ", s)
    if todays and "%" in s and not contains_cjk(s):  # (kept for the CJK LIKE route)
        s = s.replace("%", " ")
    if "*" in s:  # (skip substitutions that cannot match: every keystroke sanitizes)
        s = _STARS.sub("*", s)
        s = _LEADING_STAR.sub("", s)
    s = s.strip()
    if s[:1] in _OP_FIRST:  # an operator can only lead if its first letter does
        s = _LEADING_OP.sub("", s).strip()
    if s[-1:] in _OP_LAST:
        s = _TRAILING_OP.sub("", s).strip()
    if "." in s or "_" in s or "-" in s:
        s = _JOINED_TERM.sub(_quote_match, s)
    for n, q in enumerate(quoted):
        s = s.replace(f"\x00Q{n}\x00", q)
    return s.strip()


def is_cjk_codepoint(cp: int) -> bool:
    """The *routing* ranges (0.19.0's `_is_cjk_codepoint`; differ from the tokenizer's)."""
    return (
        0x4E00 <= cp <= 0x9FFF
        or 0x3400 <= cp <= 0x4DBF
        or 0x20000 <= cp <= 0x2A6DF
        or 0x3000 <= cp <= 0x303F
        or 0x3040 <= cp <= 0x309F
        or 0x30A0 <= cp <= 0x30FF
        or 0xAC00 <= cp <= 0xD7AF
    )


# The same ranges as one character class: a regex scan is ~20x faster than a Python loop, and
# every search asks (tests check the two agree).
_CJK = re.compile("[\u3000-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\U00020000-\U0002a6df]")
_CJK_RUN = re.compile(_CJK.pattern + "+")


def contains_cjk(text: str) -> bool:
    # (`isascii` reads a flag CPython keeps: the class scan costs ~8 ns a character)
    return not text.isascii() and _CJK.search(text) is not None


def count_cjk(text: str) -> int:
    return len(_CJK.findall(text))


def has_lone_cjk_run(text: str) -> bool:
    """A maximal run of routing-CJK characters of length exactly 1 (the cjk index can't serve it)."""
    return any(len(run) == 1 for run in _CJK_RUN.findall(text))


def quote_tokens(raw: str) -> str:
    """Every non-operator token double-quoted (`"` doubled inside), operators kept."""
    parts = []
    for tok in raw.split():
        parts.append(tok if tok.upper() in OPERATORS else '"' + tok.replace('"', '""') + '"')
    return " ".join(parts)


@dataclass(frozen=True)
class BoolQuery:
    """A query reduced to OR-of-AND groups with negated terms: what LIKE can evaluate exactly."""

    groups: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...]  # ((must...), (must_not...)) per OR branch

    @property
    def terms(self) -> list[str]:
        seen: list[str] = []
        for must, _not in self.groups:
            for t in must:
                if t not in seen:
                    seen.append(t)
        return seen


def parse_bool(raw: str) -> BoolQuery:
    """FTS5-like precedence for plain token lists: NOT binds to the next term, AND (implicit
    or explicit) binds tighter than OR. Quotes are phrase delimiters; a trailing `*` is dropped
    (LIKE is a substring match already)."""
    tokens = re.findall(r'"[^"]*"|\S+', raw)
    groups: list[tuple[list[str], list[str]]] = [([], [])]
    negate = False
    for tok in tokens:
        up = tok.upper()
        if up == "OR":
            groups.append(([], []))
            negate = False
            continue
        if up == "AND":
            continue
        if up == "NOT":
            negate = True
            continue
        term = tok.strip('"').rstrip("*")
        if not term:
            continue
        (groups[-1][1] if negate else groups[-1][0]).append(term)
        negate = False
    cleaned = tuple((tuple(m), tuple(n)) for m, n in groups if m)
    return BoolQuery(cleaned)


_PREFIX_TOKEN = re.compile(r"[a-z0-9]+\*")


def split_query_tokens(query: str) -> list[str] | None:
    """Whitespace tokens of a sanitized query with quoted phrases kept whole; None when the
    query has groups or an unbalanced quote (left alone by the rewrites that use this)."""
    if "(" in query or ")" in query or query.count('"') % 2:
        return None
    return re.findall(r'"[^"]*"\S*|\S+', query)


def expand_prefixes(query: str, terms_for: Callable[[str], list[str] | None]) -> str | None:
    """Rewrite each bare ASCII `prefix*` as `("t1" OR "t2" …)` over the index's own terms.

    The match set is the same, but FTS5 evaluates a prefix by merging every matching doclist
    in full on each MATCH, which makes a newest-first scan (several short MATCHes) pay that
    cost every time. `terms_for(prefix)` returns the terms, or None to keep the prefix.
    Implicit ANDs next to a group are made explicit (FTS5 requires it). None: nothing changed.
    """
    tokens = split_query_tokens(query)
    if not tokens:
        return None
    out: list[str] = []
    changed = False
    for i, tok in enumerate(tokens):
        low = tok.lower()
        terms = terms_for(low[:-1]) if _PREFIX_TOKEN.fullmatch(low) else None
        if not terms:
            out.append(tok)
            continue
        group = "(" + " OR ".join('"' + t.replace('"', '""') + '"' for t in terms) + ")"
        if out and out[-1].upper() not in OPERATORS:
            out.append("AND")
        out.append(group)
        if i + 1 < len(tokens) and tokens[i + 1].upper() not in OPERATORS:
            out.append("AND")
        changed = True
    return " ".join(out) if changed else None


def _query_words(tokens: list[str]) -> int:
    """What a query costs to look up: every word, inside phrases too, and every CJK bigram."""
    if _CJK.search(" ".join(tokens)) is None:  # (most queries: a word each, no bigrams)
        return sum(len(tok.strip('"()').split()) for tok in tokens if tok.upper() not in OPERATORS)
    n = 0
    for tok in tokens:
        if tok.upper() in OPERATORS:
            continue
        for word in tok.strip('"()').split():
            runs = _CJK_RUN.findall(word)
            n += 1 + sum(max(len(r) - 2, 0) for r in runs)
    return n


def bound_query(q: str) -> str:
    """A sanitized query with the same matches and a bounded cost, or `QueryTooComplex`.

    An AND of the same word is that word: duplicates of a plain AND (no OR/NOT/groups) are
    dropped when every word repeats equally (bm25 scales, order unchanged) or the query has
    more than `DEDUPE_ALWAYS_ABOVE` words. What is left may look up at most `MAX_QUERY_TERMS`
    words (a phrase counts its words, a CJK run its bigrams).
    """
    tokens = split_query_tokens(q)
    if tokens is None:
        tokens = q.replace("(", " ").replace(")", " ").split()
    elif not {t.upper() for t in tokens} & {"OR", "NOT"}:
        words = [t for t in tokens if t.upper() != "AND"]
        counts = Counter(words) if len(set(words)) < len(words) else None
        if counts and (len(set(counts.values())) == 1 or len(words) > DEDUPE_ALWAYS_ABOVE):
            tokens = list(counts)
            q = " ".join(tokens)
    n = _query_words(tokens)
    if n > MAX_QUERY_TERMS:
        raise QueryTooComplex(
            f"This search has {n} words to look up; at most {MAX_QUERY_TERMS} are searched at once. "
            "Shorten the query."
        )
    return q
