"""Where `state.db` lives: resolved at call time, like later upstream (0.19.0 froze it at import)."""

from __future__ import annotations

import os
from pathlib import Path


def hermes_home() -> Path:
    """`$HERMES_HOME` (stripped; empty means unset), else `~/.hermes`."""
    env = os.environ.get("HERMES_HOME", "").strip()
    if env:
        return Path(env).expanduser()
    return Path.home() / ".hermes"


def default_db_path() -> Path:
    return hermes_home() / "state.db"


def user_cache_dir() -> Path:
    """Cache folder for side files that must never live inside someone else's database."""
    env = os.environ.get("XDG_CACHE_HOME", "").strip()
    base = Path(env).expanduser() if env else Path.home() / ".cache"
    return base / "hermes-tui"


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
