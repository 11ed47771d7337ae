"""What the Usage screen shows, decided without Textual: the user's choice (range, period, group,
cost or tokens), the store calls that answer it, and the store's answer turned into a stacked
chart's series and labels, the summary lines and the costliest sessions' rows.

The screen (`hermes_tui.app.screens.usage`) only routes keys here and draws the result; every
figure is the store's usage model (docs/store-api.md, "Usage"). Store text (models, sources,
profiles, titles, ids) leaves this module only through `hermes_tui.safe_text`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from hermes_tui.formatting import format_cost, plural
from hermes_tui.safe_text import cell_width, one_line
from hermes_tui.state import (
    CHECK_KINDS,
    BudgetStatus,
    Federation,
    SessionDB,
    UsageCheck,
    UsageFigures,
    UsageReport,
    UsageSession,
    federated_check_sessions,
    federated_usage_budget,
    federated_usage_check,
    federated_usage_report,
    federated_usage_sessions,
    last_days_start,
)

#: The ranges offered: the last N whole local days (today the last), or everything.
RANGES: tuple[int | None, ...] = (7, 30, 90, None)
PERIODS: tuple[str, ...] = ("day", "week", "month")
#: "profile" only when several stores are open.
GROUPS: tuple[str, ...] = ("model", "source", "profile")
METRICS: tuple[str, ...] = ("cost", "tokens")
#: Stacked series drawn; the smaller groups are added up as "other".
MAX_SERIES = 5
OTHER = "other"
#: The one series of an unstacked chart (no legend).
ALL = "all"
#: The costliest sessions listed.
TOP_SESSIONS = 10
#: Short words for the check's kinds (the counts line).
KIND_WORDS = {
    "no_tokens": "no tokens",
    "unpriced": "unpriced",
    "uncosted": "uncosted",
    "included": "included",
}
BASIS_WORDS = {"actual": "actual", "estimated": "estimated", "mixed": "actual + estimated", "none": "none"}


def _next(values: Sequence[Any], current: Any) -> Any:
    return values[(values.index(current) + 1) % len(values)] if current in values else values[0]


@dataclass(frozen=True)
class UsageChoice:
    """What the user asked to see. Immutable: each key gives the next choice."""

    days: int | None = 30
    by: str = "day"
    group: str = "model"
    metric: str = "cost"

    def next_range(self) -> UsageChoice:
        return replace(self, days=_next(RANGES, self.days))

    def next_period(self) -> UsageChoice:
        return replace(self, by=_next(PERIODS, self.by))

    def next_group(self, federated: bool) -> UsageChoice:
        return replace(self, group=_next(GROUPS if federated else GROUPS[:2], self.group))

    def next_metric(self) -> UsageChoice:
        return replace(self, metric=_next(METRICS, self.metric))

    @property
    def range_label(self) -> str:
        return "all time" if self.days is None else f"last {self.days} days"


class UsageSource(Protocol):
    """The store(s) the screen reads: one store (`StoreUsage`) or several profiles' open stores,
    every answer added up (`FederatedUsage`). Every method runs on a worker thread."""

    @property
    def profiles(self) -> tuple[str, ...] | None:
        """The profiles read (None: one store, no profile column or stack)."""
        ...

    @property
    def federated(self) -> bool: ...

    def report(
        self, by: str, group: str | None, since: float | None, tz: dt.tzinfo, now: float
    ) -> UsageReport: ...

    def sessions(
        self, since: float | None, tz: dt.tzinfo, now: float, limit: int = TOP_SESSIONS
    ) -> list[UsageSession]: ...

    def check(self, since: float | None, tz: dt.tzinfo) -> UsageCheck: ...

    def check_sessions(
        self, kind: str, check: UsageCheck, since: float | None, tz: dt.tzinfo, limit: int
    ) -> list[tuple[str | None, str]]:
        """(profile, id) of the sessions of one kind of `check` (profile None for one store)."""
        ...

    def month(self, tz: dt.tzinfo, now: float) -> BudgetStatus:
        """The month to date and its pace (a budget of 0: only the pace is read)."""
        ...


@dataclass(frozen=True)
class StoreUsage:
    """One store's usage: its own `SessionDB` methods."""

    db: SessionDB
    profiles: tuple[str, ...] | None = None

    @property
    def federated(self) -> bool:
        return False

    def report(
        self, by: str, group: str | None, since: float | None, tz: dt.tzinfo, now: float
    ) -> UsageReport:
        return self.db.usage_report(by, group, since, None, tz, now)  # type: ignore[arg-type]

    def sessions(
        self, since: float | None, tz: dt.tzinfo, now: float, limit: int = TOP_SESSIONS
    ) -> list[UsageSession]:
        return self.db.usage_sessions(since, None, tz, limit, 0, now)

    def check(self, since: float | None, tz: dt.tzinfo) -> UsageCheck:
        return self.db.usage_check(since, None, tz)

    def check_sessions(
        self, kind: str, check: UsageCheck, since: float | None, tz: dt.tzinfo, limit: int
    ) -> list[tuple[str | None, str]]:
        return [(None, i) for i in self.db.usage_check_sessions(kind, since, None, tz, 0, limit)]

    def month(self, tz: dt.tzinfo, now: float) -> BudgetStatus:
        return self.db.usage_budget(0.0, None, None, tz, now)


