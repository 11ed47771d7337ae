"""Text handling shared by writes and reads: surrogate scrubbing, content encoding, context fences.

Kept byte-compatible with hermes-agent 0.19.0: list/dict content is stored as
`"\\x00json:" + json.dumps(value)`, and conversation loads strip the same memory-context fences.
"""

from __future__ import annotations

import json
import re
from typing import Any

CONTENT_JSON_PREFIX = "\x00json:"
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


def content_text(content: Any) -> str:
    """Decoded content as plain text: multimodal lists → their text parts; non-text → ''."""
    decoded = decode_content(content)
    if isinstance(decoded, list):
        parts = [p.get("text", "") for p in decoded if isinstance(p, dict) and p.get("type") == "text"]
        text = " ".join(t for t in parts if t).strip()
        return text or "[multimodal content]"
    if isinstance(decoded, str):
        return decoded
    return ""


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
