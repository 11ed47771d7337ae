"""The Usage screen's plain model (`hermes_tui.app.usage_view`), without an app: the choice's
cycles, the store calls behind a choice, the chart's series (their sums are the report's), ticks
and labels, the summary lines, the costliest sessions' rows, and store text made inert."""

from __future__ import annotations

import datetime as dt
import re
import time
from pathlib import Path

import pytest

from hermes_tui.app.usage_view import (
    MAX_SERIES,
    OTHER,
    ChartData,
    StoreUsage,
    UsageChoice,
    chart_data,
    check_line,
    draw_bars,
    heading,
    legend_rows,
    load_usage,
    session_rows,
    short_label,
    summary_lines,
    tick_positions,
)
from hermes_tui.safe_text import is_inert
from hermes_tui.state import SessionDB, UsageFigures, UsagePeriod, UsageReport

from ._usage import HOSTILE_MODEL, NOW, usage_db, usage_master

__all__ = ["usage_db", "usage_master"]
UTC = dt.UTC


def test_choice_cycles() -> None:
    c = UsageChoice()
    assert (c.days, c.by, c.group, c.metric) == (30, "day", "model", "cost")
    assert [c.next_range().days, c.next_range().next_range().days] == [90, None]
    assert c.next_range().next_range().next_range().days == 7
    assert c.next_range().next_range().range_label == "all time"
    assert c.next_period().by == "week" and c.next_period().next_period().next_period().by == "day"
    # "profile" only over several stores
    assert c.next_group(False).group == "source" and c.next_group(False).next_group(False).group == "model"
    assert c.next_group(True).next_group(True).group == "profile"
    assert c.next_metric().metric == "tokens" and c.next_metric().next_metric().metric == "cost"


def test_ticks_and_labels() -> None:
    assert tick_positions(0, 8) == [] and tick_positions(5, 8) == [1, 2, 3, 4, 5]
    ticks = tick_positions(90, 8)
    assert ticks[-1] == 90 and len(ticks) <= 8 and ticks == sorted(set(ticks))
    assert short_label("2025-06-01", "day") == "06-01"
    assert short_label("2025-W22", "week") == "W22"
    assert short_label("2025-06", "month") == "2025-06"


def _report(groups: dict[str, list[float]]) -> UsageReport:
    """A report by hand: one period per value, `cost` as estimated cost."""
    n = len(next(iter(groups.values())))
    periods = [
        UsagePeriod(i, dt.date(2025, 6, 1 + i), f"2025-06-{1 + i:02d}", float(i), float(i + 1))
        for i in range(n)
    ]
    cells = {(i, g): UsageFigures(estimated_cost_usd=v) for g, vs in groups.items() for i, v in enumerate(vs)}
    per = {i: UsageFigures(estimated_cost_usd=sum(vs[i] for vs in groups.values())) for i in range(n)}
    totals = {g: UsageFigures(estimated_cost_usd=sum(vs)) for g, vs in groups.items()}
    total = UsageFigures(estimated_cost_usd=sum(sum(vs) for vs in groups.values()))
    return UsageReport("day", "model", "UTC", 0.0, float(n), periods, cells, per, totals, total)


def test_the_largest_groups_are_stacked_and_the_rest_is_other() -> None:
    groups = {f"m{k}": [float(k), 0.0, 2.0 * k] for k in range(1, 9)}
    groups["evil\x1b[2J"] = [100.0, 0.0, 0.0]
    chart = chart_data(_report(groups), "cost")
    names = [n for n, _v in chart.series]
    assert len(names) == MAX_SERIES + 1 and names[-1] == OTHER
    assert names[0] == "evil␛[2J" and all(is_inert(n) for n in names)  # largest first, inert
    assert names[1:MAX_SERIES] == ["m8", "m7", "m6", "m5"]
    # every period's stack adds up to the period's total
    for i in range(3):
        assert sum(v[i] for _n, v in chart.series) == pytest.approx(sum(vs[i] for vs in groups.values()))
    assert chart.x == [1, 2, 3] and chart.tick_labels == ["06-01", "06-02", "06-03"] and not chart.empty


