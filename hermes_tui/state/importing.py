"""`import_sessions`: restore `export_session`/`export_all` dicts (0.19.0's contract).

Existing ids are skipped; a child keeps its parent only when that parent exists (or arrives in
the same payload) and the edge closes no cycle; otherwise it is detached. Live runtime state
(gateway routing, handoff, rewind counters) is not restored: this brings back history, not
ownership of a live channel. One write transaction per call.
"""

from __future__ import annotations

import json
import time
from typing import Any

import apsw

from .core import _Core
from .errors import InvalidArgument
from .text import parse_timestamp

IMPORT_MAX_SESSIONS = 10_000
_SESSION_FIELDS = (
    "source", "user_id", "model", "system_prompt", "end_reason", "cwd", "git_branch", "git_repo_root",
    "billing_provider", "billing_base_url", "billing_mode", "cost_status", "cost_source", "pricing_version",
    "title", "started_at", "ended_at", "input_tokens", "output_tokens", "cache_read_tokens",
    "cache_write_tokens", "reasoning_tokens", "estimated_cost_usd", "actual_cost_usd", "api_call_count",
    "archived", "profile_name", "model_config",
)


class ImportMixin(_Core):
    def import_sessions(self, sessions: list[dict[str, Any]]) -> dict[str, Any]:
        if not isinstance(sessions, list):
            raise InvalidArgument("sessions must be a list")
        if len(sessions) > IMPORT_MAX_SESSIONS:
            raise InvalidArgument(f"sessions must contain at most {IMPORT_MAX_SESSIONS} entries")
        errors: list[dict[str, Any]] = []
        seen: set[str] = set()
        valid: list[dict[str, Any]] = []
        for index, raw in enumerate(sessions):
            sid = str(raw.get("id") or "").strip() if isinstance(raw, dict) else ""
            if not isinstance(raw, dict):
                errors.append({"index": index, "session_id": "", "error": "session must be an object"})
            elif not sid:
                errors.append({"index": index, "session_id": "", "error": "session id is required"})
            elif sid in seen:
                errors.append({"index": index, "session_id": sid, "error": "duplicate session id"})
            elif not isinstance(raw.get("messages") or [], list):
                errors.append({"index": index, "session_id": sid, "error": "messages must be a list"})
            else:
                seen.add(sid)
                valid.append(raw)
        if errors:
            return {"ok": False, "imported": 0, "skipped": 0, "detached": 0, "imported_ids": [],
                    "skipped_ids": [], "errors": errors}

        def do(conn: apsw.Connection) -> dict[str, Any]:
            imported: list[str] = []
            skipped: list[str] = []
            parents: list[tuple[str, str]] = []
            now = time.time()
            for raw in valid:
                sid = str(raw["id"]).strip()
                if conn.execute("SELECT 1 FROM sessions WHERE id = ?", (sid,)).fetchall():
                    skipped.append(sid)
                    continue
                vals: dict[str, Any] = {"id": sid}
                for f in _SESSION_FIELDS:
                    if f in raw and self.has_column("sessions", f):
                        v = raw[f]
                        if f == "model_config" and v is not None and not isinstance(v, str):
                            v = json.dumps(v)
                        vals[f] = v
                vals.setdefault("source", "import")
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
                    mv = self._message_values(sid, msg, ts)  # type: ignore[attr-defined]
                    if "active" in msg and msg["active"] is not None:
                        mv["active"] = int(msg["active"])
                    if msg.get("compacted"):
                        mv["compacted"] = 1
                    self._insert_message(conn, mv)  # type: ignore[attr-defined]
                    n_msgs += 1
                    n_tools += self._tool_call_delta(msg.get("tool_calls"))  # type: ignore[attr-defined]
                    last_ts = ts
                conn.execute("UPDATE sessions SET message_count = ?, tool_call_count = ? WHERE id = ?",
                             (n_msgs, n_tools, sid))
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
            return {"ok": True, "imported": len(imported), "skipped": len(skipped), "detached": detached,
                    "imported_ids": imported, "skipped_ids": skipped, "errors": []}

        result = self._execute_write(do)
        self.request_fts_upkeep()  # one bulk transaction leaves segments of many writes' worth
        return result


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
        row = conn.execute("SELECT parent_session_id FROM sessions WHERE id = ?", (current,)).fetchall()
        current = row[0][0] if row else None
    return False
