"""The HTML export (`hermes_tui.html_export`, `sessions export --format html`): the file is parsed
with the standard library's HTML parser and must hold no script, no event-handler attribute, no
resource from anywhere (only http(s)/mailto links and in-page anchors), a CSP that forbids both,
no raw control or bidi character, and every hostile payload only as text. Plus what it shows
(roles, times, Markdown, highlighting, folds, metadata, lineage), `--redact`, files and modes."""

from __future__ import annotations

import io
import json
import re
import stat
import sys
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import apsw
import pytest

from hermes_tui.exporting import to_markdown
from hermes_tui.html_export import to_html
from hermes_tui.safe_text import BIDI_CONTROLS
from hermes_tui.state import SessionDB
from tests.cli._cli import run

#: Markup, script and resource injections; each must come out as the same text, never as markup.
HTML_PAYLOADS = [
    "<script>alert(1)</script>",
    '<img src="https://evil.example/pixel.png" onerror="alert(2)">',
    '"><svg onload=alert(3)>',
    "<iframe src=https://evil.example/frame></iframe>",
    '<link rel="stylesheet" href="https://evil.example/x.css">',
    "<style>@import url(https://evil.example/y.css);</style>",
    "</details></article><script>alert(4)</script>",
    "<a href=\"javascript:alert(5)\" onclick='alert(6)'>click</a>",
]
#: Markdown that would become a resource or a script link if rendered naively.
MD_PAYLOADS = [
    "![tracker](https://evil.example/t.png)",
    "[run](javascript:alert(7))",
    "[data](data:text/html;base64,PHNjcmlwdD4=)",
    "<https://evil.example/autolink>",
    "[scheme-relative](//evil.example/r) [ftp](ftp://evil.example/f) [relative](../state.db)",
]
TERMINAL = "\x1b]52;c;aGVsbG8=\x07\x1b[2J\x9b"
BIDI = "\u202eevil\u202c"
REFS = "&#x202E; &#13; &#x9b;"
NON_UTF8 = b"\xff\xfe not utf-8 <script>alert(8)</script>"

URL_ATTRS = {
    "src",
    "href",
    "srcset",
    "data",
    "poster",
    "action",
    "formaction",
    "xlink:href",
    "background",
    "cite",
}
_RAW_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f" + "".join(sorted(BIDI_CONTROLS)) + "]")


