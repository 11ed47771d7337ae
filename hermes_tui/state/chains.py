"""Compression chains and recency, as the writer of each file defines them.

A conversation that was compressed is a chain of sessions linked by `parent_session_id`, each
parent ended with `end_reason='compression'`; the live *tip* is where it continues. Hermes lists
the chain once, as its tip, and sorts it by the freshest activity of the whole chain. Two
generations of the rules exist, and each file is read by its own writer's:

- 0.19.0 (schema v22, and our v23): "last active" is the newest message timestamp, else
  `started_at`; the tip walk prefers a child that was compressed again, then an open one, then
  the newest by that recency; at most 100 hops.
- today's Hermes (schema v24+, the v31 writer): "last active" is the freshest of
  `last_activity_at` (a rate-limited heartbeat) and the newest message, each only inside the
  epoch window (`EPOCH_MAX`), else `started_at` in the window; reset children are never followed
  as continuations; at most 1,000 hops (`hermes_state_compression._CHAIN_CAP`).

Functions here take the store (`_Core`) so listing, lineage and live share them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from . import sql_fragments as Q
from .core import _Core
from .text import TS_MAX, read_tuples, ts_sql

#: v31's `coerce_epoch` window for recency values (`hermes_cli.timefmt.EPOCH_MAX`).
EPOCH_MAX = 4_200_000_000.0
_IN_EPOCH = f"BETWEEN 0 AND {EPOCH_MAX!r}"
_TS_RANGE = f"BETWEEN 0 AND {TS_MAX}"
CAP_V22 = 100
CAP_V31 = 1000


def freshest_rule(db: _Core) -> bool:
    """The file has `last_activity_at`: recency is v31's freshest rule."""
    return db.has_column("sessions", "last_activity_at")


def last_active_sql(db: _Core, alias: str = "s") -> str:
    """SQL: when the session `alias` (a `sessions` row) was last active, by its file's rule
    (module docstring), or NULL when nothing usable is stored."""
    if not freshest_rule(db):
        return (
            f"COALESCE((SELECT MAX(m2.timestamp) FROM messages m2 WHERE m2.session_id = {alias}.id AND "
            f"m2.timestamp {_TS_RANGE}), {ts_sql(f'{alias}.started_at')})"
        )
    msg = (
        f"(SELECT MAX(m2.timestamp) FROM messages m2 WHERE m2.session_id = {alias}.id "
        f"AND m2.timestamp {_IN_EPOCH})"
    )
    act = f"(CASE WHEN {alias}.last_activity_at {_IN_EPOCH} THEN {alias}.last_activity_at END)"
    started = f"(CASE WHEN {alias}.started_at {_IN_EPOCH} THEN {alias}.started_at END)"
    # MAX(a, b) is NULL when either is: the message seek runs once in either branch.
    return (
        f"COALESCE(CASE WHEN {act} IS NULL THEN {msg} ELSE MAX({act}, COALESCE({msg}, {act})) END, {started})"
    )


def continuation_sql(db: _Core, child: str = "c") -> str:
    """Conditions making `child` (of a compression-ended parent) the chain's continuation."""
    return Q.continuation_child(child, Q.resets_known(db))


def chain_last_active_sql(db: _Core, alias: str = "s") -> str:
    """SQL: the freshest `last_active_sql` over the compression chain starting at `alias`
    (every continuation, as both writers' `order_by_last_active` chain CTE walks it)."""
    return (
        f"(WITH RECURSIVE ch(id) AS (SELECT {alias}.id UNION "
        "SELECT c.id FROM ch JOIN sessions p ON p.id = ch.id JOIN sessions c ON c.parent_session_id = p.id "
        f"WHERE p.end_reason = 'compression' AND {continuation_sql(db, 'c')}) "
        f"SELECT MAX({last_active_sql(db, 'cm')}) FROM ch JOIN sessions cm ON cm.id = ch.id)"
    )


def chain_fold_sql(db: _Core, alias: str = "s") -> str:
    """SQL: `json_array(chain_last_active, tip)` of the chain starting at `alias`, in one walk.
    The tip is the chain's only session without a continuation (a linear chain: every writer's
    walk ends there); NULL when the chain forks, loops or is longer than the walk's cap, which
    `compression_tips` then ranks as the writers do."""
    cap = CAP_V31 if Q.resets_known(db) else CAP_V22
    cont = continuation_sql(db, "c")
    return (
        f"(WITH RECURSIVE ch(id) AS (SELECT {alias}.id UNION "
        "SELECT c.id FROM ch JOIN sessions p ON p.id = ch.id JOIN sessions c ON c.parent_session_id = p.id "
        f"WHERE p.end_reason = 'compression' AND {cont}) "
        f"SELECT json_array(MAX(la), CASE WHEN COUNT(*) <= {cap} AND SUM(leaf) = 1 "
        "THEN MAX(CASE WHEN leaf THEN id END) END) "
        f"FROM (SELECT ch.id AS id, {last_active_sql(db, 'cm')} AS la, "
        "(cm.end_reason IS NOT 'compression' OR NOT EXISTS (SELECT 1 FROM sessions c "
        f"WHERE c.parent_session_id = cm.id AND {cont})) AS leaf "
        "FROM ch JOIN sessions cm ON cm.id = ch.id))"
    )


