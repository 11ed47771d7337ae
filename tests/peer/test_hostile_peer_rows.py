"""Hostile values written by hermes-agent 0.19.0's own API, then read by ours.

0.19.0's `append_message` stores bytes content as a BLOB as it is and takes any float as a
timestamp (1e300, negative); its `create_session` takes any model name. Files like that exist
in the wild, so every read method the browser and the CLI call must return on them: text as
str (decoded, a `[binary: N bytes]` marker when not UTF-8), unusable dates as None.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hermes_tui.state import SessionDB, SessionFilter
from hermes_tui.state.listing import ORDERS

pytestmark = pytest.mark.peer


def test_peer_written_hostile_rows_read_back(peer_factory, tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    peer = peer_factory(path)
    peer.call("create_session", "bytes", "cli", model="m\x1b[2J")
    peer.call(
        "append_message", "bytes", "user", "caf\u00e9 \u65e5\u672c\n".encode() * 30, timestamp=1700000000
    )
    peer.call("append_message", "bytes", "assistant", b"\xff\xfe\x00 not utf-8", timestamp=1700000001)
    peer.call("create_session", "future", "cli")
    peer.call("append_message", "future", "user", b"\xffA", timestamp=1e300)
    peer.call("create_session", "past", "telegram", parent_session_id="future")
    peer.call("append_message", "past", "user", "before 1970", timestamp=-5.0)
    peer.call("update_token_counts", "past", input_tokens=2**62, output_tokens=2**62, model="m")
    peer.call("update_token_counts", "future", input_tokens=2**62, output_tokens=2**62, model="m")
    peer.call("close")

    every = SessionFilter.every_session()
    with SessionDB(db_path=path, migrate=False) as db:
        for order in ORDERS:
            assert sorted(db.session_order(every, order=order).ids) == ["bytes", "future", "past"]
            # Hermes' list: "past" (an untagged child: a sub-agent run) is folded away.
            assert sorted(db.session_order(SessionFilter(), order=order).ids) == ["bytes", "future"]
        # The session whose only message is dated 1e300 does not sit on top for ever: it counts
        # from its start (now), after "past" (started later), before "bytes" (active in 2023).
        assert db.session_order(every).ids == ["past", "future", "bytes"]
        rows = {r["id"]: r for r in db.list_rows(db.session_order(every).ids)}
        assert rows["bytes"]["preview"].startswith("caf\u00e9 \u65e5\u672c caf\u00e9")
        assert rows["future"]["preview"].startswith("[binary: 2 bytes]")
        assert rows["future"]["last_active"] == rows["future"]["started_at"]
        assert rows["past"]["last_active"] == rows["past"]["started_at"]
        assert all(isinstance(r["preview"], str) for r in db.list_sessions_rich(include_children=True))

        msgs = db.get_messages("bytes")
        assert msgs[0]["content"].startswith("caf\u00e9")
        assert msgs[1]["content"].startswith("[binary: 13 bytes]")
        assert [m["timestamp"] for m in db.get_messages("future")] == [None]
        assert [m["timestamp"] for m in db.get_messages("past")] == [None]
        for sid in ("bytes", "future", "past"):
            json.dumps(db.export_session(sid))
            db.get_messages_as_conversation(sid, include_ancestors=True)
        assert [n["id"] for n in db.get_lineage("past")["nodes"]] == ["future", "past"]

        assert db.usage_by_model()[0]["total_input"] == 2**63 - 1  # clamped, not "integer overflow"
        assert db.totals()["sessions"] == 3
        days = db.activity_by_day()
        assert sum(d["messages"] for d in days) == 2  # the 1e300 and the negative date are unknown
        db.sessions_by_source()
        db.costliest_sessions()
        db.costliest_chains()
        db.top_sessions()
