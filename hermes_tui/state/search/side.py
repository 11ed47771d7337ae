"""The CJK side index: a private bigram index beside a file whose writer built none.

It answers CJK queries the store's own indexes cannot (every CJK query on 0.19.0's files, lone CJK
characters on v23 ones); while it is built, it answers for the ids it holds and a LIKE scan reads
the rest. Writes through this store drop deleted or rewritten text from it (`_side_write_guard`).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import apsw

from ..fts_query import contains_cjk
from ..side_index import MAX_INLINE_LAG
from ..text import read_rows
from .model import NEWEST_BY_ID_SQL, OLDEST_BY_ID_SQL, SortOrder
from .parse import ParsedQuery
from .scan import ScanMixin, like_where
from .snippets import with_marked_snippets
from .sql import ids_between, marked_select, rowids_in

if TYPE_CHECKING:
    from ..core import _Core
    from ..side_index import SideIndex


def source_connection(db: _Core) -> apsw.Connection:
    """A private connection for the background side-index build (never shared across threads)."""
    from ..connection import open_connection

    return open_connection(db.db_path, read_only=True)


class SideMixin(ScanMixin):
    """The side index's route, its build and upkeep hooks, and its progress for the browser."""

    # ------------------------------------------------------------ side index
    @contextlib.contextmanager
    def _side_write_guard(self) -> Iterator[None]:
        """A write guard (`_Core._write_guards`) keeping the side index private: messages a write
        deletes or rewrites (seen by TEMP triggers on this connection) leave the side file before
        the write returns, or, inside `_side_batch()`, when the batch ends."""
        pending = self._watch_messages()
        try:
            yield
        finally:
            if pending and not self._local.side_defer:
                self._side_forget(pending)

    def _watch_messages(self) -> list[int]:
        """This connection's list of message ids deleted or rewritten since the last drain.

        TEMP triggers live in this connection only (the file is untouched, other writers never
        see them) and call back into Python just for deletes and text updates, never appends.
        """
        pending = self._local.side_pending
        if pending is not None:
            return pending
        if "messages" not in self._columns:
            return []
        pending = []
        conn = self._conn()

        def note(*mid: Any) -> None:  # registered with one argument: the message id
            pending.append(mid[0])

        conn.create_scalar_function("hermes_side_note", note, 1)
        conn.execute(
            "CREATE TEMP TRIGGER IF NOT EXISTS hermes_side_delete AFTER DELETE ON main.messages "
            "BEGIN SELECT hermes_side_note(old.id); END;"
            "CREATE TEMP TRIGGER IF NOT EXISTS hermes_side_update AFTER UPDATE OF content, "
            "tool_name, tool_calls "
            "ON main.messages BEGIN SELECT hermes_side_note(old.id); END;"
        )
        self._local.side_pending = pending
        return pending

    def _side_forget(self, pending: list[int]) -> None:
        ids = list(pending)
        pending.clear()
        if ids and self._cjk_impl is not None:
            self._side().forget(ids, self._conn())

    @contextlib.contextmanager
    def _side_batch(self) -> Iterator[None]:
        """Writes inside leave the side index once, at the end (a batched delete rewrites it once)."""
        if self._local.side_defer or self.read_only:
            yield
            return
        self._local.side_defer = True
        try:
            yield
        finally:
            self._local.side_defer = False
            pending = self._local.side_pending
            if pending:
                self._side_forget(pending)

    def _side_check(self) -> None:
        """After opening (a `_Core._open_hooks` step): if this store has a side file, drop from it
        the messages another program deleted since it was last checked, in the background (the
        README's promise: they leave it the next time we open the store)."""
        if self._cjk_impl is not None:
            self._side().check_in_background(lambda: source_connection(self))

    def _side_stop(self) -> None:
        """Before closing (a `_Core._close_hooks` step): end the side index's background work."""
        if self._side_index is not None:
            self._side_index.stop()

    def _side(self) -> SideIndex:
        side = self._side_index
        if side is None:
            from ..side_index import SideIndex

            side = self._side_index = SideIndex(self.db_path)
        return side

    def _side_reach(self) -> tuple[int, int] | None:
        """`(held, newest)`: the side index answers for message ids up to `held`, the store's
        newest is `newest`; `held >= newest` when it answers for every message. It catches up
        inline when only a little behind (10k new messages take ~0.16 s to index; the LIKE
        route it would otherwise take costs ~1 s at 1M), and builds on a background thread
        otherwise. None when it cannot help yet (no side index, or none of it built)."""
        if self._cjk_impl is None:
            return None
        side = self._side()
        top = int(self._scalar("SELECT COALESCE(MAX(id), 0) FROM messages", default=0))
        hw = side.high_water()
        if hw >= top:
            if not side.reconciled:  # built since this store was opened: check it once, aside
                side.build_in_background(lambda: source_connection(self))
            return top, top
        if hw >= 0 and top - hw <= MAX_INLINE_LAG:
            side.sync(self._conn(), reconcile=False)
            if not side.reconciled:  # forget rows deleted elsewhere, off this search's path
                side.build_in_background(lambda: source_connection(self))
            return top, top
        side.build_in_background(lambda: source_connection(self))
        return (hw, top) if hw > 0 else None

    def cjk_index_progress(self, query: str | None = None) -> tuple[int, int] | None:
        """(+) `(indexed, newest)` message ids while the CJK side index is being built or is far
        behind the store: the CJK searches it answers (every CJK query on 0.19.0's files, single
        CJK characters on v23 ones) are substring scans meanwhile (minutes at 10M), and the
        browser says how far the index is. None when no side index applies (or ``query`` has no
        CJK), or when the next CJK search catches up inline."""
        if self._cjk_impl is None or (query is not None and not contains_cjk(query)):
            return None
        top = int(self._scalar("SELECT COALESCE(MAX(id), 0) FROM messages", default=0))
        hw = self._side().high_water()
        if top <= 0 or hw >= top or (hw >= 0 and top - hw <= MAX_INLINE_LAG):
            return None
        return max(0, hw), top

    def build_cjk_side_index(self) -> int:
        """(+) Bring the CJK side index fully up to date now (blocking); returns its high water."""
        return self._side().sync(self._conn())

    def _attach_side(self) -> apsw.Connection:
        """This thread's connection with the side index attached read-only as `cjk_side`."""
        conn = self._conn()
        if not any(r[1] == "cjk_side" for r in conn.execute("PRAGMA database_list")):
            conn.execute("ATTACH DATABASE ? AS cjk_side", (self._side().uri(),))
        return conn

    def _side_route(
        self,
        parsed: ParsedQuery,
        filters: tuple[list[str], list[Any]],
        sort: SortOrder,
        limit: int,
        offset: int,
    ) -> list[dict[str, Any]]:
        conn = self._attach_side()
        where, params = filters
        match = parsed.scan_match
        order = OLDEST_BY_ID_SQL if sort is SortOrder.OLDEST else NEWEST_BY_ID_SQL
        if sort is not SortOrder.OLDEST and limit >= 0:
            # Newest first (the LIKE route's only order, so also "rank"): bounded rowid walk,
            # instead of reading every matching message to sort it (a common character: 190 ms).
            ids = self._newest_ids("side_fts", match, filters, limit + offset)
            if not ids:
                return []
            where, params = [*where, rowids_in("f", ids)], [*params, json.dumps(ids)]
        sql = (
            marked_select(
                "cjk_side.side_fts f JOIN messages m ON m.id = f.rowid JOIN sessions s ON s.id = m.session_id"
            )
            + " WHERE f.side_fts MATCH ?"
            + "".join(" AND " + w for w in where)
            + f" {order} LIMIT +? OFFSET +?"
        )
        return with_marked_snippets(
            read_rows(conn, sql, [match, *params, limit, offset]), parsed.scan_boolean.terms
        )

    def _side_with_gap(
        self,
        parsed: ParsedQuery,
        reach: tuple[int, int],
        filters: tuple[list[str], list[Any]],
        sort: SortOrder,
        limit: int,
        offset: int,
    ) -> list[dict[str, Any]]:
        """The CJK side index while it is built: its matches among the ids it holds (up to its
        high water, read once: the builder adds batches meanwhile) merged with LIKE matches among
        the newer ids. The scan shrinks as the build goes on (the whole store when it starts)."""
        held = ids_between(filters, None, reach[0])
        return self._merged_with_gap(
            lambda order, want: self._side_route(parsed, held, order, want, 0),
            like_where(parsed.scan_boolean),
            reach,
            filters,
            sort,
            limit,
            offset,
        )
