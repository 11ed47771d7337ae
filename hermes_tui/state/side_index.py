"""A CJK side index kept *outside* the user's database, for the queries its own indexes cannot serve.

A legacy (v22) `state.db` has no cjk index, and we must not add one (its triggers would break
hermes-agent 0.19.0's writers). And no file's bigram index can answer a single CJK character at
the end of a run. So 1–2 character CJK queries are answered from a separate FTS5 file under the
user cache folder: contentless (rowid = `messages.id`, text is read back from `state.db`), fed
with each CJK-bearing message's text (tool rows too: upstream's LIKE finds them) through
`cjk_unicode61` plus every CJK character as its own token (unigrams). It is brought up to date
incrementally by message id. Until it has caught up, search uses LIKE.

It holds message text, so it is private like the store: files 0600 in 0700 folders, and text
deleted from `state.db` leaves it before the deleting call returns (`forget`: the rows are
deleted, the index rewritten without them, freed pages zeroed, the WAL truncated). Rows another
program deletes are forgotten the next time a store is opened (`SideIndex.check_in_background`,
`_reconcile`): a count compared with the one noted at the last check says whether any indexed
message can have gone, so the ids are walked only when one did.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import re
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any
from urllib.parse import quote

import apsw

from ..safe_text import as_text
from .cjk import install_cjk_tokenizer
from .cjk.python_tokenizer import _CLASS as _CJK_CLASS
from .connection import stable_plans
from .fts_upkeep import varint
from .paths import private_dir, private_file, user_cache_dir
from .text import content_text

BATCH = 2000
MAX_INLINE_LAG = 20_000  # ids behind the store that a search catches up inline (~0.3 s)
# side_meta keys of the deletion check (`_reconcile`): the store had CHECKED_ROWS messages with
# ids up to CHECKED_THROUGH (`_rows_through`) when the index last held none that had gone, plus
# what we have indexed, deleted and restored since (counted as it happens).
CHECKED_THROUGH = "checked_through"
CHECKED_ROWS = "checked_rows"


@functools.cache
def _cjk_finder() -> Callable[[str], list[str]]:
    return re.compile(f"[{_CJK_CLASS}]").findall  # compiled on first use (~10 ms)


def _cjk_chars(text: str) -> list[str]:
    return _cjk_finder()(text)


def side_index_path(db_path: Path) -> Path:
    key = hashlib.sha1(str(db_path.resolve()).encode()).hexdigest()[:16]
    return user_cache_dir() / "cjk-side" / f"{key}.db"


def side_text(content: object, tool_name: object, tool_calls: object) -> str | None:
    """Text to index, or None when the row has no CJK (such rows never match a CJK query).

    `tool_name` and `tool_calls` are whatever the row holds: another writer may have stored
    bytes or a number there, which read as text (`as_text`) instead of failing the sync."""
    text = " ".join(x for x in (content_text(content), as_text(tool_name), as_text(tool_calls)) if x)
    chars = _cjk_chars(text)
    if not chars:
        return None
    return text + "\n" + " ".join(dict.fromkeys(chars))


def _as_int(value: object) -> int:
    """A message id or the stored high-water mark: an integer, or its decimal text."""
    if isinstance(value, (int, str)):
        return int(value)
    raise TypeError(f"expected an integer, got {type(value).__name__}")


class SideIndex:
    """One side file per `state.db` path. Thread-safe: one writer lock, readers attach it ro."""

    def __init__(self, db_path: Path) -> None:
        self.db_path = db_path
        self.path = side_index_path(db_path)
        self._lock = threading.Lock()
        self._building: threading.Thread | None = None
        self._source: apsw.Connection | None = None  # the background build's, for `stop()`
        self._stopping = threading.Event()
        self._reconciled = False

    def _open(self) -> apsw.Connection:
        private_dir(self.path.parent)
        private_file(self.path)
        conn = apsw.Connection(str(self.path))
        conn.set_busy_timeout(5000)
        stable_plans(conn)
        install_cjk_tokenizer(conn)
        conn.execute("PRAGMA journal_mode=WAL").fetchall()  # returns a row: run it on its own
        conn.execute("PRAGMA secure_delete=ON")  # freed pages are zeroed: deleted text leaves the file
        conn.execute(
            "CREATE VIRTUAL TABLE IF NOT EXISTS side_fts USING fts5(body, content='', contentless_delete=1, "
            "tokenize='cjk_unicode61');"
            "CREATE TABLE IF NOT EXISTS side_meta(key TEXT PRIMARY KEY, value TEXT);"
        )
        for suffix in ("-wal", "-shm"):  # SQLite creates them with the file's mode; older ones may be 0644
            side = Path(str(self.path) + suffix)
            if side.exists():
                private_file(side)
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
            return _as_int(row[0][0]) if row else -1
        except apsw.Error:  # being created or switched to WAL by the builder: not ready yet
            return -1
        finally:
            conn.close()

    def sync(self, source: apsw.Connection, limit_rows: int | None = None, reconcile: bool = True) -> int:
        """Index messages with id > high water (from the store connection `source`); returns new hw.

        The first sync of a process first forgets rows deleted behind our back (`_reconcile`),
        unless ``reconcile`` is False: a search catching up inline leaves that check (every
        indexed id: 2.7 s at 10M) to `build_in_background`, since its results join `messages`.

        The lock is taken per batch, so a `forget` waits for one batch at most, and each batch's
        ids are re-read after they are written: a row deleted meanwhile (by any process: its
        `forget` ran before our write or runs after this check) is dropped again.
        """
        done = 0
        hw = 0
        first = True
        while not self._stopping.is_set():
            with self._lock:
                conn = self._open()
                try:
                    if first and reconcile and not self._reconciled:
                        self._reconcile(conn, source)
                        self._reconciled = True
                    first = False
                    row = conn.execute("SELECT value FROM side_meta WHERE key = 'high_water'").fetchall()
                    hw = _as_int(row[0][0]) if row else 0
                    rows = source.execute(
                        "SELECT id, content, tool_name, tool_calls FROM messages WHERE id > ? "
                        "ORDER BY id LIMIT ?",
                        (hw, BATCH),
                    ).fetchall()
                    if not rows:
                        return hw
                    written: list[int] = []
                    with conn:
                        for mid, content, tool_name, tool_calls in rows:
                            text = side_text(content, tool_name, tool_calls)
                            if text is not None:
                                conn.execute(
                                    "INSERT OR REPLACE INTO side_fts(rowid, body) VALUES (?, ?)", (mid, text)
                                )
                                written.append(_as_int(mid))
                        _mark_indexed(conn, len(rows), hw, _as_int(rows[-1][0]))
                        hw = _as_int(rows[-1][0])
                        conn.execute(
                            "INSERT OR REPLACE INTO side_meta(key, value) VALUES ('high_water', ?)",
                            (str(hw),),
                        )
                    gone = set(written) - _existing(source, written)
                    if gone:
                        self._drop(conn, gone)
                finally:
                    conn.close()
            done += len(rows)
            if limit_rows is not None and done >= limit_rows:
                return hw
        return hw

    def forget(self, ids: Iterable[int], source: apsw.Connection) -> bool:
        """Make the side file hold exactly the store's current text for `ids` (deleted or changed
        messages), with no trace of the old text on disk. Returns whether anything changed.

        Nothing to do (and no file created) when the side file does not exist or holds none of them.
        """
        wanted = sorted({int(i) for i in ids})
        if not wanted or not self.path.exists():
            return False
        with self._lock:
            conn = self._open()
            try:
                with conn:  # our own deletions move the count the next check expects
                    _mark_changed(conn, wanted, -1, source)
                held = _held(conn, wanted)
                if not held:
                    return False
                current = _current_texts(source, sorted(held))
                with conn:
                    for mid in held:
                        conn.execute("DELETE FROM side_fts WHERE rowid = ?", (mid,))
                        text = current.get(mid)
                        if text is not None:
                            conn.execute("INSERT INTO side_fts(rowid, body) VALUES (?, ?)", (mid, text))
                self._scrub(conn)
                return True
            finally:
                conn.close()

    def reindex(self, ids: Iterable[int], source: apsw.Connection) -> int:
        """Index the store's current text of existing messages `ids`, whatever the high water.

        `sync` only walks ids above its high-water mark, so rows put back under their old ids
        (a trash restore) would never be indexed. Ids that no longer exist or hold no CJK are
        dropped from the file. Nothing happens (and no file is created) when there is no side
        file yet: its first sync indexes every id. Returns how many ids were (re)indexed.
        """
        wanted = sorted({int(i) for i in ids})
        if not wanted or not self.path.exists():
            return 0
        indexed = 0
        with self._lock:
            conn = self._open()
            try:
                for start in range(0, len(wanted), BATCH):
                    part = wanted[start : start + BATCH]
                    current = _current_texts(source, part)
                    held = set(_held(conn, part))
                    dropped = False
                    with conn:
                        _mark_changed(conn, current, +1)  # brought back: counted again
                        for mid in part:
                            text = current.get(mid)
                            if text is not None:
                                conn.execute(
                                    "INSERT OR REPLACE INTO side_fts(rowid, body) VALUES (?, ?)", (mid, text)
                                )
                                indexed += 1
                            elif mid in held:
                                conn.execute("DELETE FROM side_fts WHERE rowid = ?", (mid,))
                                dropped = True
                    # Deleted while we wrote (another process, between our read and our write).
                    gone = {m for m in part if m in current} - _existing(
                        source, [m for m in part if m in current]
                    )
                    if gone:
                        self._drop(conn, gone)
                    elif dropped:
                        self._scrub(conn)
            finally:
                conn.close()
        return indexed

    def purge(self, ids: list[int]) -> None:
        """Drop ids that no longer exist in the store (and their text from the file)."""
        if not ids or not self.path.exists():
            return
        with self._lock:
            conn = self._open()
            try:
                self._drop(conn, ids)
            finally:
                conn.close()

    def _reconcile(self, conn: apsw.Connection, source: apsw.Connection) -> None:
        """Forget rows deleted from the store behind our back (by another program, or while no
        hermes-tui was running), walking the indexed ids only when one of them can have gone.

        `CHECKED_ROWS` is what the store's count of messages up to `CHECKED_THROUGH` should be if
        nobody else deleted any: measured at the last check, then moved by every batch we index,
        every message our own writes delete (`forget`) and every one a restore brings back
        (`reindex`). The same count now (`_rows_through`, cheap) means no other program deleted a
        message up to there; any difference (or no mark: an older side file) walks every indexed
        id. The new count is read before the walk, so a deletion during it is either seen by the
        walk or shows at the next check. (Counted through `messages_fts`: a storage conversion in
        progress, which grows that index without new messages, also makes the count differ.)
        """
        meta = _meta(conn)
        hw = int(meta.get("high_water", 0))
        through = int(meta[CHECKED_THROUGH]) if CHECKED_THROUGH in meta else None
        now, then = _rows_through(source, hw, hw if through is None else through)
        if through is None or CHECKED_ROWS not in meta or then != int(meta[CHECKED_ROWS]):
            held = [r[0] for r in conn.execute("SELECT id FROM side_fts_docsize")]
        else:
            held = [r[0] for r in conn.execute("SELECT id FROM side_fts_docsize WHERE id > ?", (through,))]
        gone: set[int] = set()
        for i in range(0, len(held), 50_000):
            if self._stopping.is_set():
                return  # (the mark stays as it was: the next open checks again)
            part = held[i : i + 50_000]
            gone |= set(part) - _existing(source, part)
        if gone:
            self._drop(conn, gone)
        with conn:
            _set_mark(conn, hw, now)

    @staticmethod
    def _drop(conn: apsw.Connection, ids: Iterable[int]) -> None:
        with conn:
            for mid in ids:
                conn.execute("DELETE FROM side_fts WHERE rowid = ?", (mid,))
        SideIndex._scrub(conn)

    @staticmethod
    def _scrub(conn: apsw.Connection) -> None:
        """Remove deleted text from the file's bytes: FTS5 keeps a deleted row's tokens in its
        segments until they are merged, so rewrite the index (`optimize`, with secure_delete the
        freed pages are zeroed), then copy the WAL back and truncate it (best effort: a reader
        of the old snapshot keeps the WAL until it is done)."""
        conn.execute("INSERT INTO side_fts(side_fts) VALUES ('optimize')")
        with contextlib.suppress(apsw.Error):
            conn.wal_checkpoint(mode=apsw.SQLITE_CHECKPOINT_TRUNCATE)

    @property
    def reconciled(self) -> bool:
        """This process has checked the indexed ids against the store once (`_reconcile`)."""
        return self._reconciled

    def wait(self, timeout: float | None = None) -> None:
        """Wait for the background build, if one runs (tests, and closing)."""
        if self._building is not None:
            self._building.join(timeout)

    def stop(self, timeout: float = 10.0) -> None:
        """End the background build (its current statement is interrupted) and wait for it."""
        self._stopping.set()
        source = self._source
        if source is not None:
            with contextlib.suppress(apsw.Error):
                source.interrupt()
        self.wait(timeout)

    def check_in_background(self, open_source: Callable[[], apsw.Connection]) -> None:
        """On opening a store that has a side file: forget what another program deleted since the
        last check, and catch up, in the background (`sync` checks first). Never raises: a
        cache folder we may not read (another user's HOME) only means there is nothing to check."""
        try:
            exists = self.path.exists()
        except OSError:
            return
        if exists:
            self.build_in_background(open_source)

    def build_in_background(self, open_source: Callable[[], apsw.Connection]) -> None:
        """Catch up in a daemon thread with its own store connection (`open_source()`)."""
        if self._stopping.is_set() or (self._building is not None and self._building.is_alive()):
            return

        def run() -> None:
            try:
                src = open_source()
            except Exception:  # the store cannot be read now: the next open tries again
                return
            self._source = src
            try:
                self.sync(src)
            except apsw.Error:
                pass
            finally:
                self._source = None
                with contextlib.suppress(apsw.Error):
                    src.close()

        self._building = threading.Thread(target=run, name="cjk-side-index", daemon=True)
        self._building.start()

    def uri(self) -> str:
        return f"file:{quote(str(self.path))}?mode=ro"


def _meta(conn: apsw.Connection) -> dict[str, str]:
    return {str(k): str(v) for k, v in conn.execute("SELECT key, value FROM side_meta")}


def _set_mark(conn: apsw.Connection, through: int, rows: int) -> None:
    conn.execute(
        "INSERT OR REPLACE INTO side_meta(key, value) VALUES (?, ?), (?, ?)",
        (CHECKED_THROUGH, str(through), CHECKED_ROWS, str(rows)),
    )


def _mark_indexed(conn: apsw.Connection, rows: int, old_hw: int, new_hw: int) -> None:
    """A batch read the store's `rows` messages in (old_hw, new_hw]: a mark at old_hw follows."""
    meta = _meta(conn)
    if meta.get(CHECKED_THROUGH) == str(old_hw) and CHECKED_ROWS in meta:
        _set_mark(conn, new_hw, int(meta[CHECKED_ROWS]) + rows)


def _mark_changed(
    conn: apsw.Connection, ids: Iterable[int], sign: int, gone_from: apsw.Connection | None = None
) -> None:
    """Our own write brought back (+1) or deleted (-1: those of `ids` that `gone_from`, the store,
    no longer has) messages `ids`: those up to the mark move the count it expects."""
    meta = _meta(conn)
    if CHECKED_THROUGH not in meta or CHECKED_ROWS not in meta:
        return
    through = int(meta[CHECKED_THROUGH])
    mine = [i for i in ids if i <= through]
    if gone_from is not None:
        mine = sorted(set(mine) - _existing(gone_from, mine))
    if mine:
        _set_mark(conn, through, int(meta[CHECKED_ROWS]) + sign * len(mine))


def _current_texts(source: apsw.Connection, ids: list[int]) -> dict[int, str | None]:
    """What the side index should hold for each of `ids` the store still has, read now
    (`side_text`; None: no CJK): `forget` and `reindex` put back exactly this."""
    return {
        mid: side_text(content, tool_name, tool_calls)
        for mid, content, tool_name, tool_calls in source.execute(
            "SELECT id, content, tool_name, tool_calls FROM messages "
            "WHERE id IN (SELECT value FROM json_each(?))",
            (json.dumps(ids),),
        )
    }


def _rows_through(source: apsw.Connection, *ids: int) -> tuple[int, ...]:
    """For each of `ids`, how many messages the store has with an id up to it, in one snapshot.

    Read without counting the table: FTS5 keeps the number of rows of the full-text index
    `messages_fts` in its averages record (`%_data` row 1, a varint first), and every writer's
    triggers keep that index in step with `messages` (0.19.0's and ours); then only the rows above
    each id are counted (the newest rows, few). Without that index, `count(*)`.
    """
    above = ", ".join("(SELECT count(*) FROM messages WHERE id > ?)" for _ in ids)
    row: tuple[Any, ...]
    try:
        row = source.execute(
            f"SELECT (SELECT block FROM messages_fts_data WHERE id = 1), {above}", ids
        ).fetchall()[0]
        block = row[0]
        total = varint(block, 0)[0] if isinstance(block, bytes) and block else 0
    except apsw.SQLError:  # no such table
        row = source.execute(f"SELECT (SELECT count(*) FROM messages), {above}", ids).fetchall()[0]
        total = int(row[0])
    return tuple(total - int(n) for n in row[1:])


def _existing(source: apsw.Connection, ids: list[int]) -> set[int]:
    """The ids of `ids` that `messages` still has (one fresh read)."""
    if not ids:
        return set()
    return {
        r[0]
        for r in source.execute(
            "SELECT id FROM messages WHERE id IN (SELECT value FROM json_each(?))", (json.dumps(list(ids)),)
        )
    }


def _held(conn: apsw.Connection, ids: list[int]) -> list[int]:
    """The ids of `ids` the side index holds (contentless_delete keeps a docsize row per id)."""
    return [
        r[0]
        for r in conn.execute(
            "SELECT id FROM side_fts_docsize WHERE id IN (SELECT value FROM json_each(?)) ORDER BY id",
            (json.dumps(ids),),
        )
    ]
