"""Text handling shared by writes and reads: surrogate scrubbing, content encoding, context fences.

Kept byte-compatible with hermes-agent 0.19.0: list/dict content is stored as
`"\\x00json:" + json.dumps(value)`, and conversation loads strip the same memory-context fences.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import apsw
import apsw.ext

from ..safe_text import as_text, one_line

CONTENT_JSON_PREFIX = "\x00json:"
#: Timestamps used as dates must lie in [0, TS_MAX] (1970 .. 3000-01-01); anything else is unknown.
TS_MAX = 32503680000
_SURROGATE_RE = re.compile(r"[\ud800-\udfff]")


def scrub_surrogates(value: Any) -> Any:
    """Lone surrogates → U+FFFD (SQLite cannot bind them); non-text passes through."""
    if isinstance(value, str) and _SURROGATE_RE.search(value):
        return _SURROGATE_RE.sub("\ufffd", value)
    return value


def encode_content(content: Any) -> Any:
    if isinstance(content, str):
        return scrub_surrogates(content)
    if content is None or isinstance(content, (bytes, int, float)):
        return content
    try:
        return CONTENT_JSON_PREFIX + json.dumps(content)
    except (TypeError, ValueError):
        return scrub_surrogates(str(content))


def decode_content(content: Any) -> Any:
    if isinstance(content, str) and content.startswith(CONTENT_JSON_PREFIX):
        try:
            return json.loads(content[len(CONTENT_JSON_PREFIX) :])
        except (json.JSONDecodeError, TypeError):
            return content
    return content


#: Part types whose `text` is the part (OpenAI chat, Responses input/output).
TEXT_PART_TYPES = frozenset({"text", "input_text", "output_text"})


def _json_pretty(value: Any) -> str:
    """Indented JSON with UTF-8 kept; a value json cannot write shows as its `str()`."""
    try:
        return json.dumps(value, indent=2, ensure_ascii=False, default=str)
    except (TypeError, ValueError, RecursionError):
        return _unprintable_safe(value)


def _unprintable_safe(value: Any) -> str:
    """`str(value)`, or a marker when its `__str__` raises."""
    try:
        return str(value)
    except Exception:  # a pathological __str__ must not take a view down
        return f"[unprintable {type(value).__name__}]"


def _part_text(part: Any) -> str:
    """One multimodal part: a text part is its text, another part is named `[type]`."""
    if isinstance(part, (str, bytes, bytearray, memoryview)):
        return as_text(part)
    if not isinstance(part, Mapping):
        return _json_pretty(part)
    kind = part.get("type")
    text = part.get("text")
    if kind in TEXT_PART_TYPES or (kind is None and text is not None):
        if text is None or isinstance(text, (str, bytes, bytearray, memoryview)):
            return as_text(text)
        return _json_pretty(text)
    return f"[{one_line(kind, 40) or 'part'}]"


def content_text(content: Any) -> str:
    """THE flattening of message content into text, shared by the transcript, the exports, the
    CLI and search snippets (so one message reads the same everywhere): stored JSON decoded,
    multimodal lists → their text parts one per line with other parts named (`hi\n[image_url]`),
    a dict → its text when it is a text part, else indented JSON, bytes → `as_text`, None → ''.
    NOT sanitized: callers pass the result through `safe_text.inert`/`one_line` at their output."""
    content = decode_content(content)
    if content is None:
        return ""
    if isinstance(content, (str, bytes, bytearray, memoryview)):
        return as_text(content)
    if isinstance(content, list):
        return "\n".join(t for t in map(_part_text, content) if t)
    if isinstance(content, Mapping):
        if content.get("type") in TEXT_PART_TYPES or (content.get("type") is None and "text" in content):
            return _part_text(content)
        return _json_pretty(content)
    return _unprintable_safe(content)


def upstream_preview(content: Any) -> str:
    """hermes-agent 0.19.0's own compact form, kept only where its API returns it (search
    results' `context`, `list_recent_user_messages` previews): text parts joined by
    spaces, `[multimodal content]` when a list has none, non-text → ''. Display uses
    `content_text`."""
    decoded = decode_content(content)
    if isinstance(decoded, list):
        parts = [p.get("text", "") for p in decoded if isinstance(p, dict) and p.get("type") == "text"]
        text = " ".join(t for t in parts if t).strip()
        return text or "[multimodal content]"
    if isinstance(decoded, str):
        return decoded
    return ""


def tool_call_fields(call: Any) -> tuple[Any, Any]:
    """(name, arguments) of one stored tool call, whatever shape its agent wrote: OpenAI
    `{"function": {"name", "arguments"}}`, flat `{"name", "arguments"}`, `{"name", "input"}`.
    None for what is missing; a call that is not a dict has no name and is its own arguments.
    The one reading shared by the transcript, the exports and the CLI."""
    if not isinstance(call, Mapping):
        return None, call
    fn = call.get("function")
    fn = fn if isinstance(fn, Mapping) else {}
    name = fn.get("name") or call.get("name") or call.get("type") or None
    if "arguments" in fn:
        return name, fn["arguments"]
    return name, call.get("arguments", call.get("input"))


def dumps_field(name: str, value: Any) -> str | None:
    """JSON for a structured field (falsy → NULL); a clear error when it cannot be serialised."""
    from .errors import InvalidArgument

    if not value:
        return None
    try:
        return json.dumps(value)
    except (TypeError, ValueError) as exc:
        raise InvalidArgument(f"{name} is not JSON-serialisable: {exc}") from exc


def loads_or(value: Any, fallback: Any) -> Any:
    try:
        return json.loads(value)
    except (json.JSONDecodeError, TypeError):
        return fallback


_FENCE_TAG_RE = re.compile(r"</?\s*memory-context\s*>", re.IGNORECASE)
_INTERNAL_CONTEXT_RE = re.compile(r"<\s*memory-context\s*>[\s\S]*?</\s*memory-context\s*>", re.IGNORECASE)
_INTERNAL_NOTE_RE = re.compile(
    r"\[System note:\s*The following is recalled memory context,\s*NOT new user input\.\s*Treat as "
    r"(?:informational background data|authoritative reference data[^\]]*)\.\]\s*",
    re.IGNORECASE,
)


def sanitize_context(text: str) -> str:
    """Strip injected memory-context blocks, the recalled-memory system note and stray fences."""
    text = _INTERNAL_CONTEXT_RE.sub("", text)
    text = _INTERNAL_NOTE_RE.sub("", text)
    return _FENCE_TAG_RE.sub("", text)


REVIEW_HARNESS_PREFIXES = (
    "Review the conversation above and update the skill library",
    "Review the conversation above and consider saving to memory",
)


def _is_review_harness(msg: dict[str, Any]) -> bool:
    content = msg.get("content")
    return (
        msg.get("role") in {"user", "system"}
        and isinstance(content, str)
        and content.lstrip().startswith(REVIEW_HARNESS_PREFIXES)
    )


def strip_review_harness(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Drop background-review harness prompts and the assistant reply right after each."""
    out: list[dict[str, Any]] = []
    skip_next_assistant = False
    for msg in messages:
        if _is_review_harness(msg):
            skip_next_assistant = True
            continue
        if skip_next_assistant:
            skip_next_assistant = False
            if msg.get("role") == "assistant":
                continue
        out.append(msg)
    return out


