"""A search parses what was typed once: the routes, the count and the snippets read one
`ParsedQuery` (sanitised, bounded, classified, and each derived form computed once)."""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
from test_v31_reading import make_v31

from hermes_tui.state import SessionDB, fts_query
from hermes_tui.state.search import ParsedQuery, parse, parse_query

# What turns typed text into query forms: each may run once per distinct input in a search.
PARSERS: list[Callable[..., Any]] = [
    fts_query.sanitize_fts5_query,
    fts_query.bound_query,
    fts_query.quote_tokens,
    fts_query.parse_bool,
    fts_query.has_lone_cjk_run,
    parse.latin_terms,
    parse.trigram_eligible,
    parse.or_relaxed,
    parse.strip_cjk_wildcards,
]


@contextmanager
def parser_calls() -> Iterator[Counter[tuple[str, str]]]:
    """Calls of `PARSERS`, by (function, first argument), however a module imported them."""
    codes = {f.__code__: f.__name__ for f in PARSERS}
    calls: Counter[tuple[str, str]] = Counter()

    def profile(frame: FrameType, event: str, _arg: Any) -> None:
        if event == "call" and frame.f_code in codes:
            first = frame.f_locals.get(frame.f_code.co_varnames[0])
            calls[(codes[frame.f_code], repr(first))] += 1

    parse._parse_cached.cache_clear()  # (a query searched before would not be parsed at all)
    sys.setprofile(profile)
    try:
        yield calls
    finally:
        sys.setprofile(None)


def _store(db: SessionDB) -> SessionDB:
    db.create_session("s", "cli")
    db.append_message("s", "user", "修改youer服务端 and the deploy script")
    db.append_message("s", "assistant", "数据库 migration done; 密 is one character")
    db.append_message("s", "tool", "deploy log: ok", tool_name="shell")
    return db


QUERIES = [
    "youer",  # a Latin miss retried on the CJK indexes (v23)
    "zeppelin xylophone",  # no row anywhere: probes and both retries
    "deploy*",  # a prefix
    "数据库",  # the CJK index
    "密",  # a lone CJK character: side index or LIKE scan
    "密 OR 数据库 NOT zeppelin",
    '"config.yaml" deploy',
]


@pytest.mark.parametrize("query", QUERIES)
@pytest.mark.parametrize("todays", [False, True], ids=["v23", "v31"])
def test_a_search_and_its_count_parse_the_query_once(
    tmp_path: Path, xdg_cache: Path, query: str, todays: bool
) -> None:
    path = tmp_path / "state.db"
    if todays:
        make_v31(path)
    with SessionDB(path, migrate=not todays) as db:
        _store(db)
        for kw in ({}, {"sort": "newest"}, {"role_filter": ["tool"]}, {"source_filter": ["cli"]}):
            with parser_calls() as calls:
                db.search(query, **kw)
                db.search_count(query, **kw)
            again = {call: n for call, n in calls.items() if n > 1}
            assert again == {}, (query, kw)
            assert calls[("sanitize_fts5_query", repr(query))] <= 1


def test_the_parsed_query_is_a_frozen_value_kept_per_query_string() -> None:
    parsed = parse_query("数据库 deploy*", todays=True)
    assert isinstance(parsed, ParsedQuery)
    with pytest.raises(AttributeError):
        parsed.q = "other"  # type: ignore[misc]
    assert parse_query("数据库 deploy*", todays=True) is parsed
    assert parse_query("数据库 deploy*", todays=False) is not parsed  # each writer's sanitizer
    assert parsed.cjk and parsed.cjk_raw == "数据库 deploy" and parsed.cjk_match == '"数据库" "deploy"'
    assert parsed.scan_raw == "数据库 OR deploy"  # today's Hermes' scan: any token
    assert parsed.cjk_match is parsed.cjk_match  # derived once


@pytest.mark.parametrize("raw", ["deploy", "数据库 deploy*", 'AND OR "" ***', "a b c", "密"])
@pytest.mark.parametrize("todays", [False, True])
def test_the_fast_constructor_builds_the_same_value(raw: str, todays: bool) -> None:
    """`parse._parsed` skips the dataclass's `__init__`: the value must be the same."""
    got = parse._parse(raw, todays)
    assert got is not None
    made = ParsedQuery(got.q, got.cjk, got.plain_word, got.rejected, got.todays)
    assert (got == made, hash(got) == hash(made), repr(got) == repr(made)) == (True, True, True)
    assert got.todays is todays and got.cjk_raw == made.cjk_raw and got.terms == made.terms
    with pytest.raises(AttributeError):
        got.rejected = not got.rejected  # type: ignore[misc]
