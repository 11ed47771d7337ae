"""The `hermes-tui` command: ``hermes-tui [--db PATH] [--read-only] [--demo] [--theme NAME]
[--resume-cmd T] [--resume-tui] [--yield-cpu] [--settings PATH] [--reset-settings]`` opens the
browser, and ``hermes-tui pick [--query Q] [--source S] [--format id|resume] [--all]
[--profile NAME]`` the picker.

``hermes-tui sessions ...`` is handed to `hermes_tui.cli.sessions.main` (the headless commands);
everything else opens the browser. When the browser exits to resume a
session (key R), the command runs here, after Textual has restored the terminal: this process
becomes Hermes (`os.execvp`; after `--yield-cpu` it starts Hermes at normal priority and waits).

``pick`` is the shell's picker (like fzf): the UI draws on the terminal (``/dev/tty`` stands in
for every redirected standard stream while it runs, `handoff.picker_terminal`) and only the
result goes to stdout, so ``hermes --resume="$(hermes-tui pick)"`` works. Exit status 0 with the
result, 1 with nothing printed when cancelled, 2 when the id cannot be shown on a terminal.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hermes_tui.cli.parser import did_you_mean
from hermes_tui.safe_text import one_line
from hermes_tui.state import current_store_path, sticky_profile

RESUME_HELP = (
    "resume command template (default: $HERMES_TUI_RESUME, else "
    "'hermes {profile_args} --resume={id} {tui}'); "
    "{id} the session (a compressed chain's live tip), {profile} the profile name, {profile_args} "
    "'-p NAME' for a named profile's store, {tui} '--tui' with --resume-tui. Split like a shell "
    "line, run without a shell; HERMES_HOME is set to the folder of a store Hermes does not open "
    "by default"
)


class _DbPaths(argparse.Action):
    """`--db PATH`, repeatable: `args.db` is the first path (the one store), `args.dbs` all of
    them (several: one merged list)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        paths = [*(getattr(namespace, "dbs", None) or []), values]
        namespace.dbs = paths
        namespace.db = paths[0]


def _add_common(parser: argparse.ArgumentParser) -> None:
    """Options the browser and the picker share."""
    parser.add_argument(
        "--db",
        metavar="PATH",
        type=Path,
        action=_DbPaths,
        help="state.db to open (default: $HERMES_HOME/state.db or ~/.hermes/state.db); "
        "repeat it to browse several stores as one list",
    )
    parser.add_argument("--read-only", action="store_true", help="open the file read-only (mode=ro)")
    parser.add_argument(
        "--theme", metavar="NAME", default=None, help="Textual theme (e.g. textual-dark, nord, gruvbox)"
    )
    parser.add_argument("--resume-cmd", metavar="TEMPLATE", default=None, help=RESUME_HELP)
    parser.add_argument("--resume-tui", action="store_true", help="resume in Hermes' TUI (adds --tui)")
    parser.add_argument(
        "--yield-cpu",
        action="store_true",
        help="run the browser at idle CPU priority (Linux SCHED_IDLE): agents writing are never "
        "slowed, but on a machine whose every core is busy the browser waits for one",
    )
    parser.add_argument(
        "--settings",
        metavar="PATH",
        type=Path,
        default=None,
        help="settings file (default: $HERMES_TUI_CONFIG, else settings.toml in the user config folder)",
    )


def _add_profiles(parser: argparse.ArgumentParser, verb: str, note: str) -> None:
    """`--all` / `--profile NAME` (repeatable): several profiles' stores as one merged list, for
    the browser and the picker alike; `verb` and `note` word the help for each."""
    parser.add_argument(
        "--all",
        dest="all_profiles",
        action="store_true",
        help=f"{verb} every Hermes profile's store ($HERMES_HOME/state.db and profiles/*/state.db); {note}",
    )
    parser.add_argument(
        "--profile",
        metavar="NAME",
        action="append",
        default=[],
        help=f"{verb} this profile's store (repeatable; 'default' is $HERMES_HOME/state.db)",
    )


