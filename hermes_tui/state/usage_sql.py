"""The building blocks of the usage questions (`UsageSqlMixin`): the one usage connection per
store and its lock, the column helpers that read a file of any Hermes, and the statements every
question is made of — the events (a usage row, or a session's residual beyond its rows), their
pieces per period (the attribution rule, `usage.py`), the sessions with a residual.

`usage.py` asks the questions (reports, costliest sessions, budget, the day rollup and how it
follows commits), `usage_check.py` the accounting check; both on these.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

import apsw

from .core import _Core
from .errors import InvalidArgument, StoreError
from .text import TS_MAX, read_rows, ts_sql
from .usage_model import GROUPS
from .usage_time import UsagePeriod

#: The token counters (of a session row and of a usage row).
COUNTERS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens")
#: Cost columns: compared with a tolerance (sums of the same float deltas differ in their last bits).
COSTS = ("act", "est")
EPS = 1e-9
#: At most this many sessions with a residual are remembered by rowid (`_residual_rowids`).
RESIDUAL_KEEP = 20_000
#: The columns behind `SUMS`, in the same order.
COLUMNS = (*COUNTERS, "api_call_count", "actual_cost_usd", "estimated_cost_usd")
#: The event columns summed into `UsageFigures`, in its field order.
SUMS = ("i", "o", "cr", "cw", "rs", "calls", "act", "est")
TOKENS = "(i + o + cr + cw + rs)"
#: While a usage statement runs: SQLite's page cache (KiB, negative as the pragma takes it), which
#: is also its sorter's memory (below it, a sort of 160k pieces spills to a temporary file), and
#: the bytes of the file read through a memory map (pages read in place, not copied: a scan of a
#: file with 10–30 kB prompts in its session rows reads every one's overflow pages).
CACHE_KIB = 65536
MMAP_BYTES = 1 << 34


@dataclass(frozen=True)
class UsageRange:
    since: float
    until: float
    spans: list[UsagePeriod]


def period_case(expr: str, bounds: Sequence[float]) -> str:
    """SQL: the period number of the time `expr` (a column) — i with `bounds[i] <= expr <
    bounds[i + 1]`, -1 before the first bound, `len(bounds) - 1` from the last — as a binary
    search of nested CASEs over the periods' own bounds (about log2(n) comparisons)."""

    def node(lo: int, hi: int) -> str:  # the answer lies in [lo, hi]
        if lo == hi:
            return str(lo)
        mid = (lo + hi + 1) // 2  # expr >= bounds[mid] means the answer is >= mid
        return f"CASE WHEN {expr} < {bounds[mid]!r} THEN {node(lo, mid - 1)} ELSE {node(mid, hi)} END"

    return node(-1, len(bounds) - 1)


def roomy(conn: apsw.Connection) -> apsw.Connection:
    """`conn` with `CACHE_KIB` of page cache and `MMAP_BYTES` of memory map, set on its first
    usage statement and kept (restoring them after each would drop the cache and the map they
    exist for). Neither writes anything: both are this connection's own, and SQLite only reads
    through the map."""
    for pragma, value in (("cache_size", -CACHE_KIB), ("mmap_size", MMAP_BYTES)):
        now = conn.execute(f"PRAGMA {pragma}").fetchall()
        if now and now[0][0] != value:  # (no row: a store without the setting, e.g. in memory)
            conn.execute(f"PRAGMA {pragma} = {value}").fetchall()
    return conn


def gcols(group: str | None) -> str:
    """The group columns of the events and pieces: one (`g`), or the rollup's four."""
    return "g, g2, g3, g4" if group == "key" else "g"


