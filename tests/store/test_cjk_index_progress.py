"""`cjk_index_progress`: how far the CJK side index is while substring scans stand in for it."""

from __future__ import annotations

from hermes_tui.state import SessionDB
from hermes_tui.state.side_index import side_index_path


def _populate(db: SessionDB, n: int) -> None:
    db.create_session("s", "cli")
    for i in range(n):
        db.append_message("s", "user", f"数据库 message {i}", timestamp=1_000 + i)


def test_progress_until_the_side_index_is_built_then_none(xdg_cache, db_path):
    with SessionDB(db_path=db_path) as db:
        _populate(db, 30)
        top = 30
        assert not side_index_path(db.db_path).exists()
        assert db.cjk_index_progress("密") == (0, top)  # not built yet: a single character scans
        assert db.cjk_index_progress() == (0, top)
        assert db.cjk_index_progress("deploy") is None  # a Latin query never uses it
        db.build_cjk_side_index()
        assert db.cjk_index_progress("密") is None
        db.append_message("s", "user", "新しい 数据库")  # a little behind: caught up inline
        assert db.cjk_index_progress("密") is None


def test_far_behind_reports_the_indexed_and_newest_ids(xdg_cache, db_path, monkeypatch):
    import hermes_tui.state.search.side as search

    with SessionDB(db_path=db_path) as db:
        _populate(db, 10)
        db.build_cjk_side_index()
        _populate_more = [db.append_message("s", "user", f"追加 {i}") for i in range(25)]
        monkeypatch.setattr(search, "MAX_INLINE_LAG", 20)  # 25 behind is "far" here
        assert db.cjk_index_progress("密") == (10, max(_populate_more))
