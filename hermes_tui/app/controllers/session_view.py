"""The session the transcript shows: which one is wanted (the list's cursor, a hit, the
palette), reading it in a worker (newest request wins), and the list's cursor following it to
its row (or its compression chain's row).

`SessionView` does it for the main screen; what is read is `transcript_loading.read_session`.
Its workers run on the screen (`run_worker`, groups "transcript" and "find-row").
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol, cast

from textual.screen import Screen
from textual.worker import get_current_worker

from hermes_tui.app.controllers.host import Keys, ScreenHost
from hermes_tui.app.controllers.messages import SessionLoaded
from hermes_tui.app.controllers.transcript_loading import SessionGone, read_session
from hermes_tui.app.controllers.workers import run_thread
from hermes_tui.app.debounce import Debouncer
from hermes_tui.app.messages import StoreFailed
from hermes_tui.app.stores import Key
from hermes_tui.app.widgets.session_list import SessionList
from hermes_tui.app.widgets.transcript_pane import Transcript
from hermes_tui.state import SessionDB


@dataclass(frozen=True)
class ReadRequest:
    """One read of a session for the transcript (`SessionView.load`)."""

    session_id: str
    target_id: int | None  # the message to show (a search hit)
    terms: tuple[str, ...]  # the words to mark
    focus: bool  # the transcript takes the focus once shown
    chain: bool  # the whole compression chain as one transcript
    db: SessionDB  # the session's store
    profile: str | None  # its profile over several stores
    reload: bool  # after this app's own write (gone: deleted, not an error)


#: The list's cursor resting this long on a row opens it (a key held down opens nothing).
HIGHLIGHT_DEBOUNCE_S = 0.12


def highlight_opens(
    row: tuple[str | None, str | None], wanted: tuple[str | None, str | None], chain_row: bool
) -> bool:
    """The list's cursor came to ``row`` (session, profile): it opens unless it is no session,
    the one wanted already, or the compression chain's row of the session shown."""
    return row[0] is not None and row != wanted and not chain_row


class Gone(Protocol):
    """The shown session (`shown.ShownSession`)."""

    async def reloaded_gone(self, session_id: str) -> None: ...


class ViewHost(ScreenHost, Protocol):
    """What `SessionView` reads and sets of the main screen (besides Textual's own methods)."""

    stores: Any
    chain_mode: bool
    current_session: str | None
    current_profile: str | None

    @property
    def db(self) -> SessionDB | None: ...

    @property
    def shown(self) -> Gone: ...

    @property
    def key_checks(self) -> Keys: ...

    def db_for(self, profile: str | None) -> SessionDB | None: ...

    def row_key(self, profile: str | None, session_id: Any) -> Any: ...