class UsageSqlMixin(_Core):
    """The usage connection, the column helpers and the statements' building blocks."""

    #: `_residual_rowids`' answer: the connection and (data_version, total_changes) it holds for.
    _usage_residuals: tuple[Any, tuple[int, int], list[int] | None] | None = None
    #: The connection every usage statement runs on (`_usage_conn`), and the lock it is used under.
    _usage_connection: apsw.Connection | None = None
    _usage_lock_made = threading.Lock()

    def _usage_lock(self) -> threading.RLock:
        lock = self.__dict__.get("_usage_rlock")
        if lock is None:
            with UsageSqlMixin._usage_lock_made:
                lock = self.__dict__.setdefault("_usage_rlock", threading.RLock())
        return cast(threading.RLock, lock)

    def _usage_conn(self) -> apsw.Connection:
        """The store's usage connection (call under `_usage_lock`): one for every thread, so
        what it remembers between answers (the sessions with a residual, the day rollup, its
        64 MiB page cache) holds for the next question whichever thread asks it — the
        browser asks each on a new worker thread, which has a new connection of its own. Its
        `PRAGMA data_version` changes when any other connection commits. A store in memory
        has only its threads' connections."""
        if str(self.db_path) in ("", ":memory:"):
            return self._conn()
        if self._closed:
            raise StoreError("the store is closed")
        conn = self._usage_connection
        if conn is None:
            conn = self._usage_connection = self._new_connection()
        return conn

    def _read(self, sql: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        with self._usage_lock():
            return read_rows(roomy(self._usage_conn()), sql, params or {})

    def _version(self, conn: apsw.Connection) -> tuple[int, int]:
        """What changes when anyone commits: another connection (`PRAGMA data_version`) or this one."""
        return int(conn.execute("PRAGMA data_version").fetchall()[0][0] or 0), conn.total_changes()

    # ------------------------------------------------------------------ the events
    def _has_usage_table(self) -> bool:
        return {"session_id", "model"} <= self.columns("session_model_usage")

    def _scol(self, name: str) -> str:
        return f"s.{name}" if self.has_column("sessions", name) else "NULL"

    def _ucol(self, name: str) -> str:
        return f"u.{name}" if self.has_column("session_model_usage", name) else "NULL"

    def _known_sql(self) -> str:
        """SQL: usage row `u` records an actual cost (its column is NOT NULL DEFAULT 0, so a
        number that is not 0, or a 0 the row's status calls actual)."""
        if not self.has_column("session_model_usage", "actual_cost_usd"):
            return "0"
        return (
            "(typeof(u.actual_cost_usd) IN ('integer', 'real') "
            f"AND (u.actual_cost_usd <> 0 OR {self._ucol('cost_status')} = 'actual'))"
        )

    def _session_end_sql(self, alias: str) -> str:
        """A session's end (columns `sid, started, ended, active, ul` of `alias`): `ended_at`,
        else the latest of its activity, its usage rows (`ul`) and its newest message (read
        only then), else its start."""
        a = alias
        newest = (
            f"(SELECT MAX(m.timestamp) FROM messages m WHERE m.session_id = {a}.sid "
            f"AND m.timestamp BETWEEN 0 AND {TS_MAX})"
        )
        return (
            f"COALESCE({ts_sql(a + '.ended')}, (SELECT MAX(v) FROM (SELECT {ts_sql(a + '.active')} AS v "
            f"UNION ALL SELECT {a}.ul UNION ALL SELECT {newest})), {a}.started)"
        )

    def _grouped_sql(self, where: str = "", residual: bool = False) -> str:
        """SELECT one row per session: `rid` (its rowid), its counters `s<sum>`, the sums of its
        usage rows `u<sum>` (`un` rows, the last at `ul`). `where` (on `s`) drops sessions
        before their rows are read; `residual` keeps only those whose counters exceed their
        rows' sums (a cost by more than `EPS`: float sums of the same deltas differ in their
        last bits). One pass over the sessions, each with its rows by the writer's
        `session_id` index."""
        s, u = self._scol, self._ucol
        cols = ["s.rowid AS rid"] + [f"{s(c)} AS s{n}" for c, n in zip(COLUMNS, SUMS, strict=True)]
        if not self._has_usage_table():
            cols += ["0 AS un", "NULL AS ul"] + [f"0 AS u{n}" for n in SUMS]
            keep = " OR ".join(
                f"{s(c)} > {EPS if n in COSTS else 0}" for c, n in zip(COLUMNS, SUMS, strict=True)
            )
            where = f"{where} {'AND' if where else 'WHERE'} ({keep})" if residual else where
            return f"SELECT {', '.join(cols)} FROM sessions s {where}"
        sums = {n: f"TOTAL({u(c)})" for c, n in zip(COLUMNS, SUMS, strict=True)}
        cols += ["COUNT(u.session_id) AS un", f"MAX({ts_sql(u('last_seen'))}) AS ul"]
        cols += [f"{v} AS u{n}" for n, v in sums.items()]
        more = " OR ".join(
            f"{s(c)} > {sums[n]}" + (f" + {EPS}" if n in COSTS else "")
            for c, n in zip(COLUMNS, SUMS, strict=True)
        )
        joined = "sessions s LEFT JOIN session_model_usage u ON u.session_id = s.id"
        having = f"HAVING {more}" if residual else ""
        return f"SELECT {', '.join(cols)} FROM {joined} {where} GROUP BY s.id {having}"

    def _per_session_sql(self, where: str = "", residual: bool = False) -> str:
        """`_grouped_sql` with the sessions' other columns: `sid, started, ended, active,
        sstatus, shasact, smodel, sprov, source` (read for the sessions it keeps)."""
        s = self._scol
        extra = [
            "s.id AS sid",
            f"{ts_sql('s.started_at')} AS started",
            f"{s('ended_at')} AS ended",
            f"{s('last_activity_at')} AS active",
            f"{s('cost_status')} AS sstatus",
            f"typeof({s('actual_cost_usd')}) IN ('integer', 'real') AS shasact",
            f"COALESCE({s('model')}, 'unknown') AS smodel",
            f"COALESCE({s('billing_provider')}, '') AS sprov",
            "s.source AS source",
        ]
        inner = self._grouped_sql(where, residual)
        return f"SELECT x.*, {', '.join(extra)} FROM ({inner}) x JOIN sessions s ON s.rowid = x.rid"

    def _residual_rowids(self) -> list[int] | None:
        """The rowids of the sessions whose counters exceed their usage rows' sums (the only
        ones with a residual), kept until any connection commits; None when there are more
        than `RESIDUAL_KEEP` (the statement then finds them itself). Finding them is one
        grouped pass over every session; the answer depends on no range, group or zone."""
        with self._usage_lock():
            conn = self._usage_conn()
            # (inside a read transaction: the version before it began, never a later one that
            # would claim commits its state does not hold)
            snap = self.__dict__.get("_usage_snap")
            version = snap if snap is not None and conn.in_transaction else self._version(conn)
            kept = self._usage_residuals
            if kept is not None and kept[0] is conn and kept[1] == version:
                return kept[2]
            rows = (
                roomy(conn)
                .execute(f"SELECT rid FROM ({self._grouped_sql(residual=True)}) LIMIT {RESIDUAL_KEEP + 1}")
                .fetchall()
            )
            ids = [int(cast(int, r[0])) for r in rows] if len(rows) <= RESIDUAL_KEEP else None
            self._usage_residuals = (conn, version, ids)
            return ids

    def _events_sql(
        self, group: str | None, prefilter: bool = True, only: list[int] | None = None
    ) -> tuple[str, dict[str, Any]]:
        """CTE `ev0(sid, g, t0, t1, i, o, cr, cw, rs, calls, act, est)`: one event per usage row
        of the range and one per session residual; `sid` is the session's rowid (a usage row
        whose session is gone: minus its own rowid), `act` the actual cost where one is
        recorded, `est` the estimate where it is not. Usage rows entirely outside `[:since,
        :until)` are dropped before their session is read.

        Values are read as SQLite reads numbers (never raising: text that is not a number
        counts 0); times must be dates (`ts_sql`), else the session's start stands in.
        `group` "key": four columns `g, g2, g3, g4` (model, source, provider, task: the day
        rollup's key); `prefilter` False keeps every usage row (the rollup's build); `only`:
        the events of these sessions (rowids) alone, read in the same order as without it (the
        usage rows by their rowid: a session's parts are then summed in the same order)."""
        if group not in (None, "session", "key", *GROUPS):
            raise InvalidArgument(f"group must be one of {', '.join(GROUPS)} or None, not {group!r}")
        u = self._ucol
        res = {n: f"MAX(0, r.s{n} - r.u{n})" for n in SUMS}
        for n in COSTS:
            res[n] = f"(CASE WHEN r.s{n} - r.u{n} > {EPS} THEN r.s{n} - r.u{n} ELSE 0 END)"
        r_known = f"({res['act']} > 0 OR (r.un = 0 AND r.shasact AND r.sstatus = 'actual'))"
        g_res = {
            None: "''",
            "session": "r.rid",
            "model": "r.smodel",
            "source": "r.source",
            "provider": "r.sprov",
            "key": "r.smodel, r.source, r.sprov, ''",
        }
        # (the sessions asked for are looked at alone: no pass over every session for residuals)
        ids = self._residual_rowids() if only is None else None
        params: dict[str, Any] = {}
        conds = []
        if ids is not None:
            conds.append("s.rowid IN (SELECT value FROM json_each(:rids))")
            params["rids"] = json.dumps(ids)
        if only is not None:
            conds.append("s.rowid IN (SELECT value FROM json_each(:only))")
            params["only"] = json.dumps(only)
        where = f"WHERE {' AND '.join(conds)}" if conds else ""
        residual = f"""SELECT r.rid, {g_res.get(group, "''")}, r.started, {self._session_end_sql("r")},
                   {", ".join(res[n] for n in SUMS[:6])},
                   CASE WHEN {r_known} THEN {res["act"]} ELSE 0 END,
                   CASE WHEN {r_known} THEN 0 ELSE {res["est"]} END
            FROM ({self._per_session_sql(where, residual=True)}) r"""
        if not self._has_usage_table():
            head = f"ev0(sid, {gcols(group)}, t0, t1, i, o, cr, cw, rs, calls, act, est)"
            return f"{head} AS ({residual})", params
        g_row = {
            None: "''",
            "session": "COALESCE(s.rowid, -u.rowid)",
            "model": "u.model",
            "source": "s.source",
            "provider": f"COALESCE({u('billing_provider')}, '')",
            "task": f"COALESCE({u('task')}, '')",
            "key": f"u.model, s.source, COALESCE({u('billing_provider')}, ''), COALESCE({u('task')}, '')",
        }[group]
        first, last = ts_sql(u("first_seen")), ts_sql(u("last_seen"))
        known = self._known_sql()
        act, est = u("actual_cost_usd"), u("estimated_cost_usd")
        start = ts_sql("s.started_at")
        conds = []
        if prefilter:
            conds.append(
                f"NOT COALESCE({first} < :since AND {last} <= :since AND NOT ({last} = :since AND :touch) "
                f"OR {first} >= :until, 0)"
            )
        if only is not None:  # (rowid IN a sorted set: the rows in rowid order, as the full scan)
            conds.append("""u.rowid IN (SELECT v.rowid FROM session_model_usage v WHERE v.session_id IN
                (SELECT id FROM sessions WHERE rowid IN (SELECT value FROM json_each(:only))))""")
        keep = f"WHERE {' AND '.join(conds)}" if conds else ""
        sql = f"""ev0(sid, {gcols(group)}, t0, t1, i, o, cr, cw, rs, calls, act, est) AS (
                SELECT COALESCE(s.rowid, -u.rowid), {g_row}, COALESCE({first}, {start}), {last},
                       {", ".join(u(c) for c in COLUMNS[:6])},
                       CASE WHEN {known} THEN {act} ELSE 0 END, CASE WHEN {known} THEN 0 ELSE {est} END
                FROM session_model_usage u LEFT JOIN sessions s ON s.id = u.session_id
                {keep}
                UNION ALL
                {residual})"""
        return sql, params

    def _pieces_sql(
        self,
        group: str | None,
        rng: UsageRange,
        *,
        every: bool = False,
        touch: bool = False,
        only: list[int] | None = None,
    ) -> tuple[str, dict[str, Any]]:
        """`WITH ... pc(k, g, sid, i, ..., est)`: each event's part in each period of `rng`. An
        event inside one period of the range goes to it whole; the others are walked period
        by period (`sp`) and split there by the periods' bounds.

        `every` (the day rollup's build): every event is kept in `e` (those outside `rng` too,
        for their earliest start and latest end), parts only inside `rng`, and `pc` has a
        column `edge`: the part is the zero one of an event ending exactly at its period's
        start (see `usage_rollup`). `touch`: an event ending exactly at `rng`'s start is in it
        (with a zero part: the range is the end of a longer one that holds its start). `only`:
        the sessions (rowids) whose events are read (`_events_sql`)."""
        bounds = [sp.lo for sp in rng.spans] + [rng.spans[-1].hi]
        f = {
            x: f"(MIN(MAX((:{b} ->> idx), t0), t1) - t0) / (t1 - t0)"
            for x, b in (("f1", "his"), ("f0", "los"))
        }
        parts = [f"CAST({c} * f1 AS INTEGER) - CAST({c} * f0 AS INTEGER)" for c in SUMS[:6]]
        parts += [f"{c} * f1 - {c} * f0" for c in SUMS[6:]]
        cols = ", ".join(SUMS)
        g = gcols(group)
        whole = "(k0 = k1 AND k0 >= 0 AND k1 <= :last)"
        k0, k1 = period_case("t0", bounds), period_case("t1", bounds)
        events, params = self._events_sql(group, prefilter=not every, only=only)
        inside = "t0 < :until AND (COALESCE(t1, t0) > :since OR t0 >= :since OR :touch AND t1 = :since)"
        walked = "AND k1 >= 0 AND k0 <= :last" if every else ""
        edge = (", 0 AS edge", ", t1 = (:los ->> idx)") if every else ("", "")
        sql = f"""WITH {events},
            e AS MATERIALIZED (
                SELECT sid, {g}, t0, t1, {cols}, {k0} AS k0, {k1} AS k1
                FROM (SELECT sid, {g}, t0, MAX(t0, COALESCE(t1, t0)) AS t1, {cols} FROM ev0
                      WHERE t0 IS NOT NULL {"" if every else "AND " + inside})),
            sp(idx, last, sid, {g}, t0, t1, {cols}) AS (
                SELECT MAX(k0, 0), MIN(k1, :last), sid, {g}, t0, t1, {cols} FROM e
                WHERE NOT {whole} {walked}
                UNION ALL
                SELECT idx + 1, last, sid, {g}, t0, t1, {cols} FROM sp WHERE idx < last),
            pc AS {"NOT MATERIALIZED" if every else "MATERIALIZED"} (
                SELECT k0 AS k, {g}, sid, {cols}{edge[0]} FROM e WHERE {whole}
                UNION ALL
                SELECT idx, {g}, sid, {", ".join(f"{x} AS {c}" for x, c in zip(parts, SUMS, strict=True))}
                       {edge[1]}
                FROM (SELECT *, {f["f1"]} AS f1, {f["f0"]} AS f0 FROM sp))"""
        params |= {
            "touch": int(touch),
            "since": rng.since,
            "until": rng.until,
            "last": len(rng.spans) - 1,
            "los": json.dumps([sp.lo for sp in rng.spans]),
            "his": json.dumps([sp.hi for sp in rng.spans]),
        }
        return sql, params
