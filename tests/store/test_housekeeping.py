"""Delete, prune, plan, batched deletes, export (T69–T71), FTS integrity after every mutation."""

from __future__ import annotations

import threading
import time

import pytest
from conftest import count

DAY = 86400


def set_times(db, sid, started, ended=None):
    db._execute_write(
        lambda c: c.execute(
            "UPDATE sessions SET started_at = ?, ended_at = COALESCE(?, ended_at) WHERE id = ?",
            (started, ended, sid),
        )
    )


def assert_fts_ok(db):
    res = db.fts_integrity_check()
    assert res and all(v == "ok" for v in res.values()), res
    assert {"messages_fts", "messages_fts_trigram"} <= set(res)


def test_t69_delete_session_and_clear(db):
    db.create_session("root", "cli")
    db.create_session("cont", "cli", parent_session_id="root")
    db.create_session("sub", "cli", parent_session_id="root", model_config={"_delegate_from": "root"})
    db.create_session("br", "cli", parent_session_id="root", model_config={"_branched_from": "root"})
    db.end_session("root", "compression")
    for sid in ("root", "cont", "sub", "br"):
        db.append_message(sid, "user", f"hello from {sid}")
    db.update_token_counts("root", input_tokens=5, model="m")
    assert db.delete_session("root") is True
    assert db.get_session("sub") is None and db.get_session("root") is None
    assert db.get_session("br")["parent_session_id"] is None
    assert db.get_session("cont")["parent_session_id"] is None
    assert db._scalar("SELECT COUNT(*) FROM session_model_usage WHERE session_id='root'") == 0
    assert count(db, "messages") == 2
    assert db.delete_session("root") is False
    db.clear_messages("cont")
    row = db.get_session("cont")
    assert row["message_count"] == 0 and row["tool_call_count"] == 0
    assert db.get_messages("cont", include_inactive=True) == []
    assert db.search_messages("hello") and [r["session_id"] for r in db.search_messages("hello")] == ["br"]
    assert_fts_ok(db)


@pytest.fixture
def old(db):
    now = time.time()
    for sid in ("old1", "old2", "live"):
        db.create_session(sid, "cli")
        db.append_message(sid, "user", f"msg {sid}", timestamp=now - 100 * DAY)
    db.create_session("kid", "cli", parent_session_id="old1")
    db.end_session("old1", "done")
    db.end_session("old2", "done")
    for sid in ("old1", "old2", "live"):
        set_times(db, sid, now - 100 * DAY, now - 100 * DAY if sid != "live" else None)
    return db


def test_t70_prune(old):
    db = old
    assert [r["id"] for r in db.list_prune_candidates(90)] == ["old1", "old2"] or {
        r["id"] for r in db.list_prune_candidates(90)
    } == {"old1", "old2"}
    assert db.prune_sessions(90) == 2
    assert db.get_session("live") is not None
    kid = db.get_session("kid")
    assert kid is not None and kid["parent_session_id"] is None
    assert db.get_session("old1") is None and db.get_session("old2") is None
    assert count(db, "messages") == 1
    assert_fts_ok(db)


def test_plan_prune_reasons(old):
    db = old
    now = time.time()
    db.create_session("arch", "cli")
    db.end_session("arch", "done")
    set_times(db, "arch", now - 100 * DAY)
    db.set_session_archived("arch", True)
    db.create_session("recent", "cli")
    db.end_session("recent", "done")
    db.append_message("recent", "user", "just now", timestamp=now - 60)
    set_times(db, "recent", now - 100 * DAY)
    db.create_session("del", "cli", parent_session_id="old1", model_config={"_delegate_from": "old1"})
    before = count(db, "sessions")
    plan = db.plan_prune(older_than_days=90, now=now)
    assert set(plan["ids"]) == {"old1", "old2"}
    assert plan["sessions"] == 2
    reasons = {e["id"]: e["reason"] for e in plan["excluded"]}
    assert reasons == {"live": "still open", "arch": "archived", "recent": "active in the last 10 minutes"}
    # "del" is still open: it would be kept by the ended-only delete and orphaned, so it is
    # reported separately rather than promised as a cascade
    assert plan["cascade_ids"] == []
    assert [r["id"] for r in plan["cascade_open"]] == ["del"]
    db.end_session("del", "done")
    assert db.plan_prune(older_than_days=90, now=now)["cascade_ids"] == ["del"]
    assert count(db, "sessions") == before


def test_delete_sessions_batched(db):
    ids = []
    for i in range(6):
        sid = f"b{i}"
        db.create_session(sid, "cli")
        for j in range(3):
            db.append_message(sid, "user", f"batch {i} {j}")
        ids.append(sid)
    cancel = threading.Event()
    cancel.set()
    out = db.delete_sessions_batched(ids, batch_messages=5, cancel=cancel)
    assert out["cancelled"] is True and out["deleted"] == 0
    assert count(db, "sessions") == 6 and count(db, "messages") == 18
    calls = []
    out = db.delete_sessions_batched(
        ids + ["ghost"], batch_messages=5, progress=lambda d, t: calls.append((d, t))
    )
    assert out["deleted"] == 6 and out["batches"] >= 3
    assert calls[0] == (0, 6) and calls[-1] == (6, 6)
    assert len(calls) == out["batches"] + 1
    assert count(db, "sessions") == 0 and count(db, "messages") == 0
    assert_fts_ok(db)


def test_t71_export(db):
    db.create_session("s", "cli")
    db.append_message("s", "user", "one")
    db.append_message("s", "assistant", "two")
    db.archive_and_compact("s", [{"role": "user", "content": "summary"}])
    exp = db.export_session("s")
    assert [m["content"] for m in exp["messages"]] == ["summary"]
    assert exp["id"] == "s"
    allx = db.export_all()
    assert len(allx) == 1 and "last_active" in allx[0]
    assert db.export_session("nope") is None


