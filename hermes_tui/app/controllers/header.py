"""The header (the info line at the top) and the session list's title.

The pure functions take what is shown and return the text; `Header` gathers what the screen
shows (`HeaderFacts`), asks the open stores for their line (`MainScreen.scope.header`: one
store's or several profiles', `header_text.py`) and puts it in `#info` (only when it changed).
"""

from __future__ import annotations

from typing import Any, Protocol, cast

from rich.text import Text
from textual.screen import Screen
from textual.widgets import Static

from hermes_tui.app.controllers.host import Menus, ScreenHost
from hermes_tui.app.header_text import HeaderFacts
from hermes_tui.app.list_views import VIEW_NOUNS, view_of
from hermes_tui.formatting import plural
from hermes_tui.state import SessionFilter


class HeaderScope(Protocol):
    """The open stores, as the header asks them (`OneStore`, `BrowserStores`)."""

    def header(self, facts: HeaderFacts) -> tuple[Text, str | None]: ...


def count_words(
    ready: bool, provisional: bool, total: int, noun: str, filtered: bool, store_total: int | None
) -> str:
    """The header's session count: "12 sessions", "3 of 34 sessions (filtered)", or
    "counting sessions…" while the head of the order is painted and the whole order comes."""
    if ready and provisional:
        return "counting sessions…"
    if not ready:
        return ""
    if filtered and store_total is not None:
        return f"{total:,} of {plural(store_total, noun)} (filtered)"
    return plural(total, noun)


def list_title(
    view_title: str,
    total: int,
    provisional: bool,
    default_view: bool,
    summary: str,
    store_total: int | None,
    selected: int,
) -> str:
    """``Sessions N``; filtered, ``N of M · filter: …`` (short enough for 80 columns); then
    ``· K selected``."""
    shown = f"≥ {total:,}" if provisional else f"{total:,}"
    title = f"{view_title} {shown}"
    if summary:
        # The default view's title gives way to the filter; another view is always named.
        title = shown if default_view else title
        if store_total is not None:
            title += f" of {store_total:,}"
        title += f" · filter: {summary}"
    if selected:
        title += f" · {selected:,} selected"
    return title


class HeaderHost(ScreenHost, Protocol):
    """What `Header` reads of the main screen (besides Textual's own methods)."""

    state: str
    caps: dict[str, Any]
    filter: SessionFilter
    store_total: int | None
    profile_counts: dict[str, int]

    @property
    def filter_bar(self) -> Menus: ...

    @property
    def scope(self) -> HeaderScope: ...


class Header:
    """The info line at the top of the main screen."""

    def __init__(self, host: HeaderHost) -> None:
        self.host = host
        self.screen = cast("Screen[Any]", host)
        self.text: Text | None = None  # as last set

    def show(self, text: Text) -> None:
        """Set the header, if it changed: a repaint of the header line widens the frame's update
        to the whole screen (Textual redraws the box around everything that changed), and a
        live change sets the same header again several times a second."""
        if text != self.text:
            self.text = text
            self.screen.query_one("#info", Static).update(text)

    def update(self) -> None:
        """The header from what the screen shows, fitted to its width."""
        host = self.host
        info = self.screen.query_one("#info", Static)
        width = max(20, info.content_region.width or self.screen.size.width - 2)
        ready = host.state == "ready"
        sessions = host.session_list
        filtered = bool(host.filter_bar.summary()) if ready else False
        noun = VIEW_NOUNS[view_of(host.filter)]
        count = count_words(ready, sessions.provisional, sessions.total, noun, filtered, host.store_total)
        path = host.hermes.display_path(host.hermes.db_path)
        facts = HeaderFacts(width, ready, count, host.caps, path, host.profile_counts)
        text, tooltip = host.scope.header(facts)
        if tooltip != info.tooltip:
            info.tooltip = tooltip
        self.show(text)
