"""The trash: delete and prune write a restorable entry first; restore brings back
identical rows (rowids of `sessions`/`session_model_usage` excepted, as documented), FTS-searchable."""

from __future__ import annotations

import json
import math
import os
import stat
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hermes_tui.state import SessionDB, TrashEntryNotFound, trash_list
from hermes_tui.state import trash as T

# Tables compared before/after; FTS shadow tables are checked by integrity-check and search.
COMPARED = (
    "sessions",
    "messages",
    "session_model_usage",
    "sqlite_sequence",
    "gateway_routing",
    "compression_locks",
    "async_delegations",
    "schema_version",
)


def table_dump(db: SessionDB) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of the compared tables, without rowids, in a canonical order: each value with its
    storage class, TEXT as its raw bytes (non-UTF-8 text too), floats by repr."""
    conn = db._conn()
    out: dict[str, list[tuple[Any, ...]]] = {}
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    for t in COMPARED:
        if t in names:
            cols = [r[1] for r in conn.execute(f'PRAGMA table_info("{t}")')]
            sel = ", ".join(
                f'typeof("{c}"), CASE typeof("{c}") WHEN \'text\' THEN CAST("{c}" AS BLOB) ELSE "{c}" END'
                for c in cols
            )
            rows = [
                tuple(repr(v) if isinstance(v, float) else v for v in r)
                for r in conn.execute(f'SELECT {sel} FROM "{t}"')
            ]
            out[t] = sorted(rows, key=repr)
    return out


def fts_check(db: SessionDB) -> None:
    """FTS5 integrity-check of every index; external-content ones against their content (rank 1)."""
    conn = db._conn()
    for name, sql in conn.execute(
        "SELECT name, sql FROM sqlite_master WHERE type = 'table' AND sql LIKE '%fts5%'"
    ):
        arg = ", 1" if "content=" in sql.replace(" ", "") else ""
        col = f"{name}, rank" if arg else name
        conn.execute(f"INSERT INTO {name}({col}) VALUES('integrity-check'{arg})")


def build(db: SessionDB, n: int = 4, *, ended: bool = True) -> list[str]:
    ids = []
    for i in range(n):
        sid = f"s{i}"
        db.create_session(sid, "cli" if i % 2 else "telegram", model=f"m{i % 2}")
        for j in range(3):
            db.append_message(
                sid,
                "user" if j % 2 == 0 else "assistant",
                f"zebra{i} word{j} 日本語{i}",
                timestamp=1700000000.123456789 + i * 10 + j,
            )
        db.update_token_counts(
            sid,
            input_tokens=10 + i,
            output_tokens=5,
            model=f"m{i % 2}",
            estimated_cost_usd=0.1 + i / 3,
            actual_cost_usd=1 / 7,
        )
        db.set_session_title(sid, f"Title {i}")
        if ended:
            db.end_session(sid, "done")
        ids.append(sid)
    return ids


def entry_rows(db: SessionDB, entry_id: str) -> list[dict[str, Any]]:
    path = Path(db.trash_entry(entry_id)["path"]) / "rows.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture
def tdb(db):
    db.trash_root = None
    return db


# ---------------------------------------------------------------- values
@given(
    st.one_of(
        st.none(),
        st.integers(-(2**63), 2**63 - 1),
        st.floats(allow_nan=False),
        st.binary(),
        st.text(),
        st.sampled_from([math.inf, -math.inf]),
        st.binary().map(T.RawText),
    )
)
def test_values_round_trip_exactly(value):
    back = T.decode_value(json.loads(json.dumps(T.encode_value(value), allow_nan=False)))
    assert type(back) is type(value)
    assert back == value and (not isinstance(value, float) or repr(back) == repr(value))


# ---------------------------------------------------------------- delete → restore
def test_delete_writes_a_private_fsynced_entry_then_restore_is_identical(tdb):
    ids = build(tdb)
    tdb.create_session("child", "cli", parent_session_id="s0")  # a kept child the delete orphans
    tdb.append_message("s1", "tool", None, tool_name="terminal")
    blob = b"\x00\xffraw"
    tdb._conn().execute("UPDATE messages SET api_content = ? WHERE id = 1", (blob,))
    # TEXT that is not UTF-8 (another writer's bytes): kept as TEXT, byte for byte
    tdb._conn().execute("UPDATE messages SET reasoning = CAST(x'41ff42' AS TEXT) WHERE id = 2")
    before = table_dump(tdb)

    res = tdb.trash_sessions(["s0", "s1"])
    assert res["deleted_ids"] == ["s0", "s1"] and res["deleted"] == 2
    entry = Path(res["trash_path"])
    assert entry.parent == tdb.db_path.parent / ".hermes-tui-trash" / "state.db"
    for folder in (entry, entry.parent, entry.parent.parent):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    for f in entry.iterdir():
        assert stat.S_IMODE(f.stat().st_mode) == 0o600
    man = json.loads((entry / "manifest.json").read_text())
    assert man["what"] == "delete" and man["status"] == "deleted"
    assert man["counts"] == {"sessions": 2, "messages": 7, "session_model_usage": 2, "orphan": 1}
    assert [s["title"] for s in man["sessions"]] == ["Title 0", "Title 1"]
    assert tdb.get_session("child")["parent_session_id"] is None
    assert tdb.search_messages("zebra0") == []

    out = tdb.restore_trash(res["trash_entry"])
    assert out["restored"] == 2 and out["conflicts"] == 0
    assert out["orphans"] == [{"id": "child", "parent_session_id": "s0", "status": "relinked"}]
    assert table_dump(tdb) == before
    assert tdb._conn().execute("SELECT api_content FROM messages WHERE id = 1").fetchall() == [(blob,)]
    assert tdb._conn().execute(
        "SELECT typeof(reasoning), CAST(reasoning AS BLOB) FROM messages WHERE id = 2"
    ).fetchall() == [("text", b"A\xffB")]
    fts_check(tdb)
    assert {r["session_id"] for r in tdb.search_messages("zebra0")} == {"s0"}
    assert {r["session_id"] for r in tdb.search_messages("日本語")} >= {"s0", "s1"}
    assert tdb.trash_entry(res["trash_entry"])["status"] == "restored"
    assert tdb.list_trash()[0]["status"] == "restored"  # kept, marked, not deleted silently
    assert ids


def test_delete_with_cascade_takes_delegate_children_and_restores_their_lineage(tdb):
    build(tdb, 2)
    tdb.create_session(
        "sub", "cli", parent_session_id="s0", model_config=json.dumps({"_delegate_from": "s0"})
    )
    tdb.append_message("sub", "user", "subagent work")
    before = table_dump(tdb)
    res = tdb.trash_sessions(["s0"], cascade_delegates=True)
    assert set(res["deleted_ids"]) == {"s0", "sub"}
    tdb.restore_trash(res["trash_entry"])
    assert table_dump(tdb) == before


def test_prune_skips_a_reopened_session_and_the_entry_restores_only_what_went(tdb):
    build(tdb, 3)
    before = table_dump(tdb)

    def reopen(step: str) -> None:
        if step == "entry-written":
            other = SessionDB(tdb.db_path, migrate=False)
            other.reopen_session("s1")
            other.close()

    tdb._trash_step_hook = reopen
    res = tdb.trash_sessions(["s0", "s1", "s2"], what="prune", require_ended=True)
    tdb._trash_step_hook = None
    assert res["deleted_ids"] == ["s0", "s2"] and res["skipped"] == 1
    assert tdb.trash_entry(res["trash_entry"])["deleted_ids"] == ["s0", "s2"]
    out = tdb.restore_trash(res["trash_entry"])
    assert [s["id"] for s in out["sessions"]] == ["s0", "s2"]
    after = table_dump(tdb)
    assert (
        after["messages"] == before["messages"]
        and after["session_model_usage"] == before["session_model_usage"]
    )
    assert tdb.get_session("s1")["ended_at"] is None  # the reopened one was never touched


def test_rows_changed_after_the_snapshot_are_in_the_entry(tdb):
    """An agent appends to a session being deleted, and starts a child of it, after the entry
    was written: the guard aborts that batch, the session is snapshotted again, nothing is lost."""
    build(tdb, 2, ended=False)

    def agent(step: str) -> None:
        if step == "entry-written":
            other = SessionDB(tdb.db_path, migrate=False)
            other.append_message("s0", "assistant", "late quokka reply")
            other.create_session("late-child", "cli", parent_session_id="s0")
            other.close()

    tdb._trash_step_hook = agent
    res = tdb.trash_sessions(["s0", "s1"])
    tdb._trash_step_hook = None
    assert res["deleted_ids"] == ["s0", "s1"]
    assert any(r["t"] == "reset" for r in entry_rows(tdb, res["trash_entry"]))
    before_restore_child = tdb.get_session("late-child")
    assert before_restore_child["parent_session_id"] is None
    tdb.restore_trash(res["trash_entry"])
    assert "late quokka reply" in [m["content"] for m in tdb.get_messages("s0")]
    assert tdb.get_session("s0")["message_count"] == 4
    assert tdb.get_session("late-child")["parent_session_id"] == "s0"
    assert [r["session_id"] for r in tdb.search_messages("quokka")] == ["s0"]
    fts_check(tdb)
    # the guard's TEMP objects are gone: later writes on this connection are unaffected
    assert not tdb._tuples("SELECT name FROM sqlite_temp_master WHERE name LIKE 'hermes_trash%'")


def test_conflicts_are_reported_per_session_and_never_overwrite(tdb):
    build(tdb, 3)
    res = tdb.trash_sessions(["s0", "s1", "s2"])
    tdb.create_session("s0", "cli")  # the id exists again
    tdb.append_message("s0", "user", "new life")
    tdb.create_session("other", "cli")
    tdb.set_session_title("other", "Title 1")  # the title is taken
    out = tdb.restore_trash(res["trash_entry"])
    by = {s["id"]: s for s in out["sessions"]}
    assert by["s0"]["status"] == "conflict" and "exists again" in by["s0"]["reason"]
    assert by["s1"]["status"] == "restored" and "held by session other" in by["s1"]["notes"][0]
    assert by["s2"]["status"] == "restored" and by["s2"]["notes"] == []
    assert tdb.get_session("s1")["title"] is None and tdb.get_session("other")["title"] == "Title 1"
    assert [m["content"] for m in tdb.get_messages("s0")] == ["new life"]
    assert out["status"] == "partly-restored"
    fts_check(tdb)


def test_message_id_taken_is_a_conflict(tdb):
    build(tdb, 2)
    res = tdb.trash_sessions(["s0"])
    tdb._conn().execute(
        "INSERT INTO messages (id, session_id, role, content, timestamp) VALUES (1, 's1', 'user', 'x', 1)"
    )
    out = tdb.restore_trash(res["trash_entry"])
    assert out["sessions"][0]["status"] == "conflict" and "message id 1" in out["sessions"][0]["reason"]
    assert tdb.get_session("s0") is None


def test_a_gone_parent_leaves_the_restored_child_a_root(tdb):
    build(tdb, 1)
    tdb.create_session("kid", "cli", parent_session_id="s0")
    res = tdb.trash_sessions(["kid"])
    tdb.trash_sessions(["s0"])
    out = tdb.restore_trash(res["trash_entry"])
    assert (
        out["sessions"][0]["status"] == "restored" and "restored as a root" in out["sessions"][0]["notes"][0]
    )
    assert tdb.get_session("kid")["parent_session_id"] is None


def test_interrupted_entry_restores_what_went_and_leaves_the_rest(tdb):
    """A delete killed after its first batch: the entry is still `pending` (no deleted_ids)."""
    build(tdb, 3)
    before = table_dump(tdb)
    res = tdb.trash_sessions(["s0", "s1"])
    man_path = Path(res["trash_path"]) / "manifest.json"
    man = json.loads(man_path.read_text())
    man["status"], man["deleted_ids"] = "pending", None
    man["sessions"].append({"id": "s2", "title": "Title 2"})
    man_path.write_text(json.dumps(man))
    assert tdb.list_trash()[0]["status"] == "interrupted"
    out = tdb.restore_trash(res["trash_entry"])
    assert out["restored"] == 2 and table_dump(tdb) == before


def test_nothing_to_delete_writes_no_entry(tdb):
    res = tdb.trash_sessions(["nope"])
    assert res["trash_entry"] is None and tdb.list_trash() == []


def test_unknown_or_malformed_entry_ids(tdb):
    for bad in ("20990101T000000Z-abcdef", "../../etc", ""):
        with pytest.raises(TrashEntryNotFound):
            tdb.trash_entry(bad)
        with pytest.raises(TrashEntryNotFound):
            tdb.restore_trash(bad)


def test_read_only_store_lists_but_refuses_to_trash(tdb, db_path):
    build(tdb, 1)
    tdb.trash_sessions(["s0"])
    ro = SessionDB(db_path, read_only=True)
    try:
        assert len(ro.list_trash()) == 1
        with pytest.raises(Exception, match="read-only"):
            ro.trash_sessions(["s0"])
    finally:
        ro.close()


def test_falls_back_to_the_data_dir_when_the_store_folder_is_not_writable(tdb, tmp_path, monkeypatch):
    build(tdb, 1)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    monkeypatch.setattr(
        trash_list, "beside_root", lambda p: blocker / "trash" / p.name
    )  # mkdir fails under a file
    res = tdb.trash_sessions(["s0"])
    path = Path(res["trash_path"])
    assert (tmp_path / "xdg" / "hermes-tui" / "trash") in path.parents
    assert stat.S_IMODE(path.stat().st_mode) == 0o700
    assert [e["id"] for e in tdb.list_trash()] == [res["trash_entry"]]
    tdb.restore_trash(res["trash_entry"])
    assert tdb.get_session("s0") is not None


# ---------------------------------------------------------------- retention and emptying
def _age(db: SessionDB, entry_id: str, seconds: float) -> None:
    p = Path(db.trash_entry(entry_id)["path"]) / "manifest.json"
    m = json.loads(p.read_text())
    m["created_at"] -= seconds
    p.write_text(json.dumps(m))


def test_retention_runs_when_an_entry_is_written_never_on_open(tdb, db_path):
    build(tdb, 4)
    old = tdb.trash_sessions(["s0"])["trash_entry"]
    _age(tdb, old, T.TRASH_RETENTION_S + 60)
    SessionDB(db_path, migrate=False).close()  # opening removes nothing
    assert old in [e["id"] for e in tdb.list_trash()]
    res = tdb.trash_sessions(["s1"])
    assert res["retention"]["removed"] == [old]
    assert [e["id"] for e in tdb.list_trash()] == [res["trash_entry"]]


def test_size_cap_drops_the_oldest_but_never_the_new_entry(tdb):
    build(tdb, 4)
    a = tdb.trash_sessions(["s0"])["trash_entry"]
    _age(tdb, a, 10)
    b = tdb.trash_sessions(["s1"])["trash_entry"]
    tdb.trash_max_bytes = 1
    c = tdb.trash_sessions(["s2"])
    assert c["retention"]["removed"] == [a, b]
    assert [e["id"] for e in tdb.list_trash()] == [c["trash_entry"]]


def test_empty_trash_all_older_than_and_one(tdb):
    build(tdb, 3)
    a = tdb.trash_sessions(["s0"])["trash_entry"]
    _age(tdb, a, 7200)
    b = tdb.trash_sessions(["s1"])["trash_entry"]
    c = tdb.trash_sessions(["s2"])["trash_entry"]
    assert tdb.empty_trash(older_than_s=3600)["removed"] == [a]
    assert tdb.empty_trash(entry_id=b)["removed"] == [b]
    with pytest.raises(TrashEntryNotFound):
        tdb.empty_trash(entry_id=b)
    out = tdb.empty_trash()
    assert out["removed"] == [c] and out["bytes"] > 0
    assert tdb.list_trash() == []


def test_an_entry_without_manifest_is_incomplete_and_cannot_be_restored(tdb):
    root = T.beside_root(tdb.db_path)
    (root / "20200101T000000Z-000000").mkdir(parents=True)
    assert tdb.list_trash()[0]["status"] == "incomplete"
    with pytest.raises(T.TrashError, match="incomplete"):
        tdb.restore_trash("20200101T000000Z-000000")
    assert tdb.empty_trash()["removed"] == ["20200101T000000Z-000000"]


# ---------------------------------------------------------------- property test
WORDS = ["alpha", "zebra", "日本語", "東京タワー", "웅기", "x_y", "deploy", "P2.2", "ok"]


@st.composite
def stores(draw):
    n = draw(st.integers(1, 6))
    sessions = []
    for i in range(n):
        parent = draw(st.one_of(st.none(), st.integers(0, i - 1))) if i else None
        msgs = draw(
            st.lists(
                st.tuples(
                    st.sampled_from(["user", "assistant", "tool"]),
                    st.lists(st.sampled_from(WORDS), min_size=0, max_size=4),
                    st.floats(1e9, 2e9, allow_nan=False),
                ),
                max_size=5,
            )
        )
        sessions.append(
            {
                "parent": parent,
                "msgs": msgs,
                "ended": draw(st.booleans()),
                "title": draw(st.one_of(st.none(), st.just(f"T{i}"))),
                "cost": draw(st.floats(0, 10, allow_nan=False)),
                "delegate": draw(st.booleans()),
            }
        )
    picks = draw(
        st.lists(
            st.tuples(st.sampled_from(["delete", "prune"]), st.sets(st.integers(0, n - 1), min_size=1)),
            min_size=1,
            max_size=3,
        )
    )
    return sessions, picks


def populate(db: SessionDB, sessions: list[dict[str, Any]]) -> None:
    for i, s in enumerate(sessions):
        kw: dict[str, Any] = {"model": "m"}
        if s["parent"] is not None:
            kw["parent_session_id"] = f"p{s['parent']}"
            if s["delegate"]:
                kw["model_config"] = json.dumps({"_delegate_from": f"p{s['parent']}"})
        db.create_session(f"p{i}", "cli", **kw)
        for role, words, ts in s["msgs"]:
            db.append_message(
                f"p{i}",
                role,
                " ".join(words) or None,
                timestamp=ts,
                tool_name="terminal" if role == "tool" else None,
            )
        db.update_token_counts(
            f"p{i}",
            input_tokens=i,
            output_tokens=2 * i,
            model="m",
            estimated_cost_usd=s["cost"],
            actual_cost_usd=s["cost"] / 3,
        )
        if s["title"]:
            db.set_session_title(f"p{i}", s["title"])
        if s["ended"]:
            db.end_session(f"p{i}", "done")


def run_roundtrip(db: SessionDB, sessions: list[dict[str, Any]], picks: list[tuple[str, set[int]]]) -> None:
    populate(db, sessions)
    before = table_dump(db)
    entries = []
    for what, chosen in picks:
        ids = [f"p{i}" for i in sorted(chosen)]
        res = db.trash_sessions(
            ids, what=what, cascade_delegates=what == "delete", require_ended=what == "prune"
        )
        if res["trash_entry"]:
            entries.append(res["trash_entry"])
        fts_check(db)
    for entry in reversed(entries):  # undo, newest first
        out = db.restore_trash(entry)
        assert out["conflicts"] == 0, out
    assert table_dump(db) == before
    fts_check(db)
    for i, s in enumerate(sessions):
        for _role, words, _ts in s["msgs"]:
            if "zebra" in words:
                assert f"p{i}" in {r["session_id"] for r in db.search_messages("zebra", limit=100)}


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(stores())
def test_property_delete_prune_restore_is_identity_v23(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("prop") / "state.db"
    db = SessionDB(path)
    try:
        assert db.layout.kind == "v23"
        run_roundtrip(db, *data)
    finally:
        db.close()


def make_legacy(path: Path) -> None:
    """A v22 file with hermes-agent 0.19.0's inline FTS DDL (verbatim, `fts_schema.LEGACY_*`)."""
    import apsw

    from hermes_tui.state import fts_schema as F
    from hermes_tui.state import schema as S

    c = apsw.Connection(str(path))
    c.execute(
        S.SCHEMA_SQL + F.LEGACY_BASE_SQL + F.LEGACY_TRIGRAM_SQL + "INSERT INTO schema_version VALUES (22);"
    )
    c.close()


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(stores())
def test_property_delete_prune_restore_is_identity_legacy_fts(tmp_path_factory, data):
    """The inline legacy FTS layout (0.19.0's), opened as the browser does (migrate=False)."""
    path = tmp_path_factory.mktemp("prop") / "state.db"
    make_legacy(path)
    db = SessionDB(path, migrate=False)
    try:
        assert db.layout.kind == "legacy"
        run_roundtrip(db, *data)
    finally:
        db.close()


