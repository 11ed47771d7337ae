"""Which `hermes-tui sessions` commands there are, in `--help` order.

A new command is a module that defines `COMMANDS = (Command(...),)` (see `command.py`;
`titles.py` is a small one to copy), imported here and named in `MODULES`.
"""

from __future__ import annotations

from hermes_tui.cli import (
    export,
    flags,
    forking,
    housekeeping,
    listing,
    live,
    repair,
    stats,
    titles,
    trash,
    usage,
)
from hermes_tui.cli.command import Command

MODULES = (listing, titles, forking, housekeeping, flags, export, stats, usage, repair, live, trash)

COMMANDS: tuple[Command, ...] = tuple(c for module in MODULES for c in module.COMMANDS)
BY_NAME: dict[str, Command] = {c.name: c for c in COMMANDS}
