"""`sessions usage`: tokens and cost per day, week or month, per model, source, provider, task
or profile, in a stated time zone; the accounting check (`--check`, `--list KIND`); and a
budget for cron jobs (`--budget USD`: exit code `over_budget` when the range cost more).

One store and several go through one path: the store's federated usage functions over the open
stores (`Stores.fed`, `Stores.profiles`), whose errors `Stores.failed` reports. Every figure is
the store's (docs/store-api.md, "Usage"); this module only chooses the range and prints.
"""

from __future__ import annotations

import argparse
import datetime as dt
import re
import time
from collections.abc import Mapping, Sequence
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from hermes_tui.cli.command import Command
from hermes_tui.cli.errors import EXIT_CODES, UsageError
from hermes_tui.cli.output import emit_json, err, fmt_cost, out, s, table
from hermes_tui.cli.parser import add_profile_options, non_negative_float, non_negative_int
from hermes_tui.cli.stores import Stores
from hermes_tui.formatting import format_cost, plural
from hermes_tui.state import (
    CHECK_KINDS,
    USAGE_GROUPS,
    USAGE_PERIODS,
    BudgetStatus,
    UsageCheck,
    UsageFigures,
    UsageReport,
    federated_check_sessions,
    federated_usage_budget,
    federated_usage_check,
    federated_usage_report,
    last_days_start,
    local_tz,
)

GROUP_CHOICES = (*USAGE_GROUPS, "profile")
#: `--since` without a value: the last 30 days (with `--budget`: the current month).
DEFAULT_DAYS = 30
_DAYS_RE = re.compile(r"^\s*(\d+)\s*d\s*$", re.IGNORECASE)
#: What a figure's cost is, as the BASIS column and the budget line say it.
BASIS_WORDS = {"actual": "actual", "estimated": "estimated", "mixed": "actual + estimated", "none": "none"}
BASIS_LEGEND = (
    "BASIS: actual = billed by the provider; estimated = Hermes' estimate; none = no cost recorded "
    "(see --check)"
)
#: (header, field) of the figure columns of every table, in order.
FIGURE_COLUMNS = (
    ("SESSIONS", "sessions"),
    ("CALLS", "api_calls"),
    ("INPUT", "input_tokens"),
    ("OUTPUT", "output_tokens"),
    ("CACHE READ", "cache_read_tokens"),
    ("CACHE WRITE", "cache_write_tokens"),
    ("REASONING", "reasoning_tokens"),
)

Since = str | int | dt.date | dt.datetime


def _now() -> float:
    """The time the range and the month to date are measured from."""
    return time.time()


# ---------------------------------------------------------------- options
def since_value(text: str) -> Since:
    """`30d` (the last 30 whole local days, today the last), `month` (the current month),
    `all` (from the first usage), or a date / date-time (in `--tz`)."""
    word = (text or "").strip().lower()
    if word in ("all", "month"):
        return word
    m = _DAYS_RE.match(word)
    if m:
        days = int(m.group(1))
        if days < 1:
            raise argparse.ArgumentTypeError(f"must be 1d or more, not {text.strip()}")
        return days
    return date_value(text)


def date_value(text: str) -> dt.date | dt.datetime:
    """`YYYY-MM-DD` (a local day) or `YYYY-MM-DDTHH:MM[:SS][+HH:MM]` (naive: in `--tz`)."""
    raw = (text or "").strip()
    try:
        if len(raw) == 10:
            return dt.date.fromisoformat(raw)
        return dt.datetime.fromisoformat(raw[:-1] + "+00:00" if raw.endswith("Z") else raw)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"invalid date {text!r} (use YYYY-MM-DD or YYYY-MM-DDTHH:MM; --since also takes 30d, month, all)"
        ) from None


