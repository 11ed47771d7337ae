"""What a live report means for the browser, decided by pure functions (no app, no store).

The main screen hands each `LiveUpdate` and a `LiveView` (what it shows now) to `live_plan`
(one store) or `store_live_plan` (one of several stores) and carries out the `LivePlan` in
its field order. Unit tests call these directly (tests/app/test_live_rules.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from hermes_tui.app.live_follow import Pacer
from hermes_tui.safe_text import one_line


def order_affected(ch: Any) -> bool:
    """Whether live changes can move, add or drop rows of the session list (else only the open
    transcript and the live statuses need them)."""
    return bool(
        ch.new_sessions
        or ch.reactivated
        or ch.deleted
        or ch.sessions_removed
        or ch.reset
        or ch.ended
        or ch.reopened
        or ch.titles
        or ch.messages
    )


def lineage_touched(ch: Any, lineage_ids: Iterable[str]) -> bool:
    """A child, a continuation, an end, a deletion or a title among the open lineage's nodes."""
    ids = set(lineage_ids)
    return bool(
        any(c.get("parent_session_id") in ids for c in ch.children)
        or ids.intersection(ch.continued)
        or ids.intersection(ch.ended)
        or ids.intersection(ch.deleted)
        or ids.intersection(ch.titles)
    )


def session_touched(ch: Any, session_id: str) -> bool:
    """New messages, an end, a title or a reopening of ``session_id``."""
    return bool(
        session_id in ch.messages
        or session_id in ch.ended
        or session_id in ch.titles
        or session_id in ch.reopened
    )


@dataclass(frozen=True)
class LiveView:
    """What the screen shows when a report arrives (the inputs of a decision)."""

    current_session: str | None = None
    #: The store of the open session over several stores (None with one store).
    current_profile: str | None = None
    active_only: bool = False
    searching: bool = False
    #: The ids of the lineage pane's nodes.
    lineage_ids: frozenset[str] = frozenset()
    #: The sessions of the chain the transcript reads as one (None: not a chain).
    chain_sessions: frozenset[str] | None = None
    #: A "Live follow paused" notification is on screen already.
    error_shown: bool = False


@dataclass(frozen=True)
class LivePlan:
    """What to do, in this order. Fields left at their default mean "nothing"."""

    #: Tell the user live follow paused, with this text (already one line).
    error: str | None = None
    #: Whether an error notification is on screen after this report.
    error_shown: bool = False
    #: Fresh live statuses for the list (keys as the list holds them).
    statuses: dict[Any, dict[str, Any]] | None = None
    #: Redraw the open session's title and live tip (its status changed).
    show_tip: bool = False
    #: Refresh the order because "active now" ages (statuses came).
    refresh_for_age: bool = False
    #: Note the changes in the incremental order (one store) before the refresh below.
    note_changes: bool = False
    #: Refresh the order because rows moved, came or went.
    refresh_for_changes: bool = False
    #: The open search re-runs (its hits may have changed).
    search_changed: bool = False
    #: The open session was deleted elsewhere (its id).
    current_deleted: str | None = None
    #: The chain the transcript shows is read again.
    reload_chain: bool = False
    #: Follow the open session: None no; else whether its lineage is read too.
    follow_lineage: bool | None = None


def live_plan(update: Any, view: LiveView) -> LivePlan:
    """One store: the decisions of a `LiveUpdate` (`live_follow.py`) for what `view` shows."""
    if update.error is not None:
        if view.error_shown:
            return LivePlan(error_shown=True)
        return LivePlan(error=one_line(update.error), error_shown=True)
    statuses = update.statuses
    current = view.current_session
    status_part: dict[str, Any] = {}
    if statuses is not None:
        status_part = {
            "statuses": statuses,
            "show_tip": current in statuses,
            "refresh_for_age": view.active_only,
        }
    ch = update.changes
    if not ch:
        return LivePlan(**status_part)
    affected = order_affected(ch)
    plan: dict[str, Any] = {
        **status_part,
        "note_changes": affected,
        "refresh_for_changes": affected,
        "search_changed": view.searching
        and bool(ch.messages or ch.deleted or ch.sessions_removed or ch.reset),
    }
    if current is None:
        return LivePlan(**plan)
    if current in ch.deleted:
        return LivePlan(**plan, current_deleted=current)
    lineage_changed = lineage_touched(ch, view.lineage_ids)
    if view.chain_sessions is not None:
        reload = bool(view.chain_sessions.intersection(ch.messages) or lineage_changed)
        return LivePlan(**plan, reload_chain=reload)
    if session_touched(ch, current) or lineage_changed or ch.reset:
        plan["follow_lineage"] = bool(lineage_changed or ch.reset or current in ch.ended)
    return LivePlan(**plan)


