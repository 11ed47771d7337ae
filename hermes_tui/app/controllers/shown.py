"""The session the transcript shows, once read: the panes it fills (transcript, its title and
subtitle, the lineage), the live tip, the open session's live reads, and its deletion.

`ShownSession` does it for the main screen (its `SessionLoaded`, `LiveSession` and
`Transcript.NewBelow` handlers call it); the words are `transcript_loading`'s pure
functions and `deleted_words` / `tip_subtitle` below.
"""

from __future__ import annotations

from typing import Any, Protocol, cast

from rich.text import Text
from textual.screen import Screen
from textual.widgets import Static

from hermes_tui.app.controllers.host import Keys, ScreenHost
from hermes_tui.app.controllers.messages import LiveSession, SessionLoaded
from hermes_tui.app.controllers.search_source import Scope
from hermes_tui.app.controllers.transcript_loading import (
    LoadedSession,
    doing_text,
    tip_note,
    title_text,
    transcript_subtitle,
)
from hermes_tui.app.widgets.lineage import LineageTree
from hermes_tui.app.widgets.search import SearchPane
from hermes_tui.app.widgets.transcript_pane import Transcript


def deleted_words(session_id: str, elsewhere: bool) -> tuple[str, str]:
    """What the transcript pane says (body, subtitle) when the open session was deleted: by
    another program (``elsewhere``) or by this app (`u` undoes it)."""
    if elsewhere:
        return f"Session {session_id} was deleted elsewhere (by another program).", "deleted elsewhere"
    return f"Session {session_id} was deleted (u undoes).", "deleted"


def tip_subtitle(tip: str | None) -> str:
    """The lineage pane's subtitle: `L` jumps to the live tip when there is one."""
    return "L: live tip" if tip is not None else ""


class Follows(Protocol):
    """What the live follow is told (`live.LiveFollow`)."""

    def care(self, visible: list[str] | None = None) -> None: ...


class Wanted(Protocol):
    """The session asked for (`session_view.SessionView`)."""

    wanted: str | None


class ShownHost(ScreenHost, Protocol):
    """What `ShownSession` reads and sets of the main screen (besides Textual's own methods)."""

    current_session: str | None
    current_profile: str | None

    @property
    def live(self) -> Follows: ...

    @property
    def view(self) -> Wanted: ...

    @property
    def key_checks(self) -> Keys: ...

    def row_key(self, profile: str | None, session_id: Any) -> Any: ...

    @property
    def scope(self) -> Scope: ...


