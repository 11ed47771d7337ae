"""The session list's filter and orders: `SessionFilter`, the order keys, `SessionOrder`.

`SessionFilter.where` is the SQL of a filter; `order_key_sql` the value each order sorts by
(`last_active`: the newest usable message timestamp, folded over a compression chain when the
list folds chains); `order_keys_of` reads those values for given sessions (the live list's
re-sorting); `sort_key` is how they compare in Python. `listing.py` runs the orders.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from . import sql_fragments as Q
from .chains import (
    chain_last_active_sql,
    chain_roots,
    compression_tips,
    freshest_rule,
    last_active_sql,
)
from .core import _Core, chunks, placeholders
from .text import TS_MAX, num_sql, read_tuples, ts_sql

# Only timestamps usable as dates count (a text or 1e300 `timestamp` would otherwise be the
# MAX forever); the range is a bound on the (session_id, timestamp) index, so this is still
# one index seek per session.
TS_RANGE = f"BETWEEN 0 AND {TS_MAX}"


# 0.19.0-era files' recency for `session_order`, written so that the statement reads no
# `sessions` row: the ids (and rowids) come from the small `id` index (`sqlite_autoindex_sessions_1`,
# in every Hermes file) and `started_at` is looked up by rowid only for a session with no usable
# message timestamp (COALESCE evaluates its second argument only then). Scanning the table instead
# read every session row, scattered across the whole file: on a cold 1M-message / 100k-session
# file that was 20 MB of random reads before the first message-index seek. (A file with
# `last_activity_at` needs its row anyway: `chains.last_active_sql`.)
def last_active_order_sql(a: str = "s") -> str:
    return (
        f"COALESCE((SELECT MAX(m2.timestamp) FROM messages m2 WHERE m2.session_id = {a}.id AND "
        f"m2.timestamp {TS_RANGE}), "
        f"(SELECT {ts_sql('s3.started_at')} FROM sessions s3 WHERE s3.rowid = {a}.rowid))"
    )


ORDERS = ("last_active", "started", "messages", "tokens", "cost")


#: `SessionFilter.archived`: leave archived sessions out (Hermes' default list), list them
#: too, or list only them (Hermes' `archived_only`, which also shows hidden ones).
ARCHIVED_VIEWS = ("exclude", "include", "only")


@dataclass(frozen=True)
class SessionFilter:
    """What the browser's list shows. Empty tuples mean "no restriction".

    The default is Hermes' own default list (`list_sessions_rich()` of the file's writer): no
    hidden and no archived sessions, sub-agent runs and compression continuations left out, a
    compressed conversation listed once as its live tip (`include_children=False`), branch and
    (schema v24+) reset children listed. `include_children=True` lists every session as itself.
    `archived`: one of `ARCHIVED_VIEWS`; `"only"` also lists hidden ones, as Hermes' archived
    view does. `pinned_first` is the list of Hermes' sidebar (`include_pinned=True`): pinned
    sessions first, then the order, and a pinned session listed even when it is archived (a pin
    is an explicit keep); the other filters still apply to pins. Flags a file does not have
    (0.19.0's has no `hidden`/`pinned`) filter nothing.
    """

    sources: tuple[str, ...] = ()
    models: tuple[str, ...] = ()
    started_after: float | None = None
    started_before: float | None = None
    text: str | None = None
    include_children: bool = False
    archived: str = "exclude"
    include_hidden: bool = False
    pinned_first: bool = False

    def __post_init__(self) -> None:
        if self.archived not in ARCHIVED_VIEWS:
            raise ValueError(f"archived must be one of {', '.join(ARCHIVED_VIEWS)}, not {self.archived!r}")

    @classmethod
    def every_session(cls, **kw: Any) -> SessionFilter:
        """A filter that leaves nothing out (children, archived and hidden sessions included),
        e.g. to resolve a reference to any session."""
        return cls(include_children=True, archived="include", include_hidden=True, **kw)

    @property
    def folded(self) -> bool:
        """Compression chains are listed once, as their tip (see `session_order`)."""
        return not self.include_children

    def where(self, db: _Core) -> tuple[str, list[Any]]:
        """The WHERE (over `sessions s`) admitting the rows this filter lists before folding
        (with `folded`, a chain is admitted by the session it starts at)."""
        clauses: list[str] = []
        params: list[Any] = []
        resets = Q.resets_known(db)
        if self.sources:
            clauses.append(f"s.source IN ({placeholders(self.sources)})")
            params += list(self.sources)
        if self.models:
            clauses.append(f"s.model IN ({placeholders(self.models)})")
            params += list(self.models)
        if self.started_after is not None:
            clauses.append("s.started_at >= ?")
            params.append(self.started_after)
        if self.started_before is not None:
            clauses.append("s.started_at < ?")
            params.append(self.started_before)
        if self.text:
            needle = "%" + Q.like_escape(self.text.strip().lower()) + "%"
            has_title = db.has_column("sessions", "title")
            title = "LOWER(COALESCE({a}.title, ''))" if has_title else "''"
            own = f"({title.format(a='s')} LIKE ? ESCAPE '\\' OR LOWER(s.id) LIKE ? ESCAPE '\\')"
            params += [needle, needle]
            if self.folded:
                # A folded chain matches by any of its sessions' titles or ids (the title moves
                # to the tip), as Hermes' list search does.
                own = (
                    f"({own} OR (s.end_reason = 'compression' AND EXISTS ("
                    "WITH RECURSIVE ch(id) AS (SELECT s.id UNION SELECT c.id FROM ch "
                    "JOIN sessions p ON p.id = ch.id JOIN sessions c ON c.parent_session_id = p.id "
                    f"WHERE p.end_reason = 'compression' AND {Q.continuation_child('c', resets)}) "
                    f"SELECT 1 FROM ch JOIN sessions cs ON cs.id = ch.id "
                    f"WHERE {title.format(a='cs')} LIKE ? ESCAPE '\\' OR LOWER(cs.id) LIKE ? ESCAPE '\\')))"
                )
                params += [needle, needle]
            clauses.append(own)
        if not self.include_children:
            clauses.append(Q.listable("s", resets))
            clauses.append(f"{Q.delegate_from('s')} IS NULL")
        if db.has_column("sessions", "archived"):
            if self.archived == "only":
                clauses.append("s.archived = 1")
            elif self.archived == "exclude" and self.pinned_first and db.has_column("sessions", "pinned"):
                clauses.append("(s.archived = 0 OR COALESCE(s.pinned, 0) != 0)")
            elif self.archived == "exclude":
                clauses.append("s.archived = 0")
        if not self.include_hidden and self.archived != "only" and db.has_column("sessions", "hidden"):
            clauses.append("s.hidden = 0")
        return (" WHERE " + " AND ".join(clauses)) if clauses else "", params


@dataclass(frozen=True)
class SessionOrder:
    """The ordered ids matching a filter: the browser's virtual list indexes into this."""

    filter: SessionFilter
    order: str
    ids: list[str] = field(repr=False)
    #: With `session_order(with_keys=True)`: the value each id was sorted by (aligned with `ids`;
    #: None = unknown, sorted last), so a merge of several stores needs no second query.
    keys: list[float | int | None] | None = field(default=None, repr=False)
    #: With `filter.pinned_first`: how many of the first ids are pinned (each part is in order).
    pinned: int = 0

    def __len__(self) -> int:
        return len(self.ids)


def order_key_sql(db: _Core, order: str, folded: bool = False, alias: str = "s") -> str:
    """The SQL expression (over `sessions {alias}`) that `session_order` sorts `order` by,
    `DESC` with the id `DESC` and None last; the live list re-keys changed sessions with the same
    one. `folded` (a filter without children): `last_active` of a compression-ended session is
    the freshest of its whole chain, as Hermes sorts a conversation by its live tip."""
    a = alias
    if order == "last_active":
        own = last_active_sql(db, a) if freshest_rule(db) else last_active_order_sql(a)
        if not folded:
            # One MAX seek per session on the (session_id, timestamp) index: at 1M messages it beat
            # a GROUP BY over the whole index with long (91 vs 332 ms) and short sessions alike.
            return own
        chain = chain_last_active_sql(db, a)
        return f"(CASE WHEN {a}.end_reason = 'compression' THEN {chain} ELSE {own} END)"
    return {
        "started": ts_sql(f"{a}.started_at"),  # unknown starts last, not text first
        # Numbers only: text in a counter would otherwise order before every number.
        "messages": num_sql(f"{a}.message_count"),
        "tokens": f"{num_sql(f'{a}.input_tokens')} + {num_sql(f'{a}.output_tokens')}",
        "cost": f"CASE WHEN typeof({a}.actual_cost_usd) IN ('integer', 'real') THEN {a}.actual_cost_usd "
        f"ELSE {num_sql(f'{a}.estimated_cost_usd')} END",
    }[order]


def pinned_sql(db: _Core, flt: SessionFilter) -> str:
    """SQL: 1 for a session `pinned_first` puts first, else 0."""
    return "(COALESCE(s.pinned, 0) != 0)" if flt.pinned_first and db.has_column("sessions", "pinned") else "0"


def sqlite_rank(value: Any) -> tuple[int, Any]:
    """SQLite's order of values of mixed types (NULL < numbers < text < blob), as a sort key."""
    if value is None:
        return (0, 0)
    if isinstance(value, (int, float)):
        return (1, value)
    if isinstance(value, str):
        return (2, value)
    return (3, bytes(value) if isinstance(value, (bytes, bytearray, memoryview)) else repr(value))


def sort_key(sid: Any, key: Any, pinned: bool = False) -> tuple[Any, ...]:
    """Ascending in SQLite's `ORDER BY pinned, key, id` (NULL keys first; ids by storage class:
    NULL, numbers, text, blobs), so an order, which is that reversed, descends in it."""
    k: tuple[Any, ...] = (0, 0) if key is None else (1, key)
    return (1 if pinned else 0, *k, *sqlite_rank(sid))


def order_sort_key(sid: Any, key: Any) -> tuple[Any, ...]:
    """`sort_key` of a key as `SessionDB.order_keys` gives it (a `(pinned, key)` pair under
    `filter.pinned_first`): a live list places a session where `session_order` would list it
    (descending in this key) with the store's own rule, not a copy of it."""
    if isinstance(key, tuple):
        return sort_key(sid, key[1], bool(key[0]))
    return sort_key(sid, key)


def order_keys_of(db: _Core, session_ids: Iterable[Any], flt: SessionFilter, order: str) -> dict[Any, Any]:
    """`{id: key}` for the sessions `session_order(flt, order)` lists that `session_ids`
    concern, each key exactly what it sorts by; with `flt.pinned_first` each value is
    `(pinned, key)` (pinned 0 or 1). Not folded: those of `session_ids` it lists. Folded
    (`flt.folded`): for each id, the tip its chain is listed as (when the filter admits the
    chain's first session), keyed as that chain: a message in any session of a chain moves it."""
    ids = list(dict.fromkeys(session_ids))
    if not ids:
        return {}
    where, params = flt.where(db)
    cond = (where + " AND ") if where else " WHERE "
    key = order_key_sql(db, order, flt.folded)
    pin = pinned_sql(db, flt)
    comp = "(s.end_reason = 'compression')" if flt.folded else "0"
    roots = chain_roots(db, ids) if flt.folded else {}
    wanted = list(dict.fromkeys(roots.get(i, i) for i in ids))
    admitted: dict[Any, tuple[Any, int, int]] = {}
    for part in chunks(wanted, 500):
        sql = f"SELECT s.id, {key}, {pin}, {comp} FROM sessions s{cond}s.id IN ({placeholders(part)})"
        for sid, k, p, c in read_tuples(db._conn(), sql, [*params, *part]):
            admitted[sid] = (k, int(p or 0), int(c or 0))
    tips = compression_tips(db, [sid for sid, (_k, _p, c) in admitted.items() if c])
    out: dict[Any, Any] = {}
    own: list[Any] = []
    for sid in ids:
        root = roots.get(sid, sid)
        if root not in admitted:
            continue
        tip = tips.get(root, root) if flt.folded else sid
        k, p, _c = admitted[root]
        out[tip] = (p, k)
        if tip != root and order in ("messages", "tokens", "cost"):
            own.append(tip)  # a tip is ordered by its own numbers
    for part in chunks(list(dict.fromkeys(own)), 500):
        for sid, k in read_tuples(
            db._conn(),
            f"SELECT s.id, {order_key_sql(db, order)} FROM sessions s WHERE s.id IN ({placeholders(part)})",
            list(part),
        ):
            out[sid] = (out[sid][0], k)
    return out if flt.pinned_first else {sid: k for sid, (_p, k) in out.items()}


@dataclass(frozen=True)
class OrderHead:
    """The first ids of an order, read without computing the whole order
    (`session_order_head`). `exact`: certainly the order's first ids (else very likely)."""

    ids: list[str]
    exact: bool
