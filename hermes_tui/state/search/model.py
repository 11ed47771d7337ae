"""The search's named values: the orders it offers, the routes that answer and what it returns.

Routes are `Route` values (their `name` is the public `SearchOutcome.route`) and orders are
`SortOrder` values; SQL text is built from them, never compared.
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import apsw

from ..connection import store_error

F = TypeVar("F", bound=Callable[..., Any])


def store_errors(method: F) -> F:
    """SQLite's errors from a search (a damaged FTS index: "fts5: corruption found…") surface as
    the store's one-line `StoreError`s, as every other public method's do."""

    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except apsw.Error as exc:
            raise store_error(exc, self.db_path) from exc

    return wrapper  # type: ignore[return-value]


def as_bound(value: Any) -> float:
    """A block's MAX(timestamp) as a float bound, in SQLite's own order: NULL is below every
    number, and a text or blob value (another writer's bad timestamp) above every number."""
    if value is None:
        return float("-inf")
    if isinstance(value, (int, float)):
        return float(value)
    return float("inf")


class SortOrder(enum.Enum):
    """The result orders `search(sort=…)` offers; any other `sort` value means rank order."""

    RANK = "rank"
    NEWEST = "newest"
    OLDEST = "oldest"

    @classmethod
    def parse(cls, sort: str | None) -> SortOrder:
        key = sort.strip().lower() if isinstance(sort, str) else ""
        return cls.NEWEST if key == "newest" else cls.OLDEST if key == "oldest" else cls.RANK

    @property
    def fts_sql(self) -> str:
        """The `ORDER BY` of an FTS route in this order (upstream's, `rank` breaking time ties)."""
        if self is SortOrder.NEWEST:
            return "ORDER BY m.timestamp DESC, rank"
        if self is SortOrder.OLDEST:
            return "ORDER BY m.timestamp ASC, rank"
        return "ORDER BY rank"


#: Newest first with ties by id (`_newest_ids`'s choice), and the LIKE/side routes' orders.
NEWEST_BY_ID_SQL = "ORDER BY m.timestamp DESC, m.id DESC"


OLDEST_BY_ID_SQL = "ORDER BY m.timestamp ASC, m.id ASC"


@dataclass(frozen=True)
class Route:
    """A way `search()` answers: `name` is the public `SearchOutcome.route`; `table` the FTS5
    index it reads (None: it reads no index of the store); `windowed_rank`: rank order scores only
    the newest `RANK_WINDOW` matches (CJK indexes, see `_ranked_recent`; not on files of today's
    Hermes, which ranks every match)."""

    name: str
    table: str | None = None
    windowed_rank: bool = False

    @property
    def index(self) -> str:
        assert self.table is not None, f"route {self.name} reads no FTS index"
        return self.table


FTS5 = Route("fts5", "messages_fts")


FTS_CJK = Route("fts_cjk", "messages_fts_cjk", windowed_rank=True)


TRIGRAM = Route("trigram", "messages_fts_trigram", windowed_rank=True)


CJK_SIDE = Route("cjk_side")


#: The side index while it is built: it answers for the ids it holds, LIKE for the newer rest.
CJK_SIDE_PARTIAL = Route("cjk_side_partial")


LIKE_SCAN = Route("like_scan")


INTERRUPTED = Route("interrupted")


EMPTY = Route("empty")


@dataclass
class SearchOutcome:
    results: list[dict[str, Any]] = field(default_factory=list)
    route: str = EMPTY.name
    query: str = ""


#: An SQL filter on messages `m` and sessions `s`: its `WHERE` terms and their parameters.
Filters = tuple[list[str], list[Any]]