def test_tokens_are_in_thousands_and_an_empty_range_still_has_axes() -> None:
    report = _report({"a": [0.0, 0.0]})
    chart = chart_data(report, "tokens")
    assert chart.empty and chart.series == [("a", [0.0, 0.0])] and chart.y_label == "thousand tokens"
    empty = UsageReport("day", "model", "UTC", 0.0, 1.0, report.periods, {}, {}, {}, UsageFigures())
    assert chart_data(empty, "cost").series == [("all", [0.0, 0.0])]


def test_load_usage_answers_from_the_store(usage_db: Path) -> None:
    utc = dt.UTC
    with SessionDB(usage_db, read_only=True) as db:
        source = StoreUsage(db)
        data = load_usage(source, UsageChoice(days=7), utc, NOW)
        # the last 7 UTC days: 2025-05-26 to 2025-06-01
        assert data.since == dt.datetime(2025, 5, 26, tzinfo=utc).timestamp()
        assert [p.label for p in data.report.periods][0] == "2025-05-26" and len(data.report.periods) == 7
        want = db.usage_report("day", "model", data.since, None, utc, NOW)
        assert data.report.total == want.total
        assert data.sessions[0].session_id == "big-one"
        assert data.check.counts["no_tokens"] == 2 and data.check.counts["unpriced"] == 1
        assert data.month.month == "2025-06"
        ids = source.check_sessions("no_tokens", data.check, data.since, utc, 10)
        assert ids == [(None, "no-tokens-1"), (None, "no-tokens-2")]
        # the chart's stacks add up to the report's period totals
        chart = chart_data(data.report, "cost")
        for i, p in enumerate(data.report.periods):
            got = sum(v[i] for _n, v in chart.series)
            assert got == pytest.approx(data.report.period_totals.get(p.index, UsageFigures()).cost_usd)
        every = load_usage(source, UsageChoice(days=None, by="month", group="source"), utc, NOW)
        assert [p.label for p in every.report.periods][:1] == ["2025-02"]
        assert set(every.report.groups) == {"cli", "telegram", "discord"}


def test_lines_and_rows(usage_db: Path) -> None:
    with SessionDB(usage_db, read_only=True) as db:
        data = load_usage(StoreUsage(db), UsageChoice(days=30), dt.UTC, NOW)
        every = StoreUsage(db).sessions(data.since, dt.UTC, NOW, limit=100)
    t = data.report.total
    lines = summary_lines(data)
    assert lines[0].startswith(f"Range: ${t.cost_usd:.2f} estimated · {t.total_tokens:,} tokens · ")
    assert f"{t.cache_read_share:.0%} cache read" in lines[0]
    m = data.month
    assert lines[1] == (
        f"Month to date (2025-06, day 1 of 30): ${m.month_to_date.cost_usd:.2f} estimated · "
        f"pace ${m.pace_usd:.2f}"
    )
    # the pace is the month to date at its rate so far over the whole month
    assert m.pace_usd == pytest.approx(m.month_to_date.cost_usd / m.days_elapsed * 30)
    assert (
        lines[2] == check_line(data.check) == "Check (c): 2 no tokens · 1 unpriced · 0 uncosted · 0 included"
    )
    assert heading(data, "UTC") == "cost (USD) per day by model, last 30 days, UTC"
    assert all(len(line) <= 76 for line in lines)  # one line each inside the frame at 80 columns
    rows = session_rows(data.sessions, federated=False)
    assert rows[0] == ("The costliest session", "openai/gpt-4.1", "179,000", "$1.2345")
    hostile = next(r for r in session_rows(every, federated=False) if r[1].startswith("evil"))
    assert all(is_inert(c) for c in hostile) and hostile[1] == "evil␛]52;c;cHduZWQ=␇model"
    assert HOSTILE_MODEL not in hostile


