"""Pure-Python twin of the `cjk_unicode61` FTS5 tokenizer (see fts5_cjk.c), via APSW.

Why a twin: the compiled extension may be missing (no compiler), yet a `messages_fts_cjk`
table must never see a tokenizer that emits different tokens — an external-content index
maintained with two different tokenizers is corrupt.  So this module reproduces the C
tokenizer token for token (text, offsets, colocated flags), and runs on every message
insert when the C build is absent, hence the fast paths:

* the whole input is checked once with a bytes regex for a UTF-8 lead byte that can start
  a CJK code point; text without one is returned exactly as unicode61 produced it;
* per token, pure-ASCII tokens (`str.isascii`, a C-speed check) are forwarded untouched;
* CJK tokens are cut with one `re.split`, and bigram offsets of all-BMP runs (3 bytes per
  character) are computed arithmetically.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from operator import add
from typing import Any

import apsw

__all__ = ["CJK_RANGES", "NAME", "CjkTokenizer", "is_cjk", "register", "split_token"]

#: The FTS5 tokenizer name both implementations register.
NAME = "cjk_unicode61"

#: Inclusive code point ranges treated as CJK.  Must match `cjkIsCjk` in fts5_cjk.c.
CJK_RANGES: tuple[tuple[int, int], ...] = (
    (0xAC00, 0xD7A3),  # Hangul syllables
    (0x1100, 0x11FF),  # Hangul Jamo
    (0x3130, 0x318F),  # Hangul compatibility Jamo
    (0xA960, 0xA97F),  # Hangul Jamo extended-A
    (0xD7B0, 0xD7FF),  # Hangul Jamo extended-B
    (0x4E00, 0x9FFF),  # CJK unified ideographs
    (0x3400, 0x4DBF),  # CJK extension A
    (0xF900, 0xFAFF),  # CJK compatibility ideographs
    (0x20000, 0x2FA1F),  # CJK extensions B..F, compatibility supplement
    (0x3040, 0x309F),  # Hiragana
    (0x30A0, 0x30FF),  # Katakana
    (0x31F0, 0x31FF),  # Katakana phonetic extensions
)

_CLASS = "".join(f"{re.escape(chr(lo))}-{re.escape(chr(hi))}" for lo, hi in CJK_RANGES)
# re.split with a capturing group: even items are non-CJK text (maybe empty), odd items CJK runs.
# Compiled on first use: the class spans 64k code points and costs ~25 ms, which every store
# open would pay although the compiled tokenizer is normally the one in use.
_split_runs: Callable[[str], list[str]] = None  # type: ignore[assignment]
_has_cjk: Callable[[str], re.Match[str] | None] = None  # type: ignore[assignment]


def _compile() -> None:
    global _split_runs, _has_cjk
    if _has_cjk is None:
        _split_runs = re.compile(f"([{_CLASS}]+)").split
        _has_cjk = re.compile(f"[{_CLASS}]").search


# UTF-8 lead bytes of every CJK code point: E1 (U+1xxx), E3..ED (U+3xxx..U+Dxxx),
# EF (U+Fxxx), F0 (U+10000..U+3FFFF).  No such byte in the input -> no CJK in any token.
_maybe_cjk_bytes = re.compile(rb"[\xe1\xe3-\xed\xef\xf0]").search

# One emitted token: (start, end, text, *colocated texts) — APSW's tokenizer result shape.
Token = tuple[Any, ...]
#: unicode61 as APSW hands it over. Its stubs type a token as `str | tuple` because a call with
#: ``include_offsets=False`` yields bare strings; called as here (offsets on) each one is a
#: ``(start, end, token, *colocated)`` tuple, which is what `CjkTokenizer` indexes into.
InnerTokenizer = Callable[[bytes, int, "str | None"], Iterable[Any]]


def is_cjk(ch: str) -> bool:
    """True when the single character `ch` is CJK for this tokenizer."""
    _compile()
    return _has_cjk(ch) is not None


def split_token(text: str, start: int, end: int) -> list[tuple[int, int, str]]:
    """Cut one unicode61 token into the tokenizer's pieces with clamped original offsets.

    `start`/`end` are the unicode61 token's byte offsets in the original text; a piece at
    byte position p (of the folded token text) with byte length n gets
    `(min(start + p, end), min(start + p + n, end))`, exactly like the C code.
    """
    _compile()
    out: list[tuple[int, int, str]] = []
    append = out.append
    pos = start
    for k, seg in enumerate(_split_runs(text)):
        if not seg:
            continue
        if not k & 1:  # non-CJK segment: one token
            n = len(seg) if seg.isascii() else len(seg.encode())
            stop = pos + n
            append((pos if pos < end else end, stop if stop < end else end, seg))
            pos = stop
            continue
        nchar = len(seg)
        nbyte = len(seg.encode())
        if nchar == 1:
            stop = pos + nbyte
            append((pos if pos < end else end, stop if stop < end else end, seg))
        elif nbyte == 3 * nchar and pos + nbyte <= end:  # all-BMP run, no clamping needed
            stop = pos + nbyte
            out.extend(
                zip(range(pos, stop - 3, 3), range(pos + 6, stop + 1, 3), map(add, seg, seg[1:]), strict=True)
            )
        else:  # astral characters (4 bytes) and/or offsets needing the clamp
            offs = [pos]
            for ch in seg:
                offs.append(offs[-1] + (4 if ch > "\uffff" else 3))
            for i in range(nchar - 1):
                a, b = offs[i], offs[i + 2]
                append((a if a < end else end, b if b < end else end, seg[i : i + 2]))
        pos += nbyte
    return out


class CjkTokenizer:
    """An APSW FTS5 tokenizer callable: unicode61 (`inner`) followed by the CJK split."""

    __slots__ = ("inner",)

    def __init__(self, inner: InnerTokenizer) -> None:
        self.inner = inner
        _compile()

    def __call__(self, utf8: bytes, flags: int, locale: str | None) -> list[Token]:
        """Tokenize `utf8` for FTS5; the tokenize `flags` go to unicode61 unchanged."""
        toks = self.inner(utf8, flags, locale)
        if not isinstance(toks, list):
            toks = list(toks)
        if _maybe_cjk_bytes(utf8) is None:
            return toks
        # Only non-ASCII (or colocated) tokens can need work; everything between them is
        # copied by slicing, so the per-token Python cost is one C-level comprehension.
        hits = [i for i, t in enumerate(toks) if len(t) != 3 or not t[2].isascii()]
        out: list[Token] = []
        prev = 0
        for i in hits:
            tok = toks[i]
            if len(tok) == 3:
                text = tok[2]
                if _has_cjk(text) is None:
                    continue  # unchanged: goes out with the next slice
                out.extend(toks[prev:i])
                out.extend(split_token(text, tok[0], tok[1]))
            else:
                out.extend(toks[prev:i])
                self._colocated(out, tok)
            prev = i + 1
        if not prev:
            return toks
        out.extend(toks[prev:])
        return out

    @staticmethod
    def _colocated(out: list[Token], tok: Sequence[Any]) -> None:
        """Handle a token that carries colocated alternatives (unicode61 emits none).

        Mirrors the C rule: of the pieces of a token delivered with FTS5_TOKEN_COLOCATED,
        only the first stays colocated (appended to the previous emitted token); the
        others are new positions.
        """
        start, end = tok[0], tok[1]
        for idx, text in enumerate(tok[2:]):
            pieces: list[Token] = (
                list(split_token(text, start, end)) if _has_cjk(text) else [(start, end, text)]
            )
            if idx and out:
                out[-1] = (*out[-1], pieces[0][2])
                pieces = pieces[1:]
            out.extend(pieces)


def register(conn: apsw.Connection, name: str = NAME) -> None:
    """Register the twin on `conn` under `name`; tokenizer arguments go to unicode61."""

    def factory(con: apsw.Connection, args: list[str]) -> CjkTokenizer:
        return CjkTokenizer(con.fts5_tokenizer("unicode61", list(args)))

    conn.register_fts5_tokenizer(name, factory)