def store_live_plan(profile: str, update: Any, view: LiveView) -> LivePlan:
    """Several stores: the decisions of `profile`'s store's report. Errors are that store's
    badge (not a notification); the list re-merges rather than noting changes; the open
    transcript follows only its own store, without its lineage's changes."""
    if update.error is not None:
        return LivePlan()
    statuses = update.statuses
    current = view.current_session
    mine = profile == view.current_profile
    plan: dict[str, Any] = {}
    if statuses is not None:
        plan = {
            "statuses": {(profile, k): v for k, v in statuses.items()},
            "show_tip": mine and current in statuses,
            "refresh_for_age": view.active_only,
        }
    ch = update.changes
    plan["refresh_for_changes"] = bool(ch) and order_affected(ch)
    if not ch or current is None or not mine:
        return LivePlan(**plan)
    if current in ch.deleted:
        return LivePlan(**plan, current_deleted=current)
    if view.chain_sessions is not None:
        return LivePlan(**plan, reload_chain=bool(ch.messages))
    if session_touched(ch, current):
        plan["follow_lineage"] = current in ch.ended
    return LivePlan(**plan)


def cared_ids(visible: Iterable[str], session: str | None, lineage: dict[str, Any] | None) -> list[str]:
    """What a store's follower reports ends, titles and deletions of: its rows on screen, and
    in the open session's store that session and (the first 64 of) its lineage."""
    ids = list(visible)
    if session:
        ids.append(session)
    ids += [n["id"] for n in (lineage or {}).get("nodes", [])[:64]]
    return ids


def plan_for(profile: str | None, update: Any, view: LiveView) -> LivePlan:
    """A store's report: the one store's (its profile None: `live_plan`) or one of several's
    (`store_live_plan`)."""
    return live_plan(update, view) if profile is None else store_live_plan(profile, update, view)


#: Live order refreshes start at least this far apart (when the screen gives `OrderRefresh` a
#: timer): each reads the order and the list's page again, rows and live statuses, and one ran
#: after nearly every commit: following one writer at 20 messages/s that was 3-4 % of a core, with
#: eight writers 8-13 %, and keys waited behind it (`bench/live_app_bench.py`, `p` phases). The
#: first after a quiet spell starts at once; the order lags a live change by at most this.
#: Half a second, not the transcript's 0.2 s: following one agent each read repaints its row
#: (the counts) in a frame of its own, ~2 % of a core at five a second; the list's counts and
#: order a few tenths of a second behind the transcript are not something a reader sees.
ORDER_EVERY_S = 0.5


class OrderRefresh:
    """Live order refreshes, one at a time: a change while one runs asks for one more run
    (the screen's `LiveOrder` handler starts it), never a second one in parallel;
    with ``later`` (the screen's `set_timer`), at most one start every `ORDER_EVERY_S` (the
    live transcript's `Pacer`, which decides; the timer runs the latest ``start``).
    ``missed``: a change came while the list showed a provisional head (refresh after hand-over)."""

    def __init__(
        self,
        later: Callable[[float, Callable[[], None]], object] | None = None,
        *,
        every_s: float = ORDER_EVERY_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.pace = Pacer(every_s if later is not None else 0.0, clock)
        self.later = later
        self.missed = False
        self._start: Callable[[], object] | None = None  # the latest start asked for

    @property
    def running(self) -> bool:
        return self.pace.running

    @running.setter
    def running(self, value: bool) -> None:
        """The refresh in flight ended (False); its caller re-asks when `again`."""
        self.pace.running = value

    @property
    def again(self) -> bool:
        """A change came while one ran (or waited): one more run is due."""
        return self.pace.pending

    @again.setter
    def again(self, value: bool) -> None:
        self.pace.pending = value

    def ask(self, start: Callable[[], object]) -> None:
        """Run ``start`` now; once more after the refresh in flight; or, within `every_s` of the
        last start, once that time is up (one timer, which runs the latest ``start``)."""
        self._start = start
        self._go(self.pace.ask())

    def _go(self, wait: float | None) -> None:
        if wait is None:  # merged into the run in flight or the timer set
            return
        if wait > 0 and self.later is not None:
            self.later(wait, lambda: self._go(self.pace.due()))
            return
        start = self._start
        self.pace.start()
        if start is not None:
            start()
