"""The `cjk_unicode61` FTS5 tokenizer: the compiled extension when built, else its pure-Python twin.

Every connection of the store registers it, because a database carrying cjk triggers refuses
*every* message insert from a connection that lacks the tokenizer.  Both
implementations emit identical tokens, so an index written through one stays consistent
when maintained through the other.
"""

from __future__ import annotations

import contextlib
import importlib.machinery
import os
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

import apsw

from . import python_tokenizer

__all__ = [
    "ENTRY_POINT",
    "NAME",
    "cjk_index_enabled",
    "compiled_extension_path",
    "install_cjk_tokenizer",
    "tokenize",
]

NAME = python_tokenizer.NAME
ENTRY_POINT = "sqlite3_ftscjk_init"
_DISABLED = frozenset({"0", "false", "off", "no"})
_HERE = Path(__file__).resolve().parent


def cjk_index_enabled() -> bool:
    """False when `HERMES_CJK_FTS` is one of `0,false,off,no` (upstream's `sessions.cjk_fts`)."""
    return os.environ.get("HERMES_CJK_FTS", "").strip().lower() not in _DISABLED


def compiled_extension_path() -> Path | None:
    """The extension to load: `$HERMES_FTS5_CJK_SO` if set, else the one built in this package.

    An explicit `HERMES_FTS5_CJK_SO` that does not exist yields None rather than silently
    picking another build: the operator asked for that file.
    """
    env = os.environ.get("HERMES_FTS5_CJK_SO", "").strip()
    if env:
        p = Path(env).expanduser()
        return p if p.is_file() else None
    suffixes = [*importlib.machinery.EXTENSION_SUFFIXES, ".so", ".dylib", ".dll"]
    for suffix in dict.fromkeys(suffixes):
        cand = _HERE / f"_fts5_cjk{suffix}"
        if cand.is_file():
            return cand
    return None


def _fts5_available(conn: apsw.Connection) -> bool:
    try:
        conn.fts5_tokenizer("unicode61")
    except (apsw.Error, AttributeError):
        return False
    return True


def _load_c(conn: apsw.Connection, path: Path) -> bool:
    """Load the extension into `conn`; extension loading is switched off again afterwards."""
    try:
        conn.enable_load_extension(True)
        conn.load_extension(str(path), ENTRY_POINT)
    except (apsw.Error, AttributeError, OSError):
        return False
    finally:
        with contextlib.suppress(apsw.Error, AttributeError):
            conn.enable_load_extension(False)
    return True


def install_cjk_tokenizer(conn: apsw.Connection, prefer: str | None = None) -> str | None:
    """Register `cjk_unicode61` on `conn`; return "c", "python", or None.  Never raises.

    None means not registered: disabled by `HERMES_CJK_FTS`, FTS5 missing, or (only with
    `prefer="c"`, which never falls back) the extension could not be loaded.
    `prefer="python"` forces the twin (tests); the default tries the extension first.
    """
    try:
        if not cjk_index_enabled() or not _fts5_available(conn):
            return None
        if prefer != "python":
            path = compiled_extension_path()
            if path is not None and _load_c(conn, path):
                return "c"
            if prefer == "c":
                return None
        python_tokenizer.register(conn)
        return "python"
    except Exception:  # never raise into the store's open path
        return None


@lru_cache(maxsize=4)
def _scratch(impl: str) -> apsw.Connection:
    conn = apsw.Connection(":memory:")
    got = install_cjk_tokenizer(conn, prefer=impl)
    if got != impl:
        conn.close()
        raise RuntimeError(f"cjk_unicode61 ({impl}) unavailable: install returned {got!r}")
    return conn


def tokenize(
    text: str,
    args: Sequence[str] = (),
    impl: str = "python",
    flags: int = apsw.FTS5_TOKENIZE_DOCUMENT,
) -> list[tuple[str, int, int]]:
    """`(token, start, end)` list for `text`, through FTS5 on a scratch connection.

    Both implementations go through the same `fts5_tokenizer` machinery, so comparing
    their outputs compares exactly what FTS5 would index.  Colocated tokens are dropped.
    """
    if impl not in ("python", "c"):
        raise ValueError(f"impl must be 'python' or 'c', not {impl!r}")
    # The tokenizer object is not cached: APSW lets it outlive its connection, and SQLite
    # unloads an extension when the connection closes, so a stray one would call freed code.
    tok = _scratch(impl).fts5_tokenizer(NAME, list(args))
    try:
        got = tok(text.encode("utf-8"), flags, None, include_colocated=False)
    finally:
        del tok
    out: list[tuple[str, int, int]] = []
    for t in got:
        match t:  # with offsets (the default) each token is (start, end, token, *colocated)
            case (int() as start, int() as end, str() as token, *_):
                out.append((token, start, end))
            case _:
                raise TypeError(f"unexpected token shape from fts5_tokenizer: {t!r}")
    return out