def test_a_bulk_delete_and_its_restore_keep_every_message(tdb):
    """100 sessions, 2,000 messages through the trash and back (timings: bench/trash_bench.py)."""
    for i in range(100):
        tdb.create_session(f"b{i}", "cli")
        tdb.append_messages(f"b{i}", [{"role": "user", "content": f"bulk text {j}"} for j in range(20)])
    res = tdb.trash_sessions([f"b{i}" for i in range(100)])
    assert res["deleted"] == 100 and tdb.message_count() == 0
    tdb.restore_trash(res["trash_entry"])
    assert tdb.message_count() == 2000
    assert os.path.getsize(Path(res["trash_path"]) / "rows.jsonl") > 2000 * 20


def test_restoring_twice_says_already_restored_not_conflict(tdb):
    build(tdb, 2)
    res = tdb.trash_sessions(["s0", "s1"])
    assert tdb.restore_trash(res["trash_entry"])["restored"] == 2
    again = tdb.restore_trash(res["trash_entry"])
    assert again["restored"] == 0 and again["conflicts"] == 0 and again["status"] == "restored"
    assert {s["reason"] for s in again["sessions"]} == {"already restored from this entry"}


def test_a_session_recreated_under_the_same_id_is_a_conflict_not_already_restored(tdb):
    build(tdb, 1)
    res = tdb.trash_sessions(["s0"])
    man = Path(res["trash_path"]) / "manifest.json"
    tdb.restore_trash(res["trash_entry"])
    m = json.loads(man.read_text())
    m["restored_ids"], m["status"] = [], "deleted"  # as if the restore was killed before marking
    man.write_text(json.dumps(m))
    again = tdb.restore_trash(res["trash_entry"])
    assert again["sessions"][0]["status"] == "present"  # recognised as this entry's own rows
    tdb.trash_sessions(
        ["s0"],
    )
    tdb.create_session("s0", "cli")  # someone else's session under the same id
    man.write_text(json.dumps(m))
    assert tdb.restore_trash(res["trash_entry"])["sessions"][0]["status"] == "conflict"


