"""Live change detection and live status (`hermes_tui.state.live`).

A writer `SessionDB` (its own connection) commits while a read-only `SessionDB` polls, in
process; `test_subprocess_writer_*` runs our store in another process, appending while we poll.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from hermes_tui.state import SessionDB
from hermes_tui.state.live import IDLE_AFTER_S, WINDOW

TOOL_CALLS = [{"id": "c1", "type": "function", "function": {"name": "terminal", "arguments": "{}"}}]


@pytest.fixture
def pair(tmp_path: Path):
    path = tmp_path / "state.db"
    writer = SessionDB(path)
    writer.create_session("s0", "cli")
    writer.append_message("s0", "user", "hello")
    reader = SessionDB(path, read_only=True)
    yield writer, reader
    reader.close()
    writer.close()


def _trace(db: SessionDB) -> list[str]:
    """Record every statement the reader's connection runs from now on."""
    seen: list[str] = []

    def tracer(_cursor, sql, _bindings):
        seen.append(sql)
        return True

    db._conn().exec_trace = tracer
    return seen


def test_unchanged_poll_runs_only_data_version(pair):
    writer, reader = pair
    cur = reader.change_cursor()
    seen = _trace(reader)
    ch, cur2 = reader.changes_since(cur)
    assert not ch and cur2 is cur
    assert seen == ["PRAGMA data_version"]
    writer.append_message("s0", "assistant", "hi")
    seen.clear()
    ch, _ = reader.changes_since(cur2)
    assert len(seen) > 1 and ch.messages == {"s0": [2]}


def test_messages_and_sessions_seen_exactly_once(pair):
    writer, reader = pair
    cur = reader.change_cursor()
    got: list[int] = []
    expected: list[int] = []
    new_sessions: list[str] = []
    for i in range(5):
        writer.create_session(f"n{i}", "telegram")
        expected += [writer.append_message(f"n{i}", "user", f"m{i}") for _ in range(3)]
        expected.append(writer.append_message("s0", "user", f"again {i}"))
        ch, cur = reader.changes_since(cur)
        got += [m for ids in ch.messages.values() for m in ids]
        new_sessions += [r["id"] for r in ch.new_sessions]
    ch, cur = reader.changes_since(cur)
    assert not ch
    assert sorted(got) == sorted(expected) and len(got) == len(set(got))
    assert new_sessions == [f"n{i}" for i in range(5)]


def test_message_batches_are_bounded_and_resume(pair):
    writer, reader = pair
    cur = reader.change_cursor()
    ids = writer.append_messages("s0", [{"role": "user", "content": f"x{i}"} for i in range(25)])
    got: list[int] = []
    polls = 0
    while True:
        ch, cur = reader.changes_since(cur, max_messages=10)
        polls += 1
        got += ch.messages.get("s0", [])
        if not ch.more:
            break
    assert got == ids and polls == 3
    assert not reader.changes_since(cur)[0]


def test_deleted_elsewhere_tracked_and_untracked(pair):
    writer, reader = pair
    for i in range(WINDOW + 10):
        writer.create_session(f"old{i}", "cli")
    cur = reader.change_cursor(care_about=["old3"])
    writer.delete_session("old3")  # cared about, below the window
    writer.delete_session("old4")  # neither cared about nor in the window: count fingerprint
    ch, cur = reader.changes_since(cur, ["old3"], count_every_s=0)
    assert ch.deleted == ["old3"]
    assert ch.sessions_removed == 1
    assert not ch.reset
    # a cared-about id that does not exist is reported deleted the first time it is asked about
    ch, cur = reader.changes_since(cur, ["never-there"])
    assert ch.deleted == ["never-there"]


def test_reused_rowid_of_deleted_top_session_is_a_new_session(pair):
    writer, reader = pair
    writer.create_session("top", "cli")
    cur = reader.change_cursor()
    writer.delete_session("top")
    writer.create_session("reuser", "cli")  # SQLite hands out the deleted top row's rowid again
    ch, cur = reader.changes_since(cur, count_every_s=0)
    assert [r["id"] for r in ch.new_sessions] == ["reuser"]
    assert "top" in ch.deleted
    assert ch.sessions_removed == 0 and not ch.reset


