"""Pure formatting helpers: no Textual, no SQL, no clock of their own (``now`` is injected).

Everything that turns agent-written text into something on screen goes through here, so the
rule "agent text is never parsed as markup" lives in one place: these return `rich.text.Text`
built from plain strings and spans. Every helper accepts any stored value (SQLite columns are
dynamically typed: a timestamp may be text, a BLOB, NULL or ``1e300``) and returns a marker
instead of raising; the text they return has been through `hermes_tui.safe_text`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

from rich.text import Text

from hermes_tui.exporting import pretty_json as pretty_json  # the one JSON pretty-printer
from hermes_tui.formatting import INVALID_NUMBER as INVALID_NUMBER
from hermes_tui.formatting import format_cost as usd  # the one cost formatter, under the app's name
from hermes_tui.formatting import format_size as format_size
from hermes_tui.formatting import is_missing as _missing
from hermes_tui.formatting import row_cost, to_number
from hermes_tui.safe_text import as_text, inert
from hermes_tui.safe_text import one_line as one_line
from hermes_tui.state import content_text as flatten_content
from hermes_tui.state import tool_call_fields

Clock = Callable[[], float]

SNIPPET_OPEN = ">>>"
SNIPPET_CLOSE = "<<<"
HIGHLIGHT_STYLE = "bold reverse"

#: Longest text handed to a renderer; beyond this the text is cut (highlighting and Markdown
#: cost grows with length, and a 5 MB tool output must not stall the UI).
MAX_RENDER_CHARS = 12_000
MAX_RENDER_LINES = 400

EDGE_MARKS = {"compression": "c", "branch": "b", "delegate": "d", "reset": "r", "other": "o"}
EDGE_LABELS = {
    "compression": "compression continuation",
    "branch": "branch",
    "delegate": "delegate",
    # Today's Hermes (schema v24+): the fresh session a /reset (or an idle/daily reset) started.
    "reset": "reset (started afresh)",
    "other": "other child",
}

#: Marks before a list row's title, in this order, for the flags today's Hermes keeps on a
#: session (`list_rows` gives 0/1; 0 where the file has no column): the unread dot of Hermes'
#: desktop, the pin, and the archived and hidden rows that only the archived and show-hidden
#: views list. Glyphs, not letters: a letter before a title reads as part of it.
FLAG_MARKS: tuple[tuple[str, str, str], ...] = (
    ("unread", "●", "unread"),
    ("pinned", "*", "pinned"),
    ("archived", "▼", "archived"),
    ("hidden", "◌", "hidden"),
)


def flag_marks(row: dict[str, Any]) -> str:
    """The marks of `FLAG_MARKS` a row carries (``"●*"``), "" for none."""
    return "".join(mark for key, mark, _word in FLAG_MARKS if row.get(key))


def flag_words(row: dict[str, Any]) -> list[str]:
    """The same flags in words (``["unread", "pinned"]``), for the session's detail line."""
    return [word for key, _mark, word in FLAG_MARKS if row.get(key)]


def system_clock() -> float:
    """The default clock; tests and snapshots inject a fixed one instead."""
    return time.time()


#: Shown where a stored timestamp is not a usable number (text, a BLOB, NaN, out of range).
INVALID_DATE = "invalid date"
INVALID_AGE = "invalid"
# time.gmtime/strftime handle years 1..9999 on every platform; outside that they raise or print
# five-digit years, so a timestamp outside this range is reported as invalid.
_MIN_TS = -62_135_596_800.0  # 0001-01-01T00:00:00Z
_MAX_TS = 253_402_300_799.0  # 9999-12-31T23:59:59Z


def _epoch(ts: Any) -> float | None:
    """A Unix timestamp that `time.gmtime` can show, else None."""
    number = to_number(ts)
    if number is None or not _MIN_TS <= number <= _MAX_TS:
        return None
    return number


def relative_time(ts: Any, now: float) -> str:
    """Short age like ``42s``, ``5m``, ``3h``, ``6d``, ``9w``, or a date past a year.

    ``—`` when there is no timestamp, ``invalid`` when the stored value is not a usable one.
    """
    if _missing(ts):
        return "—"
    epoch = _epoch(ts)
    if epoch is None:
        return INVALID_AGE
    delta = now - epoch
    if delta < 0:
        return "future"
    if delta < 60:
        return f"{int(delta)}s ago"
    if delta < 3600:
        return f"{int(delta // 60)}m ago"
    if delta < 86400:
        return f"{int(delta // 3600)}h ago"
    if delta < 86400 * 14:
        return f"{int(delta // 86400)}d ago"
    if delta < 86400 * 365:
        return f"{int(delta // (86400 * 7))}w ago"
    return _strftime("%Y-%m-%d", epoch)


def _strftime(fmt: str, epoch: float) -> str:
    try:
        return time.strftime(fmt, time.gmtime(epoch))
    except (OverflowError, ValueError, OSError):
        return INVALID_DATE


def clock_time(ts: Any) -> str:
    """UTC ``YYYY-MM-DD HH:MM:SS`` (UTC so snapshots do not depend on the machine's zone);
    blank without a timestamp, ``invalid date`` for a stored value that is not one."""
    if _missing(ts):
        return ""
    epoch = _epoch(ts)
    return INVALID_DATE if epoch is None else _strftime("%Y-%m-%d %H:%M:%S", epoch)


