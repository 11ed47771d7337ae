"""Usage periods in a stated time zone: days, ISO weeks (from Monday), months.

A period is a span of local calendar time. Its bounds are Unix times computed here with
`zoneinfo` (so a DST day is 23 or 25 hours long); SQL finds a time's period by comparing it
with those same bounds (`usage.period_case`), so both agree on every instant.
"""

from __future__ import annotations

import datetime as dt
import os
import time
from dataclasses import dataclass
from typing import Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from .errors import InvalidArgument

Period = Literal["day", "week", "month"]
PERIODS: tuple[Period, ...] = ("day", "week", "month")
TzLike = dt.tzinfo | str | None
When = float | int | dt.datetime | dt.date | None

_EPOCH_ORDINAL = dt.date(1970, 1, 1).toordinal()


def local_tz() -> dt.tzinfo:
    """The user's zone: `$TZ`, else the zone `/etc/localtime` names (or holds), else the
    current fixed offset (which knows no DST: a last resort)."""
    key = os.environ.get("TZ", "").lstrip(":")
    if key:
        try:
            return ZoneInfo(key)
        except (ZoneInfoNotFoundError, ValueError):
            pass
    try:
        target = os.path.realpath("/etc/localtime")
        if "zoneinfo/" in target:
            return ZoneInfo(target.split("zoneinfo/", 1)[1])
        with open("/etc/localtime", "rb") as f:
            return ZoneInfo.from_file(f, key="localtime")
    except (OSError, ValueError, ZoneInfoNotFoundError):
        pass
    return dt.datetime.now().astimezone().tzinfo or dt.UTC


def resolve_tz(tz: TzLike) -> dt.tzinfo:
    """A `tzinfo`, a zone name (`"Europe/Berlin"`) or None (the user's local zone)."""
    if tz is None:
        return local_tz()
    if isinstance(tz, str):
        try:
            return ZoneInfo(tz)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise InvalidArgument(f"unknown time zone {tz!r}") from exc
    if isinstance(tz, dt.tzinfo):
        return tz
    raise InvalidArgument(f"time zone must be a name or a tzinfo, not {type(tz).__name__}")


def tz_name(tz: dt.tzinfo) -> str:
    """The zone as stated to the user: its IANA key when it has one."""
    key = getattr(tz, "key", None)
    return str(key) if key else str(tz.tzname(None) or tz)


def to_ts(when: When, tz: dt.tzinfo) -> float | None:
    """A Unix time from a number, an aware datetime, a naive one (read in `tz`) or a date
    (its local midnight in `tz`)."""
    if when is None:
        return None
    if isinstance(when, bool):
        raise InvalidArgument("a time must be a number, a datetime or a date")
    if isinstance(when, (int, float)):
        return float(when)
    if isinstance(when, dt.datetime):
        return (when if when.tzinfo else when.replace(tzinfo=tz)).timestamp()
    if isinstance(when, dt.date):
        return midnight(when, tz)
    raise InvalidArgument(f"a time must be a number, a datetime or a date, not {type(when).__name__}")


def midnight(day: dt.date, tz: dt.tzinfo) -> float:
    """The Unix time of `day`'s first local instant (a skipped midnight: the first one after)."""
    return dt.datetime(day.year, day.month, day.day, tzinfo=tz).timestamp()


def local_date(ts: float, tz: dt.tzinfo) -> dt.date:
    return dt.datetime.fromtimestamp(ts, tz).date()


def period_start(day: dt.date, by: Period) -> dt.date:
    """The first day of the period holding `day`."""
    if by == "day":
        return day
    if by == "week":
        return day - dt.timedelta(days=day.weekday())
    return day.replace(day=1)


def next_start(start: dt.date, by: Period) -> dt.date:
    if by == "day":
        return start + dt.timedelta(days=1)
    if by == "week":
        return start + dt.timedelta(days=7)
    return (start.replace(day=28) + dt.timedelta(days=4)).replace(day=1)


def zone_and_now(tz: TzLike, now: float | None) -> tuple[dt.tzinfo, float]:
    """The zone `tz` names (`resolve_tz`) and `now` as a Unix time (None: the clock's)."""
    return resolve_tz(tz), time.time() if now is None else float(now)


def last_days_start(days: int, tz: TzLike = None, now: float | None = None) -> float:
    """The start of "the last `days` days" in `tz` (None: local): the local midnight `days - 1`
    days before today's, so the range holds `days` whole days, today the last (the screen's
    7/30/90 and the CLI's `--since 30d`)."""
    zone, now = zone_and_now(tz, now)
    return midnight(local_date(now, zone) - dt.timedelta(days=max(1, int(days)) - 1), zone)


def current_period(now: float, by: Period, tz: dt.tzinfo) -> tuple[dt.date, float, float]:
    """The local period holding `now`: its first day and its bounds as Unix times."""
    start = period_start(local_date(now, tz), by)
    return start, midnight(start, tz), midnight(next_start(start, by), tz)


def budget_range(
    since: When, until: When, tz: dt.tzinfo, now: float
) -> tuple[tuple[dt.date, float, float], float, float]:
    """A budget's month (`current_period` of `now`) and range: `[since, until)`, by default
    from the month's start up to `now` (one store's and a federation's alike)."""
    month = current_period(now, "month", tz)
    lo, hi = to_ts(since, tz), to_ts(until, tz)
    return month, month[1] if lo is None else lo, now if hi is None else hi


def period_label(start: dt.date, by: Period) -> str:
    """`2026-03-29` (day), `2026-W13` (ISO week), `2026-03` (month)."""
    if by == "day":
        return start.isoformat()
    if by == "week":
        year, week, _ = start.isocalendar()
        return f"{year}-W{week:02d}"
    return f"{start.year:04d}-{start.month:02d}"


@dataclass(frozen=True)
class UsagePeriod:
    """One period of a usage series: `[lo, hi)` in Unix time, clipped to the asked range
    (`start` and `label` name the whole local period)."""

    index: int
    start: dt.date
    label: str
    lo: float
    hi: float


def spans(since: float, until: float, by: Period, tz: dt.tzinfo) -> list[UsagePeriod]:
    """The periods covering `[since, until)`, the first and last clipped to it."""
    if by not in PERIODS:
        raise InvalidArgument(f"period must be one of {', '.join(PERIODS)}, not {by!r}")
    out: list[UsagePeriod] = []
    if until <= since:
        return out
    start = period_start(local_date(since, tz), by)
    while True:
        nxt = next_start(start, by)
        lo, hi = midnight(start, tz), midnight(nxt, tz)
        out.append(UsagePeriod(len(out), start, period_label(start, by), max(lo, since), min(hi, until)))
        if hi >= until:
            return out
        start = nxt