@dataclass(frozen=True)
class FederatedUsage:
    """Several profiles' usage, every answer added up across `profiles` (the state layer's
    `federated_usage_*`)."""

    fed: Federation
    profiles: tuple[str, ...] | None = None

    @property
    def federated(self) -> bool:
        return True

    def report(
        self, by: str, group: str | None, since: float | None, tz: dt.tzinfo, now: float
    ) -> UsageReport:
        return federated_usage_report(self.fed, by, group, since, None, tz, now, self.profiles)  # type: ignore[arg-type]

    def sessions(
        self, since: float | None, tz: dt.tzinfo, now: float, limit: int = TOP_SESSIONS
    ) -> list[UsageSession]:
        return federated_usage_sessions(self.fed, since, None, tz, limit, 0, now, self.profiles)[0]

    def check(self, since: float | None, tz: dt.tzinfo) -> UsageCheck:
        return federated_usage_check(self.fed, since, None, tz, self.profiles)

    def check_sessions(
        self, kind: str, check: UsageCheck, since: float | None, tz: dt.tzinfo, limit: int
    ) -> list[tuple[str | None, str]]:
        return list(federated_check_sessions(self.fed, kind, check, since, None, tz, 0, limit))

    def month(self, tz: dt.tzinfo, now: float) -> BudgetStatus:
        return federated_usage_budget(self.fed, 0.0, None, None, tz, now, self.profiles)


@dataclass(frozen=True)
class UsageData:
    """Everything one choice shows, read together in one worker."""

    choice: UsageChoice
    report: UsageReport
    sessions: list[UsageSession]
    check: UsageCheck
    month: BudgetStatus
    since: float | None


def load_usage(source: UsageSource, choice: UsageChoice, tz: dt.tzinfo, now: float) -> UsageData:
    """The store calls behind one choice (worker thread)."""
    since = None if choice.days is None else last_days_start(choice.days, tz, now)
    return UsageData(
        choice=choice,
        report=source.report(choice.by, choice.group, since, tz, now),
        sessions=source.sessions(since, tz, now),
        check=source.check(since, tz),
        month=source.month(tz, now),
        since=since,
    )


