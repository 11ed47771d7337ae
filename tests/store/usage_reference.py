"""A second, independent implementation of the usage model (docs/store-api.md, "Usage") for the
tests: the rows read with plain SQL, the residuals and the attribution rule done in Python
with `zoneinfo`, period by period. The store's answers must equal these sums."""

from __future__ import annotations

import datetime as dt
import math
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

import apsw
import pytest

if TYPE_CHECKING:
    from hermes_tui.state.usage_model import UsageFigures, UsageReport

COUNTS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens")
FIELDS = (*COUNTS, "api_calls", "actual_cost_usd", "estimated_cost_usd")
EPS = 1e-9


class Clock:
    """The time a test's store stamps on what it writes (`db.clock = clock.time`: a session's
    start and end, a usage row's first and last call); the test sets `now` before each write."""

    def __init__(self, now: float = 1_700_000_000.0) -> None:
        self.now = now

    def time(self) -> float:
        return self.now


@dataclass
class Event:
    sid: str
    groups: dict[str, str]  # model, source, provider, task
    t0: float
    t1: float
    values: dict[str, float]  # FIELDS


@dataclass
class Cell:
    values: dict[str, float] = field(default_factory=lambda: dict.fromkeys(FIELDS, 0))
    sessions: set[str] = field(default_factory=set)


def _num(v: Any) -> float:
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) else 0


def _date(v: Any) -> float | None:
    return v if isinstance(v, (int, float)) and 0 <= v <= 32503680000 else None


def read_events(path: Path) -> list[Event]:
    """Every usage row, and every session's counters beyond its rows' sums (never below 0)."""
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}

        def rows_of(table: str) -> list[dict[str, Any]]:
            names = [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]
            sql = f"SELECT {', '.join(chr(34) + n + chr(34) for n in names)} FROM {table}"
            return [dict(zip(names, row, strict=True)) for row in conn.execute(sql)]

        scols = {r[1] for r in conn.execute("PRAGMA table_info(sessions)")}
        sessions = {d["id"]: d for d in rows_of("sessions")}
        rows = rows_of("session_model_usage") if "session_model_usage" in tables else []
        newest = dict(
            conn.execute("SELECT session_id, MAX(timestamp) FROM messages GROUP BY session_id").fetchall()
        )
    finally:
        conn.close()
    events = []
    sums: dict[str, dict[str, float]] = defaultdict(lambda: dict.fromkeys(FIELDS, 0))
    last_seen: dict[str, float] = {}
    for r in rows:
        s = sessions.get(r["session_id"], {})
        vals = {c: _num(r[c]) for c in COUNTS}
        vals["api_calls"] = _num(r["api_call_count"])
        act, est = _num(r["actual_cost_usd"]), _num(r["estimated_cost_usd"])
        known = act != 0 or r.get("cost_status") == "actual"
        vals["actual_cost_usd"], vals["estimated_cost_usd"] = (act, 0) if known else (0, est)
        for c in FIELDS:
            sums[r["session_id"]][c] += {"actual_cost_usd": act, "estimated_cost_usd": est}.get(c, vals[c])
        t0 = _date(r.get("first_seen"))
        t0 = t0 if t0 is not None else _date(s.get("started_at"))
        t1 = _date(r.get("last_seen"))
        if t1 is not None:
            last_seen[r["session_id"]] = max(last_seen.get(r["session_id"], t1), t1)
        groups = {
            "model": r["model"],
            "source": s.get("source"),
            "provider": r.get("billing_provider") or "",
            "task": r.get("task") or "",
        }
        if t0 is not None:
            events.append(Event(r["session_id"], groups, t0, max(t0, t1 if t1 is not None else t0), vals))
    for sid, s in sessions.items():
        own = {c: _num(s.get(c)) for c in COUNTS}
        own["api_calls"] = _num(s.get("api_call_count"))
        own["actual_cost_usd"] = _num(s.get("actual_cost_usd"))
        own["estimated_cost_usd"] = _num(s.get("estimated_cost_usd"))
        used = sums.get(sid, dict.fromkeys(FIELDS, 0))
        res = {c: max(0, own[c] - used[c]) for c in FIELDS}
        for c in ("actual_cost_usd", "estimated_cost_usd"):
            res[c] = own[c] - used[c] if own[c] - used[c] > EPS else 0
        if not any(res.values()):
            continue
        had_rows = sid in sums
        known = res["actual_cost_usd"] > 0 or (
            not had_rows
            and isinstance(s.get("actual_cost_usd"), (int, float))
            and s.get("cost_status") == "actual"
        )
        if not known:
            res["actual_cost_usd"] = 0
        else:
            res["estimated_cost_usd"] = 0
        t0 = _date(s.get("started_at"))
        if t0 is None:
            continue
        end = _date(s.get("ended_at"))
        if end is None:
            later = [
                v
                for v in (
                    _date(s.get("last_activity_at")) if "last_activity_at" in scols else None,
                    last_seen.get(sid),
                    _date(newest.get(sid)),
                )
                if v is not None
            ]
            end = max(later) if later else t0
        groups = {
            "model": s.get("model") or "unknown",
            "source": s.get("source"),
            "provider": s.get("billing_provider") or "",
            "task": "",
        }
        events.append(Event(sid, groups, t0, max(t0, end), res))
    return events


