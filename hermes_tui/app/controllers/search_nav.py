"""Search and the way back: opening the search pane, a hit chosen, stepping through hits, and
what Escape goes back to.

`SearchNav` does it for the main screen; where `/`, `n`/`N` and Escape lead is decided by the
pure functions `slash_target`, `step_target` and `back_step` from what the screen shows.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Protocol, cast

from textual.screen import Screen
from textual.widgets import Input

from hermes_tui.app.controllers.host import ScreenHost
from hermes_tui.app.controllers.transcript_loading import LoadedSession
from hermes_tui.app.render import query_terms, snippet_terms
from hermes_tui.app.widgets.lineage import LineageTree
from hermes_tui.app.widgets.search import SearchPane
from hermes_tui.app.widgets.transcript_pane import Transcript


def slash_target(state: str, transcript_open: bool, in_transcript: bool) -> str | None:
    """`/`: ``find`` in the open transcript when it has the focus, else ``search``; nothing
    (None) while no store is opening or open."""
    if state not in {"opening", "ready"}:
        return None
    return "find" if transcript_open and in_transcript else "search"


def step_target(finding_here: bool, searching: bool, hits: bool) -> str:
    """`n`/`N`: the find bar's matches (``find``) when it is open in the focused transcript,
    else the search's hits (``search``), else ``none`` (say how to search)."""
    if finding_here:
        return "find"
    return "search" if searching and hits else "none"


def back_step(in_filters: bool, reading_hit: bool, searching: bool, zoomed: bool) -> str:
    """Escape, one step back: close the filter bar (``filters``), from a hit's transcript back
    to the results (``results``), close the search (``search``), unzoom (``zoom``), else to the
    list (``list``)."""
    if in_filters:
        return "filters"
    if reading_hit and searching:
        return "results"
    if searching:
        return "search"
    return "zoom" if zoomed else "list"


class Reader(Protocol):
    """The shown session (`shown.ShownSession`)."""

    last_loaded: LoadedSession | None

    def subtitle(self, loaded: LoadedSession) -> str: ...


class Wanted(Protocol):
    """The session asked for (`session_view.SessionView`)."""

    wanted: str | None


class SearchHost(ScreenHost, Protocol):
    """What `SearchNav` reads and sets of the main screen (besides Textual's own methods)."""

    state: str
    current_session: str | None
    current_profile: str | None

    @property
    def shown(self) -> Reader: ...

    @property
    def view(self) -> Wanted: ...

    def load_session(self, session_id: str, *args: Any, **kwargs: Any) -> None: ...

    def cursor_to(self, session_id: str, profile: str | None) -> None: ...

    def fit_panes(self) -> None: ...


class SearchNav:
    """The search pane's comings and goings on the main screen."""

    def __init__(self, host: SearchHost) -> None:
        self.host = host
        self.screen = cast("Screen[Any]", host)
        #: The transcript shows a hit opened from the search (Escape goes back to the results).
        self.came_from_search = False

    def _in(self, widget: Any) -> bool:
        focused = self.screen.focused
        return focused is not None and widget in focused.ancestors_with_self

    def search(self) -> None:
        """Show the search pane with the caret in its box, even while the store still opens.

        Focus is set synchronously: `Widget.focus()` is deferred, so a key typed right after `/`
        (in the same read) reached the list, then the app, whose `q` quit. A query typed before
        the open finishes runs once it does."""
        screen = self.screen
        transcript = screen.query_one("#transcript", Transcript)
        target = slash_target(self.host.state, transcript.data is not None, self._in(transcript))
        if target == "find":
            screen.call_later(transcript.open_find)  # `/` in the transcript finds in it
        elif target == "search":
            screen.add_class("-searching")
            screen.set_focus(screen.query_one("#search-input", Input))

    def hit_chosen(self, message: SearchPane.HitChosen) -> None:
        """Open the hit's session at its message, its terms marked."""
        hit = message.hit
        terms = tuple(snippet_terms(hit.get("snippet")) or query_terms(message.query))
        self.came_from_search = True
        self.host.view.wanted = hit["session_id"]
        self.host.load_session(
            hit["session_id"], int(hit["id"]), terms, focus=True, profile=hit.get("profile")
        )

    def step(self, delta: int) -> None:
        """`n`/`N` (`step_target`)."""
        screen = self.screen
        transcript = screen.query_one("#transcript", Transcript)
        search = screen.query_one("#search", SearchPane)
        finding_here = transcript.finding and self._in(transcript)
        target = step_target(finding_here, screen.has_class("-searching"), bool(search.hits))
        if target == "find":
            screen.call_later(transcript.step_find, delta)  # the find's matches, not the search's
        elif target == "search":
            search.step(delta)
        else:
            screen.notify("No search hits: press / to search.", timeout=2)

    async def leave(self) -> None:
        """Close the search pane: the transcript drops its hit marker and "hit i/N" where the
        reader is, and the list cursor goes to the session it shows (a hit opened from the
        search is what the user was reading; the cursor stayed on the row left before)."""
        host, screen = self.host, self.screen
        screen.remove_class("-searching")
        self.came_from_search = False
        screen.refresh_bindings()
        if host.current_session is not None and host.view.wanted == host.current_session:
            host.cursor_to(host.current_session, host.current_profile)
        loaded = host.shown.last_loaded
        if loaded is None or loaded.target_id is None or loaded.session_id != host.current_session:
            return
        plain = replace(loaded, target_id=None, terms=())
        host.shown.last_loaded = plain
        transcript = screen.query_one("#transcript", Transcript)
        if transcript.data is loaded.data:
            await transcript.clear_hit()
        transcript.show_subtitle(host.shown.subtitle(plain))

    def back(self) -> None:
        """Escape: transcript → search results (state kept) → list; closes filters first."""
        screen = self.screen
        focused = screen.focused
        step = back_step(
            in_filters=screen.has_class("-filters")
            and bool(focused and focused.id and focused.id.startswith("filter")),
            reading_hit=isinstance(focused, Transcript | LineageTree) and self.came_from_search,
            searching=screen.has_class("-searching"),
            zoomed=screen.has_class("-zoom-left") or screen.has_class("-zoom-right"),
        )
        if step == "results":
            screen.query_one("#search", SearchPane).action_focus_results()
        elif step == "zoom":
            screen.remove_class("-zoom-left", "-zoom-right")
            self.host.fit_panes()
        else:
            if step == "filters":
                screen.remove_class("-filters")
            self.host.session_list.focus()
            if step == "search":
                screen.call_later(self.leave)
