"""`hermes-tui sessions ...`: the browser's headless twin (list, show, search, rename, archive,
unarchive, pin, unpin, prune, delete, export, stats, trash) on the same store API.

`delete` and `prune` move what they remove to the trash first (`SessionDB.trash_sessions`) and
print the entry; `trash list|show|restore|empty` manage it; `--no-trash` deletes for good.

Reads always open the database read-only; writes open it with `migrate=False` only after a
read-only look has shown it is a Hermes store, so a command never changes a database's
structure (nor writes a byte to a file that is not a session store).

Every string that comes from the store is made inert (`hermes_tui.safe_text`) before it is
printed: tables, plans, prompts and error messages. JSON output is `exporting.json_text`.
Every failure is one `error: …` line on stderr (with `--json`: one `{"error", "kind"}` object on
stdout) and one of the exit codes in `EXIT_CODES`.
"""

from __future__ import annotations

import argparse
import difflib
import errno
import os
import re
import shlex
import sys
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from hermes_tui import cli_live
from hermes_tui import state as _state
from hermes_tui.exporting import (
    iso,
    json_text,
    make_private_dirs,
    markdown_filenames,
    sha256_text,
    to_json,
    to_jsonl,
    to_markdown,
    write_export,
)
from hermes_tui.formatting import format_cost, format_size, plural, row_cost
from hermes_tui.safe_text import as_text, cell_width, fit_cells, inert, one_line
from hermes_tui.state import (
    TRASH_MAX_BYTES,
    TRASH_RETENTION_S,
    FeatureUnavailable,
    Federation,
    IntegrityError,
    InvalidArgument,
    LockTimeout,
    NotADatabaseError,
    ProfileError,
    ReadOnlyError,
    SessionDB,
    SessionFilter,
    SessionNotFound,
    StoreError,
    StoreRef,
    StoreStatus,
    StructureLocked,
    TitleError,
    TrashEntryNotFound,
    content_text,
    default_db_path,
    discover_stores,
    open_stores,
    tool_call_fields,
)

DEFAULT_PRUNE_DAYS = 90
ORDERS = ("last_active", "started", "messages", "tokens", "cost")
#: The reversible flag verbs: (flag, value, past tense, the state "already" names).
FLAG_COMMANDS: dict[str, tuple[str, bool, str, str]] = {
    "archive": ("archived", True, "Archived", "archived"),
    "unarchive": ("archived", False, "Unarchived", "not archived"),
    "pin": ("pinned", True, "Pinned", "pinned"),
    "unpin": ("pinned", False, "Unpinned", "not pinned"),
}
WRITE_COMMANDS = frozenset({"rename", "prune", "delete", *FLAG_COMMANDS})
#: Commands that read several profiles' stores at once with --all / --profile NAME (repeatable).
PROFILE_COMMANDS = frozenset(
    {"list", "search", "show", "stats", "export", "prune", "tail", "watch", *FLAG_COMMANDS}
)
#: Commands that change one session: --profile NAME picks their one store; --all is refused.
ONE_STORE_COMMANDS = frozenset({"rename", "delete"})
TRASH_WRITE_COMMANDS = frozenset({"restore", "empty"})
EXPORT_FORMATS = ("json", "jsonl", "md")
DEFAULT_EXPORT_FORMAT = "jsonl"
#: The export format an `-o` file's extension names when `--format` is not given.
_FORMAT_OF_SUFFIX = {".json": "json", ".jsonl": "jsonl", ".md": "md", ".markdown": "md"}
SHOW_TEXT_LIMIT = 100_000  # characters of one message `show` prints (--full: all of it)
CANDIDATES_SHOWN = 8
_DURATION_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*$", re.IGNORECASE)
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400, "": 86400}

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
    "interrupted": 130,
}

EPILOG = """\
session references (ID):
  an exact id, a unique id prefix, or an exact title. Commands that change or export
  sessions accept nothing else: a reference matching no session, or several, is an error
  that lists the candidates. `show` also resolves a title the way `hermes --resume` does
  (the newest session of a numbered family "T", "T #2", …) and says which one it chose.

profiles (--all, --profile NAME):
  list, search, show, stats, export, prune, archive, unarchive, pin, unpin, tail and watch
  read every discovered store with --all (the default profile $HERMES_HOME/state.db or
  ~/.hermes/state.db, and profiles/<name>/state.db), or the named ones with --profile NAME
  (repeatable; on show the option is --all-profiles, as --all there means inactive
  messages). rename and delete take
  --profile NAME (one store) and refuse --all. Ids are unique only within a store: a reference
  matching sessions in several stores is ambiguous; write it PROFILE:ID (PROFILE:TITLE,
  PROFILE:PREFIX), where an explicit PROFILE: wins over the same text read as a plain
  reference. With profiles, --json documents are objects whose records carry a "profile"
  field, plus an "errors" list; a store that cannot be read prints one `warning:` line
  (stderr) and the others still answer. tail and watch stream: every JSON event carries its
  "profile", watch names sessions PROFILE:ID when several stores are open, and a store that
  fails is a `warning:` line (with --json an {"type": "error", ...} event) while the others
  keep streaming. --db PATH is one store and cannot be combined with them.

exit codes (with --json, errors are {"error": "...", "kind": "..."} on stdout):
  0    ok
  1    error: a store or I/O error, disk full, or an internal error (kind: error, io,
       disk_full, internal; HERMES_TUI_DEBUG=1 prints the traceback)
  2    usage: bad options or arguments (kind: usage)
  3    not found: no database at the path, or no such session (kind: not_found)
  4    refused: read-only file or --read-only, no confirmation, declined, an existing file
       would be overwritten, or the store has no column for it (pin on a store written by
       hermes-agent 0.19.0) (kind: read_only, refused)
  5    another process held the write lock too long (kind: locked)
  6    the file is not a Hermes session store: empty, a folder, not SQLite, or SQLite
       without the sessions tables (kind: not_a_database)
  7    ambiguous session reference (kind: ambiguous)
  8    invalid value: a title too long or held by another session (kind: invalid)
       (trash restore exits 0 when sessions conflict: each is reported, nothing live is overwritten)
       (a damaged trash entry: trash show/restore of it exit 1 with the reason; list and empty
       warn on stderr, list it as damaged, and go on)
  9    repair: the store is damaged (--check), or it could not be repaired (it was left exactly
       as it was) (kind: damaged; with --json the diagnosis/repair report is printed instead)
  130  interrupted (kind: interrupted)
"""


class CliError(Exception):
    """An error to report as one `error: <message>` line and exit with `EXIT_CODES[kind]`."""

    def __init__(self, message: str, kind: str = "error") -> None:
        super().__init__(message)
        self.kind = kind if kind in EXIT_CODES else "error"


class UsageError(CliError):
    """A bad option value found after parsing (exit code 2)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, "usage")


# ---------------------------------------------------------------- value parsing
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


#: `prune`'s range filters: each is a `--min-NAME`/`--max-NAME` option and the store's `min_NAME`/`max_NAME`.
_PRUNE_RANGES: tuple[tuple[str, Callable[[str], Any]], ...] = (
    ("messages", non_negative_int),
    ("tokens", non_negative_int),
    ("cost", non_negative_float),
    ("tool_calls", non_negative_int),
)


# ---------------------------------------------------------------- parser
#: argparse's words for a value outside an option's (or a subcommand's) choices.
_INVALID_CHOICE_RE = re.compile(r"invalid choice: (['\"]?)(?P<bad>.*?)\1 \(choose from (?P<choices>.*)\)$")


def did_you_mean(word: str, choices: Sequence[str]) -> str:
    """`; did you mean 'list'?` when one of `choices` is close to the mistyped `word`, else ''."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


