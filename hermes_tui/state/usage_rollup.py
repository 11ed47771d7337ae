"""The day rollup behind `usage_report`: one store's usage per local day and per (model, source,
provider, task), built by one statement and kept across commits (`usage_sync` updates it by the
sessions that changed, or it is rebuilt).

Why: a report over 90 days or the whole history reads every usage row of its range and counts
sessions distinct per cell, period, group and in all: four sorts of ~164k pieces at 1M messages
(300–650 ms). Every period of a report is a run of whole local days, and the attribution rule's
split telescopes — a row's part in a period whose bounds are local midnights is exactly the sum
of its parts in the period's days (counts by cumulative truncation add up exactly; costs up to
float rounding, ~1e-16 relative) — so a report's whole days are answered from the rollup:
figures added, sessions by set unions (ids are the sessions' rowids). A range whose ends are not
local midnights has its partial first and last days read for the question (`usage.py`).

One subtlety of the rule: a row that ends exactly at a period's start (its `last_seen` on a
midnight) counts its session in that period although its part there is zero — unless the range
starts there. Each day therefore keeps those sessions apart (`edge`), used unless the day is the
first of the asked range.

The costliest sessions of a range (`usage_sessions`) are ranked from each day's sessions and
their cost there (`DaySessions`, compact arrays): the rollup only chooses the candidates (float
sums in another order differ in their last bits), the statement restricted to them orders them.
"""

from __future__ import annotations

import datetime as dt
import heapq
import json
from array import array
from dataclasses import dataclass, field, replace
from typing import Any

from .usage_model import ZERO, UsageFigures, add_all
from .usage_time import UsagePeriod

#: A cell key: (model, source, provider, task), each as the report names a group ('' for NULL).
Key = tuple[str, str, str, str]
#: The group a report stacks by → its place in `Key`.
KEY_INDEX = {"model": 0, "source": 1, "provider": 2, "task": 3}


@dataclass
class DayCell:
    """One day's usage of one key: the 6 counts and 2 costs of `UsageFigures` in its field
    order, the sessions with a part in the day (`sids`) and those whose only part there is the
    zero part of a row ending at the day's start (`edge`)."""

    sums: tuple[float, ...]
    sids: tuple[int, ...]
    edge: tuple[int, ...]


@dataclass
class DaySessions:
    """One day's sessions (rowids; usage rows whose session is gone are left out, as the
    costliest sessions leave them) with their cost there (`costs`, actual + estimated, same
    order), and those whose only part in the day is the zero part of a row ending at its start
    (`edge`: cost 0, counted unless the day starts the range)."""

    sids: array[int] = field(default_factory=lambda: array("q"))
    costs: array[float] = field(default_factory=lambda: array("d"))
    edge: array[int] = field(default_factory=lambda: array("q"))