def periods(since: float, until: float, by: str, tz: str) -> list[tuple[str, float, float]]:
    """(label, lo, hi) of each local period over [since, until), clipped to it."""
    zone = ZoneInfo(tz)
    day = dt.datetime.fromtimestamp(since, zone).date()
    if by == "week":
        day -= dt.timedelta(days=day.weekday())
    elif by == "month":
        day = day.replace(day=1)
    out = []
    while True:
        if by == "day":
            nxt, label = day + dt.timedelta(days=1), day.isoformat()
        elif by == "week":
            y, w, _ = day.isocalendar()
            nxt, label = day + dt.timedelta(days=7), f"{y}-W{w:02d}"
        else:
            nxt = dt.date(day.year + (day.month == 12), day.month % 12 + 1, 1)
            label = f"{day.year:04d}-{day.month:02d}"
        lo = dt.datetime(day.year, day.month, day.day, tzinfo=zone).timestamp()
        hi = dt.datetime(nxt.year, nxt.month, nxt.day, tzinfo=zone).timestamp()
        out.append((label, max(lo, since), min(hi, until)))
        if hi >= until:
            return out
        day = nxt


def split(ev: Event, spans: list[tuple[str, float, float]]) -> list[tuple[str, dict[str, float]]]:
    """The event's part in each period from the one holding its start to the one holding its
    end (inside the range): counts by cumulative truncation, costs as fractions."""
    since, until = spans[0][1], spans[-1][2]
    if not (ev.t0 < until and (ev.t1 > since or ev.t0 >= since)):
        return []

    def where(t: float) -> int:
        return next(
            (i for i, (_l, lo, hi) in enumerate(spans) if lo <= t < hi), -1 if t < since else len(spans)
        )

    k0, k1 = max(where(ev.t0), 0), min(where(ev.t1), len(spans) - 1)
    out = []
    for label, lo, hi in spans[k0 : k1 + 1]:
        if ev.t1 == ev.t0:
            out.append((label, dict(ev.values)))
            continue

        def frac(x: float) -> float:
            return (min(max(x, ev.t0), ev.t1) - ev.t0) / (ev.t1 - ev.t0)

        f0, f1 = frac(lo), frac(hi)
        part = {c: math.floor(ev.values[c] * f1) - math.floor(ev.values[c] * f0) for c in FIELDS[:6]}
        part |= {c: ev.values[c] * f1 - ev.values[c] * f0 for c in FIELDS[6:]}
        out.append((label, part))
    return out


def expected(
    path: Path | list[Path], by: str, group: str | None, since: float, until: float, tz: str
) -> dict[str, Any]:
    """{"cells": {(label, g): Cell}, "periods": {label: Cell}, "groups": {g: Cell}, "total": Cell}
    (`path` a list: several stores, `group` "profile" then names them by index)."""
    spans = periods(since, until, by, tz)
    out: dict[str, Any] = {
        "cells": defaultdict(Cell),
        "periods": defaultdict(Cell),
        "groups": defaultdict(Cell),
        "total": Cell(),
    }
    paths = path if isinstance(path, list) else [path]
    for n, p in enumerate(paths):
        for ev in read_events(p):
            g = "" if group is None else (str(n) if group == "profile" else ev.groups[group])
            for label, part in split(ev, spans):
                for cell in (out["cells"][(label, g)], out["periods"][label], out["groups"][g], out["total"]):
                    for c in FIELDS:
                        cell.values[c] += part[c]
                    cell.sessions.add(f"{n}:{ev.sid}")
    return out


