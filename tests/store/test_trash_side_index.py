"""A trash restore puts messages back into the CJK side index.

Restored messages keep their old ids, which lie below the side index's high-water mark, so its
incremental sync never reaches them: without `SideIndex.reindex` a 1–2 character CJK search on a
legacy (hermes-agent 0.19.0) file would no longer find a restored session.
"""

from __future__ import annotations

from pathlib import Path

import apsw
import pytest

from hermes_tui.state import SessionDB
from hermes_tui.state import fts_schema as F
from hermes_tui.state import schema as S
from hermes_tui.state.side_index import SideIndex, side_index_path

pytestmark = pytest.mark.usefixtures("xdg_cache")


def make_legacy(path: Path) -> None:
    """A v22 file with 0.19.0's inline FTS DDL verbatim (no cjk index: the side index serves CJK)."""
    c = apsw.Connection(str(path))
    c.execute(
        S.SCHEMA_SQL + F.LEGACY_BASE_SQL + F.LEGACY_TRIGRAM_SQL + "INSERT INTO schema_version VALUES (22);"
    )
    c.close()


def found(db: SessionDB, query: str) -> tuple[set[str], str | None]:
    res = db.search(query, limit=100, include_inactive=True)
    return {r["session_id"] for r in res.results}, res.route


def populate(db: SessionDB) -> None:
    db.create_session("deploy", "cli")
    db.append_message("deploy", "user", "明天部署新版本")
    db.append_message("deploy", "assistant", "好的，部署计划已经准备")
    db.end_session("deploy", "done")
    db.create_session("other", "cli")
    for i in range(5):
        db.append_message("other", "user", f"日本語のメッセージ {i}")


def test_restored_cjk_text_is_found_again_on_the_side_index_route(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    make_legacy(path)
    with SessionDB(path, migrate=False) as db:
        assert db.layout.kind == "legacy"
        populate(db)
        db.build_cjk_side_index()
        assert found(db, "部署") == ({"deploy"}, "cjk_side")
        res = db.trash_sessions(["deploy"])
        assert res["deleted"] == 1
        assert found(db, "部署")[0] == set()
        # Newer messages move the high-water mark past the restored ids (the ordinary case).
        db.append_message("other", "user", "later 消息")
        db.build_cjk_side_index()
        out = db.restore_trash(res["trash_entry"])
        assert out["restored"] == 1
        ids, route = found(db, "部署")
        assert route == "cjk_side"
        assert ids == {"deploy"}
        assert len(db.search("部署", limit=100).results) == 2


def test_reindex_without_a_side_file_creates_nothing(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    make_legacy(path)
    with SessionDB(path, migrate=False) as db:
        populate(db)
        res = db.trash_sessions(["deploy"])
        assert db.restore_trash(res["trash_entry"])["restored"] == 1
        assert not side_index_path(db.db_path).exists()


def test_reindex_follows_current_text_and_drops_missing_ids(tmp_path: Path) -> None:
    """`reindex` indexes what the store holds now: an id gone or without CJK leaves the file."""
    path = tmp_path / "state.db"
    make_legacy(path)
    with SessionDB(path, migrate=False) as db:
        populate(db)
        db.build_cjk_side_index()
        side = SideIndex(db.db_path)
        conn = db._conn()
        mids = [r[0] for r in conn.execute("SELECT id FROM messages WHERE session_id = 'deploy' ORDER BY id")]
        # Forget them behind the index's back, as a restore below the high water would look.
        idx = apsw.Connection(str(side.path))
        with idx:
            for mid in mids:
                idx.execute("DELETE FROM side_fts WHERE rowid = ?", (mid,))
        idx.close()
        assert found(db, "部署")[0] == set()
        assert side.reindex([*mids, 10_000_000], conn) == 2
        assert found(db, "部署") == ({"deploy"}, "cjk_side")