def build_pick_parser() -> argparse.ArgumentParser:
    """`hermes-tui pick`: choose a session in the browser, print it for the shell."""
    parser = argparse.ArgumentParser(
        prog="hermes-tui pick",
        description="Pick a session (search focused: titles and ids first, then messages; Enter "
        "chooses, Esc cancels) and print its id or its resume command on stdout. Exit status 1 "
        "when nothing was picked, 2 when stdout is a terminal and the id holds control characters.",
        epilog='Example: hermes --resume="$(hermes-tui pick)"',
    )
    parser.add_argument("--query", "-q", metavar="Q", default="", help="search query to start with")
    parser.add_argument("--source", metavar="S", default=None, help="only sessions from this source")
    parser.add_argument(
        "--format",
        choices=("id", "resume"),
        default="id",
        help="print the session id (default; exactly as stored) or the whole resume command, "
        "quoted so bash, zsh, fish and sh all run it as it is (a session whose id or store path "
        "holds control characters is refused)",
    )
    _add_profiles(
        parser, "pick from", "with --format resume the command names the session's profile (-p NAME)"
    )
    _add_common(parser)
    return parser


def build_parser() -> argparse.ArgumentParser:
    """The browser's options (the `sessions` subcommands have their own parser)."""
    parser = argparse.ArgumentParser(
        prog="hermes-tui",
        description="Browse a Hermes Agent session store (state.db). Browsing never writes.",
        epilog="Headless commands: hermes-tui sessions --help · picker for the shell: hermes-tui pick --help",
    )
    parser.add_argument("--demo", action="store_true", help="open a demo database (built once and cached)")
    _add_profiles(parser, "open", "p toggles between the current profile and all")
    parser.add_argument(
        "--reset-settings",
        action="store_true",
        help="delete the settings file (theme, order, filters, panes) and exit",
    )
    _add_common(parser)
    return parser


def run_resume(argv: tuple[str, ...], env: tuple[tuple[str, str], ...] = ()) -> int:
    """Become the resume command, with ``env`` added to the environment (``HERMES_HOME`` of a
    store Hermes does not open by default); the terminal is already restored. 127 when it
    cannot start.

    After `--yield-cpu` this process is at `SCHED_IDLE` for good and so would the agent be: it
    then runs as a child started from the thread kept at normal priority, and this process waits
    for it (ignoring the terminal's interrupts, which are the agent's) and exits with its status."""
    from hermes_tui.app import cpu_share
    from hermes_tui.app.handoff import ResumeCommand, shown_command

    sys.stdout.flush()
    sys.stderr.flush()
    environ = {**os.environ, **dict(env)}
    try:
        if cpu_share.yielded():
            child = cpu_share.unyielded(subprocess.Popen, list(argv), env=environ)
            for sig in (signal.SIGINT, signal.SIGQUIT):
                signal.signal(sig, signal.SIG_IGN)
            status = child.wait()
            return 128 - status if status < 0 else status  # killed by signal N: 128 + N, as a shell says
        os.execvpe(argv[0], list(argv), environ)
    except OSError as exc:
        shown = shown_command(ResumeCommand(argv, env))
        print(f"hermes-tui: could not run {shown}: {one_line(str(exc))}", file=sys.stderr)
    return 127


def print_picked(output: str) -> int:
    """The picked id or command on stdout, exactly, for the shell reading it: 0. A terminal
    there would draw it, so an id with control or invisible characters is refused (2) rather
    than printed raw; piped, it is always printed exactly."""
    if sys.stdout.isatty() and not output.isprintable():
        print(
            f"hermes-tui: the session id {one_line(output, 80)!r} holds control or invisible "
            "characters and is not printed on a terminal; pipe it (hermes-tui pick | …) to get it exactly",
            file=sys.stderr,
        )
        return 2
    sys.stdout.write(output + "\n")
    sys.stdout.flush()
    return 0