def test_fts_integrity_after_every_mutation(fixture_f):
    db = fixture_f
    assert_fts_ok(db)
    db.append_message("s1", "user", "new docker row")
    db._execute_write(lambda c: c.execute("UPDATE messages SET content = 'changed text' WHERE id = 4"))
    db._execute_write(lambda c: c.execute("UPDATE messages SET role = 'tool' WHERE id = 10"))
    assert_fts_ok(db)
    db._execute_write(lambda c: c.execute("DELETE FROM messages WHERE id = 12"))
    assert_fts_ok(db)
    db.rewind_to_message("s2", 7)
    assert_fts_ok(db)
    db.archive_and_compact("s2", [{"role": "user", "content": "compact 日本語"}])
    assert_fts_ok(db)
    db.replace_messages(
        "s1",
        [{"role": "user", "content": "replaced"}, {"role": "tool", "content": "t", "tool_name": "terminal"}],
    )
    assert_fts_ok(db)
    assert [r["id"] for r in db.search_messages("replaced")]
    db.end_session("s1", "done")
    db.prune_sessions(older_than_days=None, started_before=time.time() + 10)
    assert db.get_session("s1") is None
    assert_fts_ok(db)
    assert db.search_messages("docker") == []


def test_meta(db):
    assert db.get_meta("k") is None
    db.set_meta("k", "v")
    db.set_meta("k", "w")
    assert db.get_meta("k") == "w"


def test_plan_delete_counts_cascade_and_orphans(db):
    db.create_session("root", "cli")
    db.create_session("sub", "cli", parent_session_id="root", model_config={"_delegate_from": "root"})
    db.create_session("subsub", "cli", parent_session_id="sub", model_config={"_delegate_from": "sub"})
    db.create_session("br", "cli", parent_session_id="root", model_config={"_branched_from": "root"})
    db.create_session("kid", "cli", parent_session_id="sub")  # untagged child of a cascaded delegate
    db.create_session("other", "cli")
    for sid, n in (("root", 2), ("sub", 3), ("subsub", 1), ("br", 4), ("other", 5)):
        for j in range(n):
            db.append_message(sid, "user", f"{sid} {j}")
    before = (count(db, "sessions"), count(db, "messages"))
    plan = db.plan_delete(["root", "ghost", "root", "other"])
    assert plan["ids"] == ["root", "other"] and plan["missing"] == 1
    assert sorted(plan["cascade_ids"]) == ["sub", "subsub"]
    assert plan["sessions"] == 4 and plan["messages"] == 2 + 3 + 1 + 5
    orphans = {o["id"]: o for o in plan["orphans"]}
    assert set(orphans) == {"br", "kid"}
    assert orphans["br"]["edge_kind"] == "branch" and orphans["br"]["parent_session_id"] == "root"
    assert orphans["kid"]["parent_session_id"] == "sub"
    assert (count(db, "sessions"), count(db, "messages")) == before  # reads only
    out = db.delete_sessions_batched(plan["ids"] + plan["cascade_ids"], cascade_delegates=False)
    assert out["deleted"] == plan["sessions"]
    assert count(db, "messages") == before[1] - plan["messages"]
    assert db.get_session("br")["parent_session_id"] is None
    assert db.get_session("kid")["parent_session_id"] is None
    assert db.plan_delete([]) == {
        "ids": [],
        "missing": 0,
        "cascade_ids": [],
        "sessions": 0,
        "messages": 0,
        "orphans": [],
        "busy": [],
    }


def test_plan_delete_many_ids_in_chunks(db):
    ids = [f"m{i:04d}" for i in range(1000)]
    db._execute_write(
        lambda c: c.executemany(
            "INSERT INTO sessions (id, source, started_at, message_count) VALUES (?, 'cli', ?, 1)",
            [(sid, 1.0 + i) for i, sid in enumerate(ids)],
        )
    )
    plan = db.plan_delete(list(reversed(ids)))
    assert plan["ids"] == list(reversed(ids)) and plan["messages"] == 1000 and not plan["orphans"]


def test_plan_delete_one_scan_walk_matches_the_chunked_one(db, monkeypatch):
    from hermes_tui.state import housekeeping

    db.create_session("root", "cli")
    db.create_session("sub", "cli", parent_session_id="root", model_config={"_delegate_from": "root"})
    db.create_session("subsub", "cli", parent_session_id="sub", model_config={"_delegate_from": "sub"})
    db.create_session("loose", "cli", model_config={"_delegate_from": "root"})  # marker only, no parent
    db.create_session("br", "cli", parent_session_id="root", model_config={"_branched_from": "root"})
    db.create_session("other", "cli")
    seeds = ["root", "other"]
    conn = db._conn()
    assert (
        housekeeping.delegate_closure_one_scan(conn, seeds)
        == housekeeping.collect_delegate_children(conn, seeds)
        == ["loose", "sub", "subsub"]
    )
    small = db.plan_delete(seeds)
    monkeypatch.setattr(housekeeping, "DELEGATE_SCAN_SEEDS", 0)
    assert db.plan_delete(seeds) == small


def test_corrupt_auto_prune_marker_counts_as_no_prior_run(tmp_path) -> None:
    from hermes_tui.state import SessionDB

    with SessionDB(tmp_path / "state.db") as db:
        db.set_meta("last_auto_prune", "not a time")
        first = db.maybe_auto_prune_and_vacuum()
        assert "error" not in first and not first["skipped"], first
        assert float(db.get_meta("last_auto_prune")) > 0  # repaired by the run
        assert db.maybe_auto_prune_and_vacuum()["skipped"]
