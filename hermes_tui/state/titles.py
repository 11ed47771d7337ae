"""Titles: sanitising, uniqueness with the compression-ancestor transfer, lookups, numbering."""

from __future__ import annotations

import re
from typing import Any

import apsw

from . import sql_fragments as Q
from .core import _Core, live_columns
from .errors import SessionNotFound, TitleError
from .text import scrub_surrogates

MAX_TITLE_LENGTH = 100
_CONTROL_RE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_INVISIBLE_RE = re.compile(r"[\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff\ufffc\ufff9-\ufffb]")
_WS_RE = re.compile(r"\s+")
_NUMBERED_RE = re.compile(r"^(.*?) #(\d+)$")

#: Provenance of a title where the file has `title_source` (today's Hermes ranks them
#: derived < llm < user; NULL, a title from before provenance, ranks as user).
TITLE_SOURCE_USER = "user"
TITLE_SOURCE_LLM = "llm"
#: Bot Mode's registry title: the hidden session with it is the bot's canonical chat.
CANONICAL_BOT_CHAT_TITLE = "Bot Chat"
#: The v31 writer's reason for refusing to rename the canonical Bot Chat, verbatim.
BOT_CHAT_RENAME_REFUSED = (
    "This is the bot's canonical Bot Chat — its name is its identity, and renaming it would orphan "
    "the conversation. To start fresh, create a new bot instead."
)
#: An ended, empty session (the v31 writer's `_EMPTY_SESSION_WHERE`): a "ghost" lists never show.
_GHOST_SQL = (
    "(message_count = 0 AND ended_at IS NOT NULL AND archived = 0 AND NOT EXISTS ("
    "SELECT 1 FROM messages WHERE messages.session_id = sessions.id))"
)


def sanitize_title(title: str | None) -> str | None:
    """Clean a title the way 0.19.0 does; `None` for empty; `TitleError` when over 100 chars."""
    if not title:
        return None
    cleaned = _CONTROL_RE.sub("", scrub_surrogates(title))
    cleaned = _INVISIBLE_RE.sub("", cleaned)
    cleaned = _WS_RE.sub(" ", cleaned).strip()
    if not cleaned:
        return None
    if len(cleaned) > MAX_TITLE_LENGTH:
        raise TitleError(f"Title too long ({len(cleaned)} chars, max {MAX_TITLE_LENGTH})")
    return cleaned