def parse_timestamp(value: Any, default: float) -> float:
    """datetime-like or number → epoch float; anything unparsable → `default` (upstream)."""
    if value is None:
        return default
    try:
        if hasattr(value, "timestamp"):
            return float(value.timestamp())
        return float(value)
    except (TypeError, ValueError):
        return default


# ------------------------------------------------------------------ hostile stored values
#
# A row may hold anything: hermes-agent 0.19.0's `append_message` stores bytes as a BLOB, raw SQL
# can store TEXT that is not UTF-8 (APSW raises UnicodeDecodeError on reading it), a number where
# text belongs, text or 1e300 where a timestamp belongs. The read paths below never raise on
# any of it: text-ish values come back as `str`, dates as a number in [0, TS_MAX] or None,
# counters/costs as a number or None.


def ts_sql(expr: str) -> str:
    """SQL: `expr` (a plain column: it is evaluated twice) when it is a usable date, else NULL.

    No typeof() test is needed: SQLite orders every TEXT and BLOB after every number, and a
    numeric-looking text was already converted by the column's REAL affinity, so only numbers
    can pass the BETWEEN (NULL and NaN, stored as NULL, never do).
    """
    return f"(CASE WHEN {expr} BETWEEN 0 AND {TS_MAX} THEN {expr} END)"


def num_sql(expr: str) -> str:
    """SQL: `expr` when it is a number, else 0 (text or bytes in a counter never order first)."""
    return f"(CASE typeof({expr}) WHEN 'integer' THEN {expr} WHEN 'real' THEN {expr} ELSE 0 END)"


