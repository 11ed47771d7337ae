"""Where `state.db` lives: resolved at call time, like later upstream (0.19.0 froze it at import)."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

#: The folder name under the platform's cache and data folders.
APP_NAME = "hermes-tui"


def hermes_home() -> Path:
    """`$HERMES_HOME` (stripped; empty means unset), else `~/.hermes`."""
    env = os.environ.get("HERMES_HOME", "").strip()
    if env:
        return Path(env).expanduser()
    return Path.home() / ".hermes"


def default_db_path() -> Path:
    return hermes_home() / "state.db"


def user_cache_dir() -> Path:
    """THE cache folder (the demo store, the CJK side index): side files that must never live
    inside someone else's database. `platformdirs`: `$XDG_CACHE_HOME/hermes-tui` when that is an
    absolute path, else `~/.cache/hermes-tui` on Linux (the folder used before it), the
    platform's own elsewhere."""
    return Path(platformdirs.user_cache_dir(APP_NAME))


def user_data_dir() -> Path:
    """THE data folder (the trash of a store whose own folder is not writable): `platformdirs`,
    `$XDG_DATA_HOME/hermes-tui` or `~/.local/share/hermes-tui` on Linux."""
    return Path(platformdirs.user_data_dir(APP_NAME))


def earlier_user_data_dirs() -> list[Path]:
    """Data folders an earlier hermes-tui may have written that `user_data_dir()` no longer names
    (it read `$XDG_DATA_HOME` with `~` expanded, or `~/.local/share` on every platform): read them
    too, so nothing written there is lost. Empty on Linux with an absolute or unset variable."""
    env = os.environ.get("XDG_DATA_HOME", "").strip()
    earlier = (Path(env).expanduser() if env else Path.home() / ".local" / "share") / APP_NAME
    return [] if earlier == user_data_dir() else [earlier]


def private_dir(path: Path) -> Path:
    """`path` as a folder only we can enter: created 0700 (missing parents too), an existing
    one of ours tightened to 0700. The side files under the cache hold message text, and a
    0755 folder lets any local user list them (and read any that is not 0600).

    Folders above the cache root (`~/.cache`) are created 0700 when missing but never changed.
    """
    cache = user_cache_dir()
    for folder in [*reversed(path.parents), path]:
        try:
            folder.mkdir(mode=0o700)
        except FileExistsError:
            pass
        except OSError:
            continue
        if folder == cache or cache in folder.parents:
            _tighten(folder, 0o700)
    return path


def private_file(path: Path) -> None:
    """Create `path` 0600 if missing (never opening an existing one: closing a descriptor on a
    database drops this process's locks on it), else tighten a regular file of ours to 0600."""
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except FileExistsError:
        _tighten(path, 0o600)
    else:
        os.close(fd)


def fsync_path(path: Path) -> None:
    """Flush a file's or a folder's content (a folder: the names in it) to the disk: a private
    file written before a rename, then its folder, survives a crash whole or not at all."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _tighten(path: Path, mode: int) -> None:
    """chmod `path` to `mode` if it is ours, not a link, and looser (best effort)."""
    import stat

    try:
        st = os.lstat(path)
        if stat.S_ISLNK(st.st_mode) or st.st_uid != os.getuid():
            return
        if stat.S_IMODE(st.st_mode) != mode:
            os.chmod(path, mode)
    except OSError:
        pass
