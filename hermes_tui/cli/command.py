"""What a `hermes-tui sessions` command is: its name, its options, what it runs, and which
stores it may be given.

A command module defines its `Command`s; `registry.py` lists the modules. `sessions.main` parses,
opens the stores the command's `scope` allows (`stores.Stores`), calls `run(stores, args)` and
reports any error; `run` returns the exit code. Which stores a command may be given is its
`scope` (`stores.Scope`).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass

from hermes_tui.cli.stores import Scope, Stores


def never(_args: argparse.Namespace) -> bool:
    return False


def always(_args: argparse.Namespace) -> bool:
    return True


@dataclass(frozen=True)
class Command:
    """One `hermes-tui sessions NAME` command."""

    name: str
    help: str
    #: Declares the command's own options (and subcommands) on its parser.
    arguments: Callable[[argparse.ArgumentParser], None]
    #: Runs it on the open stores; returns the exit code.
    run: Callable[[Stores, argparse.Namespace], int]
    scope: Scope = "many"
    #: Whether this run writes (the stores then open writable, and --read-only refuses it).
    writes: Callable[[argparse.Namespace], bool] = never
