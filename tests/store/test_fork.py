"""`fork_session` without a peer: refusals that write nothing, the one write transaction, the
title rules (as a rename), `fork_plan`, `-N` counting on the live conversation, the lineage's
`cut_at`, and the store's own reading of a fork."""

from __future__ import annotations

import json
from pathlib import Path

import apsw
import pytest

from hermes_tui.state import InvalidArgument, MessageNotFound, SessionDB, SessionNotFound, TitleError


@pytest.fixture
def db(tmp_path: Path):
    store = SessionDB(tmp_path / "state.db")
    store.create_session("a", "cli", model="m", model_config={"max_iterations": 7, "x": 1})
    store.set_session_title("a", "Alpha")
    store.create_session("b", "cli")
    for i in range(4):
        store.append_message("a", "user" if i % 2 == 0 else "assistant", f"alpha {i}")
    store.append_message("b", "user", "beta")
    yield store
    store.close()


def ids_of(db: SessionDB, sid: str) -> list[int]:
    return [m["id"] for m in db.get_messages(sid)]


def session_ids(db: SessionDB) -> set[str]:
    return {r[0] for r in db._conn().execute("SELECT id FROM sessions")}


def test_refusals_write_nothing(db: SessionDB) -> None:
    before = session_ids(db)
    a, b = ids_of(db, "a"), ids_of(db, "b")
    with pytest.raises(SessionNotFound):
        db.fork_session("nope", a[0])
    with pytest.raises(MessageNotFound):
        db.fork_session("a", b[0])  # a message of another session
    with pytest.raises(MessageNotFound):
        db.fork_session("a", 10_000)
    with pytest.raises(InvalidArgument):
        db.fork_session("a", "1")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument):
        db.fork_session("a", True)  # type: ignore[arg-type]
    db.set_session_title("b", "Taken")
    with pytest.raises(TitleError):
        db.fork_session("a", a[1], title="Taken")
    with pytest.raises(TitleError):
        db.fork_session("a", a[1], title=" \x00 ")
    with pytest.raises(TitleError):
        db.fork_session("a", a[1], title="x" * 101)
    assert session_ids(db) == before


def test_a_failure_while_copying_rolls_the_whole_fork_back(db: SessionDB) -> None:
    """One write transaction: a copy that fails half way leaves no session and no message."""
    conn = db._conn()
    conn.execute(
        "CREATE TEMP TRIGGER boom BEFORE INSERT ON main.messages WHEN NEW.content = 'alpha 2' "
        "BEGIN SELECT RAISE(ABORT, 'boom'); END"
    )
    before = session_ids(db)
    count = conn.execute("SELECT COUNT(*) FROM messages").fetchall()[0][0]
    with pytest.raises(Exception, match="boom"):
        db.fork_session("a", ids_of(db, "a")[3])
    assert session_ids(db) == before
    assert conn.execute("SELECT COUNT(*) FROM messages").fetchall()[0][0] == count


def test_fork_reads_back_in_our_store(db: SessionDB) -> None:
    a = ids_of(db, "a")
    plan = db.fork_plan("a", a[1])
    assert plan == {"ok": True, "messages": 2, "title": "Alpha #2", "error": None}
    fork = db.fork_session("a", a[1])
    row = db.get_session(fork)
    assert row["parent_session_id"] == "a" and row["title"] == "Alpha #2" and row["model"] == "m"
    assert json.loads(row["model_config"]) == {
        "max_iterations": 7,
        "_branched_from": "a",
        "_branched_at_message": a[1],
    }
    assert [m["content"] for m in db.get_messages(fork)] == ["alpha 0", "alpha 1"]
    assert db.get_session("a")["ended_at"] is None
    assert db.fork_plan("a", a[1])["title"] == "Alpha #3"
    assert db.fork_plan("a", a[1], title="Alpha #2")["ok"] is False  # now held by the fork
    assert db.edge_kind(fork) == "branch"
    assert db.get_active_message_ids("a") == a


def test_lineage_names_the_message_a_fork_was_cut_at(db: SessionDB) -> None:
    a = ids_of(db, "a")
    fork = db.fork_session("a", a[2], title="cut")
    db.create_session("kid", "cli", parent_session_id="a")  # a plain child: no cut
    nodes = {n["id"]: n for n in db.get_lineage(fork)["nodes"]}
    assert nodes[fork]["cut_at"] == a[2]
    assert nodes["kid"]["cut_at"] is None
    assert nodes["a"]["cut_at"] is None


def test_fork_of_a_fork_copies_only_the_chosen_prefix(db: SessionDB, tmp_path: Path) -> None:
    a = ids_of(db, "a")
    first = db.fork_session("a", a[3])
    f_ids = ids_of(db, first)
    second = db.fork_session(first, f_ids[0])
    assert [m["content"] for m in db.get_messages(second)] == ["alpha 0"]
    assert db.get_session(second)["parent_session_id"] == first
    raw = apsw.Connection(str(tmp_path / "state.db"), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        assert raw.execute("SELECT message_count FROM sessions WHERE id = ?", (second,)).fetchall() == [(1,)]
    finally:
        raw.close()
