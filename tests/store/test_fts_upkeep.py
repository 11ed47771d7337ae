"""Background FTS upkeep: bounded merges every 1,000 writes keep the v23 indexes at few segments."""

from __future__ import annotations

import threading
import time

import apsw
import pytest

from hermes_tui.state import ReadOnlyError, SessionDB
from hermes_tui.state import fts_upkeep as U
from hermes_tui.state.fts_upkeep import level_sizes, merge_step, segment_count, structure, wants_full_merge
from tests._wait import wait_until

V23 = ("messages_fts", "messages_fts_trigram", "messages_fts_cjk")
WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "deploy",
    "docker",
    "部署",
    "数据库",
    "配置",
    "kubernetes",
    "epsilon",
    "zeta",
]


def _fill(db: SessionDB, n: int, sid: str = "u") -> None:
    if db.get_session(sid) is None:
        db.create_session(sid, "cli")
    for i in range(n):
        db.append_message(
            sid, "user", f"{WORDS[i % len(WORDS)]} {WORDS[(i * 7) % len(WORDS)]} n{i} 修改youer{i % 5}服务端"
        )


def _segments(path) -> dict[str, int]:
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return {t: segment_count(conn, t) for t in V23}
    finally:
        conn.close()


def _levels(path) -> dict[str, list[int]]:
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return {t: level_sizes(conn, t) for t in V23}
    finally:
        conn.close()


def _integrity(path) -> None:
    conn = apsw.Connection(str(path))
    from hermes_tui.state.core import _install_tokenizer

    _install_tokenizer(conn)
    for t in V23:
        conn.execute(f"INSERT INTO {t}({t}, rank) VALUES('integrity-check', 1)")
    conn.close()


QUERIES = ["deploy", "docker OR kubernetes", "部署", "数据库", "youer2", "alpha NOT beta", "zzz-none"]


def _answers(db: SessionDB) -> dict[str, list[int]]:
    return {q: sorted(r["id"] for r in db.search_messages(q, limit=500)) for q in QUERIES}


def _count_busy_refusals(monkeypatch, wanted: int) -> threading.Event:
    """Set once a merge step has been refused `wanted` times for another connection's lock
    (each refusal restarts the quiet clock: `_QuietWatch.reset`)."""
    from hermes_tui.state import core

    seen = threading.Event()
    count = 0
    real = core._QuietWatch.reset

    def reset(self) -> None:
        nonlocal count
        count += 1
        if count >= wanted:
            seen.set()
        real(self)

    monkeypatch.setattr(core._QuietWatch, "reset", reset)
    return seen


@pytest.fixture(autouse=True)
def short_quiet(monkeypatch):
    monkeypatch.setattr(SessionDB, "_FTS_IDLE_S", 0.02)


def test_one_transaction_per_message_leaves_many_segments_and_a_round_merges_them(tmp_path, monkeypatch):
    monkeypatch.setattr(SessionDB, "_FTS_UPKEEP_EVERY_N_WRITES", 10**9)  # no automatic round
    path = tmp_path / "state.db"
    db = SessionDB(path)
    _fill(db, 300)
    before = _segments(path)
    assert all(n >= 4 for n in before.values()), before  # FTS5's automerge alone leaves several
    answers = _answers(db)
    db._fts_merge_round()  # what the upkeep thread runs
    after = _segments(path)
    assert all(after[t] < before[t] for t in V23), (before, after)
    assert all(n <= 1 for t in V23 for n in _levels(path)[t]), _levels(path)  # usermerge 2
    assert after == dict.fromkeys(V23, 1), after  # small segments worth it: merged into one
    assert _answers(db) == answers  # merging changes the layout on disk, never a result
    db.close()
    _integrity(path)


def test_every_1000th_write_runs_a_round_on_the_upkeep_thread(tmp_path, monkeypatch):
    monkeypatch.setattr(SessionDB, "_FTS_UPKEEP_EVERY_N_WRITES", 200)
    path = tmp_path / "state.db"
    db = SessionDB(path)
    _fill(db, 198)  # 199 writes with create_session
    assert db._maintainer.completed["fts_merge"] == 0
    before = _segments(path)
    db.append_message("u", "user", "the 200th write")
    assert db._maintainer.wait("fts_merge", 1)
    assert db._fts_merge_steps > 0
    assert all(n <= 1 for t in V23 for n in _levels(path)[t]), (before, _levels(path))
    thread = db._maintainer._thread
    db.close()
    assert thread is not None and not thread.is_alive()
    _integrity(path)