class TitlesMixin(_Core):
    MAX_TITLE_LENGTH = MAX_TITLE_LENGTH
    sanitize_title = staticmethod(sanitize_title)

    @staticmethod
    def _is_compression_ancestor(conn: apsw.Connection, ancestor_id: str, descendant_id: str) -> bool:
        if not ancestor_id or not descendant_id or ancestor_id == descendant_id:
            return False
        edge = Q.compression_child("child")
        return bool(
            conn.execute(
                f"""WITH RECURSIVE ancestors(id) AS (
                        SELECT ?
                        UNION
                        SELECT parent.id FROM ancestors a
                        JOIN sessions child ON child.id = a.id
                        JOIN sessions parent ON parent.id = child.parent_session_id
                        WHERE {edge})
                    SELECT 1 FROM ancestors WHERE id = ? AND id != ? LIMIT 1""",
                (descendant_id, ancestor_id, descendant_id),
            ).fetchall()
        )

    def _title_conflict(
        self, conn: apsw.Connection, session_id: str, title: str, cols: frozenset[str]
    ) -> tuple[str | None, str | None]:
        """(holder id, what a rename does to the holder): `None` refuses; "transfer" hands it
        over from a compression ancestor (its title cleared, 0.19.0); "release" frees it, on
        files with `hidden` (the v31 writer's `_resolve_title_conflict`), from an ended, empty,
        visible ghost the lists never show, or from an archived hidden Bot Chat when the new
        title is "Bot Chat" (title and provenance cleared)."""
        row: list[tuple[Any, ...]] = conn.execute(
            "SELECT id FROM sessions WHERE title = ? AND id != ?", (title, session_id)
        ).fetchall()
        if not row:
            return None, None
        holder = row[0][0]
        if self._is_compression_ancestor(conn, holder, session_id):
            return holder, "transfer"
        if "hidden" in cols and "archived" in cols:
            archived, hidden, ghost = conn.execute(
                f"SELECT archived, hidden, {_GHOST_SQL} FROM sessions WHERE id = ?", (holder,)
            ).fetchall()[0]
            if (title == CANONICAL_BOT_CHAT_TITLE and archived and hidden) or (ghost and not hidden):
                return holder, "release"
        return holder, None

    @staticmethod
    def _bot_chat_refuses(
        conn: apsw.Connection, session_id: str, title: str | None, cols: frozenset[str]
    ) -> bool:
        """Would renaming `session_id` to `title` move the canonical Bot Chat off its name?"""
        if "hidden" not in cols:
            return False
        row = conn.execute("SELECT title, hidden FROM sessions WHERE id = ?", (session_id,)).fetchall()
        return bool(row) and row[0][0] == CANONICAL_BOT_CHAT_TITLE and bool(row[0][1]) and title != row[0][0]

    def _set_title(self, session_id: str, title: str | None, only_if_empty: bool) -> bool:
        clean = sanitize_title(title)
        # 0.19.0's `set_auto_title_if_empty` is its LLM titler's write; a rename is the user's.
        source = TITLE_SOURCE_LLM if only_if_empty else TITLE_SOURCE_USER

        def do(conn: apsw.Connection) -> int:
            cols = live_columns(conn, "sessions")
            cur = conn.execute("SELECT title FROM sessions WHERE id = ?", (session_id,)).fetchall()
            if not cur or (only_if_empty and cur[0][0] is not None):
                return 0
            if not only_if_empty and self._bot_chat_refuses(conn, session_id, clean, cols):
                raise TitleError(BOT_CHAT_RENAME_REFUSED)
            if clean:
                holder, action = self._title_conflict(conn, session_id, clean, cols)
                if holder is not None:
                    if action is None:
                        raise TitleError(f"Title '{clean}' is already in use by session {holder}")
                    freed = "title = NULL" + (
                        ", title_source = NULL" if action == "release" and "title_source" in cols else ""
                    )
                    conn.execute(f"UPDATE sessions SET {freed} WHERE id = ?", (holder,))
            extra = " AND title IS NULL" if only_if_empty else ""
            if "title_source" in cols:
                conn.execute(
                    f"UPDATE sessions SET title = ?, title_source = ? WHERE id = ?{extra}",
                    (clean, source if clean else None, session_id),
                )
            else:
                conn.execute(f"UPDATE sessions SET title = ? WHERE id = ?{extra}", (clean, session_id))
            return conn.changes()

        return self._execute_write(do) > 0

    def set_session_title(self, session_id: str, title: str | None) -> bool:
        """The user's rename: True iff a row was updated (unknown id → False); empty clears the
        title. Where the file has `title_source` it becomes "user" (Hermes' automatic titler never
        overwrites it). The canonical Bot Chat refuses (`TitleError` with Hermes' reason)."""
        return self._set_title(session_id, title, only_if_empty=False)

    def set_auto_title_if_empty(self, session_id: str, title: str | None) -> bool:
        """0.19.0's LLM titler's write: only an untitled session; `title_source` "llm"."""
        return self._set_title(session_id, title, only_if_empty=True)

    def check_title(self, session_id: str, title: str | None) -> dict[str, Any]:
        """(+) Dry run of a rename, for live validation in a dialog. Never writes."""
        result: dict[str, Any] = {
            "ok": True,
            "title": None,
            "error": None,
            "holder": None,
            "transfer_from": None,
            "released_from": None,
        }
        if self.get_session(session_id) is None:
            raise SessionNotFound(f"no session with id {session_id!r}")
        try:
            clean = sanitize_title(title)
        except TitleError as exc:
            return {**result, "ok": False, "error": str(exc)}
        result["title"] = clean
        conn = self._conn()
        cols = live_columns(conn, "sessions")
        if self._bot_chat_refuses(conn, session_id, clean, cols):
            return {**result, "ok": False, "error": BOT_CHAT_RENAME_REFUSED}
        if clean:
            holder, action = self._title_conflict(conn, session_id, clean, cols)
            if action == "transfer":
                result["transfer_from"] = holder
            elif action == "release":
                result["released_from"] = holder
            elif holder is not None:
                result.update(
                    ok=False, holder=holder, error=f"Title '{clean}' is already in use by session {holder}"
                )
        return result

    def get_session_title_source(self, session_id: str) -> str | None:
        """Who gave the title ("user", "llm", "derived"; upstream's name): None when untitled, or
        when the file has no `title_source` column."""
        if "title_source" not in live_columns(self._conn(), "sessions"):
            return None
        return self._scalar(
            "SELECT title_source FROM sessions WHERE id = ? AND title IS NOT NULL", (session_id,)
        )

    def get_session_title(self, session_id: str) -> str | None:
        return self._scalar("SELECT title FROM sessions WHERE id = ?", (session_id,))

    def get_session_by_title(self, title: str) -> dict[str, Any] | None:
        return self._row("SELECT * FROM sessions WHERE title = ?", (title,))

    def resolve_session_by_title(self, title: str) -> str | None:
        """Most recently started `title #N` variant, else the exact title's session, else None."""
        numbered = self._tuples(
            "SELECT id FROM sessions WHERE title LIKE ? ESCAPE '\\' ORDER BY started_at DESC LIMIT 1",
            (Q.like_escape(title) + " #%",),
        )
        if numbered:
            return numbered[0][0]
        exact = self._scalar("SELECT id FROM sessions WHERE title = ?", (title,))
        return exact

    def get_next_title_in_lineage(self, base_title: str) -> str:
        match = _NUMBERED_RE.match(base_title)
        base = match.group(1) if match else base_title
        existing = [
            r[0]
            for r in self._tuples(
                "SELECT title FROM sessions WHERE title = ? OR title LIKE ? ESCAPE '\\'",
                (base, Q.like_escape(base) + " #%"),
            )
        ]
        if not existing:
            return base
        max_num = 1
        for t in existing:
            m = re.match(r"^.* #(\d+)$", t)
            if m:
                max_num = max(max_num, int(m.group(1)))
        return f"{base} #{max_num + 1}"
