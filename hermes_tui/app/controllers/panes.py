"""The panes: which the settings show, the list's width, the focus leaving a hidden pane, and
the footer keys that fit the width. `Panes` acts on the main screen's widgets (by their ids);
the decisions are the pure functions beside it."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, cast

from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Input

from hermes_tui.app.bindings import FitsFooter
from hermes_tui.app.settings import Settings

if TYPE_CHECKING:
    from hermes_tui.app.session_context import BrowserApp

#: On a wide terminal the transcript keeps this many columns and the list takes the rest
#: (at 200 columns titles were cut at 26 cells while the transcript had 96).
READING_COLS = 80
#: Keys of the list pane's footer shown only from this screen width on (they work at any width,
#: and help and the palette list them): at 80 columns the footer keeps ? Help and q Quit.
FOOTER_MIN_WIDTH = {
    "screen.active_now": 130,  # also the filter bar's checkbox
    "screen.toggle_archived": 110,  # also the filter bar's view menu
    "toggle_mark": 105,  # the list's own: space selects
    "screen.run_action('rename')": 90,
}
ZOOMED = ("-zoom-left", "-zoom-right", "-hide-transcript")


def footer_keys(width: int, view: str, filtered: bool) -> dict[str, bool]:
    """Which optional footer keys show at ``width``. In another view than Hermes' list, A (the
    way back) shows at any width, and F only when a filter of the bar narrows it too (F also
    leaves the view, but so does A)."""
    shown = {action: width >= least for action, least in FOOTER_MIN_WIDTH.items()}
    shown["screen.toggle_archived"] |= view != "default"
    shown["screen.clear_filters"] = filtered
    return shown


def auto_list_width(width: int) -> int | None:
    """The list's automatic width: what the transcript's `READING_COLS` leave, when that is over
    52 % of the screen (else the stylesheet's split: None)."""
    wide = width - READING_COLS
    return wide if wide > width * 0.52 else None


def pane_hidden(settings: Settings, ids: set[str | None], searching: bool) -> bool:
    """A widget inside the nodes ``ids`` sits in a pane the settings hide (the search pane,
    over the list, shows while searching)."""
    return bool(
        (not settings.show_transcript and "right" in ids)
        or (not settings.show_lineage and "lineage" in ids)
        or (not settings.show_list and not searching and ("sessions" in ids or "filters" in ids))
    )


class Panes:
    """The main screen's panes, shown and sized as the settings say (`settings.py`)."""

    def __init__(self, screen: Screen[Any]) -> None:
        self.screen = screen

    @property
    def app(self) -> BrowserApp:
        return cast("BrowserApp", self.screen.app)

    def fit_footer(self, width: int | None, view: str, filtered: bool) -> None:
        """Show the list pane's optional footer keys that fit `width` (`footer_keys`)."""
        width = self.screen.app.size.width if width is None else width
        sessions = self.screen.query_one("#sessions")
        fits = footer_keys(width, view, filtered)
        if isinstance(sessions, FitsFooter) and fits != sessions.fits:
            sessions.fits = fits  # its `check_action` hides the keys that do not fit
            self.screen.refresh_bindings()

    def fit(self, width: int | None = None) -> None:
        """On a wide terminal the list takes the width the transcript does not need
        (`auto_list_width`); zoomed, the stylesheet decides. A split the user chose (< >,
        remembered in the settings) stands instead (`apply`)."""
        left = self.screen.query_one("#left")
        if self.app.settings.list_width:
            return
        width = width if width is not None else self.screen.size.width
        if any(self.screen.has_class(c) for c in ZOOMED):
            left.styles.width = None
            return
        left.styles.width = auto_list_width(width)

    def apply(self) -> None:
        """Show the panes the settings say, the list at the width the user chose (its share in fr
        against the transcript's, so either side alone takes the whole width), else at the
        automatic width (`fit`)."""
        settings = self.app.settings
        screen = self.screen
        screen.set_class(not settings.show_list, "-hide-list")
        screen.set_class(not settings.show_lineage, "-hide-lineage")
        screen.set_class(not (settings.show_list or settings.show_lineage), "-hide-left")
        screen.set_class(not settings.show_transcript, "-hide-transcript")
        left, right = screen.query_one("#left"), screen.query_one("#right")
        if settings.list_width:
            left.styles.width = f"{settings.list_width}fr"
            right.styles.width = f"{100 - settings.list_width}fr"
        else:
            left.styles.width = right.styles.width = None
            self.fit()

    def hidden(self, widget: Widget) -> bool:
        """``widget`` sits in a pane the settings hide."""
        ids = {node.id for node in widget.ancestors_with_self}
        return pane_hidden(self.app.settings, ids, self.screen.has_class("-searching"))

    def toggle(self, pane: str) -> None:
        """Show or hide a pane (list, lineage, transcript); the list or the transcript always
        stays. The focus leaves a pane that is hidden."""
        settings = self.app.settings
        changed = settings.with_pane(pane, not getattr(settings, f"show_{pane}"))
        if changed == settings:
            self.screen.notify("The session list or the transcript always stays shown.", timeout=3)
            return
        self.app.remember(**{f"show_{pane}": getattr(changed, f"show_{pane}")})
        self.apply()
        focused = self.screen.focused
        if focused is None or self.hidden(focused):
            self.focus_shown()

    def focus_shown(self) -> None:
        """Focus the first pane that is shown: search box (while searching), list, transcript,
        lineage."""
        screen = self.screen
        candidates: list[Widget] = [
            screen.query_one("#sessions"),
            screen.query_one("#transcript"),
            screen.query_one("#lineage"),
        ]
        if screen.has_class("-searching"):
            candidates.insert(0, screen.query_one("#search-input", Input))
        target = next((w for w in candidates if not self.hidden(w)), None)
        if target is not None:
            screen.set_focus(target)

    def reveal(self, pane: str) -> None:
        """Going to a hidden pane (s, t, l) shows it first."""
        if not getattr(self.app.settings, f"show_{pane}"):
            self.toggle(pane)

    def resize_list(self, steps: int) -> None:
        """Make the list pane wider (> or ctrl+right) or narrower (< or ctrl+left), 4 points a
        step within 20–80 % of the width, from the width it has now; = (steps 0) goes back to
        the automatic width. Remembered."""
        settings = self.app.settings
        if steps and not settings.list_width:  # automatic so far: start from what is shown
            body = self.screen.query_one("#body").region.width
            shown = self.screen.query_one("#left").region.width
            settings = replace(settings, list_width=round(shown * 100 / body) if body and shown else 52)
        width = settings.resized(steps).list_width if steps else 0
        self.app.remember(list_width=width)
        self.apply()
        self.screen.notify(
            f"Session list: {f'{width}% of the width' if width else 'automatic width'}", timeout=1.5
        )
