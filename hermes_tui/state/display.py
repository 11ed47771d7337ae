"""What a person sees of a session: Hermes' display transcript.

Today's Hermes (schema v24+, files with `display_order`/`display_identity` on `messages`) keeps
several rows for one logical message: compaction copies the protected tail into each new
generation (same role, content and time; the older copy archived with `compacted = 1`), and its
triggers give every copy the `display_order` of the first row with the same `display_identity`.
Its display read (`get_messages(include_compacted=True)`, `_display_rows_from_conn` in the v31
writer's `hermes_state_messages.py`) shows one row per `display_order` group (the live copy,
else the newest), in `display_order`, over live and compaction-archived rows, never a rewound one
(`active = 0, compacted = 0`) nor a `model_only` row (`display_metadata.model_only`: a merge the
model reads that nobody typed). `display_kind = 'hidden'` rows are in that read but Hermes never
paints them (model-facing scaffolding: `tui_gateway.session_history._history_to_messages`).

A session with rows the index does not cover yet (an older row, or one another program wrote
without an identity) is grouped here by the writer's own key (`_display_dedupe_key`), as its
read-only path (`_legacy_display_page`) does: the writer would write the index first; a
browser never writes. (The key's one refinement not followed: a user row that carries a
compaction summary is keyed by its raw content, not by the user turn inside it.)

Files without those columns (0.19.0's v22, our v23) show every live row as its own message,
as before.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from .core import _Core
from .list_order import sqlite_rank
from .messages import decode_message_row
from .text import read_rows

#: `display_metadata` flag of a row only the model reads (`MODEL_ONLY_DISPLAY_METADATA_KEY`).
MODEL_ONLY_KEY = "model_only"
#: The one `display_kind` Hermes never paints.
HIDDEN_KIND = "hidden"
#: Why a transcript row is folded away (`transcript_rows`' `fold`).
FOLD_HIDDEN = "hidden"
FOLD_INACTIVE = "inactive"
#: Columns a display read needs besides the row itself (internal; dropped from the dicts).
_VISIBLE = "_dv"
_IDENTITY = "_di"


def _is_display_row(row: dict[str, Any]) -> bool:
    """Live or compaction-archived (`active = 1 OR compacted = 1`)."""
    return row.get("active") == 1 or row.get("compacted") == 1


def _call_id(call: Any) -> str:
    """`coalesce_tool_call_id`: `call_id`, else `id`, up to a `|`; "" when none."""
    if not isinstance(call, dict):
        return ""
    for raw in (call.get("call_id"), call.get("id")):
        value = raw.strip() if isinstance(raw, str) else ""
        if value:
            return value.split("|", 1)[0].strip() or value
    return ""


def dedupe_key(row: dict[str, Any]) -> tuple[Any, ...]:
    """The writer's `_display_dedupe_key` of a stored row (raw column values): a tool-calling
    assistant row by its call ids (`_stable_tool_key`), any other by its role, stored content,
    time, tool call id, tool calls and tool name."""
    if row.get("role") == "assistant":
        try:
            calls = json.loads(row.get("tool_calls") or "[]")
        except (TypeError, ValueError, RecursionError):
            calls = []
        call_ids = tuple(_call_id(c) for c in (calls if isinstance(calls, list) else list(calls or ())))
        if call_ids and all(call_ids):
            return (
                "assistant",
                None,
                row.get("timestamp"),
                row.get("tool_call_id"),
                call_ids,
                row.get("tool_name"),
            )
    return (
        row.get("role"),
        row.get("content"),
        row.get("timestamp"),
        row.get("tool_call_id"),
        row.get("tool_calls"),
        row.get("tool_name"),
    )


def display_groups(rows: list[dict[str, Any]]) -> list[tuple[Any, list[dict[str, Any]]]]:
    """The display groups of one session's rows (ordered by id, each with `_dv`: shown to a person
    at all, and `_di`: has a display identity): `[(order, [representative, other members...])]`
    in display order. Only visible live or compaction-archived rows take part. Indexed (every
    such row has an order and an identity): grouped by `display_order`; else by `dedupe_key`,
    a group's order its first id. The representative is the live row, else the newest."""
    candidates = [r for r in rows if _is_display_row(r)]
    indexed = all(r.get("display_order") is not None and r.get(_IDENTITY) for r in candidates)
    groups: dict[Any, list[dict[str, Any]]] = {}
    order: dict[Any, Any] = {}
    for row in candidates:
        if not row.get(_VISIBLE):
            continue
        key = row.get("display_order") if indexed else dedupe_key(row)
        groups.setdefault(key, []).append(row)
        order.setdefault(key, key if indexed else row["id"])
    out = []
    for key, members in groups.items():
        members.sort(key=lambda r: (sqlite_rank(r.get("active")), r["id"]), reverse=True)
        out.append((order[key], members))
    out.sort(key=lambda g: sqlite_rank(g[0]))
    return out


