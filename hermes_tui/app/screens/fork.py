"""The fork dialog (`B` on a transcript message): a new session continuing this one from the
message under the cursor, shaped as Hermes' `/branch` makes one (`SessionDB.fork_session`).

The title is prefilled with the lineage's next title and checked as you type, as a rename's
is (`SessionDB.fork_plan`, no write); the dialog says how many messages will be copied. It
returns the new session's id, or None when nothing was written.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Input, Static
from textual.worker import get_current_worker

from hermes_tui.app.screens.dialog_base import GAVE_UP_WAITING, ActionDialog, error_text, plural
from hermes_tui.safe_text import one_line

if TYPE_CHECKING:
    from hermes_tui.app.session_context import SessionContext
    from hermes_tui.state import SessionDB


class ForkDialog(ActionDialog[str | None]):
    """Returns the fork's id after a successful write, else None."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "fork", "Fork: create the session", show=False),
        Binding("escape", "close", "Fork: cancel", show=False),
    ]
    BUTTON_ACTIONS: ClassVar[dict[str, str]] = {"ok": "fork", "cancel": "close"}

    def __init__(self, context: SessionContext, db: SessionDB, session_id: str, message_id: int) -> None:
        super().__init__(context, db)
        self.session_id = session_id
        self.message_id = message_id
        #: The automatic title (`fork_plan` without one): an untouched field forks with it.
        self.automatic: str | None = None
        self.last_plan: dict[str, Any] | None = None
        self._loaded = False

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="fork"):
            yield Static(
                Text(f"Fork {one_line(self.session_id, 60)} at message #{self.message_id}", style="bold"),
                id="dialog-title",
            )
            yield Input(placeholder="title of the new session", id="fork-input", select_on_focus=False)
            yield Static(Text("reading the session…"), id="fork-check")
            with Vertical(id="dialog-keys"):
                yield Static(Text(""), id="status", classes="-empty")
                with Horizontal(id="buttons"):
                    yield Button("Fork (enter)", id="ok", variant="primary", disabled=True)
                    yield Button("Cancel (esc)", id="cancel")

    def on_mount(self) -> None:
        self.query_one("#fork-input", Input).disabled = True
        self.plan_worker(None)

    # ------------------------------------------------------------------ the live check
    @on(Input.Changed, "#fork-input")
    def _changed(self, event: Input.Changed) -> None:
        event.stop()
        if self._loaded:
            self.plan_worker(event.value)

    @work(thread=True, exclusive=True, exit_on_error=False, group="fork-plan", description="check a fork")
    def plan_worker(self, text: str | None) -> None:
        worker = get_current_worker()
        try:
            plan = self.db.fork_plan(self.session_id, self.message_id, self._title(text))
        except Exception as exc:  # the session or the message is gone, or cannot be forked at
            plan = {"ok": False, "messages": None, "title": None, "error": error_text(exc), "fatal": True}
        if not worker.is_cancelled:
            self.app.call_from_thread(self._show_plan, text, plan)

    def _title(self, text: str | None) -> str | None:
        """The title to ask for: None (the automatic one) for an empty or untouched field."""
        if text is None or not text.strip() or text == self.automatic:
            return None
        return text

    def _show_plan(self, text: str | None, plan: dict[str, Any]) -> None:
        field = self.query_one("#fork-input", Input)
        if text is None:  # the first check: the automatic title fills the field
            self.automatic = plan.get("title")
            self._loaded = not plan.get("fatal")
            field.disabled = not self._loaded
            field.value = self.automatic or ""
            field.cursor_position = len(field.value)
            if self._loaded:
                field.focus()
        elif field.value != text:
            return  # a newer keystroke's check is on its way
        self.last_plan = plan
        shown = Text()
        if plan.get("ok"):
            shown.append(f"✓ {plural(plan['messages'], 'message')} will be copied, titled ")
            shown.append(one_line(plan.get("title")) or "(none)", style="bold")
            shown.append("\nthe session itself is left as it is")
        else:
            shown.append("✗ ", style="bold")
            shown.append(one_line(plan.get("error")) or "cannot fork here")
        self.set_class(not plan.get("ok"), "-invalid")
        self.query_one("#fork-check", Static).update(shown)
        self.query_one("#ok", Button).disabled = not plan.get("ok")

    # ------------------------------------------------------------------ the write
    @on(Input.Submitted, "#fork-input")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_fork()

    def action_fork(self) -> None:
        """Enter forks once the check is good."""
        if self.busy or not self._loaded:
            return
        if self.last_plan is None or not self.last_plan.get("ok"):
            self.status("fix the title first", style="bold")
            return
        self.start_write("forking…", "ok")
        self.fork_worker(self._title(self.query_one("#fork-input", Input).value))

    @work(thread=True, exclusive=True, exit_on_error=False, group="fork-apply", description="fork")
    def fork_worker(self, title: str | None) -> None:
        new_id, error = self.watched_write(
            lambda: self.db.fork_session(self.session_id, self.message_id, title=title),
            gave_up=f"{GAVE_UP_WAITING}; nothing was written",
        )
        if new_id is None:
            self.app.call_from_thread(self._failed, error or "not forked, nothing was written")
            return
        self.app.call_from_thread(self._done, new_id)

    def _failed(self, error: str) -> None:
        self.busy = False
        self.status(Text(error, style="bold"))
        self.plan_worker(self.query_one("#fork-input", Input).value)

    def _done(self, new_id: str) -> None:
        """The caller reloads the list with the fork selected (`session_actions.fork`)."""
        self.busy = False
        self.dismiss(new_id)
