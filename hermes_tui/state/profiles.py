"""Every profile's `state.db`: discovery, and one status with a human reason per store.

Hermes keeps one store per profile: `<root>/state.db` for the default profile and
`<root>/profiles/<name>/state.db` for each named one, where `<root>` is `~/.hermes` (or
`$HERMES_HOME`; when `$HERMES_HOME` is itself a profile folder, `<root>` is the folder above
`profiles/`). "My session is gone" is most often a session in another profile's store, so the
browser and the CLI look at all of them; a store that cannot be read must not hide the others.
That is why every failure here is a *status* on a `StoreRef` (shown as a badge), never an
exception.

Nothing here opens a database file with anything but `SessionDB` (read-only for a probe): a
header read through a descriptor of our own would drop this process's POSIX locks on the file
when closed. Files are only `stat`-ed.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass, replace
from enum import StrEnum
from pathlib import Path

from .db import SessionDB
from .errors import LockTimeout, NotADatabaseError, NotAHermesStore, ReadOnlyError, StorageError, StoreError
from .paths import hermes_home
from .schema import SCHEMA_VERSION

DEFAULT_PROFILE = "default"


class StoreStatus(StrEnum):
    """What a store's badge says. `OK` and `NEWER_SCHEMA` stores are browsed; the others are not."""

    OK = "ok"
    MISSING = "missing"
    UNREADABLE = "unreadable"
    LOCKED = "locked"
    NOT_A_DATABASE = "not a database"
    NOT_HERMES = "not a Hermes store"
    NEWER_SCHEMA = "newer schema"


USABLE = frozenset({StoreStatus.OK, StoreStatus.NEWER_SCHEMA})


@dataclass(frozen=True)
class StoreRef:
    """One profile's store: its name, file and (once probed or opened) status.

    `origin` is `"default"` (`<root>/state.db`), `"profile"` (`<root>/profiles/<name>/state.db`)
    or `"path"` (given explicitly, named by the path as given). `current` marks the store that
    `$HERMES_HOME` (or the `home` passed to discovery) points at: the one a plain `hermes` uses.
    `read_only` is True when the store was opened read-only because its file or folder refuses
    writes (it refuses writes individually; the others stay writable).
    """

    profile: str
    path: Path
    origin: str = "path"
    current: bool = False
    status: StoreStatus = StoreStatus.OK
    reason: str = ""
    schema_version: int | None = None
    read_only: bool = False

    @property
    def usable(self) -> bool:
        return self.status in USABLE

    @property
    def badge(self) -> str:
        """`profile: status — reason` (raw store-independent text; callers still sanitize paths)."""
        return f"{self.profile}: {self.status}" + (f" — {self.reason}" if self.reason else "")


def hermes_root(home: str | os.PathLike[str] | None = None) -> Path:
    """The folder holding the default store and `profiles/`: `home` (default `$HERMES_HOME`, else
    `~/.hermes`), or the folder above `profiles/` when `home` is a profile's own folder."""
    base = Path(home).expanduser() if home is not None else hermes_home()
    return base.parent.parent if base.parent.name == "profiles" else base


def _same_file_key(path: Path) -> str:
    """Identity of a path for de-duplication: the resolved path (links followed, `..` folded)."""
    try:
        return str(path.expanduser().resolve(strict=False))
    except (OSError, RuntimeError):  # a link loop
        return os.path.abspath(path.expanduser())


def discover_stores(
    extra_paths: Iterable[str | os.PathLike[str]] = (),
    home: str | os.PathLike[str] | None = None,
    *,
    probe: bool = True,
) -> list[StoreRef]:
    """Every store: the default one, one per folder under `<root>/profiles/` (sorted by name; a
    profile folder without `state.db` is listed as missing), then `extra_paths` in the order given.

    `home` plays `$HERMES_HOME`'s part (default: the environment). The same file reached twice
    (a link, `..`, `$HERMES_HOME` pointing into `profiles/`, a path given again) is listed once,
    under its first name. Names are unique (a clash gets ` #2`, ` #3`). With `probe` each store is
    opened read-only once to fill in its status (see `probe_store`); without it only the file
    system is looked at (missing / unreadable) and the rest is left to opening.
    """
    base = Path(home).expanduser() if home is not None else hermes_home()
    root = hermes_root(base)
    candidates: list[tuple[str, Path, str]] = [(DEFAULT_PROFILE, root / "state.db", "default")]
    profiles_dir = root / "profiles"
    try:
        entries = sorted(os.scandir(profiles_dir), key=lambda e: e.name)
    except OSError:
        entries = []
    for entry in entries:
        try:
            is_dir = entry.is_dir()
        except OSError:
            is_dir = False
        if is_dir and not entry.name.startswith("."):
            candidates.append((entry.name, Path(entry.path) / "state.db", "profile"))
    for extra in extra_paths:
        candidates.append((os.fspath(extra), Path(extra).expanduser(), "path"))
    current_key = _same_file_key(base / "state.db")
    if current_key not in {_same_file_key(p) for _n, p, _o in candidates}:
        # $HERMES_HOME outside what was listed (a profile folder not created yet, a hidden one):
        # it is still the store a plain `hermes` uses, so it comes first.
        in_profiles = base.parent.name == "profiles"
        candidates.insert(
            0,
            (
                base.name if in_profiles else DEFAULT_PROFILE,
                base / "state.db",
                "profile" if in_profiles else "default",
            ),
        )

    refs: list[StoreRef] = []
    seen: set[str] = set()
    names: set[str] = set()
    for name, path, origin in candidates:
        key = _same_file_key(path)
        if key in seen:
            continue
        seen.add(key)
        unique, n = name, 2
        while unique in names:
            unique, n = f"{name} #{n}", n + 1
        names.add(unique)
        ref = StoreRef(unique, path, origin, current=key == current_key)
        refs.append(probe_store(ref) if probe else _with_file_status(ref))
    return refs


