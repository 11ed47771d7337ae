"""Listing (T68, session_order, list_rows, keyset pages) and lineage (edges, ancestors, cycles)."""

from __future__ import annotations

import threading

import apsw
import pytest

from hermes_tui.state import SessionFilter


def set_started(db, sid, ts):
    db._execute_write(lambda c: c.execute("UPDATE sessions SET started_at = ? WHERE id = ?", (ts, sid)))


@pytest.fixture
def tree(db):
    """T68: root (ended compression) → cont; sub (delegate); br (branch); other; empty."""
    db.create_session("root", "cli")
    db.create_session("cont", "cli", parent_session_id="root")
    db.create_session("sub", "cli", parent_session_id="root", model_config={"_delegate_from": "root"})
    db.create_session("br", "cli", parent_session_id="root", model_config={"_branched_from": "root"})
    db.create_session("other", "telegram")
    db.create_session("empty", "cli")
    for i, sid in enumerate(["root", "cont", "sub", "br", "other", "empty"]):
        set_started(db, sid, 1000.0 + i * 10)
    db.end_session("root", "compression")
    db.append_message("root", "user", "root question", timestamp=1001)
    db.append_message("cont", "user", "continued", timestamp=1015)
    db.append_message("other", "user", "A" * 70, timestamp=1045)
    db.append_message("br", "user", "line1\nline2\r\nline3   ", timestamp=1035)
    return db


def lids(rows):
    return [r["id"] for r in rows]


def test_t68_list_sessions_rich(tree):
    db = tree
    rows = db.list_sessions_rich()
    assert lids(rows) == ["empty", "other", "br", "cont"]
    cont = rows[3]
    assert cont["_lineage_root_id"] == "root"
    assert cont["started_at"] == 1000.0
    assert len(db.list_sessions_rich(include_children=True)) == 6
    assert lids(db.list_sessions_rich(project_compression_tips=False)) == ["empty", "other", "br", "root"]
    assert db.session_count() == 6
    assert db.session_count(exclude_children=True) == 4
    by = {r["id"]: r for r in rows}
    assert by["other"]["preview"] == "A" * 60 + "..."
    assert by["br"]["preview"] == "line1 line2  line3"
    assert by["empty"]["preview"] == ""
    assert by["empty"]["last_active"] == by["empty"]["started_at"]
    assert by["other"]["last_active"] == 1045


def test_session_order_and_list_rows(tree):
    db = tree
    order = db.session_order(SessionFilter.every_session())
    # last activity: other 1045, empty 1050 (started), sub 1020 (started), br 1035, cont 1015, root 1001
    assert order.ids == ["empty", "other", "br", "sub", "cont", "root"]
    assert len(order) == 6
    # The default is Hermes' list: the sub-agent run left out, the chain root → cont as its tip.
    assert db.session_order().ids == ["empty", "other", "br", "cont"]
    rows = db.list_rows(["cont", "root", "missing", "sub"])
    assert lids(rows) == ["cont", "root", "sub"]
    by = {r["id"]: r for r in rows}
    assert by["cont"]["edge_kind"] == "compression"
    assert by["sub"]["edge_kind"] == "delegate"
    assert by["root"]["edge_kind"] is None
    assert by["root"]["child_count"] == 3
    assert by["root"]["preview"] == "root question"
    assert by["cont"]["last_active"] == 1015
    assert db.session_order(SessionFilter(sources=("telegram",))).ids == ["other"]
    assert db.session_order(order="started").ids[0] == "empty"
    assert by["cont"]["lineage_root_id"] == "root" and "lineage_root_id" not in by["root"]


def test_list_rows_preview_only_for_untitled(tree):
    db = tree
    db.set_session_title("root", "Named root")
    by = {r["id"]: r for r in db.list_rows(["root", "other"])}
    assert by["root"]["title"] == "Named root" and by["root"]["preview"] == ""
    assert by["other"]["preview"] == "A" * 60 + "..."


def test_session_order_ties_by_id(db):
    for sid in ("b", "a", "c"):
        db.create_session(sid, "cli")
        set_started(db, sid, 500.0)
    assert db.session_order().ids == ["c", "b", "a"]