class ShownSession:
    """Fills the panes with the session read, keeps them current, and says when it is gone."""

    def __init__(self, host: ShownHost) -> None:
        self.host = host
        self.screen = cast("Screen[Any]", host)
        #: The session as last read (its row, lineage, hit and terms).
        self.last_loaded: LoadedSession | None = None

    @property
    def current(self) -> LoadedSession | None:
        """The last read of the session the transcript shows now, else None."""
        loaded = self.last_loaded
        return loaded if loaded is not None and loaded.session_id == self.host.current_session else None

    def _transcript(self) -> Transcript:
        return self.screen.query_one("#transcript", Transcript)

    async def loaded(self, message: SessionLoaded) -> None:
        """A transcript was read: show it, its title, subtitle and lineage."""
        host, screen = self.host, self.screen
        loaded = message.loaded
        transcript = self._transcript()
        transcript.loading = False
        host.current_session = loaded.session_id
        host.current_profile = loaded.profile
        self.last_loaded = loaded
        await transcript.show(loaded.data, target_id=loaded.target_id, terms=loaded.terms)
        transcript.border_title = "Chain" if loaded.data.chain else "Transcript"
        transcript.show_subtitle(self.subtitle(loaded))
        screen.query_one("#transcript-title", Static).update(self.title(loaded.row))
        screen.query_one("#lineage", LineageTree).show_lineage(loaded.lineage)
        self.live_tip()
        host.live.care()
        host.key_checks.refresh_action_keys()
        if loaded.focus:
            transcript.focus()

    def subtitle(self, loaded: LoadedSession) -> str:
        """The transcript's subtitle (`transcript_loading.transcript_subtitle`)."""
        screen = self.screen
        transcript = self._transcript()
        search = screen.query_one("#search", SearchPane)
        hit = None
        shows_hit = loaded.target_id is not None and screen.has_class("-searching") and search.hits
        if shows_hit and search.highlighted is not None:
            hit = f"hit {search.highlighted + 1:,}/{search.total_label()}"
        return transcript_subtitle(
            loaded.data.items,
            show_inactive=screen.has_class("-show-inactive"),
            showing_hidden=transcript.showing_hidden_rows,
            hit=hit,
            new_below=transcript.new_below,
        )

    def title(self, row: dict[str, Any], note: str = "") -> Text:
        """The transcript's title (`transcript_loading.title_text`)."""
        host = self.host
        doing = doing_text(row, host.session_list.live.get(host.row_key(row.get("profile"), row.get("id"))))
        return title_text(row, note, doing, show_profile=host.scope.shows_profile)

    def new_below(self) -> None:
        """The "N new ↓ G" marker (or the folds) changed: the subtitle says so."""
        loaded = self.current
        if loaded is not None:
            self._transcript().show_subtitle(self.subtitle(loaded))

    def live_tip(self) -> None:
        """ "continued in …" on a session whose compression chain went on; `L` jumps there."""
        screen = self.screen
        lineage = screen.query_one("#lineage", LineageTree)
        tip = lineage.live_tip
        loaded = self.current
        title = screen.query_one("#transcript-title", Static)
        if loaded is not None:
            text = self.title(loaded.row, tip_note(lineage.lineage, tip))
            old = title.content
            if text != old:
                # Its height is its line count (no wrapping): the same, a live update repaints the
                # title alone instead of laying the whole screen out again.
                same_height = isinstance(old, Text) and len(old.split()) == len(text.split())
                title.update(text, layout=not same_height)
        subtitle = tip_subtitle(tip)
        if lineage.border_subtitle != subtitle:  # (Textual repaints the pane on every set)
            lineage.border_subtitle = subtitle
        self.host.key_checks.tip_changed((self.host.current_session, tip))

    async def live_read(self, message: LiveSession) -> None:
        """The open session's live read came: its new messages, row and lineage."""
        if message.failed or message.session_id != self.host.current_session:
            return  # the reader moved on meanwhile
        if message.row is None:
            await self.deleted(message.session_id)
            return
        loaded = self.current
        if loaded is not None:
            loaded.row = message.row
        transcript = self._transcript()
        data = transcript.data
        lineage = self.screen.query_one("#lineage", LineageTree)
        # One frame for all of it: a frame between the mount and the subtitle painted the new
        # message twice (the subtitle repaints the transcript with its children).
        with self.screen.app.batch_update():
            transcript.update_activity(message.row)
            if message.items and data is not None and data.session_id == message.session_id:
                await transcript.append_items(message.items)
            if message.lineage is not None:
                if loaded is not None:
                    loaded.lineage = message.lineage
                lineage.show_lineage(message.lineage)
                self.host.live.care()
            else:  # the open session's node keeps up with the list and the title (counts, title)
                lineage.update_session(message.row)
            self.live_tip()
            if loaded is not None:
                transcript.show_subtitle(self.subtitle(loaded))

    async def reloaded_gone(self, session_id: str) -> None:
        """The shown session went with this app's own delete (its reload found nothing)."""
        self._transcript().loading = False
        if self.host.view.wanted == session_id and self.host.current_session is None:  # nothing newer
            await self.deleted(session_id, elsewhere=False)

    async def deleted(self, session_id: str, elsewhere: bool = True) -> None:
        """The open session was deleted (by another program, unless ``elsewhere`` is false):
        say so where it was shown."""
        self.host.current_session = None
        self.last_loaded = None
        transcript = self._transcript()
        body, subtitle = deleted_words(session_id, elsewhere)
        await transcript.clear_transcript(body)
        transcript.show_subtitle(subtitle)
        self.screen.query_one("#transcript-title", Static).update(Text(""))
        self.screen.query_one("#lineage", LineageTree).show_lineage(None)
        self.live_tip()
