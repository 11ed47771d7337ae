"""Exports of sessions as JSON, JSONL and Markdown — shared by `hermes-tui sessions export`
and the browser's export dialog. Knows nothing of Textual (nor of SQL: it formats the dicts
`SessionDB.export_session` / `export_session_lineage` return, message content through the store's
one flattening, `hermes_tui.state.content_text`, so an export reads like the transcript).

Exports are read with `cat` and `less`, so they are inert like every other output: Markdown
text goes through `hermes_tui.safe_text`, and JSON escapes the C1 and bidi controls that
`json.dumps(ensure_ascii=False)` would write raw (the values are unchanged once parsed). Files
are written `0600` and folders created `0700`: a transcript is as private as the store.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hermes_tui.formatting import row_cost
from hermes_tui.safe_text import BIDI_CONTROLS, as_text, inert, one_line
from hermes_tui.state import content_text, tool_call_fields

TOOL_RESULT_LIMIT = 20_000  # characters of a tool result shown in Markdown before truncating

__all__ = [
    "TOOL_RESULT_LIMIT",
    "content_text",
    "MAX_JSON_DEPTH",
    "iso",
    "json_text",
    "load_json",
    "make_private_dirs",
    "markdown_filename",
    "markdown_filenames",
    "pretty_json",
    "sha256_text",
    "to_json",
    "to_jsonl",
    "to_markdown",
    "write_export",
]


# ---------------------------------------------------------------- helpers
def iso(ts: Any) -> str | None:
    """A unix timestamp as ISO 8601 in UTC (`2024-01-02T03:04:05Z`); None stays None."""
    if ts is None or ts == "":
        return None
    try:
        return datetime.fromtimestamp(float(ts), UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    except (TypeError, ValueError, OverflowError, OSError):
        return str(ts)


def _json_default(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return as_text(value)
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    return str(value)


# What json.dumps(ensure_ascii=False) leaves raw but a terminal may obey (DEL and C1 — U+009B is
# CSI to many terminals — bidi controls, the JS line separators) or cannot encode (lone
# surrogates). They can only occur inside JSON strings, so a \uXXXX escape keeps the document
# valid and the value identical.
_JSON_UNSAFE_RE = re.compile("[\x7f-\x9f\u2028\u2029\ud800-\udfff" + "".join(sorted(BIDI_CONTROLS)) + "]")


def _json_escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group(0)):04x}"


def json_text(obj: Any, indent: int | None = None) -> str:
    """`obj` as JSON that is safe to print: UTF-8 text kept readable (CJK stays CJK), every
    control and bidi character escaped. Bytes become text (`as_text`), unknown types `str()`.
    This is data (exports, `--json`): never cut; text shown to people goes through `pretty_json`."""
    text = json.dumps(obj, ensure_ascii=False, indent=indent, default=_json_default)
    return _JSON_UNSAFE_RE.sub(_json_escape, text)


_dumps = json_text

#: Nesting that is pretty-printed for reading (the transcript, Markdown exports, the pager);
#: deeper JSON is shown as stored. Parsing and indenting recurse once per level, and a hostile
#: 100,000-level value would overflow Python's stack (RecursionError) wherever it is shown.
MAX_JSON_DEPTH = 100
#: JSON text longer than this is shown as stored: parsing and re-indenting a 5 MB tool output only
#: to cut it for display cost more than everything else in a transcript.
MAX_PRETTY_JSON_CHARS = 200_000


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether lists and objects nest more than `limit` levels in `value` (no recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Iterable[Any] = item.values()
        elif isinstance(item, (list, tuple)):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def load_json(text: str) -> Any:
    """The value the JSON `text` holds, when it is at most `MAX_PRETTY_JSON_CHARS` long and nested
    at most `MAX_JSON_DEPTH` levels; `ValueError` otherwise (never `RecursionError`)."""
    if len(text) > MAX_PRETTY_JSON_CHARS:
        raise ValueError("too long to pretty-print")
    try:
        value = json.loads(text)
    except RecursionError:
        raise ValueError("nested too deep to pretty-print") from None
    if _deeper_than(value, MAX_JSON_DEPTH):
        raise ValueError("nested too deep to pretty-print")
    return value


def _as_stored(value: Any, safe: bool) -> str:
    """A value that is not pretty-printed: its text (a string as it is), inert when `safe`."""
    if not isinstance(value, str):
        try:
            value = json.dumps(value, ensure_ascii=False, default=_json_default)
        except (TypeError, ValueError, RecursionError):
            try:
                value = str(value)
            except Exception:  # noqa: BLE001 - a pathological __str__ must not take a view down
                value = f"[unprintable {type(value).__name__}]"
    return inert(value) if safe else value


def pretty_json(value: Any, *, safe: bool = False) -> str:
    """THE pretty-printer for JSON shown to people: `value` (or the JSON document a string holds)
    indented by two. A string that is not JSON, longer than `MAX_PRETTY_JSON_CHARS` or nested
    deeper than `MAX_JSON_DEPTH` comes back as it is, and so (as one line) does a value nested
    deeper: never an exception.

    Not sanitized unless `safe` (callers that draw it pass it through `inert`, which shows a C1
    control as a picture); `safe` escapes controls inside the JSON's strings as `json_text` does
    (the JSON stays valid) and makes text returned as it is inert."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        value = as_text(value)
    if isinstance(value, str):
        try:
            value = load_json(value)
        except ValueError:
            return inert(value) if safe else value
    elif _deeper_than(value, MAX_JSON_DEPTH):
        return _as_stored(value, safe)
    try:
        text = json.dumps(value, indent=2, ensure_ascii=False, default=_json_default)
    except (TypeError, ValueError, RecursionError):
        return _as_stored(value, safe)
    return _JSON_UNSAFE_RE.sub(_json_escape, text) if safe else text


