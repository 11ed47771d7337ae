"""What `hermes-tui sessions` prints: lines, one JSON document, tables.

Every string that comes from a store is made inert (`hermes_tui.safe_text`) before it is
printed: fields where they are formatted (so widths are right), and every line again on its way
out, so nothing printed here can drive the terminal. JSON output is `exporting.json_text`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from hermes_tui.exporting import json_text
from hermes_tui.formatting import format_cost
from hermes_tui.safe_text import as_text, cell_width, fit_cells, inert, one_line
from hermes_tui.state import tool_call_fields


def out(text: str = "") -> None:
    """Print a line of plain output (inert: the net under the fields' own sanitizing)."""
    print(inert(text))


def err(text: str) -> None:
    """A line for people on stderr (warnings, notes, errors)."""
    print(inert(text), file=sys.stderr)


def emit_json(obj: Any) -> None:
    """The command's one JSON document on stdout."""
    sys.stdout.write(json_text(obj, indent=2) + "\n")


def s(value: Any, width: int | None = None) -> str:
    """A store value inline: one line, inert, '' for None."""
    return one_line(value, width)


def tool_calls_of(value: Any) -> list[Any]:
    """A message's `tool_calls` as a list whatever the store handed back (a list, one call, raw
    text); none for NULL, "" or []."""
    if value is None or value == "" or value == []:
        return []
    return value if isinstance(value, list) else [value]


def tool_call_line(call: Any) -> str:
    """One tool call as the CLI prints it under a message: `  → tool call name(arguments)`,
    the arguments as JSON text; a call that is not a dict as its text. Each part on one line."""
    if not isinstance(call, dict):
        return f"  → tool call {s(as_text(call), 200)}"
    name, arguments = tool_call_fields(call)
    if not isinstance(arguments, str):
        arguments = json_text(arguments)
    return f"  → tool call {s(name or 'tool', 80)}({s(arguments, 200)})"


def short_time(ts: Any) -> str:
    """A unix time as `YYYY-MM-DDTHH:MMZ` (UTC), '-' when unknown."""
    if ts is None:
        return "-"
    try:
        return datetime.fromtimestamp(float(ts), UTC).strftime("%Y-%m-%dT%H:%MZ")
    except (TypeError, ValueError, OverflowError, OSError):
        return one_line(ts, 24)


def fmt_cost(value: Any) -> str:
    """A cost in a CLI table: the one cost formatter, to 1/100 cent (agent turns cost fractions
    of a cent; the browser's narrow columns show cents)."""
    return format_cost(value, places=4)


def cell(value: Any, limit: int | None = None) -> str:
    """A table cell: one inert line, cut to `limit` terminal cells (CJK counts 2)."""
    text = one_line(value)
    if limit is not None and cell_width(text) > limit:
        text = fit_cells(text, limit).rstrip(" ")
    return text


def table(
    headers: Sequence[str],
    rows: Sequence[Sequence[Any]],
    right: Sequence[int] = (),
    limits: dict[int, int] | None = None,
) -> str:
    """Columns aligned by terminal cells, not characters, so CJK titles line up."""
    limits = limits or {}
    cells = [[cell(c, limits.get(i)) for i, c in enumerate(r)] for r in rows]
    widths = [max([cell_width(h)] + [cell_width(r[i]) for r in cells]) for i, h in enumerate(headers)]

    def pad(text: str, i: int) -> str:
        gap = " " * (widths[i] - cell_width(text))
        return gap + text if i in right else text + gap

    def line(vals: Sequence[str]) -> str:
        return "  ".join(pad(v, i) for i, v in enumerate(vals)).rstrip()

    return "\n".join([line(headers), line(["-" * w for w in widths])] + [line(r) for r in cells])


def titled_table(
    title: str,
    headers: Sequence[str],
    records: Sequence[dict[str, Any]],
    cells: Callable[[dict[str, Any]], Sequence[Any]],
    right: Sequence[int],
    limits: dict[int, int],
) -> None:
    """One section of a report: a blank line, its title, then a table of one row per record."""
    out(f"\n{title}")
    out(table(headers, [cells(r) for r in records], right=right, limits=limits))


def ident(row: dict[str, Any]) -> str:
    """`id “title”` for messages and prompts (inert; the title cut to 60 characters)."""
    title = row.get("title")
    return f"{s(row.get('id'))} “{s(title, 60)}”" if title else s(row.get("id"))
