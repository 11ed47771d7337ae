"""DeleteDialog: what a delete removes, what cascades and what is orphaned, then a batched delete."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Button, ProgressBar, Static

from hermes_tui.app.render import one_line
from hermes_tui.app.session_actions import ActionDialog, WaitAbandoned, error_text

if TYPE_CHECKING:
    from hermes_tui.app.screens.main import MainScreen
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


def delete_plan(db: SessionDB, ids: list[str]) -> dict[str, Any]:
    """Rows to delete, the delegate children that cascade and the children orphaned (worker)."""
    rows = db.list_rows(ids)
    cascade = [c for c in db.delegate_children(ids) if c not in ids]
    gone = set(ids) | set(cascade)
    orphans: list[dict[str, Any]] = []
    for sid in ids:
        for d in db.get_descendants(sid):
            if d.get("depth") == 1 and d["id"] not in gone and all(o["id"] != d["id"] for o in orphans):
                orphans.append(d)
    return {
        "rows": rows,
        "cascade": cascade,
        "cascade_rows": db.list_rows(cascade) if cascade else [],
        "orphans": orphans,
    }


class DeleteDialog(ActionDialog[dict[str, Any] | None]):
    """Confirm, then `delete_sessions_batched(ids + cascade, cascade_delegates=False)`."""

    def __init__(self, main: MainScreen, db: SessionDB, ids: list[str]) -> None:
        super().__init__(main, db)
        self.ids = list(dict.fromkeys(ids))
        self.plan: dict[str, Any] | None = None

    def compose(self) -> ComposeResult:
        noun = "session" if len(self.ids) == 1 else f"{len(self.ids)} sessions"
        with Vertical(id="dialog", classes="delete"):
            yield Static(Text(f"Delete {noun}?", style="bold"), id="dialog-title")
            with VerticalScroll(id="dialog-body"):
                yield Static(Text("reading…"), id="delete-plan")
            yield ProgressBar(id="progress", show_eta=False)
            yield Static(Text(""), id="status")
            with Horizontal(id="buttons"):
                yield Button("Delete", id="confirm", variant="error", disabled=True)
                yield Button("Cancel", id="cancel")

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
        if not plan["rows"]:
            text.append("These sessions no longer exist.")
        for row in plan["rows"]:
            text.append_text(_label(row))
            text.append("\n")
        if plan["cascade_rows"]:
            text.append(f"\nDelegate children deleted with it ({len(plan['cascade_rows'])}):\n", style="bold")
            for row in plan["cascade_rows"]:
                text.append_text(_label(row))
                text.append("\n")
        else:
            text.append("\nNo delegate children cascade.\n")
        if plan["orphans"]:
            text.append(f"\nChildren kept and orphaned ({len(plan['orphans'])}):\n", style="bold")
            for row in plan["orphans"]:
                text.append_text(_label(row))
                text.append(f"  ({row.get('edge_kind') or 'child'})")
                text.append("\n")
        total = len(plan["rows"]) + len(plan["cascade_rows"])
        msgs = sum(int(r.get("message_count") or 0) for r in plan["rows"] + plan["cascade_rows"])
        text.append(f"\n{total} session(s) and {msgs} message(s) will be deleted. This cannot be undone.")
        self.query_one("#delete-plan", Static).update(text)
        self.query_one("#confirm", Button).disabled = not plan["rows"]

    @on(Button.Pressed, "#confirm")
    def _confirm(self, event: Button.Pressed) -> None:
        event.stop()
        if self.busy or self.plan is None:
            return
        self.busy = True
        self.cancel_event.clear()
        self.add_class("-running")
        self.query_one("#confirm", Button).disabled = True
        self.status("deleting…")
        self.delete_worker(self.ids + self.plan["cascade"])

    @work(thread=True, exclusive=True, exit_on_error=False, group="delete-run", description="delete sessions")
    def delete_worker(self, ids: list[str]) -> None:
        def progress(done: int, total: int) -> None:
            self.app.call_from_thread(self._progress, done, total)

        try:
            with self.lock_watch():
                result = self.db.delete_sessions_batched(
                    ids, cascade_delegates=False, progress=progress, cancel=self.cancel_event
                )
        except WaitAbandoned:
            self.app.call_from_thread(self._finished, None, "gave up waiting for the write lock")
            return
        except Exception as exc:
            self.app.call_from_thread(self._finished, None, error_text(exc))
            return
        self.app.call_from_thread(self._finished, result, None)

    def _progress(self, done: int, total: int) -> None:
        self.query_one("#progress", ProgressBar).update(total=max(total, 1), progress=done)

    def _finished(self, result: dict[str, Any] | None, error: str | None) -> None:
        self.busy = False
        self.remove_class("-running")
        self.add_class("-finished")
        if result is None:
            self.status(Text(f"Delete stopped: {error}. Sessions deleted before the stop stay deleted."))
            self.query_one("#cancel", Button).label = "Close"
            self.changed(tuple(self.ids))
            return
        word = "cancelled" if result["cancelled"] else "done"
        msg = f"Delete {word}: {result['deleted']} of {result['requested']} session(s) deleted"
        if result["skipped"]:
            msg += f", {result['skipped']} skipped"
        self.changed(tuple(result["deleted_ids"]))
        self.main.notify(msg + ".", title="Deleted", markup=False)
        self.dismiss(result)

    @on(Button.Pressed, "#cancel")
    def _cancel_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.action_close()