class _Parser(argparse.ArgumentParser):
    """Raises instead of printing and exiting, so `main()` reports a usage error like any other
    (one line, or a JSON object with --json) and returns the code in-process. A mistyped
    subcommand or choice gets the nearest valid one (`sessions lsit` → did you mean 'list'?)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        m = _INVALID_CHOICE_RE.search(message)
        if m:
            choices = [c.strip().strip("'\"") for c in m.group("choices").split(",")]
            message += did_you_mean(m.group("bad"), choices)
        raise UsageError(f"{message} (see: {self.prog} --help)")


def _add_globals(p: argparse.ArgumentParser, suppress: bool) -> None:
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


def _add_profile_opts(
    p: argparse.ArgumentParser, all_flags: Sequence[str] = ("--all", "--all-profiles")
) -> None:
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


def _add_list_filters(p: argparse.ArgumentParser) -> None:
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


def _confirm_opts(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dry-run", action="store_true", help="show what would be deleted and stop")
    p.add_argument("-y", "--yes", action="store_true", help="do not ask for confirmation")


def parse_megabytes(text: str) -> int:
    """`500` (MB) → bytes."""
    return int(non_negative_float(text) * 1024 * 1024)


def _retention_opts(p: argparse.ArgumentParser) -> None:
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


def _trash_opts(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--no-trash",
        action="store_true",
        help="delete for good: write no trash entry (the default keeps one to restore)",
    )
    _retention_opts(p)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="hermes-tui sessions",
        description="Headless session commands (the browser's twin).",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_globals(parser, suppress=False)
    parser.set_defaults(usage_parser=parser)  # bare `sessions` prints this parser's help (main)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    def cmd(name: str, help_: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_, description=help_)
        _add_globals(p, suppress=True)
        return p

    p = cmd("list", "List sessions as Hermes lists them, most recently active first.")
    _add_profile_opts(p)
    _add_list_filters(p)
    p.add_argument("--limit", type=non_negative_int, default=50, help="at most N rows (0 = all; default 50)")
    p.add_argument(
        "--archived",
        action="store_true",
        help="only archived sessions (hidden ones too, as Hermes' archived view lists them)",
    )
    p.add_argument(
        "--include-hidden", action="store_true", help="also list hidden sessions (e.g. Bot Mode's chat)"
    )

    p = cmd("show", "Show one session: metadata, lineage and messages.")
    p.add_argument(
        "session",
        metavar="ID",
        help="session id, unique id prefix, or title (a numbered family's newest, like --resume)",
    )
    p.add_argument(
        "--all",
        action="store_true",
        help="every stored row: rewound/archived (inactive) ones, Hermes' hidden rows, compaction copies",
    )
    p.add_argument(
        "--full",
        action="store_true",
        help=f"print every message in full (default: the first {SHOW_TEXT_LIMIT:,} characters)",
    )
    _add_profile_opts(p, ("--all-profiles",))

    p = cmd("search", "Full-text search over messages.")
    _add_profile_opts(p)
    p.add_argument("query", metavar="QUERY")
    p.add_argument("--source", action="append", default=[], help="only this source (repeatable)")
    p.add_argument("--role", action="append", default=[], help="only this role (repeatable)")
    p.add_argument("--limit", type=non_negative_int, default=20)
    p.add_argument("--sort", choices=("newest", "oldest", "rank"), default="rank")

    p = cmd("rename", "Set a session's title (--clear removes it).")
    p.add_argument("session", metavar="ID", help="session id, unique id prefix, or exact title")
    p.add_argument("title", metavar="TITLE", nargs="*", help="the new title (several words are joined)")
    p.add_argument("--clear", action="store_true", help="remove the title (instead of giving one)")
    _add_profile_opts(p)

    p = cmd("prune", "Delete ended sessions matching filters (bare prune: older than 90 days).")
    _add_profile_opts(p)
    p.add_argument(
        "--older-than",
        type=parse_duration,
        metavar="AGE",
        help="last active more than AGE ago (5h, 2d, 1w, or days); a store without activity times"
        " (hermes-agent 0.19.0's) counts from the start",
    )
    p.add_argument(
        "--newer-than",
        type=parse_duration,
        metavar="AGE",
        help="last active less than AGE ago (without activity times: started)",
    )
    p.add_argument("--before", type=parse_iso, metavar="DATE", help="started before DATE (ISO, UTC)")
    p.add_argument("--after", type=parse_iso, metavar="DATE", help="started at/after DATE (ISO, UTC)")
    p.add_argument("--source")
    p.add_argument(
        "--title", metavar="ID", help="only this session: its id, a unique id prefix, or its exact title"
    )
    p.add_argument("--title-contains", metavar="TEXT", help="title contains TEXT (case-insensitive)")
    p.add_argument("--end-reason")
    p.add_argument("--model", help="model contains (case-insensitive)")
    for name, typ in _PRUNE_RANGES:
        for bound in ("min", "max"):
            p.add_argument(f"--{bound}-{name.replace('_', '-')}", type=typ)
    p.add_argument("--include-archived", action="store_true", help="archived sessions are candidates too")
    p.add_argument(
        "--export-before", type=Path, metavar="PATH", help="write a JSONL export of the sessions first"
    )
    p.add_argument("--force", action="store_true", help="let --export-before replace an existing file")
    _confirm_opts(p)
    _trash_opts(p)

    p = cmd("delete", "Delete sessions (their delegate subagents cascade; other children are orphaned).")
    p.add_argument("sessions", metavar="ID", nargs="+", help="session id, unique id prefix, or exact title")
    _add_profile_opts(p)
    _confirm_opts(p)
    _trash_opts(p)

    for name, help_ in (
        (
            "archive",
            "Archive sessions with their compression lineage: out of Hermes' lists, nothing deleted.",
        ),
        ("unarchive", "Bring archived sessions (and their compression lineage) back into the lists."),
        ("pin", "Pin sessions with their compression lineage: kept by prune, listed first."),
        ("unpin", "Unpin sessions (and their compression lineage)."),
    ):
        p = cmd(name, help_)
        p.add_argument(
            "sessions", metavar="ID", nargs="+", help="session id, unique id prefix, or exact title"
        )
        _add_profile_opts(p)

    p = cmd("export", "Export sessions as JSON, JSONL or Markdown.")
    p.add_argument(
        "sessions",
        metavar="ID",
        nargs="*",
        help="sessions to export (none: every session matching the filters)",
    )
    p.add_argument(
        "--format",
        choices=EXPORT_FORMATS,
        default=None,
        help=f"json (one array), jsonl (one session per line) or md (Markdown). Default: from the -o"
        f" file's extension ({', '.join(_FORMAT_OF_SUFFIX)}), {DEFAULT_EXPORT_FORMAT} on stdout;"
        " any other -o needs --format",
    )
    _add_profile_opts(p)
    p.add_argument(
        "--lineage",
        action="store_true",
        help="export each session's whole compression chain (root to live tip) as one session",
    )
    _add_list_filters(p)
    p.add_argument(
        "--limit", type=non_negative_int, default=0, help="with filters: at most N sessions (0 = all)"
    )
    p.add_argument(
        "-o",
        "--output",
        metavar="PATH",
        help="file ('-' = stdout, the default for json/jsonl); md: a file for one session, a"
        " directory (with manifest.jsonl) for several or when PATH is a directory",
    )
    p.add_argument("--force", action="store_true", help="replace existing files")

    p = cmd("stats", "Totals, usage by source and model, costliest sessions and chains, activity, health.")
    p.add_argument("--days", type=non_negative_int, default=30, help="days of activity to chart (default 30)")
    p.add_argument("--top", type=non_negative_int, default=10, help="rows in the costliest lists")
    _add_profile_opts(p)

    p = cmd("repair", "Check a damaged store (--check) or back it up and repair it, keeping every session.")
    p.add_argument(
        "--check", action="store_true", help="only diagnose (read-only): exit 0 when healthy, 9 when damaged"
    )
    p.add_argument(
        "--backup-dir", type=Path, metavar="DIR", help="where the backup goes (default: beside the store)"
    )
    p.add_argument("-y", "--yes", action="store_true", help="do not ask for confirmation")

    p = cmd("tail", cli_live.TAIL_HELP)
    cli_live.add_tail_args(p)
    _add_profile_opts(p)
    p = cmd("watch", cli_live.WATCH_HELP)
    cli_live.add_watch_args(p)
    _add_profile_opts(p)

    p = cmd("trash", "What delete and prune moved to the trash: list, show, restore or empty it.")
    p.set_defaults(usage_parser=p)  # bare `sessions trash` prints the trash help
    tsub = p.add_subparsers(dest="trash_command", metavar="ACTION", parser_class=_Parser)

    def tcmd(name: str, help_: str) -> argparse.ArgumentParser:
        tp = tsub.add_parser(name, help=help_, description=help_)
        _add_globals(tp, suppress=True)
        return tp

    tcmd("list", "Trash entries, newest first: when, what, how many, size, status.")
    tp = tcmd("show", "One entry: its sessions (id, title) and counts.")
    tp.add_argument("entry", metavar="ENTRY", help="entry id or a unique prefix of one")
    tp = tcmd("restore", "Bring an entry's sessions back (conflicts are reported, never overwritten).")
    tp.add_argument("entry", metavar="ENTRY", help="entry id or a unique prefix of one")
    tp = tcmd("empty", "Remove entries for good (all, or --older-than AGE, or --retention).")
    tp.add_argument("--older-than", type=parse_duration, metavar="AGE", help="only entries older than AGE")
    tp.add_argument(
        "--retention", action="store_true", help="apply the retention only (--trash-keep, --trash-max-mb)"
    )
    _retention_opts(tp)
    tp.add_argument("-y", "--yes", action="store_true", help="do not ask for confirmation")
    return parser


# ---------------------------------------------------------------- output helpers
def _out(text: str = "") -> None:
    """Print a line of plain output. Fields are made inert where they are formatted (so widths
    are right); this is the net under them: nothing printed here can drive the terminal."""
    print(inert(text))


def _emit_json(obj: Any) -> None:
    sys.stdout.write(json_text(obj, indent=2) + "\n")


def _err(text: str) -> None:
    print(inert(text), file=sys.stderr)


def _s(value: Any, width: int | None = None) -> str:
    """A store value inline: one line, inert, '' for None."""
    return one_line(value, width)


def _short_time(ts: Any) -> str:
    if ts is None:
        return "-"
    try:
        return datetime.fromtimestamp(float(ts), UTC).strftime("%Y-%m-%dT%H:%MZ")
    except (TypeError, ValueError, OverflowError, OSError):
        return one_line(ts, 24)


def _fmt_cost(value: Any) -> str:
    """A cost in a CLI table: the one cost formatter, to 1/100 cent (agent turns cost fractions
    of a cent; the browser's narrow columns show cents)."""
    return format_cost(value, places=4)


def _cell(value: Any, limit: int | None = None) -> str:
    """A table cell: one inert line, cut to `limit` terminal cells (CJK counts 2)."""
    text = one_line(value)
    if limit is not None and cell_width(text) > limit:
        text = fit_cells(text, limit).rstrip(" ")
    return text


def _table(
    headers: Sequence[str],
    rows: Sequence[Sequence[Any]],
    right: Sequence[int] = (),
    limits: dict[int, int] | None = None,
) -> str:
    """Columns aligned by terminal cells, not characters, so CJK titles line up."""
    limits = limits or {}
    cells = [[_cell(c, limits.get(i)) for i, c in enumerate(r)] for r in rows]
    widths = [max([cell_width(h)] + [cell_width(r[i]) for r in cells]) for i, h in enumerate(headers)]

    def pad(text: str, i: int) -> str:
        gap = " " * (widths[i] - cell_width(text))
        return gap + text if i in right else text + gap

    def line(vals: Sequence[str]) -> str:
        return "  ".join(pad(v, i) for i, v in enumerate(vals)).rstrip()

    return "\n".join([line(headers), line(["-" * w for w in widths])] + [line(r) for r in cells])


def _ident(row: dict[str, Any]) -> str:
    """`id “title”` for messages and prompts (inert; the title cut to 60 characters)."""
    title = row.get("title")
    return f"{_s(row.get('id'))} “{_s(title, 60)}”" if title else _s(row.get("id"))


# ---------------------------------------------------------------- opening
def _db_path(args: argparse.Namespace) -> Path:
    return Path(args.db or default_db_path()).expanduser()


def _precheck(path: Path) -> None:
    """Refuse what is certainly not a store before SQLite sees it (a stat, no descriptor: an
    open of an empty file read-write would make it a database)."""
    try:
        st = path.stat()
    except FileNotFoundError:
        raise CliError(f"no database at {path}", "not_found") from None
    except NotADirectoryError:
        raise CliError(f"no database at {path} (a parent is not a folder)", "not_found") from None
    except PermissionError:
        raise CliError(f"cannot read {path}: permission denied", "read_only") from None
    if path.is_dir():
        raise CliError(f"{path} is a directory, not a Hermes session store", "not_a_database")
    if st.st_size == 0:
        raise CliError(f"{path} is empty (0 bytes), not a Hermes session store", "not_a_database")


def _require_store(db: SessionDB, path: Path) -> None:
    if not db.columns("sessions") or not db.columns("messages"):
        raise CliError(
            f"{path} is an SQLite database but not a Hermes session store (no sessions/messages tables)",
            "not_a_database",
        )


def _writes_refused(command: str) -> CliError:
    """The one error for a command that writes, run with --read-only (exit code "read_only")."""
    return CliError(
        f"'{command}' writes to the database, but --read-only was given; nothing was changed", "read_only"
    )


def _open(args: argparse.Namespace, write: bool) -> SessionDB:
    path = _db_path(args)
    _precheck(path)
    if write and args.read_only:
        raise _writes_refused(args.command)
    db = _open_store(path, read_only=True)
    if not write:
        return db
    db.close()
    return _open_store(path, migrate=False)


def _open_store(path: Path, **options: bool) -> SessionDB:
    """`SessionDB(path, **options)`, closed again unless it is a Hermes session store."""
    db = SessionDB(path, **options)
    try:
        _require_store(db, path)
    except BaseException:
        db.close()
        raise
    return db


# ---------------------------------------------------------------- session references
@dataclass(frozen=True)
class Target:
    """A resolved session reference and how it was matched (for the `show` note)."""

    id: str
    title: str | None
    how: str  # "id" | "prefix" | "title" | "family"


def _candidates(db: SessionDB, ref: str, exclude: Sequence[str] = ()) -> list[dict[str, Any]]:
    ids = [i for i in db.session_order(SessionFilter.every_session(text=ref)).ids if i not in exclude]
    rows = db.list_rows(ids[:CANDIDATES_SHOWN]) if ids else []
    if len(ids) > CANDIDATES_SHOWN:
        rows.append({"id": f"… and {len(ids) - CANDIDATES_SHOWN} more", "title": None})
    return rows


def _listing(rows: Sequence[dict[str, Any]]) -> str:
    return "; ".join(_ident(r) for r in rows)


def _resolve_target(db: SessionDB, ref: str, *, family: bool = False) -> Target:
    """An exact id, else the one session whose id starts with `ref` or whose title is `ref`.

    Nothing fuzzy: with sessions "proj" and "proj #2", `proj` is "proj". Several matches (an id
    prefix shared by several ids, or a prefix of one and the title of another) are ambiguous.
    With `family` (show), a title also resolves like `hermes --resume`: the newest session of
    the numbered family "T", "T #2", ….
    """
    if not ref or not ref.strip():
        raise UsageError("empty session reference")
    row = db.get_session(ref)
    if row is not None:
        return Target(ref, row.get("title"), "id")
    prefixed = [i for i in db.session_order(SessionFilter.every_session(text=ref)).ids if i.startswith(ref)]
    titled = db.get_session_by_title(ref)
    family_id = db.resolve_session_by_title(ref) if family else None
    if family_id and titled is not None and family_id == titled["id"]:
        family_id = None
    found: dict[str, str] = {}
    for sid in prefixed:
        found.setdefault(sid, "prefix")
    if titled is not None:
        found[titled["id"]] = "title"
    if family_id:
        found = {
            k: v for k, v in found.items() if v == "prefix"
        }  # the family's newest replaces the exact title
        found.setdefault(family_id, "family")
    if len(found) == 1:
        ((sid, how),) = found.items()
        row = titled if titled is not None and titled["id"] == sid else db.get_session(sid)
        return Target(sid, (row or {}).get("title"), how)
    if found:
        rows = db.list_rows(list(found)[:CANDIDATES_SHOWN])
        raise CliError(
            f"{ref!r} is ambiguous: it matches {len(found)} sessions: {_listing(rows)}"
            + (" …" if len(found) > CANDIDATES_SHOWN else ""),
            "ambiguous",
        )
    near = _candidates(db, ref)
    hint = f"; sessions whose id or title contains it: {_listing(near)}" if near else ""
    raise CliError(
        f"no session is {ref!r} (not an id, a unique id prefix, or an exact title){hint}", "not_found"
    )


def _resolve(db: SessionDB, ref: str) -> str:
    return _resolve_target(db, ref).id


def _list_filter(args: argparse.Namespace) -> SessionFilter:
    """`list`: Hermes' own list (`--archived`: its archived view; `--include-hidden`)."""
    return SessionFilter(
        sources=tuple(args.source or ()),
        models=tuple(args.model or ()),
        started_after=args.after,
        started_before=args.before,
        archived="only" if getattr(args, "archived", False) else "exclude",
        include_hidden=bool(getattr(args, "include_hidden", False)),
    )


def _export_filter(args: argparse.Namespace) -> SessionFilter:
    """`export` without ids: every session matching the filters, archived, hidden and child
    sessions included (an export is a copy, not a view)."""
    return SessionFilter.every_session(
        sources=tuple(args.source or ()),
        models=tuple(args.model or ()),
        started_after=args.after,
        started_before=args.before,
    )


def _confirm(args: argparse.Namespace, question: str, verb: str = "delete") -> bool:
    """True to go ahead. `--yes` skips the question; without a terminal we refuse."""
    if args.yes:
        return True
    stdin = sys.stdin
    if stdin is None or not stdin.isatty():
        raise CliError(
            f"refusing to {verb} without confirmation: stdin is not a terminal (pass --yes)", "refused"
        )
    sys.stderr.write(f"{inert(question, newlines=False)} [y/N] ")
    sys.stderr.flush()
    answer = stdin.readline().strip().lower()
    return answer in ("y", "yes")


def _delete_question(rows: Sequence[dict[str, Any]], extra: int) -> str:
    """The prompt names what goes: `Delete session ID “title”?`, or the count and the first few."""
    more = f" and {plural(extra, 'delegate subagent session')}" if extra else ""
    if len(rows) == 1:
        return f"Delete session {_ident(rows[0])}{more}?"
    shown = ", ".join(_ident(r) for r in rows[:3]) + (", …" if len(rows) > 3 else "")
    return f"Delete {plural(len(rows) + extra, 'session')} ({shown}{more})?"


def _progress_printer(enabled: bool) -> Callable[[int, int], None] | None:
    if not enabled:
        return None

    def progress(done: int, total: int) -> None:
        if total:
            sys.stderr.write(f"\rdeleting… {done}/{total}")
            if done >= total:
                sys.stderr.write("\n")
            sys.stderr.flush()

    return progress


# ---------------------------------------------------------------- commands
def cmd_list(db: SessionDB, args: argparse.Namespace) -> int:
    order = db.session_order(_list_filter(args), order=args.order)
    ids = order.ids if not args.limit else order.ids[: args.limit]
    rows = db.list_rows(ids)
    if args.json:
        _emit_json(rows)
        return 0
    if not rows:
        _out("No sessions match.")
        return 0
    _out(_list_table(rows, with_profile=False))
    more = len(order) - len(rows)
    _out(
        f"\n{len(rows):,} of {plural(len(order), 'session')}"
        + (f" ({more:,} more: raise --limit)" if more > 0 else "")
    )
    return 0


#: The list's marks column: pinned, unread, archived, hidden (legend printed under the table).
ROW_MARKS = (("pinned", "*"), ("unread", "●"), ("archived", "a"), ("hidden", "h"))
MARKS_LEGEND = "* pinned  ● unread  a archived  h hidden"


def _marks(row: dict[str, Any]) -> str:
    return "".join(mark for key, mark in ROW_MARKS if row.get(key))


def _list_table(rows: Sequence[dict[str, Any]], with_profile: bool) -> str:
    """The list as a table; a marks column (and its legend) only when a row has a mark."""
    marked = any(_marks(r) for r in rows)
    table = [
        (
            *((r.get("profile"),) if with_profile else ()),
            *((_marks(r),) if marked else ()),
            r["id"],
            r.get("title") or r.get("preview") or "",
            r.get("source") or "-",
            r.get("model") or "-",
            r.get("message_count") or 0,
            (r.get("input_tokens") or 0) + (r.get("output_tokens") or 0),
            _fmt_cost(row_cost(r)),
            _short_time(r.get("last_active")),
        )
        for r in rows
    ]
    shift = (1 if with_profile else 0) + (1 if marked else 0)
    headers = ("ID", "TITLE / PREVIEW", "SOURCE", "MODEL", "MSGS", "TOKENS", "COST", "LAST ACTIVE")
    return _table(
        (("PROFILE",) if with_profile else ()) + (("",) if marked else ()) + headers,
        table,
        right=tuple(i + shift for i in (4, 5, 6)),
        limits=({0: 24} if with_profile else {}) | {i + shift: w for i, w in ((1, 40), (2, 16), (3, 24))},
    ) + (f"\n{MARKS_LEGEND}" if marked else "")


def _tool_calls(value: Any) -> list[Any]:
    """`tool_calls` as a list whatever the store handed back (a list, one dict, raw text)."""
    if value is None or value == "" or value == []:
        return []
    if isinstance(value, list):
        return value
    return [value]


def _message_lines(msg: dict[str, Any], full: bool = False) -> list[str]:
    head = f"[#{_s(msg.get('id'))}] {_s(msg.get('role'), 40)}"
    if msg.get("tool_name"):
        head += f" ({_s(msg['tool_name'], 80)})"
    head += f"  {_short_time(msg.get('timestamp'))}"
    if msg.get("active") == 0:
        head += "  [compacted]" if msg.get("compacted") == 1 else "  [inactive]"
    if msg.get("display_kind") == "hidden":
        head += "  [hidden]"
    lines = [head]
    reasoning = msg.get("reasoning") or msg.get("reasoning_content")
    if reasoning:
        lines.append("  (reasoning) " + _s(reasoning, 200))
    text = content_text(msg.get("content"))
    cut = 0
    if not full and len(text) > SHOW_TEXT_LIMIT:
        cut = len(text) - SHOW_TEXT_LIMIT
        text = text[:SHOW_TEXT_LIMIT]
    if text:
        lines += ["  " + ln for ln in inert(text).splitlines()]
    if cut:
        lines.append(f"  [… {plural(cut, 'more character')}: use --full, --json or export]")
    for call in _tool_calls(msg.get("tool_calls")):
        if isinstance(call, dict):
            name, arguments = tool_call_fields(call)
            if not isinstance(arguments, str):
                arguments = json_text(arguments)
            lines.append(f"  → tool call {_s(name or 'tool', 80)}({_s(arguments, 200)})")
        else:
            lines.append(f"  → tool call {_s(as_text(call), 200)}")
    return lines


_HOW = {
    "prefix": "the only session whose id starts with {ref}",
    "title": "the session titled {ref}",
    "family": "the newest session of the {ref} title family (as `hermes --resume` picks it)",
}


def cmd_show(
    db: SessionDB, args: argparse.Namespace, target: Target | None = None, profile: str | None = None
) -> int:
    """`show`; with profiles, `target` was resolved across the stores and `profile` owns it."""
    target = target or _resolve_target(db, args.session, family=True)
    sid = target.id
    session = db.get_session(sid)
    if session is None:
        raise SessionNotFound(f"no session with id {sid!r}")
    if target.how != "id":
        # Said on stderr so stdout stays the session (and valid JSON with --json).
        _err(f"note: showing {_ident(session)}: {_HOW[target.how].format(ref=repr(args.session))}")
    lineage = db.get_lineage(sid)
    # What a person sees (Hermes' display groups where the file keeps them); --all: every row.
    messages = db.get_messages(sid, include_inactive=True) if args.all else db.display_messages(sid)
    listed = (db.list_rows([sid]) or [{}])[0]
    # What the list shows: Hermes' "last active" and unread, the flags as 0/1.
    from_list = ("last_active", "unread", "archived", "hidden", "pinned")
    session = {**session, **{k: listed[k] for k in from_list if k in listed}}
    if args.json:
        _emit_json(
            {
                **({"profile": profile} if profile is not None else {}),
                "session": session,
                "lineage": lineage,
                "messages": messages,
            }
        )
        return 0
    fields = [
        ("profile", profile),
        ("id", session["id"]),
        ("title", session.get("title")),
        ("source", session.get("source")),
        ("model", session.get("model")),
        ("flags", ", ".join(key for key, _mark in ROW_MARKS if session.get(key))),
        ("started", iso(session.get("started_at"))),
        ("last active", iso(session.get("last_active"))),
        ("activity", session.get("last_activity_description")),
        ("ended", iso(session.get("ended_at"))),
        ("end reason", session.get("end_reason")),
        ("parent", session.get("parent_session_id")),
        ("messages", session.get("message_count")),
        ("tool calls", session.get("tool_call_count")),
        ("tokens", f"{session.get('input_tokens') or 0} in / {session.get('output_tokens') or 0} out"),
        ("cost", _fmt_cost(row_cost(session))),
        ("cwd", session.get("cwd")),
    ]
    for k, v in fields:
        if v not in (None, ""):
            _out(f"{k + ':':<12} {_s(v)}")
    nodes = lineage.get("nodes") or []
    if len(nodes) > 1:
        _out("\nLineage:")
        for node in nodes:
            marks = []
            if node.get("is_self"):
                marks.append("this")
            if node.get("is_tip"):
                marks.append("tip")
            kind = _s(node.get("edge_kind")) or "root"
            label = _s(node["id"]) + (f" “{_s(node['title'], 60)}”" if node.get("title") else "")
            _out(
                f"  {'  ' * int(node.get('depth') or 0)}{'* ' if node.get('is_self') else '- '}{label} "
                f"[{kind}]"
                f" {node.get('message_count') or 0} msgs" + (f" ({', '.join(marks)})" if marks else "")
            )
    prompt = content_text(session.get("system_prompt"))
    if prompt:
        _out(f"\nSystem prompt ({plural(len(prompt), 'character')}):")
        shown = prompt if args.full or len(prompt) <= SHOW_TEXT_LIMIT else prompt[:SHOW_TEXT_LIMIT]
        for ln in inert(shown).splitlines():
            _out("  " + ln)
        if len(shown) < len(prompt):
            _out(f"  [… {plural(len(prompt) - len(shown), 'more character')}: use --full, --json or export]")
    hidden = 0 if args.all else sum(1 for m in messages if m.get("display_kind") == "hidden")
    seen = messages if args.all else [m for m in messages if m.get("display_kind") != "hidden"]
    _out(f"\nMessages ({len(seen)}{', including inactive' if args.all else ''}):")
    for msg in seen:
        _out("")
        for ln in _message_lines(msg, full=args.full):
            _out(ln)
    if hidden:
        why = "model-facing, Hermes never shows them; --all shows every row"
        _out(f"\n({plural(hidden, 'hidden row')} not shown: {why})")
    return 0


def _print_hit(hit: dict[str, Any], session: str) -> None:
    """One search hit as `search` prints it, for one store or several (`session` names where it is)."""
    _out("")
    _out(
        f"#{_s(hit.get('id'))}  {session}  {_s(hit.get('role'), 40)}"
        f"  {_short_time(hit.get('timestamp'))}  [{_s(hit.get('source'), 40)}]"
    )
    _out("  " + _s(hit.get("snippet"), 400))


def cmd_search(db: SessionDB, args: argparse.Namespace) -> int:
    outcome = db.search(
        args.query,
        source_filter=list(args.source) or None,
        role_filter=list(args.role) or None,
        limit=args.limit or 20,
        sort=None if args.sort == "rank" else args.sort,
    )
    if args.json:
        _emit_json({"route": outcome.route, "query": outcome.query, "results": outcome.results})
        return 0
    _out(f"route: {outcome.route}  ({plural(len(outcome.results), 'hit')})")
    for hit in outcome.results:
        _print_hit(hit, _s(hit.get("session_id")))
    return 0


def _rename_title(args: argparse.Namespace) -> str:
    """The new title, or '' with --clear; a missing or blank title is a usage error, so a
    slip (`rename ID` alone, an empty variable) never clears a title."""
    title = " ".join(args.title)
    if args.clear:
        if title:
            raise UsageError("give either a new title or --clear, not both")
        return ""
    if not args.title:
        raise UsageError("rename needs the new title (to remove the title, pass --clear)")
    if not title.strip():
        raise UsageError("the new title is empty (to remove the title, pass --clear)")
    return title


def cmd_rename(db: SessionDB, args: argparse.Namespace) -> int:
    title = _rename_title(args)
    target = _resolve_target(db, args.session)
    sid = target.id
    check = db.check_title(sid, title)
    if not check["ok"]:
        msg = check.get("error") or "invalid title"
        if check.get("holder"):  # the store's message names the holder; add where it is from
            holder = db.get_session(check["holder"]) or {"id": check["holder"]}
            msg += f" ({_s(holder.get('source')) or '?'}, started {_s(iso(holder.get('started_at'))) or '?'})"
        raise CliError(msg, "invalid")
    db.set_session_title(sid, title)
    new = db.get_session_title(sid)
    if args.json:
        _emit_json(
            {**_profile_field(args), "id": sid, "title": new, "transfer_from": check.get("transfer_from")}
        )
        return 0
    if new is None:
        _out(f"Cleared the title of {_ident({'id': sid, 'title': target.title})}.")
    else:
        _out(f"Renamed {_s(sid)} to “{_s(new)}”" + (f" (was “{_s(target.title)}”)." if target.title else "."))
    if check.get("transfer_from"):
        _out(f"(the title moved from its compression ancestor {_s(check['transfer_from'])})")
    return 0


def _flag_targets(db: SessionDB, refs: Sequence[str]) -> list[Target]:
    """Every reference resolved before anything is written (one bad reference changes nothing)."""
    found: dict[str, Target] = {}
    for ref in refs:
        target = _resolve_target(db, ref)
        found.setdefault(target.id, target)
    return list(found.values())


def _set_flags(db: SessionDB, args: argparse.Namespace, targets: Sequence[Target]) -> dict[str, Any]:
    """`set_session_flags` of the resolved `targets`, each entry with its title (for the lines)."""
    flag, value, _verb, _state = FLAG_COMMANDS[args.command]
    result = db.set_session_flags([t.id for t in targets], flag, value)
    titles = {t.id: t.title for t in targets}
    for entry in result["sessions"]:
        entry["title"] = titles.get(entry["id"])
    return result


def _flag_line(args: argparse.Namespace, entry: dict[str, Any], profile: str | None = None) -> str:
    """What one archive/unarchive/pin/unpin did to a session and the rows of its lineage."""
    _flag, _value, verb, state = FLAG_COMMANDS[args.command]
    who = (f"{_s(profile)}:" if profile else "") + _ident(entry)
    if not entry["found"]:  # removed between the resolution and the write
        return f"{who}: no longer exists; nothing was changed."
    n, changed = len(entry["lineage"]), len(entry["changed"])
    if not changed:
        line = f"{who}: already {state}" + (
            f" (all {n} sessions of its compression lineage)" if n > 1 else ""
        )
    else:
        line = f"{verb} {who}" + (
            f" with its compression lineage ({changed} of {n} sessions changed)" if n > 1 else ""
        )
    if entry["unhidden"]:
        line += f"; {plural(len(entry['unhidden']), 'hidden session')} made visible"
    if entry["bot_chat"]:
        line += "; the bot's canonical Bot Chat stays hidden"
    return line + "."


def cmd_flag(db: SessionDB, args: argparse.Namespace) -> int:
    """archive | unarchive | pin | unpin REF...: reversible, so no trash and no confirmation."""
    result = _set_flags(db, args, _flag_targets(db, args.sessions))
    if args.json:
        _emit_json({**_profile_field(args), "action": args.command, **result})
        return 0
    for entry in result["sessions"]:
        _out(_flag_line(args, entry))
    return 0


def pcmd_flag(ctx: _Profiles, args: argparse.Namespace) -> int:
    """The flag verbs with --all/--profile: each reference resolved across the stores (PROFILE:ID),
    then each store's sessions changed on its thread; a store that fails is reported, the others
    are changed."""
    flag, value, _verb, _state = FLAG_COMMANDS[args.command]
    by_store: dict[str, dict[str, Target]] = {}
    for ref in args.sessions:
        profile, target = _resolve_across(ctx, ref)
        by_store.setdefault(profile, {}).setdefault(target.id, target)
    results: dict[str, dict[str, Any]] = {}
    errors: list[tuple[str, StoreError]] = []
    for profile, targets in by_store.items():
        try:
            results[profile] = ctx.fed.call(profile, _set_flags, args, list(targets.values()))
        except StoreError as exc:
            errors.append((profile, exc))
    ctx.failed([ProfileError.of(p, e) for p, e in errors])
    entries = [{"profile": p, **e} for p, r in results.items() for e in r["sessions"]]
    if args.json:
        _emit_json(
            {
                "action": args.command,
                "flag": flag,
                "value": value,
                "sessions": entries,
                "rows": sum(r["rows"] for r in results.values()),
                "changed": sum(r["changed"] for r in results.values()),
                "errors": _errors_json(ctx),
            }
        )
    else:
        for entry in entries:
            _out(_flag_line(args, entry, entry["profile"] if ctx.several else None))
    if errors:
        raise CliError(
            f"{args.command} failed in {', '.join(p for p, _e in errors)}: {errors[0][1]}"
            + (" (the other profiles were changed)" if results else ""),
            _store_error_kind(errors[0][1]),
        )
    return 0


def _prune_filters(
    args: argparse.Namespace, by_activity: bool = False
) -> tuple[float | None, str | None, dict[str, Any], bool]:
    """The store's prune filters. `--older-than`/`--newer-than` bound the last activity where the
    store has `last_activity_at` (`by_activity`, as today's Hermes' own prune reads them), the
    start time on older stores; `--before`/`--after` always bound the start time."""
    now = time.time()
    f: dict[str, Any] = {}
    # A duration ago and a date may bound one side of the same time: the stricter one wins.
    ages = ("last_active_before", "last_active_after") if by_activity else ("started_before", "started_after")
    for key, when, stricter in (
        (ages[0], None if args.older_than is None else now - args.older_than, min),
        (ages[1], None if args.newer_than is None else now - args.newer_than, max),
        ("started_before", args.before, min),
        ("started_after", args.after, max),
    ):
        if when is not None:
            f[key] = when if key not in f else stricter(f[key], when)
    for key, attr in (
        ("title_like", "title_contains"),
        ("end_reason", "end_reason"),
        ("model_like", "model"),
    ):
        if getattr(args, attr):
            f[key] = getattr(args, attr)
    for key in (f"{bound}_{name}" for name, _typ in _PRUNE_RANGES for bound in ("min", "max")):
        if getattr(args, key) is not None:
            f[key] = getattr(args, key)
    any_filter = bool(f) or bool(args.source) or bool(args.title)
    older = None if any_filter else DEFAULT_PRUNE_DAYS
    return older, args.source or None, f, any_filter


def _print_plan(plan: dict[str, Any], implicit: bool) -> None:
    if implicit:
        _out(f"No filters: pruning ended sessions older than {DEFAULT_PRUNE_DAYS} days.")
    n = plan["sessions"]
    _out(
        f"{plural(n, 'session')}, {plural(int(plan['messages'] or 0), 'message')} would be deleted"
        f" (about {format_size(plan['bytes_estimate'])} of the file)."
    )
    if n:
        _out(f"oldest: {iso(plan['oldest'])}   newest: {iso(plan['newest'])}")
        for c in plan["candidates"][:50]:
            _out(
                f"  - {_s(c['id'])}  {_s(c.get('source'), 40) or '-'}  {_short_time(c.get('started_at'))}"
                f"  {c.get('message_count') or 0} msgs  {_cell(c.get('title'), 40)}"
            )
        if n > 50:
            _out(f"  … and {n - 50} more")
    if plan["cascade_ids"]:
        _out(f"Delegate subagent sessions that go with them ({len(plan['cascade_ids'])}):")
        for c in plan["cascade"]:
            _out(_cascade_line(c))
    if plan["excluded"]:
        _out(f"Kept back ({len(plan['excluded'])}):")
        for e in plan["excluded"][:50]:
            _out(f"  = {_s(e['id'])}: {_s(e['reason'])}")


def _cascade_line(child: dict[str, Any]) -> str:
    """A delegate subagent session that goes with a deleted parent, as `prune` and `delete` list it."""
    return (
        f"  + {_s(child['id'])}  (child of {_s(child.get('parent_session_id'))},"
        f" {child.get('message_count') or 0} msgs)"
    )


def _profile_path(profile: str) -> Path:
    """The store file of a discovered profile (for restore hints)."""
    for ref in discover_stores(probe=False):
        if ref.profile == profile:
            return ref.path
    return Path(profile)


def _export_sessions_jsonl(db: SessionDB, ids: Sequence[str], path: Path, force: bool) -> int:
    exported = [s for s in (db.export_session(i) for i in ids) if s]
    write_export(path, to_jsonl(exported), force=force)
    return len(exported)


def _plan_for_one(db: SessionDB, plan: dict[str, Any], sid: str | None) -> dict[str, Any]:
    """`plan` cut down to the one session `prune --title` names (and its delegate children)."""
    candidates = [c for c in plan["candidates"] if c["id"] == sid]
    cascade_all = db.delegate_children([sid]) if candidates and sid is not None else []
    rows = db.list_rows(cascade_all) if cascade_all else []
    cascade = [r for r in rows if r.get("ended_at") is not None]
    messages = sum(int(c.get("message_count") or 0) for c in candidates + cascade)
    estimate = int(plan["bytes_estimate"] * messages / plan["messages"]) if plan["messages"] else 0
    return {
        **plan,
        "ids": [c["id"] for c in candidates],
        "sessions": len(candidates),
        "messages": messages,
        "oldest": candidates[0]["started_at"] if candidates else None,
        "newest": candidates[-1]["started_at"] if candidates else None,
        "bytes_estimate": estimate,
        "cascade_ids": [r["id"] for r in cascade],
        "cascade": cascade,
        "cascade_open": [r for r in rows if r.get("ended_at") is None],
        "candidates": candidates,
        "excluded": [e for e in plan["excluded"] if e["id"] == sid],
    }


def _prune_plan(
    db: SessionDB, args: argparse.Namespace, target: Target | None = None
) -> tuple[dict[str, Any], list[str], bool]:
    """The reviewed prune plan of one store: (plan, ids to delete incl. delegate children, any filter)."""
    older, source, filters, any_filter = _prune_filters(args, db.prunes_by_activity())
    if target is None and args.title:
        target = _resolve_target(db, args.title)
    if target is not None and target.title:
        # Narrows the scan; the plan is then cut to exactly this session (the LIKE also
        # matches "T #2", "my T", …).
        filters["title_like"] = target.title
    plan = db.plan_prune(
        older_than_days=older, source=source, include_archived=args.include_archived, **filters
    )
    if target is not None:
        # --title-contains still applies: a target whose title lacks the text is not a candidate.
        keeps = not args.title_contains or args.title_contains.lower() in (target.title or "").lower()
        plan = _plan_for_one(db, plan, target.id if keeps else None)
    to_delete = list(plan["ids"]) + [c for c in plan["cascade_ids"] if c not in set(plan["ids"])]
    return plan, to_delete, any_filter


def cmd_prune(db: SessionDB, args: argparse.Namespace) -> int:
    plan, to_delete, any_filter = _prune_plan(db, args)
    if not args.json:
        _print_plan(plan, implicit=not any_filter)
    if args.dry_run or not plan["ids"]:
        if args.json:
            _emit_json({"plan": plan, "result": None, "dry_run": bool(args.dry_run)})
        elif not plan["ids"]:
            _out("Nothing to prune.")
        else:
            _out("Dry run: nothing was deleted.")
        return 0
    if args.export_before is not None and args.export_before.exists() and not args.force:
        raise CliError(
            f"refusing to overwrite existing file {args.export_before} (use --force to replace it)", "refused"
        )
    if not _confirm(args, _delete_question(plan["candidates"], len(to_delete) - len(plan["ids"]))):
        raise CliError("not confirmed: nothing was deleted", "refused")
    exported = None
    if args.export_before is not None:
        exported = _export_sessions_jsonl(db, to_delete, args.export_before, args.force)
        if not args.json:
            _out(f"Exported {plural(exported, 'session')} to {args.export_before}.")
    # Exactly the reviewed rows: the candidates plus the delegate children the plan showed
    # (cascade_delegates=False, so a subagent created after the review is not swept along).
    result = _remove(db, args, to_delete, what="prune", require_ended=True)
    _report_removal(args, plan, result, exported=exported)
    return 0


def _remove(
    db: SessionDB, args: argparse.Namespace, ids: Sequence[str], *, what: str, require_ended: bool
) -> dict[str, Any]:
    """Delete exactly `ids` (no cascade: the caller reviewed them), through the trash unless --no-trash."""
    progress = _progress_printer(not args.json and sys.stderr.isatty())
    if args.no_trash:
        result = db.delete_sessions_batched(
            ids, cascade_delegates=False, require_ended=require_ended, progress=progress
        )
        return {**result, "trash_entry": None}
    db.trash_retention_s = args.trash_keep
    db.trash_max_bytes = args.trash_max_mb
    return db.trash_sessions(
        ids, what=what, cascade_delegates=False, require_ended=require_ended, progress=progress
    )


def _report_removal(
    args: argparse.Namespace, plan: dict[str, Any], result: dict[str, Any], **extra: Any
) -> None:
    """What a reviewed delete or prune did: one JSON document (`extra` after the result) or lines."""
    if args.json:
        _emit_json(
            {
                **_profile_field(args),
                "plan": plan,
                "result": result,
                **extra,
                "dry_run": False,
                "trash_entry": result.get("trash_entry"),
            }
        )
    else:
        _print_result(result, args)


def _restore_hint(args: argparse.Namespace, entry: str) -> str:
    db = f" --db {shlex.quote(str(args.db))}" if args.db else ""
    if getattr(args, "hint_profile", None):
        db = f" --db {shlex.quote(str(_profile_path(args.hint_profile)))}"
    return f"hermes-tui sessions{db} trash restore {entry}"


def _print_result(result: dict[str, Any], args: argparse.Namespace) -> None:
    _out(
        f"Deleted {result['deleted']:,} of {plural(result['requested'], 'session')}"
        f" in {plural(result['batches'], 'batch', 'batches')}."
    )
    if result.get("skipped"):
        _out(f"{result['skipped']} were kept: they changed (reopened or removed) after the review.")
    if result.get("cancelled"):
        _out("Cancelled before the end.")
    entry = result.get("trash_entry")
    if entry:
        _out(f"moved to trash: {entry} — restore with `{_restore_hint(args, entry)}`")
        removed = (result.get("retention") or {}).get("removed") or []
        if removed:
            _out(f"Trash retention removed {plural(len(removed), 'older entry', 'older entries')}.")
    elif args.no_trash and result.get("deleted"):
        _out("Deleted for good (--no-trash): these sessions cannot be restored.")


def _delete_plan(db: SessionDB, ids: Sequence[str]) -> dict[str, Any]:
    targets = [db.get_session(i) for i in ids]
    cascade: list[dict[str, Any]] = []
    orphaned: list[dict[str, Any]] = []
    chosen = set(ids)
    seen: set[str] = set()
    for sid in ids:
        delegate_ids = {sid}
        for d in db.get_descendants(sid):
            if d["id"] in chosen or d["id"] in seen:
                continue
            if d.get("edge_kind") == "delegate" and d.get("parent_session_id") in delegate_ids:
                delegate_ids.add(d["id"])
                cascade.append(d)
                seen.add(d["id"])
            elif d.get("parent_session_id") in delegate_ids:
                orphaned.append(d)
                seen.add(d["id"])
    doomed = chosen | {c["id"] for c in cascade}
    orphaned = [o for o in orphaned if o["id"] not in doomed]
    messages = sum(int(t.get("message_count") or 0) for t in targets if t) + sum(
        int(c.get("message_count") or 0) for c in cascade
    )
    return {
        "ids": list(ids),
        "sessions": [t for t in targets if t],
        "cascade": cascade,
        "cascade_ids": [c["id"] for c in cascade],
        "orphaned": orphaned,
        "orphaned_ids": [o["id"] for o in orphaned],
        "messages": messages,
    }


def cmd_delete(db: SessionDB, args: argparse.Namespace) -> int:
    ids = list(dict.fromkeys(_resolve(db, ref) for ref in args.sessions))
    plan = _delete_plan(db, ids)
    if not args.json:
        _out(f"{plural(len(ids), 'session')} ({plural(plan['messages'], 'message')} incl. cascades):")
        for row in plan["sessions"]:
            _out(
                f"  - {_s(row['id'])}  {_s(row.get('source'), 40) or '-'}  "
                f"{row.get('message_count') or 0} msgs"
                f"  {_cell(row.get('title'), 40)}"
                f"{'  [pinned]' if row.get('pinned') else ''}"  # honoured, but a pin is a keep flag
            )
        if plan["cascade"]:
            _out(f"Delegate subagent sessions deleted with them ({len(plan['cascade'])}):")
            for c in plan["cascade"]:
                _out(_cascade_line(c))
        if plan["orphaned"]:
            _out(f"Children kept as roots (orphaned) ({len(plan['orphaned'])}):")
            for o in plan["orphaned"]:
                _out(
                    f"  ~ {_s(o['id'])}  [{_s(o.get('edge_kind'))}] child of {_s(o.get('parent_session_id'))}"
                )
    if args.dry_run:
        if args.json:
            _emit_json({**_profile_field(args), "plan": plan, "result": None, "dry_run": True})
        else:
            _out("Dry run: nothing was deleted.")
        return 0
    if not _confirm(args, _delete_question(plan["sessions"], len(plan["cascade"]))):
        raise CliError("not confirmed: nothing was deleted", "refused")
    # Exactly what was shown: the ids plus the delegate children listed above. The store's own
    # cascade (cascade_delegates=True) also follows `_delegate_from` markers on rows whose
    # parent_session_id is not set, which get_descendants cannot preview; those are left alone.
    reviewed = ids + [c for c in plan["cascade_ids"] if c not in set(ids)]
    result = _remove(db, args, reviewed, what="delete", require_ended=False)
    _report_removal(args, plan, result)
    return 0


def _export_items(db: SessionDB, args: argparse.Namespace) -> Iterator[dict[str, Any]]:
    if args.sessions:
        ids = list(dict.fromkeys(_resolve(db, ref) for ref in args.sessions))
    else:
        ids = db.session_order(_export_filter(args), order=args.order).ids
        if args.limit:
            ids = ids[: args.limit]
    done: set[str] = set()
    display = args.format == "md"  # Markdown is read by a person: what Hermes shows
    for sid in ids:
        item = _export_one(db, sid, args.lineage, display)
        if not item:
            continue
        if args.lineage:
            key = tuple(item.get("lineage_session_ids") or [sid])
            if key in done:
                continue
            done.add(key)  # type: ignore[arg-type]
        yield item


def export_format(args: argparse.Namespace) -> str:
    """`--format`, else the one the `-o` file's extension names (`backup.json` is JSON, not the
    default JSONL under a misleading name); stdout gets the default. Any other `-o` without
    `--format` is a usage error rather than a guess."""
    if args.format:
        return str(args.format)
    out = args.output
    if not out or out == "-":
        return DEFAULT_EXPORT_FORMAT
    suffix = Path(out).suffix.lower()
    if suffix in _FORMAT_OF_SUFFIX:
        return _FORMAT_OF_SUFFIX[suffix]
    if Path(out).expanduser().is_dir():
        raise UsageError(f"{out!r} is a directory: give --format md to write one Markdown file per session")
    raise UsageError(
        f"cannot tell the export format from {out!r}: name the file {', '.join(_FORMAT_OF_SUFFIX)},"
        " or give --format json, jsonl or md"
    )


def cmd_export(db: SessionDB, args: argparse.Namespace) -> int:
    args.format = export_format(args)
    if args.format == "md" and (not args.output or args.output == "-"):
        raise UsageError("--format md writes files: give -o FILE.md for one session or -o DIRECTORY")
    # Resolve every id before writing anything, so a typo leaves no half export.
    return _write_items(args, list(_export_items(db, args)))


def _write_items(args: argparse.Namespace, items: list[dict[str, Any]]) -> int:
    """Write the gathered export `items` as `--format` asks (each with `profile` in profile mode)."""
    out = args.output
    if args.format == "md":
        if not out or out == "-":
            raise UsageError("--format md writes files: give -o FILE.md for one session or -o DIRECTORY")
        return _export_md(args, Path(out).expanduser(), items)
    chunks: Any = to_json(items) if args.format == "json" else to_jsonl(items)
    if not out or out == "-":
        if isinstance(chunks, str):
            sys.stdout.write(chunks)
        else:
            for c in chunks:
                sys.stdout.write(c)
        return 0
    path = write_export(out, chunks, force=args.force)
    summary = {"format": args.format, "path": str(path), "sessions": len(items)}
    if args.json:
        _emit_json(summary)
    else:
        _out(f"Exported {plural(len(items), 'session')} to {path}.")
    return 0


def _export_md(args: argparse.Namespace, target: Path, items: list[dict[str, Any]]) -> int:
    """One session → the file `target`; several (or `target` an existing folder) → one file each
    in that folder plus `manifest.jsonl`."""
    if target.is_dir():
        return _export_md_dir(args, target, items)
    if len(items) == 1:
        body = to_markdown(items[0])
        path = write_export(target, body, force=args.force)
        if args.json:
            _emit_json(
                {
                    "format": "md",
                    "path": str(path),
                    "sessions": 1,
                    "id": items[0].get("id"),
                    "bytes": len(body.encode("utf-8")),
                    "sha256": sha256_text(body),
                }
            )
        else:
            _out(f"Exported {_ident(items[0])} to {path}.")
        return 0
    if target.exists():
        raise CliError(
            f"{target} exists and is not a directory ({plural(len(items), 'session')} need a directory)",
            "refused",
        )
    if not items:
        raise CliError("no sessions match: nothing was written", "not_found")
    return _export_md_dir(args, target, items)


def _export_md_dir(args: argparse.Namespace, directory: Path, items: list[dict[str, Any]]) -> int:
    bodies = [
        (name, item, to_markdown(item)) for name, item in zip(markdown_filenames(items), items, strict=True)
    ]
    manifest_path = directory / "manifest.jsonl"
    if not args.force:
        clashes = [directory / name for name, _i, _b in bodies if (directory / name).exists()]
        if manifest_path.exists():
            clashes.append(manifest_path)
        if clashes:
            raise CliError(
                f"refusing to overwrite existing file {clashes[0]}"
                + (f" and {len(clashes) - 1} more" if len(clashes) > 1 else "")
                + " (use --force)",
                "refused",
            )
    make_private_dirs(directory)
    manifest = []
    for name, item, body in bodies:
        write_export(directory / name, body, force=args.force)
        manifest.append(
            {
                **({"profile": item["profile"]} if "profile" in item else {}),
                "file": name,
                "id": item.get("id"),
                "title": item.get("title"),
                "lineage_session_ids": item.get("lineage_session_ids") or [item.get("id")],
                "messages": len(item.get("messages") or []),
                "bytes": len(body.encode("utf-8")),
                "sha256": sha256_text(body),
            }
        )
    write_export(manifest_path, (json_text(m) + "\n" for m in manifest), force=args.force)
    if args.json:
        _emit_json(
            {
                "format": "md",
                "directory": str(directory),
                "sessions": len(manifest),
                "manifest": str(manifest_path),
                "files": manifest,
            }
        )
    else:
        _out(f"Exported {plural(len(manifest), 'session')} to {directory} (manifest: {manifest_path.name}).")
    return 0


def _bar(value: int, top: int, width: int = 40) -> str:
    if top <= 0 or value <= 0:
        return ""
    return "█" * max(1, round(width * value / top))


def _stats_data(db: SessionDB, args: argparse.Namespace) -> dict[str, Any]:
    return {
        "totals": db.totals(),
        "sessions_by_source": db.sessions_by_source(),
        "usage_by_model": db.usage_by_model(),
        "costliest_sessions": db.costliest_sessions(args.top),
        "costliest_chains": db.costliest_chains(args.top),
        "activity_by_day": db.activity_by_day(days=args.days),
        "store_health": db.store_health(),
    }


def cmd_stats(db: SessionDB, args: argparse.Namespace) -> int:
    data = _stats_data(db, args)
    if args.json:
        _emit_json(data)
        return 0
    _print_stats(data, args)
    return 0


def _titled_table(
    title: str,
    headers: Sequence[str],
    records: Sequence[dict[str, Any]],
    cells: Callable[[dict[str, Any]], Sequence[Any]],
    right: Sequence[int],
    limits: dict[int, int],
) -> None:
    """One section of `stats`: a blank line, its title, then a table of one row per record."""
    _out(f"\n{title}")
    _out(_table(headers, [cells(r) for r in records], right=right, limits=limits))


def _print_stats(data: dict[str, Any], args: argparse.Namespace) -> None:
    t = data["totals"]
    _out(
        f"Sessions: {t.get('sessions') or 0}   messages: {t.get('messages') or 0}   tokens: "
        f"{t.get('input_tokens') or 0} in / {t.get('output_tokens') or 0} out   cost: "
        f"{_fmt_cost(t.get('cost'))}"
    )
    _titled_table(
        "By source:",
        ("SOURCE", "SESSIONS", "MESSAGES", "TOKENS", "COST"),
        data["sessions_by_source"],
        lambda r: (r["source"], r["sessions"], r["messages"] or 0, r["tokens"] or 0, _fmt_cost(r["cost"])),
        right=(1, 2, 3, 4),
        limits={0: 40},
    )
    _titled_table(
        "By model:",
        ("MODEL", "SESSIONS", "INPUT", "OUTPUT", "COST"),
        data["usage_by_model"],
        lambda r: (
            r["model"],
            r["session_count"],
            r["total_input"] or 0,
            r["total_output"] or 0,
            _fmt_cost(r["total_cost"]),
        ),
        right=(1, 2, 3, 4),
        limits={0: 40},
    )
    _titled_table(
        "Costliest sessions:",
        ("ID", "TITLE", "SOURCE", "TOKENS", "COST"),
        data["costliest_sessions"],
        lambda r: (
            r["id"],
            r.get("title") or "",
            r.get("source") or "-",
            r.get("total_tokens") or 0,
            _fmt_cost(r["cost"]),
        ),
        right=(3, 4),
        limits={1: 40, 2: 16},
    )
    if data["costliest_chains"]:
        _titled_table(
            "Costliest chains (root and descendants):",
            ("ROOT", "TITLE", "SESSIONS", "MESSAGES", "TOKENS", "COST"),
            data["costliest_chains"],
            lambda r: (
                r["root_id"],
                r.get("title") or "",
                r["sessions"],
                r["messages"] or 0,
                r["tokens"] or 0,
                _fmt_cost(r["cost"]),
            ),
            right=(2, 3, 4, 5),
            limits={1: 40},
        )
    act = data["activity_by_day"]
    _out(f"\nActivity, last {args.days} days (messages per UTC day):")
    if not act:
        _out("  (none)")
    top = max((a["messages"] for a in act), default=0)
    for a in act:
        _out(
            f"  {_s(a['day'], 12)}  {_bar(a['messages'], top):<40}  {a['messages']} msgs, "
            f"{plural(int(a['sessions'] or 0), 'session')}"
        )
    h = data["store_health"]
    _out("\nStore health:")
    idx = (
        ", ".join(f"{_s(k)}={'?' if v is None else _s(v)}" for k, v in (h.get("index_rows") or {}).items())
        or "none"
    )
    _out(
        f"  schema v{h.get('schema_version')} (code v{h.get('code_schema_version')}), FTS layout "
        f"{h.get('fts_layout')},"
        f" trigram {'yes' if h.get('trigram') else 'no'}, CJK {h.get('cjk') or 'no'} ({h.get('cjk_index')})"
    )
    _out(f"  messages {h.get('messages')} ({h.get('messages_non_tool')} non-tool); index rows: {idx}")
    _out(
        f"  file {h.get('file_size', 0):,} bytes, WAL {h.get('wal_size', 0):,} bytes;"
        f" other writers: {len(h.get('other_writers') or [])}"
    )


# ---------------------------------------------------------------- repair
def _print_diagnosis(report: dict[str, Any]) -> None:
    n_s, n_m = report.get("sessions"), report.get("messages")
    counts = (
        f" ({plural(int(n_s), 'session')}, {plural(int(n_m or 0), 'message')})" if n_s is not None else ""
    )
    if report.get("healthy"):
        _out(f"{_s(report['path'])}: healthy{counts}.")
        return
    _out(f"{_s(report['path'])}: damaged{counts}.")
    if report.get("error"):
        _out(f"  ! {_s(report['error'])}")
    for problem in report.get("problems") or []:
        _out(f"  - {_s(problem)}")
    _out("  repairable by `sessions repair`: " + ("yes" if report.get("repairable") else "no"))


def cmd_repair(args: argparse.Namespace) -> int:
    """`repair`: never opens the store with SessionDB (a damaged store may not open at all);
    `diagnose` reads it read-only and `repair` backs it up before changing anything."""
    path = _db_path(args)
    _precheck(path)
    if args.check:
        report = _state.diagnose(path)
        if args.json:
            _emit_json(report)
        else:
            _print_diagnosis(report)
        return 0 if report.get("healthy") else EXIT_CODES["damaged"]
    if args.read_only:
        raise _writes_refused("repair")
    report = _state.diagnose(path)
    if report.get("healthy"):
        if args.json:
            _emit_json(
                {
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
            )
        else:
            _print_diagnosis(report)
            _out("Nothing to repair.")
        return 0
    if not args.json:
        _print_diagnosis(report)
    if not report.get("repairable"):
        reason = "; ".join(report.get("problems") or [])[:300] or report.get("error") or "unknown damage"
        raise CliError(
            f"{path} cannot be repaired automatically ({reason}); it was left exactly as it was", "damaged"
        )
    if not _confirm(args, f"Repair {path}? It is backed up first.", verb="repair"):
        raise CliError("not confirmed: nothing was changed", "refused")
    result = _state.repair(path, backup_dir=args.backup_dir)
    if args.json:
        _emit_json(result)
        return 0 if result.get("repaired") else EXIT_CODES["damaged"]
    if not result.get("repaired"):
        raise CliError(result.get("error") or "the repair failed; the file was left as it was", "damaged")
    for action in result.get("actions") or []:
        _out(f"  * {_s(action)}")
    if result.get("backup_path"):
        _out(f"backup: {_s(result['backup_path'])}")
    kept = plural(int(result.get("sessions") or 0), "session")
    _out(
        f"Repaired ({_s(result.get('strategy'))}): kept {kept},"
        f" {plural(int(result.get('messages') or 0), 'message')}."
    )
    return 0


# ---------------------------------------------------------------- trash
def _trash_report(db: SessionDB, *, entries: bool = True) -> dict[str, Any]:
    """`db.trash_report()`, each skipped item also one `warning:` line on stderr (the JSON
    documents carry them as `skipped`); `entries=False` warns of the refused folders only."""
    report = db.trash_report()
    _warn_skipped([s for s in report["skipped"] if entries or s["id"] is None])
    return report


def _warn_skipped(skipped: Sequence[dict[str, Any]]) -> None:
    for item in skipped:
        if item["id"] is None:
            _err(f"warning: trash folder {_s(item['path'])} skipped: {_s(item['reason'])}")
        else:
            _err(f"warning: trash entry {_s(item['id'])} is damaged and was skipped: {_s(item['reason'])}")


def _entry_ref(db: SessionDB, ref: str, entries: list[dict[str, Any]]) -> dict[str, Any]:
    """An entry id, or a unique prefix of one (exact targets, like session references)."""
    exact = [e for e in entries if e["id"] == ref]
    if exact:
        return exact[0]
    found = [e for e in entries if ref and e["id"].startswith(ref)]
    if len(found) == 1:
        return found[0]
    if not found:
        raise CliError(
            f"no trash entry {one_line(ref)!r} for {_db_path_shown(db)}"
            f" (see: hermes-tui sessions trash list)",
            "not_found",
        )
    shown = ", ".join(e["id"] for e in found[:CANDIDATES_SHOWN])
    more = f" and {len(found) - CANDIDATES_SHOWN} more" if len(found) > CANDIDATES_SHOWN else ""
    raise CliError(f"{one_line(ref)!r} matches {len(found)} trash entries: {shown}{more}", "ambiguous")


def _db_path_shown(db: SessionDB) -> str:
    return one_line(str(db.db_path))


def cmd_trash(db: SessionDB, args: argparse.Namespace) -> int:
    return TRASH_COMMANDS[args.trash_command](db, args)


def cmd_trash_list(db: SessionDB, args: argparse.Namespace) -> int:
    report = _trash_report(db)
    entries = report["entries"]
    if args.json:
        _emit_json(report)
        return 0
    if not entries:
        _out("The trash is empty.")
        return 0
    rows = [
        [
            e["id"],
            _short_time(e["created_at"]),
            e["what"] or "-",
            "-" if e["status"] == "damaged" else e["sessions"],
            "-" if e["status"] == "damaged" else e["messages"],
            format_size(e["bytes"]),
            e["status"],
            _s(e.get("reason")) or ", ".join(one_line(t) for t in e["titles"] if t),
        ]
        for e in entries
    ]
    _out(
        _table(
            ["ENTRY", "WHEN", "WHAT", "SESSIONS", "MESSAGES", "SIZE", "STATUS", "TITLES"],
            rows,
            right=(3, 4, 5),
            limits={7: 50},
        )
    )
    return 0


def cmd_trash_show(db: SessionDB, args: argparse.Namespace) -> int:
    report = db.trash_report()
    target = _entry_ref(db, args.entry, report["entries"])["id"]
    _warn_skipped([s for s in report["skipped"] if s["id"] != target])  # its own error says why
    entry = db.trash_entry(target)
    if args.json:
        _emit_json({**entry, "skipped": report["skipped"]})
        return 0
    deleted = entry.get("deleted_ids")
    gone = set(deleted) if isinstance(deleted, list) else None
    _out(f"entry:    {entry['id']}")
    _out(f"when:     {iso(entry.get('created_at'))}")
    _out(f"what:     {_s(entry.get('what'))}   status: {_s(entry.get('status'))}")
    counts = entry.get("counts") or {}
    _out(
        f"rows:     {', '.join(f'{_s(k)} {int(v)}' for k, v in counts.items())}   size: "
        f"{format_size(entry.get('bytes'))}"
    )
    _out(f"store:    {_s(entry.get('store'))}")
    _out(f"sessions ({len(entry.get('sessions') or [])}):")
    for srow in entry.get("sessions") or []:
        mark = " " if gone is None or srow.get("id") in gone else "="
        _out(f"  {mark} {_ident(srow)}")
    if gone is not None and len(gone) < len(entry.get("sessions") or []):
        _out("  (= kept by the delete: not in the trash's restore)")
    if entry.get("status") == "interrupted":
        _out("The delete was interrupted: restore brings back the sessions it removed.")
    return 0


def cmd_trash_restore(db: SessionDB, args: argparse.Namespace) -> int:
    report = db.trash_report()
    target = _entry_ref(db, args.entry, report["entries"])["id"]
    _warn_skipped([s for s in report["skipped"] if s["id"] != target])  # its own error says why
    result = db.restore_trash(target)
    if args.json:
        _emit_json({**result, "skipped": report["skipped"]})
        return 0
    _out(
        f"Restored {result['restored']} session{'s' if result['restored'] != 1 else ''}"
        f" ({result['messages']} messages) from {result['entry']}."
    )
    for r in result["sessions"]:
        if r["status"] == "conflict":
            _out(f"  ! {_s(r['id'])}: not restored: {_s(r.get('reason'))}")
        elif r["status"] == "present":
            _out(f"  = {_s(r['id'])}: {_s(r.get('reason'))}")
        for note in r.get("notes") or []:
            _out(f"  ~ {_s(r['id'])}: {_s(note)}")
    for o in result.get("orphans") or []:
        if o["status"] != "relinked":
            _out(
                f"  ~ {_s(o['id'])}: parent link to {_s(o['parent_session_id'])} not restored: "
                f"{_s(o.get('reason'))}"
            )
    if result["conflicts"]:
        _out(
            f"{result['conflicts']} session{'s' if result['conflicts'] != 1 else ''} not restored "
            "(conflicts above);"
            " nothing live was overwritten."
        )
    return 0


def cmd_trash_empty(db: SessionDB, args: argparse.Namespace) -> int:
    if args.retention:
        if args.older_than is not None:
            raise UsageError("--retention and --older-than cannot be combined")
        db.trash_retention_s = args.trash_keep
        db.trash_max_bytes = args.trash_max_mb
        result = db.apply_trash_retention()
        _warn_skipped(result["skipped"])
    else:
        report = _trash_report(db, entries=False)
        now = time.time()
        doomed = [
            e
            for e in report["entries"]
            if args.older_than is None or now - (e["created_at"] or now) >= args.older_than
        ]
        if not doomed:
            result = {"removed": [], "bytes": 0, "skipped": [s for s in report["skipped"] if s["id"] is None]}
        else:
            age = f" older than {args.older_than / 86400:g} days" if args.older_than is not None else ""
            question = f"Remove {len(doomed)} trash entr{'ies' if len(doomed) != 1 else 'y'}{age} for good?"
            if not _confirm(args, question):
                raise CliError("not confirmed: the trash was not emptied", "refused")
            result = db.empty_trash(older_than_s=args.older_than)
            _warn_skipped([s for s in result["skipped"] if s["id"] is not None])  # not removed
    if args.json:
        _emit_json(result)
    else:
        n = len(result["removed"])
        _out(f"Removed {n} trash entr{'ies' if n != 1 else 'y'} ({format_size(result['bytes'])}).")
    return 0


# ---------------------------------------------------------------- profiles (--all, --profile)
def _profile_field(args: argparse.Namespace) -> dict[str, Any]:
    """`{"profile": NAME}` for a one-store command run with --profile NAME, else nothing."""
    name = getattr(args, "store_profile", None)
    return {"profile": name} if name is not None else {}


def _uses_profiles(args: argparse.Namespace) -> bool:
    return bool(getattr(args, "profile", None)) or bool(getattr(args, "all_profiles", False))


_STATUS_KIND = {
    StoreStatus.MISSING: "not_found",
    StoreStatus.LOCKED: "locked",
    StoreStatus.NOT_A_DATABASE: "not_a_database",
    StoreStatus.NOT_HERMES: "not_a_database",
    StoreStatus.UNREADABLE: "error",
}


def _select_refs(args: argparse.Namespace) -> list[StoreRef]:
    """The discovered stores `--all` / `--profile NAME…` select (probed read-only: statuses set)."""
    if args.db is not None:
        raise UsageError("--db PATH is one store: it cannot be combined with --profile or --all")
    if args.all_profiles and args.profile:
        raise UsageError("give either --all or --profile NAME, not both")
    refs = discover_stores()
    if args.all_profiles:
        return refs
    by_name = {r.profile: r for r in refs}
    chosen: list[StoreRef] = []
    for name in dict.fromkeys(args.profile):
        if name not in by_name:
            known = ", ".join(one_line(r.profile) for r in refs) or "none"
            raise CliError(f"no profile {one_line(name)!r} (profiles: {known})", "not_found")
        chosen.append(by_name[name])
    return chosen


def _store_problem(ref: StoreRef) -> dict[str, Any]:
    return {
        "profile": ref.profile,
        "status": str(ref.status),
        "reason": ref.reason,
        "path": str(ref.path),
        "kind": _STATUS_KIND.get(ref.status, "error"),
    }


def _op_problem(err: ProfileError) -> dict[str, Any]:
    return {
        "profile": err.profile,
        "status": "failed",
        "reason": f"{err.kind}: {err.message}",
        "path": None,
        "kind": "error",
    }


#: With --all, profile folders without a store are named one by one up to this many.
MISSING_NAMED = 5


class _Profiles:
    """The stores a profile-mode command reads: open ones in a `Federation`, failures as problems
    (each printed once as a `warning:` line, or listed in the JSON `errors`)."""

    def __init__(self, args: argparse.Namespace, write: bool) -> None:
        self.args = args
        refs = _select_refs(args)
        self.problems: list[dict[str, Any]] = [_store_problem(r) for r in refs if not r.usable]
        self.fed: Federation = open_stores([r for r in refs if r.usable], read_only=not write)
        self.problems += [_store_problem(r) for r in self.fed.refs if r.profile not in self.fed.dbs]
        self._warn_all()
        if not self.fed.profiles:
            self.fed.close()
            first = self.problems[0] if self.problems else None
            raise CliError(
                "no store could be read"
                + (f": {first['profile']}: {first['status']} — {first['reason']}" if first else ""),
                first["kind"] if first else "not_found",
            )

    @property
    def several(self) -> bool:
        return len(self.fed.profiles) > 1

    def _warn(self, problem: dict[str, Any]) -> None:
        if not self.args.json:
            _err(f"warning: {problem['profile']}: {problem['status']} — {problem['reason']}")

    def _warn_all(self) -> None:
        """One line per problem, except that more than `MISSING_NAMED` profile folders without a
        store (profiles that never ran: thousands of them are possible) are one summary line; the
        JSON `errors` still lists each."""
        missing = [p for p in self.problems if p["status"] == str(StoreStatus.MISSING)]
        if len(missing) <= MISSING_NAMED:
            missing = []
        for problem in self.problems:
            if problem not in missing:
                self._warn(problem)
        if missing and not self.args.json:
            named = ", ".join(one_line(p["profile"]) for p in missing[:MISSING_NAMED])
            more = len(missing) - MISSING_NAMED
            _err(
                f"warning: {plural(len(missing), 'profile')} without a state.db (no sessions yet): "
                f"{named} and {more:,} more"
            )

    def failed(self, errors: dict[str, ProfileError] | Sequence[ProfileError]) -> None:
        """Record (and warn about) stores that failed during the command."""
        seen = {p["profile"] for p in self.problems}
        for err in errors.values() if isinstance(errors, dict) else errors:
            if err.profile not in seen:
                seen.add(err.profile)
                problem = _op_problem(err)
                self.problems.append(problem)
                self._warn(problem)

    def close(self) -> None:
        self.fed.close()


def _split_matches(profiles: Sequence[str], ref: str) -> list[tuple[str, str, bool]]:
    """(profile, reference, explicit) readings of `ref`: the plain reference in every store, and
    `PROFILE:REST` in that profile's store when `ref` starts with a profile's name and a colon."""
    readings = [(p, ref, False) for p in profiles]
    for p in profiles:
        if ref.startswith(p + ":") and ref[len(p) + 1 :].strip():
            readings.append((p, ref[len(p) + 1 :], True))
    return readings


def _resolve_across(ctx: _Profiles, ref: str, *, family: bool = False) -> tuple[str, Target]:
    """The one session `ref` names in the open stores: exact references in each store, and an
    explicit `PROFILE:` prefix wins; a reference matching in several stores is ambiguous."""
    if not ref or not ref.strip():
        raise UsageError("empty session reference")
    found: dict[tuple[str, str], tuple[Target, bool]] = {}
    failures: list[ProfileError] = []
    for profile, reading, explicit in _split_matches(ctx.fed.profiles, ref):
        try:
            target = ctx.fed.call(profile, _resolve_target, reading, family=family)
        except CliError as exc:
            if exc.kind == "ambiguous":
                raise CliError(f"in profile {profile}: {exc}", "ambiguous") from None
            continue
        except StoreError as exc:
            failures.append(ProfileError.of(profile, exc))
            continue
        key = (profile, target.id)
        found[key] = (target, explicit or found.get(key, (target, False))[1])
    ctx.failed(failures)
    if any(explicit for _t, explicit in found.values()):
        found = {k: v for k, v in found.items() if v[1]}
    if len(found) == 1:
        (((profile, _sid), (target, _e)),) = found.items()
        return profile, target
    where = ", ".join(ctx.fed.profiles)
    if not found:
        raise CliError(
            f"no session is {ref!r} in profiles {where} (not an id, a unique id prefix, or an exact"
            " title; PROFILE:ID picks a profile)",
            "not_found",
        )
    shown = "; ".join(
        f"{p}:{_ident({'id': t.id, 'title': t.title})}" for (p, _i), (t, _e) in list(found.items())[:8]
    )
    raise CliError(
        f"{ref!r} is ambiguous: it matches sessions in several profiles: {shown} (write PROFILE:ID)",
        "ambiguous",
    )


# ---------------------------------------------------------------- tail and watch
def cmd_tail(db: SessionDB, args: argparse.Namespace) -> int:
    """`tail REF`: the reference resolved like every command's, then `cli_live` streams."""
    target = _resolve_target(db, args.session)
    return cli_live.tail_session(db, cli_live.Stream.of(args), target.id, args.follow)


def cmd_watch(db: SessionDB, args: argparse.Namespace) -> int:
    return cli_live.watch_store(db, cli_live.Stream.of(args))


def _raise(_profile: str, exc: BaseException) -> None:
    raise exc


def pcmd_tail(ctx: _Profiles, args: argparse.Namespace) -> int:
    """`tail REF --all/--profile`: REF resolved across the stores (PROFILE:ID), followed on its
    store's thread; its JSON events carry the profile."""
    profile, target = _resolve_across(ctx, args.session)
    stream = cli_live.Stream.of(args, profile)
    return cli_live.run_followers(
        {
            profile: lambda stop: ctx.fed.submit(
                profile, cli_live.tail_session, stream, target.id, args.follow, stop
            )
        },
        _raise,
    )


def pcmd_watch(ctx: _Profiles, args: argparse.Namespace) -> int:
    """`watch --all/--profile`: every open store at once, each on its own thread; a store that
    fails is reported (a warning, or an "error" event) and the others keep streaming."""
    if args.json:  # stores that could not be opened: events on the stream, as later failures are
        for problem in ctx.problems:
            cli_live.Stream.of(args).emit({"type": "error", **problem}, "")

    def failed(profile: str, exc: BaseException) -> None:
        error = ProfileError.of(profile, exc)
        ctx.failed([error])
        if args.json:
            cli_live.Stream.of(args).emit({"type": "error", **_op_problem(error)}, "")

    def follower(profile: str) -> Callable[[cli_live.Stop], Any]:
        stream = cli_live.Stream.of(args, profile, label=ctx.several)
        return lambda stop: ctx.fed.submit(profile, cli_live.watch_store, stream, stop)

    code = cli_live.run_followers({p: follower(p) for p in ctx.fed.profiles}, failed)
    if code == 1:
        raise CliError("every store failed while watching (see the warnings)", "error")
    return code


def _errors_json(ctx: _Profiles) -> list[dict[str, Any]]:
    return list(ctx.problems)


def pcmd_list(ctx: _Profiles, args: argparse.Namespace) -> int:
    merged = ctx.fed.session_order(_list_filter(args), order=args.order)
    n = len(merged) if not args.limit else min(args.limit, len(merged))
    rows = merged.page(0, n)
    ctx.failed(merged.errors)
    if args.json:
        _emit_json(
            {"sessions": rows, "total": len(merged), "counts": merged.counts, "errors": _errors_json(ctx)}
        )
        return 0
    if not rows:
        _out("No sessions match.")
        return 0
    _out(_list_table(rows, with_profile=ctx.several))
    more = len(merged) - len(rows)
    per = ", ".join(f"{one_line(p)} {c}" for p, c in merged.counts.items())
    _out(
        f"\n{len(rows):,} of {plural(len(merged), 'session')} ({per})"
        + (f"; {more} more: raise --limit" if more > 0 else "")
    )
    return 0


def pcmd_search(ctx: _Profiles, args: argparse.Namespace) -> int:
    found = ctx.fed.search(
        args.query,
        sort=args.sort,
        source_filter=list(args.source) or None,
        role_filter=list(args.role) or None,
    )
    hits = found.page(0, args.limit or 20)
    ctx.failed(found.errors)
    if args.json:
        _emit_json(
            {"query": args.query, "routes": found.routes, "results": hits, "errors": _errors_json(ctx)}
        )
        return 0
    routes = ", ".join(f"{one_line(p)} {one_line(r)}" for p, r in found.routes.items())
    _out(f"routes: {routes}  ({plural(len(hits), 'hit')})")
    for hit in hits:
        _print_hit(hit, f"{_s(hit.get('profile'))}:{_s(hit.get('session_id'))}")
    return 0


def pcmd_show(ctx: _Profiles, args: argparse.Namespace) -> int:
    profile, target = _resolve_across(ctx, args.session, family=True)
    return ctx.fed.call(profile, cmd_show, args, target, profile)


def _sum_totals(parts: Sequence[dict[str, Any]]) -> dict[str, Any]:
    total: dict[str, Any] = {}
    for part in parts:
        for key, value in part.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                total[key] = total.get(key, 0) + value
    return total


def pcmd_stats(ctx: _Profiles, args: argparse.Namespace) -> int:
    got = ctx.fed.map(_stats_data, None, args)
    ctx.failed(got.errors)
    per = {p: got.values[p] for p in ctx.fed.profiles if p in got.values}
    total = _sum_totals([d["totals"] for d in per.values()])
    if args.json:
        _emit_json({"profiles": per, "total": total, "errors": _errors_json(ctx)})
        return 0
    rows = [
        (
            p,
            t.get("sessions") or 0,
            t.get("messages") or 0,
            t.get("input_tokens") or 0,
            t.get("output_tokens") or 0,
            _fmt_cost(t.get("cost")),
        )
        for p, t in ((p, d["totals"]) for p, d in per.items())
    ]
    rows.append(
        (
            "TOTAL",
            total.get("sessions") or 0,
            total.get("messages") or 0,
            total.get("input_tokens") or 0,
            total.get("output_tokens") or 0,
            _fmt_cost(total.get("cost")),
        )
    )
    _out(
        _table(
            ("PROFILE", "SESSIONS", "MESSAGES", "INPUT", "OUTPUT", "COST"),
            rows,
            right=(1, 2, 3, 4, 5),
            limits={0: 32},
        )
    )
    for p, data in per.items():
        _out(f"\n== {one_line(p)} ==")
        _print_stats(data, args)
    return 0


def _export_one(db: SessionDB, sid: str, lineage: bool, display: bool = False) -> dict[str, Any] | None:
    """One export item: the stored rows (JSON, JSONL) or, `display` (Markdown), the messages as a
    person sees them (Hermes' display groups where the file keeps them)."""
    return db.export_session_lineage(sid, display) if lineage else db.export_session(sid, display)


def pcmd_export(ctx: _Profiles, args: argparse.Namespace) -> int:
    args.format = export_format(args)
    if args.format == "md" and (not args.output or args.output == "-"):
        raise UsageError("--format md writes files: give -o FILE.md for one session or -o DIRECTORY")
    if args.sessions:  # every reference resolved before anything is written
        pairs = list(dict.fromkeys((p, t.id) for p, t in (_resolve_across(ctx, r) for r in args.sessions)))
    else:
        merged = ctx.fed.session_order(_export_filter(args), order=args.order)
        pairs = merged.pairs(0, args.limit or len(merged))
        ctx.failed(merged.errors)
    items: list[dict[str, Any]] = []
    done: set[tuple[str, tuple[str, ...]]] = set()
    for profile, sid in pairs:
        try:
            item = ctx.fed.call(profile, _export_one, sid, args.lineage, args.format == "md")
        except StoreError as exc:
            ctx.failed([ProfileError.of(profile, exc)])
            continue
        if not item:
            continue
        if args.lineage:
            key = (profile, tuple(item.get("lineage_session_ids") or [sid]))
            if key in done:
                continue
            done.add(key)
        items.append({"profile": profile, **item})
    return _write_items(args, items)


def _prune_profile_question(plans: dict[str, tuple[dict[str, Any], list[str]]]) -> str:
    total = sum(len(ids) for _plan, ids in plans.values())
    per = ", ".join(f"{p} {len(ids)}" for p, (_plan, ids) in plans.items() if ids)
    stores = sum(1 for _p, ids in plans.values() if ids)
    return f"Delete {plural(total, 'session')} in {plural(stores, 'profile')} ({per})?"


def pcmd_prune(ctx: _Profiles, args: argparse.Namespace) -> int:
    profiles = ctx.fed.profiles
    target: Target | None = None
    if args.title:
        owner, target = _resolve_across(ctx, args.title)
        profiles = [owner]
    plans: dict[str, tuple[dict[str, Any], list[str]]] = {}
    any_filter = True
    for p in profiles:
        try:
            plan, ids, any_filter = ctx.fed.call(p, _prune_plan, args, target)
        except StoreError as exc:
            ctx.failed([ProfileError.of(p, exc)])
            continue
        plans[p] = (plan, ids)
    if not args.json:
        if not any_filter:
            _out(f"No filters: pruning ended sessions older than {DEFAULT_PRUNE_DAYS} days.")
        for p, (plan, _ids) in plans.items():
            _out(f"== {one_line(p)} ==")
            _print_plan(plan, implicit=False)
    doomed = sum(len(plan["ids"]) for plan, _ids in plans.values())
    if args.dry_run or not doomed:
        if args.json:
            _emit_json(
                {
                    "profiles": {p: {"plan": plan, "result": None} for p, (plan, _i) in plans.items()},
                    "dry_run": bool(args.dry_run),
                    "errors": _errors_json(ctx),
                }
            )
        else:
            _out("Nothing to prune." if not doomed else "Dry run: nothing was deleted.")
        return 0
    if args.export_before is not None and args.export_before.exists() and not args.force:
        raise CliError(
            f"refusing to overwrite existing file {args.export_before} (use --force to replace it)", "refused"
        )
    if not _confirm(args, _prune_profile_question(plans)):
        raise CliError("not confirmed: nothing was deleted", "refused")
    exported = None
    if args.export_before is not None:
        items = [
            {"profile": p, **item}
            for p, (_plan, ids) in plans.items()
            for item in ctx.fed.call(
                p, lambda db, ids=ids: [x for x in (db.export_session(i) for i in ids) if x]
            )
        ]
        write_export(args.export_before, to_jsonl(items), force=args.force)
        exported = len(items)
        if not args.json:
            _out(f"Exported {plural(exported, 'session')} to {args.export_before}.")
    results: dict[str, dict[str, Any]] = {}
    failed: list[ProfileError] = []
    for p, (_plan, ids) in plans.items():  # each store in its own batches, through its trash
        if not ids:
            continue
        try:
            results[p] = ctx.fed.call(p, _remove, args, ids, what="prune", require_ended=True)
        except StoreError as exc:
            failed.append(ProfileError.of(p, exc))
            continue
        if not args.json:
            _out(f"== {one_line(p)} ==")
            _print_result(results[p], _hint_args(args, p))
    ctx.failed(failed)
    if args.json:
        _emit_json(
            {
                "profiles": {
                    p: {
                        "plan": plan,
                        "result": results.get(p),
                        "trash_entry": (results.get(p) or {}).get("trash_entry"),
                    }
                    for p, (plan, _i) in plans.items()
                },
                "exported": exported,
                "dry_run": False,
                "errors": _errors_json(ctx),
            }
        )
    if failed:
        raise CliError(
            f"prune failed in {', '.join(f.profile for f in failed)}: {failed[0].message}"
            " (the other profiles were pruned)",
            "error",
        )
    return 0


def _hint_args(args: argparse.Namespace, profile: str) -> argparse.Namespace:
    """`args` for `_print_result`'s restore hint of one profile's store (`--profile NAME`)."""
    return argparse.Namespace(**{**vars(args), "db": None, "hint_profile": profile})


PROFILE_HANDLERS: dict[str, Callable[[_Profiles, argparse.Namespace], int]] = {
    "list": pcmd_list,
    "search": pcmd_search,
    "show": pcmd_show,
    "stats": pcmd_stats,
    "export": pcmd_export,
    "prune": pcmd_prune,
    "tail": pcmd_tail,
    "watch": pcmd_watch,
    **dict.fromkeys(FLAG_COMMANDS, pcmd_flag),
}


def _run_profiles(args: argparse.Namespace) -> int:
    write = args.command in WRITE_COMMANDS
    if write and args.read_only:
        raise _writes_refused(args.command)
    ctx = _Profiles(args, write=write)
    try:
        return int(PROFILE_HANDLERS[args.command](ctx, args) or 0)
    finally:
        ctx.close()


def _one_store_profile(args: argparse.Namespace) -> None:
    """rename/delete with --profile NAME: that store becomes `--db`, and `NAME:REF` references
    lose their prefix. --all is refused: these change sessions of one store."""
    if args.all_profiles:
        raise UsageError(f"'{args.command}' changes sessions of one store: give --profile NAME, not --all")
    if len(set(args.profile)) > 1:
        raise UsageError(f"'{args.command}' changes sessions of one store: give one --profile NAME")
    (ref,) = _select_refs(argparse.Namespace(**{**vars(args), "profile": args.profile[:1]}))
    if not ref.usable:
        raise CliError(f"{ref.profile}: {ref.status} — {ref.reason}", _STATUS_KIND.get(ref.status, "error"))
    args.db = ref.path
    args.store_profile = ref.profile
    prefix = ref.profile + ":"
    if args.command == "rename":
        args.session = _strip_profile(args.session, prefix, ref.path)
    else:
        args.sessions = [_strip_profile(r, prefix, ref.path) for r in args.sessions]


def _strip_profile(ref: str, prefix: str, path: Path) -> str:
    """`PROFILE:REF` → `REF`, unless the whole text is itself a reference in that store."""
    if not ref.startswith(prefix) or not ref[len(prefix) :].strip():
        return ref
    with SessionDB(path, read_only=True) as db:
        try:
            _resolve_target(db, ref)
            return ref
        except CliError:
            return ref[len(prefix) :]


TRASH_COMMANDS: dict[str, Callable[[SessionDB, argparse.Namespace], int]] = {
    "list": cmd_trash_list,
    "show": cmd_trash_show,
    "restore": cmd_trash_restore,
    "empty": cmd_trash_empty,
}

COMMANDS: dict[str, Callable[[SessionDB, argparse.Namespace], int]] = {
    "list": cmd_list,
    "show": cmd_show,
    "search": cmd_search,
    "rename": cmd_rename,
    "prune": cmd_prune,
    "delete": cmd_delete,
    "export": cmd_export,
    "stats": cmd_stats,
    "trash": cmd_trash,
    "tail": cmd_tail,
    "watch": cmd_watch,  # reads only: opened read-only
    **dict.fromkeys(FLAG_COMMANDS, cmd_flag),
}


def _store_error_kind(exc: StoreError) -> str:
    """The error kind of a store exception (the store's own classes; by name for a class a
    newer store adds, such as `NotAHermesStore`)."""
    not_a_store = getattr(_state, "NotAHermesStore", None)
    if isinstance(exc, NotADatabaseError) or (not_a_store is not None and isinstance(exc, not_a_store)):
        return "not_a_database"
    if isinstance(exc, ReadOnlyError):
        return "read_only"
    if isinstance(exc, (SessionNotFound, TrashEntryNotFound)):
        return "not_found"
    if isinstance(exc, LockTimeout):
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


def _classify(exc: BaseException) -> tuple[str, str]:
    """(kind, message) of any exception that ends a command."""
    if isinstance(exc, CliError):
        return exc.kind, str(exc)
    if isinstance(exc, StoreError):
        return _store_error_kind(exc), str(exc)
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


def _report(kind: str, message: str, as_json: bool) -> int:
    """The one report of a failure: a JSON object on stdout with --json, else one stderr line."""
    text = one_line(message) or kind
    if as_json:
        try:
            _emit_json({"error": text, "kind": kind})
        except BrokenPipeError:
            pass
    else:
        _err(f"error: {text}")
    return EXIT_CODES[kind]


def _no_command(args: argparse.Namespace) -> int:
    """Bare `sessions` (or `sessions trash`): its help on stderr and exit 2, argparse's code for
    a missing subcommand (with --json: the usage error object, stdout stays one document)."""
    helper: argparse.ArgumentParser = args.usage_parser
    if args.json:
        return _report("usage", f"a command is needed (see: {helper.prog} --help)", True)
    sys.stderr.write(helper.format_help())
    return EXIT_CODES["usage"]


def _writes(args: argparse.Namespace) -> bool:
    if args.command == "trash":
        return getattr(args, "trash_command", None) in TRASH_WRITE_COMMANDS
    return args.command in WRITE_COMMANDS


def main(argv: Sequence[str] | None = None) -> int:
    """Run one `sessions` subcommand; returns the exit code (never raises SystemExit)."""
    argv_list = [str(a) for a in (sys.argv[1:] if argv is None else argv)]
    wants_json = (
        "--json" in argv_list[: argv_list.index("--")] if "--" in argv_list else "--json" in argv_list
    )
    parser = build_parser()
    try:
        args = parser.parse_args(argv_list)
    except SystemExit as exc:  # --help, --version
        return int(exc.code) if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    except CliError as exc:  # usage errors raised by _Parser.error
        return _report(exc.kind, str(exc), wants_json)
    if args.command is None or (args.command == "trash" and args.trash_command is None):
        return _no_command(args)
    db: SessionDB | None = None
    try:
        if args.command == "repair":
            return cmd_repair(args)
        if args.command in PROFILE_COMMANDS and _uses_profiles(args):
            return _run_profiles(args)
        if args.command in ONE_STORE_COMMANDS and _uses_profiles(args):
            _one_store_profile(args)
        db = _open(args, write=_writes(args))
        return int(COMMANDS[args.command](db, args) or 0)
    except BrokenPipeError:  # `| head`
        _silence_stdout()
        return 0
    except (Exception, KeyboardInterrupt) as exc:
        kind, message = _classify(exc)
        if kind == "internal" and os.environ.get("HERMES_TUI_DEBUG") == "1":
            traceback.print_exc()
        return _report(kind, message, bool(getattr(args, "json", False)))
    finally:
        if db is not None:
            try:
                db.close()
            except Exception:  # noqa: BLE001 - a failing close must not hide the command's result
                if os.environ.get("HERMES_TUI_DEBUG") == "1":
                    traceback.print_exc()


def _silence_stdout() -> None:
    """After EPIPE, point stdout at /dev/null so the interpreter's final flush stays quiet."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


if __name__ == "__main__":
    raise SystemExit(main())
