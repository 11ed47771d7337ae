"""`sessions stats`: totals, usage by source and model, costliest sessions and chains, activity
by day and the store's health, per store (several stores: a table of each profile's totals and
their sum first)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from functools import partial
from typing import Any

from hermes_tui.cli.command import Command
from hermes_tui.cli.output import emit_json, fmt_cost, out, s, table, titled_table
from hermes_tui.cli.parser import add_profile_options, non_negative_int
from hermes_tui.cli.stores import Stores
from hermes_tui.formatting import plural
from hermes_tui.safe_text import one_line
from hermes_tui.state import SessionDB


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--days", type=non_negative_int, default=30, help="days of activity to chart (default 30)")
    p.add_argument("--top", type=non_negative_int, default=10, help="rows in the costliest lists")
    add_profile_options(p)


def _stats_data(db: SessionDB, days: int, top: int) -> dict[str, Any]:
    return {
        "totals": db.totals(),
        "sessions_by_source": db.sessions_by_source(),
        "usage_by_model": db.usage_by_model(),
        "costliest_sessions": db.costliest_sessions(top),
        "costliest_chains": db.costliest_chains(top),
        "activity_by_day": db.activity_by_day(days=days),
        "store_health": db.store_health(),
    }


def sum_totals(parts: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The numbers of each profile's totals added up."""
    total: dict[str, Any] = {}
    for part in parts:
        for key, value in part.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                total[key] = total.get(key, 0) + value
    return total


def run(stores: Stores, args: argparse.Namespace) -> int:
    got, _failed = stores.every(_stats_data, args.days, args.top)
    per = {p: got[p] for p in stores.profiles if p in got}
    total = sum_totals([d["totals"] for d in per.values()])
    if args.json:
        emit_json({"profiles": per, "total": total, "errors": stores.errors()})
        return 0
    if not stores.several:
        for data in per.values():
            print_stats(data, args.days)
        return 0
    rows = [_totals_row(p, d["totals"]) for p, d in per.items()] + [_totals_row("TOTAL", total)]
    out(
        table(
            ("PROFILE", "SESSIONS", "MESSAGES", "INPUT", "OUTPUT", "COST"),
            rows,
            right=(1, 2, 3, 4, 5),
            limits={0: 32},
        )
    )
    for p, data in per.items():
        out(f"\n== {one_line(p)} ==")
        print_stats(data, args.days)
    return 0


def _totals_row(name: str, t: dict[str, Any]) -> tuple[Any, ...]:
    return (
        name,
        t.get("sessions") or 0,
        t.get("messages") or 0,
        t.get("input_tokens") or 0,
        t.get("output_tokens") or 0,
        fmt_cost(t.get("cost")),
    )


_SOURCE = ("SOURCE", "source", "text", 40)
_MODEL = ("MODEL", "model", "text", 40)
_TITLE = ("TITLE", "title", "text", 40)
_COST = ("COST", "cost", "cost", 0)
#: The tables of one store's stats: (title, data key, shown when empty, columns); a column is
#: (header, field, kind, width): kind "text" ('' when missing, "-" '-'), "n" (0) or "cost".
TABLES: tuple[tuple[str, str, bool, tuple[tuple[str, str, str, int], ...]], ...] = (
    (
        "By source:",
        "sessions_by_source",
        True,
        (
            _SOURCE,
            ("SESSIONS", "sessions", "n", 0),
            ("MESSAGES", "messages", "n", 0),
            ("TOKENS", "tokens", "n", 0),
            _COST,
        ),
    ),
    (
        "By model:",
        "usage_by_model",
        True,
        (
            _MODEL,
            ("SESSIONS", "session_count", "n", 0),
            ("INPUT", "total_input", "n", 0),
            ("OUTPUT", "total_output", "n", 0),
            ("COST", "total_cost", "cost", 0),
        ),
    ),
    (
        "Costliest sessions:",
        "costliest_sessions",
        True,
        (
            ("ID", "id", "text", 0),
            _TITLE,
            ("SOURCE", "source", "-", 16),
            ("TOKENS", "total_tokens", "n", 0),
            _COST,
        ),
    ),
    (
        "Costliest chains (root and descendants):",
        "costliest_chains",
        False,
        (
            ("ROOT", "root_id", "text", 0),
            _TITLE,
            ("SESSIONS", "sessions", "n", 0),
            ("MESSAGES", "messages", "n", 0),
            ("TOKENS", "tokens", "n", 0),
            _COST,
        ),
    ),
)


def _values(columns: tuple[tuple[str, str, str, int], ...], row: dict[str, Any]) -> list[Any]:
    return [_value(row, field, kind) for _header, field, kind, _width in columns]


def _value(row: dict[str, Any], field: str, kind: str) -> Any:
    value = row.get(field)
    if kind == "cost":
        return fmt_cost(value)
    if kind == "n":
        return value or 0
    return value or ("-" if kind == "-" else "")


def _bar(value: int, top: int, width: int = 40) -> str:
    if top <= 0 or value <= 0:
        return ""
    return "█" * max(1, round(width * value / top))


def print_stats(data: dict[str, Any], days: int) -> None:
    t = data["totals"]
    out(
        f"Sessions: {t.get('sessions') or 0}   messages: {t.get('messages') or 0}   tokens: "
        f"{t.get('input_tokens') or 0} in / {t.get('output_tokens') or 0} out   cost: "
        f"{fmt_cost(t.get('cost'))}"
    )
    for title, key, always_shown, columns in TABLES:
        if always_shown or data[key]:
            titled_table(
                title,
                [header for header, _field, _kind, _width in columns],
                data[key],
                partial(_values, columns),
                right=[i for i, (_h, _f, kind, _w) in enumerate(columns) if kind in ("n", "cost")],
                limits={i: width for i, (_h, _f, _k, width) in enumerate(columns) if width},
            )
    _print_activity(data["activity_by_day"], days)
    _print_health(data["store_health"])


def _print_activity(act: list[dict[str, Any]], days: int) -> None:
    out(f"\nActivity, last {days} days (messages per UTC day):")
    if not act:
        out("  (none)")
    top = max((a["messages"] for a in act), default=0)
    for a in act:
        out(
            f"  {s(a['day'], 12)}  {_bar(a['messages'], top):<40}  {a['messages']} msgs, "
            f"{plural(int(a['sessions'] or 0), 'session')}"
        )


def _print_health(h: dict[str, Any]) -> None:
    out("\nStore health:")
    idx = (
        ", ".join(f"{s(k)}={'?' if v is None else s(v)}" for k, v in (h.get("index_rows") or {}).items())
        or "none"
    )
    out(
        f"  schema v{h.get('schema_version')} (code v{h.get('code_schema_version')}), FTS layout "
        f"{h.get('fts_layout')},"
        f" trigram {'yes' if h.get('trigram') else 'no'}, CJK {h.get('cjk') or 'no'} ({h.get('cjk_index')})"
    )
    out(f"  messages {h.get('messages')} ({h.get('messages_non_tool')} non-tool); index rows: {idx}")
    out(
        f"  file {h.get('file_size', 0):,} bytes, WAL {h.get('wal_size', 0):,} bytes;"
        f" other writers: {len(h.get('other_writers') or [])}"
    )


COMMANDS = (
    Command(
        "stats",
        "Totals, usage by source and model, costliest sessions and chains, activity, health.",
        arguments,
        run,
    ),
)
