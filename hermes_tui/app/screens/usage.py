"""UsageScreen: cost or tokens per day, week or month as a stacked chart (textual-plotext), the
month to date and its pace, the costliest sessions of the range (Enter opens one), and the
accounting check's counts (`c` lists the sessions of a kind).

The screen routes: keys change a `UsageChoice`, a thread worker reads the store(s) through
`UsageSource` (`hermes_tui.app.usage_view`), and the answer is drawn from the view's plain
values (series, labels, lines), whose store text is already inert.

Live: the main screen's follower(s) already learn of every write to the open store(s); the app
passes what they report on (`usage_heard`), and the screen reads the same choice again, at most
once per `LIVE_GAP_S` (or four times the last read's duration) while writes keep coming, keeping
the range, grouping and the costliest sessions' cursor (on the same session, wherever it moved).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.color import Color
from textual.containers import Vertical
from textual.screen import ModalScreen, Screen
from textual.timer import Timer
from textual.widgets import DataTable, Footer, OptionList, Static
from textual.widgets.option_list import Option

from hermes_tui.app.screens.dialog_base import error_text
from hermes_tui.app.usage_view import (
    ALL,
    KIND_WORDS,
    ChartData,
    UsageChoice,
    UsageData,
    UsageSource,
    chart_data,
    check_rows,
    draw_bars,
    heading,
    legend_rows,
    load_usage,
    session_rows,
    summary_lines,
)
from hermes_tui.safe_text import one_line
from hermes_tui.state import local_tz

if TYPE_CHECKING:
    from textual.app import App

    from hermes_tui.app.session_context import BrowserApp


class UsageScope(Protocol):
    """The open stores, as the Usage screen asks them (`OneStore`, `BrowserStores`)."""

    def usage_source(self) -> UsageSource | None: ...


class UsageHost(Protocol):
    """What the Usage screen reads of the main screen (it never imports it: the app's import
    contract): its stores, its clock, and where a chosen session opens."""

    @property
    def scope(self) -> UsageScope: ...

    @property
    def hermes(self) -> BrowserApp: ...

    @property
    def app(self) -> App[Any]: ...

    def notify(self, message: str, *, severity: Any = "information") -> None: ...

    def open_session(self, session_id: str, *, profile: str | None = None) -> None: ...


def _plot_widget() -> Any:
    """textual-plotext's widget class, imported when a Usage screen is first built: plotext
    adds ~40 ms to every start of the browser otherwise."""
    from textual_plotext import PlotextPlot

    return PlotextPlot


#: The theme colours the stacked series take, in order of preference.
SERIES_COLOURS = ("primary", "accent", "success", "error", "warning", "secondary")
#: A series colour's least brightness difference from the surface, and least RGB distance from
#: the colours before it (themes repeat colours: textual-dark's accent is its warning).
MIN_CONTRAST = 0.2
MIN_DISTANCE = 60.0
#: Series drawn (`usage_view.MAX_SERIES` and "other").
SERIES_NEEDED = 6
#: Ids listed per kind by the check list (the CLI's `--list` pages through more).
CHECK_LIST_LIMIT = 200
#: While the stores shown keep being written, at most one reload this often (each reads every
#: store's usage again: 0.1–0.7 s of a core at 1M messages).
LIVE_GAP_S = 2.0
#: A reload waits at least this long after the write that asked for it: a writer records an API
#: call's tokens and its messages in separate commits, close together.
LIVE_SETTLE_S = 0.3
#: ... and starts at least this many times the last load's duration after that load started: a
#: whole history at 1M messages takes about a second to read, so reloads every `LIVE_GAP_S`
#: would keep half a core busy for as long as an agent writes; this keeps it under a quarter.
LIVE_LOAD_FACTOR = 4.0


def live_wait(since_start: float, load_s: float) -> float:
    """Seconds until the next live reload may start, `since_start` seconds after the last load
    started, which took `load_s` seconds (`LIVE_GAP_S`, `LIVE_SETTLE_S`, `LIVE_LOAD_FACTOR`)."""
    return max(LIVE_SETTLE_S, max(LIVE_GAP_S, LIVE_LOAD_FACTOR * load_s) - since_start)


def colour_distance(a: Color, b: Color) -> float:
    return float(((a.r - b.r) ** 2 + (a.g - b.g) ** 2 + (a.b - b.b) ** 2) ** 0.5)


def series_colours(variables: Mapping[str, str]) -> list[tuple[int, int, int]]:
    """`SERIES_NEEDED` distinct colours from a theme's variables (`App.theme_variables`), each
    moved away from the surface's brightness until it stands out on it: the chart reads in
    every theme, dark or light."""
    surface = Color.parse(variables.get("surface") or variables.get("background") or "#000000")
    dark = surface.brightness < 0.5
    found: list[Color] = []

    def add(colour: Color) -> None:
        for _ in range(10):
            if abs(colour.brightness - surface.brightness) >= MIN_CONTRAST:
                break
            colour = colour.lighten(0.08) if dark else colour.darken(0.08)
        if abs(colour.brightness - surface.brightness) >= MIN_CONTRAST and all(
            colour_distance(colour, c) >= MIN_DISTANCE for c in found
        ):
            found.append(colour)

    for name in SERIES_COLOURS:
        if variables.get(name):
            add(Color.parse(variables[name]))
    for step in (0.25, -0.25, 0.45, -0.45):  # too few: shades of the ones found
        for base in list(found):
            if len(found) >= SERIES_NEEDED:
                break
            add(base.lighten(step) if step > 0 else base.darken(-step))
    fallback = Color.parse("#ffffff" if dark else "#000000")
    while len(found) < SERIES_NEEDED:
        found.append(fallback)
    return [c.rgb for c in found[:SERIES_NEEDED]]


def usage_source(main: UsageHost) -> UsageSource | None:
    """The stores the main screen browses: every open profile's, or its one store."""
    return main.scope.usage_source()


