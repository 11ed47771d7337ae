"""Usage over time (`UsageMixin`): tokens and cost per day, week or month, per model, source,
provider or task, the costliest sessions of a range and a budget (the accounting check,
on the same connection and column helpers: `usage_check.py`).

**What counts.** Every row of `session_model_usage` (one per session, model, billing route and
task: the writer adds each API call's delta to it and keeps `first_seen`/`last_seen`), plus, per
session, what its own counters hold beyond the sum of its usage rows (column by column, never
below zero: `hermes insights`' reconciliation, so sessions written before the table, or by
`absolute=True` totals, are counted once). A file without the table counts the sessions'
counters alone. Archived, hidden and child sessions count like any other: cost is cost.

**The attribution rule** (the same for every figure, series, total, session and budget): a
usage row is spread evenly over the time from its `first_seen` to its `last_seen` (missing:
the session's start; a residual runs from the session's start to its end, else its last
message or activity), and each period gets the share of the row that falls inside it. Counts
are split by cumulative truncation — period k gets ``floor(n·F(hi_k)) − floor(n·F(lo_k))``,
F the fraction of the row's span before a time — so the parts are whole numbers that add up
to the row exactly (F is 0 at the start and exactly 1 at the end). A row inside one period
(almost all) goes to it whole. Costs split the same way, as fractions.

A report is answered from the day rollup (`usage_rollup`: every row split at local midnights
and summed per day and key by one statement, brought up to date after a commit by the sessions
that changed, `usage_sync`), its partial first and last days by one statement each; a short
range, or a long one right after a commit the rollup cannot follow, by one statement over the
range. The costliest sessions are chosen from the same rollup when one is
kept (`usage_rollup.candidates`) and ordered by the statement restricted to them; without
one, the statement over the range. The other answers are one statement per store (a grouped aggregate
over the two tables; messages are read only for a residual of a session with no end), so
nothing needs an index of ours: the file of hermes-agent 0.19.0 is read as it is.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import Any, cast

import apsw

from .errors import InvalidArgument
from .text import TS_MAX, ts_sql
from .usage_model import (
    GROUPS,
    BudgetStatus,
    UsageFigures,
    UsageReport,
    UsageSession,
    add_all,
    make_budget,
)
from .usage_model import (
    ZERO as _ZERO,
)
from .usage_rollup import DayCell, DayRollup, Key, candidates, json_ids
from .usage_sql import (
    COLUMNS,
    RESIDUAL_KEEP,
    SUMS,
    TOKENS,
    UsageRange,
    UsageSqlMixin,
    roomy,
)
from .usage_sync import TRACK, TRACK_MAX, Contribution, Print, RollupSync, contributions, replace_session
from .usage_time import (
    Period,
    TzLike,
    When,
    budget_range,
    local_date,
    midnight,
    next_start,
    period_start,
    resolve_tz,
    spans,
    to_ts,
    tz_name,
    zone_and_now,
)

#: A report over more days than this, with local midnights for ends, builds the day rollup when
#: none holds (a shorter one — a week, a month, a budget — is cheaper as one statement).
_ROLLUP_MIN_DAYS = 31
#: The most days the rollup holds (30 years; `_build_rollup`).
_ROLLUP_MAX_DAYS = 10_958


def _figures(row: dict[str, Any]) -> UsageFigures:
    i, o, cr, cw, rs, calls = (int(row[c] or 0) for c in SUMS[:6])
    return UsageFigures(
        i, o, cr, cw, rs, calls, float(row["act"] or 0.0), float(row["est"] or 0.0), int(row["sessions"] or 0)
    )


_AGG = ", ".join(f"TOTAL({c}) AS {c}" for c in SUMS) + ", COUNT(DISTINCT sid) AS sessions"
_NO_SUMS = ", ".join(f"0 AS {c}" for c in SUMS)


class UsageMixin(UsageSqlMixin):
    #: The day rollup (`usage_rollup`) of the last zone asked, while nobody committed.
    _usage_rollup: DayRollup | None = None
    #: The usage connection and its version at the previous `usage_report` (`_rollup_for`).
    _usage_seen: tuple[Any, tuple[int, int]] | None = None

    # ------------------------------------------------------------------ ranges
    def usage_bounds(self) -> tuple[float, float] | None:
        """The extent an open range reaches: the earliest session start or usage row, and the
        latest session start or usage row's `last_seen` (None: nothing dated). The sessions'
        by the writer's `started_at` index; the rows by one scan of their table."""
        dated = f"started_at BETWEEN 0 AND {TS_MAX}"
        parts = [
            f"SELECT (SELECT MIN(started_at) FROM sessions WHERE {dated}) AS lo, "
            f"(SELECT MAX(started_at) FROM sessions WHERE {dated}) AS hi"
        ]
        if self._has_usage_table() and self.has_column("session_model_usage", "first_seen"):
            first, last = ts_sql("first_seen"), ts_sql("last_seen")
            parts.append(f"SELECT MIN({first}), MAX(COALESCE({last}, {first})) FROM session_model_usage")
        rows = self._read(" UNION ALL ".join(parts))
        los = [r["lo"] for r in rows if r["lo"] is not None]
        his = [r["hi"] for r in rows if r["hi"] is not None]
        if not los:
            return None
        return float(min(los)), float(max(his or los))

    def _range(
        self,
        since: When,
        until: When,
        by: Period,
        tz: Any,
        now: float | None,
        bounds: tuple[float, float] | None = None,
    ) -> UsageRange:
        """`[since, until)` as Unix times; None ends reach the period holding the earliest usage
        and the one holding the later of now and the latest usage (`bounds`, else this store's)."""
        lo, hi = to_ts(since, tz), to_ts(until, tz)
        if lo is None or hi is None:
            b = bounds if bounds is not None else self.usage_bounds()
            now = time.time() if now is None else now
            if lo is None:
                first = b[0] if b else min(now, hi if hi is not None else now)
                lo = midnight(period_start(local_date(first, tz), by), tz)
            if hi is None:
                last = max(now, b[1]) if b else now
                hi = midnight(next_start(period_start(local_date(last, tz), by), by), tz)
        return UsageRange(lo, hi, spans(lo, hi, by, tz) if hi > lo else [])

    # ------------------------------------------------------------------ the series
    def usage_report(
        self,
        by: Period = "day",
        group: str | None = None,
        since: When = None,
        until: When = None,
        tz: TzLike = None,
        now: float | None = None,
        *,
        bounds: tuple[float, float] | None = None,
    ) -> UsageReport:
        """Usage per `by` period ("day", "week" from Monday, "month") of `tz` (a zone name or
        tzinfo; None: the local zone) over `[since, until)` (Unix times, datetimes, or dates =
        their local midnight; None: from the first usage / up to now or the last usage), stacked
        by `group` ("model", "source", "provider", "task" or None). `bounds` overrides the data
        extent used for None ends (a federation passes every store's)."""
        zone = resolve_tz(tz)
        rng = self._range(since, until, by, zone, now, bounds)
        if not rng.spans:
            return UsageReport(by, group, tz_name(zone), rng.since, rng.until, [], {}, {}, {}, UsageFigures())
        if group not in (None, *GROUPS):
            raise InvalidArgument(f"group must be one of {', '.join(GROUPS)} or None, not {group!r}")
        with self._usage_lock():
            a, b = _midnight_after(rng.since, zone), midnight(local_date(rng.until, zone), zone)
            roll = self._rollup_for(rng, a, b, zone, now) if a < b else None
            if roll is None:
                return self._report_sql(by, group, zone, rng)
            # the parts before the first and after the last local midnight: each inside one period
            edges = []
            if rng.since < a:
                edges.append((0, self._key_cells(UsageRange(rng.since, a, [replace(rng.spans[0], hi=a)]))))
            if b < rng.until:
                tail = UsageRange(b, rng.until, [replace(rng.spans[-1], lo=b)])
                edges.append((len(rng.spans) - 1, self._key_cells(tail, touch=True)))
            cells, per, groups, total = roll.report(rng.spans, group, (a, b), edges)
            return UsageReport(
                by, group, tz_name(zone), rng.since, rng.until, rng.spans, cells, per, groups, total
            )

    def _rollup_for(
        self, rng: UsageRange, a: float, b: float, zone: Any, now: float | None
    ) -> DayRollup | None:
        """The day rollup that answers the days `[a, b)` of `rng` (call under `_usage_lock`):
        the one kept, current or brought up to date (`_current_rollup`); else a new one for a
        range of more than `_ROLLUP_MIN_DAYS` days, unless someone committed since the previous
        question; None: answer by one statement.

        Why not rebuild right after a commit the rollup cannot follow: the live Usage screen
        reloads after writes, and while an agent writes every few seconds each rebuild (~2× the
        statement over the whole history) would be thrown away by the next write; the statement
        answers those as before, and the rollup is rebuilt by the first question that follows
        another without a commit."""
        conn = self._usage_conn()
        version = self._version(conn)
        seen, self._usage_seen = self._usage_seen, (conn, version)
        roll = self._usage_rollup
        if self._current_rollup(zone, conn, version) is None:
            if rng.until - rng.since <= (_ROLLUP_MIN_DAYS + 0.5) * 86400:
                return None
            if roll is not None and roll.owner is conn and seen is not None and seen != (conn, version):
                return None  # a commit since the last question: maybe a live reload (see above)
            self._usage_rollup = None  # (the old one's memory is free before the new one is built)
            roll = self._usage_rollup = self._build_rollup(conn, version, zone, now)
        return roll if roll is not None and roll.answers(a, b) else None

    def _current_rollup(
        self, zone: Any, conn: Any = None, version: tuple[int, int] | None = None
    ) -> DayRollup | None:
        """The day rollup kept, if it is `zone`'s and current: nobody committed since it was
        built or brought up to date, or it can be now (`_catch_up`; call under `_usage_lock`)."""
        conn = self._usage_conn() if conn is None else conn
        roll = self._usage_rollup
        if roll is None or roll.owner is not conn or roll.zone != zone:
            return None
        version = self._version(conn) if version is None else version
        return roll if roll.version == version or self._catch_up(roll, conn, version) else None

    def _build_rollup(
        self, conn: apsw.Connection, version: tuple[int, int], zone: Any, now: float | None
    ) -> DayRollup | None:
        """One statement: every usage row and residual split at local midnights, summed per day
        and key, with the sessions of each (`usage_rollup`). Its days run from the one holding
        the first usage to a month past the later of now and the last usage (so an open range
        asked later stays inside), and span at most `_ROLLUP_MAX_DAYS` up to a year past now (a
        date far off, such as a clock's error, is then outside: a range reaching it is one
        statement); None for a store without dated usage."""
        found = self.usage_bounds()
        if found is None:
            return None
        now = time.time() if now is None else now
        last = local_date(min(max(found[1], now), now + 366 * 86400.0), zone) + dt.timedelta(days=7)
        end = next_start(period_start(last, "month"), "month")
        lo = midnight(max(local_date(found[0], zone), end - dt.timedelta(days=_ROLLUP_MAX_DAYS)), zone)
        hi = midnight(end, zone)
        rng = UsageRange(lo, hi, spans(lo, hi, "day", zone))
        days: list[dict[Key, DayCell]] = [{} for _ in rng.spans]
        costs: list[list[tuple[Any, Any]]] = [[] for _ in rng.spans]
        t_min = t_max = None
        # the rollup, the sessions with a residual it reads and what it follows commits with: one
        # state of the file
        with self._snapshot(conn):
            sql, params = self._pieces_sql("key", rng, every=True)
            sql += f"""
                {_KEY_CELLS.format(edge="edge", more=_SESSION_COSTS)}
                UNION ALL
                SELECT -1, NULL, NULL, NULL, NULL, MIN(t0), MAX(t1), 0, 0, 0, 0, 0, 0, NULL, NULL, NULL, NULL
                FROM e"""
            for row in roomy(conn).execute(sql, params):
                if row[0] == -1:
                    t_min, t_max = row[5], row[6]
                else:
                    k = int(cast(int, row[0]))
                    _add_cell(days[k], row)
                    costs[k].append((row[15], row[16]))
            sync = self._sync_state(conn, rng)
        bounds = [sp.lo for sp in rng.spans] + [rng.spans[-1].hi]
        roll = DayRollup(zone, version, bounds, days, _opt(t_min), _opt(t_max), conn, costs)
        roll.sync = sync
        return roll

    # ------------------------------------------------------------------ following commits
    def _sync_state(self, conn: apsw.Connection, rng: UsageRange) -> RollupSync:
        """What a rollup just built (in the same read transaction) needs to follow commits
        (`usage_sync`): the sessions it follows (the latest by start, and those of the latest
        usage rows and messages: where an agent writes next), their columns and parts, the
        rest's fingerprint."""
        smax, umax, mmax = (self._max_rowid(conn, t) for t in ("sessions", "session_model_usage", "messages"))
        latest = [f"SELECT rowid FROM (SELECT rowid FROM sessions ORDER BY started_at DESC LIMIT {TRACK})"]
        if mmax:  # (the sessions of the latest messages: an old session resumed is one of them)
            latest.append(
                "SELECT s.rowid FROM sessions s WHERE s.id IN (SELECT session_id FROM "
                f"(SELECT session_id FROM messages ORDER BY rowid DESC LIMIT {TRACK}))"
            )
        if self._has_usage_table() and self.has_column("session_model_usage", "last_seen"):
            latest.append(
                "SELECT s.rowid FROM sessions s WHERE s.id IN (SELECT session_id FROM session_model_usage "
                f"ORDER BY last_seen DESC LIMIT {TRACK})"
            )
        first = [int(cast(int, r[0])) for r in conn.execute(" UNION ".join(latest))]
        tracked = self._session_ids(conn, first)
        residual = self._residual_rowids()
        sync = RollupSync(
            self._schema_cookie(conn), smax, umax, mmax, frozenset(tracked), tracked, {}, {}, (), rng
        )
        sync.prints = self._prints(conn, tracked)
        sync.urows = frozenset(_usage_rowids(sync.prints.values()))
        sync.texts = None if residual is None else sorted(set(residual).difference(tracked))
        sync.rest = self._rest_print(conn, sync)
        sync.parts = self._contributions(conn, rng, sorted(tracked))
        return sync

    def _catch_up(self, roll: DayRollup, conn: apsw.Connection, version: tuple[int, int]) -> bool:
        """Bring `roll` up to the file's state by the sessions that changed since it was built
        or last brought up (`usage_sync`); False (and it will not try again) when it cannot:
        something changed that it does not follow."""
        sync = cast(RollupSync | None, roll.sync)
        roll.sync = None
        if sync is None:
            return False
        with self._snapshot(conn):
            if self._schema_cookie(conn) != sync.schema or self._rest_print(conn, sync) != sync.rest:
                return False
            tracked = dict(sync.tracked)
            news = [
                int(cast(int, r[0]))
                for r in conn.execute("SELECT rowid FROM sessions WHERE rowid > ?", (sync.smax,))
            ]
            tracked.update(self._session_ids(conn, news))
            if len(tracked) > TRACK_MAX:
                return False
            ids = json.dumps(list(tracked.values()))
            mmax = self._max_rowid(conn, "messages")
            others = "session_id NOT IN (SELECT value FROM json_each(:ids))"
            strays = [f"SELECT 1 FROM messages WHERE rowid > :m AND {others}"]
            if self._has_usage_table():  # (a row added to a session not followed, e.g. an auxiliary call's)
                strays.append(f"SELECT 1 FROM session_model_usage WHERE rowid > :u AND {others}")
            if conn.execute(
                " UNION ALL ".join(strays) + " LIMIT 1", {"m": sync.mmax, "u": sync.umax, "ids": ids}
            ).fetchall():
                return False
            prints = self._prints(conn, tracked)
            if prints.keys() != tracked.keys() or not sync.urows <= _usage_rowids(prints.values()):
                return False  # (a session followed is gone, or a usage row of one: its rowid is free)
            changed = sorted(sid for sid, p in prints.items() if sync.prints.get(sid) != p)
            parts = self._contributions(conn, sync.rng, changed) if changed else {}
        for sid in changed:
            replace_session(roll, sid, sync.parts.get(sid), parts.get(sid))
            sync.parts[sid] = parts.get(sid, Contribution())
        self._follow_residuals(conn, roll.version, version, changed)
        sync.tracked, sync.prints, sync.mmax = tracked, prints, mmax
        roll.version, roll.sync = version, sync
        return True

    def _follow_residuals(
        self, conn: apsw.Connection, before: tuple[int, int], now: tuple[int, int], changed: list[int]
    ) -> None:
        """The sessions with a residual (`_residual_rowids`), kept for the state `before`, made
        those of `now` by the sessions that changed in between (the others' are the same)."""
        kept = self._usage_residuals
        if kept is None or kept[0] is not conn or kept[1] != before or kept[2] is None:
            return
        ids = set(kept[2]).difference(changed)
        if changed:
            where = "WHERE s.rowid IN (SELECT value FROM json_each(:only))"
            sql = f"SELECT rid FROM ({self._grouped_sql(where, residual=True)})"
            ids.update(int(cast(int, r[0])) for r in conn.execute(sql, {"only": json.dumps(changed)}))
        self._usage_residuals = (conn, now, sorted(ids) if len(ids) <= RESIDUAL_KEEP else None)

    @contextmanager
    def _snapshot(self, conn: apsw.Connection) -> Iterator[None]:
        """The statements inside read one state of the file: a read transaction, begun by its
        first read (nothing is written), unless one is open already; `_usage_snap` is the
        version from before it began (`_residual_rowids`)."""
        if conn.in_transaction:
            yield
            return
        self.__dict__["_usage_snap"] = self._version(conn)
        conn.execute("BEGIN")
        try:
            conn.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
            yield
        finally:
            self.__dict__["_usage_snap"] = None
            conn.execute("COMMIT")

    def _max_rowid(self, conn: apsw.Connection, table: str) -> int:
        if not self.columns(table):
            return 0
        return int(cast(int, conn.execute(f"SELECT COALESCE(MAX(rowid), 0) FROM {table}").fetchall()[0][0]))

    def _schema_cookie(self, conn: apsw.Connection) -> int:
        """`PRAGMA schema_version`: changes with any change of the file's schema."""
        return int(cast(int, conn.execute("PRAGMA schema_version").fetchall()[0][0]))

    def _session_ids(self, conn: apsw.Connection, rowids: list[int]) -> dict[int, str]:
        sql = "SELECT rowid, id FROM sessions WHERE rowid IN (SELECT value FROM json_each(:ids))"
        return {int(cast(int, r)): str(i) for r, i in conn.execute(sql, {"ids": json.dumps(rowids)})}

    def _print_columns(self) -> tuple[list[str], list[str]]:
        """The columns a session's part depends on: of `sessions` (numbers, then text) beyond
        the counters, and of `session_model_usage`."""
        s_num = [*COLUMNS, "started_at", "ended_at", "last_activity_at", "message_count"]
        s_text = ["id", "source", "model", "billing_provider", "cost_status"]
        u_cols = [*COLUMNS, "first_seen", "last_seen", "cost_status", "model", "billing_provider", "task"]
        return (
            [c for c in [*s_num, *s_text] if self.has_column("sessions", c)],
            [c for c in u_cols if self.has_column("session_model_usage", c)],
        )

    def _prints(self, conn: apsw.Connection, tracked: dict[int, str]) -> dict[int, Print]:
        """Each followed session's `Print`: its columns, its usage rows', its newest message."""
        s_cols, u_cols = self._print_columns()
        ids = json.dumps(list(tracked))
        newest = (
            f"(SELECT MAX(m.timestamp) FROM messages m WHERE m.session_id = s.id "
            f"AND m.timestamp BETWEEN 0 AND {TS_MAX})"
        )
        out: dict[int, Print] = {}
        rows: dict[str, list[Any]] = {}
        if self._has_usage_table():
            sql = (
                f"SELECT u.session_id, u.rowid, {', '.join('u.' + c for c in u_cols)} "
                "FROM session_model_usage u WHERE u.session_id IN (SELECT value FROM json_each(:ids)) "
                "ORDER BY u.rowid"
            )
            for r in conn.execute(sql, {"ids": json.dumps(list(tracked.values()))}):
                rows.setdefault(str(r[0]), []).append(tuple(r[1:]))
        sql = (
            f"SELECT s.rowid, {', '.join('s.' + c for c in s_cols)}, {newest} FROM sessions s "
            "WHERE s.rowid IN (SELECT value FROM json_each(:ids))"
        )
        for r in conn.execute(sql, {"ids": ids}):
            sid = int(cast(int, r[0]))
            out[sid] = (tuple(r[1:]), tuple(rows.get(tracked.get(sid, ""), ())))
        return out

    def _rest_print(self, conn: apsw.Connection, sync: RollupSync) -> tuple[Any, ...]:
        """The fingerprint of the sessions not followed at the build (rowid up to `smax`) and of
        their usage rows (rowid up to `umax`): each number column's sum, the flags the parts
        read, and the residual's key text (hashed: exact, where sums of text are not)."""
        s_cols, u_cols = self._print_columns()
        flags = ["cost_status = 'actual'", "typeof(actual_cost_usd) IN ('integer', 'real')"]
        s_num = [c for c in s_cols if c not in ("id", "source", "model", "billing_provider", "cost_status")]
        s_sums = [f"TOTAL({c})" for c in ["rowid", *s_num]]
        s_sums += [
            f"TOTAL({f})"
            for f, c in zip(flags, ("cost_status", "actual_cost_usd"), strict=True)
            if c in s_cols
        ]
        text = " || ".join(f"quote({c})" for c in ("source", "model", "billing_provider") if c in s_cols)
        # (the sessions and rows followed are mostly the latest: below the first of them no
        # lookup in their list)
        params = {
            "smax": sync.smax,
            "first": json.dumps(sorted(sync.first)),
            "lo": min(sync.first, default=0),
        }
        rest = "rowid <= :smax AND (rowid < :lo OR rowid NOT IN (SELECT value FROM json_each(:first)))"
        row = conn.execute(
            f"SELECT COUNT(*), {', '.join(s_sums)} FROM sessions WHERE {rest}", params
        ).fetchall()
        # the key text matters only for a residual: of the sessions with one (`texts`; one
        # without gains one only by a change of its counters or a usage row: seen above or below)
        if sync.texts is not None:
            rest, params["texts"] = "rowid IN (SELECT value FROM json_each(:texts))", json.dumps(sync.texts)
        keys = conn.execute(f"SELECT group_concat({text}, char(30)) FROM sessions WHERE {rest}", params)
        out: tuple[Any, ...] = (*row[0], hash(keys.fetchall()[0][0]))
        if self._has_usage_table():
            u_num = [c for c in u_cols if c not in ("cost_status", "model", "billing_provider", "task")]
            u_sums = [f"TOTAL({c})" for c in ["rowid", *u_num]]
            u_sums += [
                f"TOTAL({f})"
                for f, c in zip(flags, ("cost_status", "actual_cost_usd"), strict=True)
                if c in u_cols
            ]
            out += tuple(
                conn.execute(
                    f"SELECT COUNT(*), {', '.join(u_sums)} FROM session_model_usage WHERE rowid <= :umax "
                    "AND (rowid < :lo OR rowid NOT IN (SELECT value FROM json_each(:urows)))",
                    {
                        "umax": sync.umax,
                        "urows": json.dumps(sorted(sync.urows)),
                        "lo": min(sync.urows, default=0),
                    },
                ).fetchall()[0]
            )
        return out

    def _contributions(
        self, conn: apsw.Connection, rng: UsageRange, rowids: list[int]
    ) -> dict[int, Contribution]:
        """The parts of sessions `rowids` in the rollup's days `rng` (`usage_sync.Contribution`)."""
        if not rowids:
            return {}
        sql, params = self._pieces_sql("key", rng, every=True, only=rowids)
        sums = ", ".join(f"TOTAL({c})" for c in SUMS)
        sql += f"""
            SELECT sid, k, g, g2, g3, g4, {sums}, MAX(NOT edge), MAX(edge) FROM pc WHERE sid > 0
            GROUP BY sid, k, g, g2, g3, g4
            UNION ALL
            SELECT sid, -1, MIN(t0), MAX(t1), {", ".join(["NULL"] * 12)} FROM e WHERE sid > 0 GROUP BY sid"""
        return contributions(roomy(conn).execute(sql, params).fetchall())

    def _key_cells(self, rng: UsageRange, touch: bool = False) -> dict[Key, DayCell]:
        """The usage of `rng` (one period) per rollup key, as a `DayCell` (call under
        `_usage_lock`): an end of a report answered from the day rollup."""
        sql, params = self._pieces_sql("key", rng, touch=touch)
        out: dict[Key, DayCell] = {}
        for row in roomy(self._usage_conn()).execute(f"{sql} {_KEY_CELLS.format(edge='0', more='')}", params):
            _add_cell(out, row)
        return out

    def _report_sql(self, by: Period, group: str | None, zone: Any, rng: UsageRange) -> UsageReport:
        """`usage_report` as one statement (a range the day rollup does not answer)."""
        sql, params = self._pieces_sql(group, rng)
        # Sums add up: the periods' and the groups' are those of the cells. Sessions do not (a
        # session can use two models, or span two days): each level counts its own.
        levels = [f"SELECT 0 AS lvl, k, g, {_AGG} FROM pc GROUP BY k, g"]
        if group is not None:
            levels += [
                f"SELECT 1, k, NULL, {_NO_SUMS}, COUNT(DISTINCT sid) FROM pc GROUP BY k",
                f"SELECT 2, NULL, g, {_NO_SUMS}, COUNT(DISTINCT sid) FROM pc GROUP BY g",
            ]
        levels.append(f"SELECT 3, NULL, NULL, {_NO_SUMS}, COUNT(DISTINCT sid) FROM pc")
        sql += "\n" + " UNION ALL ".join(levels)
        cells: dict[tuple[int, str], UsageFigures] = {}
        sessions: dict[tuple[int, Any], int] = {}
        for row in self._read(sql, params):
            lvl, g = row["lvl"], "" if row["g"] is None else str(row["g"])
            if lvl == 0:
                cells[(int(row["k"]), g)] = _figures(row)
            else:
                sessions[(lvl, row["k"] if lvl == 1 else g)] = int(row["sessions"] or 0)
        per: dict[int, UsageFigures] = {}
        groups: dict[str, UsageFigures] = {}
        for (k, g), fig in cells.items():
            per[k] = per.get(k, _ZERO) + fig
            groups[g] = groups.get(g, _ZERO) + fig
        if group is None:  # one group: a period's cell is the period
            per = {k: fig for (k, _g), fig in cells.items()}
        else:
            per = {k: replace(f, sessions=sessions.get((1, k), 0)) for k, f in per.items()}
            groups = {g: replace(f, sessions=sessions.get((2, g), 0)) for g, f in groups.items()}
        total = replace(add_all(per.values()), sessions=sessions.get((3, ""), 0))
        if group is None:
            groups = {"": total} if cells else {}
        return UsageReport(
            by, group, tz_name(zone), rng.since, rng.until, rng.spans, cells, per, groups, total
        )

    def usage_sessions(
        self,
        since: When = None,
        until: When = None,
        tz: TzLike = None,
        limit: int = 10,
        offset: int = 0,
        now: float | None = None,
    ) -> list[UsageSession]:
        """The costliest sessions of `[since, until)` (their usage inside it, by the same rule),
        cost descending, then tokens, then id. With a day rollup of the zone kept (a report of
        more than a month built it; this question builds none), its days choose the candidates
        and the statement, restricted to them, orders them; else the statement over the range."""
        zone = resolve_tz(tz)
        rng = self._range(since, until, "day", zone, now)
        limit, offset = max(0, int(limit)), max(0, int(offset))
        if not rng.spans:
            return []
        with self._usage_lock():
            a, b = _midnight_after(rng.since, zone), midnight(local_date(rng.until, zone), zone)
            roll = self._current_rollup(zone) if a < b else None
            if roll is None or not roll.answers(a, b):
                return self._sessions_sql(rng, limit, offset)
            costs = roll.session_costs((a, b), rng.since)
            # the parts before the first and after the last local midnight
            if rng.since < a:
                self._add_session_costs(costs, UsageRange(rng.since, a, [replace(rng.spans[0], hi=a)]))
            if b < rng.until:
                self._add_session_costs(costs, UsageRange(b, rng.until, [replace(rng.spans[-1], lo=b)]), True)
            return self._sessions_sql(rng, limit, offset, candidates(costs, limit + offset))

    def _add_session_costs(self, costs: dict[int, float], rng: UsageRange, touch: bool = False) -> None:
        """Each session's cost in `rng` (one period) added to `costs` (its sessions at 0 too)."""
        sql, params = self._pieces_sql("session", rng, touch=touch)
        sql += " SELECT sid, TOTAL(act) + TOTAL(est) FROM pc WHERE sid > 0 GROUP BY sid"
        for sid, cost in roomy(self._usage_conn()).execute(sql, params):
            costs[int(cast(int, sid))] = costs.get(int(cast(int, sid)), 0.0) + float(cast(float, cost))

    def _sessions_sql(
        self, rng: UsageRange, limit: int, offset: int, only: list[int] | None = None
    ) -> list[UsageSession]:
        """`usage_sessions` as one statement over `rng`; `only`: over these sessions (rowids),
        which hold the answer (`usage_rollup.candidates`)."""
        if only is not None and not only or limit == 0:
            return []
        sql, params = self._pieces_sql("session", rng, only=only)
        sql += f"""
            SELECT a.*, s.id AS id, {self._scol("title")} AS title, s.source AS source,
                   {self._scol("model")} AS model, {ts_sql("s.started_at")} AS started_at
            FROM (SELECT sid, {_AGG} FROM pc GROUP BY sid) a JOIN sessions s ON s.rowid = a.sid
            ORDER BY act + est DESC, {TOKENS} DESC, s.id LIMIT :limit OFFSET :offset"""
        params.update(limit=limit, offset=offset)
        return [
            UsageSession(
                str(r["id"]),
                _text(r["title"]),
                _text(r["source"]),
                _text(r["model"]),
                r["started_at"],
                _figures(r),
            )
            for r in self._read(sql, params)
        ]

    def usage_budget(
        self,
        budget_usd: float,
        since: When = None,
        until: When = None,
        tz: TzLike = None,
        now: float | None = None,
    ) -> BudgetStatus:
        """`budget_usd` against the cost of `[since, until)` (default: the current local month
        up to `now`), with the month to date and its pace (see `BudgetStatus`)."""
        zone, now = zone_and_now(tz, now)
        month, lo, hi = budget_range(since, until, zone, now)
        mtd = self.usage_report("month", None, month[1], now, zone, now).total
        spent = (
            mtd if (lo, hi) == (month[1], now) else self.usage_report("month", None, lo, hi, zone, now).total
        )
        return make_budget(budget_usd, lo, hi, spent, month, mtd, now, tz_name(zone))


