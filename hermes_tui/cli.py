"""Command line: ``hermes-tui [--db PATH] [--read-only] [--demo] [--theme NAME]``.

``hermes-tui sessions ...`` is handed to `hermes_tui.cli_sessions.main` (headless commands,
maintained separately); everything else opens the browser.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from hermes_tui.state.paths import default_db_path


def build_parser() -> argparse.ArgumentParser:
    """The browser's options (the `sessions` subcommands have their own parser)."""
    parser = argparse.ArgumentParser(
        prog="hermes-tui",
        description="Browse a Hermes Agent session store (state.db). Browsing never writes.",
        epilog="Headless commands: hermes-tui sessions --help",
    )
    parser.add_argument(
        "--db",
        metavar="PATH",
        type=Path,
        help="state.db to open (default: $HERMES_HOME/state.db or ~/.hermes/state.db)",
    )
    parser.add_argument("--read-only", action="store_true", help="open the file read-only (mode=ro)")
    parser.add_argument("--demo", action="store_true", help="open a demo database (built once and cached)")
    parser.add_argument(
        "--theme", metavar="NAME", default=None, help="Textual theme (e.g. textual-dark, nord, gruvbox)"
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `hermes-tui` console script."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list and args_list[0] == "sessions":
        from hermes_tui import cli_sessions  # type: ignore[attr-defined]

        return int(cli_sessions.main(args_list[1:]) or 0)
    args = build_parser().parse_args(args_list)
    from hermes_tui.app.app import DEFAULT_THEME, HermesApp

    if args.demo:
        from hermes_tui.demo import demo_path, ensure_demo_db

        if not demo_path().exists():
            print(f"Building the demo database at {demo_path()} (once)…", file=sys.stderr)
        path = ensure_demo_db()
    else:
        path = (args.db or default_db_path()).expanduser()
        if not path.exists():
            # The app says so too and offers the demo (key d); this line stays in the scrollback.
            print(
                f"No session database at {path}; the browser offers the demo (or use --demo).",
                file=sys.stderr,
            )
    app = HermesApp(path, read_only=args.read_only, theme=args.theme or DEFAULT_THEME)
    if args.theme and args.theme not in app.available_themes:
        print(
            f"Unknown theme {args.theme!r}; choose one of: {', '.join(sorted(app.available_themes))}",
            file=sys.stderr,
        )
        return 2
    app.run()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
