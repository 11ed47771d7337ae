"""PruneDialog: filters, a debounced live `plan_prune` preview, then a batched, cancellable delete
that moves what it removes to the trash first (`u` undoes it)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Grid, Horizontal, Vertical, VerticalScroll
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widgets import Button, Input, Label, ProgressBar, Static
from textual.worker import get_current_worker

from hermes_tui.app.debounce import Debouncer
from hermes_tui.app.render import format_size, human_count, one_line
from hermes_tui.app.screens.dialog_base import ActionDialog, error_text, trashed_message, unique_path
from hermes_tui.app.widgets.marked import MarkedCheckbox
from hermes_tui.exporting import to_jsonl, write_export
from hermes_tui.formatting import plural

if TYPE_CHECKING:
    from hermes_tui.app.session_context import SessionContext
    from hermes_tui.state import SessionDB

PREVIEW_DEBOUNCE_S = 0.25
FIELDS: tuple[tuple[str, str, str], ...] = (
    ("days", "older than (days)", "90"),
    ("source", "source", ""),
    ("title", "title contains", ""),
    ("end_reason", "end reason", ""),
    ("model", "model contains", ""),
    ("min_messages", "min messages", ""),
    ("max_messages", "max messages", ""),
)


def _day(ts: float | None) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d") if ts else "—"


def excluded_summary(rows: Sequence[dict[str, Any]]) -> Text:
    """``Excluded (N): 3 still open · 1 pinned …`` — every reason with its count, commonest first."""
    text = Text()
    text.append(f"Excluded ({len(rows):,})", style="bold")
    counts = Counter(str(r.get("reason") or "excluded") for r in rows)
    text.append(": " + " · ".join(f"{n:,} {reason}" for reason, n in counts.most_common()))
    return text


class ExcludedList(ScrollView, can_focus=True):
    """Every row `plan_prune` held back, one line each with its reason (Line API, no cap)."""

    COMPONENT_CLASSES = {"excluded-list--reason"}

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002 - Textual's keyword
        super().__init__(id=id, classes="-empty")
        self.rows: list[dict[str, Any]] = []

    def set_rows(self, rows: Sequence[dict[str, Any]]) -> None:
        self.rows = list(rows)
        self.virtual_size = Size(self.scrollable_content_region.width, len(self.rows))
        self.scroll_to(y=0, animate=False, force=True)
        self.set_class(not self.rows, "-empty")
        self.refresh(layout=True)

    def on_resize(self, event: events.Resize) -> None:
        self.virtual_size = Size(self.scrollable_content_region.width, len(self.rows))

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return len(self.rows)

    def line_text(self, index: int) -> Text:
        """One excluded row: id, reason, title (agent text, never markup)."""
        row = self.rows[index]
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append(f"{row['id']}  ")
        text.append(
            str(row.get("reason") or ""), style=self.get_component_rich_style("excluded-list--reason")
        )
        title = one_line(row.get("title"), 60)
        if title:
            text.append(f"  {title}")
        return text

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        index = int(self.scroll_offset.y) + y
        if not 0 <= index < len(self.rows):
            return Strip.blank(width, self.rich_style)
        text = self.line_text(index)
        text.truncate(width, overflow="ellipsis")
        return Strip(list(text.render(self.app.console))).crop_extend(0, width, self.rich_style)


#: The key line under the form: Enter in a field previews, it never deletes.
HINT = "Enter preview now · ctrl+d delete the sessions previewed · Esc cancel"


def pruned_message(result: dict[str, Any]) -> str:
    """The toast after a prune: ``Pruned 12 sessions — u to undo.`` (sessions skipped were
    reopened since the preview)."""
    return trashed_message(result, "Pruned", "Prune", "kept (reopened since the preview)")


class PruneDialog(ActionDialog[dict[str, Any] | None]):
    """Deletes exactly `plan["ids"] + plan["cascade_ids"]` of the preview the user confirmed.

    ctrl+d confirms from any field (a priority binding: an Input's own ctrl+d deletes a
    character), and only while the preview on screen is the one of the form as it reads now.
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "preview", "Prune: preview now (Enter never deletes)", show=False),
        Binding("ctrl+d", "confirm", "Prune: delete the sessions previewed", show=False, priority=True),
        Binding("escape", "close", "Prune: cancel, or stop after the current batch", show=False),
    ]
    BUTTON_ACTIONS: ClassVar[dict[str, str]] = {"confirm": "confirm", "cancel": "close"}

    def __init__(self, context: SessionContext, db: SessionDB) -> None:
        super().__init__(context, db)
        self.plan: dict[str, Any] | None = None
        self.plan_values: dict[str, str] | None = None
        self._preview_due = Debouncer(self, PREVIEW_DEBOUNCE_S, self.refresh_preview)

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="prune"):
            yield Static(Text("Prune ended sessions", style="bold"), id="dialog-title")
            with Grid(id="prune-form"):
                for key, label, value in FIELDS:
                    yield Label(label)
                    yield Input(value, id=f"prune-{key}", compact=True, select_on_focus=False)
            yield MarkedCheckbox("export to JSONL (under ~) before deleting", id="prune-export", compact=True)
            with VerticalScroll(id="dialog-body"):
                yield Static(Text("computing the preview…"), id="prune-preview")
            yield Static(Text(""), id="prune-excluded-summary", classes="-empty")
            yield ExcludedList(id="prune-excluded")
            with Vertical(id="dialog-keys"):
                yield ProgressBar(id="progress", show_eta=False)
                yield Static(Text(""), id="status", classes="-empty")
                yield Static(Text(HINT), id="hint")
                with Horizontal(id="buttons"):
                    yield Button("Delete (ctrl+d)", id="confirm", variant="error", disabled=True)
                    yield Button("Cancel (esc)", id="cancel")

    def on_mount(self) -> None:
        self.query_one("#prune-days", Input).focus()
        self.refresh_preview()

    # ------------------------------------------------------------------ filters
    def form_values(self) -> dict[str, str]:
        """What the user typed, field by field: the identity of a preview (no clock in it)."""
        return {key: self.query_one(f"#prune-{key}", Input).value.strip() for key, _l, _v in FIELDS}

    def filters(self) -> tuple[dict[str, Any] | None, str | None]:
        """The `plan_prune` keyword arguments from the form, or an error to show.

        "older than N days" is `older_than_days`: `plan_prune` counts it back from the app's clock
        (`now`), by last activity where the store keeps it. Whether a preview is current is
        decided on `form_values()`.
        """
        values = self.form_values()
        kw: dict[str, Any] = {}
        try:
            if values["days"]:  # an age: last activity where the store keeps it (`plan_prune`)
                kw["older_than_days"] = float(values["days"])
            for key in ("min_messages", "max_messages"):
                if values[key]:
                    kw[key] = int(values[key])
        except ValueError:
            return None, "days and message counts must be numbers"
        if values["source"]:
            kw["source"] = values["source"]
        if values["title"]:
            kw["title_like"] = values["title"]
        if values["end_reason"]:
            kw["end_reason"] = values["end_reason"]
        if values["model"]:
            kw["model_like"] = values["model"]
        return kw, None

    @on(Input.Changed, "#prune-form Input")
    def _changed(self, event: Input.Changed) -> None:
        event.stop()
        if not self.busy:  # the preview on screen no longer matches the form
            self.query_one("#confirm", Button).disabled = True
        self._preview_due.restart()

    @on(Input.Submitted, "#prune-form Input")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_preview()

    def action_preview(self) -> None:
        """Enter (in a field or elsewhere in the dialog) previews at once; it never deletes."""
        self._preview_due.cancel()
        self.refresh_preview()

    def plan_is_current(self) -> bool:
        """A preview is on screen and it was computed for the form as it reads now."""
        return self.plan is not None and self.plan_values == self.form_values()

    def refresh_preview(self) -> None:
        if self.busy:
            return
        values = self.form_values()
        kw, error = self.filters()
        self.plan = None
        self.plan_values = None
        self.query_one("#confirm", Button).disabled = True
        if kw is None:
            self.query_one("#prune-preview", Static).update(Text(error or ""))
            self._show_excluded([])
            return
        self.preview_worker(values, kw)

    @work(thread=True, exclusive=True, exit_on_error=False, group="prune-plan", description="preview a prune")
    def preview_worker(self, values: dict[str, str], kw: dict[str, Any]) -> None:
        worker = get_current_worker()
        try:
            plan = self.db.plan_prune(now=self.context.now(), **kw)
        except Exception as exc:
            if not worker.is_cancelled:
                self.app.call_from_thread(self._show_error, error_text(exc))
            return
        if not worker.is_cancelled:
            self.app.call_from_thread(self._show_plan, values, plan)

    def _show_error(self, error: str) -> None:
        self.query_one("#prune-preview", Static).update(Text(error))
        self._show_excluded([])

    def _show_excluded(self, rows: Sequence[dict[str, Any]]) -> None:
        """The reason counts above a scrollable list of every excluded row."""
        summary = self.query_one("#prune-excluded-summary", Static)
        summary.update(excluded_summary(rows) if rows else Text(""))
        summary.set_class(not rows, "-empty")
        self.query_one("#prune-excluded", ExcludedList).set_rows(rows)

    def _show_plan(self, values: dict[str, str], plan: dict[str, Any]) -> None:
        if self.form_values() != values:
            return  # the form changed meanwhile; its preview is coming
        self.plan = plan
        self.plan_values = values
        text = Text()
        text.append(plural(plan["sessions"], "session"), style="bold")
        word = "message" if plan["messages"] == 1 else "messages"
        text.append(f", {human_count(plan['messages'])} {word}")
        text.append(f", about {format_size(plan['bytes_estimate'])}")
        if plan["sessions"]:
            text.append(f"\nstarted {_day(plan['oldest'])} … {_day(plan['newest'])}")
        for row in plan["candidates"][:8]:
            text.append(f"\n  {row['id']}  ")
            text.append(one_line(row.get("title"), 50) or "(untitled)")
        if len(plan["candidates"]) > 8:
            text.append(f"\n  … and {len(plan['candidates']) - 8} more")
        if plan["cascade"]:
            text.append(f"\nDelegate children that cascade: {len(plan['cascade'])}", style="bold")
            for row in plan["cascade"][:5]:
                text.append(f"\n  {row['id']}")
        if plan["cascade_open"]:
            text.append(f"\nOpen delegate children kept (orphaned): {len(plan['cascade_open'])}")
        if plan["ids"]:
            text.append("\nThey go to the trash: u undoes the prune, T lists the trash.", style="italic")
        self.query_one("#prune-preview", Static).update(text)
        self._show_excluded(plan["excluded"])
        self.query_one("#confirm", Button).disabled = not plan["ids"]

    # ------------------------------------------------------------------ run
    def action_confirm(self) -> None:
        """ctrl+d or Delete: run the plan on screen, only if it is the current form's."""
        if self.busy:
            return
        if not self.plan_is_current():
            self.status("no current preview yet: confirm once it shows (or fix the filters)", style="bold")
            return
        assert self.plan is not None
        if not self.plan["ids"]:
            self.status("nothing to prune with these filters")
            return
        self.start_write("deleting…", "confirm")
        self.add_class("-running")
        ids = list(self.plan["ids"]) + list(self.plan["cascade_ids"])
        export = self.query_one("#prune-export", MarkedCheckbox).value
        self.prune_worker(ids, export)

    @work(thread=True, exclusive=True, exit_on_error=False, group="prune-run", description="prune sessions")
    def prune_worker(self, ids: list[str], export: bool) -> None:
        exported: Path | None = None
        if export:
            try:
                stamp = datetime.fromtimestamp(self.context.now(), UTC).strftime("%Y%m%d-%H%M%S")
                target = unique_path(Path.home() / f"hermes-prune-{stamp}.jsonl")
                sessions = (s for s in (self.db.export_session(i) for i in ids) if s)
                exported = write_export(target, to_jsonl(sessions))
            except Exception as exc:
                self.app.call_from_thread(
                    self._finished, None, f"export failed, nothing deleted: {error_text(exc)}", None
                )
                return

        result, error = self.watched_write(
            lambda: self.db.trash_sessions(
                ids,
                what="prune",
                cascade_delegates=False,
                require_ended=True,
                progress=self.report_progress,
                cancel=self.cancel_event,
                exclude_active_write_guards=True,
            )
        )
        self.app.call_from_thread(self._finished, result, error, exported)

    def _progress(self, done: int, total: int) -> None:
        self.query_one("#progress", ProgressBar).update(total=max(total, 1), progress=done)

    def _finished(self, result: dict[str, Any] | None, error: str | None, exported: Path | None) -> None:
        self.busy = False
        self.remove_class("-running")
        where = f" Exported to {self.context.display_path(exported)}." if exported else ""
        if result is None:
            self.status(
                Text(f"Prune stopped: {error}. What was deleted before the stop is in the trash (T).{where}")
            )
            self.changed()
            self.refresh_preview()
            return
        self.trashed(result, pruned_message(result) + where, "Pruned")
        self.dismiss(result)
