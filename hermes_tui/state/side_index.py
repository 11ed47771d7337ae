"""A CJK side index kept *outside* the user's database, for the queries its own indexes cannot serve.

A legacy (v22) `state.db` has no cjk index, and we must not add one (its triggers would break
hermes-agent 0.19.0's writers). And no file's bigram index can answer a single CJK character at
the end of a run. So 1–2 character CJK queries are answered from a separate FTS5 file under the
user cache folder: contentless (rowid = `messages.id`, text is read back from `state.db`), fed
with each CJK-bearing message's text (tool rows too: upstream's LIKE finds them) through `cjk_unicode61` plus every CJK character
as its own token (unigrams). It is brought up to date incrementally by message id; rows deleted
from `state.db` simply stop joining (and are purged when noticed). Until it has caught up,
search uses LIKE.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import re
import threading
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

import apsw

from .cjk import install_cjk_tokenizer
from .cjk.python_tokenizer import _CLASS as _CJK_CLASS
from .paths import user_cache_dir
from .text import content_text

BATCH = 2000
MAX_INLINE_LAG = 5000  # ids behind the store that a search may catch up inline


@functools.cache
def _cjk_finder() -> Callable[[str], list[str]]:
    return re.compile(f"[{_CJK_CLASS}]").findall  # compiled on first use (~10 ms)


def _cjk_chars(text: str) -> list[str]:
    return _cjk_finder()(text)


def side_index_path(db_path: Path) -> Path:
    key = hashlib.sha1(str(db_path.resolve()).encode()).hexdigest()[:16]
    return user_cache_dir() / "cjk-side" / f"{key}.db"


def side_text(content: object, tool_name: str | None, tool_calls: str | None) -> str | None:
    """Text to index, or None when the row has no CJK (such rows never match a CJK query)."""
    text = " ".join(x for x in (content_text(content), tool_name or "", tool_calls or "") if x)
    chars = _cjk_chars(text)
    if not chars:
        return None
    return text + "\n" + " ".join(dict.fromkeys(chars))


class SideIndex:
    """One side file per `state.db` path. Thread-safe: one writer lock, readers attach it ro."""

    def __init__(self, db_path: Path) -> None:
        self.db_path = db_path
        self.path = side_index_path(db_path)
        self._lock = threading.Lock()
        self._building: threading.Thread | None = None

    def _open(self) -> apsw.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = apsw.Connection(str(self.path))
        conn.set_busy_timeout(5000)
        install_cjk_tokenizer(conn)
        conn.execute("PRAGMA journal_mode=WAL").fetchall()  # returns a row: run it on its own
        conn.execute(
            "CREATE VIRTUAL TABLE IF NOT EXISTS side_fts USING fts5(body, content='', contentless_delete=1, "
            "tokenize='cjk_unicode61');"
            "CREATE TABLE IF NOT EXISTS side_meta(key TEXT PRIMARY KEY, value TEXT);"
        )
        return conn

    def high_water(self) -> int:
        if not self.path.exists():
            return -1
        try:
            conn = apsw.Connection(self.uri(), flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
        except apsw.Error:
            return -1
        try:
            conn.set_busy_timeout(1000)
            row = conn.execute("SELECT value FROM side_meta WHERE key = 'high_water'").fetchall()
            return int(row[0][0]) if row else -1
        except apsw.Error:  # being created or switched to WAL by the builder: not ready yet
            return -1
        finally:
            conn.close()

    def sync(self, source: apsw.Connection, limit_rows: int | None = None) -> int:
        """Index messages with id > high water (from the store connection `source`); returns new hw."""
        with self._lock:
            conn = self._open()
            try:
                row = conn.execute("SELECT value FROM side_meta WHERE key = 'high_water'").fetchall()
                hw = int(row[0][0]) if row else 0
                done = 0
                while True:
                    rows = source.execute(
                        "SELECT id, content, tool_name, tool_calls FROM messages WHERE id > ? "
                        "ORDER BY id LIMIT ?",
                        (hw, BATCH),
                    ).fetchall()
                    if not rows:
                        break
                    with conn:
                        for mid, content, tool_name, tool_calls in rows:
                            text = side_text(content, tool_name, tool_calls)
                            if text is not None:
                                conn.execute("INSERT OR REPLACE INTO side_fts(rowid, body) VALUES (?, ?)", (mid, text))
                        hw = rows[-1][0]
                        conn.execute("INSERT OR REPLACE INTO side_meta(key, value) VALUES ('high_water', ?)", (str(hw),))
                    done += len(rows)
                    if limit_rows is not None and done >= limit_rows:
                        break
                return hw
            finally:
                conn.close()

    def purge(self, ids: list[int]) -> None:
        """Drop ids that no longer exist in the store."""
        if not ids:
            return
        with self._lock:
            conn = self._open()
            try:
                with conn:
                    for mid in ids:
                        conn.execute("DELETE FROM side_fts WHERE rowid = ?", (mid,))
            finally:
                conn.close()

    def build_in_background(self, open_source) -> None:
        """Catch up in a daemon thread with its own store connection (`open_source()`)."""
        if self._building is not None and self._building.is_alive():
            return

        def run() -> None:
            src = open_source()
            try:
                self.sync(src)
            except apsw.Error:
                pass
            finally:
                with contextlib.suppress(apsw.Error):
                    src.close()

        self._building = threading.Thread(target=run, name="cjk-side-index", daemon=True)
        self._building.start()

    def uri(self) -> str:
        return f"file:{quote(str(self.path))}?mode=ro"