@dataclass
class DayRollup:
    """The days `[bounds[0], bounds[-1])` of `zone` (`bounds`: their local midnights), each a
    dict of `DayCell` by key; `t_min`/`t_max`: the earliest start and latest end of any usage
    (outside the days a range is empty only when no usage reaches there). `version`: what
    the connection's `PRAGMA data_version` and `total_changes` were when it was built."""

    zone: dt.tzinfo
    version: tuple[int, int]
    bounds: list[float]
    days: list[dict[Key, DayCell]]
    t_min: float | None
    t_max: float | None
    owner: Any = None  # the connection whose `version` it is
    #: Per day, as `days`: the (sessions, costs) JSON arrays of its cells' parts, as the build
    #: read them, until the costliest sessions first need the day (`day_sessions`).
    parts: list[list[tuple[Any, Any]]] = field(default_factory=list)
    sessions: dict[int, DaySessions] = field(default_factory=dict)  # day → its sessions, once read
    index: dict[float, int] = field(default_factory=dict)
    #: What it needs to follow commits (`usage_sync.RollupSync`; None: it cannot, rebuild it).
    sync: Any = None

    def __post_init__(self) -> None:
        self.index = {b: i for i, b in enumerate(self.bounds)}

    def day_sessions(self, d: int) -> DaySessions:
        """Day `d`'s sessions and costs, read from its cells' parts the first time they are
        needed (a rollup that answers only reports never pays for reading them)."""
        day = self.sessions.get(d)
        if day is None:
            day = self.sessions[d] = _day_sessions(self.days[d], self.parts[d] if self.parts else [])
            if self.parts:
                self.parts[d] = []
        return day

    def answers(self, since: float, until: float) -> bool:
        """Whether `[since, until)` (both local midnights of `zone`) can be answered: the part
        inside the days from them, the parts outside only if no usage reaches there."""
        lo, hi = self.bounds[0], self.bounds[-1]
        if since < lo and self.t_min is not None and self.t_min < min(lo, until):
            return False
        if until > hi and self.t_max is not None and self.t_max >= max(hi, since):
            return False
        inside = (max(since, lo), min(until, hi))
        return inside[0] >= inside[1] or all(b in self.index for b in inside)

    def report(
        self,
        spans: list[UsagePeriod],
        group: str | None,
        middle: tuple[float, float],
        edges: list[tuple[int, dict[Key, DayCell]]],
    ) -> tuple[
        dict[tuple[int, str], UsageFigures], dict[int, UsageFigures], dict[str, UsageFigures], UsageFigures
    ]:
        """(cells, period totals, groups, total) of `usage_report` over `spans`, stacked by
        `group`: the days of `middle` (local midnights, a range that `answers`) from the
        rollup, and `edges` (period index, cells): the parts of the range before and after
        them (each inside one period, the same one for a range inside a period), read for
        this question."""
        gi = KEY_INDEX.get(group or "")
        since = spans[0].lo
        lo, hi = max(self.bounds[0], middle[0]), min(self.bounds[-1], middle[1])
        sums: dict[tuple[int, str], list[float]] = {}
        sids: dict[tuple[int, str], set[int]] = {}

        def add(k: int, key: Key, cell: DayCell, use_edge: bool) -> None:
            if not cell.sids and not (use_edge and cell.edge):
                return
            ck = (k, "" if gi is None else key[gi])
            acc = sums.get(ck)
            if acc is None:
                sums[ck] = list(cell.sums)
                sids[ck] = set(cell.sids)
            else:
                for j, v in enumerate(cell.sums):
                    acc[j] += v
                sids[ck].update(cell.sids)
            if use_edge and cell.edge:
                sids[ck].update(cell.edge)

        for k, part in edges:
            for key, cell in part.items():
                add(k, key, cell, False)
        for p in spans:
            a, b = max(p.lo, lo), min(p.hi, hi)
            if a >= b:
                continue
            for d in range(self.index[a], self.index[b]):
                use_edge = self.bounds[d] > since  # (not on the range's first day: see the module)
                for key, cell in self.days[d].items():
                    add(p.index, key, cell, use_edge)
        cells = {ck: _figures(acc, len(sids[ck])) for ck, acc in sums.items()}
        if group is None:
            per = {k: f for (k, _g), f in cells.items()}
            per_sids = {k: s for (k, _g), s in sids.items()}
            total_sids: set[int] = set().union(*per_sids.values()) if per_sids else set()
            total = _with_sessions(add_all(per.values()), len(total_sids))
            return cells, per, ({"": total} if cells else {}), total
        by_k: dict[int, set[int]] = {}
        by_g: dict[str, set[int]] = {}
        per_f: dict[int, UsageFigures] = {}
        grp_f: dict[str, UsageFigures] = {}
        for (k, g), s in sids.items():
            by_k.setdefault(k, set()).update(s)
            by_g.setdefault(g, set()).update(s)
            per_f[k] = per_f.get(k, ZERO) + cells[(k, g)]
            grp_f[g] = grp_f.get(g, ZERO) + cells[(k, g)]
        per = {k: _with_sessions(f, len(by_k[k])) for k, f in per_f.items()}
        groups = {g: _with_sessions(f, len(by_g[g])) for g, f in grp_f.items()}
        everyone: set[int] = set().union(*by_k.values()) if by_k else set()
        return cells, per, groups, _with_sessions(add_all(per.values()), len(everyone))

    def session_costs(self, middle: tuple[float, float], since: float) -> dict[int, float]:
        """Each session's cost in the days of `middle` (local midnights, a range that
        `answers`) — every session with a part there, at cost 0 too, as the statement lists
        them; a zero edge part counts unless its day starts the range at `since`."""
        lo, hi = max(self.bounds[0], middle[0]), min(self.bounds[-1], middle[1])
        acc: dict[int, float] = {}
        if lo >= hi:
            return acc
        for d in range(self.index[lo], self.index[hi]):
            day = self.day_sessions(d)
            new = dict(zip(day.sids, day.costs, strict=True))
            for sid in acc.keys() & new.keys():  # (a session across midnight: few)
                new[sid] += acc[sid]
            acc.update(new)
            if day.edge and self.bounds[d] > since:
                for sid in day.edge:
                    acc.setdefault(sid, 0.0)
        return acc

    def size(self) -> int:
        """The session ids held (what the rollup's memory grows with)."""
        cells = sum(len(c.sids) + len(c.edge) for day in self.days for c in day.values())
        return cells + sum(len(d.sids) + len(d.edge) for d in self.sessions.values())


def _day_sessions(cells: dict[Key, DayCell], parts: list[tuple[Any, Any]]) -> DaySessions:
    """A day's `DaySessions` from its cells and their parts' (sessions, costs) JSON arrays (a
    session's parts in one cell, two rows of one key, repeat it)."""
    acc: dict[int, float] = {}
    for sids, costs in parts:
        ids = json_ids(sids)
        values: list[float] = json.loads(costs) if costs else []
        new = dict(zip(ids, values, strict=True))
        if len(new) < len(ids):
            new = {}
            for sid, cost in zip(ids, values, strict=True):
                new[sid] = new.get(sid, 0.0) + cost
        for sid in acc.keys() & new.keys():
            new[sid] += acc[sid]
        acc.update(new)
    edge = {sid for c in cells.values() for sid in c.edge if sid > 0 and sid not in acc}
    return DaySessions(array("q", acc.keys()), array("d", acc.values()), array("q", sorted(edge)))


def candidates(costs: dict[int, float], want: int) -> list[int]:
    """The sessions that can be among the `want` costliest by the statement's own sums: the
    `want` costliest of `costs` and every one within float rounding of the last of them (the
    statement orders them: its sums of the same parts, in another order, differ in their last
    bits, and its ties go to tokens, then id)."""
    if want <= 0 or not costs:
        return []
    if want >= len(costs):
        return list(costs)
    cut = heapq.nlargest(want, costs.values())[-1]
    cut -= 1e-9 * abs(cut) + 1e-12
    return [sid for sid, cost in costs.items() if cost >= cut]


def _figures(acc: list[float], sessions: int) -> UsageFigures:
    i, o, cr, cw, rs, calls = (int(v) for v in acc[:6])
    return UsageFigures(i, o, cr, cw, rs, calls, float(acc[6]), float(acc[7]), sessions)


def _with_sessions(f: UsageFigures, sessions: int) -> UsageFigures:
    return replace(f, sessions=sessions)


def json_ids(text: Any) -> tuple[int, ...]:
    """The ids of a `json_group_array` of integers."""
    return tuple(json.loads(text)) if text else ()
