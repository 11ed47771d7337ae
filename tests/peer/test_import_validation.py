"""`import_sessions` validates like hermes-agent 0.19.0: the same per-item errors, in the same
order, and nothing written when any item fails (differential, on the same payloads)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hermes_tui.state import SessionDB
from hermes_tui.state import importing as imp

pytestmark = pytest.mark.peer


def _msg(**kw: Any) -> dict[str, Any]:
    return {"role": "user", "content": "hi", **kw}


def _payloads() -> list[list[Any]]:
    ok = {"id": "ok", "source": "cli", "messages": [_msg()]}
    return [
        [ok, "not an object"],
        [ok, {"id": ""}, {"source": "cli"}],
        [ok, dict(ok)],  # duplicate id
        [{"id": "m", "messages": "nope"}],
        [{"id": "m", "messages": [_msg(), 5]}],
        [{"id": "j", "model_config": "{bad", "messages": []}],
        [{"id": "j", "model_config": "[1, 2]", "messages": []}],
        [{"id": "j", "model_config": 7, "messages": []}],
        [{"id": "u", "user_id": 42, "messages": []}],
        [{"id": "t", "title": ["x"], "messages": []}],
        [{"id": "p", "parent_session_id": 3, "messages": []}],
        [{"id": "r", "messages": [_msg(), {"content": "no role"}]}],
        [{"id": "r", "messages": [_msg(role="")]}],
        [{"id": "r", "messages": [_msg(role=None)]}],
        [{"id": "n", "messages": [_msg(tool_name=5)]}],
        [{"id": "k", "messages": [_msg(token_count="many")]}],
        [{"id": "big", "messages": [_msg(content="x" * (imp.IMPORT_MAX_SESSION_BYTES + 10))]}],
        [{"id": "long", "messages": [_msg()] * (imp.IMPORT_MAX_MESSAGES_PER_SESSION + 1)}],
        [{"id": f"s{i}", "messages": [_msg()] * 9_000} for i in range(6)],  # 54k messages in all
        [{"id": "nj", "extra": {1, 2}, "messages": []}],  # not JSON serialisable
        [ok, {"id": "fine", "model_config": {"a": 1}, "messages": [_msg(token_count="12")]}],  # valid
    ]


def test_errors_equal_upstream_and_nothing_is_written(peer_factory, tmp_path: Path) -> None:
    peer = peer_factory(tmp_path / "peer.db")
    ours = SessionDB(tmp_path / "ours.db")
    try:
        for payload in _payloads():
            try:
                expected = peer.call("import_sessions", payload)
            except Exception as exc:  # the peer cannot even receive a non-JSON payload
                if "not JSON serializable" not in str(exc) and "Object of type" not in str(exc):
                    raise
                expected = None
            got = ours.import_sessions(payload)
            if expected is not None:
                assert got["ok"] == expected["ok"], (payload[:1], got, expected)
                assert got["errors"] == expected["errors"], (got["errors"], expected["errors"])
            else:
                assert got["ok"] is False
                assert got["errors"] == [
                    {"index": 0, "session_id": "nj", "error": "session must be JSON serializable"}
                ]
            if not got["ok"]:
                assert got["imported"] == 0
        sessions = {s["id"] for s in ours.list_sessions_rich(limit=100)}
        assert sessions == {"ok", "fine"}
        assert ours.get_session("fine")["model_config"] == '{"a": 1}'
    finally:
        ours.close()


def test_limits_are_upstreams() -> None:
    assert (imp.IMPORT_MAX_SESSIONS, imp.IMPORT_MAX_MESSAGES_PER_SESSION, imp.IMPORT_MAX_TOTAL_MESSAGES) == (
        500,
        10_000,
        50_000,
    )
    assert (imp.IMPORT_MAX_SESSION_BYTES, imp.IMPORT_MAX_TOTAL_BYTES) == (5 * 1024 * 1024, 25 * 1024 * 1024)