def test_cancelled_before_the_first_batch_leaves_no_entry(tdb):
    import threading

    build(tdb, 2)
    cancel = threading.Event()
    cancel.set()
    seen: list[tuple[int, int]] = []
    res = tdb.trash_sessions(["s0", "s1"], cancel=cancel, progress=lambda d, t: seen.append((d, t)))
    assert res["cancelled"] and res["deleted"] == 0 and res["trash_entry"] is None
    assert tdb.list_trash() == [] and tdb.get_session("s0") is not None
    assert seen == [(0, 2)]


def test_progress_counts_every_session(tdb):
    build(tdb, 3)
    seen: list[tuple[int, int]] = []
    tdb.trash_sessions(["s0", "s1", "s2"], progress=lambda d, t: seen.append((d, t)))
    assert seen[0] == (0, 3) and seen[-1] == (3, 3)


def test_a_live_writer_gets_in_between_restore_batches(tdb, db_path):
    """Restore runs in short batches: another connection appending meanwhile never waits long."""
    import threading

    for i in range(40):
        tdb.create_session(f"r{i}", "cli")
        tdb.append_messages(f"r{i}", [{"role": "user", "content": f"restore load {j}"} for j in range(50)])
    tdb.create_session("live", "cli")
    res = tdb.trash_sessions([f"r{i}" for i in range(40)])
    writes: list[int] = []
    errors: list[BaseException] = []
    stop = threading.Event()
    talking = threading.Event()

    def agent() -> None:
        other = SessionDB(db_path, migrate=False)
        try:
            while not stop.is_set():
                writes.append(other.append_message("live", "user", "agent keeps talking"))
                talking.set()
                time.sleep(0.002)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            other.close()

    batches: list[int] = []  # the agent's writes so far, at the end of each restore batch
    tdb._trash_step_hook = lambda name: batches.append(len(writes)) if name == "restore-batch" else None
    th = threading.Thread(target=agent)
    th.start()
    try:
        assert talking.wait(30)
        out = tdb.restore_trash(res["trash_entry"])
    finally:
        stop.set()
        th.join()
    assert not errors and out["restored"] == 40 and tdb.message_count() == 2000 + len(writes)
    # The agent's writes land between the batches, not all before or after the restore.
    assert len(batches) > 2 and batches[-1] > batches[0], batches
    fts_check(tdb)
