"""Plan choice in `search()` is exact: the cheap plans for small stores and rare words give the same
ids in the same order as the general plan, on small and larger stores."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest
from conftest import ids, populate_f

from hermes_tui.state import SessionDB
from hermes_tui.state.search import parse_query

WORDS = (
    "error",
    "docker",
    "container",
    "deploy",
    "deployment",
    "cache",
    "timeout",
    "config",
    "zeppelin",
    "service",
    "kubernetes",
    "alpha",
    "queue",
    "worker",
)
GLUED = ("修改zeppelin服务端", "请检查youer配置", "部署quasar完成")  # Latin glued to CJK: v23's retries
SOURCES = ("cli", "telegram", "discord", "slack")
QUERIES = (
    "error",
    "zeppelin",
    "youer",
    "quasar",
    "docker container",
    "deploy*",
    "docker OR kubernetes",
    "error NOT timeout",
    '"docker container"',
    "xylophonist",
    "zeppelin alpha",
    "部署",
    "修改",
)
FILTERS: tuple[dict, ...] = (
    {},
    {"source_filter": ["telegram"]},
    {"source_filter": ["slack"]},
    {"exclude_sources": ["cli"]},
    {"role_filter": ["user"]},
)


def _store(path: Path, n_messages: int, seed: int) -> SessionDB:
    """A seeded store of `n_messages` (rare and glued words at fixed rates, four sources)."""
    rng = random.Random(seed)
    sessions, made, ts = [], 0, 1_700_000_000.0
    while made < n_messages:
        k = min(rng.randint(5, 60), n_messages - made)
        msgs = []
        for _ in range(k):
            words = rng.choices(WORDS[:8] + WORDS[9:], k=rng.randint(3, 12))
            if rng.random() < 0.004:
                words.append("zeppelin")
            if rng.random() < 0.003:
                words.append(rng.choice(GLUED))
            ts += rng.choice((0.0, 1.0, 7.5))  # equal timestamps too: the tie-breaker matters
            msgs.append(
                {
                    "role": rng.choice(("user", "assistant", "tool")),
                    "content": " ".join(words),
                    "timestamp": ts,
                }
            )
        sessions.append({"id": f"s{len(sessions)}", "source": rng.choice(SOURCES), "messages": msgs})
        made += k
    db = SessionDB(db_path=path)
    for i in range(0, len(sessions), 100):
        res = db.import_sessions(sessions[i : i + 100])
        assert res.get("ok", True) and not res.get("errors"), res
    return db


def _answers(db: SessionDB) -> dict[tuple, tuple[list[int], str]]:
    out = {}
    for q in QUERIES:
        for kw in FILTERS:
            for sort in (None, "newest", "oldest"):
                for limit, offset in ((20, 0), (5, 3)):
                    res = db.search(q, sort=sort, limit=limit, offset=offset, **kw)
                    out[(q, tuple(sorted((k, tuple(v)) for k, v in kw.items())), sort, limit, offset)] = (
                        ids(res.results),
                        res.route,
                    )
    return out


def _general_plan(db: SessionDB, monkeypatch: pytest.MonkeyPatch) -> None:
    """The general plan, without the small-store shortcuts: both probes evaluated, matches never
    counted (so never "a few": no single-statement plan), no glued-id proof, nothing kept."""
    cls = type(db)

    def probe_first(self, q, stand_ins):
        found = self._probe([("messages_fts", q), *stand_ins])
        many = self.SMALL_PLAN_MIN if found and found[0] else 0
        return None if found is None else (many, tuple(found[1:]) if stand_ins else None)

    monkeypatch.setattr(cls, "_probe_first", probe_first)
    monkeypatch.setattr(cls, "_query_facts", lambda self, q, cjk_ready: {})
    monkeypatch.setattr(cls, "_glued_ids", lambda self, tri, q: None)
    monkeypatch.setattr(cls, "SMALL_STORE_MAX", -1)  # rank order by `_ranked`, as on large stores


@pytest.mark.parametrize(("n_messages", "seed"), [(400, 1), (4000, 2)])
def test_the_cheap_plans_answer_exactly_as_the_general_plan(tmp_path, monkeypatch, n_messages, seed):
    db = _store(tmp_path / "s.db", n_messages, seed)
    try:
        if db.capabilities()["cjk_index"] != "ready":
            pytest.skip("needs the cjk_unicode61 index")
        assert db._small_store()
        fast = _answers(db)
        with monkeypatch.context() as m:
            _general_plan(db, m)
            general = _answers(db)
        assert fast == general
        # the store exercises every branch: retries that answer, and rare words the filters empty
        assert any(route in ("fts_cjk", "trigram") and got for got, route in fast.values())
        assert fast[("zeppelin", (("source_filter", ("slack",)),), None, 20, 0)] is not None
    finally:
        db.close()


def _match_statements(db: SessionDB, fn) -> list[str]:
    seen: list[str] = []
    conn = db._conn()

    def tracer(_cursor, sql, _values):
        if " MATCH " in sql:
            seen.append(sql)
        return True

    conn.exec_trace = tracer
    try:
        fn()
    finally:
        conn.exec_trace = None
    return seen


@pytest.mark.parametrize("sort", [None, "newest"])
def test_a_word_the_filters_empty_runs_no_retry_when_no_row_has_it_glued(db, sort):
    """A rare word whose every hit is in another source: no row holds it next to CJK, so neither
    v23 retry can answer and none runs (they ranked and checked every trigram hit to find nothing)."""
    if db.capabilities()["cjk_index"] != "ready":
        pytest.skip("needs the cjk_unicode61 index")
    db.create_session("c", "cli")
    db.create_session("t", "telegram")
    db.append_message("c", "user", "the zeppelin landed")
    db.append_message("t", "user", "nothing to see")
    assert db.search_messages("zeppelin", source_filter=["telegram"], sort=sort) == []
    seen = _match_statements(
        db, lambda: db.search_messages("zeppelin", source_filter=["telegram"], sort=sort)
    )
    assert not any("messages_fts_cjk" in sql for sql in seen), seen
    assert sum("messages_fts_trigram" in sql for sql in seen) <= 1, seen  # the probe's, never opened
    # a glued row in the filtered source, written later (any commit drops the cached proof): found
    hit = db.append_message("t", "user", "请修改zeppelin服务端")
    out = db.search("zeppelin", source_filter=["telegram"], sort=sort)
    assert (ids(out.results), out.route) == ([hit], "fts_cjk")
    # and another connection's commit is seen too
    other = SessionDB(db.db_path)
    later = other.append_message("t", "user", "部署zeppelin完成")
    other.close()
    assert set(ids(db.search_messages("zeppelin", source_filter=["telegram"], sort=sort))) == {hit, later}


def test_a_word_with_hits_does_not_open_the_trigram_index(db):
    """The trigram probe rides in the primary probe's statement but is evaluated only when the
    primary index has no row (`CASE`): its doclists cost 130 µs for a rare word at 10k."""
    if db.capabilities()["cjk_index"] != "ready":
        pytest.skip("needs the cjk_unicode61 index")
    db.create_session("c", "cli")
    db.append_message("c", "user", "the zeppelin landed")
    tri = lambda word: (("messages_fts_trigram", f'"{word}"'),)  # noqa: E731
    assert db._probe_first("zeppelin", tri("zeppelin")) == (1, None)
    assert db._probe_first("zeppeli", tri("zeppeli")) == (0, (True,))
    assert db._probe_first("xylophonist", tri("xylophonist")) == (0, (False,))
    assert db._probe_first("docker OR OR nginx", tri("x")) is None


def test_too_many_candidates_leave_the_glued_proof_unknown(db, monkeypatch):
    if db.capabilities()["cjk_index"] != "ready":
        pytest.skip("needs the cjk_unicode61 index")
    db.create_session("c", "cli")
    for i in range(5):
        db.append_message("c", "user", f"zeppelin {i}")
    tri = ("messages_fts_trigram", '"zeppelin"')
    assert db._glued_ids(tri, parse_query("zeppelin")) == frozenset()
    monkeypatch.setattr(type(db), "GLUED_SCAN_MAX", 4)
    db.append_message("c", "user", "修改zeppelin服务端")  # a commit: the cached answer is dropped
    assert db._glued_ids(tri, parse_query("zeppelin")) is None


def test_rank_order_on_a_small_store_is_upstreams_one_statement(db, monkeypatch):
    """Up to `SMALL_STORE_MAX` messages (ten times that with a source or role filter) a ranked
    Latin search with at least `SMALL_PLAN_MIN` matches is one `ORDER BY rank` statement
    (upstream's plan): `_ranked`'s top-K list, filter check and page were three FTS5 cursors,
    slower than the second scoring they save at ~1k matches. Larger stores, and fewer matches
    (FTS5's sorter prepares a statement), keep `_ranked`."""
    db.create_session("c", "cli")
    db.create_session("t", "telegram")
    for i in range(40):
        db.append_message(("c", "t")[i % 2], "user", f"error number {i} in the build")
    db.append_message("t", "user", "a rare zeppelin")
    assert db.SMALL_PLAN_MIN == 32
    rare = _match_statements(db, lambda: db.search_messages("zeppelin"))
    assert any("ORDER BY +rank" in sql for sql in rare), rare
    query = lambda: db.search_messages("error", source_filter=["telegram"])  # noqa: E731
    small = _match_statements(db, query)
    ranked = [sql for sql in small if "rank" in sql]
    assert len(ranked) == 1 and "ORDER BY rank" in ranked[0], small
    # Up to `FILTERED_FACTOR` times that size a filtered rank order keeps the one statement (a
    # top-K list of the best matches misses when other sources' rows rank first), while an
    # unfiltered one runs `_ranked`.
    monkeypatch.setattr(type(db), "SMALL_STORE_MAX", 10)
    monkeypatch.setattr(db, "_top_id_cache", None)
    assert not db._small_store() and db._small_store(filtered=True)
    mid = [sql for sql in _match_statements(db, query) if "rank" in sql]
    assert len(mid) == 1 and "ORDER BY rank" in mid[0], mid
    unfiltered = _match_statements(db, lambda: db.search_messages("error"))
    assert any("ORDER BY +rank" in sql for sql in unfiltered), unfiltered
    monkeypatch.setattr(type(db), "SMALL_STORE_MAX", 3)
    assert not db._small_store(filtered=True)
    large = _match_statements(db, query)
    assert any("ORDER BY +rank" in sql for sql in large), large
    by_ranked = ids(query())
    monkeypatch.undo()
    assert db._small_store()
    assert ids(query()) == by_ranked and len(by_ranked) == 20


def _all_statements(db: SessionDB, fn) -> list[str]:
    seen: list[str] = []
    conn = db._conn()
    conn.exec_trace = lambda _c, sql, _v: seen.append(sql) or True
    try:
        fn()
    finally:
        conn.exec_trace = None
    return seen


def test_the_result_rows_say_which_need_their_flattened_text(db):
    """A multimodal message's snippet is cut from its flattened text; the result statement itself
    says which rows are multimodal, so a search whose hits are plain text reads nothing more."""
    db.create_session("c", "cli")
    db.append_message("c", "user", "the zeppelin landed")
    rich = db.append_message(
        "c", "user", [{"type": "text", "text": "a zeppelin photo"}, {"type": "image_url", "image_url": "x"}]
    )
    for sort in (None, "newest"):
        out: list = []
        seen = _all_statements(
            db,
            lambda sort=sort, out=out: out.append(
                db.search("zeppelin", sort=sort, context=False, source_filter=["cli"])
            ),
        )
        by_id = {r["id"]: r["snippet"] for r in out[0].results}
        assert by_id[rich].startswith("a >>>zeppelin<<< photo") and "json" not in by_id[rich]
        assert sum("content >= ?" in sql for sql in seen) == 1  # only for the multimodal row
        assert all("_multimodal" not in r for r in out[0].results)
    plain: list = []
    seen = _all_statements(db, lambda: plain.append(db.search("landed", context=False)))
    assert len(plain[0].results) == 1
    assert not any("content >= ?" in sql for sql in seen), seen  # no read for the snippet's text


@pytest.mark.parametrize("sort", [None, "newest", "oldest"])
def test_what_probes_learned_is_dropped_by_any_commit(db, sort):
    """A query's probe results are kept per connection until anyone commits: a no-hit word, a
    word glued to CJK and a rare word find what this connection and another one write next."""
    db.create_session("c", "cli")
    db.append_message("c", "user", "nothing here")
    for q in ("xylophonist", "quasar", "zeppelin"):
        assert db.search_messages(q, sort=sort) == []
        assert db.search_messages(q, sort=sort) == []  # kept
    mine = db.append_message("c", "user", "a xylophonist plays")  # this connection's commit
    assert ids(db.search_messages("xylophonist", sort=sort)) == [mine]
    other = SessionDB(db.db_path)
    try:
        glued = other.append_message("c", "user", "部署quasar完成")
        rare = other.append_message("c", "user", "the zeppelin landed")
    finally:
        other.close()
    out = db.search("quasar", sort=sort)
    assert (ids(out.results), out.route) == (
        ([glued], "fts_cjk") if db.capabilities()["cjk_index"] == "ready" else ([glued], out.route)
    )
    assert ids(db.search_messages("zeppelin", sort=sort)) == [rare]


def test_a_few_matches_are_one_statement_in_every_order(db):
    """The probe counts a query's matches up to `SMALL_PLAN_MIN`; fewer are sorted by one
    statement (newest first: no rowid walk and id-range statement; rank: no top-K list)."""
    db.create_session("c", "cli")
    db.create_session("t", "telegram")
    for i in range(40):
        db.append_message(("c", "t")[i % 2], "user", f"error number {i}")
    a = db.append_message("c", "user", "the zeppelin landed", timestamp=1_700_000_001)
    b = db.append_message("t", "user", "a zeppelin again", timestamp=1_700_000_001)  # a tie: by id
    first = _match_statements(db, lambda: db.search_messages("zeppelin"))
    assert len(first) == 2 and "SELECT n, CASE" in first[0], first  # the probe, then the answer
    for sort, want in ((None, None), ("newest", [b, a]), ("oldest", [a, b])):
        got: list = []
        seen = _match_statements(
            db, lambda sort=sort, got=got: got.append(db.search_messages("zeppelin", sort=sort))
        )
        assert len(seen) == 1, seen  # the probe's answer is kept until a commit
        assert want is None or ids(got[0]) == want
    many = _match_statements(db, lambda: db.search_messages("error", sort="newest"))
    assert sum("ORDER BY messages_fts.rowid DESC" in sql for sql in many) == 1, many  # the walk


def test_no_fts_statement_binds_a_bare_limit(db):
    """SQLite offers a bound `LIMIT ?`/`OFFSET ?` to a virtual table's planner, which marks the
    parameter so every new binding re-prepares the statement: 18-25 µs a search statement at 10k.
    `LIMIT +?` is the same limit as an expression, prepared once."""
    populate_f(db)
    seen = _all_statements(
        db,
        lambda: (
            [
                db.search_messages(q, sort=sort, source_filter=src, offset=off)
                for q in ("docker", "deploy*", "youer", "东京", "大别山", "xylophonist", "docker OR java")
                for sort in (None, "newest", "oldest")
                for src in (None, ["cli"])
                for off in (0, 1)
            ]
            + [db.search_count(q) for q in ("docker", "youer", "东京")]
        ),
    )
    bare = [sql for sql in seen if re.search(r"\b(LIMIT|OFFSET) \?", sql)]
    assert not bare, bare
