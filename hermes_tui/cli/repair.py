"""`sessions repair [--check]`: diagnose a damaged store, or back it up and repair it keeping
every session.

It never opens the store with `SessionDB` (a damaged store may not open at all): `diagnose`
reads it read-only and `repair` backs it up before changing anything. `--check` exits 0 when
healthy and 9 when damaged; a store that cannot be repaired is left exactly as it was (exit 9).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from hermes_tui import state
from hermes_tui.cli.command import Command
from hermes_tui.cli.confirm import confirm
from hermes_tui.cli.errors import EXIT_CODES, CliError, writes_refused
from hermes_tui.cli.output import emit_json, out, s
from hermes_tui.cli.parser import add_yes
from hermes_tui.cli.stores import Stores
from hermes_tui.formatting import plural


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--check", action="store_true", help="only diagnose (read-only): exit 0 when healthy, 9 when damaged"
    )
    p.add_argument(
        "--backup-dir", type=Path, metavar="DIR", help="where the backup goes (default: beside the store)"
    )
    add_yes(p)


def _print_diagnosis(report: dict[str, Any]) -> None:
    n_s, n_m = report.get("sessions"), report.get("messages")
    counts = (
        f" ({plural(int(n_s), 'session')}, {plural(int(n_m or 0), 'message')})" if n_s is not None else ""
    )
    if report.get("healthy"):
        out(f"{s(report['path'])}: healthy{counts}.")
        return
    out(f"{s(report['path'])}: damaged{counts}.")
    if report.get("error"):
        out(f"  ! {s(report['error'])}")
    for problem in report.get("problems") or []:
        out(f"  - {s(problem)}")
    out("  repairable by `sessions repair`: " + ("yes" if report.get("repairable") else "no"))


def _already_healthy(report: dict[str, Any]) -> dict[str, Any]:
    """What `--json` says of a store that needed no repair (the shape of a repair's result)."""
    return {
        "repaired": True,
        "strategy": "already_healthy",
        "backup_path": None,
        "error": None,
        "actions": [],
        "sessions": report["sessions"],
        "messages": report["messages"],
        "before": report,
        "after": None,
    }


def run(stores: Stores, args: argparse.Namespace) -> int:
    path = stores.file()
    if args.check:
        report = state.diagnose(path)
        if args.json:
            emit_json(report)
        else:
            _print_diagnosis(report)
        return 0 if report.get("healthy") else EXIT_CODES["damaged"]
    if args.read_only:
        raise writes_refused("repair")
    report = state.diagnose(path)
    if report.get("healthy"):
        if args.json:
            emit_json(_already_healthy(report))
        else:
            _print_diagnosis(report)
            out("Nothing to repair.")
        return 0
    if not args.json:
        _print_diagnosis(report)
    if not report.get("repairable"):
        reason = "; ".join(report.get("problems") or [])[:300] or report.get("error") or "unknown damage"
        raise CliError(
            f"{path} cannot be repaired automatically ({reason}); it was left exactly as it was", "damaged"
        )
    if not confirm(args.yes, f"Repair {path}? It is backed up first.", verb="repair"):
        raise CliError("not confirmed: nothing was changed", "refused")
    result = state.repair(path, backup_dir=args.backup_dir)
    if args.json:
        emit_json(result)
        return 0 if result.get("repaired") else EXIT_CODES["damaged"]
    if not result.get("repaired"):
        raise CliError(result.get("error") or "the repair failed; the file was left as it was", "damaged")
    for action in result.get("actions") or []:
        out(f"  * {s(action)}")
    if result.get("backup_path"):
        out(f"backup: {s(result['backup_path'])}")
    kept = plural(int(result.get("sessions") or 0), "session")
    out(
        f"Repaired ({s(result.get('strategy'))}): kept {kept},"
        f" {plural(int(result.get('messages') or 0), 'message')}."
    )
    return 0


COMMANDS = (
    Command(
        "repair",
        "Check a damaged store (--check) or back it up and repair it, keeping every session.",
        arguments,
        run,
        "path",
    ),
)