def figures(cell: Cell) -> dict[str, Any]:
    v = cell.values
    return {
        "input_tokens": v["input_tokens"],
        "output_tokens": v["output_tokens"],
        "cache_read_tokens": v["cache_read_tokens"],
        "cache_write_tokens": v["cache_write_tokens"],
        "reasoning_tokens": v["reasoning_tokens"],
        "api_calls": v["api_calls"],
        "actual_cost_usd": pytest.approx(v["actual_cost_usd"], rel=1e-9, abs=1e-12),
        "estimated_cost_usd": pytest.approx(v["estimated_cost_usd"], rel=1e-9, abs=1e-12),
        "sessions": len(cell.sessions),
    }


def as_plain(f: UsageFigures) -> dict[str, Any]:
    return {
        k: getattr(f, k)
        for k in (*FIELDS[:5], "api_calls", "actual_cost_usd", "estimated_cost_usd", "sessions")
    }


def assert_matches(
    report: UsageReport, paths: Path | list[Path], group_names: dict[str, str] | None = None
) -> None:
    """Every cell, period, group and the total of `report` equal the reference's sums."""
    want = expected(paths, report.by, report.group, report.since, report.until, report.tz)
    labels = {p.index: p.label for p in report.periods}
    rename = group_names or {}
    got_cells = {(labels[k], rename.get(g, g)): as_plain(f) for (k, g), f in report.cells.items()}
    want_cells = {key: figures(c) for key, c in want["cells"].items()}
    assert got_cells == want_cells
    assert {labels[k]: as_plain(f) for k, f in report.period_totals.items()} == {
        label: figures(c) for label, c in want["periods"].items()
    }
    assert {rename.get(g, g): as_plain(f) for g, f in report.groups.items()} == {
        g: figures(c) for g, c in want["groups"].items()
    }
    assert as_plain(report.total) == figures(want["total"])


def assert_same_report(a: UsageReport, b: UsageReport) -> None:
    """Two reports' every figure (e.g. the rollup's and the statement's): periods, counts and
    sessions exactly, costs to float rounding."""
    assert a.periods == b.periods
    for got, want in (
        (a.cells, b.cells),
        (a.period_totals, b.period_totals),
        (a.groups, b.groups),
        ({0: a.total}, {0: b.total}),
    ):
        assert got.keys() == want.keys()
        for k in got:
            x, y = as_plain(got[k]), as_plain(want[k])
            for c in ("actual_cost_usd", "estimated_cost_usd"):
                assert x.pop(c) == pytest.approx(y.pop(c), rel=1e-9, abs=1e-12)
            assert x == y, k


def by_session(path: Path, since: float, until: float, tz: str) -> dict[str, Cell]:
    """Each session's usage inside `[since, until)` (its parts in the range's days), for the
    costliest sessions: every session with a part there, at zero too."""
    spans = periods(since, until, "day", tz)
    out: dict[str, Cell] = defaultdict(Cell)
    for ev in read_events(path):
        for _label, part in split(ev, spans):
            cell = out[ev.sid]
            for c in FIELDS:
                cell.values[c] += part[c]
            cell.sessions.add(ev.sid)
    return dict(out)


def assert_costliest(
    found: list[Any], path: Path, since: float, until: float, tz: str, offset: int, exact: bool = True
) -> None:
    """`usage_sessions`' answer against `by_session`: each session's figures equal its sums,
    the list is ordered by cost, then tokens, then id, and holds the sessions of its place in
    that order (`offset` of them before it). (Costs a test writes are sums of binary fractions:
    their sums are the same in any order, so ties are ties here too; `exact` False, for costs a
    writer chose: the order by cost to float rounding, the number of sessions.)"""
    want = by_session(path, since, until, tz)
    ranked = sorted(
        want,
        key=lambda s: (
            -(want[s].values["actual_cost_usd"] + want[s].values["estimated_cost_usd"]),
            -sum(want[s].values[c] for c in COUNTS),
            s,
        ),
    )
    for row in found:
        assert as_plain(row.figures) == figures(want[row.session_id]), row.session_id
    if exact:
        assert [r.session_id for r in found] == ranked[offset : offset + len(found)]
    else:
        costs = [r.figures.cost_usd for r in found]
        assert all(a >= b - 1e-9 for a, b in zip(costs, costs[1:], strict=False))
    assert len(found) == len(ranked[offset : offset + len(found)])
