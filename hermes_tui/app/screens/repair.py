"""The repair offer: a store that fails to open because it is damaged gets a diagnosis and a fix.

When the main screen cannot open a file and SQLite's error says the schema or the file is
malformed (`is_malformed_db_error`), `offer_repair` puts a panel under the "cannot open" message:
`diagnose(path)` (read-only, in a worker) lists what is wrong, and when the damage is of a kind
`repair` handles (duplicate `sqlite_master` rows, broken FTS indexes) ``R`` runs `repair(path)`
in a worker. The repair backs the file up first and commits only once verified; the panel then
shows the backup's path and what was done, and the store is opened again. Never offered on a
store opened `--read-only` (a repair writes the file). The same panel serves a query that fails
with `is_fts_corruption_error` (`offer_repair(..., fts=True)`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from rich.text import Text
from textual import work
from textual.binding import Binding, BindingType
from textual.widget import Widget
from textual.widgets import Static

from hermes_tui import state
from hermes_tui.app.screens.dialog_base import error_text
from hermes_tui.formatting import plural
from hermes_tui.safe_text import inert
from hermes_tui.state import StoreError, diagnose, is_fts_corruption_error, is_malformed_db_error

if TYPE_CHECKING:
    from hermes_tui.app.session_context import BrowserApp

#: Problems listed by the panel (diagnose may report one per damaged object).
SHOWN_PROBLEMS = 8


class RepairHost(Protocol):
    """What the panel asks of the screen that shows it (the main screen)."""

    @property
    def hermes(self) -> BrowserApp: ...

    def refresh_bindings(self) -> None: ...

    def reopen(self, path: Path) -> None:
        """Open ``path`` again (after a repair, or read-only), the list focused."""


def looks_damaged(error: str | BaseException, *, fts: bool = False) -> bool:
    """Is this open (or, with `fts`, query) error one a repair may fix? The main screen passes
    the error as text, so text is wrapped in a `StoreError` (the tests read its message)."""
    exc = error if isinstance(error, BaseException) else StoreError(str(error))
    return is_fts_corruption_error(exc) if fts else is_malformed_db_error(exc)


class RepairOffer(Static, can_focus=True):
    """What is wrong with the file, and ``R`` to repair it when `diagnose` says it can be."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("R", "repair", "Repair (backup first)"),
        Binding("b", "browse_read_only", "Browse read-only"),
    ]

    def __init__(self, main: RepairHost, path: Path) -> None:
        super().__init__(Text("Checking what is wrong with the file (read-only)…"), id="repair-offer")
        self.main = main
        self.path = path
        self.report: dict[str, Any] | None = None
        self.running = False
        self.result: dict[str, Any] | None = None
        self.border_title = "Damaged store"

    def on_mount(self) -> None:
        self.diagnose_worker()

    def shown(self, path: str | Path) -> str:
        return self.main.hermes.display_path(Path(path))

    # ------------------------------------------------------------------ diagnose
    @work(thread=True, exclusive=True, exit_on_error=False, group="repair-diagnose", description="diagnose")
    def diagnose_worker(self) -> None:
        try:
            report = diagnose(self.path)
        except Exception as exc:  # diagnose reports its own failures; anything else is shown
            self.app.call_from_thread(
                self.update, Text(inert(f"Could not check the file: {error_text(exc)}"))
            )
            return
        self.app.call_from_thread(self._diagnosed, report)

    def _diagnosed(self, report: dict[str, Any]) -> None:
        self.report = report
        # What the user can do first, then the diagnosis: on a short terminal (80×24) the
        # panel's end is below the screen, and it held the R line.
        text = Text()
        if report.get("repairable"):
            text.append("R… repair: a backup is made first", style="bold")
            text.append(
                " (beside the file). The repair keeps every session and message, and the file is "
                "only changed once the result checks out.\n"
            )
            self.focus()
        else:
            text.append(
                "This damage cannot be repaired automatically; the file was left exactly as it was.\n"
            )
        text.append("b… browse it read-only", style="bold")
        text.append(" as it is (nothing is written; a damaged index may leave search short).\n\n")
        text.append("What is wrong:\n", style="bold")
        problems = list(report.get("problems") or [])
        for problem in problems[:SHOWN_PROBLEMS]:
            text.append("  • " + inert(self._local(problem)) + "\n")
        if len(problems) > SHOWN_PROBLEMS:
            text.append(f"  … and {len(problems) - SHOWN_PROBLEMS} more\n")
        if report.get("sessions") is not None:
            text.append(
                f"It still holds {plural(report['sessions'], 'session')} and "
                f"{plural(report.get('messages') or 0, 'message')}."
            )
        self.update(text)
        self.main.refresh_bindings()

    def _local(self, line: str) -> str:
        return str(line).replace(str(self.path), self.shown(self.path))

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "repair":
            return (
                bool(self.report and self.report.get("repairable"))
                and not self.running
                and self.result is None
            )
        return True

    def action_browse_read_only(self) -> None:
        """Open the damaged file read-only (SQLite can read it when only an index or a duplicate
        schema row is broken): the whole browser then refuses writes, as with --read-only."""
        if self.running:
            return
        self.main.hermes.read_only = True
        self.main.reopen(self.path)
        self.remove()

    # ------------------------------------------------------------------ repair
    def action_repair(self) -> None:
        if self.main.hermes.read_only or self.running or not (self.report and self.report.get("repairable")):
            return
        self.running = True
        self.update(
            Text("Backing the file up, then repairing… (keep hermes-agent closed meanwhile)", style="bold")
        )
        self.refresh_bindings()
        self.repair_worker()

    @work(
        thread=True, exclusive=True, exit_on_error=False, group="repair-run", description="repair the store"
    )
    def repair_worker(self) -> None:
        try:
            result = state.repair(self.path)  # the function (`hermes_tui.state.repair` is also a module)
        except Exception as exc:
            result = {"repaired": False, "error": error_text(exc), "backup_path": None, "actions": []}
        self.app.call_from_thread(self._repaired, result)

    def _repaired(self, result: dict[str, Any]) -> None:
        self.running = False
        self.result = result
        text = Text()
        if result.get("repaired"):
            text.append("Repaired", style="bold")
            text.append(f" ({result.get('strategy')}). ")
            if result.get("backup_path"):
                text.append(f"Backup: {inert(self.shown(result['backup_path']))}\n")
            for action in result.get("actions") or []:
                text.append("  • " + inert(self._local(action)) + "\n")
            text.append("Opening the store again…")
            self.update(text)
            self.app.notify(
                inert(f"Repaired; backup at {self.shown(result['backup_path'] or '')}"),
                title="Repair",
                markup=False,
                timeout=10,
            )
            self.main.reopen(self.path)
            self.remove()
            return
        text.append("The repair failed: ", style="bold")
        text.append(inert(self._local(str(result.get("error") or "unknown error"))) + "\n")
        if result.get("backup_path"):
            text.append(f"A backup was made at {inert(self.shown(result['backup_path']))}; ")
        text.append("the file was left as it was.")
        self.update(text)
        self.refresh_bindings()


def offer_repair(
    screen: Widget, host: RepairHost, path: Path, error: str | BaseException, *, fts: bool = False
) -> bool:
    """Put the repair panel under ``screen``'s message when `error` is damage `repair` may fix
    and the store is not opened read-only (``host``, the main screen, reopens the store).
    Returns whether it was offered."""
    for old in screen.query(RepairOffer):
        old.remove()
    if host.hermes.read_only or not path.is_file() or not looks_damaged(error, fts=fts):
        return False
    notice = screen.query_one("#notice")
    screen.mount(RepairOffer(host, path), after=notice)
    return True