# ---------------------------------------------------------------- the chart
@dataclass(frozen=True)
class ChartData:
    """A stacked bar chart: one bar per period at x = 1..n, one series per group (largest
    first, inert names), tick labels for a readable subset of the periods."""

    x: list[int]
    series: list[tuple[str, list[float]]]
    ticks: list[int]
    tick_labels: list[str]
    y_label: str
    empty: bool
    periods: list[str] = field(default_factory=list)
    #: Per period, the cache-read share of its prompt tokens in percent (None without prompts).
    cache_share: list[float | None] = field(default_factory=list)

    def segments(self) -> list[tuple[int, float, int]]:
        """The stacked bars as `(x, top, series)` pieces, each drawn from 0 to `top`, a period's
        tallest first so the lower pieces paint over it; a series with nothing in a period has
        no piece there.

        Why not plotext's `stacked_bar`: it draws a zero-height bar as blanks over the chart's
        bottom row, so a period whose first series is zero lost its lowest row and its bar
        floated above the axis (seen on the Usage screen)."""
        pieces: list[tuple[int, float, int]] = []
        for j, x in enumerate(self.x):
            top = 0.0
            mine: list[tuple[int, float, int]] = []
            for i, (_name, values) in enumerate(self.series):
                if values[j] > 0:
                    top += values[j]
                    mine.append((x, top, i))
            pieces += reversed(mine)
        return pieces

    def share_points(self) -> tuple[list[int], list[float]]:
        """(x, percent) of the periods that had prompt tokens: the share's line skips the rest."""
        found = [(x, s) for x, s in zip(self.x, self.cache_share, strict=True) if s is not None]
        return [x for x, _s in found], [s for _x, s in found]


def draw_bars(plt: Any, chart: ChartData, colours: Sequence[tuple[int, int, int]]) -> None:
    """Draw `chart`'s stacked bars on a plotext figure `plt` (plotext's module or a
    textual-plotext widget's `plt`): one bar per piece of `ChartData.segments`."""
    for x, top, i in chart.segments():
        plt.bar([x], [top], color=colours[i % len(colours)], width=0.8, reset_ticks=False)
    plt.xlim(0.5, len(chart.x) + 0.5)
    if chart.empty:
        plt.ylim(0, 1)
    plt.xticks(chart.ticks, chart.tick_labels)


def metric_value(f: UsageFigures, metric: str) -> float:
    """A figure's height: its cost in USD, or its tokens in thousands."""
    return f.cost_usd if metric == "cost" else f.total_tokens / 1000


def group_name(group: str | None, name: str) -> str:
    """A group as shown: inert, on one line, short; '-' when the store has none."""
    return one_line(name, 28) or "-"


def short_label(label: str, by: str) -> str:
    """A period's tick: `06-01` for a day, `W23` for a week, `2025-06` for a month."""
    if by == "day" and len(label) == 10:
        return label[5:]
    if by == "week" and "-W" in label:
        return label.split("-", 1)[1]
    return label


