"""The session list's order and filters: what the filter bar, the keys and the settings set,
and the ordered ids a worker reads for them. Pure functions, plus `ordered_ids` (a store).

The main screen keeps the values (`filter`, `order`, `active_only`, `profile_filter`) and asks
these functions what they mean; `list_views.py` holds the views (Hermes' list, archived…).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from hermes_tui.app.list_views import narrowed, view_base, view_of, with_order, with_view
from hermes_tui.safe_text import one_line
from hermes_tui.state import SessionDB, SessionFilter

DATE_PRESETS: tuple[tuple[str, int], ...] = (
    ("last 24 h", 1),
    ("last 7 days", 7),
    ("last 30 days", 30),
    ("last 90 days", 90),
    ("last year", 365),
)
#: "Active now": open sessions with a message (or a start) in the last this many seconds.
ACTIVE_WITHIN_S = 600.0


def filter_summary(
    flt: SessionFilter, days: int | None, active_only: bool, profiles: tuple[str, ...] | None
) -> str:
    """The active filter in a few words ("source=cli · last 7 days · title~deploy"), or ""."""
    parts = []
    if flt.sources:
        parts.append("source=" + ",".join(one_line(v, 24) for v in flt.sources))
    if flt.models:
        parts.append("model=" + ",".join(one_line(v, 24) for v in flt.models))
    if flt.started_after is not None:
        label = {d: name for name, d in DATE_PRESETS}.get(days or -1)
        parts.append(label or "recent")
    if flt.text:
        parts.append(f"title~{one_line(flt.text, 30)}")
    if active_only:
        parts.append("active now")
    if profiles:
        parts.append("profile=" + ",".join(one_line(p, 24) for p in profiles))
    return " · ".join(parts)


def filter_active(flt: SessionFilter, active_only: bool, profiles: tuple[str, ...] | None) -> bool:
    """Some filter narrows the list, or another view than Hermes' list is shown (the order is
    not a filter): F clears it."""
    return narrowed(flt) or view_of(flt) != "default" or active_only or bool(profiles)


def empty_text(summary: str, view: str) -> str:
    """What the list says when it has no rows."""
    if summary:
        return f"No session matches filter: {summary}. Press F to clear the filter."
    if view == "archived":
        return "No archived sessions. Press A to go back to the list."
    return "This database has no sessions yet."


def bar_filter(
    flt: SessionFilter, source: Any, model: Any, days: Any, text: str, view: Any, now: float
) -> SessionFilter:
    """The filter the bar's menus and text box say (a menu left blank is not a `str`/`int`)."""
    flt = replace(
        flt,
        sources=(source,) if isinstance(source, str) else (),
        models=(model,) if isinstance(model, str) else (),
        started_after=now - days * 86400 if isinstance(days, int) else None,
        text=text or None,
    )
    return with_view(flt, view if isinstance(view, str) else "default")


def restored_filter(flt: SessionFilter, order: str, source: str, text: str, view: str) -> SessionFilter:
    """The filter the settings file remembers."""
    flt = replace(flt, sources=(source,) if source else (), text=text or None)
    return with_view(with_order(flt, order), view)


def remembered(flt: SessionFilter, order: str, active_only: bool) -> dict[str, Any]:
    """What the settings file keeps of the list (`HermesApp.remember`)."""
    return {
        "order": order,
        "source": flt.sources[0] if len(flt.sources) == 1 else "",
        "filter_text": flt.text or "",
        "active_now": active_only,
        "view": view_of(flt),
    }


def index_after_write(near: tuple[Any, int] | None, keep: Any, ids: Any) -> int | None:
    """Where the cursor goes when this app's write reloads the list: ``near`` is (the kept row,
    the cursor's index) before the write. When the kept session went with the write (a
    delete), the row that took its place is selected, not the first one; a live reorder of the
    same change does the same, so whichever lands last, the same session opens."""
    if near is not None and near[0] == keep and keep not in ids:
        return min(near[1], max(len(ids) - 1, 0))
    return None


def ordered_ids(
    db: SessionDB, flt: SessionFilter, order: str, active: bool, now: float
) -> tuple[list[str], int]:
    """The ids of the list and the count of its view (worker thread): Hermes' list, or its
    archived view, with no filter of the bar. "Active now" keeps, in the current order,
    the open sessions with recent activity."""
    ids = db.session_order(flt, order=order).ids
    unfiltered = not narrowed(flt) and not active
    total = len(ids) if unfiltered else db.list_count(view_base(flt))
    if active:
        recent = set(db.active_sessions(now, ACTIVE_WITHIN_S))
        ids = [i for i in ids if i in recent]
    return list(ids), total
