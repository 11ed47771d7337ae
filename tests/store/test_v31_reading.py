"""Reading a file of today's Hermes (schema v24–v31) by its rules, on a store we shape as the v31
writer leaves it (its columns and `system_prompts` table, `schema_version` 31), next to the same
rows in our own v23 file (0.19.0's rules): the freshest-activity rule, reset children as their
own edge kind, unread, the folded list with its pinned-first order, live and federated.

The differential tests against the v31 writer itself are in tests/peer/test_v31_*.py.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from hermes_tui.app.live_order import IncrementalOrder
from hermes_tui.state import Changes, Federation, SessionDB, SessionFilter, StoreRef, order_sort_key
from hermes_tui.state.list_order import ORDERS

T = 1_700_000_000.0
EPOCH_MAX = 4_200_000_000.0  # v31's recency window (hermes_cli.timefmt.EPOCH_MAX)
V31_COLUMNS = (
    "last_activity_at REAL",
    "last_activity_description TEXT",
    "hidden INTEGER NOT NULL DEFAULT 0",
    "last_read_at REAL",
    "system_prompt_hash TEXT",
    "tool_names TEXT",
)


def make_v31(path: Path) -> None:
    """Our v23 store reshaped as a v31 file: the v31 writer's extra session columns, its
    `system_prompts` table and its schema version."""
    with SessionDB(path) as db:
        conn = db._conn()
        for col in V31_COLUMNS:
            conn.execute(f"ALTER TABLE sessions ADD COLUMN {col}")
        conn.execute("CREATE TABLE system_prompts (hash TEXT PRIMARY KEY, prompt TEXT NOT NULL)")
        conn.execute("UPDATE schema_version SET version = 31")


def sql(path: Path, statement: str, params: Any = ()) -> None:
    with SessionDB(path, migrate=False) as db:
        db._execute_write(lambda c: c.execute(statement, params))


@pytest.fixture
def v31(tmp_path: Path) -> Path:
    path = tmp_path / "v31.db"
    make_v31(path)
    return path


def add(db: SessionDB, sid: str, started: float, *messages: float, **kw: Any) -> None:
    db.create_session(sid, kw.pop("source", "cli"), **kw)
    db._execute_write(lambda c: c.execute("UPDATE sessions SET started_at = ? WHERE id = ?", (started, sid)))
    for ts in messages:
        db.append_message(sid, "user", f"at {ts}", timestamp=ts)


def activity(path: Path, sid: str, at: Any, description: str | None = None) -> None:
    sql(
        path,
        "UPDATE sessions SET last_activity_at = ?, last_activity_description = ? WHERE id = ?",
        (at, description, sid),
    )


# ---------------------------------------------------------------------- the freshest rule
@pytest.mark.parametrize(
    ("activity_at", "messages", "expected"),
    [
        (T + 500, (T + 100,), T + 500),  # a heartbeat newer than the last message
        (T + 50, (T + 100,), T + 100),  # older: the message
        (None, (T + 100,), T + 100),  # none: the message
        (5.0e9, (T + 100,), T + 100),  # out of the epoch window: ignored
        (-1.0, (T + 100,), T + 100),  # below it too
        ("soon", (T + 100,), T + 100),  # not a number
        (T + 500, (), T + 500),  # no message: the heartbeat
        (None, (), T),  # nothing: the start
        (None, (5.0e9,), T),  # a message out of the window counts for nothing
    ],
)
def test_last_active_is_the_freshest_of_activity_and_messages(
    v31: Path, activity_at: Any, messages: tuple[float, ...], expected: float
) -> None:
    with SessionDB(v31, migrate=False) as db:
        add(db, "s", T, *messages)
        add(db, "other", T - 10, T + 200)
    activity(v31, "s", activity_at, "compiling")
    with SessionDB(v31, read_only=True, migrate=False) as db:
        (row,) = db.list_rows(["s"])
        assert row["last_active"] == expected
        got = db.session_order(SessionFilter.every_session(), with_keys=True)
        assert dict(zip(got.ids, got.keys or [], strict=True))["s"] == expected
        assert db.order_keys(["s"], SessionFilter()) == {"s": expected}
        rich = {r["id"]: r for r in db.list_sessions_rich(order_by_last_active=True)}
        assert rich["s"]["last_active"] == expected
        assert got.ids == (["s", "other"] if expected > T + 200 else ["other", "s"])


def test_without_the_column_the_newest_message_decides(tmp_path: Path) -> None:
    """0.19.0's files (and ours): no `last_activity_at`; a message up to year 3000 counts."""
    with SessionDB(tmp_path / "v23.db") as db:
        add(db, "s", T, T + 100, 5.0e9)
        assert db.list_rows(["s"])[0]["last_active"] == 5.0e9 > EPOCH_MAX


