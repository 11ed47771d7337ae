"""Newest first without sorting every match: a walk back by id that stops at the k newest.

`_newest_walk` reads matches by id descending and stops once no smaller id can be newer than the
k-th timestamp found; the bound is the per-block maximum timestamp (`_block_max`), built once per
process (`prepare_search`) and extended for new ids.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

from ..core import MESSAGES_RESTORED_KEY
from .model import as_bound
from .snippets import SnippetsMixin


class NewestMixin(SnippetsMixin):
    """The k newest matches of any source (an FTS index, a LIKE scan), by a bounded id walk."""

    # ------------------------------------------------------------ newest first
    _BLOCK_SHIFT = 8  # 256 ids per block: a tight bound, so one short scan usually settles it

    def _block_max(self) -> list[float]:
        """Prefix maxima of `timestamp` per block of message ids: an upper bound for "any row with
        a smaller id". Built once from the covering (session_id, timestamp) index, then extended
        for new ids; deletes only lower the true maxima, so a cached bound stays valid."""
        top, epoch = self._block_max_key()
        cache = self._blockmax_cache
        if cache is not None and cache[0] >= top and self._blockmax_epoch == epoch:
            return cache[1]
        with self._blockmax_lock:  # a search during `prepare_search` waits for it, not twice the scan
            return self._build_block_max(top, epoch)

    def _block_max_key(self) -> tuple[int, str | None]:
        """The store's largest message id and its restore token (`MESSAGES_RESTORED_KEY`)."""
        if "state_meta" not in self._columns:
            return int(self._scalar("SELECT COALESCE(MAX(id), 0) FROM messages", default=0)), None
        row = self._tuples(
            "SELECT (SELECT COALESCE(MAX(id), 0) FROM messages), "
            "(SELECT value FROM state_meta WHERE key = ?)",
            (MESSAGES_RESTORED_KEY,),
        )
        return int(row[0][0]), row[0][1]

    def _build_block_max(self, top: int, epoch: str | None) -> list[float]:
        cache = self._blockmax_cache
        if self._blockmax_epoch != epoch:  # messages came back under old ids: start over
            cache = None
        elif cache is not None and cache[0] >= top:
            return cache[1]
        start = 0 if cache is None else cache[0] + 1
        blocks = [] if cache is None else list(cache[2])
        got = self._tuples(self._block_max_sql(start, top), (self._BLOCK_SHIFT, start))
        ids_json, max_json = got[0] if got else ("[]", "[]")
        for b, mx in zip(json.loads(ids_json or "[]"), json.loads(max_json or "[]"), strict=True):
            while len(blocks) <= b:
                blocks.append(float("-inf"))
            blocks[b] = max(blocks[b], as_bound(mx))
        prefix = list(itertools.accumulate(blocks, max))
        self._blockmax_cache = (top, prefix, blocks)
        self._blockmax_epoch = epoch
        return prefix

    def _block_max_restored(self, rows: list[tuple[int, Any]], epoch: str) -> None:
        """This process restored `rows` (id, timestamp) under their old ids, writing `epoch`:
        raise their blocks' bounds, so the next newest-first search need not rebuild them."""
        with self._blockmax_lock:
            cache = self._blockmax_cache
            if cache is None:
                return
            top, _prefix, old = cache
            blocks = list(old)
            for mid, ts in rows:
                b = int(mid) >> self._BLOCK_SHIFT
                if int(mid) <= top:
                    blocks.extend([float("-inf")] * (b + 1 - len(blocks)))
                    blocks[b] = max(blocks[b], as_bound(ts))
            self._blockmax_cache = (top, list(itertools.accumulate(blocks, max)), blocks)
            self._blockmax_epoch = epoch

    # Extending the bounds by fewer than 1/16 of the store's ids reads the new rows by id: a row
    # of the table costs about as much to read as 16 entries of the (session_id, timestamp) index.
    _BLOCK_EXTEND_BY_ROWID = 16

    def _block_max_sql(self, start: int, top: int) -> str:
        """The block maxima of ids >= `start`, read the cheaper way.

        From scratch, the covering (session_id, timestamp) index is the smallest thing holding
        every timestamp. But it is ordered by session, so `id >= start` still reads all of it:
        extending the bounds after an owner's 10k appends read the whole index of a 10M store
        (54.6 s on a cold 24 GB file); by id it reads only the new rows. One row of two JSON
        arrays, not a row per block (40k blocks at 10M messages: the rows' Python cost was a
        third of the build). A text or blob maximum travels as 'x' (above every number, as
        SQLite orders it)."""
        by_rowid = start > 0 and (top - start) * self._BLOCK_EXTEND_BY_ROWID < top
        if by_rowid:
            index = "NOT INDEXED "
        elif self._has_index("idx_messages_session"):
            index = "INDEXED BY idx_messages_session "
        else:
            index = ""
        return (
            "SELECT json_group_array(b), json_group_array(CASE WHEN typeof(mx) IN ('integer', 'real') "
            "OR mx IS NULL THEN mx ELSE 'x' END) FROM (SELECT id >> ? AS b, MAX(timestamp) AS mx "
            f"FROM messages {index}WHERE id >= ? GROUP BY b)"
        )

    def prepare_search(self) -> None:
        """(+) Build now what the first newest-first search of this process would build: the
        per-block timestamp bounds, one scan of the message index (3–4 s at 10M messages). The
        browser calls it in a worker after first paint, so the first keystroke does not pay it;
        a search arriving meanwhile waits for the rest of this build instead of scanning again."""
        self._block_max()

    def _has_index(self, name: str) -> bool:
        return bool(self._scalar("SELECT 1 FROM sqlite_master WHERE type='index' AND name=?", (name,)))

    def _newest_ids(self, table: str, match: str, filters: tuple[list[str], list[Any]], k: int) -> list[int]:
        """Ids of the k newest matches of an FTS index, without scoring every match."""
        return self._newest_walk(
            f"FROM {table} JOIN messages m ON m.id = {table}.rowid JOIN sessions s ON s.id = m.session_id",
            f"{table} MATCH ?",
            [match],
            f"{table}.rowid",
            filters,
            k,
        )

    def _newest_walk(
        self,
        source: str,
        cond: str,
        cond_params: list[Any],
        id_col: str,
        filters: tuple[list[str], list[Any]],
        k: int,
    ) -> list[int]:
        """Ids of the k newest rows of `source` meeting `cond`: walk by id descending and stop
        once no smaller id can be newer than the k-th timestamp found (exact; the bounds are
        the message index's block maxima)."""
        import heapq

        where, params = filters
        prefix: list[float] | None = None  # read only when one batch does not settle it
        top: list[tuple[float, int]] = []  # min-heap of (timestamp, id)
        cursor: int | None = None
        batch = max(200, 4 * k)
        conn = self._conn()
        while True:
            below = "" if cursor is None else f" AND {id_col} < {int(cursor)}"
            rows: list[tuple[Any, ...]] = conn.execute(
                f"SELECT m.id, m.timestamp {source} WHERE {cond}{below}"
                + "".join(" AND " + w for w in where)
                + f" ORDER BY {id_col} DESC LIMIT {batch}",
                [*cond_params, *params],
            ).fetchall()
            for mid, ts in rows:
                item = (as_bound(ts), int(mid))
                if len(top) < k:
                    heapq.heappush(top, item)
                elif item > top[0]:
                    heapq.heapreplace(top, item)
            if len(rows) < batch:
                break
            cursor = rows[-1][0]
            if len(top) >= k:
                if prefix is None:
                    prefix = self._block_max()
                b = (cursor - 1) >> self._BLOCK_SHIFT
                bound = prefix[min(b, len(prefix) - 1)] if prefix and b >= 0 else float("-inf")
                if bound < top[0][0]:
                    break
            batch = min(batch * 2, 20000)
        return [mid for _ts, mid in top]