def zone_value(text: str) -> ZoneInfo:
    """An IANA zone name (`Europe/Berlin`, `UTC`)."""
    try:
        return ZoneInfo((text or "").strip())
    except (ZoneInfoNotFoundError, ValueError):
        raise argparse.ArgumentTypeError(f"unknown time zone {text!r} (e.g. Europe/Berlin, UTC)") from None


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--since",
        type=since_value,
        metavar="30d|DATE",
        help="from: Nd (the last N local days, today included), month (this month), all, or a "
        "date / date-time (default: 30d; with --budget: month)",
    )
    p.add_argument(
        "--until",
        type=date_value,
        metavar="DATE",
        help="to the end of this day (a date-time: up to that instant; default: now)",
    )
    p.add_argument(
        "--by", choices=USAGE_PERIODS, default="day", help="a row per day (default), week or month"
    )
    p.add_argument("--group", choices=GROUP_CHOICES, help="also split each period by model, source, …")
    p.add_argument(
        "--tz", type=zone_value, metavar="ZONE", help="the time zone of days and dates (default: local)"
    )
    p.add_argument(
        "--budget",
        type=non_negative_float,
        metavar="USD",
        help=f"exit {EXIT_CODES['over_budget']} when the range cost more than USD (for cron jobs)",
    )
    p.add_argument(
        "--check",
        action="store_true",
        help="the accounting check: sessions without tokens or without a price, unpriced models",
    )
    p.add_argument(
        "--list", choices=tuple(CHECK_KINDS), metavar="KIND", help="the ids behind one kind of the check"
    )
    p.add_argument("--limit", type=non_negative_int, default=50, help="--list: N ids (0 = all; default 50)")
    p.add_argument("--offset", type=non_negative_int, default=0, help="--list: skip the first N ids")
    add_profile_options(p)


def failed(stores: Stores, errors: Mapping[str, Any]) -> None:
    """A federated answer's failed stores (`ProfileError`s by profile): warned about, or the
    command's error when only one store is open."""
    stores.failed(list(errors.values()))


# ---------------------------------------------------------------- the range
def midnight(day: dt.date, zone: dt.tzinfo) -> float:
    return dt.datetime(day.year, day.month, day.day, tzinfo=zone).timestamp()


def resolve_range(
    args: argparse.Namespace, zone: dt.tzinfo, now: float
) -> tuple[float | dt.date | dt.datetime | None, dt.date | dt.datetime | None]:
    """`--since` / `--until` as the store takes them (dates are local days of `zone`)."""
    since: Since = args.since if args.since is not None else ("month" if args.budget is not None else 30)
    today = dt.datetime.fromtimestamp(now, zone).date()
    lo: float | dt.date | dt.datetime | None
    if since == "all":
        lo = None
    elif since == "month":
        lo = today.replace(day=1)
    elif isinstance(since, int):
        lo = last_days_start(since, zone, now)
    else:
        lo = since  # type: ignore[assignment]  # a date or a date-time
    hi = args.until
    if isinstance(hi, dt.date) and not isinstance(hi, dt.datetime):
        hi = hi + dt.timedelta(days=1)  # --until DATE: to the end of that day
    if lo is not None and hi is not None and _ts(hi, zone) <= _ts(lo, zone):
        raise UsageError("the range is empty: --until must be after --since")
    return lo, hi


def _ts(value: float | dt.date | dt.datetime, zone: dt.tzinfo) -> float:
    if isinstance(value, dt.datetime):
        return (value if value.tzinfo else value.replace(tzinfo=zone)).timestamp()
    if isinstance(value, dt.date):
        return midnight(value, zone)
    return float(value)


def start_text(ts: float, zone: dt.tzinfo) -> str:
    """A range's start: its local day when it starts one, else the local time."""
    a = dt.datetime.fromtimestamp(ts, zone)
    return a.date().isoformat() if a.time() == dt.time(0) else a.strftime("%Y-%m-%d %H:%M")


def end_text(ts: float, zone: dt.tzinfo) -> str:
    """A range's (exclusive) end: the last local day it includes when it ends one, else the
    local time it stops before."""
    b = dt.datetime.fromtimestamp(ts, zone)
    if b.time() == dt.time(0):
        return (b.date() - dt.timedelta(days=1)).isoformat()
    return f"{b.strftime('%Y-%m-%d %H:%M')} (not included)"


def range_text(since: float | None, until: float | None, zone: dt.tzinfo) -> str:
    """`2025-01-01 to 2025-01-31` (whole local days, the end included), `from …`, `to …`, or
    `all time`."""
    if since is None and until is None:
        return "all time"
    if until is None:
        return f"from {start_text(since, zone)}" if since is not None else "all time"
    if since is None:
        return f"to {end_text(until, zone)}"
    return f"{start_text(since, zone)} to {end_text(until, zone)}"


