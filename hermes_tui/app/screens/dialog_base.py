"""What the session-action dialogs share: `ActionDialog` (a modal with a status line, lock-wait
reporting and a Cancel button), `WaitAbandoned`, and the wording helpers their messages use.

The dialogs import this module and `hermes_tui.app.session_actions` imports the dialogs, never
the other way round (an import-linter contract in pyproject.toml keeps it so).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from rich.text import Text
from textual import on
from textual.binding import Binding, BindingType
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from hermes_tui.app.undo import remember_trash_entry
from hermes_tui.formatting import plural as plural  # the one pluraliser; screens import it from here
from hermes_tui.safe_text import inert
from hermes_tui.state import BUSY_REASON

if TYPE_CHECKING:
    from hermes_tui.app.session_context import SessionContext
    from hermes_tui.state import SessionDB

R = TypeVar("R")
T = TypeVar("T")

READ_ONLY_MESSAGE = "This database was opened read-only: {what} refused, nothing was written."
#: Why a write stopped when the user gave up waiting for another process's write lock.
GAVE_UP_WAITING = "gave up waiting for the write lock"


class WaitAbandoned(BaseException):  # noqa: N818 - a control-flow signal, not an error
    """Raised from the lock-wait hook to stop retrying (the store suppresses `Exception` only)."""


def error_text(exc: BaseException) -> str:
    """A one-line, human readable error, inert: a message may quote store text (a title, an id,
    a path) and goes to the terminal like any other (`safe_text.inert`)."""
    text = f"{type(exc).__name__}: {exc}" if not str(exc).startswith(type(exc).__name__) else str(exc)
    return inert(text, newlines=False)


def unique_path(path: Path) -> Path:
    """``path`` itself when free, else ``name-2.ext``, ``name-3.ext``… (never overwrites)."""
    if not path.exists():
        return path
    n = 2
    while True:
        candidate = path.with_name(f"{path.stem}-{n}{path.suffix}")
        if not candidate.exists():
            return candidate
        n += 1


def trashed_message(result: dict[str, Any], past: str, noun: str, skipped_note: str) -> str:
    """The toast after a delete or prune (`trash_sessions`' result): ``Deleted 12 sessions — u to
    undo.``; when cancelled or partial, how many of how many, with ``skipped_note`` saying why
    sessions were skipped. Only counts: nothing from the store is in it."""
    deleted, requested = result["deleted"], result["requested"]
    busy = len(result.get("guarded_ids") or ())
    other = result["skipped"] - busy
    undo = " — u to undo" if result.get("trash_entry") else ""
    if not result["cancelled"] and not result["skipped"]:
        return f"{past} {plural(deleted, 'session')}{undo}."
    word = "cancelled" if result["cancelled"] else "done"
    msg = f"{noun} {word}: {deleted:,} of {plural(requested, 'session')} deleted"
    if other > 0:
        msg += f", {other:,} {skipped_note}"
    elif result["cancelled"]:
        msg += f", {requested - deleted:,} kept"
    if busy:
        msg += f"; {busy:,} kept: {BUSY_REASON}"
    return msg + undo + "."


class ActionDialog(ModalScreen[R]):
    """A centred modal whose body is `#dialog`; `status()` shows plain `Text` under it.

    A button whose id is in `BUTTON_ACTIONS` runs that action, as its key does (``#cancel``
    closes: Esc's action, which stops a running write first).
    """

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "close", "Close", show=False)]
    BUTTON_ACTIONS: ClassVar[dict[str, str]] = {"cancel": "close"}

    def __init__(self, context: SessionContext, db: SessionDB) -> None:
        super().__init__()
        self.context = context
        self.db = db
        self.cancel_event = threading.Event()
        self.busy = False

    def start_write(self, text: str, button: str | None = None) -> None:
        """On the loop, before a write worker starts: busy (Esc now cancels it), a fresh cancel
        event, `button` (its id) disabled against a second press, `text` as the status."""
        self.busy = True
        self.cancel_event.clear()
        if button is not None:
            self.query_one(f"#{button}", Button).disabled = True
        self.status(text)

    def trashed(self, result: dict[str, Any], message: str, title: str) -> None:
        """On the loop, after a write moved sessions to the trash (`SessionDB.trash_sessions`):
        `u` can undo it, the browser re-reads them, a toast says so (the caller then closes)."""
        remember_trash_entry(self.app, result.get("trash_entry"), self.db.db_path)
        self.changed(tuple(result["deleted_ids"]))
        self.context.notify(message, title=title, markup=False)

    def status(self, text: str | Text, style: str = "") -> None:
        """Show a line in `#status` (agent text must come in as `Text`; never markup)."""
        shown = text if isinstance(text, Text) else Text(text, style=style)
        line = self.query_one("#status", Static)
        line.update(shown)
        line.set_class(not shown.plain, "-empty")  # an empty line gives its row back on a short screen

    def action_close(self) -> None:
        if self.busy:
            self.cancel_event.set()
            self.status("cancelling after the current step…")
            return
        self.dismiss(None)

    @on(Button.Pressed)
    def _button_pressed(self, event: Button.Pressed) -> None:
        action = self.BUTTON_ACTIONS.get(event.button.id or "")
        if action is not None:
            event.stop()
            getattr(self, f"action_{action}")()

    # ------------------------------------------------------------------ lock waiting
    def show_waiting(self, attempt: int, seconds: float) -> None:
        """On the loop: the write worker is waiting for another process's write lock."""
        self.add_class("-waiting")
        self.status(f"waiting for the write lock… (attempt {attempt}, {seconds:.1f} s)", style="bold")

    def clear_waiting(self) -> None:
        self.remove_class("-waiting")

    @contextmanager
    def lock_watch(self) -> Iterator[None]:
        """In a write worker: report lock waits to the dialog; Cancel abandons the wait."""
        app = self.app

        def hook(attempt: int, seconds: float) -> None:
            app.call_from_thread(self.show_waiting, attempt, seconds)
            if self.cancel_event.is_set():
                raise WaitAbandoned

        previous = self.db.lock_wait_hook
        self.db.lock_wait_hook = hook
        try:
            yield
        finally:
            self.db.lock_wait_hook = previous
            app.call_from_thread(self.clear_waiting)

    def watched_write(
        self, write: Callable[[], T], gave_up: str = GAVE_UP_WAITING
    ) -> tuple[T | None, str | None]:
        """In a write worker: ``write()`` under `lock_watch`, as ``(result, None)``, or
        ``(None, why)`` when it failed or the user gave up waiting for the lock (``gave_up``)."""
        try:
            with self.lock_watch():
                return write(), None
        except WaitAbandoned:
            return None, gave_up
        except Exception as exc:
            return None, error_text(exc)

    def report_progress(self, done: int, total: int) -> None:
        """A store progress callback (called in the worker): `_progress` runs on the loop."""
        self.app.call_from_thread(self._progress, done, total)

    def _progress(self, done: int, total: int) -> None:
        """On the loop: a batch of a long write is done (dialogs with a progress bar show it)."""

    def changed(self, ids: tuple[str, ...] = ()) -> None:
        """Tell the browser the store changed (it drops caches and re-queries)."""
        self.context.sessions_changed(ids)
