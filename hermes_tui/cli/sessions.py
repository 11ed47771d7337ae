"""`hermes-tui sessions COMMAND …`: the browser's headless twin.

Parses (the commands of `registry.py`, each declaring its options), selects and opens the stores
the command may be given (`stores.Stores`: one store or several, the same code either way), runs
the command and reports whatever ended it (`errors.py`: one `error:` line, or one JSON object
with `--json`, and the exit code of its kind). Reads open the stores read-only; writes open them
with `migrate=False` after a read-only look has shown each is a Hermes store, so a command never
changes a database's structure (nor writes a byte to a file that is not a session store).
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from collections.abc import Sequence

from hermes_tui.cli.errors import CliError, debugging, report, report_exception, writes_refused
from hermes_tui.cli.parser import Parser, add_globals, add_subcommands
from hermes_tui.cli.registry import BY_NAME, COMMANDS
from hermes_tui.cli.stores import Stores, select

EPILOG = """\
session references (ID):
  an exact id, a unique id prefix, or an exact title. Commands that change or export
  sessions accept nothing else: a reference matching no session, or several, is an error
  that lists the candidates. `show` also resolves a title the way `hermes --resume` does
  (the newest session of a numbered family "T", "T #2", …) and says which one it chose.

stores (--db PATH, --profile NAME, --all):
  without these, the current profile's store ($HERMES_HOME/state.db or ~/.hermes/state.db).
  list, search, show, stats, usage, export, prune, archive, unarchive, pin, unpin, tail and
  watch read every discovered store with --all (the default profile and profiles/<name>/state.db),
  or the named ones with --profile NAME (repeatable; on show the option is --all-profiles, as
  --all there means inactive messages). rename and delete take --profile NAME (one store) and
  refuse --all; trash and repair take --db PATH only. --db PATH is one store and cannot be
  combined with them. Ids are unique only within a store: a reference matching sessions in
  several stores is ambiguous; write it PROFILE:ID (PROFILE:TITLE, PROFILE:PREFIX), where an
  explicit PROFILE: wins over the same text read as a plain reference. A store that cannot be
  read prints one `warning:` line (stderr) and the others still answer.

JSON (--json):
  one document per command, the same shape whatever the number of stores: each store is
  named by its profile (a --db file that is no profile's store: by the path as given),
  records carry a "profile" field, per-store reports are keyed by profile, and an "errors"
  list names the stores that could not be read. tail and watch stream one JSON event per
  line, each with its "profile" (a store that fails: an {"type": "error", ...} event).

exit codes (with --json, errors are {"error": "...", "kind": "..."} on stdout):
  0    ok
  1    error: a store or I/O error, disk full, or an internal error (kind: error, io,
       disk_full, internal; HERMES_TUI_DEBUG=1 prints the traceback)
  2    usage: bad options or arguments (kind: usage)
  3    not found: no database at the path, or no such session (kind: not_found)
  4    refused: read-only file or --read-only, no confirmation, declined, an existing file
       would be overwritten, or the store has no column for it (pin on a store written by
       hermes-agent 0.19.0) (kind: read_only, refused)
  5    another process held the write lock too long, or (delete) Hermes is working in the
       session right now: nothing was deleted, try again when it is idle (kind: locked)
  6    the file is not a Hermes session store: empty, a folder, not SQLite, or SQLite
       without the sessions tables (kind: not_a_database)
  7    ambiguous session reference (kind: ambiguous)
  8    invalid value: a title too long or held by another session (kind: invalid)
       (trash restore exits 0 when sessions conflict: each is reported, nothing live is overwritten)
       (a damaged trash entry: trash show/restore of it exit 1 with the reason; list and empty
       warn on stderr, list it as damaged, and go on)
  9    repair: the store is damaged (--check), or it could not be repaired (it was left exactly
       as it was) (kind: damaged; with --json the diagnosis/repair report is printed instead)
  10   usage --budget: the range cost more than the budget (kind: over_budget; the report
       is printed, with --json too, and says by how much; a cost that is unknown exits 0)
  130  interrupted (kind: interrupted)

docs/cli.md describes every command, its JSON and its references.
"""


def build_parser() -> Parser:
    """The `sessions` parser: the global options, then each registered command's own."""
    parser = Parser(
        prog="hermes-tui sessions",
        description="Headless session commands (the browser's twin).",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_globals(parser, suppress=False)
    add = add_subcommands(parser, "command", "COMMAND")
    for command in COMMANDS:
        command.arguments(add(command.name, command.help))
    return parser


def _no_command(args: argparse.Namespace) -> int:
    """Bare `sessions` (or `sessions trash`): its help on stderr and exit 2, argparse's code for
    a missing subcommand (with --json: the usage error object, stdout stays one document)."""
    helper: argparse.ArgumentParser = args.usage_parser
    if args.json:
        return report("usage", f"a command is needed (see: {helper.prog} --help)", True)
    sys.stderr.write(helper.format_help())
    return 2


def _run(args: argparse.Namespace) -> int:
    """Select and open the stores the command may be given, run it, close them."""
    command = BY_NAME[args.command]
    write = command.writes(args)
    stores = Stores(select(args, command.scope), write=write, quiet=args.json)
    try:
        if command.scope != "path":
            if stores.selection.by_path:
                stores.file()  # the file's own error first
            if write and args.read_only:
                raise writes_refused(args.command)
            stores.open()
        return int(command.run(stores, args) or 0)
    finally:
        try:
            stores.close()
        except Exception:  # noqa: BLE001 - a failing close must not hide the command's result
            if debugging():
                traceback.print_exc()


def main(argv: Sequence[str] | None = None) -> int:
    """Run one `sessions` command; returns the exit code (never raises SystemExit)."""
    argv_list = [str(a) for a in (sys.argv[1:] if argv is None else argv)]
    wants_json = "--json" in (argv_list[: argv_list.index("--")] if "--" in argv_list else argv_list)
    try:
        args = build_parser().parse_args(argv_list)
    except SystemExit as exc:  # --help
        return int(exc.code) if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    except CliError as exc:  # usage errors raised by Parser.error
        return report(exc.kind, str(exc), wants_json)
    if getattr(args, args.needs) is None:
        return _no_command(args)
    try:
        return _run(args)
    except BrokenPipeError:  # `| head`
        _silence_stdout()
        return 0
    except (Exception, KeyboardInterrupt) as exc:
        return report_exception(exc, bool(args.json))


def _silence_stdout() -> None:
    """After EPIPE, point stdout at /dev/null so the interpreter's final flush stays quiet."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass
