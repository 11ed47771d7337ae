"""v23's retry of a Latin miss: a term glued to CJK (`修改youer服务端`) is one unicode61 token.

The retry reads the cjk and trigram indexes with the words quoted, and keeps only rows where a
term really touches a CJK character (`glued_text`): otherwise the trigram retry would turn every
plain word into a substring match. A plain word's retries are often proved empty without running
them (`_word_on_trigram`, `_glued_ids`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import apsw

from ..fts_query import OPERATORS, contains_cjk
from ..text import CONTENT_JSON_PREFIX, content_text
from .model import FTS_CJK, TRIGRAM, Route, SearchOutcome, SortOrder
from .parse import ParsedQuery
from .probe import ProbeMixin


def glued_text(content: Any, tool_name: str | None, tool_calls: str | None, terms: Sequence[str]) -> bool:
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


def rarest_trigram(word: str) -> str:
    """The trigram of `word` (3+ ASCII letters or digits) whose letters are rarest in English."""
    low = word.lower()
    rank = _LETTER_RANK

    def rarity(i: int) -> int:
        return rank.get(low[i], 21) + rank.get(low[i + 1], 21) + rank.get(low[i + 2], 21)

    best = max(range(len(low) - 2), key=rarity)
    return low[best : best + 3]


def may_glue(word: str, content: Any, tool_name: Any, tool_calls: Any) -> bool:
    """False only when no text of the row holds both the lowercase ASCII `word` (in any case)
    and a CJK character: a cheap no before `glued_text` (10 µs a row), as a word of letters and
    digits touches CJK only inside one field (`glued_text` joins them with spaces). Content
    that is not plain text (stored JSON, bytes) is a maybe."""
    if not isinstance(content, str) or content.startswith(CONTENT_JSON_PREFIX):
        return True
    return any(
        isinstance(v, str) and word in v.lower() and contains_cjk(v) for v in (content, tool_name, tool_calls)
    )


class FallbackMixin(ProbeMixin):
    """Which v23 retries apply to a Latin query, which can have rows, and their answer."""

    def _latin_fallback_routes(self, parsed: ParsedQuery, cjk_ready: bool) -> list[tuple[Route, str]]:
        """(route, quoted match) of v23's retries for a zero-result Latin query."""
        if not parsed.terms:
            return []
        quoted = parsed.retry_match
        routes: list[tuple[Route, str]] = []
        if cjk_ready:
            routes.append((FTS_CJK, quoted))
        if self.layout.has_trigram and parsed.retry_trigram:
            routes.append((TRIGRAM, quoted))
        return routes

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

    # A retry's candidates for one word are read and checked whole up to this many rows.
    GLUED_SCAN_MAX = 256

    def _glued_ids(self, tri: tuple[str, str], parsed: ParsedQuery) -> frozenset[int] | None:
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
            rows = conn.execute(fetch, (f'"{rarest_trigram(word)}"', cap + 1)).fetchall()
        if len(word) <= 3 or len(rows) > cap:
            rows = conn.execute(fetch, (match, cap + 1)).fetchall()
            if len(rows) > cap:
                return None
        terms, low = parsed.terms, word.lower()
        return frozenset(
            int(i) for i, c, t, tc in rows if may_glue(low, c, t, tc) and glued_text(c, t, tc, terms)
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
        parsed: ParsedQuery,
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
        terms = parsed.terms
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

    def _glued_to_cjk(self, message_id: int, terms: Sequence[str]) -> bool:
        row = self._tuples("SELECT content, tool_name, tool_calls FROM messages WHERE id = ?", (message_id,))
        return bool(row) and glued_text(row[0][0], row[0][1], row[0][2], terms)
