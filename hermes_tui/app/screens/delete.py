"""DeleteDialog: what a delete removes, what cascades and what is orphaned, then a batched delete
that first moves everything it removes to the trash (`u` undoes it)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Button, ProgressBar, Static

from hermes_tui.app.render import one_line
from hermes_tui.app.screens.dialog_base import ActionDialog, error_text, trashed_message
from hermes_tui.formatting import plural
from hermes_tui.state import BUSY_REASON

if TYPE_CHECKING:
    from hermes_tui.app.session_context import SessionContext
    from hermes_tui.state import SessionDB


def _label(row: dict[str, Any]) -> Text:
    text = Text(no_wrap=True, overflow="ellipsis")
    text.append(f"  {row.get('id')}  ")
    title = one_line(row.get("title")) or one_line(row.get("preview"), 60)
    text.append(title or "(untitled)", style="bold" if row.get("title") else "dim")
    text.append(f"  · {row.get('message_count') or 0} msgs")
    if row.get("ended_at") is None:
        text.append("  · open", style="bold")
    return text


#: Rows listed per section of the confirmation; the counts above each section are exact.
SHOWN_ROWS = 200


def delete_plan(db: SessionDB, ids: list[str]) -> dict[str, Any]:
    """`SessionDB.plan_delete` plus list rows for the first `SHOWN_ROWS` of each section (worker).

    Counting is done by the store in chunks; only the rows shown are read, so a selection of
    100k sessions costs a few chunked queries, not 100k lineage walks.
    """
    plan = db.plan_delete(ids)
    return {
        **plan,
        "rows": db.list_rows(plan["ids"][:SHOWN_ROWS]),
        "cascade_rows": db.list_rows(plan["cascade_ids"][:SHOWN_ROWS]),
    }


def deleted_message(result: dict[str, Any]) -> str:
    """The toast after a delete: ``Deleted 12 sessions — u to undo.``"""
    return trashed_message(result, "Deleted", "Delete", "skipped (already gone)")


def _more(text: Text, shown: int, total: int) -> None:
    if total > shown:
        text.append(f"  … and {total - shown:,} more\n", style="dim")


class DeleteDialog(ActionDialog[dict[str, Any] | None]):
    """Confirm, then `trash_sessions(ids + cascade, cascade_delegates=False)`.

    Works on one session or on the list's selection; everything removed is written to a trash
    entry first, then the delete runs in short batches (the store's `BATCH_MESSAGES`, or
    `batch_messages` when set) and Cancel/Esc stops it between two. There is no permanent delete
    here: the CLI's `--no-trash` is the one way to skip the trash.
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+d", "confirm", "Delete: confirm (once the plan is shown)", show=False, priority=True),
        Binding("escape", "close", "Delete: cancel, or stop after the current batch", show=False),
    ]

    BUTTON_ACTIONS: ClassVar[dict[str, str]] = {"confirm": "confirm", "cancel": "close"}

    batch_messages: int | None = None

    def __init__(
        self, context: SessionContext, db: SessionDB, ids: list[str], *, selection: bool = False
    ) -> None:
        super().__init__(context, db)
        self.ids = list(dict.fromkeys(ids))
        self.selection = selection
        self.plan: dict[str, Any] | None = None

    def compose(self) -> ComposeResult:
        noun = "session" if len(self.ids) == 1 else f"{len(self.ids):,} sessions"
        if self.selection:
            noun = f"the {noun} selected" if len(self.ids) > 1 else "the selected session"
        with Vertical(id="dialog", classes="delete"):
            yield Static(Text(f"Delete {noun}?", style="bold"), id="dialog-title")
            with VerticalScroll(id="dialog-body"):
                yield Static(Text("reading…"), id="delete-plan")
            with Vertical(id="dialog-keys"):
                yield ProgressBar(id="progress", show_eta=False)
                yield Static(Text(""), id="status", classes="-empty")
                with Horizontal(id="buttons"):
                    yield Button("Delete (ctrl+d)", id="confirm", variant="error", disabled=True)
                    yield Button("Cancel (esc)", id="cancel")

    def on_mount(self) -> None:
        self.query_one("#cancel", Button).focus()
        self.plan_worker()

    @work(thread=True, exclusive=True, exit_on_error=False, group="delete-plan", description="plan a delete")
    def plan_worker(self) -> None:
        try:
            plan = delete_plan(self.db, self.ids)
        except Exception as exc:
            self.app.call_from_thread(self.status, error_text(exc), "bold")
            return
        self.app.call_from_thread(self._show_plan, plan)

    def _show_plan(self, plan: dict[str, Any]) -> None:
        self.plan = plan
        text = Text()
        if not plan["ids"]:
            text.append("These sessions no longer exist.")
        elif len(plan["ids"]) > 1:
            text.append(f"Selected ({len(plan['ids']):,}):\n", style="bold")
        for row in plan["rows"]:
            text.append_text(_label(row))
            text.append("\n")
        _more(text, len(plan["rows"]), len(plan["ids"]))
        if plan["missing"]:
            gone = "no longer exists" if plan["missing"] == 1 else "no longer exist"
            text.append(f"  {plural(plan['missing'], 'selected session')} {gone}\n", style="dim")
        cascade = plan["cascade_ids"]
        if cascade:
            text.append(f"\nDelegate children deleted with it ({len(cascade):,}):\n", style="bold")
            for row in plan["cascade_rows"]:
                text.append_text(_label(row))
                text.append("\n")
            _more(text, len(plan["cascade_rows"]), len(cascade))
        else:
            text.append("\nNo delegate children cascade.\n")
        orphans = plan["orphans"]
        if orphans:
            text.append(f"\nChildren kept and orphaned ({len(orphans):,}):\n", style="bold")
            for row in orphans[:SHOWN_ROWS]:
                text.append_text(_label(row))
                text.append(f"  ({row.get('edge_kind') or 'child'})")
                text.append("\n")
            _more(text, min(len(orphans), SHOWN_ROWS), len(orphans))
        if plan.get("busy"):
            kept = plural(len(plan["busy"]), "session")
            text.append(f"\n{kept} will be kept: {BUSY_REASON}.\n", style="bold")
        text.append(
            f"\n{plural(plan['sessions'], 'session')} and {plural(plan['messages'], 'message')}"
            " will be deleted: "
            "moved to the trash, u undoes it, T lists the trash."
        )
        self.query_one("#delete-plan", Static).update(text)
        self.query_one("#confirm", Button).disabled = not plan["ids"]

    def action_confirm(self) -> None:
        """ctrl+d or the Delete button: delete exactly the sessions the plan shows."""
        if self.busy or self.plan is None or not self.plan["ids"] or self.has_class("-finished"):
            return
        self.start_write("deleting…", "confirm")
        self.add_class("-running")
        self.delete_worker(list(self.plan["ids"]) + list(self.plan["cascade_ids"]))

    @work(thread=True, exclusive=True, exit_on_error=False, group="delete-run", description="delete sessions")
    def delete_worker(self, ids: list[str]) -> None:
        result, error = self.watched_write(
            lambda: self.db.trash_sessions(
                ids,
                what="delete",
                cascade_delegates=False,
                progress=self.report_progress,
                cancel=self.cancel_event,
                batch_messages=self.batch_messages,
                exclude_active_write_guards=True,
            )
        )
        self.app.call_from_thread(self._finished, result, error)

    def _progress(self, done: int, total: int) -> None:
        self.query_one("#progress", ProgressBar).update(total=max(total, 1), progress=done)
        if not self.cancel_event.is_set():
            self.status(f"deleting… {done:,} of {plural(total, 'session')} (Esc stops after this batch)")

    def _finished(self, result: dict[str, Any] | None, error: str | None) -> None:
        self.busy = False
        self.remove_class("-running")
        self.add_class("-finished")
        if result is None:
            self.status(
                Text(
                    f"Delete stopped: {error}. Sessions deleted before the stop are in the trash (T "
                    "restores them)."
                )
            )
            self.query_one("#cancel", Button).label = "Close (esc)"
            self.changed(tuple(self.ids))
            return
        self.trashed(result, deleted_message(result), "Deleted")
        self.dismiss(result)