def test_renumbered_rowids_ask_for_a_reset(pair):
    """VACUUM may renumber the rowids of a table without an INTEGER PRIMARY KEY (sessions):
    simulated here by moving two rows, the baseline is then lost and the caller reloads."""
    writer, reader = pair
    for i in range(WINDOW + 5):
        writer.create_session(f"v{i}", "cli")
    cur = reader.change_cursor()
    writer.vacuum()  # the usual VACUUM keeps them: nothing to report
    ch, cur = reader.changes_since(cur, count_every_s=0)
    assert not ch.reset and not ch.new_sessions and not ch.deleted
    writer._conn().execute("UPDATE sessions SET rowid = rowid + 1000 WHERE id IN ('v20', 'v30')")
    ch, _ = reader.changes_since(cur, count_every_s=0)
    assert ch.reset
    assert not ch.new_sessions and not ch.deleted


def test_titles_ends_reopen_and_reactivation(pair):
    writer, reader = pair
    writer.create_session("quiet", "cli")
    writer.append_message("quiet", "user", "long ago", timestamp=time.time() - 3 * IDLE_AFTER_S)
    writer.end_session("quiet", "user_exit")
    cur = reader.change_cursor(care_about=["s0", "quiet"])
    writer.set_session_title("s0", "Renamed")
    writer.end_session("s0", "user_exit")
    ch, cur = reader.changes_since(cur, ["s0", "quiet"])
    assert ch.titles == {"s0": "Renamed"} and ch.ended == {"s0": "user_exit"}
    writer.reopen_session("s0")
    writer.reopen_session("quiet")
    writer.append_message("quiet", "user", "back again")
    writer.append_message("s0", "user", "right after")
    ch, cur = reader.changes_since(cur, ["s0", "quiet"])
    assert sorted(ch.reopened) == ["quiet", "s0"]
    assert ch.reactivated == ["quiet"]  # s0's previous message is recent: not a re-activation


def test_reactivation_of_an_untracked_old_session(pair):
    writer, reader = pair
    writer.create_session("dusty", "cli")
    writer.append_message("dusty", "user", "old", timestamp=time.time() - 2 * IDLE_AFTER_S)
    cur = reader.change_cursor()
    writer.append_message("dusty", "user", "new")
    ch, _ = reader.changes_since(cur)
    assert ch.reactivated == ["dusty"] and ch.messages == {"dusty": [3]}


def test_compression_child_and_continuation(pair):
    writer, reader = pair
    cur = reader.change_cursor(care_about=["s0"])
    writer.end_session("s0", "compression")  # upstream: end first, then create the continuation
    ch, cur = reader.changes_since(cur, ["s0"])
    assert ch.ended == {"s0": "compression"} and not ch.continued
    writer.create_session("s0-tip", "cli", parent_session_id="s0")
    writer.create_session(
        "s0-branch", "cli", parent_session_id="s0", model_config=json.dumps({"_branched_from": "s0"})
    )
    ch, cur = reader.changes_since(cur, ["s0"])
    assert ch.continued == {"s0": "s0-tip"}
    assert {c["id"]: c["edge_kind"] for c in ch.children} == {"s0-tip": "compression", "s0-branch": "branch"}
    assert not reader.changes_since(cur, ["s0"])[0].continued


def test_no_read_transaction_between_polls(pair):
    """A writer can TRUNCATE-checkpoint the WAL between our polls; the check fails while a
    reader holds a transaction (shown first, so the assertion can fail)."""
    writer, reader = pair
    wconn = writer._conn()
    rconn = reader._conn()
    rconn.execute("BEGIN")
    rconn.execute("SELECT count(*) FROM messages").fetchall()
    writer.append_message("s0", "user", "during a held read")
    busy, _, _ = wconn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()[0]
    assert busy == 1  # a held read transaction blocks it
    rconn.execute("COMMIT")
    cur = reader.change_cursor()
    for i in range(5):
        writer.append_message("s0", "user", f"m{i}")
        ch, cur = reader.changes_since(cur, ["s0"])
        assert ch.message_count == 1
        assert not rconn.in_transaction
        busy, _, _ = wconn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()[0]
        assert busy == 0
        assert os.path.getsize(str(writer.db_path) + "-wal") == 0


def test_watcher_care_from_another_thread_and_own_connection_commits(tmp_path):
    """One SessionDB: a commit by another thread's connection is seen through data_version."""
    import threading

    db = SessionDB(tmp_path / "state.db")
    db.create_session("a", "cli")
    watcher = db.change_watcher(["a"])
    t = threading.Thread(target=lambda: db.append_message("a", "user", "from a thread"))
    t.start()
    t.join()
    assert watcher.poll().messages == {"a": [1]}
    watcher.care(["a", "b"])
    assert watcher.poll().deleted == ["b"]
    db.close()


