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
import re
import stat
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
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


#: A profile name today's Hermes accepts (`hermes_constants.PROFILE_ID_RE`).
PROFILE_ID = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}\Z")


def sticky_profile(home: str | os.PathLike[str] | None = None) -> str | None:
    """Today's Hermes' sticky profile: `hermes profile use NAME` writes NAME to
    `<root>/active_profile`, and `hermes` without `-p` then opens that profile's store. Not when
    `$HERMES_HOME` (or `home`) is a profile's own folder (Hermes trusts it). None for the default
    profile (no file, empty, `default`) and for a name Hermes would refuse."""
    base = Path(home).expanduser() if home is not None else hermes_home()
    if base.parent.name == "profiles":
        return None
    try:
        name = (base / "active_profile").read_text(encoding="utf-8-sig").strip().lower()
    except (OSError, UnicodeDecodeError):
        return None
    return name if name != "default" and PROFILE_ID.match(name) else None


def current_store_path(home: str | os.PathLike[str] | None = None) -> Path:
    """The store `hermes` itself opens with no `-p`: the sticky profile's (`sticky_profile`), else
    `$HERMES_HOME/state.db` (or `home`'s), else `~/.hermes/state.db`. What the browser and the CLI
    open when given no store (`SessionDB()`'s own default stays upstream's, `default_db_path`)."""
    name = sticky_profile(home)
    if name is not None:
        return hermes_root(home) / "profiles" / name / "state.db"
    return (Path(home).expanduser() if home is not None else hermes_home()) / "state.db"


def same_file_key(path: Path) -> str:
    """Identity of a path for de-duplication: the resolved path (links followed, `..` folded).
    Discovery lists a file once by it; whoever matches a path to a discovered store uses it too."""
    try:
        return str(path.expanduser().resolve(strict=False))
    except (OSError, RuntimeError):  # a link loop
        return os.path.abspath(path.expanduser())


def store_workers() -> int:
    """How many threads open, probe and read the stores at once (a bounded pool, however many
    profiles there are: 300 stores once meant 300 threads, each with its connections)."""
    return min(8, max(4, 2 * (os.cpu_count() or 1)))


@dataclass(frozen=True)
class _Candidate:
    name: str
    path: Path
    origin: str
    #: The profile folder as listed by `os.scandir` (None for the default store and given paths).
    entry: os.DirEntry[str] | None = None


def _profile_folders(profiles_dir: Path) -> list[os.DirEntry[str]]:
    """The folders of `profiles/` by name, from one `os.scandir` pass (no call per folder where
    the file system reports entry types, as Linux and macOS do); hidden ones are not profiles."""
    try:
        with os.scandir(profiles_dir) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError:
        return []
    out = []
    for entry in entries:
        try:
            is_dir = entry.is_dir()
        except OSError:
            is_dir = False
        if is_dir and not entry.name.startswith("."):
            out.append(entry)
    return out


def _looked_at(cand: _Candidate, real_profiles: str) -> tuple[str, tuple[StoreStatus, str] | None]:
    """`(identity, file status)` of a candidate with as few calls as can be: a profile folder that
    is no link, whose `state.db` is no link either, is `<profiles resolved>/<name>/state.db`, known
    from the one `lstat` its status needs anyway (a folder without a store: that `lstat` alone).
    Anything else (the default store, a given path, a link) is resolved in full."""
    if cand.entry is not None and not cand.entry.is_symlink():
        key = os.path.join(real_profiles, cand.entry.name, "state.db")
        try:
            st = os.lstat(cand.path)
        except FileNotFoundError:
            return key, _missing(cand.path)
        except OSError:
            return key, file_status(cand.path)
        if not stat.S_ISLNK(st.st_mode):
            return key, file_status(cand.path, st)
    return same_file_key(cand.path), file_status(cand.path)


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
    candidates = [_Candidate(DEFAULT_PROFILE, root / "state.db", "default")]
    profiles_dir = root / "profiles"
    for entry in _profile_folders(profiles_dir):
        candidates.append(_Candidate(entry.name, Path(entry.path) / "state.db", "profile", entry))
    for extra in extra_paths:
        candidates.append(_Candidate(os.fspath(extra), Path(extra).expanduser(), "path"))
    real_profiles = same_file_key(profiles_dir)
    looked = [_looked_at(c, real_profiles) for c in candidates]
    current_key = same_file_key(base / "state.db")
    if current_key not in {key for key, _found in looked}:
        # $HERMES_HOME outside what was listed (a profile folder not created yet, a hidden one):
        # it is still the store a plain `hermes` uses, so it comes first.
        in_profiles = base.parent.name == "profiles"
        first = _Candidate(
            base.name if in_profiles else DEFAULT_PROFILE,
            base / "state.db",
            "profile" if in_profiles else "default",
        )
        candidates.insert(0, first)
        looked.insert(0, (current_key, file_status(first.path)))

    refs: list[StoreRef] = []
    seen: set[str] = set()
    names: set[str] = set()
    for cand, (key, found) in zip(candidates, looked, strict=True):
        if key in seen:
            continue
        seen.add(key)
        unique, n = cand.name, 2
        while unique in names:
            unique, n = f"{cand.name} #{n}", n + 1
        names.add(unique)
        ref = StoreRef(unique, cand.path, cand.origin, current=key == current_key)
        refs.append(ref if found is None else replace(ref, status=found[0], reason=found[1]))
    return probe_stores(refs) if probe else refs


def probe_stores(refs: Sequence[StoreRef]) -> list[StoreRef]:
    """`refs` with the status of each store that `stat` found readable, by opening it read-only
    once (`probe_store`), several at a time in a bounded pool (`store_workers`); the others are
    kept as they are (a folder without a store is never opened)."""
    out = list(refs)
    todo = [i for i, r in enumerate(out) if r.usable]
    if len(todo) <= 1:
        for i in todo:
            out[i] = probe_store(out[i])
        return out
    with ThreadPoolExecutor(min(store_workers(), len(todo)), thread_name_prefix="hermes-probe") as pool:
        for i, probed in zip(todo, pool.map(probe_store, [out[i] for i in todo]), strict=True):
            out[i] = probed
    return out


def _missing(path: Path) -> tuple[StoreStatus, str]:
    return StoreStatus.MISSING, f"{path} does not exist"


def file_status(path: Path, st: os.stat_result | None = None) -> tuple[StoreStatus, str] | None:
    """What `stat` alone says is wrong with `path` (None: a readable regular file); `st`: its
    `lstat` when the caller has it (None: looked at here).

    Never opens the file. A folder, FIFO, socket or device is "unreadable" as a store (SQLite
    would refuse it, and a FIFO would block an open); so is a file we may not read."""
    try:
        st = st if st is not None else os.lstat(path)
        if stat.S_ISLNK(st.st_mode):
            try:
                st = os.stat(path)
            except FileNotFoundError:
                return StoreStatus.MISSING, f"{path} is a link to {os.readlink(path)}, which does not exist"
    except FileNotFoundError:
        return _missing(path)
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