def test_a_round_never_blocks_on_another_processes_write_lock(tmp_path, monkeypatch):
    """Busy is not waited out inside SQLite (that would hold our own writers too): the step
    waits for the next quiet moment, and the round goes on once the other writer is done."""
    monkeypatch.setattr(SessionDB, "_FTS_UPKEEP_EVERY_N_WRITES", 10**9)
    refusals = _count_busy_refusals(monkeypatch, 3)
    path = tmp_path / "state.db"
    db = SessionDB(path)
    _fill(db, 120)
    other = apsw.Connection(str(path))
    other.execute("BEGIN IMMEDIATE")  # held without committing: data_version stays the same
    rounds = threading.Thread(target=db._fts_merge_round)
    rounds.start()
    # Blocking inside SQLite would be one long attempt; instead each attempt is refused at once
    # and the round waits for another quiet moment, then tries again.
    assert refusals.wait(30), "the round never came back from a step refused for the lock"
    assert db._fts_merge_steps == 0 and rounds.is_alive()
    other.execute("ROLLBACK")
    other.close()
    rounds.join(30)
    assert not rounds.is_alive() and db._fts_merge_steps > 0
    db.close()
    _integrity(path)


def test_a_continuous_writer_defers_the_round_and_a_pause_lets_it_run(tmp_path, monkeypatch):
    monkeypatch.setattr(SessionDB, "_FTS_UPKEEP_EVERY_N_WRITES", 10**9)
    monkeypatch.setattr(SessionDB, "_FTS_IDLE_S", 0.1)
    # The pause after each step is a waiting write's chance to take the lock (its busy handler
    # polls every 1-4 ms); 50 ms instead of 10 so a loaded machine does not skip it.
    monkeypatch.setattr(SessionDB, "_FTS_MERGE_PAUSE_S", 0.05)
    path = tmp_path / "state.db"
    db = SessionDB(path)
    _fill(db, 300)
    writer = SessionDB(path)  # another connection writing without pause (as another process would)
    rounds = threading.Thread(target=db._fts_merge_round)
    rounds.start()
    for _ in range(80):  # gaps of 10 ms, well under the 100 ms of quiet a step needs
        writer.append_message("u", "assistant", "no quiet moment")
        time.sleep(0.01)
    assert db._fts_merge_steps == 0  # no merge step ran while the writes went on
    during: list[int] = []
    for _ in range(6):  # a quiet gap lets steps run; a write then waits for one step at most
        before = db._fts_merge_steps
        wait_until(lambda b=before: db._fts_merge_steps > b or not rounds.is_alive(), "a merge step")
        started = db._fts_merge_steps
        writer.append_message("u", "assistant", "after a pause")
        during.append(db._fts_merge_steps - started)
    rounds.join(30)
    assert not rounds.is_alive()
    assert db._fts_merge_steps > 0
    # Each step needs 100 ms without a commit: the step a write queued behind may finish while
    # it waits, never a second one (the write's own commit restarts the quiet clock).
    assert max(during) <= 1, during
    writer.close()
    db.close()
    _integrity(path)


def test_checkpoints_still_run_while_a_round_waits_for_quiet(tmp_path, monkeypatch):
    monkeypatch.setattr(SessionDB, "_FTS_UPKEEP_EVERY_N_WRITES", 100)
    monkeypatch.setattr(SessionDB, "_FTS_IDLE_S", 30.0)  # the round never finds a quiet moment
    path = tmp_path / "state.db"
    db = SessionDB(path)
    _fill(db, 99)  # write 100 requests both a checkpoint and a round
    assert db._maintainer.wait("checkpoint", 2, timeout=10)
    _fill(db, 50)  # write 150: the next checkpoint runs from inside the waiting round
    assert db._maintainer.wait("checkpoint", 3, timeout=10)
    assert db._maintainer.completed["fts_merge"] == 0
    thread = db._maintainer._thread
    db.close()  # stops the waiting round (it does not wait 30 s for a quiet moment)
    assert thread is not None and not thread.is_alive()
    assert db._maintainer.completed["fts_merge"] == 1 and db._fts_merge_steps == 0  # ended, no step


def test_no_upkeep_read_only_or_on_a_legacy_layout(tmp_path, monkeypatch):
    """A legacy (v22) file belongs to hermes-agent 0.19.0, whose write path optimizes it itself."""
    from test_schema import make_v1

    monkeypatch.setattr(SessionDB, "_FTS_UPKEEP_EVERY_N_WRITES", 5)
    path = tmp_path / "state.db"
    make_v1(path)
    legacy = SessionDB(path, migrate=False)
    assert legacy.layout.kind == "legacy"
    for i in range(12):
        legacy.append_message("old", "user", f"legacy write {i}")
    assert legacy._maintainer.completed["fts_merge"] == 0
    assert legacy._maintainer._pending <= {"checkpoint"}
    legacy.close()
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    assert conn.execute("SELECT count(*) FROM messages_fts_config WHERE k = 'usermerge'").fetchall() == [(0,)]
    conn.close()
    ro = SessionDB(path, read_only=True)
    ro.request_fts_upkeep()
    assert ro._maintainer._thread is None
    ro.close()


def test_usermerge_is_set_once_and_only_steers_explicit_merges(tmp_path, monkeypatch):
    monkeypatch.setattr(SessionDB, "_FTS_UPKEEP_EVERY_N_WRITES", 10**9)
    path = tmp_path / "state.db"
    db = SessionDB(path)
    _fill(db, 40)
    db._fts_merge_round()
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    for t in V23:
        assert conn.execute(f"SELECT v FROM {t}_config WHERE k = 'usermerge'").fetchall() == [(2,)]
        assert conn.execute(f"SELECT count(*) FROM {t}_config WHERE k = 'automerge'").fetchall() == [(0,)]
    conn.close()
    db.close()


