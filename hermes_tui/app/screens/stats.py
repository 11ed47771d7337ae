"""StatsScreen: usage by source and model, costliest sessions and chains, activity, store health.

Every section is read and shown on its own: a query that fails (a row the store cannot
aggregate) leaves a marker in its section, and the others still show. Stored strings pass
through `hermes_tui.safe_text`; counts, costs and sizes through the tolerant render helpers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.table import Table
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.screen import Screen
from textual.widgets import Button, Footer, Static

from hermes_tui.app.render import format_size, human_count, one_line, plain_count, to_number, usd
from hermes_tui.app.screens.dialog_base import READ_ONLY_MESSAGE, error_text

if TYPE_CHECKING:
    from hermes_tui.app.session_context import SessionContext
    from hermes_tui.state import SessionDB

BLOCKS = " ▏▎▍▌▋▊▉█"


def bar(value: Any, peak: Any, width: int) -> str:
    """A horizontal bar of block characters, ``width`` cells for ``peak``."""
    v, p = to_number(value), to_number(peak)
    if v is None or p is None or p <= 0 or v <= 0:
        return ""
    eighths = max(1, min(width * 8, round(v / p * width * 8)))
    return "█" * (eighths // 8) + (BLOCKS[eighths % 8] if eighths % 8 else "")


class ActivityBars:
    """One line per day: the date, a bar as wide as the pane leaves (up to `BAR_CELLS`), the
    message and session counts. The bar used to be 50 cells whatever the width, so at 80
    columns every line wrapped its session count onto a line of its own."""

    #: The widest bar, and the cells the rest of a line takes: date, counts and their gaps.
    BAR_CELLS = 50
    REST_CELLS = 37

    def __init__(self, days: list[dict[str, Any]]) -> None:
        self.days = days

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = max(4, min(self.BAR_CELLS, options.max_width - self.REST_CELLS))
        peak = max((to_number(d.get("messages")) or 0 for d in self.days), default=0)
        for d in self.days:
            line = Text(no_wrap=True, overflow="ellipsis")
            line.append(f"{one_line(d.get('day'), 10):<10}  ")
            line.append(f"{bar(d.get('messages'), peak, width):<{width}}", style="bold")
            noun = "session" if to_number(d.get("sessions")) == 1 else "sessions"
            line.append(f" {plain_count(d.get('messages')):>5} msgs  ")
            line.append(f"{plain_count(d.get('sessions')):>3} {noun}")
            yield line


def _cost(v: Any) -> str:
    """A cost cell: the one cost formatter (`hermes_tui.formatting.format_cost`)."""
    return usd(v)


def _count(v: Any) -> str:
    """``1,234`` for an integer count, the tolerant `human_count` for anything else."""
    if isinstance(v, int) and not isinstance(v, bool):
        return f"{v:,}"
    return human_count(v)


def _size(n: Any) -> str:
    """A byte size: the one size formatter (Rich's decimal units, as the CLI shows them)."""
    return format_size(n)


#: The screen's sections and the query behind each (run in the worker, one failure each).
SECTIONS: dict[str, Callable[[SessionDB, float], Any]] = {
    "by_source": lambda db, now: db.sessions_by_source(),
    "by_model": lambda db, now: db.usage_by_model(),
    "sessions": lambda db, now: db.costliest_sessions(limit=8),
    "chains": lambda db, now: db.costliest_chains(limit=5),
    "activity": lambda db, now: db.activity_by_day(days=30, now=now),
    "health": lambda db, now: db.store_health(),
}


def load_stats(db: SessionDB, now: float) -> dict[str, Any]:
    """Every query of the screen (worker thread). A section whose query fails is None and its
    error is in ``errors``, so one unreadable row does not blank the whole screen."""
    data: dict[str, Any] = {}
    errors: dict[str, str] = {}
    for key, query in SECTIONS.items():
        try:
            data[key] = query(db, now)
        except Exception as exc:
            data[key] = None
            errors[key] = error_text(exc)
    data["errors"] = errors
    return data


def _unavailable(section: str, errors: dict[str, str]) -> Text:
    return Text(one_line(f"{section}: not available ({errors.get(section, 'no data')})"), style="italic")


def _rows(value: Any) -> list[dict[str, Any]]:
    return [r for r in value if isinstance(r, dict)] if isinstance(value, list) else []


def _table(*columns: str) -> Table:
    table = Table(*columns, box=None, pad_edge=False, header_style="bold", expand=False)
    for col in table.columns[1:]:
        col.justify = "right"
    return table


def _section(
    data: dict[str, Any],
    errors: dict[str, str],
    key: str,
    columns: tuple[str, ...],
    cells: Callable[[dict[str, Any]], tuple[RenderableType, ...]],
) -> Table | Text:
    """Section `key` as a table of one row per record, or its "not available" marker when its
    query failed: every table of the screen degrades the same way."""
    if data.get(key) is None:
        return _unavailable(key, errors)
    table = _table(*columns)
    for r in _rows(data.get(key)):
        table.add_row(*cells(r))
    return table


class StatsScreen(Screen[None]):
    """Read-only statistics; "Optimize storage" runs `optimize_fts_storage()` in a worker."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,S", "close", "Back"),
        Binding("o", "optimize", "Optimize storage"),
        Binding("u", "usage", "Usage over time"),
    ]

    def __init__(
        self, context: SessionContext, db: SessionDB, open_usage: Callable[[], None] | None = None
    ) -> None:
        super().__init__()
        self.context = context
        self.db = db
        #: Pushes the Usage screen (it opens sessions in the main screen, which this one never sees).
        self.open_usage = open_usage
        self.data: dict[str, Any] | None = None

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="stats-body"):
            yield Static(Text("loading statistics…"), id="stats-usage")
            yield Static(Text(""), id="stats-activity")
            yield Static(Text(""), id="stats-costly")
            yield Static(Text(""), id="stats-health")
            yield Static(Text(""), id="status")
        with Horizontal(id="stats-buttons"):
            yield Button("Optimize storage", id="optimize")
            yield Button("Back", id="close")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#stats-body").border_title = "Statistics"
        self.load_worker()

    @work(thread=True, exclusive=True, exit_on_error=False, group="stats", description="load statistics")
    def load_worker(self) -> None:
        try:
            data = load_stats(self.db, self.context.now())
        except Exception as exc:
            self.app.call_from_thread(self._status, error_text(exc))
            return
        self.app.call_from_thread(self._show, data)

    def _status(self, text: str) -> None:
        self.query_one("#status", Static).update(Text(one_line(text)))

    def _show(self, data: dict[str, Any]) -> None:
        self.data = data
        errors: dict[str, str] = data.get("errors") or {}
        usage = Table.grid(padding=(0, 4))
        usage.add_row(
            _section(
                data,
                errors,
                "by_source",
                ("source", "sessions", "messages", "tokens", "cost"),
                lambda r: (
                    Text(one_line(r.get("source")) or "—"),
                    _count(r.get("sessions")),
                    human_count(r.get("messages")),
                    human_count(r.get("tokens")),
                    _cost(r.get("cost")),
                ),
            ),
            _section(
                data,
                errors,
                "by_model",
                ("model", "sessions", "in", "out", "cost"),
                lambda r: (
                    Text(one_line(r.get("model"), 28)),
                    _count(r.get("session_count")),
                    human_count(r.get("total_input")),
                    human_count(r.get("total_output")),
                    _cost(r.get("total_cost")),
                ),
            ),
        )
        self.query_one("#stats-usage", Static).update(usage)

        text = Text()
        text.append("Activity, last 30 days (messages per day)", style="bold")
        if data.get("activity") is None:
            text.append("\n")
            text.append(_unavailable("activity", errors))
        act = _rows(data.get("activity"))
        if not act and data.get("activity") is not None:
            text.append("\nno activity in the last 30 days")
        self.query_one("#stats-activity", Static).update(Group(text, ActivityBars(act)))

        costly = Table.grid(padding=(0, 4))
        costly.add_row(
            _section(
                data,
                errors,
                "sessions",
                ("costliest sessions", "tokens", "cost"),
                lambda r: (
                    Text(one_line(r.get("title"), 40) or one_line(r.get("id"), 40)),
                    human_count(r.get("total_tokens")),
                    _cost(r.get("cost")),
                ),
            ),
            _section(
                data,
                errors,
                "chains",
                ("costliest chains", "sessions", "tokens", "cost"),
                lambda r: (
                    Text(one_line(r.get("title"), 34) or one_line(r.get("root_id"), 34)),
                    plain_count(r.get("sessions")),
                    human_count(r.get("tokens")),
                    _cost(r.get("cost")),
                ),
            ),
        )
        self.query_one("#stats-costly", Static).update(costly)
        health = data.get("health")
        if isinstance(health, dict):
            self._show_health(health)
        else:
            self.query_one("#stats-health", Static).update(_unavailable("health", errors))
        if errors:
            self._status(f"some statistics could not be read ({', '.join(errors)})")

    def _show_health(self, h: dict[str, Any]) -> None:
        def field(key: str, default: Any = None) -> str:
            return one_line(h.get(key, default), 40)

        text = Text()
        text.append("Store health\n", style="bold")
        text.append(f"schema v{field('schema_version')} (code v{field('code_schema_version')})")
        text.append(f" · FTS layout {field('fts_layout')} · tokenizer {field('cjk') or 'unicode61'}")
        text.append(f" · cjk index {field('cjk_index')}\n")
        index_rows = h.get("index_rows")
        rows = index_rows if isinstance(index_rows, dict) else {}
        text.append(
            f"messages {_count(h.get('messages', 0))} (non-tool {_count(h.get('messages_non_tool', 0))})"
        )
        for name, n in rows.items():
            text.append(f" · {one_line(name, 40)} {'?' if n is None else _count(n)}")
        text.append(f"\nfile {_size(h.get('file_size'))} · WAL {_size(h.get('wal_size'))}")
        writers = h.get("other_writers") or []
        count = len(writers) if isinstance(writers, (list, tuple)) else 1
        text.append(f" · other writers: {count}" if writers else " · no other writers")
        self.query_one("#stats-health", Static).update(text)

    # ------------------------------------------------------------------ optimize
    def action_optimize(self) -> None:
        if self.db.read_only:
            self.notify(
                READ_ONLY_MESSAGE.format(what="optimize storage"),
                title="Read-only",
                severity="warning",
                markup=False,
            )
            return
        self.query_one("#optimize", Button).disabled = True
        self._status("optimizing storage…")
        self.optimize_worker()

    @work(thread=True, exclusive=True, exit_on_error=False, group="optimize", description="optimize storage")
    def optimize_worker(self) -> None:
        try:
            result = self.db.optimize_fts_storage()
        except Exception as exc:
            result = {"ok": False, "reason": error_text(exc)}
        self.app.call_from_thread(self._optimized, result)

    def _optimized(self, result: dict[str, Any]) -> None:
        self.query_one("#optimize", Button).disabled = False
        ok = bool(result.get("ok"))
        reason = result.get("reason")
        msg = "Storage optimized" if ok else f"Not optimized: {one_line(reason)}"
        if ok and reason:
            msg += f" ({one_line(reason)})"
        self._status(msg)
        self.notify(msg, title="Optimize storage", severity="information" if ok else "warning", markup=False)
        if ok:
            self.load_worker()

    @on(Button.Pressed, "#optimize")
    def _optimize_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.action_optimize()

    @on(Button.Pressed, "#close")
    def _close_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.action_close()

    def action_usage(self) -> None:
        if self.open_usage is not None:
            self.open_usage()

    def action_close(self) -> None:
        self.app.pop_screen()
