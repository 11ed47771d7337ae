"""The demo store reshaped as today's Hermes (schema v31) leaves a file, with a session of each kind
the browser marks: pinned, unread, archived, hidden (the canonical Bot Chat), a working session
with its activity description, a reset child, and an ended empty "ghost" whose title a rename
releases. Every time is fixed (the demo's clock), so snapshots are stable.

The differential tests against the v31 writer itself are in tests/peer; the e2e test drives the
browser on a file the v31 writer wrote.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from store.test_v31_reading import make_v31

from hermes_tui.state import SessionDB

from ._support import DEMO_BASE

DAY = 86400.0

#: The sessions added, by role: (id, title, start (seconds from DEMO_BASE), message times).
PINNED = "v31-pinned"
ARCHIVED = "v31-archived"
ARCHIVED_2 = "v31-archived-2"
BOT_CHAT = "v31-bot-chat"
BUSY = "v31-busy"
RESET_PARENT = "v31-reset-parent"
RESET_CHILD = "v31-reset-child"
GHOST = "v31-ghost"
GHOST_TITLE = "Scratch notes"
DOING = "running tool: terminal"


def _sql(db: SessionDB, statement: str, params: Any = ()) -> None:
    db._execute_write(lambda c: c.execute(statement, params))


def _add(
    db: SessionDB,
    sid: str,
    title: str | None,
    start: float,
    messages: tuple[float, ...],
    *,
    end: float | None = None,
    end_reason: str = "user_exit",
    **kw: Any,
) -> None:
    db.create_session(sid, kw.pop("source", "cli"), model=kw.pop("model", "openai/gpt-5"), **kw)
    for i, at in enumerate(messages):
        db.append_message(sid, "user" if i % 2 == 0 else "assistant", f"{sid} message {i}", timestamp=at)
    if title is not None:
        db.set_session_title(sid, title)
    _sql(db, "UPDATE sessions SET started_at = ? WHERE id = ?", (start, sid))
    if end is not None:
        _sql(db, "UPDATE sessions SET ended_at = ?, end_reason = ? WHERE id = ?", (end, end_reason, sid))


def reshape_v31(path: Path) -> dict[str, Any]:
    """Reshape the demo copy at `path` as a v31 file and add the v31 sessions; returns facts."""
    make_v31(path)
    b = DEMO_BASE
    with SessionDB(path, migrate=False) as db:
        for sid, title, days in (
            (PINNED, "Pinned: release checklist", 30),
            (ARCHIVED, "Archived: old migration chat", 9),
            (ARCHIVED_2, "Archived: retro notes", 8),
        ):
            start = b - days * DAY
            _add(db, sid, title, start, (start + 60,), end=start + 90)
        _sql(db, "UPDATE sessions SET pinned = 1 WHERE id = ?", (PINNED,))
        _sql(db, "UPDATE sessions SET archived = 1 WHERE id IN (?, ?)", (ARCHIVED, ARCHIVED_2))
        _add(db, BOT_CHAT, "Bot Chat", b - 2 * DAY, (b - 2 * DAY + 60, b - 2 * DAY + 70), source="telegram")
        _sql(db, "UPDATE sessions SET hidden = 1 WHERE id = ?", (BOT_CHAT,))
        _add(db, BUSY, "Refactor the search pane", b + 300, (b + 310, b + 400, b + 500))
        _sql(
            db,
            "UPDATE sessions SET last_activity_at = ?, last_activity_description = ? WHERE id = ?",
            (b + 560, DOING, BUSY),
        )
        _add(
            db,
            RESET_PARENT,
            "Daily standup notes",
            b - 3 * DAY,
            (b - 3 * DAY + 60,),
            end=b - 3 * DAY + 120,
            end_reason="session_reset",
            source="telegram",
            session_key="tg:standup",
        )
        _add(
            db,
            RESET_CHILD,
            "Daily standup notes (after /reset)",
            b - 3 * DAY + 130,
            (b - 3 * DAY + 190,),
            end=b - 3 * DAY + 300,
            source="telegram",
            session_key="tg:standup",
            parent_session_id=RESET_PARENT,
            model_config=json.dumps({"_reset_from": RESET_PARENT}),
        )
        _add(db, GHOST, GHOST_TITLE, b - 40 * DAY, (), end=b - 40 * DAY + 5)
        # Unread: the newest demo session's watermark before its last activity; a read one after.
        top = next(i for i in db.session_order(_default()).ids if not i.startswith("v31-"))
        last = db.list_rows([top])[0]["last_active"]
        _sql(db, "UPDATE sessions SET last_read_at = ? WHERE id = ?", (last - 60, top))
        _sql(db, "UPDATE sessions SET last_read_at = ? WHERE id = ?", (b + 10_000, PINNED))
        unread = [r["id"] for r in db.list_rows(db.session_order(_default()).ids) if r["unread"]]
    assert unread == [top], unread
    return {"unread": top}


def _default() -> Any:
    from hermes_tui.state import SessionFilter

    return SessionFilter()
