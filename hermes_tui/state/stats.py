"""Usage statistics: the design document's token queries plus the browser's statistics screen."""

from __future__ import annotations

import time
from typing import Any

from .core import _Core


class StatsMixin(_Core):
    def usage_by_model(self) -> list[dict[str, Any]]:
        """Total tokens and cost by model (the design document's query)."""
        return self._rows(
            "SELECT model, COUNT(*) AS session_count, SUM(input_tokens) AS total_input, "
            "SUM(output_tokens) AS total_output, SUM(estimated_cost_usd) AS total_cost "
            "FROM sessions WHERE model IS NOT NULL GROUP BY model ORDER BY total_cost DESC"
        )

    def top_sessions(self, limit: int = 10) -> list[dict[str, Any]]:
        """Sessions with the highest token usage (the design document's query)."""
        return self._rows(
            "SELECT id, title, model, input_tokens + output_tokens AS total_tokens, estimated_cost_usd "
            "FROM sessions ORDER BY total_tokens DESC LIMIT ?",
            (limit,),
        )

    def costliest_sessions(self, limit: int = 10) -> list[dict[str, Any]]:
        return self._rows(
            "SELECT id, title, source, model, COALESCE(actual_cost_usd, estimated_cost_usd, 0) AS cost, "
            "input_tokens + output_tokens AS total_tokens FROM sessions ORDER BY cost DESC, id LIMIT ?",
            (limit,),
        )

    def sessions_by_source(self) -> list[dict[str, Any]]:
        return self._rows(
            "SELECT source, COUNT(*) AS sessions, SUM(COALESCE(message_count, 0)) AS messages, "
            "SUM(COALESCE(input_tokens, 0) + COALESCE(output_tokens, 0)) AS tokens, "
            "SUM(COALESCE(estimated_cost_usd, 0)) AS cost FROM sessions GROUP BY source ORDER BY sessions DESC"
        )

    def usage_by_model_detailed(self) -> list[dict[str, Any]]:
        """Per-model usage from `session_model_usage` (mid-session model switches attributed right)."""
        if "session_model_usage" not in self._columns:
            return []
        return self._rows(
            "SELECT model, billing_provider, COUNT(DISTINCT session_id) AS sessions, SUM(api_call_count) AS api_calls, "
            "SUM(input_tokens) AS input_tokens, SUM(output_tokens) AS output_tokens, "
            "SUM(cache_read_tokens) AS cache_read_tokens, SUM(estimated_cost_usd) AS cost "
            "FROM session_model_usage GROUP BY model, billing_provider ORDER BY cost DESC, input_tokens DESC"
        )

    def activity_by_day(self, days: int | None = None, now: float | None = None) -> list[dict[str, Any]]:
        """Sessions started and messages written per UTC day, oldest first."""
        since = None if days is None else (now or time.time()) - days * 86400
        where_s = "WHERE started_at >= ?" if since is not None else ""
        where_m = "WHERE timestamp >= ?" if since is not None else ""
        p: tuple[Any, ...] = (since,) if since is not None else ()
        sess = dict(self._tuples(
            f"SELECT date(started_at, 'unixepoch') AS d, COUNT(*) FROM sessions {where_s} GROUP BY d", p
        ))
        msgs = dict(self._tuples(
            f"SELECT date(timestamp, 'unixepoch') AS d, COUNT(*) FROM messages {where_m} GROUP BY d", p
        ))
        return [
            {"day": d, "sessions": sess.get(d, 0), "messages": msgs.get(d, 0)}
            for d in sorted(set(sess) | set(msgs))
            if d is not None
        ]

    def costliest_chains(self, limit: int = 10) -> list[dict[str, Any]]:
        """Whole lineages (root and every descendant) ranked by summed cost."""
        return self._rows(
            """WITH RECURSIVE tree(root, id) AS (
                   SELECT id, id FROM sessions WHERE parent_session_id IS NULL
                   UNION ALL
                   SELECT t.root, s.id FROM sessions s JOIN tree t ON s.parent_session_id = t.id)
               SELECT t.root AS root_id, r.title AS title, COUNT(*) AS sessions,
                      SUM(COALESCE(s.message_count, 0)) AS messages,
                      SUM(COALESCE(s.input_tokens, 0) + COALESCE(s.output_tokens, 0)) AS tokens,
                      SUM(COALESCE(s.actual_cost_usd, s.estimated_cost_usd, 0)) AS cost
               FROM tree t JOIN sessions s ON s.id = t.id JOIN sessions r ON r.id = t.root
               GROUP BY t.root HAVING COUNT(*) > 1 ORDER BY cost DESC, tokens DESC LIMIT ?""",
            (limit,),
        )

    def totals(self) -> dict[str, Any]:
        row = self._row(
            "SELECT COUNT(*) AS sessions, SUM(COALESCE(message_count, 0)) AS messages, "
            "SUM(COALESCE(input_tokens, 0)) AS input_tokens, SUM(COALESCE(output_tokens, 0)) AS output_tokens, "
            "SUM(COALESCE(estimated_cost_usd, 0)) AS cost FROM sessions"
        )
        return row or {}
