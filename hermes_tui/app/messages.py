"""App-wide messages: the ones that cross widget boundaries (widget messages stay nested).

Actions added later (rename, prune, delete…) post `SessionsChanged` after a successful write;
the main screen then drops every cached page and re-queries the list, lineage and transcript.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from textual.message import Message


@dataclass
class SessionsChanged(Message):
    """Sessions were created, renamed or deleted: caches are stale. ``ids`` may name them.

    ``keep_cursor``: the write acted on the list's cursor row (archive, pin), so the reload keeps
    the cursor on that row, or on the row taking its place when it left the list; otherwise on
    the open transcript's session."""

    ids: tuple[str, ...] = field(default_factory=tuple)
    keep_cursor: bool = False


@dataclass
class StoreFailed(Message):
    """A store call failed in a worker; shown as a notification, never as a crash."""

    action: str
    error: str


@dataclass
class OpenSession(Message):
    """Ask the main screen to show a session (palette, lineage, search); optional message id.

    Ids are only unique within a store: over several profiles ``profile`` names the session's
    store (None: the open transcript's store, or the one store)."""

    session_id: str
    message_id: int | None = None
    terms: tuple[str, ...] = ()
    profile: str | None = None
