"""Sessions and messages (T60–T67), errors leave the store unchanged."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from conftest import count

from hermes_tui.state import IntegrityError, InvalidArgument, SessionNotFound

TC2 = [
    {"id": "c1", "type": "function", "function": {"name": "terminal", "arguments": "{}"}},
    {"id": "c2", "type": "function", "function": {"name": "read", "arguments": "{}"}},
]


def test_t60_create_session(db):
    assert (
        db.create_session(
            "p", "cli", model="m1", model_config={"temp": 0.5}, system_prompt="SP", user_id="u1", cwd="/w"
        )
        == "p"
    )
    row = db.get_session("p")
    assert row["model_config"] == '{"temp": 0.5}'
    assert row["message_count"] == 0 and row["tool_call_count"] == 0
    assert row["archived"] == 0 and row["rewind_count"] == 0
    assert row["user_id"] == "u1" and row["cwd"] == "/w"
    db.create_session("p", "telegram", model="m2", system_prompt="SP2")
    row = db.get_session("p")
    assert (row["source"], row["model"], row["system_prompt"]) == ("cli", "m1", "SP")
    assert count(db, "sessions") == 1


@pytest.fixture
def p(db):
    db.create_session("p", "cli", model="m1")
    db.append_message("p", "user", "hello")
    db.append_message(
        "p",
        "assistant",
        "calling",
        tool_calls=TC2,
        reasoning="think",
        reasoning_content="rc",
        reasoning_details=[{"type": "summary", "text": "x"}],
        finish_reason="tool_calls",
    )
    db.append_message("p", "tool", "out1", tool_call_id="c1", tool_name="terminal")
    db.append_message("p", "tool", "out2", tool_call_id="c2", tool_name="read")
    db.append_message("p", "assistant", [{"type": "text", "text": "multi"}])
    db.append_message(
        "p",
        "assistant",
        "  padded answer  ",
        platform_message_id="pm1",
        observed=True,
        api_content="API BYTES ",
        finish_reason="stop",
    )
    return db


def test_t61_messages(p):
    db = p
    row = db.get_session("p")
    assert row["message_count"] == 6 and row["tool_call_count"] == 2
    assert [m["id"] for m in db.get_messages("p")] == [1, 2, 3, 4, 5, 6]
    raw = db._scalar("SELECT content FROM messages WHERE id = 5")
    assert raw.startswith("\x00json:")
    assert db.get_messages("p")[4]["content"] == [{"type": "text", "text": "multi"}]
    assert db.get_messages("p")[1]["tool_calls"] == TC2
    assert [m["id"] for m in db.get_messages("p", limit=2, offset=1)] == [2, 3]
    assert [m["id"] for m in db.get_messages("p", offset=4)] == [5, 6]
    assert db.message_count("p") == 6 and db.message_count() == 6


def test_t62_conversation(p):
    conv = p.get_messages_as_conversation("p")
    last = conv[5]
    ts = last.pop("timestamp")
    assert isinstance(ts, float)
    assert last == {
        "role": "assistant",
        "content": "padded answer",
        "api_content": "API BYTES ",
        "message_id": "pm1",
        "observed": True,
        "finish_reason": "stop",
    }
    assert conv[2]["tool_call_id"] == "c1" and conv[2]["tool_name"] == "terminal"
    assert conv[1]["tool_calls"] == TC2
    assert conv[1]["reasoning"] == "think" and conv[1]["reasoning_content"] == "rc"
    assert conv[1]["reasoning_details"] == [{"type": "summary", "text": "x"}]


def test_t63_end_reopen(db):
    db.create_session("p", "cli")
    db.end_session("p", "user_exit")
    ended = db.get_session("p")["ended_at"]
    db.end_session("p", "compression")
    row = db.get_session("p")
    assert row["end_reason"] == "user_exit" and row["ended_at"] == ended
    db.reopen_session("p")
    row = db.get_session("p")
    assert row["ended_at"] is None and row["end_reason"] is None


def test_t64_token_counts(db):
    db.create_session("p", "cli")
    db.update_token_counts(
        "p",
        input_tokens=100,
        output_tokens=50,
        model="m9",
        estimated_cost_usd=0.01,
        billing_provider="openrouter",
        api_call_count=1,
    )
    db.update_token_counts("p", input_tokens=10, output_tokens=5, api_call_count=1)
    row = db.get_session("p")
    assert (row["input_tokens"], row["output_tokens"], row["api_call_count"]) == (110, 55, 2)
    assert row["estimated_cost_usd"] == pytest.approx(0.01)
    assert row["model"] == "m9" and row["billing_provider"] == "openrouter"
    usage = db.get_model_usage("p")
    assert len(usage) == 1
    u = usage[0]
    assert (
        u["session_id"],
        u["model"],
        u["billing_provider"],
        u["task"],
        u["api_call_count"],
        u["input_tokens"],
        u["output_tokens"],
    ) == ("p", "m9", "openrouter", "", 2, 110, 55)
    db.update_token_counts("p", absolute=True, input_tokens=1000, output_tokens=1)
    row = db.get_session("p")
    assert (row["input_tokens"], row["output_tokens"], row["estimated_cost_usd"], row["api_call_count"]) == (
        1000,
        1,
        0.0,
        0,
    )
    db.update_token_counts("ghost", input_tokens=1)
    assert db.get_session("ghost")["source"] == "unknown"


def test_t65_foreign_keys(db):
    db.create_session("s", "cli")
    before = (count(db, "messages"), count(db, "sessions"), db.get_session("s")["message_count"])
    with pytest.raises(IntegrityError) as ei:
        db.append_message("nope", "user", "x")
    assert "FOREIGN KEY" in str(ei.value)
    with pytest.raises(IntegrityError) as ei:
        db.create_session("c", "cli", parent_session_id="ghostparent")
    assert "FOREIGN KEY" in str(ei.value)
    assert (count(db, "messages"), count(db, "sessions"), db.get_session("s")["message_count"]) == before
    assert db.get_session("c") is None


def test_invalid_tool_calls_changes_nothing(db):
    db.create_session("s", "cli")
    with pytest.raises(InvalidArgument):
        db.append_message("s", "assistant", "x", tool_calls=[{"bad": object()}])
    assert count(db, "messages") == 0
    row = db.get_session("s")
    assert row["message_count"] == 0 and row["tool_call_count"] == 0


def test_clear_messages_unknown(db):
    db.create_session("s", "cli")
    db.append_message("s", "user", "x")
    with pytest.raises(SessionNotFound):
        db.clear_messages("nope")
    assert count(db, "messages") == 1 and count(db, "sessions") == 1


def test_t66_round_trips(db):
    db.create_session("s", "cli")
    m = {}
    m["int"] = db.append_message("s", "user", 42)
    m["none"] = db.append_message("s", "user", None)
    m["dict"] = db.append_message("s", "user", {"a": 1})
    m["surr"] = db.append_message("s", "user", "bad \ud800 char")
    m["dt"] = db.append_message("s", "user", "t", timestamp=dt.datetime(2024, 1, 1, tzinfo=dt.UTC))
    m["bogus"] = db.append_message("s", "user", "b", timestamp="bogus")
    by_id = {r["id"]: r for r in db.get_messages("s")}
    assert by_id[m["int"]]["content"] == "42"
    assert by_id[m["none"]]["content"] is None
    assert by_id[m["dict"]]["content"] == {"a": 1}
    assert by_id[m["surr"]]["content"] == "bad \ufffd char"
    assert by_id[m["dt"]]["timestamp"] == 1704067200.0
    # bogus → "now": later than the explicit 2024 stamp, and a real float
    assert isinstance(by_id[m["bogus"]]["timestamp"], float)
    assert by_id[m["bogus"]]["timestamp"] > 1704067200.0


def test_t67_conversation_sanitization(db):
    db.create_session("s", "cli")
    db.append_message("s", "user", "<memory-context>secret</memory-context>  Hello there  ")
    db.append_message("s", "assistant", "Sure <memory-context>x</memory-context>")
    db.append_message("s", "user", "Review the conversation above and update the skill library now")
    db.append_message("s", "assistant", "Updated the skills.")
    db.append_message("s", "user", "last")
    conv = db.get_messages_as_conversation("s")
    assert [(c["role"], c["content"]) for c in conv] == [
        ("user", "Hello there"),
        ("assistant", "Sure"),
        ("user", "last"),
    ]


def test_resolve_session_id(db):
    db.create_session("abc123", "cli")
    db.create_session("abd999", "cli")
    assert db.resolve_session_id("abc123") == "abc123"
    assert db.resolve_session_id("abc") == "abc123"
    assert db.resolve_session_id("ab") is None
    assert db.resolve_session_id("zz") is None


def test_rewind_restore(db):
    db.create_session("s", "cli")
    a = db.append_message("s", "user", "one")
    db.append_message("s", "assistant", "two")
    b = db.append_message("s", "user", "three")
    db.append_message("s", "assistant", "four")
    with pytest.raises(ValueError):
        db.rewind_to_message("s", a + 1)  # not a user row
    out = db.rewind_to_message("s", b)
    assert out["rewound_count"] == 2 and out["new_head_id"] == a + 1
    assert out["target_message"]["content"] == "three"
    assert [m["id"] for m in db.get_messages("s")] == [a, a + 1]
    assert len(db.get_messages("s", include_inactive=True)) == 4
    assert db.get_session("s")["rewind_count"] == 1
    assert db.restore_rewound("s", b) == 2
    assert len(db.get_messages("s")) == 4


def test_archive_and_replace(db):
    db.create_session("s", "cli")
    for i in range(3):
        db.append_message("s", "user", f"m{i}", timestamp=100 + i)
    assert (
        db.archive_and_compact(
            "s",
            [{"role": "user", "content": "sum"}, {"role": "assistant", "content": "ok", "tool_calls": TC2}],
        )
        == 2
    )
    live = db.get_messages("s")
    assert [m["content"] for m in live] == ["sum", "ok"]
    assert live[1]["timestamp"] > live[0]["timestamp"]
    row = db.get_session("s")
    assert row["message_count"] == 2 and row["tool_call_count"] == 2
    assert db.message_count("s") == 5
    db.replace_messages("s", [{"role": "user", "content": "only"}])
    assert [m["content"] for m in db.get_messages("s", include_inactive=True)] == ["only"]
    assert db.get_session("s")["message_count"] == 1


def test_tool_calls_stored_as_json_dumps(fixture_f):
    raw = fixture_f._scalar("SELECT tool_calls FROM messages WHERE id = 2")
    assert raw.startswith('[{"id": "call_1", "type": "function"')
    assert json.loads(raw)[0]["function"]["name"] == "terminal"
    assert fixture_f.get_session("s1")["tool_call_count"] == 1


def test_the_store_clock_stamps_what_it_writes_without_a_time(db) -> None:
    """`SessionDB.clock` is the time of every stamp the store writes by itself (a demo or a test
    writing a history sets it): a session's start and end, a message without a timestamp, a
    usage row's first and last call, a fork's start."""
    now = [1_700_000_000.0]
    db.clock = lambda: now[0]
    db.create_session("s", "cli")
    mid = db.append_message("s", "user", content="hello")
    now[0] += 60
    db.update_token_counts("s", input_tokens=10, output_tokens=2, model="m")
    now[0] += 60
    db.update_token_counts("s", input_tokens=5, output_tokens=1, model="m")
    now[0] += 60
    db.end_session("s", "user_exit")
    now[0] += 60
    fork = db.fork_session("s", mid)
    session = db.get_session("s")
    assert session is not None
    assert session["started_at"] == 1_700_000_000.0 and session["ended_at"] == 1_700_000_180.0
    assert [m["timestamp"] for m in db.get_messages("s")] == [1_700_000_000.0]
    seen = db._conn().execute("SELECT first_seen, last_seen FROM session_model_usage").fetchall()
    assert seen == [(1_700_000_060.0, 1_700_000_120.0)]
    forked = db.get_session(fork)
    assert forked is not None and forked["started_at"] == 1_700_000_240.0