def test_activity_description_is_in_the_rows(v31: Path) -> None:
    with SessionDB(v31, migrate=False) as db:
        add(db, "busy", T, T + 1)
        add(db, "idle", T, T + 1)
    activity(v31, "busy", T + 9, "running tool: terminal")
    with SessionDB(v31, read_only=True, migrate=False) as db:
        rows = {r["id"]: r for r in db.list_rows(["busy", "idle"])}
    assert rows["busy"]["last_activity_description"] == "running tool: terminal"
    assert rows["idle"]["last_activity_description"] is None


# ---------------------------------------------------------------------- unread
@pytest.mark.parametrize(
    ("last_read", "unread"),
    [(None, False), (0.0, True), (T + 50, True), (T + 100, False), (T + 500, False)],
)
def test_unread_is_activity_after_the_read_watermark(v31: Path, last_read: Any, unread: bool) -> None:
    with SessionDB(v31, migrate=False) as db:
        add(db, "s", T, T + 100)
    sql(v31, "UPDATE sessions SET last_read_at = ? WHERE id = ?", (last_read, "s"))
    with SessionDB(v31, read_only=True, migrate=False) as db:
        assert db.list_rows(["s"])[0]["unread"] is unread
        assert db.list_sessions_rich()[0]["unread"] is unread


# ---------------------------------------------------------------------- reset children
def _family(db: SessionDB) -> None:
    """A parent reset on its chat, a marked reset child, a legacy one (same session_key after a
    reset end reason), a sub-agent on another key, and a compression-ended parent with both a
    reset fork and its real continuation."""
    add(db, "p", T, T + 1, source="telegram", session_key="chat:1")
    db.end_session("p", "session_reset")
    add(
        db,
        "marked",
        T + 10,
        T + 11,
        source="telegram",
        parent_session_id="p",
        model_config={"_reset_from": "p"},
    )
    add(db, "legacy", T + 20, T + 21, source="telegram", session_key="chat:1", parent_session_id="p")
    add(db, "other-key", T + 30, T + 31, source="telegram", session_key="chat:2", parent_session_id="p")
    add(db, "c", T + 40, T + 41, session_key="chat:3")
    db.end_session("c", "compression")
    add(db, "c-reset", T + 50, T + 90, parent_session_id="c", model_config={"_reset_from": "c"})
    add(db, "c-next", T + 45, T + 60, parent_session_id="c")


def test_reset_children_are_their_own_edge_kind(v31: Path) -> None:
    with SessionDB(v31, migrate=False) as db:
        _family(db)
    with SessionDB(v31, read_only=True, migrate=False) as db:
        kinds = {sid: db.edge_kind(sid) for sid in ("marked", "legacy", "other-key", "c-reset", "c-next")}
        assert kinds == {
            "marked": "reset",
            "legacy": "reset",
            "other-key": "other",
            "c-reset": "reset",
            "c-next": "compression",
        }
        nodes = {n["id"]: n["edge_kind"] for n in db.get_lineage("legacy")["nodes"]}
        assert nodes == {"p": None, "marked": "reset", "legacy": "reset", "other-key": "other"}
        assert {r["id"]: r["edge_kind"] for r in db.list_rows(["marked", "c-reset"])} == {
            "marked": "reset",
            "c-reset": "reset",
        }
        # Listed like branches; never followed as the continuation (v31's chain step).
        assert db.get_compression_tip("c") == "c-next"
        listed = db.session_order(SessionFilter(), order="started").ids
        assert listed == ["c-reset", "c-next", "legacy", "marked", "p"]