def _local_iso(ts: float, zone: dt.tzinfo) -> str:
    return dt.datetime.fromtimestamp(ts, zone).isoformat(timespec="seconds")


# ---------------------------------------------------------------- run
def run(stores: Stores, args: argparse.Namespace) -> int:
    if args.budget is not None and (args.check or args.list):
        raise UsageError("--budget checks the cost: it cannot be combined with --check or --list")
    zone: dt.tzinfo = args.tz or local_tz()
    now = _now()
    since, until = resolve_range(args, zone, now)
    if args.check or args.list:
        return _run_check(stores, args, zone, since, until)
    fed, profiles = stores.fed, stores.profiles
    report = federated_usage_report(fed, args.by, args.group, since, until, zone, now, profiles)
    failed(stores, report.errors)
    status: BudgetStatus | None = None
    check: UsageCheck | None = None
    month_lo = midnight(dt.datetime.fromtimestamp(now, zone).date().replace(day=1), zone)
    if args.budget is not None:
        status = federated_usage_budget(fed, args.budget, report.since, report.until, zone, now, profiles)
        check = federated_usage_check(fed, report.since, report.until, zone, profiles)
        failed(stores, status.errors)
        failed(stores, check.errors)
    elif report.since < now and report.until > month_lo:  # the range includes the current month
        status = federated_usage_budget(fed, 0.0, None, None, zone, now, profiles)
        failed(stores, status.errors)
    shows_month = status is not None and report.since < now and report.until > month_lo
    verdict = budget_verdict(status, check) if args.budget is not None else None
    code = EXIT_CODES["over_budget"] if verdict and verdict["over"] else 0
    if args.json:
        doc: dict[str, Any] = {
            **report.as_dict(),
            "tz_source": "--tz" if args.tz else "local",
            "range": {"since": _local_iso(report.since, zone), "until": _local_iso(report.until, zone)},
            "month_to_date": _month_dict(status) if shows_month and status is not None else None,
            "budget": verdict,
            "errors": stores.errors(),
        }
        emit_json(doc)
        return code
    print_report(report, zone, tz_given=bool(args.tz), profiles=stores.profiles if stores.several else [])
    if shows_month and status is not None:
        print_month(status, monthly_budget=args.budget is not None and report.since == month_lo)
    if report.period_totals:
        out(BASIS_LEGEND)
    if verdict is not None and status is not None:
        print_budget(verdict, status, zone)
    return code


# ---------------------------------------------------------------- the report as text
def group_label(group: str | None, name: str) -> str:
    """A group as shown: the store's text (sanitized by the table), '-' when empty (the main
    loop for `--group task`)."""
    if name:
        return name
    return "(main loop)" if group == "task" else "-"


def figure_cells(f: UsageFigures) -> list[Any]:
    """A figure's columns: counts with thousands separators, the cost and its basis."""
    return [f"{getattr(f, name):,}" for _h, name in FIGURE_COLUMNS] + [
        fmt_cost(f.cost_usd),
        BASIS_WORDS[f.cost_basis],
    ]


def figures_table(first: tuple[str, ...], rows: Sequence[tuple[tuple[str, ...], UsageFigures]]) -> str:
    headers = (*first, *(h for h, _n in FIGURE_COLUMNS), "COST", "BASIS")
    n = len(first)
    return table(
        headers,
        [(*keys, *figure_cells(f)) for keys, f in rows],
        right=tuple(range(n, n + len(FIGURE_COLUMNS) + 1)),
        limits={i: 40 for i in range(n)},
    )