def test_merge_step_reports_when_there_is_nothing_left(tmp_path):
    path = tmp_path / "state.db"
    db = SessionDB(path)
    _fill(db, 5)
    db.optimize_fts()  # one segment each
    conn = db._conn()
    for t in V23:
        conn.execute("BEGIN IMMEDIATE")
        assert merge_step(conn, t) is False
        conn.execute("COMMIT")
    db.close()


def test_fts_upkeep_runs_the_same_merges_in_the_foreground(tmp_path, monkeypatch):
    monkeypatch.setattr(SessionDB, "_FTS_UPKEEP_EVERY_N_WRITES", 10**9)
    path = tmp_path / "state.db"
    db = SessionDB(path)
    _fill(db, 300)
    answers = _answers(db)
    first = db.fts_upkeep(max_steps=1)
    assert 0 < first <= 3  # bounded: at most one step per index
    db.fts_upkeep()
    assert all(n <= 1 for t in V23 for n in _levels(path)[t]), _levels(path)
    assert db.fts_upkeep() == 0  # nothing left
    assert _answers(db) == answers
    db.close()
    _integrity(path)
    ro = SessionDB(path, read_only=True)
    with pytest.raises(ReadOnlyError):
        ro.fts_upkeep()
    ro.close()


def _pages(path) -> dict[str, list[int]]:
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return {t: [n for _m, level in structure(conn, t) for n in level] for t in V23}
    finally:
        conn.close()


def test_structure_decodes_segment_pages(tmp_path):
    path = tmp_path / "state.db"
    db = SessionDB(path)
    _fill(db, 30)
    db.optimize_fts()
    conn = db._conn()
    for t in V23:
        (merging, pages), *_rest = [lv for lv in structure(conn, t) if lv[1]]
        assert merging == 0 and len(pages) == 1 and pages[0] >= 1
        leaves = conn.execute(f"SELECT count(*) FROM {t}_data WHERE id > 10").fetchall()[0][0]
        assert pages[0] <= leaves  # the segment's leaves are rows of %_data
    db.close()


def test_a_small_tail_on_a_large_segment_is_left_to_level_merges(tmp_path, monkeypatch):
    """The full merge rewrites the largest segment, so a tail under FULL_MERGE_SHARE waits."""
    monkeypatch.setattr(SessionDB, "_FTS_UPKEEP_EVERY_N_WRITES", 10**9)
    path = tmp_path / "state.db"
    db = SessionDB(path)
    db.create_session("u", "cli")
    db.append_messages(
        "u", [{"role": "user", "content": f"{WORDS[i % 12]} bulk n{i} 部署{i}"} for i in range(8000)]
    )
    db.optimize_fts()
    _fill(db, 3, sid="v")  # three small segments on top of one large one
    pages = _pages(path)
    assert all(len(p) == 4 for p in pages.values()), pages
    conn = db._conn()
    assert not any(wants_full_merge(conn, t) for t in V23)
    db._fts_merge_round()
    assert all(2 <= len(p) <= 3 for p in _pages(path).values()), _pages(path)  # level merges only
    assert wants_full_merge(conn, "messages_fts", share=0.0)
    db.close()


def test_a_full_merge_in_bounded_steps_reaches_one_segment_with_writes_in_between(tmp_path, monkeypatch):
    """Tiny steps, and another connection writing while the full merge is half done: FTS5
    restarts or resumes it, every answer stays the same, the index checks out, one segment."""
    monkeypatch.setattr(SessionDB, "_FTS_UPKEEP_EVERY_N_WRITES", 10**9)
    monkeypatch.setattr(U, "MERGE_PAGES", 1)
    monkeypatch.setattr(U, "FULL_MERGE_SHARE", 0.0)  # any second segment is worth a full merge
    path = tmp_path / "state.db"
    db = SessionDB(path)
    _fill(db, 400)
    db.fts_upkeep()
    assert _segments(path) == dict.fromkeys(V23, 1), _pages(path)
    other = SessionDB(path)
    _fill(other, 12, sid="w")  # more segments; then a full merge interrupted by writes
    conn = db._conn()
    assert all(wants_full_merge(conn, t) for t in V23)
    for t in V23:
        db._execute_write(lambda c, t=t: U.start_full_merge(c, t))
        db._execute_write(lambda c, t=t: merge_step(c, t))
    assert any(m for t in V23 for m, _lv in structure(conn, t)), "a merge should be in progress"
    _fill(other, 5, sid="x")  # writes land while the merges are half done
    answers = _answers(db)
    done = db.fts_upkeep()
    assert done > 3  # many 1-page steps, one transaction each
    assert _segments(path) == dict.fromkeys(V23, 1), _levels(path)
    assert _answers(db) == answers
    other.close()
    db.close()
    _integrity(path)