class DisplayMixin(_Core):
    def has_display_groups(self) -> bool:
        """(+) The file keeps Hermes' display index (`display_order`, `display_identity`)."""
        return self.has_column("messages", "display_order") and self.has_column(
            "messages", "display_identity"
        )

    def _display_read(self, session_id: str, after_id: int | None = None) -> list[dict[str, Any]]:
        """Every row of the session (raw values, ids ascending) with `_dv` and `_di`."""
        cols = [c for c in self.columns("messages") if c != "display_identity"]
        visible = (
            "(COALESCE(json_extract(CASE WHEN json_valid(display_metadata) THEN display_metadata "
            f"ELSE json_object() END, '$.{MODEL_ONLY_KEY}'), 0) = 0)"
            if self.has_column("messages", "display_metadata")
            else "1"
        )
        after = " AND id > ?" if after_id is not None else ""
        return read_rows(
            self._conn(),
            f"SELECT {', '.join(cols)}, {visible} AS {_VISIBLE}, "
            f"display_identity IS NOT NULL AS {_IDENTITY} FROM messages "
            f"WHERE session_id = ?{after} ORDER BY id",
            (session_id, after_id) if after_id is not None else (session_id,),
        )

    def display_messages(self, session_id: str, *, hidden: bool = True) -> list[dict[str, Any]]:
        """(+) The messages a person sees of one session, in order (module docstring).

        Files of today's Hermes with its display index: exactly what the v31 writer's
        `get_messages(session_id, include_compacted=True)` returns (one row per display group,
        compaction-archived turns included, rewound and `model_only` rows not), read without
        writing; `hidden=False` also leaves out `display_kind = 'hidden'` rows, as Hermes' own
        transcript does. Other files: `get_messages(session_id)`, the live rows."""
        if not self.has_display_groups():
            rows = self.get_messages(session_id)
            return rows if hidden else [r for r in rows if r.get("display_kind") != HIDDEN_KIND]
        out = []
        for _order, members in display_groups(self._display_read(session_id)):
            rep = members[0]
            if hidden or rep.get("display_kind") != HIDDEN_KIND:
                out.append(_finish(rep))
        return out

    def transcript_rows(self, session_id: str, after_id: int | None = None) -> list[dict[str, Any]]:
        """(+) Every row of a session, as a reader that folds shows them: one dict per logical
        message, in display order, each with `fold` — None (shown), `"hidden"` (model-facing:
        `display_kind = 'hidden'` or `model_only`) or `"inactive"` (rewound; on files without
        the display index also compaction-archived, as before) — `members` (the ids of the
        rows it stands for, itself first; several where compaction copies fold into one) and
        `display_group` (its group's `display_order`; None for a row outside the groups).

        `after_id` (live follow): only rows with a larger id, each its own message keyed by its
        stored `display_order` (a copy of a message already shown has that message's group)."""
        if not self.has_display_groups():
            rows = (
                self.get_messages(session_id, include_inactive=True)
                if after_id is None
                else self.get_messages_page(session_id, after_id=after_id, limit=-1)
            )
            for row in rows:
                row["fold"] = None if row.get("active") in (None, 1) else FOLD_INACTIVE
                row["members"] = [row.get("id")]
                row["display_group"] = None
            return rows
        raw = self._display_read(session_id, after_id)
        if after_id is not None:
            return [_transcript_row(r, r.get("display_order") if _is_display_row(r) else None) for r in raw]
        grouped: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
        for order, members in display_groups(raw):
            row = _transcript_row(members[0], order, [m["id"] for m in members])
            grouped.append(((*sqlite_rank(order), members[0]["id"]), row))
        taken = {i for _k, row in grouped for i in row["members"]}
        for row in raw:
            if row["id"] not in taken:  # rewound and model-only rows: each its own, by id
                grouped.append(((1, row["id"], row["id"]), _transcript_row(row, None)))
        grouped.sort(key=lambda g: g[0])
        return [row for _k, row in grouped]


def _finish(row: dict[str, Any]) -> dict[str, Any]:
    """A raw display row as the API returns messages (internal columns dropped, decoded)."""
    row.pop(_VISIBLE, None)
    row.pop(_IDENTITY, None)
    return decode_message_row(row)


def _transcript_row(row: dict[str, Any], group: Any, members: Iterable[Any] | None = None) -> dict[str, Any]:
    visible = bool(row.get(_VISIBLE))
    if not _is_display_row(row):
        fold: str | None = FOLD_INACTIVE
    elif not visible or row.get("display_kind") == HIDDEN_KIND:
        fold = FOLD_HIDDEN
    else:
        fold = None
    out = _finish(row)
    out["fold"] = fold
    out["members"] = list(members) if members is not None else [out.get("id")]
    out["display_group"] = group
    return out
