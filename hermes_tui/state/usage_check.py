"""The accounting check (`UsageCheckMixin`): the sessions whose usage the figures cannot
price or count — messages but no recorded tokens, usage with no price (`cost_status`
'unknown', or none and no cost), included in a plan — and the models with unpriced usage.

One statement per question, on the usage connection and column helpers of `usage_sql.py`,
over the sessions whose span overlaps the range, as the reports count them.
"""

from __future__ import annotations

from typing import Any

from .errors import InvalidArgument
from .text import num_sql, ts_sql
from .usage_model import CHECK_KINDS, UnpricedModel, UsageCheck
from .usage_sql import COUNTERS, UsageSqlMixin
from .usage_time import TzLike, When, resolve_tz, to_ts


class UsageCheckMixin(UsageSqlMixin):
    # ------------------------------------------------------------------ the accounting check
    def _tokens_sql(self, alias: str) -> str:
        """SQL: the tokens of a row of `sessions` ("s") or `session_model_usage` ("u"), numbers only."""
        table = "sessions" if alias == "s" else "session_model_usage"
        cols = [num_sql(f"{alias}.{c}") for c in COUNTERS if self.has_column(table, c)]
        return f"({' + '.join(cols)})" if cols else "0"

    def _has_tokens_sql(self, alias: str) -> str:
        """SQL: the row records tokens (a counter above 0; cheaper than their sum)."""
        table = "sessions" if alias == "s" else "session_model_usage"
        cols = [f"{alias}.{c} > 0" for c in COUNTERS if self.has_column(table, c)]
        return f"({' OR '.join(cols)})" if cols else "0"

    def _cost_sql(self, alias: str) -> str:
        """SQL: the row records a cost (an estimated or an actual one that is not 0)."""
        table = "sessions" if alias == "s" else "session_model_usage"
        cols = [c for c in ("estimated_cost_usd", "actual_cost_usd") if self.has_column(table, c)]
        return "(" + " OR ".join(f"{num_sql(f'{alias}.{c}')} <> 0" for c in cols) + ")" if cols else "0"

    def _check_sql(self, since: float | None, until: float | None) -> tuple[str, dict[str, Any]]:
        """CTE `ck(sid, t0, no_tokens, unpriced, uncosted, included)`: the sessions the check
        names whose span (start to end) overlaps the range. Candidates come from one scan of
        the sessions and one of the usage rows on cheap conditions; only they are looked into
        further (their rows, replies and span)."""
        status = self._scol("cost_status")
        stok, scost = self._has_tokens_sql("s"), self._cost_sql("s")
        msgs = num_sql(self._scol("message_count"))
        reply = "EXISTS (SELECT 1 FROM messages m WHERE m.session_id = s.id AND m.role = 'assistant')"
        if self._has_usage_table():
            ustatus = self._ucol("cost_status")
            utok, ucost = self._has_tokens_sql("u"), self._cost_sql("u")
            rows = "SELECT 1 FROM session_model_usage u WHERE u.session_id = s.id AND"
            own = {
                "no_tokens": f"NOT {stok} AND {msgs} > 0 AND NOT EXISTS ({rows} {utok}) AND {reply}",
                "unpriced": f"{status} = 'unknown' AND ({stok} OR EXISTS ({rows} {utok}))",
                "uncosted": f"""{status} IS NULL AND {stok} AND NOT {scost}
                                AND NOT EXISTS ({rows} ({ucost} OR {ustatus} = 'included'))""",
                "included": f"{status} = 'included'",
            }
            of_rows = {
                "no_tokens": "0",
                "unpriced": f"{ustatus} = 'unknown' AND {utok}",
                "uncosted": f"{ustatus} IS NULL AND {utok} AND NOT {ucost}",
                "included": f"{ustatus} = 'included'",
            }
            last = (
                f"(SELECT MAX({ts_sql('u.last_seen')}) FROM session_model_usage u WHERE u.session_id = s.id)"
            )
        else:
            own = {
                "no_tokens": f"NOT {stok} AND {msgs} > 0 AND {reply}",
                "unpriced": f"{status} = 'unknown' AND {stok}",
                "uncosted": f"{status} IS NULL AND {stok} AND NOT {scost}",
                "included": f"{status} = 'included'",
            }
            of_rows, last = {}, "NULL"
        # one scan of each table: a row per candidate with its flags (each test a CASE, so a
        # costly one runs only where the cheap ones before it hold)
        parts = [
            "SELECT s.id AS sid, "
            + ", ".join(f"CASE WHEN {c} THEN 1 ELSE 0 END AS {k}" for k, c in own.items())
            + " "
            f"FROM sessions s WHERE {' OR '.join(f'({c})' for c in own.values())}"
        ]
        if of_rows:
            parts.append(
                "SELECT u.session_id, "
                + ", ".join(f"CASE WHEN {c} THEN 1 ELSE 0 END" for c in of_rows.values())
                + " "
                f"FROM session_model_usage u WHERE {' OR '.join(f'({c})' for c in of_rows.values())}"
            )
        flags = ", ".join(f"MAX(f.{k}) AS {k}" for k in CHECK_KINDS)
        sql = f"""WITH fl AS ({" UNION ALL ".join(parts)}),
            ck AS MATERIALIZED (
                SELECT * FROM (
                    SELECT j.*, {self._session_end_sql("j")} AS t1 FROM (
                        SELECT f.sid AS sid, {flags}, {ts_sql("s.started_at")} AS started,
                               {self._scol("ended_at")} AS ended, {self._scol("last_activity_at")} AS active,
                               {last} AS ul
                        FROM fl f JOIN sessions s ON s.id = f.sid GROUP BY f.sid) j)
                WHERE started IS NOT NULL AND started < :until
                      AND (MAX(started, COALESCE(t1, started)) > :since OR started >= :since))"""
        return sql, {"since": -1.0 if since is None else since, "until": 1e300 if until is None else until}

    def usage_check(self, since: When = None, until: When = None, tz: TzLike = None) -> UsageCheck:
        """The accounting check over `[since, until)` (sessions whose span overlaps it; None:
        unbounded): sessions per kind of `CHECK_KINDS` and the models with unpriced usage."""
        zone = resolve_tz(tz)
        sql, params = self._check_sql(to_ts(since, zone), to_ts(until, zone))
        kinds = ", ".join(f"TOTAL({k}) AS {k}" for k in CHECK_KINDS)
        counts_row = self._read(f"{sql} SELECT {kinds} FROM ck", params)
        counts = {k: int(counts_row[0][k] or 0) if counts_row else 0 for k in CHECK_KINDS}
        return UsageCheck(counts, self._unpriced_models(params))

    def _unpriced_models(self, params: dict[str, Any]) -> list[UnpricedModel]:
        """Models and billing providers with usage in the range that has tokens but no price
        (status 'unknown', or no status and no cost): usage rows, and sessions without rows."""
        parts = []
        s = self._scol
        stok, scost, status = self._tokens_sql("s"), self._cost_sql("s"), s("cost_status")
        no_price = f"({status} = 'unknown' OR ({status} IS NULL AND NOT {scost}))"
        has_s = self._has_tokens_sql("s")
        without_rows = ""
        if self._has_usage_table():
            u = self._ucol
            utok, ucost, ustatus = self._tokens_sql("u"), self._cost_sql("u"), u("cost_status")
            started = f"(SELECT {ts_sql('s.started_at')} FROM sessions s WHERE s.id = u.session_id)"
            parts.append(
                f"""SELECT u.model AS model, COALESCE({u("billing_provider")}, '') AS provider,
                       u.session_id AS sid, {utok} AS tok,
                       COALESCE({ts_sql(u("first_seen"))}, {started}) AS t0, {ts_sql(u("last_seen"))} AS t1
                FROM session_model_usage u
                WHERE ({ustatus} = 'unknown' OR ({ustatus} IS NULL AND NOT {ucost}))
                      AND {self._has_tokens_sql("u")}"""
            )
            without_rows = "AND NOT EXISTS (SELECT 1 FROM session_model_usage u WHERE u.session_id = s.id)"
        parts.append(
            f"""SELECT j.model AS model, j.provider AS provider, j.sid AS sid, j.tok AS tok,
                   j.started AS t0, {self._session_end_sql("j")} AS t1
            FROM (SELECT COALESCE({s("model")}, 'unknown') AS model,
                         COALESCE({s("billing_provider")}, '') AS provider, s.id AS sid, {stok} AS tok,
                         {ts_sql("s.started_at")} AS started, {s("ended_at")} AS ended,
                         {s("last_activity_at")} AS active, NULL AS ul
                  FROM sessions s WHERE {no_price} AND {has_s} {without_rows}) j"""
        )
        sql = f"""SELECT model, provider, COUNT(DISTINCT sid) AS sessions,
                   CAST(TOTAL(tok) AS INTEGER) AS tokens
            FROM ({" UNION ALL ".join(parts)})
            WHERE t0 IS NOT NULL AND t0 < :until AND (MAX(t0, COALESCE(t1, t0)) > :since OR t0 >= :since)
            GROUP BY model, provider ORDER BY tokens DESC, model, provider"""
        found = self._read(sql, params)
        return [
            UnpricedModel(
                _text(r["model"]) or "", _text(r["provider"]) or "", int(r["sessions"]), int(r["tokens"])
            )
            for r in found
        ]

    def usage_check_sessions(
        self,
        kind: str,
        since: When = None,
        until: When = None,
        tz: TzLike = None,
        offset: int = 0,
        limit: int = 50,
    ) -> list[str]:
        """The ids behind one kind of the check (newest start first, then id), a page at a time."""
        if kind not in CHECK_KINDS:
            raise InvalidArgument(f"kind must be one of {', '.join(CHECK_KINDS)}, not {kind!r}")
        zone = resolve_tz(tz)
        sql, params = self._check_sql(to_ts(since, zone), to_ts(until, zone))
        params.update(limit=max(0, int(limit)), offset=max(0, int(offset)))
        rows = self._read(
            f"{sql} SELECT sid FROM ck WHERE {kind} ORDER BY started DESC, sid DESC "
            "LIMIT :limit OFFSET :offset",
            params,
        )
        return [str(r["sid"]) for r in rows]


def _text(value: Any) -> str | None:
    return None if value is None else str(value)
