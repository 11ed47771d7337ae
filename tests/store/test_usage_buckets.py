"""The usage queries put a time in its period in SQL (`usage.period_case`, a search over the
periods' bounds computed once in Python for the zone) — it must agree, for every instant, with
the rule stated per row: the period whose local start is that of the time's local date
(`period_start(local_date(t))`), -1 before the range, one past the last from its end. Random
times around DST changes (at 02:00, at midnight, by 30 minutes) in several zones (hypothesis).
"""

from __future__ import annotations

import datetime as dt
import json
from zoneinfo import ZoneInfo

import apsw
from hypothesis import given, settings
from hypothesis import strategies as st

from hermes_tui.state.usage_sql import period_case
from hermes_tui.state.usage_time import PERIODS, local_date, period_start, spans

ZONES = (
    "Europe/Berlin",  # DST at 02:00/03:00
    "America/New_York",
    "America/Santiago",  # DST changes at midnight: some local days start at 01:00
    "America/Havana",  # the same, at midnight
    "Australia/Lord_Howe",  # a 30-minute DST
    "Asia/Kolkata",  # +05:30, no DST
    "Pacific/Chatham",  # +12:45 / +13:45
    "UTC",
)
#: 2023-01-01 … 2027-01-01: several DST changes of every zone above.
LO, HI = 1672531200.0, 1798761600.0

CONN = apsw.Connection(":memory:")


def rule(t: float, periods: list, since: float, until: float, by: str, tz: dt.tzinfo) -> int:
    """The per-row rule: the period holding `t`'s local date."""
    if t < since:
        return -1
    if t >= until:
        return len(periods)
    start = period_start(local_date(t, tz), by)  # type: ignore[arg-type]
    return next(p.index for p in periods if p.start == start)


@settings(max_examples=300, deadline=None)
@given(
    zone=st.sampled_from(ZONES),
    by=st.sampled_from(PERIODS),
    since=st.floats(LO, HI - 200 * 86400),
    days=st.floats(0.001, 200),
    times=st.lists(st.floats(LO, HI), min_size=1, max_size=30),
    near=st.lists(st.tuples(st.integers(0, 400), st.floats(-2.0, 2.0)), max_size=30),
)
def test_sql_bucketing_equals_the_per_row_rule(
    zone: str, by: str, since: float, days: float, times: list[float], near: list[tuple[int, float]]
) -> None:
    tz = ZoneInfo(zone)
    until = since + days * 86400
    periods = spans(since, until, by, tz)  # type: ignore[arg-type]
    bounds = [p.lo for p in periods] + [periods[-1].hi]
    # random times, the range's, and times a few seconds either side of each bound
    probe = [*times, since, until]
    probe += [bounds[i % len(bounds)] + d for i, d in near]
    probe += [b + d for b in bounds for d in (-1e-3, 0.0, 1e-3)]
    # at millisecond resolution: `fromtimestamp` (the per-row rule) rounds to the microsecond,
    # so an instant less than half a microsecond before a midnight is "that midnight" to it,
    # and before it to the SQL, which compares the times themselves (the SQL is right)
    probe = [round(t, 3) for t in probe if LO <= t <= HI]
    sql = f"SELECT value, {period_case('value', bounds)} FROM json_each(?)"
    for t, k in CONN.execute(sql, (json.dumps(probe),)):
        assert k == rule(t, periods, since, until, by, tz), (zone, by, t, dt.datetime.fromtimestamp(t, tz))


def test_a_local_day_that_starts_at_one_is_its_own_period() -> None:
    """America/Santiago, 2024-09-08: no midnight (00:00 → 01:00); the day starts at the change."""
    tz = ZoneInfo("America/Santiago")
    change = dt.datetime(2024, 9, 8, 1, 0, tzinfo=tz).timestamp()
    periods = spans(change - 86400, change + 86400, "day", tz)
    bounds = [p.lo for p in periods] + [periods[-1].hi]
    assert [p.start for p in periods] == [dt.date(2024, 9, 7), dt.date(2024, 9, 8), dt.date(2024, 9, 9)]
    for t in (change - 1, change, change + 3600):
        got = CONN.execute(f"SELECT {period_case(repr(t), bounds)}").fetchall()[0][0]
        assert got == rule(t, periods, periods[0].lo, periods[-1].hi, "day", tz)
