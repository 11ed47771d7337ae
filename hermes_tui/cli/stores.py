"""The stores a `hermes-tui sessions` command runs on: one or several, always a `Federation`.

A single store is a profile list of one. `--db PATH` and the default (the current profile's
store, `$HERMES_HOME/state.db`) select one file by path; `--profile NAME` (repeatable) and
`--all` select profiles' stores. Either way the stores open in a `Federation` (read-only, or
`migrate=False` for a command that writes) and every command runs the same code on them, on each
store's own thread (`Stores.call`, `Stores.each`).

Each store is named by its profile: a file that is a profile's store (the default one included)
by that profile's name, as `--all` names it; any other `--db PATH` by the path as given. JSON
output always names it; text output names profiles only when several stores are open.

A file selected by path is looked at before SQLite sees it, and when it cannot be opened the
command fails with that file's own error. Among profiles, a store that cannot be read is one
`warning:` line (and an item of the JSON `errors`) and the others still answer; the command
fails only when none can be read.
"""

from __future__ import annotations

import argparse
import shlex
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal, TypeVar

from hermes_tui.cli.errors import CliError, UsageError, store_error_kind
from hermes_tui.cli.output import err
from hermes_tui.formatting import plural
from hermes_tui.safe_text import one_line
from hermes_tui.state import (
    FederatedSearch,
    Federation,
    MergedOrder,
    ProfileError,
    SessionDB,
    SessionFilter,
    StoreError,
    StoreRef,
    StoreStatus,
    current_store_path,
    discover_stores,
    open_stores,
    same_file_key,
)

T = TypeVar("T")

#: Which stores a command runs on:
#: "many": one store (`--db PATH`, or the current profile's), or several (`--all`, `--profile NAME`);
#: "one": one store, which `--profile NAME` may choose (`--all` is refused);
#: "file": the one file of `--db PATH` (or the current profile's);
#: "path": like "file", but the command opens it itself (`repair`: a damaged file may not open).
Scope = Literal["many", "one", "file", "path"]

#: With --all, profile folders without a store are named one by one up to this many.
MISSING_NAMED = 5

STATUS_KIND = {
    StoreStatus.MISSING: "not_found",
    StoreStatus.LOCKED: "locked",
    StoreStatus.NOT_A_DATABASE: "not_a_database",
    StoreStatus.NOT_HERMES: "not_a_database",
    StoreStatus.UNREADABLE: "error",
}
#: The status of a store a writing command could open only read-only (its file or folder refuses writes).
READ_ONLY = "read-only"


@dataclass(frozen=True)
class Selection:
    """The stores a command was given. `by_path`: one file (`--db PATH`, or the current
    profile's store when neither a path nor a profile was given); `given`: `--db` as typed."""

    refs: list[StoreRef]
    by_path: bool
    given: Path | None = None


def select(args: argparse.Namespace, scope: Scope) -> Selection:
    """The stores `--db` / `--profile` / `--all` select for a command of `scope` (profiles
    probed read-only: statuses set)."""
    db: Path | None = getattr(args, "db", None)
    names: list[str] = list(dict.fromkeys(getattr(args, "profile", None) or ()))
    every = bool(getattr(args, "all_profiles", False))
    if scope == "one" and every:
        raise UsageError(f"'{args.command}' changes sessions of one store: give --profile NAME, not --all")
    if scope == "one" and len(names) > 1:
        raise UsageError(f"'{args.command}' changes sessions of one store: give one --profile NAME")
    if not names and not every:
        path = Path(db or current_store_path()).expanduser()
        return Selection([path_ref(path, db)], by_path=True, given=db)
    if db is not None:
        raise UsageError("--db PATH is one store: it cannot be combined with --profile or --all")
    if every and names:
        raise UsageError("give either --all or --profile NAME, not both")
    refs = discover_stores()
    if every:
        return Selection(refs, by_path=False)
    by_name = {r.profile: r for r in refs}
    for name in names:
        if name not in by_name:
            known = ", ".join(one_line(r.profile) for r in refs) or "none"
            raise CliError(f"no profile {one_line(name)!r} (profiles: {known})", "not_found")
    return Selection([by_name[n] for n in names], by_path=False)


