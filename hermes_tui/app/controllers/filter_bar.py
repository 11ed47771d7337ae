"""The filter bar, the list's views and order keys, and the list settings remembered.

`FilterBar` turns what the bar's menus, `A`, `a`, `o`, `F` and the settings file say into the
main screen's `filter`, `order` and `active_only` (their meaning is `ordering`'s pure
functions; the next view, order and the words said are the pure functions below) and asks for
the list again; the menus show what the filter holds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, cast

from textual.screen import Screen
from textual.widgets import Checkbox, Input, Select

from hermes_tui.app.controllers.host import ScreenHost
from hermes_tui.app.controllers.ordering import (
    bar_filter,
    filter_active,
    filter_summary,
    remembered,
    restored_filter,
)
from hermes_tui.app.list_views import view_of, with_order, with_view
from hermes_tui.app.settings import ORDERS
from hermes_tui.safe_text import one_line
from hermes_tui.state import SessionFilter

if TYPE_CHECKING:
    from hermes_tui.app.session_context import BrowserApp

#: The filter bar's menus that a "clear filters" empties.
MENUS = ("#filter-source", "#filter-model", "#filter-date", "#filter-view", "#filter-profile")


def toggled_view(flt: SessionFilter) -> tuple[str, str]:
    """`A`: Hermes' archived view ↔ its list, and what to say."""
    if view_of(flt) == "archived":
        return "default", "Hermes' list (A: archived)"
    return "archived", "Archived sessions (A: back to the list)"


def next_order(order: str) -> tuple[str, str]:
    """`o`: the next order of `settings.ORDERS` (round), and what to say."""
    new = ORDERS[(ORDERS.index(order) + 1) % len(ORDERS)]
    return new, f"Ordered by {new.replace('_', ' ')}"


def active_note(active: bool) -> str:
    """What turning the "active now" filter on or off says."""
    if active:
        return "Active now: open sessions with activity in the last 10 minutes"
    return "Active-now filter off"


class Profiles(Protocol):
    """The stores' profile filter (`federation.Federation`)."""

    def set_profile_filter(self, profiles: tuple[str, ...] | None) -> None: ...

    def connect_search(self) -> None: ...


class FilterHost(ScreenHost, Protocol):
    """What `FilterBar` reads and sets of the main screen (besides Textual's own methods)."""

    state: str
    filter: SessionFilter
    order: str
    active_only: bool
    profile_filter: tuple[str, ...] | None

    @property
    def hermes(self) -> BrowserApp: ...

    @property
    def federation(self) -> Profiles: ...

    def reload_order(self, keep: Any = None) -> None: ...


