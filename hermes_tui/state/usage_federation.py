"""Usage across profiles (`--all`): each store answers on its own thread (`Federation.map`),
and the answers are added up here, labelled by profile.

Every store is asked for the same range, zone and periods (the data extent for an open end is
every store's together), so their series line up period by period. Sums add up across stores,
and so do sessions (a session belongs to one store). A store that fails is named in `errors`
and its usage is missing from the answer, never the whole answer.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from .db import SessionDB
from .errors import InvalidArgument
from .federation import Federation
from .usage_model import (
    CHECK_KINDS,
    GROUPS,
    ZERO,
    BudgetStatus,
    UnpricedModel,
    UsageCheck,
    UsageFigures,
    UsageReport,
    UsageSession,
    make_budget,
)
from .usage_time import Period, TzLike, When, budget_range, resolve_tz, to_ts, tz_name, zone_and_now


def _data_bounds(fed: Federation, profiles: Iterable[str] | None) -> tuple[float, float] | None:
    found = [b for b in fed.map(SessionDB.usage_bounds, profiles).values.values() if b]
    return (min(b[0] for b in found), max(b[1] for b in found)) if found else None


def _add(into: dict[Any, UsageFigures], key: Any, fig: UsageFigures) -> None:
    into[key] = into.get(key, ZERO) + fig


def federated_usage_report(
    fed: Federation,
    by: Period = "day",
    group: str | None = None,
    since: When = None,
    until: When = None,
    tz: TzLike = None,
    now: float | None = None,
    profiles: Iterable[str] | None = None,
) -> UsageReport:
    """`SessionDB.usage_report` over every open store (or `profiles`), added up; `group` may
    also be "profile" (each store's series is then one group, named by its profile)."""
    if group not in (None, "profile", *GROUPS):
        raise InvalidArgument(f"group must be one of profile, {', '.join(GROUPS)} or None, not {group!r}")
    zone, now = zone_and_now(tz, now)
    names = None if profiles is None else list(profiles)
    bounds = _data_bounds(fed, names) if since is None or until is None else None
    if bounds is None:
        bounds = (now, now)
    store_group = None if group == "profile" else group
    outcome = fed.map(
        lambda db: db.usage_report(by, store_group, since, until, zone, now, bounds=bounds), names
    )
    reports: dict[str, UsageReport] = outcome.values
    if not reports:
        lo, hi = to_ts(since, zone), to_ts(until, zone)
        return UsageReport(
            by, group, tz_name(zone), lo or now, hi or now, [], {}, {}, {}, ZERO, outcome.errors
        )
    first = next(iter(reports.values()))
    cells: dict[tuple[int, str], UsageFigures] = {}
    per: dict[int, UsageFigures] = {}
    groups: dict[str, UsageFigures] = {}
    for profile, rep in reports.items():
        if group == "profile":
            for k, fig in rep.period_totals.items():
                cells[(k, profile)] = fig
            if rep.total != ZERO:
                groups[profile] = rep.total
        else:
            for key, fig in rep.cells.items():
                _add(cells, key, fig)
            for g, fig in rep.groups.items():
                _add(groups, g, fig)
        for k, fig in rep.period_totals.items():
            _add(per, k, fig)
    total = sum((r.total for r in reports.values()), ZERO)
    return UsageReport(
        by,
        group,
        first.tz,
        first.since,
        first.until,
        first.periods,
        cells,
        per,
        groups,
        total,
        outcome.errors,
    )


def federated_usage_sessions(
    fed: Federation,
    since: When = None,
    until: When = None,
    tz: TzLike = None,
    limit: int = 10,
    offset: int = 0,
    now: float | None = None,
    profiles: Iterable[str] | None = None,
) -> tuple[list[UsageSession], dict[str, Any]]:
    """The costliest sessions of the range over every store, each with its `profile` (ties:
    tokens, then profile, then id), and the failed stores' errors."""
    zone, now = zone_and_now(tz, now)
    want = max(0, int(limit)) + max(0, int(offset))
    outcome = fed.map(lambda db: db.usage_sessions(since, until, zone, want, 0, now), profiles)
    rows = [replace(s, profile=p) for p, found in outcome.values.items() for s in found]
    rows.sort(key=lambda s: (-s.figures.cost_usd, -s.figures.total_tokens, s.profile or "", s.session_id))
    return rows[max(0, int(offset)) : want], dict(outcome.errors)


def federated_usage_check(
    fed: Federation,
    since: When = None,
    until: When = None,
    tz: TzLike = None,
    profiles: Iterable[str] | None = None,
) -> UsageCheck:
    """The accounting check over every store: counts added up (and kept per profile in
    `by_profile`), unpriced models merged by model and provider."""
    zone = resolve_tz(tz)
    outcome = fed.map(lambda db: db.usage_check(since, until, zone), profiles)
    checks: dict[str, UsageCheck] = outcome.values
    counts = {k: sum(c.counts.get(k, 0) for c in checks.values()) for k in CHECK_KINDS}
    merged: dict[tuple[str, str], UnpricedModel] = {}
    for check in checks.values():
        for m in check.models:
            was = merged.get((m.model, m.provider))
            merged[(m.model, m.provider)] = (
                m
                if was is None
                else replace(was, sessions=was.sessions + m.sessions, tokens=was.tokens + m.tokens)
            )
    models = sorted(merged.values(), key=lambda m: (-m.tokens, m.model, m.provider))
    by_profile = {p: dict(c.counts) for p, c in checks.items()}
    return UsageCheck(counts, models, by_profile, outcome.errors)


def federated_check_sessions(
    fed: Federation,
    kind: str,
    check: UsageCheck,
    since: When = None,
    until: When = None,
    tz: TzLike = None,
    offset: int = 0,
    limit: int = 50,
) -> list[tuple[str, str]]:
    """`(profile, id)` of the sessions behind one kind of `check` (a federated check of the
    same range), a page at a time: profile by profile in `check.by_profile` order, each
    store's newest first."""
    if kind not in CHECK_KINDS:
        raise InvalidArgument(f"kind must be one of {', '.join(CHECK_KINDS)}, not {kind!r}")
    zone = resolve_tz(tz)
    out: list[tuple[str, str]] = []
    skip, need = max(0, int(offset)), max(0, int(limit))
    for profile, counts in check.by_profile.items():
        n = counts.get(kind, 0)
        if skip >= n:
            skip -= n
            continue
        if need <= 0:
            break
        ids = fed.call(profile, _check_page, kind, since, until, zone, skip, need)
        out += [(profile, i) for i in ids]
        need -= len(ids)
        skip = 0
    return out


def _check_page(
    db: SessionDB, kind: str, since: When, until: When, tz: Any, offset: int, limit: int
) -> list[str]:
    return db.usage_check_sessions(kind, since, until, tz, offset, limit)


def federated_usage_budget(
    fed: Federation,
    budget_usd: float,
    since: When = None,
    until: When = None,
    tz: TzLike = None,
    now: float | None = None,
    profiles: Iterable[str] | None = None,
) -> BudgetStatus:
    """`SessionDB.usage_budget` over every store: the spend and the month to date added up,
    the pace recomputed from the sum."""
    zone, now = zone_and_now(tz, now)
    outcome = fed.map(lambda db: db.usage_budget(budget_usd, since, until, zone, now), profiles)
    found: dict[str, BudgetStatus] = outcome.values
    month, lo, hi = budget_range(since, until, zone, now)
    spent = sum((b.spent for b in found.values()), ZERO)
    mtd = sum((b.month_to_date for b in found.values()), ZERO)
    return make_budget(budget_usd, lo, hi, spent, month, mtd, now, tz_name(zone), outcome.errors)