def test_last_active_order_follows_short_and_long_sessions(tree):
    """Few messages per session, then one long session, then a late message to an old root: the
    order is the one computed by hand each time, filters included."""
    db = tree
    every = SessionFilter.every_session()
    expected = ["empty", "other", "br", "sub", "cont", "root"]
    assert db.session_order(every).ids == expected
    db.append_messages(
        "sub", [{"role": "user", "content": f"m{i}", "timestamp": 1021.0 + i / 100} for i in range(60)]
    )
    assert db.message_count() > 8 * db.session_count()
    expected = ["empty", "other", "br", "sub", "cont", "root"]  # sub: 1021.59 < br 1035
    assert db.session_order(every).ids == expected
    db.append_message("root", "user", "back to the root", timestamp=2000)
    assert db.session_order(every).ids == ["root", *[i for i in expected if i != "root"]]
    cli_every = SessionFilter.every_session(sources=("cli",))
    assert db.session_order(cli_every).ids == ["root", "empty", "br", "sub", "cont"]
    # Folded, the chain (shown as its tip, cont) takes the freshest activity of its root.
    assert db.session_order().ids == ["cont", "empty", "other", "br"]


def test_list_sessions_page_keyset(db):
    all_ids = [f"s{i:02d}" for i in range(23)]
    for i, sid in enumerate(all_ids):
        db.create_session(sid, "cli")
        set_started(db, sid, 100.0 + (i // 4))  # groups of equal started_at
    seen = []
    after = None
    pages = 0
    while True:
        rows, after = db.list_sessions_page(after=after, limit=5)
        seen += lids(rows)
        pages += 1
        if after is None:
            break
        assert pages < 20
    assert sorted(seen) == sorted(all_ids) and len(seen) == len(set(seen))


def test_distinct_values(tree):
    assert tree.distinct_values("source") == [("cli", 5), ("telegram", 1)]
    with pytest.raises(ValueError):
        tree.distinct_values("system_prompt")


def test_edge_kinds(tree, db):
    db.create_session("x", "cli", parent_session_id="other")
    assert tree.edge_kind("cont") == "compression"
    assert tree.edge_kind("br") == "branch"
    assert tree.edge_kind("sub") == "delegate"
    assert tree.edge_kind("x") == "other"
    assert tree.edge_kind("root") is None


def test_ancestors_descendants_lineage(tree):
    db = tree
    db.create_session("cont2", "cli", parent_session_id="cont")
    db.end_session("cont", "compression")
    assert lids(db.get_ancestors("cont2")) == ["root", "cont", "cont2"]
    assert lids(db.get_ancestors("root")) == ["root"]
    desc = db.get_descendants("root")
    assert {d["id"] for d in desc} == {"cont", "sub", "br", "cont2"}
    depth = {d["id"]: d["depth"] for d in desc}
    assert depth["cont2"] == 2 and depth["cont"] == 1
    assert {d["id"]: d["edge_kind"] for d in desc}["br"] == "branch"
    lin = db.get_lineage("cont")
    assert lin["root"] == "root" and lin["tip"] == "cont2"
    flags = {n["id"]: (n["is_tip"], n["is_self"]) for n in lin["nodes"]}
    assert flags["cont2"] == (True, False)
    assert flags["cont"] == (False, True)
    assert flags["root"] == (False, False)
    assert db.get_compression_tip("root") == "cont2"
    assert db.get_conversation_root("cont2") == "root"


def test_cycle_safety(db, db_path):
    db.create_session("a", "cli")
    db.create_session("b", "cli", parent_session_id="a")
    other = apsw.Connection(str(db_path))
    other.execute("PRAGMA foreign_keys=OFF")
    other.execute("UPDATE sessions SET parent_session_id = 'b' WHERE id = 'a'")
    other.close()
    result = {}

    def run():
        result["anc"] = [r["id"] for r in db.get_ancestors("b")]
        result["desc"] = [r["id"] for r in db.get_descendants("a")]
        result["lin"] = db.get_lineage("a")
        result["tip"] = db.get_compression_tip("a")

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(10)
    assert not t.is_alive(), "lineage query hung on a cycle"
    assert set(result["anc"]) == {"a", "b"}
    assert "b" in result["desc"]