class FilterBar:
    """The filter bar and the keys that change the list's filter, view and order."""

    def __init__(self, host: FilterHost) -> None:
        self.host = host
        self.screen = cast("Screen[Any]", host)
        #: The time menu's days (the filter holds the date it stood for when it was picked).
        self.days: int | None = None

    @property
    def active(self) -> bool:
        """Some filter narrows the list or another view is shown (`ordering.filter_active`)."""
        host = self.host
        return filter_active(host.filter, host.active_only, host.profile_filter)

    def summary(self) -> str:
        """The active filter in a few words (`ordering.filter_summary`), or ""."""
        host = self.host  # (one store has no profile filter: None)
        return filter_summary(host.filter, self.days, host.active_only, host.profile_filter)

    def set_options(self, selector: str, values: list[str]) -> None:
        """A menu's choices: store text, one line each."""
        self.screen.query_one(selector, Select).set_options([(one_line(v, 40), v) for v in values])

    def changed(self, control_id: str | None) -> None:
        """A menu or the text box changed: the filter they show now (or the profiles')."""
        host, query = self.host, self.screen.query_one
        if control_id == "filter-profile":
            profile = query("#filter-profile", Select).value
            host.federation.set_profile_filter((profile,) if isinstance(profile, str) else None)
            return
        days = query("#filter-date", Select).value
        self.days = days if isinstance(days, int) else None
        host.filter = bar_filter(
            host.filter,
            query("#filter-source", Select).value,
            query("#filter-model", Select).value,
            days,
            query("#filter-text", Input).value.strip(),
            query("#filter-view", Select).value,
            host.hermes.now(),
        )
        host.reload_order()

    def toggle_archived(self) -> None:
        """`A`: Hermes' archived view ↔ its list (the other filters stay). Remembered."""
        if self.host.state != "ready":
            return
        view, note = toggled_view(self.host.filter)
        self.show_view(view)
        self.screen.notify(note, timeout=2, markup=False)

    def show_view(self, view: str) -> None:
        """List `view` (`list_views.VIEWS`) and show it in the filter bar's view menu."""
        with self.screen.prevent(Select.Changed):
            select = self.screen.query_one("#filter-view", Select)
            if view == "default":
                select.clear()
            else:
                select.value = view
        self.host.filter = with_view(self.host.filter, view)
        self.host.reload_order()

    def clear(self) -> None:
        """Drop every filter (source, model, time, title/id text, the view, active now, the
        profiles) and show Hermes' list again."""
        host, screen = self.host, self.screen
        with screen.prevent(Select.Changed, Input.Changed):
            for selector in MENUS:
                screen.query_one(selector, Select).clear()
            screen.query_one("#filter-text", Input).value = ""
            screen.query_one("#filter-active", Checkbox).value = False
        if host.profile_filter is not None:  # (only ever set over several stores)
            host.profile_filter = None
            host.federation.connect_search()
        host.active_only = False
        host.filter = with_order(SessionFilter(), host.order)
        self.days = None
        screen.notify("Filters cleared", timeout=2)
        host.reload_order()

    def active_now(self) -> None:
        """`a`: the "active now" filter on or off (its checkbox follows)."""
        with self.screen.prevent(Checkbox.Changed):
            self.screen.query_one("#filter-active", Checkbox).value = not self.host.active_only
        self.set_active_only(not self.host.active_only)

    def set_active_only(self, value: bool) -> None:
        """Open sessions with activity in the last 10 minutes only, or every session."""
        if value == self.host.active_only:
            return
        self.host.active_only = value
        self.screen.notify(active_note(value), timeout=2)
        self.host.reload_order()

    def cycle_order(self) -> None:
        """`o`: the next order."""
        host = self.host
        host.order, note = next_order(host.order)
        host.filter = with_order(host.filter, host.order)
        self.screen.notify(note, timeout=2)
        host.reload_order()

    # ------------------------------------------------------------------ settings (#19)
    def restore(self) -> None:
        """Start with the remembered order and filters (settings.py); the source menu is set
        once the store's sources are known (`restore_source`)."""
        host, screen = self.host, self.screen
        settings = host.hermes.settings
        host.order = settings.order
        host.active_only = settings.active_now
        host.filter = restored_filter(
            host.filter, host.order, settings.source, settings.filter_text, settings.view
        )
        with screen.prevent(Input.Changed, Checkbox.Changed, Select.Changed):
            screen.query_one("#filter-text", Input).value = settings.filter_text
            screen.query_one("#filter-active", Checkbox).value = settings.active_now
            if settings.view != "default":
                screen.query_one("#filter-view", Select).value = settings.view

    def restore_source(self, sources: list[str]) -> None:
        """Show the remembered source in its menu. One this store lacks stays in the filter (the
        list's border names it and F clears it) rather than being dropped without a word."""
        flt = self.host.filter
        source = flt.sources[0] if len(flt.sources) == 1 else None
        if source in sources:
            with self.screen.prevent(Select.Changed):
                self.screen.query_one("#filter-source", Select).value = source

    def remember(self) -> None:
        """Every list reload passes the order and filters to the settings; they are written only
        when they differ from the file, i.e. after the user changed one."""
        host = self.host
        host.hermes.remember(**remembered(host.filter, host.order, host.active_only))
