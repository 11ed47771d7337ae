"""A query's cost is bounded: repeated words are looked up once, and huge queries are refused."""

from __future__ import annotations

import random

import pytest

from hermes_tui.state.fts_query import MAX_QUERY_TERMS, QueryTooComplex, bound_query
from hermes_tui.state.search import probe as search_module

WORDS = [
    "the",
    "deploy",
    "config",
    "docker",
    "server",
    "error",
    "python",
    "java",
    "build",
    "test",
    "fix",
    "run",
    "log",
    "user",
    "agent",
]


def _populate(db, sessions: int = 30, per: int = 100) -> None:
    rnd = random.Random(3)
    for s in range(sessions):
        db.create_session(f"s{s}", "cli" if s % 2 else "telegram")
        db.append_messages(
            f"s{s}",
            [
                {
                    "role": ("user", "assistant")[i % 2],
                    "content": " ".join(rnd.choice(WORDS) for _ in range(20)),
                    "timestamp": 1_700_000_000 + s * 1000 + i,
                }
                for i in range(per)
            ],
        )


class _MatchTrace:
    """Every statement the connection runs, and the longest MATCH argument it was given."""

    def __init__(self, conn):
        self.conn = conn
        self.statements = 0
        self.max_words = 0

    def __call__(self, _cursor, sql, bindings) -> bool:
        self.statements += 1
        if "MATCH" in sql and bindings:
            for b in bindings if isinstance(bindings, (list, tuple)) else bindings.values():
                if isinstance(b, str) and not b.startswith("["):  # (json id lists aside)
                    self.max_words = max(self.max_words, len(b.split()))
        return True

    def __enter__(self):
        self.conn.exec_trace = self
        return self

    def __exit__(self, *exc):
        self.conn.exec_trace = None


@pytest.mark.parametrize("sort", [None, "newest", "oldest"])
def test_a_word_typed_375_times_is_looked_up_once(db, sort):
    """The 375x query took 10.6 s: every copy was its own doclist and bm25 phrase."""
    _populate(db)
    db.search("docker", sort=sort)  # warm the per-store caches (block maxima) first
    with _MatchTrace(db._conn()) as once:
        single = db.search("the", sort=sort, limit=20)
    search_module._FACTS.clear()  # (both bound to "the": the second search would reuse the probe)
    with _MatchTrace(db._conn()) as rep:
        repeated = db.search(" ".join(["the"] * 375), sort=sort, limit=20)
    assert [r["id"] for r in repeated.results] == [r["id"] for r in single.results]
    assert repeated.route == single.route == "fts5" and repeated.query == "the"
    # The same work as the single word: no MATCH carries more than one word, no extra statements.
    assert rep.max_words == once.max_words == 1
    assert rep.statements == once.statements
    assert db.search_count(" ".join(["the"] * 375)) == db.search_count("the")


def test_equal_repeats_keep_the_rank_order_and_unequal_short_ones_are_kept(db):
    _populate(db, sessions=6)
    a = db.search("docker docker build build", limit=50)
    b = db.search("docker build", limit=50)
    assert a.query == "docker build"
    assert [r["id"] for r in a.results] == [r["id"] for r in b.results]
    # Unequal repeats weigh a word twice in bm25 (upstream's order): short queries are left as typed.
    assert db.search("docker docker build", limit=5).query == "docker docker build"
    assert bound_query("docker AND docker") == "docker"
    assert bound_query("docker OR docker") == "docker OR docker"  # OR/NOT: left to FTS5
    assert bound_query(" ".join(["a"] * 20 + ["b"])) == "a b"  # long: deduped even if unequal


def test_too_many_words_are_refused_with_a_message(db):
    _populate(db, sessions=2)
    many = " ".join(f"word{i}" for i in range(MAX_QUERY_TERMS + 1))
    with _MatchTrace(db._conn()) as trace, pytest.raises(QueryTooComplex) as err:
        db.search(many)
    assert trace.statements == 0  # refused before any statement
    assert f"at most {MAX_QUERY_TERMS}" in str(err.value)
    assert db.search_messages(many) == []  # upstream's API never raises
    # A phrase counts its words, and a CJK run its bigrams.
    with pytest.raises(QueryTooComplex):
        db.search('"' + " ".join(["the"] * 100) + '"')
    with pytest.raises(QueryTooComplex):
        db.search("日本" * 40)
    assert db.search(" ".join(f"word{i}" for i in range(MAX_QUERY_TERMS))).results == []