class SessionView:
    """Reads the session to show and moves the list's cursor to it."""

    def __init__(self, host: ViewHost) -> None:
        self.host = host
        self.screen = cast("Screen[Any]", host)
        #: The session (and its store) last asked for.
        self.wanted: str | None = None
        self.wanted_profile: str | None = None
        #: (wanted session, the list row standing for it) when the list holds it under another
        #: id (a compression chain listed as its tip): the cursor there keeps the transcript.
        self.wanted_row: tuple[Any, Any] | None = None
        self.highlight_due = Debouncer(self.screen, HIGHLIGHT_DEBOUNCE_S)
        #: The row a jump put the list's cursor on: the list's reports of it (the move, a page
        #: of it loaded) are not the user's choice, however late they are handled.
        self.placed: Any = None

    # ------------------------------------------------------------------ which session
    def load(
        self,
        session_id: str,
        target_id: int | None = None,
        terms: tuple[str, ...] = (),
        focus: bool = False,
        profile: str | None = None,
        reload: bool = False,
    ) -> None:
        """Fetch a transcript and its lineage in a worker (the newest request wins). Over several
        stores ``profile`` names the session's store (default: the open transcript's). A
        ``reload`` of the shown session after this app's own write finds it gone when that
        write deleted it: the pane says so, it is not an error."""
        host = self.host
        if profile is None:  # (with one store there is no profile)
            profile = host.current_profile
        db = host.db_for(profile)
        if db is None or not session_id:
            return
        self.wanted, self.wanted_profile = session_id, profile
        self.read(ReadRequest(session_id, target_id, terms, focus, host.chain_mode, db, profile, reload))

    def open(
        self, session_id: str, message_id: int | None, terms: tuple[str, ...], profile: str | None
    ) -> None:
        """Show a session from anywhere (palette, lineage) and move the list cursor to it. Over
        several stores ``profile`` names its store (default: the open transcript's)."""
        host = self.host
        profile = profile or host.current_profile  # (with one store there is no profile)
        self.cursor_to(session_id, profile)
        self.wanted, self.wanted_profile = session_id, profile
        self.highlight_due.cancel()
        self.load(session_id, message_id, terms, focus=True, profile=profile)

    def highlighted(self, message: SessionList.Highlighted) -> None:
        """The list's cursor moved: its session opens once the cursor rests (`highlight_opens`)."""
        host = self.host
        host.key_checks.refresh_action_keys()
        row = (message.session_id, message.profile)
        key = host.row_key(message.profile, message.session_id)
        if key == self.placed:
            return  # the list telling of a jump's cursor, perhaps after the next jump began
        self.placed = None
        chain_row = (host.row_key(self.wanted_profile, self.wanted), key) == self.wanted_row
        if not highlight_opens(row, (self.wanted, self.wanted_profile), chain_row):
            return
        self.wanted_row = None
        self.wanted, self.wanted_profile = message.session_id, message.profile
        self.highlight_due.restart(lambda: self.load(message.session_id or "", profile=message.profile))

    def selected(self, message: SessionList.Selected) -> bool:
        """Enter on a row: open it with the focus, or (shown already) focus the transcript."""
        host = self.host
        if (message.session_id, message.profile) != (host.current_session, host.current_profile):
            self.load(message.session_id, focus=True, profile=message.profile)
            return True
        self.screen.query_one("#transcript", Transcript).focus()
        return False

    # ------------------------------------------------------------------ reading
    def read(self, request: ReadRequest) -> None:
        """`read_session` off the loop (the newest request wins: group "transcript")."""
        self.screen.query_one("#transcript", Transcript).loading = True
        run_thread(
            self.screen,
            partial(self._read_worker, request),
            "transcript",
            "load a transcript",
            exclusive=True,
        )

    def _read_worker(self, r: ReadRequest) -> None:
        screen = self.screen
        worker = get_current_worker()
        try:
            loaded = read_session(
                r.db,
                r.session_id,
                r.target_id,
                r.terms,
                r.focus,
                r.chain,
                r.profile,
                lambda: worker.is_cancelled,
            )
        except SessionGone:
            if r.reload and not worker.is_cancelled:
                screen.app.call_from_thread(screen.call_later, self.host.shown.reloaded_gone, r.session_id)
            elif not r.reload:
                screen.post_message(StoreFailed("open session", f"session {r.session_id} not found"))
            return
        except Exception as exc:
            if not worker.is_cancelled:
                screen.post_message(StoreFailed("load the transcript", f"{type(exc).__name__}: {exc}"))
                screen.app.call_from_thread(self._failed)
            return
        if loaded is not None and not worker.is_cancelled:
            screen.post_message(SessionLoaded(loaded))

    def _failed(self) -> None:
        self.screen.query_one("#transcript", Transcript).loading = False

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
                self._place(key, index)
            elif host.db_for(profile) is not None:
                self._find(ids, key, host.db_for(profile))

    def _find(self, ids: Any, key: Key | str, db: SessionDB | None) -> None:
        run_thread(
            self.screen, partial(self._find_worker, ids, key, db), "find-row", "find a row", exclusive=True
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
        wanted = host.row_key(self.wanted_profile, self.wanted)
        if wanted == key and host.session_list._ids is not ids:  # re-ordered meanwhile: look again
            profile, sid = SessionList.split_key(key)
            self.cursor_to(sid or "", profile)
            return
        if host.session_list._ids is ids and wanted == key:
            # The row stands for the wanted session (its chain's tip): the transcript stays.
            self.wanted_row = (key, row_key) if row_key != key else None
            self._place(row_key, index)

    def _place(self, key: Any, index: int) -> None:
        """The list's cursor to the row ``key`` at ``index``, for a jump (`placed`)."""
        sessions = self.host.session_list
        if sessions.cursor != index:
            self.placed = key
            sessions.cursor = index