def tick_positions(n: int, most: int) -> list[int]:
    """About `most` evenly spaced positions of 1..n, the last included."""
    if n <= 0:
        return []
    if n <= most:
        return list(range(1, n + 1))
    step = -(-n // most)
    ticks = list(range(n, 0, -step))[::-1]
    return ticks


def chart_data(report: UsageReport, metric: str, width: int = 80) -> ChartData:
    """The report as stacked series: the `MAX_SERIES` largest groups by `metric`, the rest as
    "other", each a value per period (zeros kept: every period is a bar)."""
    n = len(report.periods)
    x = list(range(1, n + 1))
    names = report.group_names(lambda f: metric_value(f, metric)) if report.group else []
    shown, rest = names[:MAX_SERIES], names[MAX_SERIES:]
    series: list[tuple[str, list[float]]] = []
    if report.group is None or not names:  # one series; an empty range still draws its axes
        series.append((ALL, [metric_value(f, metric) for f in report.series()]))
    else:
        for g in shown:
            series.append((group_name(report.group, g), [metric_value(f, metric) for f in report.series(g)]))
        if rest:
            other = [0.0] * n
            for g in rest:
                for i, f in enumerate(report.series(g)):
                    other[i] += metric_value(f, metric)
            series.append((OTHER, other))
    labels = [short_label(p.label, report.by) for p in report.periods]
    # a tick label and its gap take about 7 cells; leave room for the y axis
    ticks = tick_positions(n, max(2, (width - 10) // 8))
    empty = not any(v for _n, values in series for v in values)
    return ChartData(
        x=x,
        series=[s for s in series if any(s[1])] or series[:1],
        ticks=ticks,
        tick_labels=[labels[t - 1] for t in ticks],
        y_label="USD" if metric == "cost" else "thousand tokens",
        empty=empty,
        periods=[p.label for p in report.periods],
        cache_share=[None if s is None else 100 * s for s in (f.cache_read_share for f in report.series())],
    )


def legend_rows(names: Sequence[str], width: int) -> list[list[int]]:
    """The legend's entries (indices of `names`) per line, each entry (a 3-cell swatch, the
    name, a 3-cell gap) whole on one line within `width` cells."""
    rows: list[list[int]] = [[]]
    used = 0
    for i, name in enumerate(names):
        need = 3 + cell_width(name)
        if rows[-1] and used + need > width:
            rows.append([])
            used = 0
        rows[-1].append(i)
        used += need + 3
    return rows if rows[0] else []


# ---------------------------------------------------------------- the text around it
def heading(data: UsageData, tz_name: str, federated_profiles: Sequence[str] = ()) -> str:
    c = data.choice
    what = "cost (USD)" if c.metric == "cost" else "tokens (thousands)"
    profiles = f" · {len(federated_profiles)} profiles" if federated_profiles else ""
    return f"{what} per {c.by} by {c.group}, {c.range_label}, {one_line(tz_name, 32)}{profiles}"


def cost_text(f: UsageFigures) -> str:
    """`$1.23 estimated`; `$0.00` alone when no cost was recorded."""
    cost = format_cost(f.cost_usd, places=2)
    return cost if f.cost_basis == "none" else f"{cost} {BASIS_WORDS[f.cost_basis]}"


def share_text(f: UsageFigures) -> str:
    """The cache-read share of prompt tokens, `-` without prompt tokens."""
    share = f.cache_read_share
    return "-" if share is None else f"{share:.0%}"


def summary_lines(data: UsageData) -> list[str]:
    """Range total, tokens and cache-read share; the month to date and its pace; the check."""
    t = data.report.total
    m = data.month
    return [
        f"Range: {cost_text(t)} · {t.total_tokens:,} tokens · {share_text(t)} cache read · "
        f"{plural(t.sessions, 'session')}",
        f"Month to date ({one_line(m.month, 10)}, day {m.day_of_month} of {m.days_in_month:.0f}): "
        f"{cost_text(m.month_to_date)} · pace {format_cost(m.pace_usd, places=2)}",
        check_line(data.check),
    ]


def check_line(check: UsageCheck) -> str:
    """The check's counts on one line (`c` lists them)."""
    counts = " · ".join(f"{check.counts.get(k, 0):,} {KIND_WORDS[k]}" for k in CHECK_KINDS)
    return f"Check (c): {counts}"


def session_rows(
    sessions: Sequence[UsageSession], federated: bool, width: int = 120
) -> list[tuple[str, ...]]:
    """The costliest sessions' cells: title (or id), [profile,] model, tokens, cost; inert, and
    cut so that a row fits `width` cells (80 columns: no horizontal scrolling)."""
    wide = width >= 110
    title_w, model_w, profile_w = (48, 28, 16) if wide else (26 - (8 if federated else 0), 20, 10)
    rows = []
    for s in sessions:
        cells = [one_line(s.title, title_w) or one_line(s.session_id, title_w)]
        if federated:
            cells.append(one_line(s.profile, profile_w))
        cells += [
            one_line(s.model, model_w) or "-",
            f"{s.figures.total_tokens:,}",
            format_cost(s.figures.cost_usd, places=4),
        ]
        rows.append(tuple(cells))
    return rows


def check_rows(check: UsageCheck) -> list[tuple[str, int, str]]:
    """(kind, count, one-line explanation) of each kind of the check."""
    return [(k, check.counts.get(k, 0), CHECK_KINDS[k]) for k in CHECK_KINDS]
