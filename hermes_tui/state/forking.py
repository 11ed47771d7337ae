"""`fork_session`: a new session continuing a conversation from one of its messages.

Shaped as Hermes' `/branch` makes a session (`_handle_branch_command`, 0.19.0 and the v31
writer), so both writers list, search, resume and keep writing it as their own branch: the
source as `parent_session_id`, `model_config` `{max_iterations, reasoning_config,
_branched_from}` (the first two as the source has them), the source's model, system prompt (the
same `system_prompts` hash where the file has that table), working folder, git and profile
columns, the title from `get_next_title_in_lineage` unless one is given, source `cli`.

Unlike `/branch` it copies the conversation only up to the chosen message, and records where in
`model_config._branched_at_message` (the source's message id; both writers read `model_config`
by key and keep unknown keys), and it never ends the source (it may be live). Messages are
copied by one `INSERT … SELECT` naming every column the file has except the id and the
per-session `display_order` (the v31 writer's insert trigger assigns it, as for its own clones),
so tool calls, reasoning, display fields, api content and message uids stay byte-exact. One
write transaction; nothing is migrated (`migrate=False` stores stay as they are).
"""

from __future__ import annotations

import hashlib
import json
import uuid
from datetime import datetime
from typing import Any

import apsw

from .core import _Core, live_columns
from .errors import InvalidArgument, MessageNotFound, SessionNotFound, TitleError
from .text import loads_kept, read_rows, read_tuples, tool_calls_list
from .titles import TITLE_SOURCE_USER, sanitize_title

#: The `model_config` keys `/branch` writes besides the marker (the running agent's values there;
#: the source's own here, when it has them).
BRANCH_CONFIG_KEYS = ("max_iterations", "reasoning_config")
#: The branch marker both writers classify by, and ours: the message the fork was cut at.
BRANCHED_FROM_KEY = "_branched_from"
BRANCHED_AT_KEY = "_branched_at_message"
#: The surface `/branch` records when run from Hermes' CLI (where a fork is resumed).
FORK_SOURCE = "cli"
#: What `/branch` titles a branch of an untitled session ("branch", "branch #2", …).
UNTITLED_BASE = "branch"
#: Session columns the fork takes from its source, byte for byte, where the file has them.
_COPIED_SESSION_COLUMNS = (
    "model",
    "system_prompt",
    "system_prompt_hash",
    "cwd",
    "git_repo_root",
    "git_branch",
    "profile_name",
)
#: Message columns never copied: the new row's own id and session, and the v31 per-session
#: display position (its insert trigger assigns it from the new ids).
_NOT_COPIED_MESSAGE_COLUMNS = frozenset({"id", "session_id", "display_order"})


def new_session_id(now: datetime | None = None) -> str:
    """`YYYYMMDD_HHMMSS_<6 hex>`: the shape Hermes mints for interactive sessions and branches."""
    return f"{(now or datetime.now()).strftime('%Y%m%d_%H%M%S')}_{uuid.uuid4().hex[:6]}"


def _tool_call_count(values: list[Any]) -> int:
    """The session's `tool_call_count` for these stored `tool_calls` (a list counts its items)."""
    return sum(len(tool_calls_list(v)) for v in values if v not in (None, "", b""))