def human_count(n: Any) -> str:
    """``950``, ``12.3k``, ``4.5M``: token and message counts in a narrow column (``?`` when the
    stored value is not a number)."""
    if _missing(n) or n == 0:
        return "0"
    number = to_number(n)
    if number is None:
        return INVALID_NUMBER
    if abs(number) >= 1e15:
        return f"{number:.1e}"
    for unit, size in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(number) >= size:
            value = number / size
            return f"{value:.1f}{unit}" if abs(value) < 100 else f"{value:.0f}{unit}"
    return str(int(number))


def plain_count(n: Any) -> str:
    """``1234``: an integer count as it is (no unit, no separator); anything else through the
    tolerant `human_count` (``?`` when it is not a number)."""
    if isinstance(n, int) and not isinstance(n, bool):
        return str(n)
    return human_count(n)


def format_cost(row: Any) -> str:
    """The session list's cost cell: the one cost formatter over the row's shown cost (actual
    when reported, else the estimate), blank when zero or unknown."""
    if not isinstance(row, dict):
        return ""
    return usd(row_cost(row), blank_zero=True)


def session_label(row: dict[str, Any]) -> str:
    """Title, else the first-prompt preview, else the id: what a person recognises a session by."""
    return one_line(row.get("title")) or one_line(row.get("preview")) or one_line(row.get("id", ""))


def snippet_text(snippet: str | None, style: str = HIGHLIGHT_STYLE) -> Text:
    """Turn a store snippet with ``>>>``/``<<<`` markers into Text with highlight spans.

    The markers are removed; an unbalanced marker highlights to the end. Newlines collapse so a
    hit stays on its line. The snippet is never parsed as markup.
    """
    out = Text(no_wrap=True, overflow="ellipsis")
    if not snippet:
        return out
    flat = one_line(snippet)
    pos = 0
    while pos < len(flat):
        start = flat.find(SNIPPET_OPEN, pos)
        if start < 0:
            out.append(flat[pos:].replace(SNIPPET_CLOSE, ""))
            break
        out.append(flat[pos:start].replace(SNIPPET_CLOSE, ""))
        end = flat.find(SNIPPET_CLOSE, start + len(SNIPPET_OPEN))
        if end < 0:
            out.append(flat[start + len(SNIPPET_OPEN) :], style=style)
            break
        out.append(flat[start + len(SNIPPET_OPEN) : end], style=style)
        pos = end + len(SNIPPET_CLOSE)
    return out


def snippet_terms(snippet: str | None) -> list[str]:
    """The highlighted words of a snippet, used to highlight the hit inside the transcript."""
    terms: list[str] = []
    if not snippet:
        return terms
    pos = 0
    while True:
        start = snippet.find(SNIPPET_OPEN, pos)
        if start < 0:
            break
        end = snippet.find(SNIPPET_CLOSE, start)
        if end < 0:
            break
        term = snippet[start + len(SNIPPET_OPEN) : end].strip()
        if term and term.lower() not in (t.lower() for t in terms):
            terms.append(term)
        pos = end + len(SNIPPET_CLOSE)
    return terms


def query_terms(query: str) -> list[str]:
    """Words of a typed query (quotes and FTS operators removed), for client-side highlight.

    The LIKE and CJK routes return snippets without markers, so the app highlights these.
    """
    words = []
    for raw in query.replace('"', " ").split():
        word = raw.strip("*()^:+-")
        if word and word.upper() not in {"AND", "OR", "NOT", "NEAR"}:
            words.append(word)
    return words


def highlight_terms(text: Text, terms: Iterable[str], style: str = HIGHLIGHT_STYLE) -> int:
    """Highlight every case-insensitive occurrence of each term in place; returns the count."""
    plain = text.plain.lower()
    count = 0
    for term in terms:
        needle = term.lower()
        if not needle:
            continue
        start = plain.find(needle)
        while start >= 0:
            text.stylize(style, start, start + len(needle))
            count += 1
            start = plain.find(needle, start + len(needle))
    return count


def truncate_text(
    text: Any, max_chars: int = MAX_RENDER_CHARS, max_lines: int = MAX_RENDER_LINES
) -> tuple[str, int]:
    """Cut text before it reaches a renderer; returns (text, characters dropped)."""
    text = as_text(text)
    dropped = 0
    if len(text) > max_chars:
        dropped = len(text) - max_chars
        text = text[:max_chars]
    cut = _nth_newline(text, max_lines)
    if cut >= 0:
        dropped += len(text) - cut
        text = text[:cut]
    return text, dropped


def _nth_newline(text: str, n: int) -> int:
    """Index of the `n`-th newline (1-based), or -1: where a text of more than `n` lines is cut
    (without splitting the whole text into a list of lines)."""
    pos = -1
    for _ in range(max(1, n)):
        pos = text.find("\n", pos + 1)
        if pos < 0:
            return -1
    return pos


def content_text(content: Any) -> str:
    """Message content as inert display text: the store's one flattening (`hermes_tui.state.
    content_text`, shared with exports, the CLI and search snippets), then the sanitizer."""
    return inert(flatten_content(content))


def tool_call_parts(call: Any) -> tuple[str, str]:
    """(one-line name, inert pretty arguments) of one OpenAI-style tool call; tolerant of odd
    shapes (a non-dict call shows as "tool call" with its value as the arguments)."""
    if not isinstance(call, dict):
        return "tool call", inert(pretty_json(call))
    name, args = tool_call_fields(call)
    name = name or "tool call"
    if not isinstance(name, (str, bytes)):
        name = pretty_json(name)
    shown = one_line(name, 200) or "tool call"
    return shown, inert(pretty_json(args)) if args is not None and args != "" else ""
