"""Fixtures of the store's unit tests: a fresh `SessionDB` and the shared lineage fixture (Fixture F)."""

from __future__ import annotations

import json

import pytest

from hermes_tui.state import SessionDB

F_BASE_TS = 1700000000

TOOL_CALLS_F = [
    {
        "id": "call_1",
        "type": "function",
        "function": {"name": "terminal", "arguments": json.dumps({"cmd": "docker ps"})},
    }
]

# (session, role, content, extra kwargs) for message ids 1..12
F_ROWS = [
    ("s1", "user", "How do I fix the docker deployment?", {}),
    ("s1", "assistant", "Use docker compose. The chat-send tool works too.", {"tool_calls": TOOL_CALLS_F}),
    ("s1", "tool", "CONTAINER ID IMAGE kubernetes", {"tool_name": "terminal"}),
    ("s1", "assistant", "Version P2.2 of my-app.config.ts is broken. TODO: fix it", {}),
    ("s2", "user", "日本語のテキストを検索したい", {}),
    ("s2", "assistant", "東京タワーは東京にあります。", {}),
    ("s2", "user", "웅기가말했다 일본 구글", {}),
    ("s2", "assistant", "大别山项目 广西桂林漓江", {}),
    ("s2", "user", "修改youer服务端", {}),
    ("s1", "user", "python is nice but java is not", {}),
    ("s1", "user", "deployment deploys deployed", {}),
    ("s1", "user", "snake_case_name and e.g. user@example.com 100% sure", {}),
]


def open_db(path, **kw) -> SessionDB:
    return SessionDB(db_path=path, **kw)


@pytest.fixture
def xdg_cache(tmp_path, monkeypatch):
    """A private `XDG_CACHE_HOME`: the CJK side index files of a test's stores go there."""
    root = tmp_path / "xdg-cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(root))
    return root


@pytest.fixture
def db_path(tmp_path):
    return tmp_path / "state.db"


@pytest.fixture
def db(db_path):
    d = SessionDB(db_path=db_path)
    yield d
    d.close()


def populate_f(d: SessionDB) -> None:
    d.create_session("s1", "cli", model="m-cli")
    d.create_session("s2", "telegram", model="m-tg")
    for i, (sid, role, content, kw) in enumerate(F_ROWS):
        mid = d.append_message(sid, role, content, timestamp=F_BASE_TS + i, **kw)
        assert mid == i + 1


@pytest.fixture
def fixture_f(db):
    populate_f(db)
    return db


def ids(results) -> list[int]:
    return [r["id"] for r in results]


def count(d: SessionDB, table: str) -> int:
    return d._scalar(f"SELECT COUNT(*) FROM {table}")
