"""Bounded FTS5 upkeep: incremental `'merge'` steps that keep the v23 indexes at few segments.

FTS5 writes every transaction's terms as a new segment and merges only when a level has
`automerge` (4) of them, so a store written one message at a time keeps 13–22 segments per
index at 1M messages. Every lookup visits every segment: a query with no hits cost 0.35 ms
against 0.04 ms on one segment, because v23 also retries it on two more indexes. Upstream
0.19.0 runs a full `'optimize'` inside every 1,000th write (a 16 s stall at 1M); later
upstream runs bounded `'merge'` steps with `usermerge` 2 instead, which is what this does, off
the caller's thread, one short transaction per step, never a whole-index rewrite at once.
Once the small segments add up to `FULL_MERGE_SHARE` of the largest, the same bounded steps
run FTS5's incremental optimize until one segment is left (no-hit lookups cost 0.03 ms there
against 0.05 ms on the 4–7 segments that level merges leave at 1M).

`usermerge` is a row in the index's own `%_config`; it only steers explicit `'merge'`
commands, so other writers of the file (whose write path never issues one) are unaffected.
"""

from __future__ import annotations

from typing import Any

import apsw

#: Pages one `'merge'` step writes (~0.06 ms a page here: ~8 ms of write lock per step).
MERGE_PAGES = 128
#: Steps per index per round; the next round (1,000 writes later) picks up where this one left.
MERGE_MAX_STEPS = 64
#: Segments at one level that make it eligible for a positive-N merge (later upstream's value).
USERMERGE = 2
#: A full merge into one segment starts once the smaller segments hold this share of the
#: largest one's pages. Each page is then rewritten about (1 + s) / s = 9 more times over the
#: index's life (upstream 0.19.0 rewrites the whole index every 1,000 writes), and between full
#: merges a lookup visits one large segment and a few small ones.
FULL_MERGE_SHARE = 0.125


def varint(data: bytes, i: int) -> tuple[int, int]:
    """SQLite's big-endian varint (7 bits a byte, the 9th byte whole); returns (value, next i)."""
    value = 0
    for n in range(9):
        b = data[i + n]
        if n == 8:
            return (value << 8) | b, i + 9
        value = (value << 7) | (b & 0x7F)
        if not b & 0x80:
            return value, i + n + 1
    raise ValueError("bad varint")  # pragma: no cover - the loop always returns


def structure(conn: apsw.Connection, table: str) -> list[tuple[int, list[int]]]:
    """(segments being merged, [leaf pages of each segment]) per level of an FTS5 index.

    Decoded from its structure record (`%_data` id 10); layout (fts5_index.c,
    fts5StructureDecode): a 4-byte cookie, an optional V2 marker `FF 00 00 01`, varints nLevel,
    nSegment, nWriteCounter; per level nMerge and nSeg, then per segment id, first and last
    page (V2: five more varints). Raises ValueError if the record does not decode to exactly
    its own length, so a format change cannot pass unnoticed.
    """
    rows: list[tuple[Any, ...]] = conn.execute(f'SELECT block FROM "{table}_data" WHERE id = 10').fetchall()
    if not rows or not rows[0][0]:
        return []
    data = bytes(rows[0][0])
    v2 = data[4:8] == b"\xff\x00\x00\x01"
    i = 8 if v2 else 4
    n_levels, i = varint(data, i)
    n_segments, i = varint(data, i)
    _writes, i = varint(data, i)
    levels = []
    for _ in range(n_levels):
        n_merge, i = varint(data, i)
        n_seg, i = varint(data, i)
        pages = []
        for _ in range(n_seg):
            _id, i = varint(data, i)
            first, i = varint(data, i)
            last, i = varint(data, i)
            for _ in range(5 if v2 else 0):
                _v, i = varint(data, i)
            pages.append(max(0, last - first + 1))
        levels.append((n_merge, pages))
    if sum(len(p) for _m, p in levels) != n_segments or i != len(data):
        raise ValueError(f"unexpected FTS5 structure record in {table}")
    return levels


def level_sizes(conn: apsw.Connection, table: str) -> list[int]:
    """Segments per level of an FTS5 index."""
    return [len(pages) for _m, pages in structure(conn, table)]


def segment_count(conn: apsw.Connection, table: str) -> int:
    """Segments in an FTS5 index: what every term lookup visits."""
    return sum(level_sizes(conn, table))


def merge_step(conn: apsw.Connection, table: str, pages: int | None = None) -> bool:
    """One bounded merge of `pages` (default `MERGE_PAGES`) inside the caller's transaction;
    True when it did any work.

    FTS5's documented test: total_changes() grows by less than 2 when there was nothing to merge.
    """
    before = conn.total_changes()
    n = MERGE_PAGES if pages is None else int(pages)
    conn.execute(f'INSERT INTO "{table}"("{table}", rank) VALUES(\'merge\', ?)', (n,))
    return conn.total_changes() - before >= 2


def wants_full_merge(conn: apsw.Connection, table: str, share: float | None = None) -> bool:
    """Is merging the whole index into one segment worth rewriting its largest segment?
    (`share` defaults to `FULL_MERGE_SHARE`.)"""
    pages = [n for _merge, level in structure(conn, table) for n in level]
    if len(pages) < 2:
        return False
    largest = max(pages)
    return sum(pages) - largest >= (FULL_MERGE_SHARE if share is None else share) * largest


def start_full_merge(conn: apsw.Connection, table: str, pages: int | None = None) -> bool:
    """Begin FTS5's incremental optimize inside the caller's transaction; True when it worked.

    A negative `'merge'` moves every segment onto one level and merges N pages of them; the
    positive steps that follow continue that merge first (FTS5 resumes a level with a merge in
    progress before any other), one bounded transaction each, until one segment is left.
    """
    return merge_step(conn, table, -(MERGE_PAGES if pages is None else int(pages)))


def ensure_usermerge(conn: apsw.Connection, table: str, value: int = USERMERGE) -> bool:
    """Set `usermerge` when it differs (inside the caller's transaction); True when it wrote."""
    rows = conn.execute(f"SELECT v FROM \"{table}_config\" WHERE k = 'usermerge'").fetchall()
    if rows and rows[0][0] == value:
        return False
    conn.execute(f'INSERT INTO "{table}"("{table}", rank) VALUES(\'usermerge\', ?)', (int(value),))
    return True