def path_ref(path: Path, given: Path | None) -> StoreRef:
    """The store at `path` named as `--all` names it: the profile whose store it is (with no
    `--db`: the current profile's), else the path as given."""
    refs = discover_stores([given] if given is not None else (), probe=False)
    if given is None:
        found = next((r for r in refs if r.current), None)
    else:
        found = next((r for r in refs if r.origin == "path"), None) or _same_file(refs, path)
    return StoreRef(found.profile if found else str(given or path), path)


def _same_file(refs: Sequence[StoreRef], path: Path) -> StoreRef | None:
    """The discovered store that is the file at `path` (discovery lists a file once, by its first
    name: `same_file_key`)."""
    key = same_file_key(path)
    return next((r for r in refs if same_file_key(r.path) == key), None)


def precheck(path: Path) -> None:
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


class Stores:
    """The open stores of one command: `profiles` in order, each reached on its own thread.

    `problems`: the stores that could not be read (and those that failed during the command),
    each printed once as a `warning:` line (not with --json) and listed by `errors()`."""

    def __init__(self, selection: Selection, *, write: bool, quiet: bool) -> None:
        self.selection = selection
        self.write = write
        self.quiet = quiet
        #: Set by Ctrl-C: a batched delete stops between batches.
        self.cancel = threading.Event()
        self.problems: list[dict[str, Any]] = [_problem(r) for r in selection.refs if not r.usable]
        self.profiles: list[str] = []
        self._fed: Federation | None = None

    def file(self) -> Path:
        """The one file selected by path, looked at (not opened): for `repair`, which opens it itself."""
        (ref,) = self.selection.refs
        precheck(ref.path)
        return ref.path

    def open(self) -> None:
        """Open the selected stores (`migrate=False` when the command writes, else read-only); a
        file selected by path is looked at first (`file`)."""
        fed = self._fed = open_stores([r for r in self.selection.refs if r.usable], read_only=not self.write)
        self.problems += [_problem(r) for r in fed.refs if r.profile not in fed.dbs]
        refused = [r for r in fed.refs if r.profile in fed.dbs and self.write and r.read_only]
        self.problems += [
            _problem(replace(r, reason=r.reason or "its file refuses writes"), READ_ONLY) for r in refused
        ]
        self.profiles = [p for p in fed.profiles if p not in {r.profile for r in refused}]
        self._no_store()
        self._warn_all()

    @property
    def fed(self) -> Federation:
        if self._fed is None:
            raise RuntimeError("the stores are not open")
        return self._fed

    def _no_store(self) -> None:
        """Fail when no store can be read: a file selected by path with its own error."""
        if self.profiles:
            return
        first = self.problems[0] if self.problems else None
        if first is None:
            raise CliError("no store could be read", "not_found")
        if self.selection.by_path:
            reason = first["reason"]
            if first["status"] == READ_ONLY:
                reason = (
                    f"{first['path']} is read-only (its file or folder refuses writes); nothing was changed"
                )
            raise CliError(reason, first["kind"])
        self._warn_all()
        raise CliError(
            f"no store could be read: {first['profile']}: {first['status']} — {first['reason']}",
            first["kind"],
        )

    # ------------------------------------------------------------------ what is open
    @property
    def several(self) -> bool:
        """More than one store is open: text output names profiles."""
        return len(self.profiles) > 1

    def only(self) -> str:
        """The profile of the one open store (commands of scope "one" and "file")."""
        (profile,) = self.profiles
        return profile

    def path(self, profile: str) -> Path:
        return self.fed.ref(profile).path

    def db_option(self, profile: str) -> str:
        """` --db PATH` that names `profile`'s store on a command line ('' for the default one)."""
        if self.selection.by_path:
            given = self.selection.given
            return f" --db {shlex.quote(str(given))}" if given is not None else ""
        return f" --db {shlex.quote(str(self.path(profile)))}"

    # ------------------------------------------------------------------ calls
    def call(self, profile: str, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """`fn(db, *args, **kwargs)` on `profile`'s store, on its thread, waited for (exceptions
        propagate)."""
        return self._wait(self.fed.submit(profile, fn, *args, **kwargs))

    def _wait(self, fut: Future[T]) -> T:
        try:
            return fut.result()
        except KeyboardInterrupt:  # the store's thread finishes its step; a batched delete stops
            self.cancel.set()
            self.fed.interrupt()
            raise

    def each(
        self, calls: Mapping[str, Callable[[SessionDB], T]]
    ) -> tuple[dict[str, T], dict[str, StoreError]]:
        """`calls[profile](db)` on each of those stores at once (build them with `on`): the
        values by profile, and the store errors. With one store open its error is raised; with
        several each is a problem (warned) and the others' values are kept."""
        futures = {p: self.fed.submit(p, call) for p, call in calls.items()}
        values: dict[str, T] = {}
        failures: dict[str, StoreError] = {}
        for p, fut in futures.items():
            try:
                values[p] = self._wait(fut)
            except StoreError as exc:
                if not self.several:
                    raise
                failures[p] = exc
        self.failed([ProfileError.of(p, e) for p, e in failures.items()])
        return values, failures

    def every(self, fn: Callable[..., T], *args: Any) -> tuple[dict[str, T], dict[str, StoreError]]:
        """`fn(db, *args)` on every open store at once (see `each`)."""
        return self.each({p: on(fn, *args) for p in self.profiles})

    def failure(self, verb: str, failures: dict[str, StoreError], others: str | None) -> CliError:
        """The error that ends a command some of whose stores failed (`others`: what the command
        did to the other stores, if it did anything)."""
        first = next(iter(failures.values()))
        done = f" (the other profiles were {others})" if others else ""
        return CliError(f"{verb} failed in {', '.join(failures)}: {first}{done}", store_error_kind(first))

    def session_order(self, flt: SessionFilter, order: str) -> MergedOrder:
        """The merged session order of the open stores."""
        return self.fed.session_order(flt, order=order, profiles=self.profiles)

    def search(self, query: str, **kwargs: Any) -> FederatedSearch:
        """A search over the open stores (see `Federation.search`)."""
        return self.fed.search(query, profiles=self.profiles, **kwargs)

    # ------------------------------------------------------------------ problems
    def failed(self, errors: dict[str, ProfileError] | Sequence[ProfileError]) -> None:
        """Record (and warn about) stores that failed during the command. With one store open
        there is no other to answer: its failure is the command's error."""
        listed = list(errors.values()) if isinstance(errors, dict) else list(errors)
        if listed and not self.several and listed[0].profile in self.profiles:
            raise listed[0].error or CliError(listed[0].message)
        seen = {p["profile"] for p in self.problems}
        for error in listed:
            if error.profile not in seen:
                seen.add(error.profile)
                problem = op_problem(error)
                self.problems.append(problem)
                self._warn(problem)

    def errors(self) -> list[dict[str, Any]]:
        """The JSON `errors` list: every store that could not be read or failed."""
        return list(self.problems)

    def _warn(self, problem: dict[str, Any]) -> None:
        if not self.quiet:
            err(f"warning: {problem['profile']}: {problem['status']} — {problem['reason']}")

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
        if missing and not self.quiet:
            named = ", ".join(one_line(p["profile"]) for p in missing[:MISSING_NAMED])
            more = len(missing) - MISSING_NAMED
            err(
                f"warning: {plural(len(missing), 'profile')} without a state.db (no sessions yet): "
                f"{named} and {more:,} more"
            )

    def close(self) -> None:
        if self._fed is not None:
            self._fed.close()


def on(fn: Callable[..., T], *args: Any) -> Callable[[SessionDB], T]:
    """`fn(db, *args)` as a call for `Stores.each`."""
    return lambda db: fn(db, *args)


def _problem(ref: StoreRef, status: str | None = None) -> dict[str, Any]:
    """A store that could not be read, as the JSON `errors` lists it."""
    return {
        "profile": ref.profile,
        "status": status or str(ref.status),
        "reason": ref.reason,
        "path": str(ref.path),
        "kind": "read_only" if status == READ_ONLY else STATUS_KIND.get(ref.status, "error"),
    }


def op_problem(error: ProfileError) -> dict[str, Any]:
    """A store that failed during the command, as the JSON `errors` lists it."""
    return {
        "profile": error.profile,
        "status": "failed",
        "reason": f"{error.kind}: {error.message}",
        "path": None,
        "kind": "error",
    }
