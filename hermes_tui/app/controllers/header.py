"""The header (the info line at the top) and the session list's title.

The pure functions take what is shown (the store's capabilities, the counts, the path, the
stores' states) and return the `Text`; `Header` gathers those from the main screen and puts the
line in `#info` (only when it changed).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, cast

from rich.text import Text
from textual.screen import Screen
from textual.widgets import Static

from hermes_tui.app.controllers.host import Menus, ScreenHost
from hermes_tui.app.list_views import VIEW_NOUNS, view_of
from hermes_tui.app.stores import BrowserStores
from hermes_tui.formatting import plural
from hermes_tui.safe_text import cell_width, inert, one_line
from hermes_tui.state import SessionFilter

if TYPE_CHECKING:
    pass

#: Over more profiles than this the header sums the sessions and counts failures by kind (300
#: names would not fit, and the badges after them were never seen).
HEADER_PROFILES = 8
#: Stores named in the header's tooltip (2,700 profile folders without a store).
TOOLTIP_BADGES = 20


def left_cut(text: str, width: int) -> str:
    """``text`` in at most ``width`` cells, cut from the left ("…/hermes/state.db"): the end of a
    path names the file."""
    if cell_width(text) <= width:
        return text
    out: list[str] = []
    used = 1
    for ch in reversed(text):
        used += cell_width(ch)
        if used > width:
            break
        out.append(ch)
    return "…" + "".join(reversed(out))


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


def store_header(width: int, caps: dict[str, Any], path: str, count: str) -> Text:
    """The header over one store, fitted to ``width``: read-only/read-write and the count always
    show; the path is cut from the left, then schema and FTS layout drop, to make room."""
    mode = "read-only" if caps.get("read_only") else "read-write"
    extras = []
    if caps.get("schema_version") is not None:
        extras.append(f"schema v{caps['schema_version']}")
    if caps.get("fts_layout"):
        extras.append(f"fts {one_line(caps['fts_layout'])}")
    path = one_line(path)
    sep = " · "
    fixed = (
        cell_width("hermes-tui")
        + len(sep)
        + cell_width(mode)
        + (len(sep) + cell_width(count) if count else 0)
    )
    room = width - fixed - len(sep)
    while extras and room - sum(len(sep) + cell_width(e) for e in extras) < min(24, cell_width(path)):
        extras.pop()  # the path is worth more than the schema details
    room -= sum(len(sep) + cell_width(e) for e in extras)
    text = Text(no_wrap=True, overflow="ellipsis")
    text.append("hermes-tui", style="bold")
    text.append(sep + left_cut(path, max(4, room)))
    for extra in extras:
        text.append(sep + extra)
    text.append(sep + mode, style="bold")
    if count:
        text.append(sep + count)
    return text


def stores_header(
    ready: bool,
    counts: dict[str, int],
    read_only: Callable[[str], bool],
    opening: int,
    failed: Sequence[Any],
) -> tuple[Text, str | None]:
    """The header over several profiles and its tooltip: the sessions per profile, then a badge
    per store that could not be opened (its status; the reason was a notification). ``failed``
    holds the stores' refs (`profile`, `status`, `badge`)."""
    text = Text(no_wrap=True, overflow="ellipsis")
    text.append("hermes-tui", style="bold")
    if ready and len(counts) > HEADER_PROFILES:
        total = sum(counts.values())  # 300 profiles: no room for each one's count
        text.append(f" · {len(counts):,} profiles · {total:,} sessions")
    elif ready:
        for profile, n in counts.items():
            mode = " (read-only)" if read_only(profile) else ""
            text.append(f" · {one_line(profile, 24)} {n:,}{mode}")
    if opening:
        text.append(f" · opening {opening:,} more…")
    if len(failed) > HEADER_PROFILES:  # one badge per kind of failure, with its count
        kinds: dict[str, int] = {}
        for ref in failed:
            kinds[str(ref.status)] = kinds.get(str(ref.status), 0) + 1
        for kind, n in kinds.items():
            text.append(" · ")
            text.append(f"⚠ {n:,} {one_line(kind)}", style="bold reverse")
    else:
        for ref in failed:
            text.append(" · ")
            text.append(f"⚠ {one_line(ref.profile, 24)}: {one_line(str(ref.status))}", style="bold reverse")
    shown = [inert(ref.badge, newlines=False) for ref in failed[:TOOLTIP_BADGES]]
    if len(failed) > TOOLTIP_BADGES:
        shown.append(f"… and {len(failed) - TOOLTIP_BADGES:,} more")
    return text, "\n".join(shown) or None


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

    stores: BrowserStores | None
    state: str
    caps: dict[str, Any]
    filter: SessionFilter
    store_total: int | None
    profile_counts: dict[str, int]

    @property
    def filter_bar(self) -> Menus: ...


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
        stores = host.stores
        if stores is not None:

            def read_only(profile: str) -> bool:
                ref = stores.ref(profile)
                return ref is not None and (ref.read_only or stores.fed.read_only)

            ready = host.state == "ready"
            text, tooltip = stores_header(
                ready, host.profile_counts, read_only, len(stores.opening), stores.failed
            )
            info.tooltip = tooltip
            self.show(text)
            return
        width = max(20, info.content_region.width or self.screen.size.width - 2)
        ready = host.state == "ready"
        sessions = host.session_list
        filtered = bool(host.filter_bar.summary()) if ready else False
        noun = VIEW_NOUNS[view_of(host.filter)]
        count = count_words(ready, sessions.provisional, sessions.total, noun, filtered, host.store_total)
        self.show(store_header(width, host.caps, host.hermes.display_path(host.hermes.db_path), count))
