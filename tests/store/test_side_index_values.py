"""The CJK side index reads whatever another writer stored in a message's tool columns."""

from __future__ import annotations

from hermes_tui.state import SessionDB
from hermes_tui.state.side_index import side_text


def test_side_text_reads_bytes_and_numbers_in_the_tool_columns():
    assert side_text("看看", "工具".encode(), 42) == "看看 工具 42\n看 工 具"
    assert side_text("plain", None, None) is None


def test_a_bytes_tool_name_is_indexed_not_fatal(xdg_cache, db_path):
    with SessionDB(db_path=db_path) as db:
        db.create_session("s", "cli")
        mid = db.append_message("s", "user", "结果 ok")
        db._execute_write(
            lambda c: c.execute(
                "UPDATE messages SET tool_name = ?, tool_calls = 7 WHERE id = ?", ("工具".encode(), mid)
            )
        )
        db.build_cjk_side_index()
        assert mid in {r["id"] for r in db.search("结果", limit=10).results}