class Page(HTMLParser):
    """Everything a browser would act on: tags with their attributes, text, style text."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.style: list[str] = []
        self._in: list[str] = []
        self.feed(html)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._in.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_endtag(self, tag: str) -> None:
        if tag in self._in:
            while self._in and self._in.pop() != tag:
                pass

    def handle_data(self, data: str) -> None:
        (self.style if self._in and self._in[-1] == "style" else self.text).append(data)

    @property
    def all_text(self) -> str:
        return "".join(self.text)


def assert_safe(html: str) -> Page:
    page = Page(html)
    names = [t for t, _a in page.tags]
    assert "script" not in names
    for banned in (
        "iframe",
        "frame",
        "object",
        "embed",
        "img",
        "link",
        "audio",
        "video",
        "source",
        "base",
        "form",
    ):
        assert banned not in names, banned
    for tag, attrs in page.tags:
        for name, value in attrs.items():
            assert not name.startswith("on"), (tag, name)
            if name in URL_ATTRS:
                assert tag == "a" and name == "href", (tag, name, value)
                parts = urlsplit(value or "")
                assert parts.scheme in ("http", "https", "mailto") or (
                    not parts.scheme and (value or "").startswith("#")
                )
            if name == "style":
                raise AssertionError(f"inline style attribute on {tag}")
    metas = [
        a
        for t, a in page.tags
        if t == "meta" and (a.get("http-equiv") or "").lower() == "content-security-policy"
    ]
    assert len(metas) == 1
    csp = metas[0]["content"] or ""
    assert "default-src 'none'" in csp and "script-src" not in csp and "img-src 'none'" in csp
    style = "".join(page.style)
    assert "@import" not in style and "url(" not in style
    assert not _RAW_UNSAFE.search(html), _RAW_UNSAFE.search(html)
    return page


def hostile_store(path: Path) -> None:
    db = SessionDB(path)
    try:
        db.create_session(
            "evil<b>",
            "cli",
            model="m<script>",
            system_prompt="You are </details><script>alert(9)</script> " + TERMINAL,
            cwd="/home/alice/secret-project",
        )
        db.set_session_title("evil<b>", "Title <script>alert(10)</script> " + BIDI)
        for n, payload in enumerate(HTML_PAYLOADS + MD_PAYLOADS):
            db.append_message(
                "evil<b>", "user" if n % 2 == 0 else "assistant", payload, timestamp=1_700_000_000 + n
            )
        db.append_message(
            "evil<b>",
            "user",
            f"escapes {TERMINAL} bidi {BIDI} refs {REFS} nul a\x00b",
            timestamp=1_700_000_100,
        )
        db.append_message(
            "evil<b>",
            "assistant",
            "calling",
            tool_calls=[
                {
                    "id": "c1",
                    "type": "function",
                    "function": {
                        "name": "term<script>" + BIDI,
                        "arguments": json.dumps({"cmd": HTML_PAYLOADS[0] + TERMINAL}),
                    },
                }
            ],
            reasoning="thinking <script>alert(11)</script> " + BIDI,
            timestamp=1_700_000_101,
        )
        tool = db.append_message(
            "evil<b>",
            "tool",
            "placeholder",
            tool_name="term<img src=x>",
            tool_call_id="c1",
            timestamp=1_700_000_102,
        )
        db.append_message(
            "evil<b>", "assistant", "```python\nprint('<b>hi</b>')\n```\n\n**done**", timestamp=1_700_000_103
        )
    finally:
        db.close()
    conn = apsw.Connection(str(path))
    try:
        conn.execute("UPDATE messages SET content = ? WHERE id = ?", (NON_UTF8, tool))
    finally:
        conn.close()


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    path = tmp_path / "hostile.db"
    hostile_store(path)
    return path


def export(path: Path, sid: str = "evil<b>", **kw: Any) -> str:
    with SessionDB(path, read_only=True) as db:
        return to_html(db.export_session(sid, True), **kw)


def test_hostile_session_is_inert_html(hostile: Path) -> None:
    html = export(hostile)
    page = assert_safe(html)
    text = page.all_text
    for payload in HTML_PAYLOADS:  # present, as text only
        assert payload in text, payload
        assert payload not in html
    for payload in MD_PAYLOADS[1:3]:
        assert payload in text  # an unsafe link stays its source text
    assert "[image: tracker] https://evil.example/t.png" in text  # an image is never fetched
    assert "https://evil.example/autolink" in text
    assert [a.get("href") for t, a in page.tags if t == "a" and a.get("href", "").startswith("http")] == [
        "https://evil.example/autolink"
    ]
    # controls and bidi are shown as visible tags, character references too (decoded by Markdown)
    assert "␛]52;c;aGVsbG8=␇␛[2J⟨U+009B⟩" in text
    assert "⟨U+202E⟩evil⟨U+202C⟩" in text
    assert "refs ⟨U+202E⟩ ␍ " in text  # (&#x9b; is U+FFFD by the HTML5 rules Markdown follows)
    assert "a␀b" in text
    assert "[binary: " in text and "<script>alert(8)</script>" in text
    assert "Title <script>alert(10)</script> evil" in text  # the store's title rule drops bidi
    assert "term<script>⟨U+202E⟩evil⟨U+202C⟩" in text and "term<img src=x>" in text
    assert "You are </details><script>alert(9)</script>" in text
    assert "thinking <script>alert(11)</script>" in text


def test_html_reads_like_the_transcript(hostile: Path, db_path: Path) -> None:
    html = export(hostile)
    page = Page(html)
    classes = [a.get("class") for _t, a in page.tags]
    assert "msg role-user" in classes and "msg role-assistant" in classes and "msg role-tool" in classes
    summaries = [
        t
        for t in page.text
        if t in ("Reasoning", "System prompt") or t.startswith(("Tool call", "Tool result"))
    ]
    assert {"Reasoning", "System prompt", "Tool call: "} <= set(summaries)
    assert any(s.startswith("Tool result (") for s in summaries)
    assert [t for t, _a in page.tags].count("details") == 4  # prompt, reasoning, call, result
    assert ("time", {"datetime": "2023-11-14T22:13:20Z"}) in page.tags
    assert '<span class="nb">print</span>' in html  # Pygments highlighted the fence
    assert "<strong>done</strong>" in html  # Markdown rendered
    assert "/home/alice/secret-project" in page.all_text  # metadata: the working folder
    with SessionDB(db_path, read_only=True) as db:
        chain = to_html(db.export_session_lineage("comp-tip", True))
    page = assert_safe(chain)
    anchors = [a["href"] for t, a in page.tags if t == "a"]
    assert anchors == ["#segment-1", "#segment-2"]
    assert [a.get("id") for t, a in page.tags if t == "h2"] == ["segment-1", "segment-2"]
    assert "Compression chain, oldest first:" in page.all_text


def test_redact_replaces_what_it_promises_and_says_so(tmp_path: Path) -> None:
    path = tmp_path / "r.db"
    secrets = [
        "sk-ant-api03-AbCdEfGhIjKlMnOpQrSt1234",
        "ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
        "AKIAIOSFODNN7EXAMPLE",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THs",
        "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
        "bob.smith@example.co.uk",
        "/home/alice",
        "/Users/Bob",
    ]
    db = SessionDB(path)
    try:
        db.create_session("r", "cli", cwd="/home/alice/proj")
        db.set_session_title("r", "mail bob.smith@example.co.uk")
        db.append_message(
            "r",
            "user",
            " ; ".join(secrets)
            + " ; OPENAI_API_KEY=plainvalue99 ; Authorization: Bearer abcdefghijklmnop1234"
            " ; commit 0123456789abcdef0123456789abcdef01234567 ; password hunter2",
        )
        db.append_message(
            "r",
            "assistant",
            "ok",
            tool_calls=[
                {
                    "id": "c",
                    "type": "function",
                    "function": {"name": "t", "arguments": '{"token": "zzzzzz-123456"}'},
                }
            ],
        )
    finally:
        db.close()
    plain = export(path, "r")
    html = export(path, "r", redact=True)
    page = assert_safe(html)
    for secret in [*secrets, "plainvalue99", "abcdefghijklmnop1234", "zzzzzz-123456"]:
        assert secret in plain or secret in Page(plain).all_text
        assert secret not in html and secret not in page.all_text, secret
    text = page.all_text
    assert "[secret]" in text and "[email]" in text and "[home]/proj" in text
    assert "OPENAI_API_KEY=[secret]" in text and "Bearer [secret]" in text
    # What it does not catch (documented): hex digests and a password in prose.
    assert "0123456789abcdef0123456789abcdef01234567" in text and "password hunter2" in text
    assert "Redacted:" in text


@pytest.fixture(autouse=True)
def no_tty(monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))


def test_cli_export_html_file_dir_lineage_and_modes(db_path: Path, tmp_path: Path, capsys) -> None:
    one = tmp_path / "one.html"
    code, _out, err = run(capsys, "export", "cli-docker", "-o", one, "--db", db_path)  # .html: the format
    assert code == 0, err
    assert stat.S_IMODE(one.stat().st_mode) == 0o600
    assert "Docker fix" in Page(one.read_text()).all_text and assert_safe(one.read_text())
    code, out, _ = run(
        capsys,
        "export",
        "cli-docker",
        "comp-tip",
        "--format",
        "html",
        "-o",
        tmp_path / "many",
        "--json",
        "--db",
        db_path,
    )
    assert code == 0
    doc = json.loads(out)
    assert doc["format"] == "html" and [f["file"] for f in doc["files"]] == [
        "cli-docker.html",
        "comp-tip.html",
    ]
    for f in doc["files"]:
        assert stat.S_IMODE((tmp_path / "many" / f["file"]).stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "many").stat().st_mode) == 0o700
    code, out, _ = run(
        capsys, "export", "comp-tip", "--lineage", "-o", tmp_path / "chain.htm", "--json", "--db", db_path
    )
    assert code == 0 and json.loads(out)["format"] == "html"
    assert "Continuing the kubernetes chat" in Page((tmp_path / "chain.htm").read_text()).all_text
    code, _out, err = run(capsys, "export", "cli-docker", "--format", "html", "--db", db_path)
    assert code == 2 and "-o FILE.html" in err
    code, _out, err = run(
        capsys, "export", "cli-docker", "--redact", "-o", tmp_path / "x.md", "--db", db_path
    )
    assert code == 2 and "--redact" in err
    code, _out, _err = run(
        capsys, "export", "cli-docker", "--redact", "-o", tmp_path / "r.html", "--db", db_path
    )
    assert code == 0 and "Redacted:" in Page((tmp_path / "r.html").read_text()).all_text


def test_a_fork_of_a_hostile_session_exports_as_inert_html(hostile: Path, capsys) -> None:
    """Hostile rows through both new paths: forked by the CLI at -1 (every row copied, bytes
    included), then the fork exported to HTML by the CLI: safe, payloads present as text."""
    code, out, err = run(
        capsys, "fork", "evil<b>", "--at", "-1", "--title", "fork <script>x</script>\u202e", "--db", hostile
    )
    assert code == 0, err
    fork = out.strip()
    target = hostile.parent / "fork.html"
    code, _out, err = run(capsys, "export", fork, "-o", target, "--db", hostile)
    assert code == 0, err
    html = target.read_text()
    page = assert_safe(html)
    text = page.all_text
    for payload in HTML_PAYLOADS:
        assert payload in text and payload not in html
    assert "fork <script>x</script>" in text and "[binary: " in text and "⟨U+202E⟩evil⟨U+202C⟩" in text


def test_a_flat_tool_call_shows_its_arguments_as_their_value_like_the_markdown(tmp_path: Path) -> None:
    """A call written flat (`{"name", "arguments"}`, not OpenAI's `function`) with its arguments
    as JSON text: both exports show the arguments as their value (one rule, `shown_tool_calls`);
    the HTML export showed them as one JSON string of escaped quotes."""
    path = tmp_path / "flat.db"
    db = SessionDB(path)
    try:
        db.create_session("f", source="cli")
        db.append_message(
            "f",
            "assistant",
            "reading",
            tool_calls=[{"id": "c1", "name": "read_file", "arguments": '{"path": "/tmp/notes.txt"}'}],
        )
    finally:
        db.close()
    with SessionDB(path, read_only=True) as db:
        session = db.export_session("f", True)
    page = assert_safe(to_html(session))
    assert "Tool call: read_file" in page.all_text
    assert '"path": "/tmp/notes.txt"' in page.all_text
    assert '\\"path\\"' not in page.all_text
    markdown = to_markdown(session)
    assert '"path": "/tmp/notes.txt"' in markdown and '\\"path\\"' not in markdown