def test_a_v23_file_knows_no_reset_children(tmp_path: Path) -> None:
    """0.19.0's rules on its own files: a reset child is an untagged child (a sub-agent run)."""
    with SessionDB(tmp_path / "v23.db") as db:
        _family(db)
        assert db.edge_kind("marked") == db.edge_kind("legacy") == "other"
        assert db.edge_kind("c-reset") == db.edge_kind("c-next") == "compression"
        listed = db.session_order(SessionFilter(), order="started").ids
        assert "marked" not in listed and "legacy" not in listed


def test_live_changes_report_the_reset_kind(v31: Path) -> None:
    with SessionDB(v31, migrate=False) as writer, SessionDB(v31, read_only=True, migrate=False) as reader:
        add(writer, "p", T, T + 1, source="telegram", session_key="chat:1")
        cur = reader.change_cursor(care_about=["p"])
        writer.end_session("p", "session_reset")
        writer.create_session(
            "kid", "telegram", parent_session_id="p", session_key="chat:1", model_config={"_reset_from": "p"}
        )
        ch, _cur = reader.changes_since(cur, ["p"])
    assert {c["id"]: c["edge_kind"] for c in ch.children} == {"kid": "reset"}
    assert {r["id"]: r["edge_kind"] for r in ch.new_sessions} == {"kid": "reset"}


# ---------------------------------------------------------------------- the folded list
def _chain(db: SessionDB) -> None:
    add(db, "root", T, T + 1)
    db.end_session("root", "compression")
    add(db, "mid", T + 2, T + 3, parent_session_id="root")
    db.end_session("mid", "compression")
    add(db, "tip", T + 4, T + 5, parent_session_id="mid")
    add(db, "plain", T + 3, T + 4)


def test_a_chain_is_listed_once_as_its_tip_and_keyed_as_the_chain(v31: Path) -> None:
    with SessionDB(v31, migrate=False) as db:
        _chain(db)
        db.append_message("tip", "user", "latest", timestamp=T + 50)
        got = db.session_order(SessionFilter(), with_keys=True)
        assert got.ids == ["tip", "plain"] and got.keys == [T + 50, T + 4]
        assert db.session_order(SessionFilter(), order="started").ids == ["plain", "tip"]  # root's start
        # Live: a new message in the tip re-keys the listed tip as the chain.
        assert db.order_keys(["tip", "mid", "root", "plain"], SessionFilter()) == {
            "tip": T + 50,
            "plain": T + 4,
        }
        db.append_message("root", "user", "late in the root", timestamp=T + 80)
        assert db.order_keys(["tip"], SessionFilter()) == {"tip": T + 80}
        row = db.list_rows(["tip"])[0]
        assert row["lineage_root_id"] == "root" and row["edge_kind"] == "compression"
        # The text filter finds the chain by any of its sessions' ids or titles.
        db.set_session_title("root", "first part")
        assert db.session_order(SessionFilter(text="first part")).ids == ["tip"]
        assert db.session_order(SessionFilter(text="mid")).ids == ["tip"]


def test_a_forked_chain_is_folded_by_the_writers_ranking(v31: Path) -> None:
    """Two continuations of one parent (a stale sibling): the open one is the tip (SQL cannot
    settle it; `compression_tips` ranks as the writers do), placed by the chain's key."""
    with SessionDB(v31, migrate=False) as db:
        _chain(db)
        add(db, "stale", T + 6, T + 200, parent_session_id="mid")
        db.end_session("stale", "ws_orphan_reap")
        got = db.session_order(SessionFilter(), with_keys=True)
        assert got.ids == ["tip", "plain"] and got.keys == [T + 200, T + 4]
        assert db.session_order(SessionFilter(), order="messages").ids[0] in ("tip", "plain")
        assert db.get_compression_tip("root") == "tip"


def test_pinned_first_keeps_each_part_in_order_and_live_keys_agree(v31: Path) -> None:
    with SessionDB(v31, migrate=False) as db:
        for i in range(6):
            add(db, f"s{i}", T + i, T + 10 * i)
        db._execute_write(lambda c: c.execute("UPDATE sessions SET pinned = 1 WHERE id IN ('s1', 's3')"))
        flt = SessionFilter(pinned_first=True)
        got = db.session_order(flt, with_keys=True)
        assert got.ids == ["s3", "s1", "s5", "s4", "s2", "s0"] and got.pinned == 2
        assert db.order_keys(["s1", "s4"], flt) == {"s1": (1, T + 10), "s4": (0, T + 40)}
        assert db.session_order_head(flt) is None  # no walk finds the pinned ones first
        live = IncrementalOrder(clock=time.monotonic)
        assert live.base(db, flt, "last_active") == got.ids
        db.append_message("s0", "user", "now the newest", timestamp=T + 999)
        db.append_message("s1", "user", "and this pinned one", timestamp=T + 998)
        live.note(Changes(messages={"s0": [1], "s1": [2]}))
        assert live.base(db, flt, "last_active") == ["s1", "s3", "s0", "s5", "s4", "s2"]
        assert live.full_reads == 1  # moved incrementally


