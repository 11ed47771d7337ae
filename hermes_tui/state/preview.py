"""A session's preview (the first prompt the list shows for an untitled session), by each
writer's rule.

0.19.0 (schema v22, and our v23): the first user message, cut to 63 characters. Today's Hermes
(schema v24+, with `display_kind`; the v31 writer's `_PREVIEW_ELIGIBLE_SQL` and
`_PREVIEW_RAW_SELECT` in `hermes_state_common.py`): the first *eligible* user message — never a
`display_kind = 'hidden'` row, nor a compaction summary the compressor wrote as a user message —
and of a summary that carries the user's own message after it (a "force user" carrier) or before
it (a merged carrier), that message. Its skill-scaffold excerpt (a `/skill` turn shown as typed)
is not followed: such a turn previews as its first characters, as on older files.

The SQL is the writer's, built from the same markers, so a preview is the same text.
"""

from __future__ import annotations

#: The compressor's summary markers (`agent.context_compressor`).
SUMMARY_LONG_FORM = (
    "[CONTEXT COMPACTION — REFERENCE ONLY] Earlier turns were compacted into the summary below. This "
    "is a handoff from a previous context window — treat it as background reference, NOT as active "
    "instructions. "
)
LEGACY_SUMMARY_PREFIX = "[CONTEXT SUMMARY]:"
MERGED_SUMMARY_DELIMITER = "[END OF PRIOR CONTEXT — COMPACTION SUMMARY BELOW]"
SUMMARY_END_MARKER = "--- END OF CONTEXT SUMMARY — respond to the message below, not the summary above ---"
MERGED_PRIOR_CONTEXT_HEADER = "[PRIOR CONTEXT — for reference only; not a new message]"
#: First characters of a preview as 0.19.0 cuts it (60 shown, and "..." past them).
HEAD_CHARS = 63

_WS = "CHAR(9) || CHAR(10) || CHAR(13) || CHAR(32)"


def _lit(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _ltrim(expr: str) -> str:
    return f"LTRIM({expr}, {_WS})"


def _trim(expr: str) -> str:
    return f"TRIM({expr}, {_WS})"


def _starts_with(expr: str, prefixes: tuple[str, ...]) -> str:
    trimmed = _ltrim(expr)
    return "(" + " OR ".join(f"SUBSTR({trimmed}, 1, {len(p)}) = {_lit(p)}" for p in prefixes) + ")"


def _after(marker: str) -> str:
    return f"SUBSTR(m.content, INSTR(m.content, {_lit(marker)}) + {len(marker)})"


_PREFIXES = (SUMMARY_LONG_FORM, LEGACY_SUMMARY_PREFIX)
_STANDALONE = _starts_with("m.content", _PREFIXES)
_MERGED = (
    f"(INSTR(m.content, {_lit(MERGED_SUMMARY_DELIMITER)}) > 0"
    f" AND {_starts_with(_after(MERGED_SUMMARY_DELIMITER), _PREFIXES)})"
)
_PRIOR = _trim(f"SUBSTR(m.content, 1, INSTR(m.content, {_lit(MERGED_SUMMARY_DELIMITER)}) - 1)")
_PRIOR_LTRIMMED = _ltrim(_PRIOR)
_PRIOR_UNWRAPPED = (
    f"CASE WHEN SUBSTR({_PRIOR_LTRIMMED}, 1, {len(MERGED_PRIOR_CONTEXT_HEADER)}) = "
    f"{_lit(MERGED_PRIOR_CONTEXT_HEADER)}"
    f" THEN {_ltrim(f'SUBSTR({_PRIOR_LTRIMMED}, {len(MERGED_PRIOR_CONTEXT_HEADER) + 1})')}"
    f" ELSE {_PRIOR} END"
)
_FORCE_USER_REMAINDER = _after(SUMMARY_END_MARKER)

#: `_PREVIEW_ELIGIBLE_SQL`: not hidden; a pure summary never, a carrier only with the user's text.
ELIGIBLE_SQL = (
    "(COALESCE(m.display_kind, '') <> 'hidden'"
    f" AND ((NOT {_STANDALONE} AND NOT {_MERGED})"
    f" OR ({_STANDALONE} AND INSTR(m.content, {_lit(SUMMARY_END_MARKER)}) > 0"
    f" AND LENGTH({_trim(_FORCE_USER_REMAINDER)}) > 0)"
    f" OR ({_MERGED} AND LENGTH({_trim(_PRIOR_UNWRAPPED)}) > 0)))"
)
#: `_PREVIEW_RAW_SELECT` without its skill-scaffold branches (module docstring).
RAW_SELECT_SQL = (
    f"CASE WHEN {_STANDALONE} THEN {_FORCE_USER_REMAINDER}"
    f" WHEN {_MERGED} THEN {_PRIOR_UNWRAPPED}"
    f" ELSE SUBSTR(m.content, 1, {HEAD_CHARS}) END"
)


def preview_sql(todays: bool, session: str = "s.id") -> str:
    """SQL: the raw preview of session `session` ('' when none), by 0.19.0's rule or (`todays`)
    today's Hermes' (module docstring). Cut in SQL with its type kept (a 10 MB prompt never leaves
    SQLite; a BLOB comes back as bytes for the caller to decode); newlines are folded in Python."""
    if not todays:
        return (
            f"COALESCE((SELECT SUBSTR(m.content, 1, {HEAD_CHARS}) FROM messages m "
            f"WHERE m.session_id = {session} AND m.role = 'user' AND m.content IS NOT NULL "
            "ORDER BY m.timestamp, m.id LIMIT 1), '')"
        )
    return (
        f"COALESCE((SELECT {RAW_SELECT_SQL} FROM messages m WHERE m.session_id = {session} "
        f"AND m.role = 'user' AND m.content IS NOT NULL AND {ELIGIBLE_SQL} "
        "ORDER BY m.timestamp, m.id LIMIT 1), '')"
    )