def _fence(text: str, lang: str = "") -> str:
    """A fenced block whose fence is longer than any backtick run inside `text`."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    body = text if text.endswith("\n") else text + "\n"
    return f"{fence}{lang}\n{body}{fence}"


def _yaml_scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value) if isinstance(value, float) else str(value)
    # A JSON string is a valid YAML scalar, and json_text leaves no control character raw.
    return json_text(as_text(value) if isinstance(value, (bytes, bytearray, memoryview)) else str(value))


def _pretty_arguments(args: Any) -> Any:
    """JSON text as its value for pretty-printing; text that is not JSON (or too deep) as it is."""
    if isinstance(args, str):
        try:
            return load_json(args)
        except ValueError:
            return args
    return args


def shown_tool_calls(calls: Any) -> list[Any]:
    """A message's `tool_calls` as the Markdown and HTML exports show them: a list (one call, or
    text that is not JSON, as a list of one), each call's `arguments` (OpenAI's under `function`,
    or a flat call's own) as their value when they are JSON text. One rule for both exports."""
    if isinstance(calls, str):
        calls = _pretty_arguments(calls)
    if not calls:
        return []
    return [_shown_call(call) for call in (calls if isinstance(calls, list) else [calls])]


def _shown_call(call: Any) -> Any:
    if not isinstance(call, Mapping):
        return call
    shown = dict(call)
    fn = call.get("function")
    if isinstance(fn, Mapping):
        shown["function"] = {**fn, "arguments": _pretty_arguments(fn.get("arguments"))}
    elif "arguments" in shown:
        shown["arguments"] = _pretty_arguments(shown["arguments"])
    return shown


def _tool_call_block(call: Any) -> str:
    """One call of `shown_tool_calls`: its name, then the call as JSON."""
    if isinstance(call, Mapping):
        name = _code_span(one_line(tool_call_fields(call)[0] or "tool", 200))
        return f"**Tool call** {name}\n\n" + _fence(pretty_json(call, safe=True), "json")
    return "**Tool call**\n\n" + _fence(pretty_json(call, safe=True), "json")


