"""Live: follow the store while agents write to it, without ever getting in their way.

**Change detection** (`change_cursor()`, `changes_since(cursor, care_about=...)`, `ChangeWatcher`).
A poll first runs `PRAGMA data_version` (plus the connection's own `total_changes`); when neither
moved it returns at once, having run no other statement. Otherwise it runs a few indexed reads in
one short read transaction that ends before it returns — no read transaction is held between
polls, so a writer's checkpoint (even TRUNCATE) always gets through. What a changed poll reads:

- new messages: `messages.id > high-water` (the rowid, AUTOINCREMENT: ids never come back), at
  most `max_messages` per poll (`Changes.more` says poll again at once);
- new sessions: `sessions.rowid` above the last top-`WINDOW` rows seen. `sessions` has a TEXT key,
  so SQLite may reuse the rowid of a deleted top row: the window (rowid → id of the newest
  `WINDOW` rows) catches that, and a row whose rowid changed (VACUUM renumbers) sets `reset`;
- sessions ended, re-opened, retitled or deleted: a primary-key lookup of the *tracked* sessions
  only — the ids the caller cares about (`care_about`: what the UI shows) plus up to `TRACK_MAX`
  sessions seen active while watching. Nothing ever diffs all ids;
- deletions elsewhere among untracked sessions: a count fingerprint (`SELECT count(*)`, at most
  every `count_every_s`): `sessions_removed` says how many went, so a list can reload its order;
- new children (`parent_session_id`) with their edge kind, and compression continuations: a
  tracked session ended with `end_reason='compression'` is followed to its live tip
  (`get_compression_tip`) once the child exists (upstream ends the parent, then creates the child).

The cursor belongs to the connection of the thread that polls (data_version values of two
connections are not comparable): a cursor used on another thread's connection just runs the reads.

**Live status** (`live_status(ids, now)`), from the stored messages only (rewound rows ignored):

- `ended`: `ended_at` is set;
- else the last user/assistant/tool message decides, if its age is under `idle_after_s`
  (default 600 s): `working` when it is a user or tool message, or an assistant message with
  tool calls (their results are not in yet); `waiting` when it is an assistant message without
  tool calls (the agent answered; the session waits for the user), or when there is no message yet;
- `idle` when the last activity (that message, else `started_at`) is `idle_after_s` or older —
  a turn that stopped mid-way that long ago is treated as abandoned, not working.

**Live order** (`order_keys(ids, filter, order)`): the sort key `session_order` uses, for just the
given sessions that match the filter, so a live list moves only the sessions a poll names.

`idle_s` is the age of the last activity. `active_sessions(now, within_s)` is the "active now"
filter: open sessions with a message (or a start) in the last `within_s` seconds, newest first.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import apsw

from . import sql_fragments as Q
from .chains import chain_members
from .core import _Core, chunks, placeholders
from .list_order import ORDERS, SessionFilter, order_keys_of
from .text import read_tuples, tool_calls_list
from .write_signal import WriteSignal, write_signal

WINDOW = 32  # newest session rows remembered (rowid → id) to see reused rowids and deletions
TRACK_MAX = 512  # sessions whose title/end/deletion are followed besides `care_about`
IDLE_AFTER_S = 600.0
_ACTIVE_SCAN = 20_000  # newest messages `active_sessions` looks at (timestamps follow ids)


@dataclass(frozen=True)
class _Tracked:
    title: str | None
    ended_at: float | None
    end_reason: str | None
    last_ts: float | None  # newest message timestamp seen while watching (None: not known)


@dataclass(frozen=True)
class LiveCursor:
    """Where a follower is: pass it back to `changes_since`. Treat as opaque."""

    conn_id: int
    version: tuple[int, int]
    message_hw: int
    window: tuple[tuple[int, str], ...]  # (rowid, id) of the newest sessions, ascending rowid
    session_count: int
    counted_at: float
    tracked: dict[str, _Tracked] = field(default_factory=dict)
    pending_tips: frozenset[str] = frozenset()  # ended by compression, child not there yet
    more: bool = False
    missing: frozenset[str] = frozenset()  # cared-about ids already reported deleted

    @property
    def session_hw(self) -> int:
        return self.window[-1][0] if self.window else 0


@dataclass
class Changes:
    """What happened between two polls. Empty (falsy) when nothing did."""

    new_sessions: list[dict[str, Any]] = field(default_factory=list)  # id, parent_session_id, source,
    # title, started_at, ended_at, edge_kind — in creation order
    messages: dict[str, list[int]] = field(default_factory=dict)  # session id → new message ids
    reactivated: list[str] = field(default_factory=list)  # old sessions that got a message again
    ended: dict[str, str | None] = field(default_factory=dict)  # tracked id → end_reason
    reopened: list[str] = field(default_factory=list)
    titles: dict[str, str | None] = field(default_factory=dict)  # tracked id → new title
    deleted: list[str] = field(default_factory=list)  # tracked/cared-about ids that are gone
    children: list[dict[str, Any]] = field(default_factory=list)  # id, parent_session_id, edge_kind
    continued: dict[str, str] = field(default_factory=dict)  # compressed session → its live tip
    sessions_removed: int = 0  # untracked sessions deleted elsewhere (count fingerprint)
    reset: bool = False  # the baseline is lost (rowids renumbered): reload everything
    more: bool = False  # more new messages than one poll returns: poll again now

    def __bool__(self) -> bool:
        return any(
            (
                self.new_sessions,
                self.messages,
                self.reactivated,
                self.ended,
                self.reopened,
                self.titles,
                self.deleted,
                self.children,
                self.continued,
                self.sessions_removed,
                self.reset,
                self.more,
            )
        )

    @property
    def message_count(self) -> int:
        return sum(len(v) for v in self.messages.values())


def _version(conn: apsw.Connection) -> tuple[int, int]:
    """data_version moves on other connections' commits, total_changes on this one's."""
    rows: list[tuple[Any, ...]] = conn.execute("PRAGMA data_version").fetchall()
    return int(rows[0][0]), conn.total_changes()


def _float(value: Any) -> float | None:
    try:
        return float(value) if value is not None else None
    except (TypeError, ValueError):
        return None


class LiveMixin(_Core):
    """`change_cursor`, `changes_since`, `live_status`, `active_sessions` (docs in the module)."""

    # ------------------------------------------------------------------ change detection
    def change_cursor(self, care_about: Iterable[str] = ()) -> LiveCursor:
        """A cursor at "now": the next `changes_since` reports only what is committed after this."""
        conn = self._conn()
        version = _version(conn)
        with _read_txn(conn):
            hw = read_tuples(conn, "SELECT MAX(id) FROM messages")[0][0] or 0
            window = self._window(conn, 0)
            count = int(read_tuples(conn, "SELECT count(*) FROM sessions")[0][0])
            tracked = {sid: t for sid, t in self._session_states(conn, care_about).items() if t is not None}
        return LiveCursor(id(conn), version, int(hw), window, count, time.monotonic(), tracked)

    def change_watcher(self, care_about: Iterable[str] = (), **kw: Any) -> ChangeWatcher:
        """A `ChangeWatcher` starting now (poll it from one thread)."""
        return ChangeWatcher(self, care_about, **kw)

    def write_signal(self) -> WriteSignal | None:
        """A file descriptor readable soon after any program writes this store's files, so a
        follower can poll right after a commit (`write_signal.py`); None where there is none
        (not Linux, no inotify): poll on a timer. The caller closes it."""
        return write_signal(self.db_path)

    def changes_since(
        self,
        cursor: LiveCursor,
        care_about: Iterable[str] | None = None,
        *,
        max_messages: int = 2000,
        count_every_s: float = 1.0,
        idle_after_s: float = IDLE_AFTER_S,
    ) -> tuple[Changes, LiveCursor]:
        """What was committed since `cursor`, and the cursor to pass next time.

        `care_about`: session ids the caller shows (their titles, ends and deletions are
        reported; an id it did not know yet is only baselined, or reported deleted if missing).
        """
        conn = self._conn()
        version = _version(conn)
        care = list(dict.fromkeys(care_about or ()))
        fresh_care = [sid for sid in care if sid not in cursor.tracked and sid not in cursor.missing]
        if cursor.conn_id == id(conn) and version == cursor.version and not cursor.more and not fresh_care:
            return Changes(), cursor
        with _read_txn(conn):
            return self._poll(conn, cursor, version, care, max_messages, count_every_s, idle_after_s)

    def _poll(
        self,
        conn: apsw.Connection,
        cur: LiveCursor,
        version: tuple[int, int],
        care: list[str],
        max_messages: int,
        count_every_s: float,
        idle_after_s: float,
    ) -> tuple[Changes, LiveCursor]:
        ch = Changes()
        # 1. new messages, by id
        rows = read_tuples(
            conn,
            "SELECT id, session_id, timestamp FROM messages WHERE id > ? ORDER BY id LIMIT ?",
            (cur.message_hw, max_messages + 1),
        )
        ch.more = len(rows) > max_messages
        rows = rows[:max_messages]
        hw = int(rows[-1][0]) if rows else cur.message_hw
        first_ts: dict[str, float | None] = {}
        last_ts: dict[str, float | None] = {}
        for mid, sid, ts in rows:
            ch.messages.setdefault(sid, []).append(int(mid))
            first_ts.setdefault(sid, _float(ts))
            last_ts[sid] = _float(ts)
        # 2. new sessions (and deletions / reuse / renumbering among the newest rows)
        low = cur.window[0][0] if cur.window else 0
        seen = dict(cur.window)
        window_rows = read_tuples(
            conn, "SELECT rowid, id FROM sessions WHERE rowid >= ? ORDER BY rowid", (low,)
        )
        now_window = {int(r): sid for r, sid in window_rows}
        new_ids = [sid for r, sid in now_window.items() if seen.get(r) != sid and r >= low]
        gone = [sid for r, sid in seen.items() if now_window.get(r) != sid]
        old_ids = set(seen.values())
        new_ids = [sid for sid in new_ids if sid not in old_ids]
        moved = [sid for sid in gone if sid in set(now_window.values())]
        gone = [sid for sid in gone if sid not in now_window.values()]
        if gone:  # renumbered (VACUUM) rather than deleted?
            still = {
                sid
                for (sid,) in read_tuples(
                    conn, f"SELECT id FROM sessions WHERE id IN ({placeholders(gone)})", gone
                )
            }
            moved += [sid for sid in gone if sid in still]
            gone = [sid for sid in gone if sid not in still]
        if moved:
            ch.reset = True
        new_window = tuple(sorted(now_window.items()))[-WINDOW:]
        if len(new_window) < WINDOW:  # top rows deleted: refill from below, so `low` never drops to 0
            new_window = self._window(conn, 0)
        if new_ids:
            ch.new_sessions = self._session_rows(conn, new_ids)
            ch.children = [
                {"id": r["id"], "parent_session_id": r["parent_session_id"], "edge_kind": r["edge_kind"]}
                for r in ch.new_sessions
                if r["parent_session_id"]
            ]
        new_set = {r["id"] for r in ch.new_sessions}
        # 3. tracked sessions: ends, titles, deletions
        tracked = dict(cur.tracked)
        interesting = list(
            dict.fromkeys([*care, *tracked, *ch.messages, *new_set, *cur.pending_tips, *(gone)])
        )
        states = self._session_states(conn, interesting)
        deleted = [
            sid
            for sid in interesting
            if states.get(sid) is None
            and (sid in tracked or (sid in care and sid not in cur.missing) or sid in gone)
        ]
        ch.deleted = list(dict.fromkeys(deleted))
        reactivated_probe: list[tuple[str, _Tracked]] = []
        for sid in interesting:
            st = states.get(sid)
            if st is None:
                tracked.pop(sid, None)
                continue
            prev = tracked.get(sid)
            if prev is not None:
                if prev.ended_at is None and st.ended_at is not None:
                    ch.ended[sid] = st.end_reason
                elif prev.ended_at is not None and st.ended_at is None:
                    ch.reopened.append(sid)
                if prev.title != st.title:
                    ch.titles[sid] = st.title
            if sid in ch.messages and sid not in new_set:
                known = prev.last_ts if prev is not None else None
                if known is None:
                    reactivated_probe.append((sid, st))
                elif st.ended_at is not None or (first_ts.get(sid) or 0) - known >= idle_after_s:
                    ch.reactivated.append(sid)
            lts = last_ts.get(sid, prev.last_ts if prev is not None else None)
            tracked[sid] = dataclasses.replace(st, last_ts=lts)
        for sid, st in reactivated_probe:
            before = read_tuples(
                conn,
                "SELECT timestamp FROM messages WHERE session_id = ? AND id <= ? ORDER BY id DESC LIMIT 1",
                (sid, cur.message_hw),
            )
            prev_ts = _float(before[0][0]) if before else _float(self._session_started(conn, sid))
            if (
                st.ended_at is not None
                or prev_ts is None
                or (first_ts.get(sid) or 0) - prev_ts >= idle_after_s
            ):
                ch.reactivated.append(sid)
        # 4. count fingerprint for deletions outside what is tracked
        known_gone = set(gone) | {sid for sid in ch.deleted if sid in cur.tracked}
        expected = cur.session_count + len(new_set) - len(known_gone)
        count, counted_at = expected, cur.counted_at
        now_m = time.monotonic()
        if known_gone or now_m - cur.counted_at >= count_every_s:
            count = int(read_tuples(conn, "SELECT count(*) FROM sessions")[0][0])
            counted_at = now_m
            if count < expected:
                ch.sessions_removed = expected - count
            elif count > expected:  # a new row hid under a reused rowid below the window
                ch.reset = True
        # 5. compression continuations
        pending = set(cur.pending_tips) & set(tracked)
        pending |= {sid for sid, reason in ch.ended.items() if reason == "compression"}
        for child in ch.children:
            parent = child["parent_session_id"]
            pst = states.get(parent)
            if pst is not None and pst.end_reason == "compression":
                pending.add(parent)
        for sid in list(pending):
            st = states.get(sid)
            if st is None or st.end_reason != "compression":
                pending.discard(sid)
                continue
            tip = self.get_compression_tip(sid)
            if tip and tip != sid:
                ch.continued[sid] = tip
                pending.discard(sid)
        # keep the tracked set bounded: cared-about ids first, then the most recently active
        if len(tracked) > TRACK_MAX + len(care):
            keep = set(care) | pending
            rest = sorted(
                (s for s in tracked if s not in keep), key=lambda s: tracked[s].last_ts or 0.0, reverse=True
            )
            keep |= set(rest[:TRACK_MAX])
            tracked = {s: t for s, t in tracked.items() if s in keep}
        new_cursor = LiveCursor(
            id(conn),
            version,
            hw,
            new_window,
            count,
            counted_at,
            tracked,
            frozenset(pending),
            ch.more,
            frozenset(sid for sid in care if states.get(sid) is None),
        )
        if ch.reset:
            new_cursor = dataclasses.replace(
                new_cursor, session_count=int(read_tuples(conn, "SELECT count(*) FROM sessions")[0][0])
            )
        return ch, new_cursor

    def _window(self, conn: apsw.Connection, low: int) -> tuple[tuple[int, str], ...]:
        rows = read_tuples(conn, "SELECT rowid, id FROM sessions ORDER BY rowid DESC LIMIT ?", (WINDOW,))
        return tuple(sorted((int(r), sid) for r, sid in rows if int(r) >= low))

    def _session_states(self, conn: apsw.Connection, ids: Iterable[str]) -> dict[str, _Tracked | None]:
        ids = list(ids)
        out: dict[str, _Tracked | None] = dict.fromkeys(ids)
        for part in chunks(ids, 500):
            for sid, title, ended_at, reason in read_tuples(
                conn,
                f"SELECT id, title, ended_at, end_reason FROM sessions WHERE id IN ({placeholders(part)})",
                list(part),
            ):
                out[sid] = _Tracked(title, _float(ended_at), reason, None)
        return out

    def _session_started(self, conn: apsw.Connection, sid: str) -> Any:
        rows = read_tuples(conn, "SELECT started_at FROM sessions WHERE id = ?", (sid,))
        return rows[0][0] if rows else None

    def _session_rows(self, conn: apsw.Connection, ids: Sequence[str]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        kind_sql = Q.edge_kind_case("s", Q.resets_known(self))
        for part in chunks(list(ids), 500):
            rows = read_tuples(
                conn,
                f"""SELECT s.rowid, s.id, s.parent_session_id, s.source, s.title, s.started_at, s.ended_at,
                           {kind_sql} FROM sessions s WHERE s.id IN ({placeholders(part)})""",
                list(part),
            )
            out += [
                {
                    "id": sid,
                    "parent_session_id": parent,
                    "source": source,
                    "title": title,
                    "started_at": _float(started),
                    "ended_at": _float(ended),
                    "edge_kind": kind,
                    "_rowid": rowid,
                }
                for rowid, sid, parent, source, title, started, ended, kind in rows
            ]
        out.sort(key=lambda r: r.pop("_rowid"))
        return out

    # ------------------------------------------------------------------ live order
    def order_keys(
        self, session_ids: Iterable[str], filter: SessionFilter | None = None, order: str = "last_active"
    ) -> dict[str, Any]:
        """`{id: key}` for those of `session_ids` that `session_order(filter, order)` lists, each
        key exactly what it sorts by (`key DESC, id DESC`, None last; with `filter.pinned_first`
        each value is `(pinned, key)`): a live list moves only the sessions that changed instead
        of re-reading the whole order. Folded (the default filter): a chain's tip, keyed as its
        chain (`listing.order_keys_of`)."""
        flt = filter or SessionFilter()
        if order not in ORDERS:
            raise ValueError(f"unknown order {order!r}; expected one of {', '.join(ORDERS)}")
        with _read_txn(self._conn()):
            return order_keys_of(self, session_ids, flt, order)

    def order_scope(self, session_ids: Iterable[str], filter: SessionFilter | None = None) -> set[str]:
        """The sessions whose place in `session_order(filter, ...)` a change in `session_ids`
        may move: the ids themselves, and folded (the default filter) every session of their
        compression chains (a message in one sibling of a forked chain can make it the tip the
        chain is listed as, in place of the other). A live list drops these before re-inserting
        what `order_keys` gives for them."""
        ids = set(session_ids)
        if not (filter or SessionFilter()).folded or not ids:
            return ids
        with _read_txn(self._conn()):
            return ids | chain_members(self, ids)

    # ------------------------------------------------------------------ live status
    def live_status(
        self, session_ids: Iterable[str], now: float | None = None, *, idle_after_s: float = IDLE_AFTER_S
    ) -> dict[str, dict[str, Any]]:
        """`{id: {"state", "idle_s", "last_role", "last_message_id"}}` by the module's rules;
        unknown ids are left out."""
        now = time.time() if now is None else now
        ids = list(dict.fromkeys(session_ids))
        conn = self._conn()
        active = " AND active = 1" if self.has_column("messages", "active") else ""
        out: dict[str, dict[str, Any]] = {}
        with _read_txn(conn):
            for part in chunks(ids, 500):
                rows = read_tuples(
                    conn,
                    f"SELECT id, started_at, ended_at FROM sessions WHERE id IN ({placeholders(part)})",
                    list(part),
                )
                for sid, started, ended in rows:
                    last = read_tuples(
                        conn,
                        "SELECT id, role, tool_calls, timestamp FROM messages WHERE session_id = ?"
                        f" AND role IN ('user', 'assistant', 'tool'){active} ORDER BY id DESC LIMIT 1",
                        (sid,),
                    )
                    out[sid] = _status(
                        last[0] if last else None, _float(started), _float(ended), now, idle_after_s
                    )
        return out

    def active_sessions(
        self, now: float | None = None, within_s: float = IDLE_AFTER_S, *, limit: int = 500
    ) -> list[str]:
        """The "active now" filter: open sessions whose last (not rewound) message — or start,
        when they have none yet — is within `within_s` seconds, most recently active first.
        Bounded: only the newest `_ACTIVE_SCAN` messages by id are looked at."""
        now = time.time() if now is None else now
        since = now - within_s
        conn = self._conn()
        with _read_txn(conn):
            active = " WHERE active = 1" if self.has_column("messages", "active") else ""
            recent = read_tuples(
                conn,
                "SELECT session_id, MAX(timestamp) FROM (SELECT session_id, timestamp FROM messages"
                f"{active} ORDER BY id DESC LIMIT ?) WHERE timestamp >= ? GROUP BY session_id",
                (_ACTIVE_SCAN, since),
            )
            started = read_tuples(  # just started, no message yet: activity is the start
                conn,
                "SELECT id, started_at FROM sessions s WHERE started_at >= ? AND ended_at IS NULL"
                " AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.session_id = s.id)",
                (since,),
            )
            last: dict[str, float] = {}
            for sid, ts in [*recent, *started]:
                last[sid] = _float(ts) or 0.0
            open_ids: set[str] = set()
            ids = list(last)
            for part in chunks(ids, 500):
                open_ids |= {
                    sid
                    for (sid,) in read_tuples(
                        conn,
                        f"SELECT id FROM sessions WHERE id IN ({placeholders(part)}) AND ended_at IS NULL",
                        list(part),
                    )
                }
        return sorted(open_ids, key=lambda s: (-last[s], s))[:limit]


def _status(
    last: tuple[Any, ...] | None, started: float | None, ended: float | None, now: float, idle_after_s: float
) -> dict[str, Any]:
    """One session's live status (rules in the module docstring)."""
    mid, role, tool_calls, ts = last if last is not None else (None, None, None, None)
    activity = _float(ts) if last is not None else started
    idle_s = max(0.0, now - activity) if activity is not None else None
    if ended is not None:
        state = "ended"
    elif idle_s is None or idle_s >= idle_after_s:
        state = "idle"
    elif role in ("user", "tool") or (role == "assistant" and _has_calls(tool_calls)):
        state = "working"
    else:
        state = "waiting"
    return {"state": state, "idle_s": idle_s, "last_role": role, "last_message_id": mid}