def test_legend_entries_stay_whole_on_their_line() -> None:
    names = ["openai/gpt-4.1", "anthropic/claude-sonnet-4", "google/gemini-2.5-pro", "evil␛]52;c;model", "x"]
    rows = legend_rows(names, 74)
    assert [i for row in rows for i in row] == [0, 1, 2, 3, 4]
    for row in rows:
        assert sum(3 + len(names[i]) for i in row) + 3 * (len(row) - 1) <= 74
    assert legend_rows(names, 400) == [[0, 1, 2, 3, 4]] and legend_rows([], 80) == []
    assert legend_rows(["a" * 90], 20) == [[0]]  # a name wider than the line still shows (cut by the widget)


def test_the_browser_starts_without_importing_plotext() -> None:
    """The chart library loads with the first Usage screen, not with every start."""
    import subprocess
    import sys

    code = (
        "import sys, hermes_tui.app.app; "
        "print(any(m.startswith(('plotext', 'textual_plotext')) for m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "False", out.stderr


def test_the_cache_read_share_per_period_skips_periods_without_prompts(usage_db: Path) -> None:
    with SessionDB(usage_db, read_only=True) as db:
        data = load_usage(StoreUsage(db), UsageChoice(days=30, metric="tokens"), dt.UTC, NOW)
    chart = chart_data(data.report, "tokens")
    xs, shares = chart.share_points()
    series = data.report.series()
    assert xs == [i + 1 for i, f in enumerate(series) if f.prompt_tokens]
    assert 0 < len(xs) < len(series)  # the store has days without usage
    for x, share in zip(xs, shares, strict=True):
        f = series[x - 1]
        assert share == pytest.approx(100 * f.cache_read_tokens / f.prompt_tokens)


def test_a_period_whose_first_series_is_zero_keeps_its_bar_on_the_axis() -> None:
    """plotext's stacked_bar blanked the bottom row under a zero first series (its zero-height
    bar is drawn as spaces), so such a period's bar floated a row above the axis."""
    import plotext

    chart = ChartData(
        x=[1, 2, 3],
        series=[("a", [2.0, 0.0, 1.0]), ("b", [1.0, 3.0, 0.0])],
        ticks=[1, 2, 3],
        tick_labels=["1", "2", "3"],
        y_label="USD",
        empty=False,
    )
    assert chart.segments() == [(1, 3.0, 1), (1, 2.0, 0), (2, 3.0, 1), (3, 1.0, 0)]
    plotext.clear_figure()
    plotext.plotsize(40, 12)
    plotext.theme("clear")
    draw_bars(plotext, chart, [(1, 1, 1)])
    lines = [re.sub(r"\x1b\[[0-9;]*m", "", line) for line in plotext.build().splitlines()]
    bottom = next(line for line in reversed(lines) if "┤" in line)  # the 0 tick's row
    axis = next(line for line in lines if "┬" in line)  # the x axis: a ┬ under each period
    columns = [i for i, ch in enumerate(axis) if ch == "┬"]
    assert len(columns) == 3
    assert [bottom[c] for c in columns] == ["█"] * 3


def test_month_to_date_names_todays_day_with_the_real_clock(usage_db: Path) -> None:
    """Two hours into the 6th of the month is "day 6" (5.08 days have passed; the line said
    "day 5" by rounding them); the first hours of a month are day 1."""
    for now, day in (
        (dt.datetime(2025, 6, 6, 2, tzinfo=dt.UTC), 6),
        (dt.datetime(2025, 6, 1, 0, 30, tzinfo=dt.UTC), 1),
    ):
        with SessionDB(usage_db, read_only=True) as db:
            data = load_usage(StoreUsage(db), UsageChoice(days=30), dt.UTC, now.timestamp())
        assert f"(2025-06, day {day} of 30)" in summary_lines(data)[1]
    with SessionDB(usage_db, read_only=True) as db:
        data = load_usage(StoreUsage(db), UsageChoice(days=30), dt.UTC, time.time())
    today = dt.datetime.now(dt.UTC)
    assert f", day {today.day} of " in summary_lines(data)[1]
