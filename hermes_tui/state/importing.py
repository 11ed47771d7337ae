"""`import_sessions`: restore `export_session`/`export_all` dicts (0.19.0's contract).

Existing ids are skipped; a child keeps its parent only when that parent exists (or arrives in
the same payload) and the edge closes no cycle; otherwise it is detached. Live runtime state
(gateway routing, handoff, rewind counters) is not restored: this brings back history, not
ownership of a live channel. One write transaction per call.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import apsw

from .core import _Core, live_columns
from .errors import InvalidArgument
from .sessions import SESSION_USAGE_COLUMNS
from .text import parse_timestamp

# 0.19.0's limits (`SessionDB._IMPORT_MAX_*`): an import is history, never an unbounded write.
IMPORT_MAX_SESSIONS = 500
IMPORT_MAX_MESSAGES_PER_SESSION = 10_000
IMPORT_MAX_TOTAL_MESSAGES = 50_000
IMPORT_MAX_SESSION_BYTES = 5 * 1024 * 1024
IMPORT_MAX_TOTAL_BYTES = 25 * 1024 * 1024
_SESSION_TEXT_FIELDS = (
    "source",
    "user_id",
    "model",
    "system_prompt",
    "end_reason",
    "cwd",
    "git_branch",
    "git_repo_root",
    "billing_provider",
    "billing_base_url",
    "billing_mode",
    "cost_status",
    "cost_source",
    "pricing_version",
    "title",
)
_MESSAGE_TEXT_FIELDS = (
    "tool_call_id",
    "tool_name",
    "effect_disposition",
    "finish_reason",
    "reasoning",
    "reasoning_content",
    "platform_message_id",
    "message_id",
)
# Every session field an import writes: the text ones (type-checked above), then the rest.
_SESSION_FIELDS = (
    *_SESSION_TEXT_FIELDS,
    "started_at",
    "ended_at",
    *SESSION_USAGE_COLUMNS,
    "archived",
    "profile_name",
    "model_config",
)


class ImportMixin(_Core):
    def import_sessions(self, sessions: list[dict[str, Any]]) -> dict[str, Any]:
        if not isinstance(sessions, list):
            raise InvalidArgument("sessions must be a list")
        if len(sessions) > IMPORT_MAX_SESSIONS:
            raise InvalidArgument(f"sessions must contain at most {IMPORT_MAX_SESSIONS} entries")
        valid, errors = validate_import(sessions)
        if errors:
            return {
                "ok": False,
                "imported": 0,
                "skipped": 0,
                "detached": 0,
                "imported_ids": [],
                "skipped_ids": [],
                "errors": errors,
            }

        def do(conn: apsw.Connection) -> dict[str, Any]:
            imported: list[str] = []
            skipped: list[str] = []
            parents: list[tuple[str, str]] = []
            now = self.clock()
            for raw in valid:
                sid = str(raw["id"]).strip()
                if conn.execute("SELECT 1 FROM sessions WHERE id = ?", (sid,)).fetchall():
                    skipped.append(sid)
                    continue
                vals: dict[str, Any] = {"id": sid}
                for f in _SESSION_FIELDS:
                    if f in raw and self.has_column("sessions", f):
                        vals[f] = raw[f]  # model_config is already JSON text (validate_import)
                self._import_flags(raw, vals)
                self._import_prompt_by_hash(conn, vals)
                vals["source"] = vals.get("source") or "import"  # as 0.19.0: missing or empty
                vals["started_at"] = parse_timestamp(vals.get("started_at"), now)
                cols = list(vals)
                conn.execute(
                    f"INSERT INTO sessions ({', '.join(cols)}) VALUES ({', '.join('?' for _ in cols)})",
                    [vals[c] for c in cols],
                )
                n_msgs = n_tools = 0
                last_ts = vals["started_at"]
                for msg in raw.get("messages") or []:
                    ts = parse_timestamp(msg.get("timestamp"), last_ts)
                    mv = self._message_values(sid, msg, ts)
                    if "active" in msg and msg["active"] is not None:
                        mv["active"] = int(msg["active"])
                    if msg.get("compacted"):
                        mv["compacted"] = 1
                    self._insert_message(conn, mv)
                    n_msgs += 1
                    n_tools += self._tool_call_delta(msg.get("tool_calls"))
                    last_ts = ts
                conn.execute(
                    "UPDATE sessions SET message_count = ?, tool_call_count = ? WHERE id = ?",
                    (n_msgs, n_tools, sid),
                )
                parent = str(raw.get("parent_session_id") or "").strip()
                if parent:
                    parents.append((sid, parent))
                imported.append(sid)
            detached = 0
            by_child = dict(parents)
            for sid, parent in parents:
                exists = conn.execute("SELECT 1 FROM sessions WHERE id = ?", (parent,)).fetchall()
                if exists and not _closes_cycle(conn, sid, parent, by_child):
                    conn.execute("UPDATE sessions SET parent_session_id = ? WHERE id = ?", (parent, sid))
                else:
                    by_child.pop(sid, None)
                    detached += 1
            return {
                "ok": True,
                "imported": len(imported),
                "skipped": len(skipped),
                "detached": detached,
                "imported_ids": imported,
                "skipped_ids": skipped,
                "errors": [],
            }

        result = self._execute_write(do)
        self.request_fts_upkeep()  # one bulk transaction leaves segments of many writes' worth
        return result

    def _import_flags(self, raw: dict[str, Any], vals: dict[str, Any]) -> None:
        """The flags a restore keeps, where the file has them: on a file of today's Hermes (it has
        `hidden`) archived, auto-archived, pinned and hidden as the v31 writer coerces them (an
        integer, else 0; auto-archived only with archived: only its sweep sets it), else
        0.19.0's `archived` (any truthy value)."""
        if not self.has_column("sessions", "hidden"):
            if self.has_column("sessions", "archived"):
                vals["archived"] = 1 if raw.get("archived") else 0
            return
        for flag in _TODAYS_FLAGS:
            if self.has_column("sessions", flag):
                vals[flag] = 1 if _int_or(raw.get(flag), 0) else 0
        if "auto_archived" in vals:
            vals["auto_archived"] &= vals.get("archived", 0)

    def _import_prompt_by_hash(self, conn: apsw.Connection, vals: dict[str, Any]) -> None:
        """Where the file keeps prompts in `system_prompts` (schema v25+), the prompt goes there by
        its sha256 and the row holds the hash, as the v31 writer's import stores it."""
        prompt = vals.get("system_prompt")
        if not isinstance(prompt, str) or not self.has_column("sessions", "system_prompt_hash"):
            return
        if not live_columns(conn, "system_prompts"):
            return
        digest = hashlib.sha256(prompt.encode("utf-8")).hexdigest()
        conn.execute("INSERT OR IGNORE INTO system_prompts (hash, prompt) VALUES (?, ?)", (digest, prompt))
        vals["system_prompt"] = None
        vals["system_prompt_hash"] = digest