#: The day rollup's cells: per period and key, the sums and the sessions (`edge`: an SQL
#: expression, true for the zero part of an event ending at its period's start; `more`: more
#: columns).
_KEY_CELLS = f"""SELECT k, g, g2, g3, g4, {", ".join(f"TOTAL({c})" for c in SUMS)},
           json_group_array(DISTINCT sid) FILTER (WHERE NOT {{edge}}),
           json_group_array(DISTINCT sid) FILTER (WHERE {{edge}}){{more}}
    FROM pc GROUP BY k, g, g2, g3, g4"""
#: The build's two more columns: each part's session and cost (parts of a session repeat it).
_SESSION_COSTS = """,
           json_group_array(sid) FILTER (WHERE NOT edge AND sid > 0),
           json_group_array(act + est) FILTER (WHERE NOT edge AND sid > 0)"""


def _add_cell(cells: dict[Key, DayCell], row: Sequence[Any]) -> None:
    """A row of `_KEY_CELLS` into `cells` (two stored values named alike — NULL and '' — are
    one group, as the report names it)."""
    key = cast(Key, tuple("" if v is None else str(v) for v in row[1:5]))
    sids, edge = json_ids(row[13]), json_ids(row[14])
    had = cells.get(key)
    if had is not None:
        sums = tuple(a + float(b) for a, b in zip(had.sums, row[5:13], strict=True))
        sids = tuple(set(had.sids) | set(sids))
        edge = tuple(set(had.edge) | set(edge))
    else:
        sums = tuple(float(v) for v in row[5:13])
    if edge and sids:
        edge = tuple(set(edge).difference(sids))
    cells[key] = DayCell(sums, sids, edge)


def _usage_rowids(prints: Any) -> set[int]:
    """The rowids of the usage rows in `Print`s (each row's first column)."""
    return {int(row[0]) for p in prints for row in p[1]}


def _midnight_after(t: float, zone: Any) -> float:
    """The first local midnight of `zone` at or after `t`."""
    day = local_date(t, zone)
    m = midnight(day, zone)
    return m if m >= t else midnight(day + dt.timedelta(days=1), zone)


def _opt(v: Any) -> float | None:
    return None if v is None else float(v)


def _text(value: Any) -> str | None:
    return None if value is None else str(value)
