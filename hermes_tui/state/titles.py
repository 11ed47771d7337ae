"""Titles: sanitising, uniqueness with the compression-ancestor transfer, lookups, numbering."""

from __future__ import annotations

import re
from typing import Any

import apsw

from . import sql_fragments as Q
from .core import _Core
from .errors import SessionNotFound, TitleError
from .text import scrub_surrogates

MAX_TITLE_LENGTH = 100
_CONTROL_RE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_INVISIBLE_RE = re.compile(r"[\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff\ufffc\ufff9-\ufffb]")
_WS_RE = re.compile(r"\s+")
_NUMBERED_RE = re.compile(r"^(.*?) #(\d+)$")


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

    def _title_conflict(self, conn: apsw.Connection, session_id: str, title: str) -> tuple[str | None, bool]:
        """(holder id, whether the holder is a compression ancestor that would hand it over)."""
        row: list[tuple[Any, ...]] = conn.execute(
            "SELECT id FROM sessions WHERE title = ? AND id != ?", (title, session_id)
        ).fetchall()
        if not row:
            return None, False
        holder = row[0][0]
        return holder, self._is_compression_ancestor(conn, holder, session_id)

    def _set_title(self, session_id: str, title: str | None, only_if_empty: bool) -> bool:
        clean = sanitize_title(title)

        def do(conn: apsw.Connection) -> int:
            if only_if_empty:
                cur = conn.execute("SELECT title FROM sessions WHERE id = ?", (session_id,)).fetchall()
                if not cur or cur[0][0] is not None:
                    return 0
            if clean:
                holder, transfer = self._title_conflict(conn, session_id, clean)
                if holder is not None:
                    if not transfer:
                        raise TitleError(f"Title '{clean}' is already in use by session {holder}")
                    conn.execute("UPDATE sessions SET title = NULL WHERE id = ?", (holder,))
            extra = " AND title IS NULL" if only_if_empty else ""
            conn.execute(f"UPDATE sessions SET title = ? WHERE id = ?{extra}", (clean, session_id))
            return conn.changes()

        return self._execute_write(do) > 0

    def set_session_title(self, session_id: str, title: str | None) -> bool:
        """True iff a row was updated (unknown id → False); empty clears the title."""
        return self._set_title(session_id, title, only_if_empty=False)

    def set_auto_title_if_empty(self, session_id: str, title: str | None) -> bool:
        return self._set_title(session_id, title, only_if_empty=True)

    def check_title(self, session_id: str, title: str | None) -> dict[str, Any]:
        """(+) Dry run of a rename, for live validation in a dialog. Never writes."""
        result: dict[str, Any] = {
            "ok": True,
            "title": None,
            "error": None,
            "holder": None,
            "transfer_from": None,
        }
        if self.get_session(session_id) is None:
            raise SessionNotFound(f"no session with id {session_id!r}")
        try:
            clean = sanitize_title(title)
        except TitleError as exc:
            return {**result, "ok": False, "error": str(exc)}
        result["title"] = clean
        if clean:
            holder, transfer = self._title_conflict(self._conn(), session_id, clean)
            if holder is not None and transfer:
                result["transfer_from"] = holder
            elif holder is not None:
                result.update(
                    ok=False, holder=holder, error=f"Title '{clean}' is already in use by session {holder}"
                )
        return result

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

    def set_session_archived(self, session_id: str, archived: bool) -> bool:
        """Archive or unarchive the whole compression lineage of a session."""

        def do(conn: apsw.Connection) -> int:
            conn.execute(
                """WITH RECURSIVE
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
                   UPDATE sessions SET archived = ? WHERE id IN (SELECT id FROM lineage)""",
                (session_id, session_id, 1 if archived else 0),
            )
            return conn.changes()

        return self._execute_write(do) > 0