def _code_span(text: str) -> str:
    """`text` as an inline code span whose backtick run is longer than any inside it."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    ticks = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def _truncate(text: str, limit: int = TOOL_RESULT_LIMIT) -> tuple[str, bool]:
    if len(text) <= limit:
        return text, False
    cut = text[:limit]
    # Never end inside a surrogate pair or a CRLF (the code point boundary is all Python needs).
    if cut and "\ud800" <= cut[-1] <= "\udbff":
        cut = cut[:-1]
    return cut, True


def _details_safe(text: str) -> str:
    return text.replace("</details>", "&lt;/details&gt;")


# ---------------------------------------------------------------- formats
def to_json(sessions: Iterable[Mapping[str, Any]]) -> str:
    """A JSON array of sessions in `export_session` format (pretty-printed, UTF-8 kept)."""
    return _dumps([dict(s) for s in sessions], indent=2) + "\n"


def to_jsonl(sessions: Iterable[Mapping[str, Any]]) -> Iterator[str]:
    """One line per session (each ends in a newline), streamed: nothing is held in memory."""
    for s in sessions:
        yield _dumps(dict(s)) + "\n"


def to_markdown(session: Mapping[str, Any], *, tool_result_limit: int = TOOL_RESULT_LIMIT) -> str:
    """A session (or a lineage export) as Markdown with YAML-like front matter."""
    sid = session.get("id")
    lineage = session.get("lineage_session_ids") or ([sid] if sid else [])
    cost = row_cost(session)
    front = [
        ("id", sid),
        ("title", session.get("title")),
        ("source", session.get("source")),
        ("model", session.get("model")),
        ("input_tokens", session.get("input_tokens")),
        ("output_tokens", session.get("output_tokens")),
        ("cost_usd", cost),
        ("started", iso(session.get("started_at"))),
        ("ended", iso(session.get("ended_at"))),
        ("end_reason", session.get("end_reason")),
        ("parent", session.get("parent_session_id")),
    ]
    out = ["---"]
    out += [f"{k}: {_yaml_scalar(v)}" for k, v in front]
    out.append("lineage:" + ("" if lineage else " []"))
    out += [f"  - {_yaml_scalar(x)}" for x in lineage]
    out.append("---")
    out.append("")
    heading = one_line(session.get("title")) or f"Session {one_line(sid)}"
    out.append(f"# {heading}")
    out.append("")
    prompt = content_text(session.get("system_prompt"))
    if prompt:  # the text itself (`get_session` resolves a `system_prompts` hash)
        out += [
            "<details>",
            "<summary>System prompt</summary>",
            "",
            _fence(inert(prompt)),
            "",
            "</details>",
            "",
        ]
    every = session.get("messages") or []
    # Rows Hermes never shows a person (model-facing scaffolding) stay out of what one reads.
    messages = [m for m in every if not _is_hidden(m)]
    hidden = len(every) - len(messages)
    if not messages:
        out.append("_No messages._")
        out.append("")
    current_segment = None
    for n, msg in enumerate(messages, 1):
        seg = msg.get("session_id")
        if len(lineage) > 1 and seg != current_segment:
            current_segment = seg
            out.append(f"<!-- segment {one_line(seg).replace('--', '- -')} -->")
            out.append("")
        out.append(_message_md(n, msg, tool_result_limit))
    if hidden:
        out.append(
            f"_{hidden:,} hidden row{'s' if hidden != 1 else ''} (model-facing: Hermes never shows them) "
            "left out; the JSON export keeps every row._"
        )
        out.append("")
    return "\n".join(out).rstrip("\n") + "\n"


def _is_hidden(msg: Mapping[str, Any]) -> bool:
    return msg.get("display_kind") == "hidden"


def _message_md(n: int, msg: Mapping[str, Any], limit: int) -> str:
    role = one_line(msg.get("role"), 100) or "unknown"
    when = one_line(iso(msg.get("timestamp"))) or "?"
    title = f"## {n}. {role}"
    if msg.get("tool_name"):
        title += f" · {_code_span(one_line(msg['tool_name'], 200))}"
    title += f" — {when}"
    if msg.get("active") == 0:
        title += " _(compacted)_" if msg.get("compacted") == 1 else " _(inactive: rewound or archived)_"
    parts = [title, ""]
    reasoning = msg.get("reasoning") or msg.get("reasoning_content")
    if reasoning:
        parts += [
            "<details>",
            "<summary>Reasoning</summary>",
            "",
            _details_safe(inert(reasoning)).strip(),
            "",
            "</details>",
            "",
        ]
    text = content_text(msg.get("content"))
    if role == "tool":
        shown, cut = _truncate(text, limit)
        parts.append(_fence(inert(shown)))
        if cut:
            parts.append("")
            parts.append(f"_[tool result truncated: showing {len(shown):,} of {len(text):,} characters]_")
        parts.append("")
    elif text:
        parts += [inert(text).rstrip("\n"), ""]
    for call in shown_tool_calls(msg.get("tool_calls")):
        parts += [_tool_call_block(call), ""]
    return "\n".join(parts)


_UNSAFE_NAME_RE = re.compile(r"[^A-Za-z0-9._-]+")
#: Characters of a file name taken from an id (or a profile): the name stays far below 255 bytes.
NAME_PART_MAX = 100


def _name_part(text: str) -> str:
    """`text` as a piece of a file name: safe characters only, never a leading `.` (hidden) or
    `-` (read as an option by the tools the file is handed to)."""
    return _UNSAFE_NAME_RE.sub("_", text).strip("._-")[:NAME_PART_MAX] or "session"


def markdown_filename(session: Mapping[str, Any]) -> str:
    """The file name of one session's Markdown (what `markdown_filenames` gives it alone)."""
    return markdown_filenames([session])[0]


