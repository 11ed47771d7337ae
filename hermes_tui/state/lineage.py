"""Lineage through `parent_session_id`: edge kinds, ancestors/descendants, compression chains.

`parent_session_id` means five things: compression continuation, branch, delegate subagent,
reset child (files of today's Hermes, schema v24+) or an untagged child. Every edge is
classified by the one CASE expression in `sql_fragments.edge_kind_case`, so the list, the tree
and deletes agree.
"""

from __future__ import annotations

import json
from typing import Any

from . import sql_fragments as Q
from .chains import compression_tips
from .core import _Core
from .errors import SessionNotFound
from .sessions import SESSION_NUMBERS, SESSION_TIMESTAMPS
from .text import clean_row, read_rows

_NODE_COLS = (
    "id",
    "title",
    "parent_session_id",
    "source",
    "model",
    "message_count",
    "input_tokens",
    "output_tokens",
    "estimated_cost_usd",
    "started_at",
    "ended_at",
    "end_reason",
)
MAX_DEPTH = 100
#: Where a fork was cut (`fork_session`'s `_branched_at_message`): only on the edge it names, as
#: a compression continuation of the fork inherits its `model_config` verbatim.
_CUT_AT = (
    "CASE WHEN {branched} = {a}.parent_session_id THEN json_extract("
    "CASE WHEN json_valid({a}.model_config) THEN {a}.model_config END, '$._branched_at_message') END"
)


def _is_branch(row: dict[str, Any]) -> bool:
    raw = row.get("model_config")
    if not raw:
        return False
    try:
        cfg = json.loads(raw) if isinstance(raw, str) else raw
    except (TypeError, ValueError, RecursionError):  # malformed or absurdly nested: not a branch marker
        return False
    return isinstance(cfg, dict) and cfg.get("_branched_from") is not None


def _fork_child(row: dict[str, Any], *, reset: bool = False) -> bool:
    """Today's Hermes' `_is_explicit_fork_child_row`: a tool session, or a branch or delegate
    (`reset`: or reset) child by a marker naming its own parent (a continuation inherits its
    parent's `model_config`, markers included, so a marker naming another row is not its own)."""
    if row.get("source") == "tool":
        return True
    raw = row.get("model_config")
    try:
        cfg = json.loads(raw) if isinstance(raw, str) else raw
    except (TypeError, ValueError, RecursionError):
        return False
    if not isinstance(cfg, dict):
        return False
    keys = (
        ("_branched_from", "_delegate_from", "_reset_from") if reset else ("_branched_from", "_delegate_from")
    )
    markers = [cfg.get(k) for k in keys]
    parent = row.get("parent_session_id")
    return parent in markers if parent else any(m is not None for m in markers)


