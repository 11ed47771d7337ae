"""`search_count`: the number of rows `search()` pages through, on every route, bounded by `cap`."""

from __future__ import annotations

import random

import pytest

from hermes_tui.state.fts_query import QueryTooComplex

WORDS = ["docker", "deploy", "deployment", "build", "error", "python", "config.yaml", "timeout", "agent"]
CJK = ["日本", "東京", "検索", "漓江", "项目", "服务端", "日本語", "テキスト", "密码"]
SOURCES = ["cli", "telegram", "discord"]


def _populate(db) -> None:
    rnd = random.Random(7)
    for i, src in enumerate(SOURCES * 3):
        db.create_session(f"s{i}", src)
    ts = 1_700_000_000.0
    for n in range(420):
        sid = f"s{n % 9}"
        words = [rnd.choice(WORDS) for _ in range(rnd.randint(2, 8))]
        if n % 3 == 0:
            words.insert(rnd.randint(0, len(words)), rnd.choice(CJK))
        if n % 17 == 0:
            words.append("修改youer服务端")
        role = ("user", "assistant", "tool")[(n // 2) % 3]
        extra = {"tool_name": "terminal"} if role == "tool" else {}
        db.append_message(sid, role, " ".join(words), timestamp=ts + n // 2, **extra)
    # Rewind a tail so the visibility filter matters.
    users = db._tuples("SELECT id FROM messages WHERE session_id = 's4' AND role = 'user' ORDER BY id")
    db.rewind_to_message("s4", users[-3][0])


def _all_pages(db, query: str, page: int = 13, **kw) -> tuple[list[int], str]:
    ids: list[int] = []
    route = ""
    offset = 0
    while True:
        out = db.search(query, limit=page, offset=offset, context=False, **kw)
        route = route or out.route
        ids += [r["id"] for r in out.results]
        if len(out.results) < page:
            return ids, route
        offset += page


CASES = [
    ("docker", {}),
    ("docker build", {"source_filter": ["cli"]}),
    ("deploy*", {"exclude_sources": ["telegram"]}),
    ('"docker build"', {"role_filter": ["user"]}),
    ("python OR timeout", {"include_inactive": True}),
    ("error NOT agent", {}),
    ("config.yaml", {}),
    ("youer", {}),  # the v23 retry: a word glued to CJK
    ("日本", {}),  # 2 CJK characters: the bigram index
    ("日本語", {}),  # 3: trigram in rank order
    ("服务端", {"source_filter": ["discord", "cli"]}),
    ("本", {}),  # a lone CJK character: the side index (or LIKE until it is built)
    ("日本", {"role_filter": ["tool"]}),  # tool rows: LIKE
    ("nothingmatches", {}),
    ("密码 OR 検索", {}),
]


@pytest.mark.parametrize("sort", [None, "newest", "oldest"])
@pytest.mark.parametrize(("query", "filters"), CASES)
def test_count_equals_every_page_of_search(db, query, filters, sort):
    _populate(db)
    db.build_cjk_side_index()
    ids, route = _all_pages(db, query, sort=sort, **filters)
    assert len(ids) == len(set(ids)), route
    n, exact = db.search_count(query, sort=sort, **filters)
    assert (n, exact) == (len(ids), True), (route, sorted(ids))


def test_routes_are_covered(db):
    """The cases above reach every route (otherwise the comparison proves less than it says)."""
    _populate(db)
    db.build_cjk_side_index()
    routes = {_all_pages(db, q, sort=s, **f)[1] for q, f in CASES for s in (None, "newest")}
    assert {"fts5", "fts_cjk", "trigram", "cjk_side", "like_scan"} <= routes


def test_like_route_before_the_side_index_is_built(db, monkeypatch):
    _populate(db)
    monkeypatch.setattr(type(db), "_side_reach", lambda self: None)
    ids, route = _all_pages(db, "本")
    assert route == "like_scan" and ids
    assert db.search_count("本") == (len(ids), True)


def test_cap_stops_counting(db):
    _populate(db)
    total, exact = db.search_count("docker")
    assert exact and total > 20
    assert db.search_count("docker", cap=20) == (20, False)
    assert db.search_count("docker", cap=total) == (total, True)
    assert db.search_count("docker", cap=0) == (0, False)


def test_empty_and_refused_queries(db):
    _populate(db)
    assert db.search_count("") == (0, True)
    assert db.search_count('"" ()') == (0, True)
    with pytest.raises(QueryTooComplex):
        db.search_count(" ".join(f"w{i}" for i in range(80)))