def file_status(path: Path) -> tuple[StoreStatus, str] | None:
    """What `stat` alone says is wrong with `path` (None: a readable regular file).

    Never opens the file. A folder, FIFO, socket or device is "unreadable" as a store (SQLite
    would refuse it, and a FIFO would block an open); so is a file we may not read."""
    try:
        st = os.lstat(path)
        if stat.S_ISLNK(st.st_mode):
            try:
                st = os.stat(path)
            except FileNotFoundError:
                return StoreStatus.MISSING, f"{path} is a link to {os.readlink(path)}, which does not exist"
    except FileNotFoundError:
        return StoreStatus.MISSING, f"{path} does not exist"
    except NotADirectoryError:
        return StoreStatus.MISSING, f"{path} does not exist (a folder on its path is a file)"
    except PermissionError:
        return StoreStatus.UNREADABLE, f"cannot look at {path}: permission denied"
    except OSError as exc:
        return StoreStatus.UNREADABLE, f"cannot look at {path}: {exc.strerror or exc}"
    if stat.S_ISDIR(st.st_mode):
        return StoreStatus.UNREADABLE, f"{path} is a folder, not a database file"
    if not stat.S_ISREG(st.st_mode):
        kind = (
            "a FIFO" if stat.S_ISFIFO(st.st_mode) else "a socket" if stat.S_ISSOCK(st.st_mode) else "a device"
        )
        return StoreStatus.UNREADABLE, f"{path} is {kind}, not a database file"
    if not os.access(path, os.R_OK):
        return StoreStatus.UNREADABLE, f"cannot read {path}: permission denied"
    return None


def _with_file_status(ref: StoreRef) -> StoreRef:
    found = file_status(ref.path)
    if found is None:
        return replace(ref, status=StoreStatus.OK, reason="")
    return replace(ref, status=found[0], reason=found[1])


def classify_error(exc: StoreError, path: Path) -> tuple[StoreStatus, str]:
    """The status for a `SessionDB(...)` failure on `path` (its message is the reason)."""
    reason = str(exc) or type(exc).__name__
    if isinstance(exc, LockTimeout):
        return StoreStatus.LOCKED, reason
    if isinstance(exc, NotAHermesStore):
        return StoreStatus.NOT_HERMES, reason
    if isinstance(exc, NotADatabaseError):
        return StoreStatus.NOT_A_DATABASE, reason
    if isinstance(exc, (ReadOnlyError, StorageError)):
        return StoreStatus.UNREADABLE, reason
    found = file_status(path)  # vanished or changed since it was looked at
    if found is not None:
        return found
    return StoreStatus.UNREADABLE, reason


def opened_status(ref: StoreRef, db: SessionDB) -> StoreRef:
    """`ref` with the status of a store that opened: OK, or NEWER_SCHEMA (browsed with the
    columns this code knows; its badge stays up)."""
    version = db.capabilities().get("schema_version")
    ref = replace(ref, schema_version=version, read_only=db.read_only)
    if isinstance(version, int) and version > SCHEMA_VERSION:
        return replace(
            ref,
            status=StoreStatus.NEWER_SCHEMA,
            reason=f"schema v{version} is newer than v{SCHEMA_VERSION} (this version's): "
            "columns it does not know are not shown",
        )
    return replace(ref, status=StoreStatus.OK, reason="")


def open_store(ref: StoreRef, read_only: bool = False) -> tuple[StoreRef, SessionDB | None]:
    """Open one store as the browser does (`migrate=False`: nothing about the file changes).

    Returns the ref with its status and the store, or `None` when it failed (the status says
    why). Asked for a writable store whose file or folder refuses writes, it opens it read-only
    instead (`ref.read_only` is then True): that store refuses writes, the others do not.
    """
    found = file_status(ref.path)
    if found is not None:
        return replace(ref, status=found[0], reason=found[1]), None
    try:
        db = SessionDB(ref.path, read_only=read_only, migrate=False)
    except ReadOnlyError as exc:
        if read_only:
            return replace(ref, status=StoreStatus.UNREADABLE, reason=str(exc)), None
        try:
            db = SessionDB(ref.path, read_only=True, migrate=False)
        except StoreError as again:
            status, reason = classify_error(again, ref.path)
            return replace(ref, status=status, reason=reason), None
        opened = opened_status(ref, db)
        return replace(opened, reason=opened.reason or f"read-only: {exc}"), db
    except StoreError as exc:
        status, reason = classify_error(exc, ref.path)
        return replace(ref, status=status, reason=reason), None
    try:
        return opened_status(ref, db), db
    except StoreError as exc:
        db.close()
        status, reason = classify_error(exc, ref.path)
        return replace(ref, status=status, reason=reason), None


def probe_store(ref: StoreRef) -> StoreRef:
    """`ref` with its status, found by opening the store read-only once and closing it."""
    probed, db = open_store(ref, read_only=True)
    if db is not None:
        db.close()
    return replace(probed, read_only=False)
