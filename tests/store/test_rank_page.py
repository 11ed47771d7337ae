"""The page of a windowed CJK rank (`_ranked_page`) read with one cursor over its rowid range gives
the same rows, in the same order, with the same snippets, as a cursor per id (issue #33, item 16:
the range is 3-8x cheaper for CJK queries at 100k messages). Checked on a v23 store (cjk bigram
and trigram indexes) and on a 0.19.0-layout store (inline trigram index), with the window floor
reached, filters that widen it, and deep pages."""

from __future__ import annotations

import random
from pathlib import Path

import apsw
import pytest

from hermes_tui.state import SessionDB
from hermes_tui.state import fts_schema as F
from hermes_tui.state import schema as S
from hermes_tui.state.search import SearchMixin

pytestmark = pytest.mark.usefixtures("xdg_cache")

TERMS = ("デプロイ", "数据库", "部署", "데이터베이스", "缓存服务", "テスト環境")
FILLER = ("日本語の文章", "一些中文内容", "한국어 문장", "plain english words", "更多的文字和内容")
SOURCES = ("cli", "telegram", "discord", "slack")
QUERIES = (
    "デプロイ",
    "数据库",
    "部署",
    "데이터베이스",
    "缓存服务",
    "テスト環境",
    "部署 OR 缓存",
    "数据库 部署",
)


def make_legacy(path: Path) -> None:
    """A v22 file with 0.19.0's inline FTS DDL verbatim (its trigram index serves CJK rank)."""
    c = apsw.Connection(str(path))
    c.execute(
        S.SCHEMA_SQL + F.LEGACY_BASE_SQL + F.LEGACY_TRIGRAM_SQL + "INSERT INTO schema_version VALUES (22);"
    )
    c.close()


def populate(db: SessionDB, n_sessions: int = 80, per_session: int = 25) -> None:
    rnd = random.Random(33)
    ts = 1_700_000_000.0
    for s in range(n_sessions):
        sid = f"s{s}"
        # one source rare among the newest sessions: its filter widens the window
        source = "slack" if s % 17 == 0 else SOURCES[s % 3]
        db.create_session(sid, source)
        for _ in range(per_session):
            words = [rnd.choice(FILLER) for _ in range(rnd.randint(1, 6))]
            for _ in range(rnd.randint(0, 3)):  # repeated terms: different bm25 scores, and ties
                words.insert(rnd.randint(0, len(words)), rnd.choice(TERMS))
            ts += rnd.choice((0.0, 1.0, 7.0))  # equal timestamps too
            db.append_message(sid, rnd.choice(("user", "assistant")), " ".join(words), timestamp=ts)


def both_ways(db: SessionDB, monkeypatch: pytest.MonkeyPatch, query: str, **kw: object) -> tuple[list, list]:
    with monkeypatch.context() as m:
        m.setattr(SearchMixin, "RANGE_PAGE_MAX", 0)  # a cursor per id, as before
        seeks = db.search(query, **kw)
    ranged = db.search(query, **kw)
    assert ranged.route == seeks.route
    return seeks.results, ranged.results


@pytest.mark.parametrize("layout", ["v23", "legacy"])
def test_range_page_equals_seek_page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, layout: str) -> None:
    path = tmp_path / "state.db"
    if layout == "legacy":
        make_legacy(path)
        db = SessionDB(path, migrate=False)
    else:
        db = SessionDB(path)
    try:
        populate(db)
        db.build_cjk_side_index()  # (1-2 character queries on the legacy store: not a rank page)
        # a small window, so the floor is reached and widened on this small store
        monkeypatch.setattr(SearchMixin, "RANK_WINDOW", 64)
        routes = set()
        for q in QUERIES:
            for src in (None, ["telegram"], ["slack"]):
                for offset in (0, 20, 150):
                    seeks, ranged = both_ways(db, monkeypatch, q, source_filter=src, limit=20, offset=offset)
                    assert ranged == seeks, (q, src, offset)
                    routes.add(db.search(q, source_filter=src, limit=20, offset=offset).route)
        assert "trigram" in routes
        if layout == "v23":
            assert "fts_cjk" in routes
        assert any(db.search(q, limit=20).results for q in QUERIES)
    finally:
        db.close()
