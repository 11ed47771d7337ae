"""Message rows: append (with counters in the same transaction), reads, conversation form,
rewind/restore, in-place compaction and replacement."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import apsw

from .core import _Core, placeholders
from .errors import IntegrityError, SessionNotFound
from .text import (
    clean_row,
    clean_ts,
    decode_content,
    dumps_field,
    encode_content,
    loads_kept,
    parse_timestamp,
    read_rows,
    read_tuples,
    sanitize_context,
    scrub_surrogates,
    strip_review_harness,
    tool_calls_list,
    upstream_preview,
)

_CONVERSATION_COLUMNS = (
    "role, content, tool_call_id, tool_calls, tool_name, effect_disposition, finish_reason, reasoning, "
    "reasoning_content, reasoning_details, codex_reasoning_items, codex_message_items, "
    "platform_message_id, observed, timestamp, api_content"
)


_MESSAGE_NUMBERS = ("token_count", "active", "observed", "compacted")


def decode_message_row(msg: dict[str, Any]) -> dict[str, Any]:
    """A stored message as the API returns it, whatever the row holds: bytes decoded to str,
    `timestamp` a usable date or None, counters numbers or None, `content` decoded (a malformed
    `\\x00json:` payload kept as stored), `tool_calls` always a list (a malformed value kept as
    a one-item list holding the raw string; upstream drops it to `[]`)."""
    clean_row(msg, _MESSAGE_NUMBERS, ("timestamp",), decode=False)  # read_rows decoded bytes
    if "content" in msg:
        msg["content"] = decode_content(msg["content"])
    if msg.get("tool_calls"):
        msg["tool_calls"] = tool_calls_list(msg["tool_calls"])
    return msg


class MessagesMixin(_Core):
    def _message_values(self, session_id: str, msg: dict[str, Any], ts: float) -> dict[str, Any]:
        role = msg.get("role", "unknown")
        api_content = msg.get("api_content")
        return {
            "session_id": session_id,
            "role": role,
            "content": encode_content(msg.get("content")),
            "tool_call_id": msg.get("tool_call_id"),
            "tool_calls": dumps_field("tool_calls", msg.get("tool_calls")),
            "tool_name": scrub_surrogates(msg.get("tool_name")),
            "effect_disposition": msg.get("effect_disposition"),
            "timestamp": ts,
            "token_count": msg.get("token_count"),
            "finish_reason": msg.get("finish_reason"),
            "reasoning": scrub_surrogates(msg.get("reasoning")),
            "reasoning_content": scrub_surrogates(msg.get("reasoning_content")),
            "reasoning_details": dumps_field("reasoning_details", msg.get("reasoning_details")),
            "codex_reasoning_items": dumps_field("codex_reasoning_items", msg.get("codex_reasoning_items")),
            "codex_message_items": dumps_field("codex_message_items", msg.get("codex_message_items")),
            "platform_message_id": msg.get("platform_message_id"),
            "observed": 1 if msg.get("observed") else 0,
            "active": 1,
            "api_content": scrub_surrogates(api_content) if isinstance(api_content, str) else None,
        }

    def _insert_message(self, conn: apsw.Connection, values: dict[str, Any]) -> int:
        cols = [c for c in values if self.has_column("messages", c)]
        conn.execute(
            f"INSERT INTO messages ({', '.join(cols)}) VALUES ({', '.join('?' for _ in cols)})",
            [values[c] for c in cols],
        )
        return conn.last_insert_rowid()

    @staticmethod
    def _tool_call_delta(tool_calls: Any) -> int:
        if tool_calls is None:
            return 0
        return len(tool_calls) if isinstance(tool_calls, list) else 1

    def _require_session_in(self, conn: apsw.Connection, session_id: str) -> None:
        if not conn.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchall():
            raise IntegrityError(f"FOREIGN KEY constraint failed: session {session_id!r} does not exist")

    def append_message(
        self,
        session_id: str,
        role: str,
        content: Any = None,
        tool_name: str | None = None,
        tool_calls: Any = None,
        tool_call_id: str | None = None,
        token_count: int | None = None,
        finish_reason: str | None = None,
        reasoning: str | None = None,
        reasoning_content: str | None = None,
        reasoning_details: Any = None,
        codex_reasoning_items: Any = None,
        codex_message_items: Any = None,
        platform_message_id: str | None = None,
        observed: bool = False,
        effect_disposition: str | None = None,
        timestamp: Any = None,
        api_content: str | None = None,
    ) -> int:
        """Insert one message and bump the session's counters atomically; returns the new id."""
        values = self._message_values(
            session_id,
            {
                "role": role,
                "content": content,
                "tool_name": tool_name,
                "tool_calls": tool_calls,
                "tool_call_id": tool_call_id,
                "token_count": token_count,
                "finish_reason": finish_reason,
                "reasoning": reasoning,
                "reasoning_content": reasoning_content,
                "reasoning_details": reasoning_details,
                "codex_reasoning_items": codex_reasoning_items,
                "codex_message_items": codex_message_items,
                "platform_message_id": platform_message_id,
                "observed": observed,
                "effect_disposition": effect_disposition,
                "api_content": api_content,
            },
            parse_timestamp(timestamp, self.clock()),
        )
        n_tools = self._tool_call_delta(tool_calls)

        def do(conn: apsw.Connection) -> int:
            self._require_session_in(conn, session_id)
            msg_id = self._insert_message(conn, values)
            conn.execute(
                "UPDATE sessions SET message_count = COALESCE(message_count, 0) + 1, "
                "tool_call_count = COALESCE(tool_call_count, 0) + ? WHERE id = ?",
                (n_tools, session_id),
            )
            return msg_id

        return self._execute_write(do)

    def append_messages(self, session_id: str, messages: Sequence[dict[str, Any]]) -> list[int]:
        """(+) Append many messages in one short transaction (imports, the demo, benchmarks)."""
        now = self.clock()
        prepared = []
        for msg in messages:
            ts = parse_timestamp(msg.get("timestamp"), now)
            prepared.append(
                (self._message_values(session_id, msg, ts), self._tool_call_delta(msg.get("tool_calls")))
            )

        def do(conn: apsw.Connection) -> list[int]:
            self._require_session_in(conn, session_id)
            ids = [self._insert_message(conn, vals) for vals, _n in prepared]
            conn.execute(
                "UPDATE sessions SET message_count = COALESCE(message_count, 0) + ?, "
                "tool_call_count = COALESCE(tool_call_count, 0) + ? WHERE id = ?",
                (len(prepared), sum(n for _v, n in prepared), session_id),
            )
            return ids

        return self._execute_write(do)

    def _insert_batch(
        self, conn: apsw.Connection, session_id: str, messages: Sequence[dict[str, Any]]
    ) -> tuple[int, int]:
        """Batch insert for rewrites: rows without a timestamp get strictly increasing ones."""
        now_ts = self.clock()
        inserted = tools = 0
        for msg in messages:
            ts = parse_timestamp(msg.get("timestamp"), now_ts)
            m = dict(msg)
            if m.get("role") != "assistant":
                for key in (
                    "reasoning",
                    "reasoning_content",
                    "reasoning_details",
                    "codex_reasoning_items",
                    "codex_message_items",
                ):
                    m[key] = None
            m["platform_message_id"] = msg.get("platform_message_id") or msg.get("message_id")
            self._insert_message(conn, self._message_values(session_id, m, ts))
            inserted += 1
            tools += self._tool_call_delta(msg.get("tool_calls"))
            now_ts = max(now_ts + 1e-6, ts + 1e-6)
        return inserted, tools

    def get_messages(
        self, session_id: str, include_inactive: bool = False, limit: int | None = None, offset: int = 0
    ) -> list[dict[str, Any]]:
        active = "" if include_inactive or not self.has_column("messages", "active") else " AND active = 1"
        sql = f"SELECT * FROM messages WHERE session_id = ?{active} ORDER BY id"
        params: list[Any] = [session_id]
        if limit is not None or offset:
            sql += " LIMIT ? OFFSET ?"
            params += [-1 if limit is None else limit, offset]
        return [decode_message_row(m) for m in read_rows(self._conn(), sql, params)]

    def get_messages_page(
        self, session_id: str, after_id: int = 0, limit: int = 200, include_inactive: bool = True
    ) -> list[dict[str, Any]]:
        """(+) Keyset page of a transcript by message id (long sessions render lazily)."""
        active = "" if include_inactive or not self.has_column("messages", "active") else " AND active = 1"
        rows = read_rows(
            self._conn(),
            f"SELECT * FROM messages WHERE session_id = ? AND id > ?{active} ORDER BY id LIMIT ?",
            (session_id, after_id, limit),
        )
        return [decode_message_row(m) for m in rows]

    def get_message(self, message_id: int) -> dict[str, Any] | None:
        rows = read_rows(self._conn(), "SELECT * FROM messages WHERE id = ?", (message_id,))
        return decode_message_row(rows[0]) if rows else None

    def _session_lineage_root_to_tip(self, session_id: str) -> list[str]:
        chain: list[str] = []
        current: str | None = session_id
        seen: set[str] = set()
        for _ in range(100):
            if not current or current in seen:
                break
            seen.add(current)
            chain.append(current)
            row = read_tuples(self._conn(), "SELECT parent_session_id FROM sessions WHERE id = ?", (current,))
            parent = row[0][0] if row else None
            current = parent if isinstance(parent, str) else None  # a hostile non-text parent ends the chain
        return list(reversed(chain)) or [session_id]

    def get_messages_as_conversation(
        self,
        session_id: str,
        include_ancestors: bool = False,
        include_inactive: bool = False,
        repair_alternation: bool = False,
    ) -> list[dict[str, Any]]:
        """OpenAI-style `{role, content, …}` dicts, context-sanitized, as 0.19.0 replays them.

        `repair_alternation` is accepted for signature compatibility; the repair lives in the
        agent runtime, which the store does not ship, so the list is returned verbatim.
        """
        ids = self._session_lineage_root_to_tip(session_id) if include_ancestors else [session_id]
        active = "" if include_inactive else " AND active = 1"
        cols = ", ".join(
            c.strip() for c in _CONVERSATION_COLUMNS.split(",") if self.has_column("messages", c.strip())
        )
        rows = read_rows(
            self._conn(),
            f"SELECT {cols} FROM messages WHERE session_id IN ({placeholders(ids)}){active} ORDER BY id",
            ids,
        )
        out: list[dict[str, Any]] = []
        for row in rows:
            clean_row(row, (), ("timestamp",), decode=False)
            content = decode_content(row.get("content"))
            if row["role"] in {"user", "assistant"} and isinstance(content, str):
                content = sanitize_context(content).strip()
            msg: dict[str, Any] = {"role": row["role"], "content": content}
            for key in ("api_content", "timestamp", "tool_call_id", "tool_name", "effect_disposition"):
                if row.get(key):
                    msg[key] = row[key]
            if row.get("tool_calls"):
                msg["tool_calls"] = tool_calls_list(row["tool_calls"])
            if row.get("platform_message_id"):
                msg["message_id"] = row["platform_message_id"]
            if row.get("observed"):
                msg["observed"] = True
            if row["role"] == "assistant":
                if row.get("finish_reason"):
                    msg["finish_reason"] = row["finish_reason"]
                if row.get("reasoning"):
                    msg["reasoning"] = row["reasoning"]
                if row.get("reasoning_content") is not None:
                    msg["reasoning_content"] = row["reasoning_content"]
                for key in ("reasoning_details", "codex_reasoning_items", "codex_message_items"):
                    if row.get(key):
                        msg[key] = loads_kept(row[key])
            if include_ancestors and _is_replayed_user(out, msg):
                continue
            out.append(msg)
        return strip_review_harness(out)

    def message_count(self, session_id: str | None = None) -> int:
        if session_id is None:
            return int(self._scalar("SELECT COUNT(*) FROM messages", default=0))
        return int(self._scalar("SELECT COUNT(*) FROM messages WHERE session_id = ?", (session_id,), 0))

    def has_platform_message_id(self, session_id: str, platform_message_id: str) -> bool:
        return bool(
            self._scalar(
                "SELECT 1 FROM messages WHERE session_id = ? AND platform_message_id = ? LIMIT 1",
                (session_id, platform_message_id),
            )
        )

    def list_recent_user_messages(
        self, session_id: str, limit: int = 20, include_inactive: bool = False
    ) -> list[dict[str, Any]]:
        active = "" if include_inactive else " AND active = 1"
        out = []
        for mid, ts, content in read_tuples(
            self._conn(),
            f"SELECT id, timestamp, content FROM messages WHERE session_id = ? AND role = 'user'{active} "
            "ORDER BY id DESC LIMIT ?",
            (session_id, int(limit)),
        ):
            preview = " ".join(upstream_preview(content).split())
            if len(preview) > 80:
                preview = preview[:77] + "..."
            out.append({"id": mid, "timestamp": clean_ts(ts), "preview": preview})
        return out

    def rewind_to_message(self, session_id: str, target_message_id: int) -> dict[str, Any]:
        """Soft-delete (active=0) the target user message and everything after it."""
        found = read_rows(
            self._conn(),
            "SELECT * FROM messages WHERE id = ? AND session_id = ?",
            (target_message_id, session_id),
        )
        target = found[0] if found else None
        if target is None:
            raise ValueError(f"message {target_message_id} not found in session {session_id}")
        if target.get("role") != "user":
            raise ValueError(
                f"rewind target must be a 'user' message (got role={target.get('role')!r}, "
                f"id={target_message_id})"
            )
        target["content"] = decode_content(target.get("content"))

        def do(conn: apsw.Connection) -> int:
            conn.execute(
                "UPDATE messages SET active = 0 WHERE session_id = ? AND id >= ? AND active = 1",
                (session_id, target_message_id),
            )
            n = conn.changes()
            conn.execute(
                "UPDATE sessions SET rewind_count = COALESCE(rewind_count, 0) + 1 WHERE id = ?", (session_id,)
            )
            return n

        n = self._execute_write(do)
        head = self._scalar("SELECT MAX(id) FROM messages WHERE session_id = ? AND active = 1", (session_id,))
        return {"rewound_count": n, "target_message": target, "new_head_id": head}

    def restore_rewound(self, session_id: str, since_message_id: int) -> int:
        def do(conn: apsw.Connection) -> int:
            conn.execute(
                "UPDATE messages SET active = 1 WHERE session_id = ? AND id >= ? AND active = 0",
                (session_id, since_message_id),
            )
            return conn.changes()

        return self._execute_write(do)

    def has_archived_messages(self, session_id: str) -> bool:
        return bool(
            self._scalar("SELECT 1 FROM messages WHERE session_id = ? AND active = 0 LIMIT 1", (session_id,))
        )

    def archive_and_compact(self, session_id: str, compacted_messages: Sequence[dict[str, Any]]) -> int:
        """Archive the live rows (active=0, compacted=1) and insert the compacted set."""

        def do(conn: apsw.Connection) -> int:
            conn.execute(
                "UPDATE messages SET active = 0, compacted = 1 WHERE session_id = ? AND active = 1",
                (session_id,),
            )
            inserted, tools = self._insert_batch(conn, session_id, compacted_messages)
            conn.execute(
                "UPDATE sessions SET message_count = ?, tool_call_count = ? WHERE id = ?",
                (inserted, tools, session_id),
            )
            return inserted

        return self._execute_write(do)

    def replace_messages(
        self, session_id: str, messages: Sequence[dict[str, Any]], active_only: bool = False
    ) -> None:
        clause = " AND active = 1" if active_only else ""

        def do(conn: apsw.Connection) -> None:
            conn.execute(f"DELETE FROM messages WHERE session_id = ?{clause}", (session_id,))
            inserted, tools = self._insert_batch(conn, session_id, messages)
            conn.execute(
                "UPDATE sessions SET message_count = ?, tool_call_count = ? WHERE id = ?",
                (inserted, tools, session_id),
            )

        self._execute_write(do)

    def clear_messages(self, session_id: str) -> None:
        def do(conn: apsw.Connection) -> None:
            if not conn.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchall():
                raise SessionNotFound(f"no session with id {session_id!r}")
            conn.execute("DELETE FROM messages WHERE session_id = ?", (session_id,))
            conn.execute(
                "UPDATE sessions SET message_count = 0, tool_call_count = 0 WHERE id = ?", (session_id,)
            )

        self._execute_write(do)


def _is_replayed_user(messages: list[dict[str, Any]], msg: dict[str, Any]) -> bool:
    if msg.get("role") != "user" or not isinstance(msg.get("content"), str) or not msg["content"]:
        return False
    for prev in reversed(messages):
        if prev.get("role") == "user" and prev.get("content") == msg["content"]:
            return True
        if prev.get("role") == "assistant" and (prev.get("content") or prev.get("tool_calls")):
            return False
    return False
