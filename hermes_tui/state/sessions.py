"""Session rows: create/ensure (an upsert that only fills NULLs), end/reopen, get, token counts.

Columns are always named explicitly and filtered by what the live table has, so a database
opened with `migrate=False` — older or newer than v23 — keeps accepting writes.
"""

from __future__ import annotations

import json
from typing import Any

import apsw

from .core import _Core
from .errors import IntegrityError, SessionNotFound
from .sql_fragments import like_escape
from .text import clean_row, read_rows

#: The token counters of a session, in the order `update_token_counts` takes them.
SESSION_TOKEN_COUNTERS = (
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
)
#: Every usage column of a session (tokens, costs, API calls): read as numbers, and copied by an import.
SESSION_USAGE_COLUMNS = (*SESSION_TOKEN_COUNTERS, "estimated_cost_usd", "actual_cost_usd", "api_call_count")

#: Session columns read as numbers (text or bytes in them read as None), and as dates.
SESSION_NUMBERS = (
    "message_count",
    "tool_call_count",
    *SESSION_USAGE_COLUMNS,
    "archived",
    "pinned",
    "hidden",
    "rewind_count",
)
SESSION_TIMESTAMPS = ("started_at", "ended_at", "last_active", "last_read_at", "last_activity_at")

#: Columns an insert of an existing session fills in where the stored row has NULL.
_FILL_ON_CONFLICT = (
    "model",
    "model_config",
    "system_prompt",
    "session_key",
    "chat_id",
    "chat_type",
    "thread_id",
    "parent_session_id",
    "cwd",
    "profile_name",
)

#: The keyword arguments `create_session`/`ensure_session` take: every column a conflict fills in,
#: and `user_id`, which the first writer's row keeps (upstream).
_SESSION_KWARGS = frozenset({*_FILL_ON_CONFLICT, "user_id"})


def resolved_prompts_sql(db: _Core, tool_names: bool = True) -> tuple[str, str]:
    """(extra select, joins) resolving `system_prompt` (and with `tool_names` that column) through
    the shared `system_prompts` table (schema v25+: the row holds a hash, the inline column is
    only a fallback), as the v31 writer's `get_session` does; empty on older files."""
    if "system_prompts" not in db._columns or not db.has_column("sessions", "system_prompt_hash"):
        return "", ""
    select = ", COALESCE(sp.prompt, s.system_prompt) AS _system_prompt_resolved"
    joins = " LEFT JOIN system_prompts sp ON sp.hash = s.system_prompt_hash"
    if tool_names and db.has_column("sessions", "tool_names"):
        select += ", COALESCE(tp.prompt, s.tool_names) AS _tool_names_resolved"
        joins += " LEFT JOIN system_prompts tp ON tp.hash = s.tool_names"
    return select, joins


def take_resolved_prompts(row: dict[str, Any]) -> dict[str, Any]:
    """Move `_system_prompt_resolved`/`_tool_names_resolved` (see `resolved_prompts_sql`) over
    their columns."""
    for column in ("system_prompt", "tool_names"):
        resolved = f"_{column}_resolved"
        if resolved in row:
            row[column] = row.pop(resolved)
    return row