def print_report(report: UsageReport, zone: dt.tzinfo, tz_given: bool, profiles: list[str]) -> None:
    """The tables (period × group, per period, per group), the totals and the cache-read share;
    `profiles`: the stores added up, named when there are several."""
    group, names = report.group, report.group_names()
    zone_note = "" if tz_given else ", the local time zone"
    by = f", by {group}" if group else ""
    span = range_text(report.since, report.until, zone) if report.periods else "(empty)"
    out(f"Usage {span} ({s(report.tz)}{zone_note}), per {report.by}{by}")
    if profiles:
        out(f"Profiles added up: {', '.join(s(p) for p in profiles)}")
    used = [p for p in report.periods if p.index in report.period_totals]
    if not used:
        out("\nNo usage recorded in this range.")
        return
    period_head = report.by.upper()
    if group is not None:
        cells = [
            ((p.label, group_label(group, g)), report.cells[(p.index, g)])
            for p in used
            for g in names
            if (p.index, g) in report.cells
        ]
        out("")
        out(figures_table((period_head, group.upper()), cells))
    per = [((p.label,), report.period_totals[p.index]) for p in used]
    out(f"\nPer {report.by}:" if group is not None else "")
    out(figures_table((period_head,), [*per, (("TOTAL",), report.total)]))
    if group is not None:
        out(f"\nBy {group}:")
        rows = [((group_label(group, g),), report.groups[g]) for g in names]
        out(figures_table((group.upper(),), [*rows, (("TOTAL",), report.total)]))
    empty = len(report.periods) - len(used)
    if empty:
        out(f"({plural(empty, report.by)} without usage not shown)")
    print_totals(report.total)


def print_totals(t: UsageFigures) -> None:
    cost = f"Cost: {fmt_cost(t.cost_usd)} ({BASIS_WORDS[t.cost_basis]}"
    if t.cost_basis == "mixed":
        cost += f": {fmt_cost(t.actual_cost_usd)} actual, {fmt_cost(t.estimated_cost_usd)} estimated"
    out(f"\n{cost})   {plural(t.sessions, 'session')}, {plural(t.api_calls, 'API call')}")
    out(
        f"Tokens: {t.total_tokens:,} ({t.prompt_tokens:,} prompt: {t.input_tokens:,} input, "
        f"{t.cache_read_tokens:,} cache read, {t.cache_write_tokens:,} cache write; "
        f"{t.output_tokens:,} output, {t.reasoning_tokens:,} of it reasoning)"
    )
    share = t.cache_read_share
    out(
        "Cache read share: "
        + ("- (no prompt tokens)" if share is None else f"{share:.1%} of prompt tokens read from the cache")
    )


def print_month(status: BudgetStatus, monthly_budget: bool) -> None:
    mtd = status.month_to_date
    line = (
        f"Month to date ({s(status.month)}, day {status.days_elapsed:.1f} of {status.days_in_month:.0f}): "
        f"{fmt_cost(mtd.cost_usd)} ({BASIS_WORDS[mtd.cost_basis]}); pace: {fmt_cost(status.pace_usd)} "
        "for the month"
    )
    if monthly_budget:
        verdict = "over" if status.pace_over else "within"
        line += f" ({verdict} the budget of {format_cost(status.budget_usd)})"
    out(line)


# ---------------------------------------------------------------- the budget
def budget_verdict(status: BudgetStatus | None, check: UsageCheck | None) -> dict[str, Any] | None:
    """The budget's answer: `over` (the exit code), whether the cost is known at all, and how
    many sessions of the range have usage without a price or without tokens (the spend is then
    a lower bound). A cost is unknown when no cost was recorded in the range and not all of its
    usage is subscription-included."""
    if status is None or check is None:
        return None
    spent = status.spent
    unpriced = sum(check.counts.get(k, 0) for k in ("no_tokens", "unpriced", "uncosted"))
    known = spent.cost_basis != "none" or (
        spent.total_tokens > 0 and unpriced == 0 and check.counts.get("included", 0) > 0
    )
    return {
        **status.as_dict(),
        "over": bool(known and status.over),
        "cost_known": known,
        "sessions_without_price": unpriced,
        "exit_code": EXIT_CODES["over_budget"] if known and status.over else 0,
    }


def print_budget(verdict: dict[str, Any], status: BudgetStatus, zone: dt.tzinfo) -> None:
    spent, budget = status.spent, format_cost(status.budget_usd)
    basis = BASIS_WORDS[spent.cost_basis]
    unpriced = int(verdict["sessions_without_price"])
    out("")
    if not verdict["cost_known"]:
        what = "no usage was recorded" if spent.total_tokens == 0 else "no priced usage was recorded"
        out(f"budget {budget}: the cost is unknown ({what} in the range)")
        err(
            f"warning: budget not checked: {what} in {range_text(status.since, status.until, zone)}"
            + (f" ({plural(unpriced, 'session')} without a price or tokens: see --check)" if unpriced else "")
        )
        return
    if verdict["over"]:
        by = format_cost(status.over_by_usd)
        out(f"over budget by {by} (spent {format_cost(spent.cost_usd)} of {budget}, {basis})")
    else:
        left = format_cost(status.budget_usd - spent.cost_usd)
        out(f"under budget: {left} left (spent {format_cost(spent.cost_usd)} of {budget}, {basis})")
    if unpriced:
        out(
            f"note: {plural(unpriced, 'session')} of the range had usage without a price or without "
            "tokens: the spend is a lower bound (see --check)"
        )
    if status.errors:
        out(f"note: the spend leaves out {', '.join(s(p) for p in status.errors)}, which failed")


