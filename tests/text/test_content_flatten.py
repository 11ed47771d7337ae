"""One flattening of message content: the transcript, the Markdown and JSON exports, the
CLI and search snippets all show a message through `hermes_tui.state.content_text`, so a multimodal,
list, dict or bytes message reads the same everywhere."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hermes_tui import exporting
from hermes_tui.app import render
from hermes_tui.safe_text import inert
from hermes_tui.state import SessionDB, content_text

# (word to search for, stored content, the one flattened text)
CASES: list[tuple[str, Any, str]] = [
    (
        "zebra",
        [{"type": "text", "text": "hi zebra"}, {"type": "image_url", "image_url": {"url": "http://x/y.png"}}],
        "hi zebra\n[image_url]",
    ),
    (
        "walrus",
        ["walrus one", {"type": "input_text", "text": "two"}, {"type": "input_audio"}],
        "walrus one\ntwo\n[input_audio]",
    ),
    ("okapi", {"type": "text", "text": "okapi in a dict"}, "okapi in a dict"),
    ("narwhal", {"kind": "narwhal", "n": 2}, '{\n  "kind": "narwhal",\n  "n": 2\n}'),
    ("lemur", b"lemur bytes \xe2\x9c\x93", "lemur bytes \u2713"),
]


def test_the_chosen_rendering() -> None:
    assert content_text([{"type": "text", "text": "hi"}, {"type": "image_url"}]) == "hi\n[image_url]"
    assert content_text("\x00json:" + json.dumps([{"type": "text", "text": "hi"}])) == "hi"
    assert content_text([{"type": "text"}, {"no": "type"}, 5]) == "[part]\n5"
    assert content_text(None) == "" and content_text(42) == "42"
    assert content_text(b"\xff") == "[binary: 1 bytes] \ufffd"


def test_every_caller_uses_the_one_flattening() -> None:
    assert exporting.content_text is content_text
    hostile = [{"type": "text", "text": "a\x1b[2Jb"}, {"type": "image\x1b]52;c;x\x07"}]
    assert render.content_text(hostile) == inert(content_text(hostile))


@pytest.fixture
def store(tmp_path: Path) -> SessionDB:
    db = SessionDB(tmp_path / "state.db")
    db.create_session("s1", "cli")
    for _word, content, _text in CASES:
        db.append_message("s1", "user", content)
    yield db
    db.close()


@pytest.mark.parametrize("i", range(len(CASES)), ids=[c[0] for c in CASES])
def test_same_text_in_transcript_exports_and_search(store: SessionDB, i: int) -> None:
    word, _content, expected = CASES[i]
    msg = store.get_messages("s1")[i]
    assert content_text(msg["content"]) == expected
    # transcript
    assert render.content_text(msg["content"]) == expected
    # Markdown export: the message body is the flattened text
    exported = store.export_session("s1")
    md = exporting.to_markdown(exported)
    assert f"\n\n{expected}\n\n" in md + "\n"
    # JSON export keeps the structure, which flattens to the same text
    js = json.loads(exporting.to_json([exported]))
    assert content_text(js[0]["messages"][i]["content"]) == expected
    # search snippet: FTS5 cuts the stored JSON, the snippet is cut from the flattened text
    outcome = store.search(word)
    hits = [h for h in outcome.results if h["id"] == msg["id"]]
    assert hits, (word, outcome.route, outcome.results)
    snippet = hits[0]["snippet"]
    assert ">>>" in snippet, (outcome.route, snippet)
    assert snippet.replace(">>>", "").replace("<<<", "") == expected, outcome.route


def test_search_context_keeps_upstream_form(store: SessionDB) -> None:
    """Search results' `context` is hermes-agent 0.19.0's API value, not display text."""
    hit = store.search("zebra").results[0]
    assert [c["content"] for c in hit["context"]] == ["hi zebra", "[multimodal content]"]


@pytest.mark.parametrize(
    ("call", "name", "arg"),
    [
        (
            {"type": "function", "function": {"name": "terminal", "arguments": '{"cmd": "ls"}'}},
            "terminal",
            "ls",
        ),
        ({"name": "web_fetch", "input": {"url": "http://x"}}, "web_fetch", "http://x"),
        ({"name": "flat", "arguments": {"q": "zz"}}, "flat", "zz"),
    ],
)
def test_tool_calls_read_the_same_everywhere(call: dict[str, Any], name: str, arg: str) -> None:
    """One reading of a tool call's name and arguments (`tool_call_fields`): the transcript, the
    Markdown export, `sessions show` and `sessions tail` name it and show its arguments alike."""
    from hermes_tui.cli import follow, listing
    from hermes_tui.state import tool_call_fields

    assert tool_call_fields(call)[0] == name
    shown, args = render.tool_call_parts(call)
    assert shown == name and arg in args
    assert exporting._tool_call_block(call).startswith(f"**Tool call** `{name}`")
    msg = {"id": 1, "role": "assistant", "content": "", "tool_calls": [call], "timestamp": 0}
    for lines in (listing.message_lines(msg), follow._message_lines(msg)):
        line = next(ln for ln in lines if "tool call" in ln)
        assert f"tool call {name}(" in line and arg in line, line