class SessionsMixin(_Core):
    def _upsert_session_sql(self, values: dict[str, Any]) -> tuple[str, list[Any]]:
        cols = [c for c in values if self.has_column("sessions", c)]
        fill = [c for c in _FILL_ON_CONFLICT if c in cols]
        sql = f"INSERT INTO sessions ({', '.join(cols)}) VALUES ({', '.join('?' for _ in cols)})" + (
            " ON CONFLICT(id) DO UPDATE SET "
            + ", ".join(f"{c} = COALESCE(sessions.{c}, excluded.{c})" for c in fill)
            if fill
            else " ON CONFLICT(id) DO NOTHING"
        )
        return sql, [values[c] for c in cols]

    def _session_values(self, session_id: str, source: str, kwargs: dict[str, Any]) -> dict[str, Any]:
        unknown = set(kwargs) - _SESSION_KWARGS
        if unknown:
            raise TypeError(f"unexpected keyword argument(s): {', '.join(sorted(unknown))}")
        if not isinstance(session_id, str) or not session_id:
            raise IntegrityError("session_id must be a non-empty string")
        model_config = kwargs.get("model_config")
        if model_config and not isinstance(model_config, str):
            try:
                model_config = json.dumps(model_config)
            except (TypeError, ValueError) as exc:
                from .errors import InvalidArgument

                raise InvalidArgument(f"model_config is not JSON-serialisable: {exc}") from exc
        values: dict[str, Any] = {"id": session_id, "source": source}
        for key in ("user_id", "session_key", "chat_id", "chat_type", "thread_id", "model"):
            values[key] = kwargs.get(key)
        values["model_config"] = model_config or None
        for key in ("system_prompt", "parent_session_id", "cwd", "profile_name"):
            values[key] = kwargs.get(key)
        values["started_at"] = self.clock()
        return values

    def _check_parent(self, conn: apsw.Connection, parent_id: str | None) -> None:
        if parent_id and not conn.execute("SELECT 1 FROM sessions WHERE id = ?", (parent_id,)).fetchall():
            raise IntegrityError(
                f"FOREIGN KEY constraint failed: parent session {parent_id!r} does not exist"
            )

    def create_session(self, session_id: str, source: str, **kwargs: Any) -> str:
        """Create (or enrich the NULL columns of) a session row; returns its id."""
        values = self._session_values(session_id, source, kwargs)
        sql, params = self._upsert_session_sql(values)

        def do(conn: apsw.Connection) -> None:
            self._check_parent(conn, values.get("parent_session_id"))
            conn.execute(sql, params)

        self._execute_write(do)
        return session_id

    def ensure_session(
        self, session_id: str, source: str = "unknown", model: str | None = None, **kwargs: Any
    ) -> str:
        return self.create_session(session_id, source, model=model, **kwargs)

    def end_session(self, session_id: str, end_reason: str) -> None:
        """First reason wins: an already-ended session keeps its `ended_at` and reason."""
        self._execute_write(
            lambda c: c.execute(
                "UPDATE sessions SET ended_at = ?, end_reason = ? WHERE id = ? AND ended_at IS NULL",
                (self.clock(), end_reason, session_id),
            )
        )

    def reopen_session(self, session_id: str) -> None:
        self._execute_write(
            lambda c: c.execute(
                "UPDATE sessions SET ended_at = NULL, end_reason = NULL WHERE id = ?", (session_id,)
            )
        )

    def get_session(self, session_id: str) -> dict[str, Any] | None:
        """`sessions.*` of one row; whatever it holds, text comes back as str, `started_at`/
        `ended_at` as a usable date or None, counters and costs as numbers or None.
        `system_prompt` (and `tool_names`) are the text itself, also where the file keeps it in
        `system_prompts` by hash (`COALESCE(sp.prompt, s.system_prompt)`, the v31 writer's read)."""
        select, joins = resolved_prompts_sql(self)
        rows = read_rows(
            self._conn(), f"SELECT s.*{select} FROM sessions s{joins} WHERE s.id = ?", (session_id,)
        )
        if not rows:
            return None
        return clean_row(take_resolved_prompts(rows[0]), SESSION_NUMBERS, SESSION_TIMESTAMPS)

    def require_session(self, session_id: str) -> dict[str, Any]:
        row = self.get_session(session_id)
        if row is None:
            raise SessionNotFound(f"no session with id {session_id!r}")
        return row

    def resolve_session_id(self, session_id_or_prefix: str) -> str | None:
        """Exact id, else the one session whose id starts with the prefix (ambiguous → None)."""
        if not session_id_or_prefix:
            return None
        if self._scalar("SELECT id FROM sessions WHERE id = ?", (session_id_or_prefix,)):
            return session_id_or_prefix
        matches = self._tuples(
            "SELECT id FROM sessions WHERE id LIKE ? ESCAPE '\\' ORDER BY started_at DESC LIMIT 2",
            (like_escape(session_id_or_prefix) + "%",),
        )
        return matches[0][0] if len(matches) == 1 else None

    def update_token_counts(
        self,
        session_id: str,
        input_tokens: int = 0,
        output_tokens: int = 0,
        model: str | None = None,
        cache_read_tokens: int = 0,
        cache_write_tokens: int = 0,
        reasoning_tokens: int = 0,
        estimated_cost_usd: float | None = None,
        actual_cost_usd: float | None = None,
        cost_status: str | None = None,
        cost_source: str | None = None,
        pricing_version: str | None = None,
        billing_provider: str | None = None,
        billing_base_url: str | None = None,
        billing_mode: str | None = None,
        api_call_count: int = 0,
        absolute: bool = False,
    ) -> None:
        """Add per-call deltas (or set totals with `absolute=True`) in one transaction."""
        deltas = (input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, reasoning_tokens)
        # An actual cost alone marks usage (it fills the billing route) but is no per-call record.
        counted = any(deltas) or bool(api_call_count or estimated_cost_usd)
        has_usage = counted or bool(actual_cost_usd)
        record_usage = (not absolute) and counted
        values = self._session_values(session_id, "unknown", {"model": model})
        upsert_sql, upsert_params = self._upsert_session_sql(values)
        sets: list[str] = []
        params: list[Any] = []
        val: Any  # the loops below bind counters, then text columns
        for col, val in zip(SESSION_TOKEN_COUNTERS, deltas, strict=True):
            if self.has_column("sessions", col):
                sets.append(f"{col} = ?" if absolute else f"{col} = COALESCE({col}, 0) + ?")
                params.append(val or 0)
        if self.has_column("sessions", "estimated_cost_usd"):
            sets.append(
                "estimated_cost_usd = COALESCE(?, 0)"
                if absolute
                else "estimated_cost_usd = COALESCE(estimated_cost_usd, 0) + COALESCE(?, 0)"
            )
            params.append(estimated_cost_usd)
        if self.has_column("sessions", "actual_cost_usd"):
            sets.append(
                "actual_cost_usd = CASE WHEN ? IS NULL THEN actual_cost_usd ELSE "
                + ("?" if absolute else "COALESCE(actual_cost_usd, 0) + ?")
                + " END"
            )
            params += [actual_cost_usd, actual_cost_usd]
        for col, val in (
            ("cost_status", cost_status),
            ("cost_source", cost_source),
            ("pricing_version", pricing_version),
        ):
            if self.has_column("sessions", col):
                sets.append(f"{col} = COALESCE(?, {col})")
                params.append(val)
        for col, val in (
            ("billing_provider", billing_provider),
            ("billing_base_url", billing_base_url),
            ("billing_mode", billing_mode),
            ("model", model),
        ):
            if self.has_column("sessions", col):
                sets.append(f"{col} = COALESCE({col}, ?)")
                params.append(val if has_usage else None)
        if self.has_column("sessions", "api_call_count"):
            sets.append(
                "api_call_count = ?" if absolute else "api_call_count = COALESCE(api_call_count, 0) + ?"
            )
            params.append(api_call_count or 0)
        update_sql = f"UPDATE sessions SET {', '.join(sets)} WHERE id = ?"
        params.append(session_id)
        has_route_cols = self.has_column("sessions", "billing_provider") and self.has_column(
            "sessions", "api_call_count"
        )

        def do(conn: apsw.Connection) -> None:
            conn.execute(upsert_sql, upsert_params)
            if has_route_cols:
                row = conn.execute(
                    "SELECT model, billing_provider, api_call_count FROM sessions WHERE id = ?", (session_id,)
                ).fetchall()
                ex_model, ex_provider, ex_calls = row[0] if row else (None, None, 0)
                if (
                    int(ex_calls or 0) == 0
                    and has_usage
                    and model
                    and billing_provider
                    and (ex_model != model or ex_provider != billing_provider)
                ):
                    conn.execute(
                        "UPDATE sessions SET model = ?, billing_provider = ?, billing_base_url = ?, "
                        "billing_mode = ? WHERE id = ?",
                        (model, billing_provider, billing_base_url, billing_mode, session_id),
                    )
            conn.execute(update_sql, params)
            if record_usage and "session_model_usage" in self._columns:
                self._record_model_usage(
                    conn,
                    session_id,
                    model,
                    billing_provider,
                    billing_base_url,
                    billing_mode,
                    deltas,
                    estimated_cost_usd,
                    actual_cost_usd,
                    cost_status,
                    cost_source,
                    api_call_count,
                )

        self._execute_write(do)

    def _record_model_usage(
        self,
        conn: apsw.Connection,
        session_id: str,
        model: str | None,
        provider: str | None,
        base_url: str | None,
        mode: str | None,
        deltas: tuple[int, ...],
        est: float | None,
        act: float | None,
        cost_status: str | None,
        cost_source: str | None,
        api_calls: int,
    ) -> None:
        row = conn.execute(
            "SELECT model, billing_provider, billing_base_url, billing_mode FROM sessions WHERE id = ?",
            (session_id,),
        ).fetchall()
        s_model, s_provider, s_base, s_mode = row[0] if row else (None, None, None, None)
        now = self.clock()
        conn.execute(
            """INSERT INTO session_model_usage (
                   session_id, model, billing_provider, billing_base_url, billing_mode, task,
                   api_call_count, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens,
                   reasoning_tokens, estimated_cost_usd, actual_cost_usd, cost_status, cost_source,
                   first_seen, last_seen)
               VALUES (?, ?, ?, ?, ?, '', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
               ON CONFLICT(session_id, model, billing_provider, billing_base_url, billing_mode, task)
               DO UPDATE SET
                   api_call_count = api_call_count + excluded.api_call_count,
                   input_tokens = input_tokens + excluded.input_tokens,
                   output_tokens = output_tokens + excluded.output_tokens,
                   cache_read_tokens = cache_read_tokens + excluded.cache_read_tokens,
                   cache_write_tokens = cache_write_tokens + excluded.cache_write_tokens,
                   reasoning_tokens = reasoning_tokens + excluded.reasoning_tokens,
                   estimated_cost_usd = estimated_cost_usd + excluded.estimated_cost_usd,
                   actual_cost_usd = actual_cost_usd + excluded.actual_cost_usd,
                   cost_status = COALESCE(excluded.cost_status, cost_status),
                   cost_source = COALESCE(excluded.cost_source, cost_source),
                   last_seen = excluded.last_seen""",
            (
                session_id,
                model or s_model or "unknown",
                provider or s_provider or "",
                base_url or s_base or "",
                mode or s_mode or "",
                api_calls or 0,
                *(d or 0 for d in deltas),
                float(est or 0.0),
                float(act or 0.0),
                cost_status,
                cost_source,
                now,
                now,
            ),
        )

    def get_model_usage(self, session_id: str) -> list[dict[str, Any]]:
        if "session_model_usage" not in self._columns:
            return []
        rows = read_rows(
            self._conn(),
            "SELECT * FROM session_model_usage WHERE session_id = ? ORDER BY last_seen DESC",
            (session_id,),
        )
        return rows
