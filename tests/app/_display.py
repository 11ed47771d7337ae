"""A small store shaped as today's Hermes (schema v31) leaves one, for the transcript's display
tests without the v31 writer: its display columns on `messages` (`display_kind`,
`display_metadata`, `display_identity`, `display_order`), its session columns and its
`system_prompts` table, and one session with a compaction (originals archived, the carried
answer's live copy in the same display group), hidden rows and a working activity.

The differential tests against the writer itself are in tests/peer/test_v31_display.py.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from hermes_tui.state import SessionDB

T = 1_700_000_000.0
SID = "v31-display"
TITLE = "Deploy review"
PROMPT = "You are Hermes, a careful release engineer.\nAnswer briefly.\nNever deploy on Fridays."
ACTIVITY = "running tool: terminal"
SESSION_COLUMNS = (
    "last_activity_at REAL",
    "last_activity_description TEXT",
    "hidden INTEGER NOT NULL DEFAULT 0",
    "last_read_at REAL",
    "system_prompt_hash TEXT",
    "tool_names TEXT",
    "title_source TEXT",
)
MESSAGE_COLUMNS = (
    "display_kind TEXT",
    "display_metadata TEXT",
    "display_identity BLOB",
    "display_order INTEGER",
)
CALL = json.dumps(
    [{"id": "call_1", "type": "function", "function": {"name": "terminal", "arguments": "make deploy"}}]
)

#: (id, role, content, active, compacted, display_order, display_kind, tool_calls, tool_name)
ROWS = (
    (1, "user", "Deploy the payments service to staging.", 0, 1, 1, None, None, None),
    (2, "assistant", "", 0, 1, 2, None, CALL, None),
    (3, "tool", "deployed payments@staging (42 s)", 0, 1, 3, None, None, "terminal"),
    (4, "assistant", "Deployed to staging in 42 s.", 0, 1, 4, None, None, None),
    (
        5,
        "user",
        "[CONTEXT SUMMARY]: the user asked for a staging deploy; it succeeded.",
        1,
        0,
        5,
        "hidden",
        None,
        None,
    ),
    (6, "assistant", "Deployed to staging in 42 s.", 1, 0, 4, None, None, None),  # the carried copy of 4
    (7, "user", "Now production, please.", 1, 0, 7, None, None, None),
    (8, "assistant", "", 1, 0, 8, "hidden", None, None),  # an interrupted turn's placeholder
    (9, "assistant", "Production deploy started: watching the canary.", 1, 0, 9, None, None, None),
)
#: What Hermes shows, in order: one message per display group, hidden rows folded.
SHOWN = [1, 2, 3, 6, 7, 9]
HIDDEN = [5, 8]


def build_display_store(path: Path) -> Path:
    """Write the store (and return its path)."""
    with SessionDB(path) as db:
        conn = db._conn()
        for col in SESSION_COLUMNS:
            conn.execute(f"ALTER TABLE sessions ADD COLUMN {col}")
        for col in MESSAGE_COLUMNS:
            if not db.has_column("messages", col.split()[0]):  # (our v23 has display_kind/_metadata)
                conn.execute(f"ALTER TABLE messages ADD COLUMN {col}")
        conn.execute("CREATE TABLE system_prompts (hash TEXT PRIMARY KEY, prompt TEXT NOT NULL)")
        conn.execute("UPDATE schema_version SET version = 31")
        digest = hashlib.sha256(PROMPT.encode()).hexdigest()
        conn.execute("INSERT INTO system_prompts (hash, prompt) VALUES (?, ?)", (digest, PROMPT))
        conn.execute(
            "INSERT INTO sessions (id, source, model, title, started_at, message_count, system_prompt_hash, "
            "last_activity_at, last_activity_description) VALUES (?, 'cli', 'claude', ?, ?, 9, ?, ?, ?)",
            (SID, TITLE, T, digest, T + 100, ACTIVITY),
        )
        for mid, role, content, active, compacted, order, kind, calls, tool in ROWS:
            at = T + (4 if mid == 6 else mid)  # a copy keeps its original's time
            identity = hashlib.sha256(f"{role}|{content}|{at}|{calls}".encode()).digest()
            conn.execute(
                "INSERT INTO messages (id, session_id, role, content, timestamp, active, compacted, "
                "display_order, display_kind, display_identity, tool_calls, tool_name, tool_call_id) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    mid,
                    SID,
                    role,
                    content,
                    at,
                    active,
                    compacted,
                    order,
                    kind,
                    identity,
                    calls,
                    tool,
                    "call_1" if role == "tool" else None,
                ),
            )
        conn.execute(
            "INSERT INTO sessions (id, source, title, started_at) VALUES ('other', 'cli', 'Other', ?)",
            (T - 50,),
        )
        conn.execute(
            "INSERT INTO messages (session_id, role, content, timestamp, active, compacted, display_order, "
            "display_identity) VALUES ('other', 'user', 'an older session', ?, 1, 0, 10, X'00')",
            (T - 50,),
        )
    return path
