"""SQL text every route shares: the result columns with FTS5's snippet, id ranges, probes.

Every `LIMIT`/`OFFSET` is bound as `+?`: SQLite offers a bare `LIMIT ?` to a virtual table's
planner, which marks the parameter so that each new binding re-prepares the statement (18-25 µs
of a 40 µs FTS5 statement at 10k messages); `+?` is the same value as an expression.
"""

from __future__ import annotations

import functools
from typing import Any

from ..text import CONTENT_JSON_PREFIX

SNIPPET_TOKENS = 40


def rowids_in(table: str, ids: list[int]) -> str:
    """A WHERE term keeping an FTS5 scan to `ids` (bound as one JSON array) with one cursor.

    FTS5 serves `rowid IN (…)` with a cursor per id, and a prefix query's cursor first merges
    every doclist of the prefix (24 ms an id for `deploy*` at 1M); a rowid range is one cursor.
    The `+` keeps the list a filter on that scan, checked before any join (`m.id IN` joined
    every match in the range first: 234 against 34 ms).
    """
    return (
        f"{table}.rowid BETWEEN {int(min(ids))} AND {int(max(ids))} "
        f"AND +{table}.rowid IN (SELECT value FROM json_each(?))"
    )


# `content` starts with `CONTENT_JSON_PREFIX` (a multimodal message), as SQL: the bounds are TEXT
# with their NUL (comparisons use the whole length; text functions would stop at the NUL).
_JSON_PREFIX_BOUNDS = tuple(
    "CAST(X'" + v.encode().hex().upper() + "' AS TEXT)"
    for v in (CONTENT_JSON_PREFIX, CONTENT_JSON_PREFIX[:-1] + ";")
)


MULTIMODAL_SQL = f"(m.content >= {_JSON_PREFIX_BOUNDS[0]} AND m.content < {_JSON_PREFIX_BOUNDS[1]})"


#: What every hit carries besides its snippet (`routes.RESULT_KEYS`), whichever route found it.
HIT_COLUMNS = (
    "m.id, m.session_id, m.role, m.timestamp, m.tool_name, s.source, s.model, s.started_at AS session_started"
)


@functools.lru_cache(maxsize=8)
def result_select(table: str) -> str:
    """The result columns of an FTS route, `snippet()` included, joined as upstream joins them;
    `_multimodal` tells `_flatten_snippets` which rows need their text (no second statement)."""
    return (
        f"SELECT {HIT_COLUMNS}, snippet({table}, -1, '>>>', '<<<', '...', {SNIPPET_TOKENS}) AS snippet, "
        f"{MULTIMODAL_SQL} AS _multimodal "
        f"FROM {table} JOIN messages m ON m.id = {table}.rowid JOIN sessions s ON s.id = m.session_id"
    )


def marked_select(source: str) -> str:
    """The result columns of a route that marks its own snippets (the LIKE scan, the side index):
    the text and tool calls `snippets.with_marked_snippets` reads, FROM `source`."""
    return f"SELECT {HIT_COLUMNS}, m.content AS _content, m.tool_calls AS _tc FROM {source}"


@functools.lru_cache(maxsize=64)
def fts_query_sql(table: str, where: tuple[str, ...], order_sql: str) -> str:
    """`_fts_query`'s statement (kept: a search with a few hits is otherwise a tenth text-building)."""
    return (
        f"{result_select(table)} WHERE {table} MATCH ?"
        + "".join(" AND " + w for w in where)
        + f" {order_sql} LIMIT +? OFFSET +?"
    )


def ids_between(
    filters: tuple[list[str], list[Any]], above: int | None, upto: int
) -> tuple[list[str], list[Any]]:
    """`filters` narrowed to message ids in (above, upto] (`above` None: no lower bound)."""
    where, params = filters
    low = "" if above is None else f"m.id > {int(above)} AND "
    return [*where, f"{low}m.id <= {int(upto)}"], params


@functools.lru_cache(maxsize=32)
def probe_sql(tables: tuple[str, ...]) -> str:
    """One `EXISTS` per index, parameters in order (built once per index list)."""
    return "SELECT " + ", ".join(
        f"EXISTS(SELECT 1 FROM {t} WHERE {t} MATCH ?{i + 1})" for i, t in enumerate(tables)
    )


@functools.lru_cache(maxsize=16)
def first_probe_sql(retry_tables: tuple[str, ...], cap: int) -> str:
    """The primary index's matches counted up to `cap` (a rowid walk, no scoring), and only
    when there are none whether each of `retry_tables` has a row (`CASE` is lazy; NULL: not asked)."""
    count = f"SELECT count(*) AS n FROM (SELECT 1 FROM messages_fts WHERE messages_fts MATCH ?1 LIMIT {cap})"
    if not retry_tables:
        return count
    cases = "".join(
        f", CASE WHEN n = 0 THEN EXISTS(SELECT 1 FROM {t} WHERE {t} MATCH ?{i + 2}) END"
        for i, t in enumerate(retry_tables)
    )
    return f"SELECT n{cases} FROM ({count})"