def _month_dict(status: BudgetStatus) -> dict[str, Any]:
    return {
        "month": status.month,
        "figures": status.month_to_date.as_dict(),
        "days_elapsed": status.days_elapsed,
        "days_in_month": status.days_in_month,
        "pace_usd": status.pace_usd,
    }


# ---------------------------------------------------------------- the accounting check
def _run_check(stores: Stores, args: argparse.Namespace, zone: dt.tzinfo, since: Any, until: Any) -> int:
    fed, profiles = stores.fed, stores.profiles
    check = federated_usage_check(fed, since, until, zone, profiles)
    failed(stores, check.errors)
    lo = None if since is None else _ts(since, zone)
    hi = None if until is None else _ts(until, zone)
    span = {
        "since": None if lo is None else _local_iso(lo, zone),
        "until": None if hi is None else _local_iso(hi, zone),
    }
    tz = getattr(zone, "key", None) or str(zone)
    if args.list:
        return _run_list(stores, args, check, zone, since, until, span, tz)
    if args.json:
        emit_json({**check.as_dict(), "tz": tz, "range": span, "errors": stores.errors()})
        return 0
    out(f"Accounting check, {range_text(lo, hi, zone)} ({s(tz)}): sessions whose span overlaps the range")
    shown = list(check.by_profile) if stores.several else []
    rows = [
        (kind, *(f"{check.by_profile[p].get(kind, 0):,}" for p in shown), f"{n:,}")
        for kind, n in check.counts.items()
    ]
    total_head = "ALL" if shown else "SESSIONS"
    out(table(("KIND", *(s(p, 24) for p in shown), total_head), rows, right=range(1, len(shown) + 2)))
    out("")
    for kind in check.counts:
        out(f"{kind}: {CHECK_KINDS[kind]}")
    out(f"\nUnpriced models: {check.explanations['models']}")
    if check.models:
        out(
            table(
                ("MODEL", "PROVIDER", "SESSIONS", "TOKENS"),
                [(m.model, m.provider or "-", f"{m.sessions:,}", f"{m.tokens:,}") for m in check.models],
                right=(2, 3),
                limits={0: 48, 1: 24},
            )
        )
    else:
        out("(none)")
    out("\nThe sessions of a kind: hermes-tui sessions usage --list KIND (with the same range)")
    return 0


def _run_list(
    stores: Stores,
    args: argparse.Namespace,
    check: UsageCheck,
    zone: dt.tzinfo,
    since: Any,
    until: Any,
    span: dict[str, Any],
    tz: str,
) -> int:
    kind, total = args.list, check.counts.get(args.list, 0)
    limit = args.limit or max(0, total - args.offset)
    found = federated_check_sessions(stores.fed, kind, check, since, until, zone, args.offset, limit)
    if args.json:
        emit_json(
            {
                "kind": kind,
                "explanation": CHECK_KINDS[kind],
                "sessions": [{"profile": p, "id": i} for p, i in found],
                "total": total,
                "offset": args.offset,
                "limit": args.limit,
                "tz": tz,
                "range": span,
                "errors": stores.errors(),
            }
        )
        return 0
    for profile, sid in found:
        out(f"{s(profile)}:{s(sid)}" if stores.several else s(sid))
    if not found:
        err(f"{kind}: no session from #{args.offset + 1:,} on ({plural(total, 'session')} in all)")
        return 0
    last = args.offset + len(found)
    more = f"; --offset {last} for the next ones" if last < total else ""
    err(f"{kind}: sessions #{args.offset + 1:,} to #{last:,} of {total:,}{more}")
    return 0


COMMANDS = (
    Command(
        "usage",
        "Tokens and cost per day, week or month, by model, source or profile; a budget; a check.",
        arguments,
        run,
    ),
)