def test_order_sort_key_places_each_session_where_session_order_lists_it(v31: Path) -> None:
    """The store's one rule for a live list (`order_sort_key` of `order_keys`): descending in it
    is `session_order`, with and without pinned first, NULL keys and ties by id included."""
    with SessionDB(v31, migrate=False) as db:
        for i in range(6):
            add(db, f"s{i}", T + i, T + 10 * (i % 3))  # ties: s0/s3, s1/s4, s2/s5
        add(db, "quiet", T + 7)
        db._execute_write(lambda c: c.execute("UPDATE sessions SET pinned = 1 WHERE id IN ('s1', 's3')"))
        for flt in (SessionFilter(), SessionFilter(pinned_first=True)):
            for order in ORDERS:
                listed = db.session_order(flt, order=order).ids
                keys = db.order_keys(listed, flt, order)
                assert sorted(listed, key=lambda s: order_sort_key(s, keys[s]), reverse=True) == listed


def test_federated_pinned_first_merges_each_part(tmp_path: Path) -> None:
    paths = {}
    for name, offset in (("a", 0), ("b", 5)):
        paths[name] = tmp_path / f"{name}.db"
        with SessionDB(paths[name]) as db:
            for i in range(4):
                add(db, f"{name}{i}", T + i, T + offset + 10 * i)
            db._execute_write(
                lambda c, n=name: c.execute(f"UPDATE sessions SET pinned = 1 WHERE id = '{n}0'")
            )
    refs = [StoreRef(name, path) for name, path in paths.items()]
    with Federation(refs, read_only=True) as fed:
        merged = fed.session_order(SessionFilter(pinned_first=True))
        expected = [
            ("b", "b0"),
            ("a", "a0"),
            ("b", "b3"),
            ("a", "a3"),
            ("b", "b2"),
            ("a", "a2"),
            ("b", "b1"),
            ("a", "a1"),
        ]
        assert merged.all_pairs() == expected
        again = fed.session_order(SessionFilter(pinned_first=True))
        assert again.pairs(3, 3) == expected[3:6]  # found by binary search, not read forward
        assert again.index_of("a", "a3") == 3


# ---------------------------------------------------------------------- system prompts
def test_get_session_resolves_the_prompt_by_hash(v31: Path) -> None:
    with SessionDB(v31, migrate=False) as db:
        add(db, "hashed", T)
        add(db, "inline", T, system_prompt="the inline prompt")
        add(db, "both", T, system_prompt="stale inline")
        add(db, "dangling", T)
    sql(v31, "INSERT INTO system_prompts VALUES ('h1', 'the shared prompt'), ('t1', '[\"terminal\"]')")
    sql(
        v31, "UPDATE sessions SET system_prompt_hash = 'h1', tool_names = 't1' WHERE id IN ('hashed', 'both')"
    )
    sql(v31, "UPDATE sessions SET system_prompt_hash = 'gone' WHERE id = 'dangling'")
    with SessionDB(v31, read_only=True, migrate=False) as db:
        got = {sid: db.get_session(sid) for sid in ("hashed", "inline", "both", "dangling")}
        assert {sid: s["system_prompt"] for sid, s in got.items()} == {
            "hashed": "the shared prompt",
            "inline": "the inline prompt",
            "both": "the shared prompt",
            "dangling": None,
        }
        assert json.loads(got["hashed"]["tool_names"]) == ["terminal"]
        assert db.export_session("hashed")["system_prompt"] == "the shared prompt"
        rich = {r["id"]: r for r in db.list_sessions_rich()}
        assert rich["hashed"]["system_prompt"] == "the shared prompt"
        assert "system_prompt" not in db.list_sessions_rich(compact_rows=True)[0]
