"""`hermes_tui.exporting`: formats and safe writing (no database, no Textual)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys

import pytest

from hermes_tui.exporting import TOOL_RESULT_LIMIT, json_text, to_json, to_jsonl, to_markdown, write_export

SESSION = {
    "id": "s1",
    "title": 'He said "hi"',
    "source": "cli",
    "model": "m",
    "input_tokens": 10,
    "output_tokens": 5,
    "estimated_cost_usd": 0.5,
    "actual_cost_usd": None,
    "started_at": 1700000000,
    "ended_at": 1700000100,
    "parent_session_id": "p0",
    "messages": [
        {
            "id": 1,
            "session_id": "s1",
            "role": "user",
            "timestamp": 1700000001,
            "active": 1,
            "content": [
                {"type": "text", "text": "look at this"},
                {"type": "image_url", "image_url": {"url": "u"}},
            ],
        },
        {
            "id": 2,
            "session_id": "s1",
            "role": "assistant",
            "timestamp": 1700000002,
            "active": 1,
            "content": "ok ```not a fence```",
            "reasoning": "think </details> hard",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "terminal", "arguments": '{"cmd": "ls"}'},
                }
            ],
        },
        {
            "id": 3,
            "session_id": "s1",
            "role": "tool",
            "tool_name": "terminal",
            "timestamp": 1700000003,
            "active": 1,
            "content": "```" + "x" * (TOOL_RESULT_LIMIT + 500),
        },
    ],
}


def test_markdown_front_matter_and_sections():
    md = to_markdown(SESSION)
    head, _, body = md.partition("\n---\n")
    assert head.splitlines()[:3] == ["---", 'id: "s1"', 'title: "He said \\"hi\\""']
    assert 'started: "2023-11-14T22:13:20Z"' in head and 'parent: "p0"' in head
    assert "input_tokens: 10" in head and "cost_usd: 0.5" in head and 'lineage:\n  - "s1"' in head
    assert "## 1. user — 2023-11-14T22:13:21Z" in body
    assert "look at this" in body and "[image_url]" in body
    assert "<details>" in body and "&lt;/details&gt;" in body and "think </details>" not in body
    assert '```json\n{\n  "id": "c1"' in body and '"cmd": "ls"' in body


def test_markdown_tool_result_truncated_and_fenced_safely():
    md = to_markdown(SESSION)
    assert "tool result truncated: showing 20,000 of 20,503 characters" in md
    assert "x" * (TOOL_RESULT_LIMIT + 1) not in md
    # the result holds a ``` run, so its fence is longer
    assert "\n````\n```" in md


def test_json_and_jsonl():
    assert json.loads(to_json([SESSION]))[0]["id"] == "s1"
    lines = list(to_jsonl([SESSION, {**SESSION, "id": "s2"}]))
    assert [json.loads(x)["id"] for x in lines] == ["s1", "s2"] and all(x.endswith("\n") for x in lines)


def test_write_export_refuses_overwrite(tmp_path):
    target = tmp_path / "x.jsonl"
    write_export(target, to_jsonl([SESSION]))
    with pytest.raises(FileExistsError, match="refusing to overwrite"):
        write_export(target, "new")
    assert json.loads(target.read_text())["id"] == "s1"
    write_export(target, "new", force=True)
    assert target.read_text() == "new"
    assert [p.name for p in tmp_path.iterdir()] == ["x.jsonl"]


def test_no_textual_import():
    code = "import sys, hermes_tui.exporting; print('textual' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_json_text_escapes_what_terminals_obey_and_round_trips():
    value = {"t": "a\x1b]52;c;x\x07 \x9b2J \u202e 修改 \u2028 \ud800", "b": b"\xff\x1b"}
    text = json_text(value)
    assert text.isprintable() and "修改" in text  # readable CJK, no raw control or bidi character
    for raw in ("\x1b", "\x9b", "\u202e", "\u2028", "\ud800"):
        assert raw not in text
    back = json.loads(text)
    assert back["t"] == value["t"] and back["b"].startswith("[binary: 2 bytes]")


def test_markdown_is_inert_and_code_spans_hold_backticks():
    md = to_markdown(
        {
            "id": "x\x1b[2J",
            "title": "T\x1b]0;pwn\x07",
            "messages": [
                {"role": "tool", "tool_name": "a`b\x9b", "content": "out\x1b[31m\r\nnext", "timestamp": 1},
                {"role": "assistant", "content": "hi \u202e", "reasoning": "r\x1b", "timestamp": "bad\x9b"},
            ],
        }
    )
    assert not any(c in md for c in ("\x1b", "\x9b", "\u202e", "\x07", "\r"))
    assert "# T␛]0;pwn␇" in md and "``a`b⟨U+009B⟩``" in md and "out␛[31m\nnext" in md


def test_write_export_is_private_even_with_a_lax_umask(tmp_path):
    old = os.umask(0o002)
    try:
        target = write_export(tmp_path / "new" / "deeper" / "x.jsonl", "{}\n")
    finally:
        os.umask(old)
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert stat.S_IMODE(target.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(target.parent.parent.stat().st_mode) == 0o700
