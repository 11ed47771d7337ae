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
