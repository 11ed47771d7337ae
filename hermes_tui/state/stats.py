"""Usage statistics: the design document's token queries plus the browser's statistics screen.

Every query here reads whatever the rows hold without raising: sums go through `sum_sql`
(SUM raises "integer overflow" past 2**63; text counts as 0), day buckets only use dates in
[0, TS_MAX], and rows are read with `read_rows` (non-UTF-8 text decoded, numbers cleaned).
"""

from __future__ import annotations

import time
from typing import Any

from .core import _Core
from .text import clean_row, num_sql, read_rows, read_tuples, sum_sql, ts_sql


def _cost(alias: str = "") -> str:
    """The browser's cost: actual, else estimated, else 0 — numbers only."""
    a = f"{alias}." if alias else ""
    return (
        f"(CASE WHEN typeof({a}actual_cost_usd) IN ('integer', 'real') THEN {a}actual_cost_usd "
        f"ELSE {num_sql(a + 'estimated_cost_usd')} END)"
    )


def _tokens(alias: str = "") -> str:
    a = f"{alias}." if alias else ""
    return f"({num_sql(a + 'input_tokens')} + {num_sql(a + 'output_tokens')})"


_NUMBERS = (
    "session_count",
    "total_input",
    "total_output",
    "total_cost",
    "total_tokens",
    "estimated_cost_usd",
    "cost",
    "sessions",
    "messages",
    "tokens",
    "api_calls",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
)


class StatsMixin(_Core):
    def _stat_rows(self, sql: str, params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
        return [clean_row(r, _NUMBERS) for r in read_rows(self._conn(), sql, params)]

    def usage_by_model(self) -> list[dict[str, Any]]:
        """Total tokens and cost by model (the design document's query)."""
        return self._stat_rows(
            f"SELECT model, COUNT(*) AS session_count, {sum_sql('input_tokens')} AS total_input, "
            f"{sum_sql('output_tokens')} AS total_output, "
            f"{sum_sql('estimated_cost_usd', False)} AS total_cost "
            "FROM sessions WHERE model IS NOT NULL GROUP BY model ORDER BY total_cost DESC"
        )

    def top_sessions(self, limit: int = 10) -> list[dict[str, Any]]:
        """Sessions with the highest token usage (the design document's query)."""
        return self._stat_rows(
            f"SELECT id, title, model, {_tokens()} AS total_tokens, estimated_cost_usd "
            "FROM sessions ORDER BY total_tokens DESC LIMIT ?",
            (limit,),
        )

    def costliest_sessions(self, limit: int = 10) -> list[dict[str, Any]]:
        return self._stat_rows(
            f"SELECT id, title, source, model, {_cost()} AS cost, "
            f"{_tokens()} AS total_tokens FROM sessions ORDER BY cost DESC, id LIMIT ?",
            (limit,),
        )

    def sessions_by_source(self) -> list[dict[str, Any]]:
        return self._stat_rows(
            f"SELECT source, COUNT(*) AS sessions, COALESCE({sum_sql('message_count')}, 0) AS messages, "
            f"CAST(TOTAL({_tokens()}) AS INTEGER) AS tokens, "
            f"TOTAL({num_sql('estimated_cost_usd')}) AS cost FROM sessions "
            "GROUP BY source ORDER BY sessions DESC"
        )

    def usage_by_model_detailed(self) -> list[dict[str, Any]]:
        """Per-model usage from `session_model_usage` (mid-session model switches attributed right)."""
        if "session_model_usage" not in self._columns:
            return []
        return self._stat_rows(
            f"SELECT model, billing_provider, COUNT(DISTINCT session_id) AS sessions, "
            f"{sum_sql('api_call_count')} AS api_calls, {sum_sql('input_tokens')} AS input_tokens, "
            f"{sum_sql('output_tokens')} AS output_tokens, "
            f"{sum_sql('cache_read_tokens')} AS cache_read_tokens, "
            f"{sum_sql('estimated_cost_usd', False)} AS cost "
            "FROM session_model_usage GROUP BY model, billing_provider ORDER BY cost DESC, input_tokens DESC"
        )

    def activity_by_day(self, days: int | None = None, now: float | None = None) -> list[dict[str, Any]]:
        """Sessions started and messages written per UTC day, oldest first (rows whose date is
        unknown — text, negative, past year 3000 — are left out)."""
        since = None if days is None else (now or time.time()) - days * 86400
        where_s = "WHERE started_at >= ?" if since is not None else ""
        where_m = "WHERE timestamp >= ?" if since is not None else ""
        p: tuple[Any, ...] = (since,) if since is not None else ()
        sess = dict(
            read_tuples(
                self._conn(),
                f"SELECT date({ts_sql('started_at')}, 'unixepoch') AS d, COUNT(*) FROM sessions "
                f"{where_s} GROUP BY d",
                p,
            )
        )
        msgs = dict(
            read_tuples(
                self._conn(),
                f"SELECT date({ts_sql('timestamp')}, 'unixepoch') AS d, COUNT(*) FROM messages "
                f"{where_m} GROUP BY d",
                p,
            )
        )
        return [
            {"day": d, "sessions": sess.get(d, 0), "messages": msgs.get(d, 0)}
            for d in sorted(k for k in set(sess) | set(msgs) if isinstance(k, str))
        ]

    def costliest_chains(self, limit: int = 10) -> list[dict[str, Any]]:
        """Whole lineages (root and every descendant) ranked by summed cost."""
        return self._stat_rows(
            f"""WITH RECURSIVE tree(root, id) AS (
                   SELECT id, id FROM sessions WHERE parent_session_id IS NULL
                   UNION ALL
                   SELECT t.root, s.id FROM sessions s JOIN tree t ON s.parent_session_id = t.id)
               SELECT t.root AS root_id, r.title AS title, COUNT(*) AS sessions,
                      CAST(TOTAL({num_sql("s.message_count")}) AS INTEGER) AS messages,
                      CAST(TOTAL({_tokens("s")}) AS INTEGER) AS tokens,
                      TOTAL({_cost("s")}) AS cost
               FROM tree t JOIN sessions s ON s.id = t.id JOIN sessions r ON r.id = t.root
               GROUP BY t.root HAVING COUNT(*) > 1 ORDER BY cost DESC, tokens DESC LIMIT ?""",
            (limit,),
        )

    def totals(self) -> dict[str, Any]:
        rows = self._stat_rows(
            f"SELECT COUNT(*) AS sessions, CAST(TOTAL({num_sql('message_count')}) AS INTEGER) AS messages, "
            f"CAST(TOTAL({num_sql('input_tokens')}) AS INTEGER) AS input_tokens, "
            f"CAST(TOTAL({num_sql('output_tokens')}) AS INTEGER) AS output_tokens, "
            f"TOTAL({num_sql('estimated_cost_usd')}) AS cost FROM sessions"
        )
        return rows[0] if rows else {}