def _tip_freshness_sql(db: _Core, alias: str) -> str:
    """The recency a tip walk ranks siblings by (0.19.0: newest message, unbounded, else start)."""
    if Q.resets_known(db) or freshest_rule(db):
        return last_active_sql(db, alias)
    return (
        f"COALESCE((SELECT MAX(m.timestamp) FROM messages m WHERE m.session_id = {alias}.id), "
        f"{alias}.started_at)"
    )


def compression_tips(db: _Core, starts: Iterable[Any]) -> dict[Any, Any]:
    """`{start: tip}`: each start followed forward through its preferred continuation children
    (the writers' `get_compression_tip`; cycle-safe: a child already seen ends the walk). One
    statement for all starts; a start that is not a session maps to itself."""
    todo = list(dict.fromkeys(s for s in starts if isinstance(s, str)))
    if not todo:
        return {}
    cap = CAP_V31 if Q.resets_known(db) else CAP_V22
    cont = continuation_sql(db, "c")
    # Every continuation reachable from the starts, as (parent, child) pairs.
    pairs = read_tuples(
        db._conn(),
        f"""WITH RECURSIVE ch(parent, id) AS (
                SELECT NULL, value FROM json_each(?)
                UNION
                SELECT p.id, c.id FROM ch JOIN sessions p ON p.id = ch.id
                JOIN sessions c ON c.parent_session_id = p.id
                WHERE p.end_reason = 'compression' AND {cont})
            SELECT parent, id FROM ch WHERE parent IS NOT NULL""",
        (json.dumps(todo),),
    )
    best: dict[Any, Any] = {}
    several: set[Any] = set()
    for parent, child in pairs:
        if parent in best:
            several.add(parent)
        best[parent] = child
    if several:  # a parent with several continuations: rank them as the writers' ORDER BY does
        ranked = read_tuples(
            db._conn(),
            f"""SELECT c.parent_session_id, c.id FROM sessions c JOIN sessions p ON p.id = c.parent_session_id
                WHERE c.parent_session_id IN (SELECT value FROM json_each(?))
                  AND p.end_reason = 'compression' AND {cont}
                ORDER BY c.parent_session_id,
                    CASE WHEN c.end_reason = 'compression' THEN 0 WHEN c.ended_at IS NULL THEN 1 ELSE 2 END,
                    {_tip_freshness_sql(db, "c")} DESC, c.started_at DESC, c.id DESC""",
            (json.dumps([p for p in several if isinstance(p, str)]),),
        )
        for parent in several:
            best.pop(parent, None)
        for parent, child in ranked:
            best.setdefault(parent, child)
    out: dict[Any, Any] = {}
    for start in todo:
        current, seen = start, {start}
        for _ in range(cap):
            nxt = best.get(current)
            if nxt is None or nxt in seen:
                break
            seen.add(nxt)
            current = nxt
        out[start] = current
    return out


def chain_roots(db: _Core, ids: Iterable[Any]) -> dict[Any, Any]:
    """`{id: root}`: each id followed back through compression edges (a continuation child of a
    compression-ended parent) to the session its chain starts at; an id that is no
    continuation is its own root."""
    todo = list(dict.fromkeys(i for i in ids if isinstance(i, str)))
    if not todo:
        return {}
    cap = CAP_V31 if Q.resets_known(db) else CAP_V22
    rows = read_tuples(
        db._conn(),
        f"""WITH RECURSIVE up(start, id, n) AS (
                SELECT value, value, 0 FROM json_each(?)
                UNION
                SELECT up.start, p.id, up.n + 1 FROM up JOIN sessions c ON c.id = up.id
                JOIN sessions p ON p.id = c.parent_session_id
                WHERE p.end_reason = 'compression' AND {continuation_sql(db, "c")} AND up.n < {cap})
            SELECT start, id FROM up ORDER BY start, n DESC""",
        (json.dumps(todo),),
    )
    out: dict[Any, Any] = {}
    for start, sid in rows:
        out.setdefault(start, sid)
    return out


def chain_members(db: _Core, ids: Iterable[Any]) -> set[Any]:
    """Every session of the compression chains the ids belong to (the ids included): their
    roots and every continuation below them."""
    roots = chain_roots(db, ids)
    if not roots:
        return set()
    rows = read_tuples(
        db._conn(),
        f"""WITH RECURSIVE ch(id) AS (
                SELECT value FROM json_each(?)
                UNION
                SELECT c.id FROM ch JOIN sessions p ON p.id = ch.id
                JOIN sessions c ON c.parent_session_id = p.id
                WHERE p.end_reason = 'compression' AND {continuation_sql(db, "c")})
            SELECT id FROM ch""",
        (json.dumps(list(dict.fromkeys(roots.values()))),),
    )
    return {r[0] for r in rows} | set(roots)
