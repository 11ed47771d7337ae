"""What hermes-agent 0.19.0 deletes leaves our CJK side index (issue #33, item 10): its text is
no longer found, and no longer in the side file (private data), from the next time the store is
opened, with no new message needed. Before, the side index was checked only when a search found
new ids to index."""

from __future__ import annotations

from pathlib import Path

import apsw
import pytest

from hermes_tui.state import SessionDB
from hermes_tui.state.side_index import side_index_path

pytestmark = pytest.mark.peer

GONE = "秘密的会议记录 zanzibar7"  # only in the session 0.19.0 deletes
KEPT = "公开的会议记录"


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache"


def side_terms(db_path: Path) -> set[str]:
    """Every term the side file's index still holds (FTS5's own vocabulary of it)."""
    conn = apsw.Connection(str(side_index_path(db_path)))
    try:
        conn.wal_checkpoint(mode=apsw.SQLITE_CHECKPOINT_TRUNCATE)
        conn.execute("CREATE VIRTUAL TABLE temp.vocab USING fts5vocab(main, side_fts, 'row')")
        return {r[0] for r in conn.execute("SELECT term FROM temp.vocab")}
    finally:
        conn.close()


def side_bytes(db_path: Path) -> bytes:
    path = side_index_path(db_path)
    wal = Path(f"{path}-wal")
    return path.read_bytes() + (wal.read_bytes() if wal.exists() else b"")


def found(db: SessionDB, query: str) -> set[str]:
    return {r["session_id"] for r in db.search(query, limit=100).results}


@pytest.mark.parametrize("read_only", [False, True])
def test_what_0_19_0_deleted_leaves_the_side_index_at_the_next_open(
    tmp_path: Path, peer_factory, read_only: bool
) -> None:
    path = tmp_path / "state.db"
    peer = peer_factory(path)
    for sid, text in (("gone", GONE), ("kept", KEPT)):
        peer.call("create_session", sid, "cli", model="m")
        for i in range(3):
            peer.call("append_message", sid, "user", content=f"{text} {i}")
    with SessionDB(path, read_only=read_only) as db:
        db.build_cjk_side_index()
        assert found(db, "会议") == {"gone", "kept"} and db.search("会议").route == "cjk_side"
        assert found(db, "秘") == {"gone"}
    assert "zanzibar7" in side_terms(path)
    peer.call("delete_session", "gone")  # hermes-agent itself: our side index is not told
    peer.call("close")
    with SessionDB(path, read_only=read_only) as db:
        db._side().wait(60)  # the check runs beside the opening
        assert found(db, "会议") == {"kept"} and found(db, "秘") == set()
    terms = side_terms(path)
    assert "zanzibar7" not in terms and "秘" not in terms and "秘密" not in terms
    assert "会议" in terms
    assert b"zanzibar7" not in side_bytes(path)
