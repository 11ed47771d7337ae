"""Pure helpers: snippets, relative time, truncation, JSON, labels."""

from __future__ import annotations

from rich.text import Text

from hermes_tui.app import render as R


def test_snippet_markers_become_spans_never_raw() -> None:
    text = R.snippet_text("a >>>foo<<< b >>>bar<<< [/INST] [bold]x")
    assert text.plain == "a foo b bar [/INST] [bold]x"
    spans = [(text.plain[s.start : s.end], s.style) for s in text.spans]
    assert spans == [("foo", R.HIGHLIGHT_STYLE), ("bar", R.HIGHLIGHT_STYLE)]


def test_snippet_unbalanced_and_stray_markers() -> None:
    assert R.snippet_text("x >>>open").plain == "x open"
    assert R.snippet_text("close<<< y").plain == "close y"
    assert R.snippet_text(None).plain == ""
    assert R.snippet_text("line1\nline2").plain == "line1 line2"


def test_snippet_terms_and_query_terms() -> None:
    assert R.snippet_terms("…>>>Postgres<<< and >>>postgres<<< >>>16<<<") == ["Postgres", "16"]
    assert R.query_terms('"world-class" c++ AND foo*') == ["world-class", "c", "foo"]


def test_relative_time_with_injected_now() -> None:
    now = 1_000_000_000.0
    assert R.relative_time(now - 5, now) == "5s ago"
    assert R.relative_time(now - 300, now) == "5m ago"
    assert R.relative_time(now - 7200, now) == "2h ago"
    assert R.relative_time(now - 3 * 86400, now) == "3d ago"
    assert R.relative_time(now - 30 * 86400, now) == "4w ago"
    assert R.relative_time(now - 400 * 86400, now) == "2000-08-05"
    assert R.relative_time(None, now) == "—"
    assert R.relative_time(now + 10, now) == "future"


def test_truncate_before_rendering() -> None:
    text, dropped = R.truncate_text("x" * 20_000)
    assert len(text) == R.MAX_RENDER_CHARS and dropped == 20_000 - R.MAX_RENDER_CHARS
    text, dropped = R.truncate_text("\n".join(["l"] * 1000), max_lines=10)
    assert text.count("\n") == 9 and dropped > 0
    assert R.truncate_text("short") == ("short", 0)


def test_pretty_json_and_tool_calls() -> None:
    assert R.pretty_json('{"a": [1, 2]}') == '{\n  "a": [\n    1,\n    2\n  ]\n}'
    assert R.pretty_json("not json {") == "not json {"
    name, args = R.tool_call_parts({"function": {"name": "grep", "arguments": '{"p": "x"}'}})
    assert name == "grep" and '"p": "x"' in args
    assert R.tool_call_parts("odd")[0] == "tool call"


def test_content_text_multimodal() -> None:
    assert R.content_text([{"type": "text", "text": "hi"}, {"type": "image_url"}]) == "hi\n[image_url]"
    assert R.content_text(None) == ""
    assert R.content_text(42) == "42"


def test_labels_counts_costs() -> None:
    assert R.session_label({"title": None, "preview": "first\nprompt", "id": "x"}) == "first prompt"
    assert R.session_label({"id": "abc"}) == "abc"
    assert (
        R.human_count(950) == "950"
        and R.human_count(12_345) == "12.3k"
        and R.human_count(4_500_000) == "4.5M"
    )
    assert R.format_cost({"estimated_cost_usd": 1.234}) == "$1.23"
    assert R.format_cost({"actual_cost_usd": 0.001, "estimated_cost_usd": 9}) == "<$0.01"
    assert R.format_cost({}) == ""
    assert R.one_line("a\tb\x00c", width=4) == "a b…"


def test_highlight_terms_counts() -> None:
    text = Text("Foo foo bar")
    assert R.highlight_terms(text, ["foo"]) == 2