COMMANDS = ("sessions", "pick")


def _unknown_command(word: str) -> None:
    """A first word that is no command: argparse's usage error (exit 2), with the nearest one."""
    build_parser().error(
        f"unknown command {one_line(word, 80)!r} (commands: {', '.join(COMMANDS)})"
        + did_you_mean(word, COMMANDS)
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `hermes-tui` console script."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list and args_list[0] == "sessions":
        from hermes_tui.cli import sessions  # the headless commands: no Textual imported

        return int(sessions.main(args_list[1:]) or 0)
    if args_list and not args_list[0].startswith("-") and args_list[0] != "pick":
        _unknown_command(args_list[0])
    picking = bool(args_list) and args_list[0] == "pick"
    args = build_pick_parser().parse_args(args_list[1:]) if picking else build_parser().parse_args(args_list)
    if getattr(args, "reset_settings", False):
        from hermes_tui.app import settings

        try:
            print(settings.reset(args.settings))
        except settings.ResetRefused as exc:
            print(f"hermes-tui: {one_line(str(exc))}", file=sys.stderr)
            return 1
        return 0
    from hermes_tui.app.app import HermesApp, PickOptions
    from hermes_tui.app.handoff import Handoff, ResumeSettings, TemplateError, validate_template

    resume = ResumeSettings.from_env(args.resume_cmd, args.resume_tui)
    try:
        validate_template(resume.template)
    except TemplateError as exc:
        print(f"hermes-tui: {exc}", file=sys.stderr)
        return 2
    pick = PickOptions(args.query, args.source, args.format) if picking else None
    profiles = tuple(getattr(args, "profile", ()) or ())
    several_dbs = len(getattr(args, "dbs", None) or ()) > 1
    federating = getattr(args, "all_profiles", False) or bool(profiles) or several_dbs
    if getattr(args, "demo", False):
        from hermes_tui.demo import demo_path, ensure_demo_db

        if not demo_path().exists():
            print(f"Building the demo database at {demo_path()} (once)…", file=sys.stderr)
        path = ensure_demo_db()
    else:
        path = (args.db or current_store_path()).expanduser()
        if not path.exists() and not federating:
            # The app says so too and offers the demo (key d); this line stays in the scrollback.
            sticky = sticky_profile() if args.db is None else None
            why = f" (Hermes' profile {sticky!r}, chosen by `hermes profile use`)" if sticky else ""
            print(
                f"No session database at {path}{why}; the browser offers the demo (or use --demo).",
                file=sys.stderr,
            )
    app = HermesApp(
        path,
        read_only=args.read_only,
        theme=args.theme,  # None: the remembered theme
        resume=resume,
        pick=pick,
        settings_path=args.settings,
        prefetch=not federating,
        yield_cpu=args.yield_cpu,
    )
    if federating:
        from hermes_tui.app.federated_prefetch import federate
        from hermes_tui.app.stores import StoreChoice

        paths = tuple(p.expanduser() for p in getattr(args, "dbs", None) or ())
        federate(app, StoreChoice(all_profiles=args.all_profiles, profiles=profiles, paths=paths))
    if args.theme and args.theme not in app.available_themes:
        print(
            f"Unknown theme {args.theme!r}; choose one of: {', '.join(sorted(app.available_themes))}",
            file=sys.stderr,
        )
        return 2
    if picking:
        from hermes_tui.app.handoff import picker_terminal

        with picker_terminal():
            result = app.run()
    else:
        result = app.run()
    if isinstance(result, Handoff) and result.kind == "resume":
        return run_resume(result.argv, result.env)
    if isinstance(result, Handoff) and result.kind == "pick":
        return print_picked(result.output)
    return 1 if picking else int(app.return_code or 0)