def _has_calls(tool_calls: Any) -> bool:
    """An assistant row with tool calls: their results are still to come."""
    return bool(tool_calls) and any(c for c in tool_calls_list(tool_calls))


class _read_txn:  # noqa: N801 - used as a statement: `with _read_txn(conn):`
    """One short read transaction (a consistent snapshot for a poll's few reads), ended before
    the poll returns; nested use inside a caller's transaction is a no-op."""

    def __init__(self, conn: apsw.Connection):
        self._conn = conn
        self._own = False

    def __enter__(self) -> None:
        if self._conn.in_transaction:
            return
        self._conn.execute("BEGIN DEFERRED")
        self._own = True

    def __exit__(self, *exc: object) -> None:
        if self._own:
            self._conn.execute("COMMIT")


class ChangeWatcher:
    """A cursor kept for you: `poll()` returns `Changes` (falsy when nothing happened).

    Poll from one thread (the connection is that thread's). Thread-safe against `care()` calls
    from another thread (the UI updating the ids it shows)."""

    def __init__(self, db: LiveMixin, care_about: Iterable[str] = (), **poll_kw: Any):
        self._db = db
        self._care = list(care_about)
        self._lock = threading.Lock()
        self._poll_kw = poll_kw
        self.cursor: LiveCursor = db.change_cursor(self._care)

    def care(self, session_ids: Iterable[str]) -> None:
        """Replace the ids whose ends, titles and deletions matter to the caller."""
        with self._lock:
            self._care = list(session_ids)

    def poll(self) -> Changes:
        with self._lock:
            care = list(self._care)
        changes, self.cursor = self._db.changes_since(self.cursor, care, **self._poll_kw)
        return changes