#: The v31 writer's `_IMPORT_FLAG_COLS`: flags that drive its prune, lists and resume.
_TODAYS_FLAGS = ("archived", "auto_archived", "pinned", "hidden")


def _int_or(value: Any, default: int) -> int:
    """`int(value)`, else `default` (the v31 writer's `_coerce_or(value, int, default)`)."""
    try:
        return int(value)
    except (TypeError, ValueError, OverflowError):
        return default


def _closes_cycle(conn: apsw.Connection, child: str, parent: str, by_child: dict[str, str]) -> bool:
    seen = {child}
    current: str | None = parent
    while current:
        if current in seen:
            return True
        seen.add(current)
        if current in by_child:
            current = by_child[current]
            continue
        row: list[tuple[Any, ...]] = conn.execute(
            "SELECT parent_session_id FROM sessions WHERE id = ?", (current,)
        ).fetchall()
        current = row[0][0] if row else None
    return False


def _import_error(index: int, session_id: str, error: str) -> dict[str, Any]:
    """0.19.0's per-item error: `session_id` only when the item had one."""
    item: dict[str, Any] = {"index": index, "error": error}
    if session_id:
        item["session_id"] = session_id
    return item


def _text_or_none(value: Any, field: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise ValueError(f"{field} must be a string")


def _json_object_or_none(value: Any, field: str) -> str | None:
    """A JSON object (given as text or as a dict) as JSON text; anything else is an error."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{field} must be valid JSON") from exc
        if not isinstance(parsed, dict):
            raise ValueError(f"{field} must be a JSON object")
        return value
    if not isinstance(value, dict):
        raise ValueError(f"{field} must be a JSON object")
    try:
        return json.dumps(value)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{field} must be JSON serializable") from exc


def _int_or_none(value: Any, field: str) -> int | None:
    if value is None:
        return None
    try:
        return int(value)
    except (TypeError, ValueError, OverflowError) as exc:
        raise ValueError(f"{field} must be an integer") from exc


def validate_import(sessions: list[Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """0.19.0's checks, in its order and with its messages: (normalised sessions, errors).

    Every item is checked (all errors are reported at once) and nothing is written when any item
    fails: an object with an id, unique in the payload, messages a list of objects within the
    per-session and total limits, JSON-serialisable within the size limits, `model_config` a JSON
    object, text fields strings, every role a non-empty string, `token_count` an integer.
    """
    normalized: list[dict[str, Any]] = []
    errors: list[dict[str, Any]] = []
    seen: set[str] = set()
    total_messages = total_bytes = 0
    for index, raw in enumerate(sessions):
        if not isinstance(raw, dict):
            errors.append(_import_error(index, "", "session must be an object"))
            continue
        sid = str(raw.get("id") or "").strip()
        if not sid:
            errors.append(_import_error(index, "", "session id is required"))
            continue
        if sid in seen:
            errors.append(_import_error(index, sid, "duplicate session id"))
            continue
        messages = raw.get("messages") or []
        if not isinstance(messages, list):
            errors.append(_import_error(index, sid, "messages must be a list"))
            continue
        if len(messages) > IMPORT_MAX_MESSAGES_PER_SESSION:
            errors.append(_import_error(index, sid, "messages exceeds the per-session import limit"))
            continue
        if any(not isinstance(m, dict) for m in messages):
            errors.append(_import_error(index, sid, "messages must contain only objects"))
            continue
        try:
            size = len(json.dumps(raw, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
        except (TypeError, ValueError):
            errors.append(_import_error(index, sid, "session must be JSON serializable"))
            continue
        if size > IMPORT_MAX_SESSION_BYTES:
            errors.append(_import_error(index, sid, "session exceeds the import size limit"))
            continue
        total_bytes += size
        if total_bytes > IMPORT_MAX_TOTAL_BYTES:
            errors.append(_import_error(index, sid, "import exceeds the total size limit"))
            continue
        try:
            clean = dict(raw)
            clean["id"] = sid
            clean["model_config"] = _json_object_or_none(clean.get("model_config"), "model_config")
            clean["parent_session_id"] = _text_or_none(clean.get("parent_session_id"), "parent_session_id")
            for name in _SESSION_TEXT_FIELDS:
                clean[name] = _text_or_none(clean.get(name), name)
            clean_messages = []
            for position, message in enumerate(messages):
                msg = dict(message)
                role = msg.get("role")
                if not isinstance(role, str) or not role:
                    raise ValueError(f"messages[{position}].role must be a non-empty string")
                for name in _MESSAGE_TEXT_FIELDS:
                    msg[name] = _text_or_none(msg.get(name), name)
                msg["token_count"] = _int_or_none(msg.get("token_count"), "token_count")
                clean_messages.append(msg)
            clean["messages"] = clean_messages
        except ValueError as exc:
            errors.append(_import_error(index, sid, str(exc)))
            continue
        total_messages += len(clean_messages)
        if total_messages > IMPORT_MAX_TOTAL_MESSAGES:
            errors.append(_import_error(index, sid, "messages exceeds the total import limit"))
            continue
        seen.add(sid)
        normalized.append(clean)
    return normalized, errors