def markdown_filenames(sessions: Sequence[Mapping[str, Any]], suffix: str = ".md") -> list[str]:
    """One file name per session of a folder export (`suffix`: `.md`, `.html`), unique and stable.

    `<id>.md` when the id is a safe file name as it is; otherwise the id made safe plus a short
    hash of the exact id (`a/b` → `a_b-<hash>.md`, so it never takes `a_b.md` from the session
    `a_b`). Sessions that carry a `profile` are named `<profile>-<id>.md` by the same rule (ids
    repeat across stores). Names that would still meet (compared case-insensitively, as macOS
    and Windows file systems do) all take the hash, then a counter in list order. Names depend on
    the sessions alone: the same export gets the same names every run.
    """
    plans: list[tuple[str, str, str]] = []  # (stem, preferred stem, hash)
    for session in sessions:
        parts = [str(session["profile"])] if "profile" in session else []
        parts.append(str(session.get("id") or ""))
        safe = [_name_part(p) for p in parts]
        stem = "-".join(safe)
        digest = hashlib.sha256(json.dumps(parts).encode("utf-8")).hexdigest()[:10]
        plans.append((stem, stem if safe == parts else f"{stem}-{digest}", digest))
    wanted = Counter(preferred.casefold() for _s, preferred, _d in plans)
    names: list[str] = []
    taken: set[str] = set()
    for stem, preferred, digest in plans:
        name = preferred if wanted[preferred.casefold()] == 1 else f"{stem}-{digest}"
        candidate, n = name, 2
        while candidate.casefold() in taken:
            candidate, n = f"{name}-{n}", n + 1
        taken.add(candidate.casefold())
        names.append(f"{candidate}{suffix}")
    return names


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# ---------------------------------------------------------------- writing
def make_private_dirs(directory: str | os.PathLike[str]) -> Path:
    """Create `directory` and any missing parents with mode 0700 (existing ones are left as
    they are); returns it. `Path.mkdir(parents=True, mode=…)` gives the parents the umask's mode."""
    target = Path(directory).expanduser()
    missing: list[Path] = []
    p = target
    while not p.exists() and p != p.parent:
        missing.append(p)
        p = p.parent
    for d in reversed(missing):
        try:
            d.mkdir(mode=0o700)
        except FileExistsError:
            if not d.is_dir():
                raise
            continue
        os.chmod(d, 0o700)  # the umask may have taken bits mkdir was given; never adds any
    if not target.is_dir():
        raise NotADirectoryError(f"{target} exists and is not a directory")
    return target


def write_export(path: str | os.PathLike[str], content: str | Iterable[str], force: bool = False) -> Path:
    """Write `content` (a string or an iterable of chunks) to `path`, UTF-8, mode 0600.

    Refuses to replace an existing file unless `force` (raises `FileExistsError`). The file is
    written next to its final name and moved into place, so a failed export leaves no half file.
    A missing parent folder is created 0700.
    """
    target = Path(path).expanduser()
    if target.exists() and target.is_dir():
        raise IsADirectoryError(f"{target} is a directory")
    if target.exists() and not force:
        raise FileExistsError(f"refusing to overwrite existing file {target} (use --force to replace it)")
    make_private_dirs(target.parent)
    tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with open(fd, "w", encoding="utf-8", newline="") as fh:
            if isinstance(content, str):
                fh.write(content)
            else:
                for chunk in content:
                    fh.write(chunk)
        os.chmod(tmp, 0o600)  # O_CREAT's mode is masked by the umask; 0600 is what we promise
        if not force and target.exists():  # appeared while we wrote
            raise FileExistsError(f"refusing to overwrite existing file {target} (use --force to replace it)")
        os.replace(tmp, target)
    finally:
        if tmp.exists():
            tmp.unlink(missing_ok=True)
    return target
