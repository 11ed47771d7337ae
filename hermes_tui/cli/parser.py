"""The pieces of the `hermes-tui sessions` parser that commands share: the parser class (errors
raised, not printed), the global options, the option groups several commands take, and the
value parsers (durations, dates, counts).

Each command declares its own options in its module (`Command.arguments`); `sessions.build_parser`
puts them together from the registry.
"""

from __future__ import annotations

import argparse
import difflib
import re
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

from hermes_tui.cli.errors import UsageError
from hermes_tui.state import TRASH_MAX_BYTES, TRASH_RETENTION_S

ORDERS = ("last_active", "started", "messages", "tokens", "cost")
_DURATION_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*$", re.IGNORECASE)
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400, "": 86400}
#: argparse's words for a value outside an option's (or a subcommand's) choices.
_INVALID_CHOICE_RE = re.compile(r"invalid choice: (['\"]?)(?P<bad>.*?)\1 \(choose from (?P<choices>.*)\)$")


# ---------------------------------------------------------------- value parsers
def parse_duration(text: str) -> float:
    """`5h`, `2d`, `1w`, `30m`, `90s` or bare days (`30`) → seconds."""
    m = _DURATION_RE.match(text or "")
    if not m:
        raise argparse.ArgumentTypeError(
            f"invalid duration {text!r} (use e.g. 12h, 7d, 2w or a number of days)"
        )
    return float(m.group(1)) * _UNITS[m.group(2).lower()]


def parse_iso(text: str) -> float:
    """ISO date or date-time → unix time (naive values are UTC)."""
    raw = (text or "").strip()
    try:
        dt = datetime.fromisoformat(raw.replace("Z", "+00:00") if raw.endswith("Z") else raw)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"invalid date {text!r} (use YYYY-MM-DD or YYYY-MM-DDTHH:MM)"
        ) from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.timestamp()


def parse_when(text: str) -> float:
    """An ISO date, or a duration meaning "that long ago"."""
    if _DURATION_RE.match(text or "") and not re.match(r"^\s*\d{4}-", text):
        return time.time() - parse_duration(text)
    return parse_iso(text)


_N = TypeVar("_N", int, float)


def _non_negative(text: str, kind: Callable[[str], _N]) -> _N:
    """`text` read as `kind`; argparse turns the error into a usage error naming the option."""
    try:
        n = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid number {text!r}") from None
    if n < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {text.strip()}")
    return n


def non_negative_int(text: str) -> int:
    return _non_negative(text, int)


def non_negative_float(text: str) -> float:
    return _non_negative(text, float)


def parse_megabytes(text: str) -> int:
    """`500` (MB) → bytes."""
    return int(non_negative_float(text) * 1024 * 1024)


# ---------------------------------------------------------------- the parser
def did_you_mean(word: str, choices: Sequence[str]) -> str:
    """`; did you mean 'list'?` when one of `choices` is close to the mistyped `word`, else ''."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


class Parser(argparse.ArgumentParser):
    """Raises instead of printing and exiting, so `sessions.main` reports a usage error like any
    other (one line, or a JSON object with --json) and returns the code in-process. A mistyped
    subcommand or choice gets the nearest valid one (`sessions lsit` → did you mean 'list'?)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        m = _INVALID_CHOICE_RE.search(message)
        if m:
            choices = [c.strip().strip("'\"") for c in m.group("choices").split(",")]
            message += did_you_mean(m.group("bad"), choices)
        raise UsageError(f"{message} (see: {self.prog} --help)")


def add_globals(p: argparse.ArgumentParser, suppress: bool) -> None:
    """`--db`, `--json`, `--read-only`: on `sessions` and again on every command (`suppress`:
    a command's copy leaves the value given before the command alone)."""
    d = argparse.SUPPRESS
    p.add_argument(
        "--db",
        type=Path,
        metavar="PATH",
        default=d if suppress else None,
        help="state.db to use (default: $HERMES_HOME/state.db or ~/.hermes/state.db)",
    )
    p.add_argument(
        "--json",
        action="store_true",
        default=d if suppress else False,
        help="machine output: one JSON document on stdout",
    )
    p.add_argument(
        "--read-only",
        action="store_true",
        default=d if suppress else False,
        help="open the database read-only; write commands are refused",
    )


def add_subcommands(parser: argparse.ArgumentParser, dest: str, metavar: str) -> Callable[..., Parser]:
    """Subcommands of `parser`, stored in `dest` (without one, `parser`'s help is printed:
    `usage_parser`, `needs`); returns `add(name, help)`, which makes one with the global options."""
    parser.set_defaults(usage_parser=parser, needs=dest)
    sub = parser.add_subparsers(dest=dest, metavar=metavar, parser_class=Parser)

    def add(name: str, help_: str) -> Parser:
        p: Parser = sub.add_parser(name, help=help_, description=help_)
        add_globals(p, suppress=True)
        return p

    return add


def add_profile_options(
    p: argparse.ArgumentParser, all_flags: Sequence[str] = ("--all", "--all-profiles")
) -> None:
    """`--profile NAME` (repeatable) and `--all`: which profiles' stores the command runs on."""
    p.add_argument(
        "--profile",
        action="append",
        default=[],
        metavar="NAME",
        help="use this profile's store (repeatable; 'default' is $HERMES_HOME/state.db)",
    )
    p.add_argument(
        *all_flags,
        dest="all_profiles",
        action="store_true",
        help="every discovered profile's store (the default one and profiles/*/state.db)",
    )


def add_list_filters(p: argparse.ArgumentParser) -> None:
    """The filters and order of `list` and `export`."""
    p.add_argument("--source", action="append", default=[], help="only this source (repeatable)")
    p.add_argument("--model", action="append", default=[], help="only this model (repeatable)")
    p.add_argument(
        "--after",
        type=parse_when,
        metavar="WHEN",
        help="started at/after (ISO date, UTC, or a duration ago like 7d/12h)",
    )
    p.add_argument(
        "--before", type=parse_when, metavar="WHEN", help="started before (ISO date or duration ago)"
    )
    p.add_argument("--order", choices=ORDERS, default="last_active")


def add_yes(p: argparse.ArgumentParser) -> None:
    p.add_argument("-y", "--yes", action="store_true", help="do not ask for confirmation")


def add_retention_options(p: argparse.ArgumentParser) -> None:
    """The trash's retention, applied when an entry is written (or by `trash empty --retention`)."""
    p.add_argument(
        "--trash-keep",
        type=parse_duration,
        metavar="AGE",
        default=TRASH_RETENTION_S,
        help=f"trash retention: entries older than AGE go when a new one is written"
        f" (default {int(TRASH_RETENTION_S // 86400)}d)",
    )
    p.add_argument(
        "--trash-max-mb",
        type=parse_megabytes,
        metavar="MB",
        default=TRASH_MAX_BYTES,
        help=f"then the oldest entries go while the trash is larger than MB"
        f" (default {TRASH_MAX_BYTES // (1024 * 1024)})",
    )