class ForkMixin(_Core):
    def get_active_message_ids(self, session_id: str) -> list[int]:
        """The ids of the session's live conversation (active messages), oldest first (the v31
        writer's name): what a fork may be cut at, and `-N` counts from the end of."""
        active = " AND active = 1" if self.has_column("messages", "active") else ""
        rows = read_tuples(
            self._conn(), f"SELECT id FROM messages WHERE session_id = ?{active} ORDER BY id", (session_id,)
        )
        return [int(r[0]) for r in rows]

    def _fork_point(self, conn: apsw.Connection, session_id: str, until_message_id: int) -> int:
        """How many messages a fork at `until_message_id` copies; raises when the session or the
        message is not there, or the message is not part of the live conversation."""
        if isinstance(until_message_id, bool) or not isinstance(until_message_id, int):
            raise InvalidArgument(f"the message to fork at must be a message id, not {until_message_id!r}")
        if not read_tuples(conn, "SELECT 1 FROM sessions WHERE id = ?", (session_id,)):
            raise SessionNotFound(f"no session with id {session_id!r}")
        has_active = "active" in live_columns(conn, "messages")
        row = read_tuples(
            conn,
            f"SELECT session_id, {'active' if has_active else '1'} FROM messages WHERE id = ?",
            (until_message_id,),
        )
        if not row or row[0][0] != session_id:
            raise MessageNotFound(f"no message {until_message_id} in session {session_id!r}")
        if row[0][1] != 1:
            raise InvalidArgument(
                f"message {until_message_id} is not part of the conversation (rewound or compacted)"
            )
        active = " AND active = 1" if has_active else ""
        count = read_tuples(
            conn,
            f"SELECT COUNT(*) FROM messages WHERE session_id = ? AND id <= ?{active}",
            (session_id, until_message_id),
        )
        return int(count[0][0])

    def _fork_title(
        self, conn: apsw.Connection, session_id: str, new_id: str, title: str | None
    ) -> tuple[str | None, str | None]:
        """(the fork's title, a holder to release it from) — checked as a rename is: a given title
        that is empty, too long or held by another session raises `TitleError`; the automatic one
        (`get_next_title_in_lineage` of the source's title, or of "branch") leaves the fork
        untitled when it does not fit, as `/branch` does."""
        cols = live_columns(conn, "sessions")
        if title is None:
            current = read_tuples(conn, "SELECT title FROM sessions WHERE id = ?", (session_id,))
            base = current[0][0] if current and isinstance(current[0][0], str) and current[0][0] else None
            try:
                clean = sanitize_title(self.get_next_title_in_lineage(base or UNTITLED_BASE))
            except TitleError:
                return None, None
            if clean is None:
                return None, None
            holder, action = self._title_conflict(conn, new_id, clean, cols)
            return (clean, holder) if holder is None or action == "release" else (None, None)
        clean = sanitize_title(title)
        if clean is None:
            raise TitleError("Title is empty")
        holder, action = self._title_conflict(conn, new_id, clean, cols)
        if holder is not None and action != "release":
            raise TitleError(f"Title '{clean}' is already in use by session {holder}")
        return clean, holder

    def fork_plan(self, session_id: str, until_message_id: int, title: str | None = None) -> dict[str, Any]:
        """(+) What `fork_session` would do, without writing (for a dialog's live check):
        `{"ok", "messages", "title", "error"}` — the messages it copies, the title it would give
        (the automatic one when `title` is None) or why that title is refused. Raises as
        `fork_session` does for a missing session or message."""
        conn = self._conn()
        messages = self._fork_point(conn, session_id, until_message_id)
        try:
            clean, _holder = self._fork_title(conn, session_id, "", title)
        except TitleError as exc:
            return {"ok": False, "messages": messages, "title": None, "error": str(exc)}
        return {"ok": True, "messages": messages, "title": clean, "error": None}

    def fork_session(self, session_id: str, until_message_id: int, *, title: str | None = None) -> str:
        """(+) A new session continuing `session_id` from message `until_message_id` (included):
        see the module's docstring. Returns the new id. Raises `SessionNotFound`,
        `MessageNotFound` (not a message of that session), `InvalidArgument` (a rewound or
        compacted message), `TitleError` (a given title refused as a rename would be)."""

        def do(conn: apsw.Connection) -> str:
            self._fork_point(conn, session_id, until_message_id)
            new_id = new_session_id()
            while read_tuples(conn, "SELECT 1 FROM sessions WHERE id = ?", (new_id,)):
                new_id = new_session_id()
            clean, release = self._fork_title(conn, session_id, new_id, title)
            s_cols = live_columns(conn, "sessions")
            if release is not None:  # a ghost's (or an archived Bot Chat's) title, freed as a rename frees it
                freed = "title = NULL" + (", title_source = NULL" if "title_source" in s_cols else "")
                conn.execute(f"UPDATE sessions SET {freed} WHERE id = ?", (release,))
            given: dict[str, Any] = {
                "id": new_id,
                "source": FORK_SOURCE,
                "created_source": FORK_SOURCE,
                "model_config": self._fork_model_config(conn, session_id, until_message_id),
                "parent_session_id": session_id,
                "started_at": self.clock(),
                "title": clean,
                "title_source": TITLE_SOURCE_USER if clean else None,
                "message_count": 0,
                "tool_call_count": 0,
            }
            names = [c for c in given if c in s_cols]
            copied = [c for c in _COPIED_SESSION_COLUMNS if c in s_cols]
            conn.execute(
                f"INSERT INTO sessions ({', '.join(names + copied)}) "
                f"SELECT {', '.join(['?'] * len(names) + copied)} FROM sessions WHERE id = ?",
                [*(given[c] for c in names), session_id],
            )
            self._fork_prompt_by_hash(conn, new_id, s_cols)
            m_cols = [
                c for c in sorted(live_columns(conn, "messages")) if c not in _NOT_COPIED_MESSAGE_COLUMNS
            ]
            values = [f"0 AS {c}" if c == "compacted" else c for c in m_cols]  # a copy is a live row
            active = " AND active = 1" if "active" in m_cols else ""
            conn.execute(
                f"INSERT INTO messages (session_id, {', '.join(m_cols)}) "
                f"SELECT ?, {', '.join(values)} FROM messages "
                f"WHERE session_id = ? AND id <= ?{active} ORDER BY id",
                (new_id, session_id, until_message_id),
            )
            copied_count = conn.changes()
            calls = [
                r["tool_calls"]
                for r in read_rows(
                    conn, "SELECT tool_calls FROM messages WHERE session_id = ?", (new_id,), decode=False
                )
            ]
            conn.execute(
                "UPDATE sessions SET message_count = ?, tool_call_count = ? WHERE id = ?",
                (copied_count, _tool_call_count(calls), new_id),
            )
            return new_id

        new_id = self._execute_write(do)
        self.request_fts_upkeep()  # one bulk transaction leaves segments of many writes' worth
        return new_id

    @staticmethod
    def _fork_model_config(conn: apsw.Connection, session_id: str, until_message_id: int) -> str:
        """`/branch`'s `model_config`: the source's `max_iterations` and `reasoning_config` (when it
        has them), the branch marker, and where the fork was cut."""
        raw = read_tuples(conn, "SELECT model_config FROM sessions WHERE id = ?", (session_id,))
        source = loads_kept(raw[0][0]) if raw else None
        config = {k: source[k] for k in BRANCH_CONFIG_KEYS if k in source} if isinstance(source, dict) else {}
        config[BRANCHED_FROM_KEY] = session_id
        config[BRANCHED_AT_KEY] = until_message_id
        return json.dumps(config)

    @staticmethod
    def _fork_prompt_by_hash(conn: apsw.Connection, new_id: str, s_cols: frozenset[str]) -> None:
        """Where the file keeps prompts in `system_prompts`, a source that still holds its prompt
        inline gives the fork a reference to it there (the v31 writer's `_store_system_prompt`:
        sha256 of the text); a source with a hash already shares it (copied with the row)."""
        if "system_prompt_hash" not in s_cols or not live_columns(conn, "system_prompts"):
            return
        row = read_rows(
            conn,
            "SELECT system_prompt, system_prompt_hash FROM sessions WHERE id = ?",
            (new_id,),
            decode=False,
        )[0]
        prompt = row["system_prompt"]
        if row["system_prompt_hash"] is not None or not isinstance(prompt, str):
            return  # a hash already shared, no prompt, or bytes that are no text to hash
        digest = hashlib.sha256(prompt.encode("utf-8")).hexdigest()
        conn.execute("INSERT OR IGNORE INTO system_prompts (hash, prompt) VALUES (?, ?)", (digest, prompt))
        conn.execute(
            "UPDATE sessions SET system_prompt_hash = ?, system_prompt = NULL WHERE id = ?", (digest, new_id)
        )
