"""StatsScreen: usage by source and model, costliest sessions and chains, activity, store health."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from rich.table import Table
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.screen import Screen
from textual.widgets import Button, Footer, Static

from hermes_tui.app.render import human_count, one_line
from hermes_tui.app.session_actions import READ_ONLY_MESSAGE, error_text

if TYPE_CHECKING:
    from hermes_tui.app.screens.main import MainScreen
    from hermes_tui.state import SessionDB

BLOCKS = " ▏▎▍▌▋▊▉█"


def bar(value: float, peak: float, width: int) -> str:
    """A horizontal bar of block characters, ``width`` cells for ``peak``."""
    if peak <= 0 or value <= 0:
        return ""
    eighths = max(1, round(value / peak * width * 8))
    return "█" * (eighths // 8) + (BLOCKS[eighths % 8] if eighths % 8 else "")


def _cost(v: Any) -> str:
    return f"${float(v or 0):.2f}"


def _size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return f"{n} B"


def load_stats(db: SessionDB, now: float) -> dict[str, Any]:
    """Every query of the screen (worker thread)."""
    return {
        "by_source": db.sessions_by_source(),
        "by_model": db.usage_by_model(),
        "sessions": db.costliest_sessions(limit=8),
        "chains": db.costliest_chains(limit=5),
        "activity": db.activity_by_day(days=30, now=now),
        "health": db.store_health(),
    }


def _table(*columns: str) -> Table:
    table = Table(*columns, box=None, pad_edge=False, header_style="bold", expand=False)
    for col in table.columns[1:]:
        col.justify = "right"
    return table


class StatsScreen(Screen[None]):
    """Read-only statistics; "Optimize storage" runs `optimize_fts_storage()` in a worker."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,S", "close", "Back"),
        Binding("o", "optimize", "Optimize storage"),
    ]

    def __init__(self, main: MainScreen, db: SessionDB) -> None:
        super().__init__()
        self.main = main
        self.db = db
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
            data = load_stats(self.db, self.main.hermes.now())
        except Exception as exc:
            self.app.call_from_thread(self._status, error_text(exc))
            return
        self.app.call_from_thread(self._show, data)

    def _status(self, text: str) -> None:
        self.query_one("#status", Static).update(Text(text))

    def _show(self, data: dict[str, Any]) -> None:
        self.data = data
        usage = Table.grid(padding=(0, 4))
        src = _table("source", "sessions", "messages", "tokens", "cost")
        for r in data["by_source"]:
            src.add_row(
                Text(one_line(r["source"]) or "—"),
                f"{r['sessions']:,}",
                human_count(r["messages"]),
                human_count(r["tokens"]),
                _cost(r["cost"]),
            )
        mod = _table("model", "sessions", "in", "out", "cost")
        for r in data["by_model"]:
            mod.add_row(
                Text(one_line(r["model"], 28)),
                f"{r['session_count']:,}",
                human_count(r["total_input"]),
                human_count(r["total_output"]),
                _cost(r["total_cost"]),
            )
        usage.add_row(src, mod)
        self.query_one("#stats-usage", Static).update(usage)

        act = data["activity"]
        text = Text()
        text.append("Activity, last 30 days (messages per day)\n", style="bold")
        peak = max((d["messages"] for d in act), default=0)
        if not act:
            text.append("no activity in the last 30 days")
        for d in act:
            text.append(f"{d['day']}  ")
            text.append(f"{bar(d['messages'], peak, 50):<50}", style="bold")
            text.append(f" {d['messages']:>5} msgs  {d['sessions']:>3} sessions\n")
        self.query_one("#stats-activity", Static).update(text)

        costly = Table.grid(padding=(0, 4))
        ses = _table("costliest sessions", "tokens", "cost")
        for r in data["sessions"]:
            ses.add_row(
                Text(one_line(r["title"], 40) or r["id"]), human_count(r["total_tokens"]), _cost(r["cost"])
            )
        chains = _table("costliest chains", "sessions", "tokens", "cost")
        for r in data["chains"]:
            chains.add_row(
                Text(one_line(r["title"], 34) or r["root_id"]),
                f"{r['sessions']}",
                human_count(r["tokens"]),
                _cost(r["cost"]),
            )
        costly.add_row(ses, chains)
        self.query_one("#stats-costly", Static).update(costly)
        self._show_health(data["health"])

    def _show_health(self, h: dict[str, Any]) -> None:
        text = Text()
        text.append("Store health\n", style="bold")
        text.append(f"schema v{h.get('schema_version')} (code v{h.get('code_schema_version')})")
        text.append(f" · FTS layout {h.get('fts_layout')} · tokenizer {h.get('cjk') or 'unicode61'}")
        text.append(f" · cjk index {h.get('cjk_index')}\n")
        rows = h.get("index_rows") or {}
        text.append(f"messages {h.get('messages', 0):,} (non-tool {h.get('messages_non_tool', 0):,})")
        for name, n in rows.items():
            text.append(f" · {name} {'?' if n is None else f'{n:,}'}")
        text.append(
            f"\nfile {_size(int(h.get('file_size') or 0))} · WAL {_size(int(h.get('wal_size') or 0))}"
        )
        writers = h.get("other_writers") or []
        text.append(f" · other writers: {len(writers)}" if writers else " · no other writers")
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
        msg = "Storage optimized" if ok else f"Not optimized: {reason}"
        if ok and reason:
            msg += f" ({reason})"
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

    def action_close(self) -> None:
        self.app.pop_screen()
