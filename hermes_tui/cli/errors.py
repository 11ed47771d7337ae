"""How a `hermes-tui sessions` command fails: one error kind, one exit code, one report.

Every failure is one `error: …` line on stderr, or with `--json` one `{"error", "kind"}` object
on stdout, and the exit code of its kind (`EXIT_CODES`, listed in `sessions --help`). Commands
raise `CliError` for what they refuse; store and OS exceptions are classified here, so a command
never formats an error of its own.
"""

from __future__ import annotations

import errno
import os
import traceback

from hermes_tui import state
from hermes_tui.cli.output import emit_json, err
from hermes_tui.safe_text import one_line
from hermes_tui.state import (
    FeatureUnavailable,
    IntegrityError,
    InvalidArgument,
    LockTimeout,
    MessageNotFound,
    NotADatabaseError,
    ReadOnlyError,
    SessionActiveWriteGuardError,
    SessionNotFound,
    StoreError,
    StructureLocked,
    TitleError,
    TrashEntryNotFound,
)

#: Exit code of each error kind (the `kind` of a `--json` error object). Documented in --help.
EXIT_CODES: dict[str, int] = {
    "error": 1,
    "io": 1,
    "disk_full": 1,
    "internal": 1,
    "usage": 2,
    "not_found": 3,
    "read_only": 4,
    "refused": 4,
    "locked": 5,
    "not_a_database": 6,
    "ambiguous": 7,
    "invalid": 8,
    "damaged": 9,
    "over_budget": 10,
    "interrupted": 130,
}


class CliError(Exception):
    """An error to report as one `error: <message>` line and exit with `EXIT_CODES[kind]`."""

    def __init__(self, message: str, kind: str = "error") -> None:
        super().__init__(message)
        self.kind = kind if kind in EXIT_CODES else "error"


class UsageError(CliError):
    """A bad option value found after parsing (exit code 2)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, "usage")


def writes_refused(command: str) -> CliError:
    """The one error for a command that writes, run with --read-only (exit code "read_only")."""
    return CliError(
        f"'{command}' writes to the database, but --read-only was given; nothing was changed", "read_only"
    )


def store_error_kind(exc: StoreError) -> str:
    """The error kind of a store exception (the store's own classes; by name for a class a
    newer store adds)."""
    not_a_store = getattr(state, "NotAHermesStore", None)
    if isinstance(exc, NotADatabaseError) or (not_a_store is not None and isinstance(exc, not_a_store)):
        return "not_a_database"
    if isinstance(exc, ReadOnlyError):
        return "read_only"
    if isinstance(exc, (SessionNotFound, MessageNotFound, TrashEntryNotFound)):
        return "not_found"
    if isinstance(exc, (LockTimeout, SessionActiveWriteGuardError)):
        return "locked"
    if isinstance(exc, (StructureLocked, FeatureUnavailable)):
        return "refused"
    if isinstance(exc, (TitleError, IntegrityError, InvalidArgument)):
        return "invalid"
    if "disk is full" in str(exc).lower() or "disk full" in str(exc).lower():
        return "disk_full"
    return "error"


def _os_error_kind(exc: OSError) -> str:
    if isinstance(exc, FileExistsError):
        return "refused"
    if isinstance(exc, PermissionError):
        return "read_only"
    if isinstance(exc, FileNotFoundError):
        return "not_found"
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return "disk_full"
    return "io"


def classify(exc: BaseException) -> tuple[str, str]:
    """(kind, message) of any exception that ends a command."""
    if isinstance(exc, CliError):
        return exc.kind, str(exc)
    if isinstance(exc, StoreError):
        return store_error_kind(exc), str(exc)
    if isinstance(exc, OSError):
        kind = _os_error_kind(exc)
        text = (
            str(exc)
            if kind == "refused"
            else (exc.strerror or str(exc)) + (f": {exc.filename}" if exc.filename else "")
        )
        return kind, text
    if isinstance(exc, KeyboardInterrupt):
        return "interrupted", "interrupted"
    if type(exc).__name__ == "FullError":  # apsw.FullError that escaped the store
        return "disk_full", f"database or disk is full ({exc})"
    return "internal", f"internal error: {type(exc).__name__}: {exc}"


def report(kind: str, message: str, as_json: bool) -> int:
    """The one report of a failure: a JSON object on stdout with --json, else one stderr line."""
    text = one_line(message) or kind
    if as_json:
        try:
            emit_json({"error": text, "kind": kind})
        except BrokenPipeError:
            pass
    else:
        err(f"error: {text}")
    return EXIT_CODES[kind]


def report_exception(exc: BaseException, as_json: bool) -> int:
    """`report` of an exception that ended a command (its traceback too for an internal error
    with HERMES_TUI_DEBUG=1)."""
    kind, message = classify(exc)
    if kind == "internal" and debugging():
        traceback.print_exc()
    return report(kind, message, as_json)


def debugging() -> bool:
    return os.environ.get("HERMES_TUI_DEBUG") == "1"