def _clean(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Node rows as the API promises them: text as str, dates usable or None, numbers or None
    (`cut_at`: the parent's message id a fork was cut at, else None)."""
    for r in rows:
        cut = r.get("cut_at")
        r["cut_at"] = cut if type(cut) is int else None
    return [clean_row(r, SESSION_NUMBERS, SESSION_TIMESTAMPS) for r in rows]


class LineageMixin(_Core):
    def _node_select(self, alias: str = "s") -> str:
        cols = [f"{alias}.{c}" if self.has_column("sessions", c) else f"NULL AS {c}" for c in _NODE_COLS]
        cut = _CUT_AT.format(branched=Q.BRANCHED_FROM.format(a=alias), a=alias)
        return (
            ", ".join(cols)
            + f", {Q.edge_kind_case(alias, Q.resets_known(self))} AS edge_kind, {cut} AS cut_at"
        )

    def edge_kind(self, session_id: str) -> str | None:
        """Kind of the edge to the parent: compression / branch / delegate / reset / other, None
        for roots (`reset` only in files of today's Hermes, schema v24+)."""
        rows = read_rows(
            self._conn(),
            f"SELECT {Q.edge_kind_case('s', Q.resets_known(self))} AS k, s.id FROM sessions s WHERE s.id = ?",
            (session_id,),
        )
        if not rows:
            raise SessionNotFound(f"no session with id {session_id!r}")
        return rows[0]["k"]

    def get_ancestors(self, session_id: str) -> list[dict[str, Any]]:
        """Root → … → the session itself, by a recursive CTE (cycle-safe, ≤ 100 hops)."""
        cols = self._node_select("s")
        rows = read_rows(
            self._conn(),
            f"""WITH RECURSIVE up(id, depth) AS (
                    SELECT ?, 0
                    UNION
                    SELECT s.parent_session_id, up.depth + 1 FROM sessions s JOIN up ON s.id = up.id
                    WHERE s.parent_session_id IS NOT NULL AND up.depth < {MAX_DEPTH})
                SELECT {cols}, MIN(up.depth) AS up_depth FROM up JOIN sessions s ON s.id = up.id
                GROUP BY s.id ORDER BY up_depth DESC""",
            (session_id,),
        )
        for row in rows:
            row.pop("up_depth", None)
        return _clean(rows)

    def get_descendants(self, session_id: str) -> list[dict[str, Any]]:
        """Every session below `session_id` (not itself), with `depth` (1 = child), parents first."""
        cols = self._node_select("s")
        rows = read_rows(
            self._conn(),
            f"""WITH RECURSIVE down(id, depth) AS (
                    SELECT ?, 0
                    UNION
                    SELECT s.id, down.depth + 1 FROM sessions s JOIN down ON s.parent_session_id = down.id
                    WHERE down.depth < {MAX_DEPTH})
                SELECT {cols}, MIN(down.depth) AS depth FROM down JOIN sessions s ON s.id = down.id
                WHERE down.depth > 0 GROUP BY s.id ORDER BY depth, s.started_at, s.id""",
            (session_id,),
        )
        return _clean(rows)

    def get_lineage(self, session_id: str) -> dict[str, Any]:
        """The whole tree the session belongs to: from its root down, with the live tip marked."""
        ancestors = self.get_ancestors(session_id)
        if not ancestors or ancestors[-1]["id"] != session_id:
            raise SessionNotFound(f"no session with id {session_id!r}")
        root = ancestors[0]
        root["depth"] = 0
        nodes = [root] + self.get_descendants(root["id"])
        tip = self.get_compression_tip(root["id"])
        for node in nodes:
            node["is_tip"] = node["id"] == tip
            node["is_self"] = node["id"] == session_id
        return {"root": root["id"], "tip": tip, "self": session_id, "nodes": nodes}

    def get_compression_tip(self, session_id: str) -> str | None:
        """Follow compression continuations forward to the live tip, by the rules of the file's
        writer (`chains.compression_tips`: 0.19.0's, or v31's, which never follows a reset child)."""
        if not isinstance(session_id, str):
            return session_id
        return compression_tips(self, [session_id]).get(session_id, session_id)

    def get_compression_lineage(self, session_id: str) -> list[str]:
        """Compression ancestors through the tip, chronological, by the file's writer: 0.19.0
        skips branch children; today's Hermes (schema v24+) also tool sessions and delegate and
        reset children (`_fork_child`), so a reset child is never read as the continuation."""
        todays = Q.todays_hermes(self)

        def fork(row: dict[str, Any], reset: bool = False) -> bool:
            return _fork_child(row, reset=reset) if todays else _is_branch(row)

        session = self.get_session(session_id)
        if not session or fork(session):
            return [session_id] if session else []
        root = session
        seen_up = {root["id"]}
        while root.get("parent_session_id") and not fork(root, reset=True):
            parent = self.get_session(root["parent_session_id"])
            if not parent or parent.get("end_reason") != "compression" or parent["id"] in seen_up:
                break
            root = parent
            seen_up.add(root["id"])
        lineage = [root["id"]]
        seen = {root["id"]}
        current = root
        while current.get("end_reason") == "compression":
            children = _clean(
                read_rows(
                    self._conn(),
                    "SELECT * FROM sessions WHERE parent_session_id = ? ORDER BY started_at ASC",
                    (current["id"],),
                )
            )
            nxt = next((c for c in children if not fork(c, reset=True)), None)
            if not nxt or nxt["id"] in seen:
                break
            lineage.append(nxt["id"])
            seen.add(nxt["id"])
            current = nxt
        return lineage if session_id in lineage else [session_id]

    def get_conversation_root(self, session_id: str) -> str:
        chain = self._session_lineage_root_to_tip(session_id)
        return chain[0] if chain and chain[0] else session_id

    def export_session_lineage(self, session_id: str, display: bool = False) -> dict[str, Any] | None:
        """A compression lineage as one logical session: segments, ids and all messages
        (`display`: each segment's as `export_session(display=True)` reads them)."""
        segments = [
            s
            for s in (self.export_session(i, display) for i in self.get_compression_lineage(session_id))
            if s
        ]
        if not segments:
            return None
        base = dict(segments[-1])
        base["segments"] = segments
        base["lineage_session_ids"] = [seg["id"] for seg in segments]
        base["message_count"] = sum(len(seg.get("messages") or []) for seg in segments)
        base["messages"] = [m for seg in segments for m in (seg.get("messages") or [])]
        return base