def sum_sql(expr: str, integer: bool = True) -> str:
    """SQL: SUM(`expr`) over its numbers that never raises: SUM stops with "integer overflow"
    past 2**63, TOTAL (a float) does not; NULL when no row has a value, like SUM."""
    total = f"TOTAL({num_sql(expr)})"
    return f"(CASE WHEN COUNT({expr}) THEN {f'CAST({total} AS INTEGER)' if integer else total} END)"


def clean_ts(value: Any) -> float | int | None:
    """A stored timestamp usable as a date (finite number in [0, TS_MAX]), else None (unknown)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value <= TS_MAX:
        return value  # NaN fails both comparisons
    return None


def clean_number(value: Any) -> float | int | None:
    """A stored counter or cost as a number; text, bytes and NaN read as None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def clean_row(
    row: dict[str, Any], numbers: Iterable[str] = (), timestamps: Iterable[str] = (), *, decode: bool = True
) -> dict[str, Any]:
    """Bytes → str (every column: the store has no binary columns; skipped with `decode=False`
    when `read_rows` already did it), then the given number and date columns cleaned.
    Returns `row` (changed in place). Plain values take the fast path: this runs per message."""
    if decode:
        for key, value in row.items():
            if type(value) is bytes:
                row[key] = as_text(value)
    for key in numbers:
        value = row.get(key)
        if value is not None and type(value) is not int:
            row[key] = clean_number(value)
    for key in timestamps:
        value = row.get(key)
        if value is not None and not (type(value) in (float, int) and 0 <= value <= TS_MAX):
            row[key] = None
    return row


def _fetch(
    conn: apsw.Connection, sql: str, params: Sequence[Any] | dict[str, Any]
) -> tuple[list[str], list[Any]]:
    cursor = conn.execute(sql, params)
    cols: list[str] = []
    rows = []
    for row in cursor:
        if not cols:
            cols = [d[0] for d in cursor.get_description()]
        rows.append(row)
    return cols, rows


def _fetch_safe(
    conn: apsw.Connection, sql: str, params: Sequence[Any] | dict[str, Any]
) -> tuple[list[str], list[Any]]:
    """The fast path is a plain read. Only when APSW cannot decode a value (TEXT that is not
    UTF-8) is the statement run again wrapped so every TEXT value is fetched as bytes."""
    try:
        return _fetch(conn, sql, params)
    except UnicodeDecodeError:
        names = [d[0] for d in apsw.ext.query_info(conn, sql, params).description or ()]
        cols = []
        for name in names:
            q = '"' + name.replace('"', '""') + '"'
            cols.append(f"CASE typeof({q}) WHEN 'text' THEN CAST({q} AS BLOB) ELSE {q} END AS {q}")
        return _fetch(conn, f"SELECT {', '.join(cols)} FROM ({sql})", params)


def read_rows(
    conn: apsw.Connection, sql: str, params: Sequence[Any] | dict[str, Any] = (), *, decode: bool = True
) -> list[dict[str, Any]]:
    """Rows of a SELECT as dicts, even when a TEXT value in them is not valid UTF-8; bytes
    values (BLOBs, and such TEXT) come back decoded to str by `as_text` (left as bytes with
    `decode=False`, for a caller that decodes some column its own way and then `clean_row`s)."""
    cols, rows = _fetch_safe(conn, sql, params)
    out = []
    for row in rows:
        d = dict(zip(cols, row, strict=True))
        if decode and bytes in map(type, row):  # C-speed scan: this runs per message
            clean_row(d)
        out.append(d)
    return out


def read_tuples(conn: apsw.Connection, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
    """`read_rows` as tuples (bytes decoded to str)."""
    _cols, rows = _fetch_safe(conn, sql, params)
    return [tuple(as_text(v) if type(v) is bytes else v for v in row) for row in rows]


def loads_kept(value: Any) -> Any:
    """JSON text decoded; malformed (or non-text) values are kept as they are, never raised."""
    if not isinstance(value, (str, bytes)):
        return value
    try:
        return json.loads(value)
    except (json.JSONDecodeError, UnicodeDecodeError, TypeError, ValueError, RecursionError):
        return as_text(value)


def tool_calls_list(value: Any) -> list[Any]:
    """Stored `tool_calls` as a list: a JSON list as is, any other JSON value or a malformed
    string as a one-item list (the raw string kept, so a reader still sees what was there)."""
    decoded = loads_kept(value)
    return decoded if isinstance(decoded, list) else [decoded]
