"""Pure formatting helpers: no Textual, no SQL, no clock of their own (``now`` is injected).

Everything that turns agent-written text into something on screen goes through here, so the
rule "agent text is never parsed as markup" lives in one place: these return `rich.text.Text`
built from plain strings and spans.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from typing import Any

from rich.text import Text

Clock = Callable[[], float]

SNIPPET_OPEN = ">>>"
SNIPPET_CLOSE = "<<<"
HIGHLIGHT_STYLE = "bold reverse"

#: Longest text handed to a renderer; beyond this the text is cut (highlighting and Markdown
#: cost grows with length, and a 5 MB tool output must not stall the UI).
MAX_RENDER_CHARS = 12_000
MAX_RENDER_LINES = 400

EDGE_MARKS = {"compression": "c", "branch": "b", "delegate": "d", "other": "o"}
EDGE_LABELS = {
    "compression": "compression continuation",
    "branch": "branch",
    "delegate": "delegate",
    "other": "other child",
}


def system_clock() -> float:
    """The default clock; tests and snapshots inject a fixed one instead."""
    return time.time()


def relative_time(ts: float | None, now: float) -> str:
    """Short age like ``42s``, ``5m``, ``3h``, ``6d``, ``9w``, or a date past a year."""
    if ts is None:
        return "—"
    delta = now - float(ts)
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
    return time.strftime("%Y-%m-%d", time.gmtime(float(ts)))


def clock_time(ts: float | None) -> str:
    """UTC ``YYYY-MM-DD HH:MM:SS`` (UTC so snapshots do not depend on the machine's zone)."""
    if ts is None:
        return ""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(float(ts)))


def human_count(n: int | float | None) -> str:
    """``950``, ``12.3k``, ``4.5M``: token and message counts in a narrow column."""
    if not n:
        return "0"
    n = float(n)
    for unit, size in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(n) >= size:
            value = n / size
            return f"{value:.1f}{unit}" if value < 100 else f"{value:.0f}{unit}"
    return str(int(n))


def format_cost(row: dict[str, Any]) -> str:
    """Actual cost when the provider reported one, else the estimate; blank when unknown."""
    cost = row.get("actual_cost_usd")
    if cost is None:
        cost = row.get("estimated_cost_usd")
    if cost is None or cost == 0:
        return ""
    if cost < 0.01:
        return "<$0.01"
    return f"${cost:,.2f}"


def one_line(text: str | None, width: int | None = None) -> str:
    """Collapse whitespace (newlines, tabs, control chars) so a value fits one list row."""
    if not text:
        return ""
    cleaned = " ".join("".join(ch if ch.isprintable() else " " for ch in str(text)).split())
    if width is not None and len(cleaned) > width:
        return cleaned[: max(0, width - 1)] + "…"
    return cleaned


def session_label(row: dict[str, Any]) -> str:
    """Title, else the first-prompt preview, else the id: what a person recognises a session by."""
    return one_line(row.get("title")) or one_line(row.get("preview")) or str(row.get("id", ""))


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
    text: str, max_chars: int = MAX_RENDER_CHARS, max_lines: int = MAX_RENDER_LINES
) -> tuple[str, int]:
    """Cut text before it reaches a renderer; returns (text, characters dropped)."""
    dropped = 0
    if len(text) > max_chars:
        dropped = len(text) - max_chars
        text = text[:max_chars]
    lines = text.split("\n")
    if len(lines) > max_lines:
        kept = "\n".join(lines[:max_lines])
        dropped += len(text) - len(kept)
        text = kept
    return text, dropped


def pretty_json(value: Any) -> str:
    """Indent JSON (or a JSON string); anything unparsable is returned as its string form."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (ValueError, TypeError):
            return value
    try:
        return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False, default=str)
    except (TypeError, ValueError):
        return str(value)


def content_text(content: Any) -> str:
    """Message content as display text: strings as-is, multimodal lists as their text parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict):
                if part.get("type") == "text" or "text" in part:
                    parts.append(str(part.get("text", "")))
                else:
                    parts.append(f"[{part.get('type', 'part')}]")
            else:
                parts.append(str(part))
        return "\n".join(parts)
    if isinstance(content, dict):
        return pretty_json(content)
    return str(content)


def tool_call_parts(call: Any) -> tuple[str, str]:
    """(name, pretty arguments) of one OpenAI-style tool call; tolerant of odd shapes."""
    if not isinstance(call, dict):
        return "tool call", pretty_json(call)
    fn = call.get("function") if isinstance(call.get("function"), dict) else {}
    name = fn.get("name") or call.get("name") or call.get("type") or "tool call"
    args = fn.get("arguments", call.get("arguments", call.get("input", "")))
    return str(name), pretty_json(args) if args not in (None, "") else ""