def usage_heard(app: App[Any], update: Any) -> None:
    """The main screen's live follower reported `update` (a `LiveUpdate`, of one store or one
    profile's): every Usage screen on the stack reloads when it saw a write (`changes`), not
    when only statuses aged."""
    if getattr(update, "changes", None):
        for screen in app.screen_stack:
            if isinstance(screen, UsageScreen):
                screen.store_written()


def open_usage(main: UsageHost) -> None:
    """Push the Usage screen over whatever is shown (the main screen or statistics)."""
    source = usage_source(main)
    if source is None:
        main.notify("No store is open.", severity="warning")
        return
    main.app.push_screen(UsageScreen(main, source))


class UsageScreen(Screen[None]):
    """Read-only usage over time; every store call runs in a thread worker."""

    DEFAULT_CSS = """
    UsageScreen #usage-body {
        height: 1fr;
        border: round $accent;
        border-title-color: $accent;
        background: $surface;
        padding: 0 1;
    }
    UsageScreen #usage-chart {
        height: 2fr;
        min-height: 6;
    }
    UsageScreen #usage-legend, UsageScreen #usage-summary {
        height: auto;
    }
    UsageScreen #usage-sessions {
        height: 1fr;
        min-height: 4;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,U", "close", "Back"),
        Binding("r", "next_range", "Range"),
        Binding("b", "next_period", "Per"),
        Binding("g", "next_group", "Stack"),
        Binding("t", "next_metric", "Cost/tokens"),
        Binding("c", "check", "Check"),
    ]

    def __init__(self, main: UsageHost, source: UsageSource, choice: UsageChoice | None = None) -> None:
        super().__init__()
        self.main = main
        self.source = source
        self.choice = choice or UsageChoice()
        self.data: UsageData | None = None
        self.tz = local_tz()
        #: (profile, id) of the costliest sessions' rows, in order.
        self.session_keys: list[tuple[str | None, str]] = []
        #: Live: a write is not read yet; the timer that will read it; the load in flight (its
        #: number: a later one supersedes it) and when the last one started (monotonic).
        self._written = False
        self._live_timer: Timer | None = None
        self._loads = 0
        self._loading: int | None = None
        self._loaded_at = float("-inf")
        self._load_s = 0.0
        #: Reloads started by writes (tests and the bench count them).
        self.live_reloads = 0

    def compose(self) -> ComposeResult:
        with Vertical(id="usage-body"):
            yield Static(Text("loading usage…"), id="usage-head")
            yield _plot_widget()(id="usage-chart")
            yield Static(Text(""), id="usage-legend")
            yield Static(Text(""), id="usage-summary")
            yield DataTable(id="usage-sessions", cursor_type="row", zebra_stripes=True)
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#usage-body").border_title = "Usage"
        table = self.query_one("#usage-sessions", DataTable)
        profile = ["profile"] if self.source.federated else []
        table.add_columns("costliest sessions", *profile, "model", "tokens", "cost")
        table.focus()
        self._load(self.choice)

    # ------------------------------------------------------------------ reading
    def _load(self, choice: UsageChoice, live: bool = False) -> None:
        self._loads += 1
        self._loading = self._loads
        self._loaded_at = time.monotonic()
        self.load_worker(choice, self._loads, live)

    @work(thread=True, exclusive=True, exit_on_error=False, group="usage", description="load usage")
    def load_worker(self, choice: UsageChoice, load: int = 0, live: bool = False) -> None:
        try:
            data = load_usage(self.source, choice, self.tz, self.main.hermes.now())
        except Exception as exc:
            self.app.call_from_thread(self._failed, error_text(exc), load)
            return
        self.app.call_from_thread(self._show, data, load, live)

    def _done(self, load: int) -> None:
        """A load ended: a write meanwhile is read next (`store_written`)."""
        if load == self._loading:
            self._loading = None
            self._load_s = time.monotonic() - self._loaded_at
            if self._written:
                self._arm()

    def _failed(self, text: str, load: int = 0) -> None:
        self._done(load)
        self.query_one("#usage-head", Static).update(Text(one_line(f"usage not available: {text}")))

    def store_written(self) -> None:
        """A store shown was written: read the same choice again, debounced (`LIVE_GAP_S`)."""
        self._written = True
        if self._live_timer is None and self._loading is None:
            self._arm()

    def _arm(self) -> None:
        wait = live_wait(time.monotonic() - self._loaded_at, self._load_s)
        self._live_timer = self.set_timer(wait, self._reload_live, name="usage-live")

    def _reload_live(self) -> None:
        self._live_timer = None
        if not self._written:
            return
        if self._loading is not None:  # a key's load is reading it already; `_done` re-arms
            return
        self._written = False
        self.live_reloads += 1
        self._load(self.choice, live=True)

    def _show(self, data: UsageData, load: int = 0, live: bool = False) -> None:
        self._done(load)
        if data.choice != self.choice:  # a later key asked for another choice: its answer follows
            return
        if live and data == self.data:  # a write that changed nothing shown: nothing to redraw
            return
        with self.app.batch_update():
            self._show_data(data)

    def _show_data(self, data: UsageData) -> None:
        self.data = data
        profiles = list(self.source.profiles or ()) if self.source.federated else []
        head = heading(data, data.report.tz, profiles)
        if data.report.errors:
            head += f" · {len(data.report.errors)} profile(s) failed"
        self.query_one("#usage-head", Static).update(Text(head, style="bold"))
        self._draw(chart_data(data.report, data.choice.metric, self.size.width))
        self.query_one("#usage-summary", Static).update(Text("\n".join(summary_lines(data))))
        self._fill_sessions(data)

    def _share_colour(self) -> tuple[int, int, int]:
        return Color.parse(self.app.theme_variables.get("foreground") or "#ffffff").rgb

    def _colours(self) -> list[tuple[int, int, int]]:
        return series_colours(self.app.theme_variables)

    def _draw(self, chart: ChartData) -> None:
        plot = self.query_one("#usage-chart", _plot_widget())
        plt: Any = plot.plt  # textual-plotext's stubs are narrower than plotext's own calls
        plt.clear_data()
        plt.clear_figure()
        if chart.empty:
            plt.title("no usage recorded in this range")
        colours = self._colours()
        draw_bars(plt, chart, colours)
        xs, shares = chart.share_points()
        show_share = self.choice.metric == "tokens" and bool(xs)
        if show_share:
            # the cache-read share of each period's prompt tokens, on the right axis
            plt.plot(xs, shares, yside="right", marker="dot", color=self._share_colour())
            plt.ylim(0, 100, yside="right")
        plot.refresh()
        # the legend under the chart, not plotext's (drawn over the bars of a short chart)
        legend = Text(no_wrap=True, overflow="ellipsis")
        names = [name for name, _v in chart.series if name != ALL]
        for row in legend_rows(names, max(20, self.size.width - 6)):
            if legend:
                legend.append("\n")
            for n in row:
                r, g, b = colours[n % len(colours)]
                legend.append("██ ", style=f"rgb({r},{g},{b})")
                legend.append(names[n])  # inert already (usage_view.group_name)
                legend.append("   ")
        if show_share:
            legend.append("\n• cache read, % of prompt tokens (right axis)")
        self.query_one("#usage-legend", Static).update(legend)

    def _fill_sessions(self, data: UsageData) -> None:
        """The costliest sessions; the cursor stays on the session it was on (a reload after a
        write may move it up or down the list), else on the same row."""
        table = self.query_one("#usage-sessions", DataTable)
        row = table.cursor_row
        was = self.session_keys[row] if 0 <= row < len(self.session_keys) else None
        keys = [(s.profile, s.session_id) for s in data.sessions]
        table.clear()
        self.session_keys = keys
        for n, cells in enumerate(session_rows(data.sessions, self.source.federated, self.size.width)):
            table.add_row(*(Text(c) for c in cells), key=str(n))
        if keys:
            row = keys.index(was) if was in keys else min(row, len(keys) - 1)
            table.move_cursor(row=max(0, row), scroll=False)

    # ------------------------------------------------------------------ keys
    def _choose(self, choice: UsageChoice) -> None:
        self.choice = choice
        self.query_one("#usage-head", Static).update(Text("loading usage…"))
        self._load(choice)

    def action_next_range(self) -> None:
        self._choose(self.choice.next_range())

    def action_next_period(self) -> None:
        self._choose(self.choice.next_period())

    def action_next_group(self) -> None:
        self._choose(self.choice.next_group(self.source.federated))

    def action_next_metric(self) -> None:
        self._choose(self.choice.next_metric())

    def action_check(self) -> None:
        if self.data is None:
            return
        self.app.push_screen(UsageCheckScreen(self.source, self.data, self.tz), self._open_picked)

    @on(DataTable.RowSelected, "#usage-sessions")
    def _row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        index = int(str(event.row_key.value))
        if 0 <= index < len(self.session_keys):
            self.open_in_main(*self.session_keys[index])

    def _open_picked(self, picked: tuple[str | None, str] | None) -> None:
        if picked is not None:
            self.open_in_main(*picked)

    def open_in_main(self, profile: str | None, session_id: str) -> None:
        """Back to the main screen (over statistics too), showing the session."""
        main = self.main
        while self.app.screen is not main and len(self.app.screen_stack) > 1:
            self.app.pop_screen()
        main.open_session(session_id, profile=profile)

    def action_close(self) -> None:
        self.app.pop_screen()


class UsageCheckScreen(ModalScreen[tuple[str | None, str] | None]):
    """The accounting check: each kind with its count and what it means; Enter on a kind lists
    its sessions, Enter on a session opens it in the main screen."""

    DEFAULT_CSS = """
    UsageCheckScreen {
        align: center middle;
        background: $background 60%;
    }
    UsageCheckScreen #check-box {
        width: 90%;
        max-width: 100;
        height: 90%;
        border: round $accent;
        border-title-color: $accent;
        background: $surface;
        padding: 0 1;
    }
    UsageCheckScreen OptionList {
        height: 1fr;
    }
    UsageCheckScreen #check-status {
        height: auto;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q", "back", "Back")]

    def __init__(self, source: UsageSource, data: UsageData, tz: Any) -> None:
        super().__init__()
        self.source = source
        self.data = data
        self.tz = tz
        self.kind: str | None = None
        self.found: list[tuple[str | None, str]] = []

    def compose(self) -> ComposeResult:
        with Vertical(id="check-box"):
            yield OptionList(id="check-list")
            yield Static(Text(""), id="check-status")

    def on_mount(self) -> None:
        self.query_one("#check-box").border_title = f"Accounting check, {self.data.choice.range_label}"
        self.show_kinds()

    def show_kinds(self) -> None:
        self.kind = None
        options = self.query_one("#check-list", OptionList)
        options.clear_options()
        for kind, count, explanation in check_rows(self.data.check):
            prompt = Text()
            prompt.append(f"{count:>6,}  {KIND_WORDS[kind]}\n", style="bold")
            prompt.append(explanation)
            options.add_option(Option(prompt, id=kind, disabled=count == 0))
        models = self.data.check.models
        status = "Enter lists the sessions of a kind."
        if models:
            named = ", ".join(one_line(m.model, 32) for m in models[:4])
            status += f" Unpriced models: {named}" + (" …" if len(models) > 4 else "")
        self.query_one("#check-status", Static).update(Text(status))
        enabled = [i for i in range(options.option_count) if not options.get_option_at_index(i).disabled]
        options.highlighted = enabled[0] if enabled else None
        options.focus()

    @on(OptionList.OptionSelected, "#check-list")
    def _selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if self.kind is None:
            self.kind = event.option.id
            self.query_one("#check-status", Static).update(Text("loading…"))
            self.list_worker(str(self.kind))
            return
        index = event.option_index
        if 0 <= index < len(self.found):
            self.dismiss(self.found[index])

    @work(thread=True, exclusive=True, exit_on_error=False, group="usage-check", description="check list")
    def list_worker(self, kind: str) -> None:
        try:
            found = self.source.check_sessions(
                kind, self.data.check, self.data.since, self.tz, CHECK_LIST_LIMIT
            )
        except Exception as exc:
            self.app.call_from_thread(self._status, f"not available: {error_text(exc)}")
            return
        self.app.call_from_thread(self._show_ids, kind, found)

    def _status(self, text: str) -> None:
        self.query_one("#check-status", Static).update(Text(one_line(text)))

    def _show_ids(self, kind: str, found: list[tuple[str | None, str]]) -> None:
        if kind != self.kind:
            return
        self.found = found
        options = self.query_one("#check-list", OptionList)
        options.clear_options()
        for profile, sid in found:
            where = f"{one_line(profile, 24)}: " if profile is not None else ""
            options.add_option(Option(Text(f"{where}{one_line(sid)}")))
        options.highlighted = 0 if found else None
        total = self.data.check.counts.get(kind, 0)
        more = f" (the first {len(found):,})" if len(found) < total else ""
        self._status(f"{KIND_WORDS[kind]}: {total:,} sessions{more}. Enter opens one; Esc back to the kinds.")
        options.focus()

    def action_back(self) -> None:
        if self.kind is not None:
            self.show_kinds()
        else:
            self.dismiss(None)