# ------------------------------------------------------------------ live status
def test_live_status_rules(tmp_path):
    db = SessionDB(tmp_path / "state.db")
    now = time.time()
    db.create_session("work-user", "cli")
    db.append_message("work-user", "user", "do it", timestamp=now - 5)
    db.create_session("work-tool", "cli")
    db.append_message("work-tool", "user", "q", timestamp=now - 9)
    db.append_message("work-tool", "assistant", "", tool_calls=TOOL_CALLS, timestamp=now - 8)
    db.create_session("work-result", "cli")
    db.append_message("work-result", "assistant", "", tool_calls=TOOL_CALLS, timestamp=now - 8)
    db.append_message("work-result", "tool", "out", tool_call_id="c1", timestamp=now - 7)
    db.create_session("wait", "cli")
    db.append_message("wait", "user", "q", timestamp=now - 30)
    db.append_message("wait", "assistant", "answer", timestamp=now - 20)
    db.append_message("wait", "system", "a note after the answer", timestamp=now - 19)
    db.create_session("stale-work", "cli")
    db.append_message("stale-work", "user", "q", timestamp=now - IDLE_AFTER_S - 1)
    db.create_session("idle", "cli")
    db.append_message("idle", "assistant", "done", timestamp=now - 2 * IDLE_AFTER_S)
    db.create_session("fresh", "cli")  # started just now, no message yet
    db.create_session("gone", "cli")
    db.append_message("gone", "user", "q", timestamp=now - 1)
    db.end_session("gone", "user_exit")
    db.create_session("rewound", "cli")
    db.append_message("rewound", "assistant", "answer", timestamp=now - 4)
    mid = db.append_message("rewound", "user", "undone", timestamp=now - 3)
    db.rewind_to_message("rewound", mid)
    ids = [
        "work-user",
        "work-tool",
        "work-result",
        "wait",
        "stale-work",
        "idle",
        "fresh",
        "gone",
        "rewound",
        "nope",
    ]
    st = db.live_status(ids, now)
    assert {k: v["state"] for k, v in st.items()} == {
        "work-user": "working",
        "work-tool": "working",
        "work-result": "working",
        "wait": "waiting",
        "stale-work": "idle",
        "idle": "idle",
        "fresh": "waiting",
        "gone": "ended",
        "rewound": "waiting",
    }
    assert st["wait"]["idle_s"] == pytest.approx(20) and st["wait"]["last_role"] == "assistant"
    assert st["fresh"]["idle_s"] < 5 and st["fresh"]["last_message_id"] is None
    assert db.live_status(["wait"], now, idle_after_s=10)["wait"]["state"] == "idle"
    assert db.active_sessions(now + 1, within_s=60) == [
        "fresh",
        "rewound",
        "work-user",
        "work-result",
        "work-tool",
        "wait",
    ]
    assert db.active_sessions(now + 1, within_s=6) == ["fresh", "rewound", "work-user"]
    db.close()


# ------------------------------------------------------------------ a writer in another process
WRITER = textwrap.dedent(
    """
    import sys, time
    from hermes_tui.state import SessionDB
    db = SessionDB(sys.argv[1])
    n = int(sys.argv[2])
    for i in range(n):
        if i % 10 == 0:
            db.create_session(f"p{i}", "cli")
        db.append_message(f"p{i - i % 10}", "user", f"msg {i}")
        if i == n // 2:
            db.delete_session("doomed")
        time.sleep(0.004)
    db.close()
    print("done", flush=True)
    """
)


def test_subprocess_writer_seen_exactly_once(tmp_path):
    path = tmp_path / "state.db"
    with SessionDB(path) as db:
        db.create_session("doomed", "cli")
    reader = SessionDB(path, read_only=True)
    cur = reader.change_cursor(care_about=["doomed"])
    n = 200
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path), str(n)], stdout=subprocess.PIPE, text=True
    )
    got: list[int] = []
    sessions: list[str] = []
    deleted: list[str] = []
    polls = 0
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        ch, cur = reader.changes_since(cur, ["doomed"])
        polls += 1
        got += [m for ids in ch.messages.values() for m in ids]
        sessions += [r["id"] for r in ch.new_sessions]
        deleted += ch.deleted
        if proc.poll() is not None and not ch:
            break
        time.sleep(0.01)
    assert proc.wait(timeout=30) == 0
    ch, cur = reader.changes_since(cur, ["doomed"])
    got += [m for ids in ch.messages.values() for m in ids]
    expected = [r[0] for r in reader._tuples("SELECT id FROM messages ORDER BY id")]
    reader.close()
    assert len(got) == n and sorted(got) == expected and len(set(got)) == n
    assert sessions == [f"p{i}" for i in range(0, n, 10)]
    assert deleted == ["doomed"]
    assert polls > 5  # we really polled while it wrote
