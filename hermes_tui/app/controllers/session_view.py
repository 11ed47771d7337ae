"""The session the transcript shows: reading it in a worker (newest request wins), and the
list's cursor following it to its row (or its compression chain's row).

`SessionView` does it for the main screen; what is read is `transcript_loading.read_session`.
Its workers run on the screen (`run_worker`, groups "transcript" and "find-row").
"""

from __future__ import annotations

from functools import partial
from typing import Any, Protocol, cast

from textual.screen import Screen
from textual.worker import get_current_worker

from hermes_tui.app.controllers.messages import SessionLoaded
from hermes_tui.app.controllers.transcript_loading import SessionGone, read_session
from hermes_tui.app.messages import StoreFailed
from hermes_tui.app.stores import Key
from hermes_tui.app.widgets.session_list import SessionList
from hermes_tui.app.widgets.transcript import TranscriptView
from hermes_tui.state import SessionDB


class ViewHost(Protocol):
    """What `SessionView` reads and sets of the main screen (besides Textual's own methods)."""

    _wanted: str | None
    _wanted_profile: str | None
    _wanted_row: tuple[Any, Any] | None

    @property
    def session_list(self) -> SessionList: ...

    @property
    def db(self) -> SessionDB | None: ...

    def db_for(self, profile: str | None) -> SessionDB | None: ...

    def row_key(self, profile: str | None, session_id: Any) -> Any: ...

    async def _reloaded_session_gone(self, session_id: str) -> None: ...


class SessionView:
    """Reads the session to show and moves the list's cursor to it."""

    def __init__(self, host: ViewHost) -> None:
        self.host = host
        self.screen = cast("Screen[Any]", host)

    # ------------------------------------------------------------------ reading
    def read(
        self,
        session_id: str,
        target_id: int | None,
        terms: tuple[str, ...],
        focus: bool,
        chain: bool,
        db: SessionDB,
        profile: str | None,
        reload: bool,
    ) -> None:
        """`read_session` off the loop (the newest request wins: group "transcript")."""
        self.screen.query_one("#transcript", TranscriptView).loading = True
        self.screen.run_worker(
            partial(self._read_worker, session_id, target_id, terms, focus, chain, db, profile, reload),
            thread=True,
            exit_on_error=False,
            exclusive=True,
            group="transcript",
            description="load a transcript",
        )

    def _read_worker(
        self,
        session_id: str,
        target_id: int | None,
        terms: tuple[str, ...],
        focus: bool,
        chain: bool,
        db: SessionDB,
        profile: str | None,
        reload: bool,
    ) -> None:
        screen = self.screen
        worker = get_current_worker()
        try:
            loaded = read_session(
                db, session_id, target_id, terms, focus, chain, profile, lambda: worker.is_cancelled
            )
        except SessionGone:
            if reload and not worker.is_cancelled:
                screen.app.call_from_thread(screen.call_later, self.host._reloaded_session_gone, session_id)
            elif not reload:
                screen.post_message(StoreFailed("open session", f"session {session_id} not found"))
            return
        except Exception as exc:
            if not worker.is_cancelled:
                screen.post_message(StoreFailed("load the transcript", f"{type(exc).__name__}: {exc}"))
                screen.app.call_from_thread(self._failed)
            return
        if loaded is not None and not worker.is_cancelled:
            screen.post_message(SessionLoaded(loaded))

    def _failed(self) -> None:
        self.screen.query_one("#transcript", TranscriptView).loading = False

    # ------------------------------------------------------------------ the list's cursor
    def cursor_to(self, session_id: str, profile: str | None) -> None:
        """Move the list cursor to a session (when the list holds it) without loading it again.
        A session the list does not hold as a row, e.g. an earlier segment of a compression
        chain (Hermes' list shows a chain once, as its tip), moves it to its chain's row."""
        host = self.host
        sessions = host.session_list
        ids = sessions._ids
        key = host.row_key(profile, session_id)
        finder = getattr(ids, "index_or_none", None)
        if sessions.provisional:  # a row past the head: it moves once the order is read
            sessions.move_to(key)
        elif finder is not None:  # a merged list: finding the position reads the stores
            self._find(ids, key, host.db_for(profile))
        else:
            index = SessionList._find_near(ids, key, sessions.cursor)
            if index is not None:
                sessions.cursor = index
            elif host.db_for(profile) is not None:
                self._find(ids, key, host.db_for(profile))

    def _find(self, ids: Any, key: Key | str, db: SessionDB | None) -> None:
        self.screen.run_worker(
            partial(self._find_worker, ids, key, db),
            thread=True,
            exit_on_error=False,
            exclusive=True,
            group="find-row",
            description="find a row",
        )

    def _find_worker(self, ids: Any, key: Key | str, db: SessionDB | None) -> None:
        """The list's cursor to `key` (off the event loop: a merged list's position is looked up
        in the stores' orders), else to the row of its compression chain (the tip the list shows
        it as), unless the list changed or another session was chosen meanwhile."""
        profile, sid = SessionList.split_key(key)
        finder = getattr(ids, "index_or_none", None)

        def index_of(k: Any) -> int | None:
            if finder is not None:
                found: int | None = finder(k)
                return found
            return SessionList._find_near(ids, k, 0)

        index = index_of(key)
        row_key: Any = key
        if index is None and db is not None and sid is not None:
            try:
                tip = db.get_compression_tip(sid)
            except Exception:  # noqa: BLE001 - the cursor just stays: the transcript shows it
                tip = None
            if tip and tip != sid:
                row_key = (profile, tip) if isinstance(key, tuple) else tip
                index = index_of(row_key)
        if index is not None and not get_current_worker().is_cancelled:
            self.screen.app.call_from_thread(self._found, ids, key, row_key, index)

    def _found(self, ids: Any, key: Any, row_key: Any, index: int) -> None:
        host = self.host
        wanted = host.row_key(host._wanted_profile, host._wanted)
        if wanted == key and host.session_list._ids is not ids:  # re-ordered meanwhile: look again
            profile, sid = SessionList.split_key(key)
            self.cursor_to(sid or "", profile)
            return
        if host.session_list._ids is ids and wanted == key:
            # The row stands for the wanted session (its chain's tip): the transcript stays.
            host._wanted_row = (key, row_key) if row_key != key else None
            host.session_list.cursor = index
