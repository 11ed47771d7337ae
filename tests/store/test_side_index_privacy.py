"""The CJK side index holds message text: it is private on disk and forgets deleted text at once."""

from __future__ import annotations

import os
import stat
import time

import apsw
import pytest

from hermes_tui.state import SessionDB
from hermes_tui.state.cjk import install_cjk_tokenizer
from hermes_tui.state.side_index import side_index_path

SECRET = "我的密码 hunter2 请记住"


def _mode(path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def _populate(db: SessionDB) -> None:
    db.create_session("keep", "cli")
    db.create_session("secret", "cli")
    db.end_session("secret", "done")
    for i in range(30):
        db.append_message("keep", "user", f"日本語のメッセージ {i} 密码以外", timestamp=1_000 + i)
    db.append_message("secret", "user", SECRET, timestamp=2_000)
    db.append_message("secret", "assistant", "好的 密码 saved", timestamp=2_001)


def _side_bytes(db: SessionDB) -> bytes:
    """The side file's raw bytes after its own checkpoint (the text must be gone from the file)."""
    path = side_index_path(db.db_path)
    conn = apsw.Connection(str(path))
    try:
        conn.wal_checkpoint(mode=apsw.SQLITE_CHECKPOINT_TRUNCATE)
    finally:
        conn.close()
    data = path.read_bytes()
    wal = path.with_name(path.name + "-wal")
    return data + (wal.read_bytes() if wal.exists() else b"")


def _found(db: SessionDB, query: str) -> set[str]:
    return {r["session_id"] for r in db.search(query, limit=100, include_inactive=True).results}


def test_side_files_are_0600_in_0700_folders(xdg_cache, db_path):
    with SessionDB(db_path=db_path) as db:
        _populate(db)
        db.build_cjk_side_index()
        path = side_index_path(db.db_path)
        assert db.search("密").route == "cjk_side"
    assert path.is_relative_to(xdg_cache)
    assert _mode(path.parent) == 0o700 and _mode(path.parent.parent) == 0o700
    for p in path.parent.iterdir():
        assert _mode(p) == 0o600, p


def test_loose_side_files_from_an_older_version_are_tightened_on_open(xdg_cache, db_path):
    with SessionDB(db_path=db_path) as db:
        _populate(db)
        db.build_cjk_side_index()
        path = side_index_path(db.db_path)
    os.chmod(path.parent.parent, 0o755)
    os.chmod(path.parent, 0o755)
    for p in path.parent.iterdir():
        os.chmod(p, 0o644)
    with SessionDB(db_path=db_path) as db:
        db.append_message("keep", "user", "新しい 密码")
        db.build_cjk_side_index()
    assert _mode(path.parent) == 0o700 and _mode(path.parent.parent) == 0o700
    for p in path.parent.iterdir():
        assert _mode(p) == 0o600, p


def _delete_session(db):
    assert db.delete_session("secret")


def _delete_sessions(db):
    assert db.delete_sessions(["secret"]) == 1


def _delete_batched(db):
    assert db.delete_sessions_batched(["secret"], batch_messages=1)["deleted"] == 1


def _prune(db):
    assert db.prune_sessions(older_than_days=None, started_before=time.time() + 60) == 1


def _clear(db):
    db.clear_messages("secret")


def _replace(db):
    db.replace_messages("secret", [{"role": "user", "content": "換えた 内容"}])


@pytest.mark.parametrize("op", [_delete_session, _delete_sessions, _delete_batched, _prune, _clear, _replace])
def test_deleted_text_leaves_the_side_file_before_the_call_returns(xdg_cache, db_path, op):
    with SessionDB(db_path=db_path) as db:
        _populate(db)
        db.build_cjk_side_index()
        assert b"hunter2" in _side_bytes(db)
        assert "secret" in _found(db, "密")  # a lone CJK character: answered by the side index
        assert db.search("密").route == "cjk_side"
        op(db)
        data = _side_bytes(db)
        assert b"hunter2" not in data
        assert "我的密码".encode() not in data
        assert "secret" not in _found(db, "密") and "secret" not in _found(db, "密码")
        assert "keep" in _found(db, "密")  # the others are still found
        if op is _replace:
            assert "secret" in _found(db, "換")


def test_rewritten_text_is_replaced(xdg_cache, db_path):
    with SessionDB(db_path=db_path) as db:
        _populate(db)
        db.build_cjk_side_index()
        mid = db._tuples("SELECT id FROM messages WHERE content = ?", (SECRET,))[0][0]
        db._execute_write(
            lambda c: c.execute("UPDATE messages SET content = '新的 内容' WHERE id = ?", (mid,))
        )
        assert b"hunter2" not in _side_bytes(db)
        assert mid in {r["id"] for r in db.search("新", limit=50).results}


def test_rows_deleted_by_another_program_are_forgotten_at_the_next_sync(xdg_cache, db_path):
    with SessionDB(db_path=db_path) as db:
        _populate(db)
        db.build_cjk_side_index()
    other = apsw.Connection(str(db_path))  # not our write path: no side-index hook
    install_cjk_tokenizer(other)  # (the file's cjk index needs it)
    other.execute("DELETE FROM messages WHERE session_id = 'secret'")
    other.close()
    with SessionDB(db_path=db_path) as db:
        assert b"hunter2" in _side_bytes(db)
        db.build_cjk_side_index()
        assert b"hunter2" not in _side_bytes(db)
        assert "secret" not in _found(db, "密")


def test_appends_do_not_touch_the_side_file(xdg_cache, db_path):
    with SessionDB(db_path=db_path) as db:
        _populate(db)
        db.build_cjk_side_index()
        path = side_index_path(db.db_path)
        before = path.stat().st_mtime_ns, path.stat().st_size
        for i in range(5):
            db.append_message("keep", "user", f"追加 {i}")
        assert (path.stat().st_mtime_ns, path.stat().st_size) == before
        assert db._local.side_pending == []


def test_read_only_store_writes_only_in_the_cache(xdg_cache, db_path):
    with SessionDB(db_path=db_path) as db:
        _populate(db)
    before = {p: p.stat().st_mtime_ns for p in db_path.parent.iterdir()}
    with SessionDB(db_path=db_path, read_only=True) as ro:
        ro.build_cjk_side_index()
        assert "secret" in _found(ro, "密")
    assert {p: p.stat().st_mtime_ns for p in db_path.parent.iterdir() if p in before} == before
    assert side_index_path(db_path).exists()


def test_a_search_catching_up_leaves_the_check_for_deleted_rows_to_a_background_thread(
    xdg_cache, db_path, monkeypatch
):
    """The first catch-up of a process used to check every indexed id inline (5.8 s in the first
    CJK search at 10M); the search only needs the new rows, the forgetting happens just after."""
    import threading

    from hermes_tui.state.side_index import SideIndex

    with SessionDB(db_path=db_path) as db:
        _populate(db)
        db.build_cjk_side_index()
    other = apsw.Connection(str(db_path))  # not our write path: no side-index hook
    install_cjk_tokenizer(other)
    other.execute("DELETE FROM messages WHERE session_id = 'secret'")
    other.close()
    checked_on: list[str] = []
    real = SideIndex._reconcile

    def spy(self, conn, source):
        checked_on.append(threading.current_thread().name)
        return real(self, conn, source)

    monkeypatch.setattr(SideIndex, "_reconcile", spy)
    with SessionDB(db_path=db_path) as db:
        db.append_message("keep", "user", "新しい 密码以外")  # a little behind: caught up inline
        found = _found(db, "密")
        assert "secret" not in found and "keep" in found
        db._side().wait(30)
        assert checked_on == ["cjk-side-index"]
        assert b"hunter2" not in _side_bytes(db)
        assert db.search("新").route == "cjk_side"


def _held_ids(db: SessionDB) -> set[int]:
    conn = apsw.Connection(
        side_index_path(db.db_path).as_uri() + "?mode=ro",
        flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI,
    )
    try:
        return {r[0] for r in conn.execute("SELECT id FROM side_fts_docsize")}
    finally:
        conn.close()


def _delete_elsewhere(db_path, where: str) -> None:
    other = apsw.Connection(str(db_path))  # not our write path: no side-index hook
    install_cjk_tokenizer(other)  # (the file's cjk index needs it)
    other.execute(f"DELETE FROM messages WHERE {where}")
    other.close()


@pytest.mark.parametrize("read_only", [False, True])
def test_rows_another_program_deleted_leave_the_side_file_when_the_store_is_next_opened(
    xdg_cache, db_path, read_only
):
    """Issue #33 item 10: with no new message after the deletion, nothing ever checked (the side
    index was reconciled only when a search found new ids to index)."""
    with SessionDB(db_path=db_path) as db:
        _populate(db)
        db.build_cjk_side_index()
        secret_ids = {r[0] for r in db._tuples("SELECT id FROM messages WHERE session_id = 'secret'")}
        assert secret_ids <= _held_ids(db)
    _delete_elsewhere(db_path, "session_id = 'secret'")
    with SessionDB(db_path=db_path, read_only=read_only) as db:
        db._side().wait(60)  # the check runs beside the opening, not in it
        assert not secret_ids & _held_ids(db)
        assert b"hunter2" not in _side_bytes(db)
        assert "secret" not in _found(db, "密") and "keep" in _found(db, "密")


def test_the_check_on_opening_walks_no_ids_when_nothing_was_deleted(xdg_cache, db_path, monkeypatch):
    """What makes it cheap: the store's count up to the last checked id is what it was."""
    from hermes_tui.state import side_index

    with SessionDB(db_path=db_path) as db:
        _populate(db)
        db.build_cjk_side_index()
    asked: list[list[int]] = []
    real = side_index._existing

    def spy(source, ids):
        asked.append(list(ids))
        return real(source, ids)

    monkeypatch.setattr(side_index, "_existing", spy)
    with SessionDB(db_path=db_path) as db:
        db._side().wait(60)
    assert [ids for ids in asked if ids] == []
    with SessionDB(db_path=db_path) as db:
        db.append_message("keep", "user", "新しい 密码以外")  # indexed by the search, counted
        assert "keep" in _found(db, "新")
        db._side().wait(60)
    asked.clear()
    with SessionDB(db_path=db_path) as db:
        db._side().wait(60)
    assert [ids for ids in asked if ids] == []
    _delete_elsewhere(db_path, "session_id = 'keep' AND timestamp = 1000")  # one old, indexed row
    with SessionDB(db_path=db_path) as db:
        db._side().wait(60)
        assert sum(len(ids) for ids in asked) == len(_held_ids(db)) + 1  # the count moved: all


def test_our_own_deletes_and_restores_keep_the_check_cheap(xdg_cache, db_path, monkeypatch):
    """Messages deleted (or brought back by a trash restore) through our own write path move the
    expected count with them, so the next open need not walk the indexed ids to find them."""
    from hermes_tui.state import side_index

    with SessionDB(db_path=db_path) as db:
        _populate(db)
        db.build_cjk_side_index()
        entry = db.trash_sessions(["secret"])["trash_entry"]
    asked: list[list[int]] = []
    real = side_index._existing

    def spy(source, ids):
        asked.append(list(ids))
        return real(source, ids)

    monkeypatch.setattr(side_index, "_existing", spy)
    with SessionDB(db_path=db_path) as db:
        db._side().wait(60)
        assert [ids for ids in asked if ids] == []
        db.restore_trash(entry)
        assert "secret" in _found(db, "密")
    asked.clear()
    with SessionDB(db_path=db_path) as db:
        db._side().wait(60)
        assert db.delete_sessions_batched(["secret"], batch_messages=1)["deleted"] == 1
    asked.clear()
    with SessionDB(db_path=db_path) as db:
        db._side().wait(60)
    assert [ids for ids in asked if ids] == []
