"""The session list's columns: which fit a width, and what each cell of a row shows.

Pure drawing of one row's cells as `Text` (no widget state): `SessionList` lays the cells out in
a `Strip` and caches it. Styles come through ``style`` (the list's component classes, resolved
by the widget), so the theme stays the widget's business.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from rich.style import Style
from rich.text import Text

from hermes_tui.app.render import (
    EDGE_MARKS,
    FLAG_MARKS,
    Clock,
    format_cost,
    human_count,
    one_line,
    relative_time,
    session_label,
)

#: A component class's style (``"session-list--mark"`` -> its `Style`), from the widget.
StyleOf = Callable[[str], Style]


@dataclass(frozen=True)
class Column:
    """One list column: key, header, width (0 = flexible), alignment, minimum list width; from
    a list width of ``wide_total`` on, ``wide_width`` cells (0: never wider)."""

    key: str
    header: str
    width: int
    justify: str = "left"
    min_total: int = 0
    wide_width: int = 0
    wide_total: int = 0

    def width_at(self, total: int) -> int:
        """The column's width in a list ``total`` cells wide (0 = flexible)."""
        return self.wide_width if self.wide_width and total >= self.wide_total else self.width


SELECTED_MARK = "●"

COLUMNS: tuple[Column, ...] = (
    Column("sel", "", 1),
    Column("mark", "", 2),
    Column("title", "Title / first prompt", 0),
    # No minimum width of its own: over several stores `PROFILE_DROPS` makes room for it (a
    # minimum of 60 hid it at 120 columns, where the list's scrollbar leaves 59).
    Column("profile", "Profile", 12),
    Column("source", "Source", 9, min_total=40),
    Column("model", "Model", 16, min_total=96),
    Column("msgs", "Msgs", 5, "right", min_total=50),
    Column("tokens", "Tokens", 7, "right", min_total=62),
    Column("cost", "Cost", 7, "right", min_total=78),
    # In a list wide enough that the title keeps its room (a zoomed list on a wide terminal) it
    # says what a working session is doing now (`last_activity_description`, today's Hermes);
    # else "● working" (the detail line above the transcript says what).
    Column("live", "Live", 9, min_total=50, wide_width=28, wide_total=140),
    Column("time", "Active", 10, "right"),
)

LIVE_MARKS = {"working": "● working", "waiting": "◐ waiting"}


def live_label(status: dict[str, Any] | None) -> str:
    """ "● working", "◐ waiting", "idle 12m" for an open session; "" when ended or unknown."""
    if not status:
        return ""
    state = status.get("state")
    if state in LIVE_MARKS:
        return LIVE_MARKS[state]
    if state == "idle":
        idle = status.get("idle_s")
        if not isinstance(idle, int | float):
            return "idle"
        minutes = int(idle // 60)
        if minutes < 60:
            return f"idle {minutes}m"
        if minutes < 48 * 60:
            return f"idle {minutes // 60}h"
        return f"idle {minutes // 1440}d"
    return ""


def drawn_status(status: dict[str, Any] | None) -> tuple[str, Any]:
    """What a row shows of its live status: the label and the state that colours it."""
    return live_label(status), (status or {}).get("state")


#: Over several stores: columns dropped, in this order, until the title has this many cells.
PROFILE_DROPS = ("model", "cost", "tokens", "live", "msgs", "source", "profile")
PROFILE_TITLE_MIN = 16


def layout_columns(width: int, profile: bool = False) -> list[tuple[Column, int]]:
    """Columns that fit ``width`` with their widths; the title takes what is left. The profile
    column is there only when the list spans several stores (`profile`)."""
    chosen = [c for c in COLUMNS if width >= c.min_total and (profile or c.key != "profile")]
    fixed = sum(c.width_at(width) for c in chosen if c.width) + len(chosen) - 1
    if profile:  # room for the profile: the least telling columns give way first
        for key in PROFILE_DROPS:
            if width - fixed >= PROFILE_TITLE_MIN:
                break
            gone = next((c for c in chosen if c.key == key), None)
            if gone is not None:
                chosen.remove(gone)
                fixed -= gone.width_at(width) + 1
    title_width = max(8, width - fixed)
    return [(c, c.width_at(width) or title_width) for c in chosen]


def still_listed(marks: set[Any], ids: Sequence[Any]) -> set[Any]:
    """The marks that `ids` still holds. A plain list is scanned once; any other sequence (the
    merged list of several stores) is asked per mark, since iterating it would merge every
    store's whole order on the event loop."""
    if isinstance(ids, list | tuple):
        return marks.intersection(ids)
    return {key for key in marks if key in ids}


def _live_text(row: dict[str, Any], status: dict[str, Any] | None, style: StyleOf, width: int = 0) -> Text:
    """The live status; in a wide column, for a working session, what it is doing now."""
    label = live_label(status)
    state = (status or {}).get("state")
    if not label or state not in ("working", "waiting", "idle"):
        return Text(label)
    doing = one_line(row.get("last_activity_description"))
    if state == "working" and doing and width > len(label):
        label = f"● {doing}"
    return Text(label, style=style(f"session-list--{state}"))


def title_text(row: dict[str, Any], style: StyleOf) -> Text:
    """The title (else the first prompt, dimmed), after the row's flag marks (`FLAG_MARKS`):
    an unread session's title is bold, as in Hermes' desktop."""
    text = Text()
    for key, mark, _word in FLAG_MARKS:
        if row.get(key):
            name = {"unread": "session-list--unread", "pinned": "session-list--pinned"}.get(key)
            text.append(mark, style=style(name) if name else "")
    if text:
        text.append(" ")
    label = one_line(row.get("title"))
    if label:
        text.append(label, style="bold" if row.get("unread") else "")
    else:
        text.append(session_label(row), style=style("session-list--untitled"))
    return text


def row_cell(
    col: Column,
    row: dict[str, Any],
    width: int,
    *,
    style: StyleOf,
    status: dict[str, Any] | None,
    now: Clock,
    live_column: bool,
) -> Text:
    """What ``row`` shows in ``col`` (``width`` cells); ``status`` is its live status, and
    without a Live column (``live_column`` False) working/waiting show in the time column."""
    key = col.key
    if key == "sel":
        return Text("")
    if key == "mark":
        mark = EDGE_MARKS.get(row.get("edge_kind") or "", " ")
        kids = "+" if (row.get("child_count") or 0) > 0 else " "
        return Text(mark + kids, style=style("session-list--mark"))
    if key == "title":
        return title_text(row, style)
    if key == "profile":
        return Text(one_line(row.get("profile")), style=style("session-list--mark"))
    if key == "source":
        return Text(one_line(row.get("source")))
    if key == "model":
        model = one_line(row.get("model"))
        return Text(model.rsplit("/", 1)[-1])
    if key == "msgs":
        return Text(human_count(row.get("message_count")))
    if key == "tokens":
        return Text(human_count((row.get("input_tokens") or 0) + (row.get("output_tokens") or 0)))
    if key == "cost":
        return Text(format_cost(row))
    if key == "live":
        return _live_text(row, status, style, width)
    if key == "time":
        if not live_column and status and status.get("state") in LIVE_MARKS:
            return _live_text(row, status, style)  # too narrow for the Live column: shown here
        return Text(relative_time(row.get("last_active") or row.get("started_at"), now()))
    return Text("")
