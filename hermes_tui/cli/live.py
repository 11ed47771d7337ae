"""`sessions tail REF [--follow]` and `sessions watch`: sessions as agents write them, from one
store or several (`follow.py` streams; this module parses, resolves and starts the followers).

`tail`'s reference is resolved like every command's (`PROFILE:ID` across stores). `watch` follows
every open store at once; text lines name sessions `PROFILE:ID` when several stores are open. A
store that fails is reported (a `warning:` line, or with `--json` an `"error"` event) while the
others keep streaming; with `--json` the stores that could not be opened are `"error"` events
first.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from hermes_tui.cli.command import Command
from hermes_tui.cli.errors import CliError
from hermes_tui.cli.follow import DEFAULT_INTERVAL_S, Stop, Stream, run_followers, tail_session, watch_store
from hermes_tui.cli.parser import add_profile_options
from hermes_tui.cli.references import resolve
from hermes_tui.cli.stores import Stores, op_problem
from hermes_tui.state import ProfileError


def _interval(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid interval {text!r}") from None
    if not 0.01 <= value <= 3600:
        raise argparse.ArgumentTypeError(f"interval must be between 0.01 and 3600 seconds, not {text}")
    return value


def _interval_option(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument(
        "--interval",
        type=_interval,
        default=DEFAULT_INTERVAL_S,
        metavar="SECONDS",
        help=f"{what} (default {DEFAULT_INTERVAL_S})",
    )


def tail_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "session",
        metavar="ID",
        help="session id, unique id prefix, or exact title (PROFILE:ID with --all/--profile)",
    )
    p.add_argument("-f", "--follow", action="store_true", help="keep printing new messages until Ctrl-C")
    _interval_option(p, "poll interval while following")
    add_profile_options(p)


def watch_arguments(p: argparse.ArgumentParser) -> None:
    _interval_option(p, "poll interval")
    add_profile_options(p)


def _raise(_profile: str, exc: BaseException) -> None:
    raise exc


def run_tail(stores: Stores, args: argparse.Namespace) -> int:
    """The session followed on its store's thread; its JSON events carry the profile."""
    profile, target = resolve(stores, args.session)
    stream = Stream.of(args, profile)

    def start(stop: Stop) -> Future[int]:
        return stores.fed.submit(profile, tail_session, stream, target.id, args.follow, stop)

    return run_followers({profile: start}, _raise)


def run_watch(stores: Stores, args: argparse.Namespace) -> int:
    """Every open store at once, each on its own thread."""
    if args.json:  # stores that could not be opened: events on the stream, as later failures are
        for problem in stores.problems:
            Stream.of(args).emit({"type": "error", **problem}, "")

    def failed(profile: str, exc: BaseException) -> None:
        if not stores.several:
            raise exc
        error = ProfileError.of(profile, exc)
        stores.failed([error])
        if args.json:
            Stream.of(args).emit({"type": "error", **op_problem(error)}, "")

    def follower(profile: str) -> Callable[[Stop], Future[Any]]:
        stream = Stream.of(args, profile, label=stores.several)
        return lambda stop: stores.fed.submit(profile, watch_store, stream, stop)

    code = run_followers({p: follower(p) for p in stores.profiles}, failed)
    if code == 1:
        raise CliError("every store failed while watching (see the warnings)", "error")
    return code


COMMANDS = (
    Command(
        "tail",
        "Print a session's messages; with --follow, new ones as they are committed.",
        tail_arguments,
        run_tail,
    ),
    Command(
        "watch",
        "Stream new sessions and messages across the whole store as they are committed.",
        watch_arguments,
        run_watch,
    ),
)
