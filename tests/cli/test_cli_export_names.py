"""`sessions export`: the format follows the `-o` file's extension, Markdown file names are unique
and stable (issue 33 items 6 and 12), and JSON nested 100,000 deep never fails an export or the
pager (item 13)."""

from __future__ import annotations

import io
import json
import re
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hermes_tui.app import render
from hermes_tui.state import SessionDB
from tests.cli._cli import run

DEEP = 100_000


@pytest.fixture(autouse=True)
def no_tty(monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))


# ---------------------------------------------------------------- the format from the extension
@pytest.mark.parametrize(
    ("name", "kind"),
    [("backup.json", "json"), ("backup.JSON", "json"), ("backup.jsonl", "jsonl"), ("one.markdown", "md")],
)
def test_the_extension_names_the_format(db_path, capsys, tmp_path, name, kind) -> None:
    target = tmp_path / name
    ref = ["cli-docker"] if kind == "md" else []
    code, _out, err = run(capsys, "export", *ref, "-o", target, "--db", db_path)
    assert code == 0, err
    text = target.read_text()
    if kind == "json":
        assert {s["id"] for s in json.loads(text)} >= {"cli-docker", "tg-parent"}  # one JSON array
    elif kind == "jsonl":
        assert all(json.loads(line)["id"] for line in text.splitlines())
    else:
        assert text.startswith('---\nid: "cli-docker"')


def test_format_flag_wins_and_stdout_is_jsonl(db_path, capsys, tmp_path) -> None:
    target = tmp_path / "lines.json"
    assert run(capsys, "export", "--format", "jsonl", "-o", target, "--db", db_path)[0] == 0
    assert len(target.read_text().splitlines()) > 1 and json.loads(target.read_text().splitlines()[0])
    code, out, _ = run(capsys, "export", "tg-parent", "--db", db_path)
    assert code == 0 and json.loads(out)["id"] == "tg-parent"


def test_an_unknown_extension_or_a_folder_needs_format(db_path, capsys, tmp_path) -> None:
    code, _out, err = run(capsys, "export", "-o", tmp_path / "backup.txt", "--db", db_path)
    assert code == 2 and "cannot tell the export format from" in err and "--format" in err
    assert not (tmp_path / "backup.txt").exists()
    folder = tmp_path / "out"
    folder.mkdir()
    code, _out, err = run(capsys, "export", "-o", folder, "--db", db_path)
    assert code == 2 and "is a directory: give --format md" in err
    assert list(folder.iterdir()) == []


def test_help_says_the_default_and_the_whole_lineage_text(capsys) -> None:
    code, out, _ = run(capsys, "export", "--help")
    flat = " ".join(out.split())
    assert code == 0
    extensions = ".json, .jsonl, .md, .markdown, .html, .htm"
    assert f"Default: from the -o file's extension ({extensions}), jsonl on stdout" in flat
    assert "compression chain (root to live tip) as one session" in flat


# ---------------------------------------------------------------- unique, stable file names
@pytest.fixture
def clashing(tmp_path) -> Path:
    """Ids that one character-for-character file name cannot tell apart."""
    path = tmp_path / "clash.db"
    with SessionDB(path) as db:
        for sid in ("a/b", "a_b", "A_B", "a:b", "x" * 300):
            db.create_session(sid, "cli")
            db.append_message(sid, "user", f"I am {sid}")
    return path


def test_markdown_names_are_unique_and_stable(clashing, capsys, tmp_path) -> None:
    manifests = []
    for out in ("first", "second"):
        code, _o, err = run(capsys, "export", "--format", "md", "-o", tmp_path / out, "--db", clashing)
        assert code == 0, err
        folder = tmp_path / out
        manifest = [json.loads(line) for line in (folder / "manifest.jsonl").read_text().splitlines()]
        files = [m["file"] for m in manifest]
        assert len(manifest) == 5 and len({f.casefold() for f in files}) == 5
        assert sorted(p.name for p in folder.iterdir()) == sorted([*files, "manifest.jsonl"])
        for m in manifest:  # each file holds the session the manifest says it does
            assert (folder / m["file"]).read_text().startswith(f"---\nid: {json.dumps(m['id'])}\n")
            assert len(m["file"].encode()) < 255
        manifests.append({m["id"]: m["file"] for m in manifest})
    assert manifests[0] == manifests[1]
    assert manifests[0]["a_b"] != manifests[0]["a/b"]


# ---------------------------------------------------------------- JSON nested too deep
@pytest.fixture
def deep(tmp_path) -> Path:
    path = tmp_path / "deep.db"
    nested = "[" * DEEP + "]" * DEEP
    with SessionDB(path) as db:
        db.create_session("deep", "cli")
        call = {"id": "c1", "type": "function", "function": {"name": "t", "arguments": nested}}
        db.append_message("deep", "assistant", "calling", tool_calls=[call])
        db.append_message("deep", "tool", nested, tool_name="t", tool_call_id="c1")
    return path


def test_deep_tool_arguments_export_as_markdown(deep, capsys, tmp_path) -> None:
    target = tmp_path / "deep.md"
    code, _out, err = run(capsys, "export", "deep", "--format", "md", "-o", target, "--db", deep)
    assert code == 0, err
    text = target.read_text()
    assert '"arguments": "[[[[' in text  # shown as the stored text, a JSON string in the block
    for argv in (["show", "deep"], ["export", "deep", "--format", "json"], ["show", "deep", "--json"]):
        assert run(capsys, *argv, "--db", deep)[0] == 0


def test_the_pager_text_survives_deep_json(deep) -> None:
    from hermes_tui.app import handoff_actions

    with SessionDB(deep, read_only=True) as db:
        markdown, name, _line = handoff_actions._session_markdown(db, "deep")
    assert name == "deep.md" and "**Tool call** `t`" in markdown


def test_one_pretty_printer_bounds_the_depth() -> None:
    from hermes_tui import exporting

    assert render.pretty_json is exporting.pretty_json  # the transcript's tool calls use it too
    limit = exporting.MAX_JSON_DEPTH
    shallow = "[" * limit + "]" * limit
    assert "\n" in exporting.pretty_json(shallow)  # within the bound: indented
    too_deep = "[" * (limit + 1) + "]" * (limit + 1)
    assert exporting.pretty_json(too_deep) == too_deep  # beyond it: as stored
    nested: list = []
    for _ in range(limit + 5):
        nested = [nested]
    assert exporting.pretty_json(nested) == "[" * (limit + 6) + "]" * (limit + 6)  # one line
    hostile = '{"a": [' * 300 + "\x1b]52;c;x\x07"
    assert "\x1b" not in exporting.pretty_json(hostile, safe=True)
    name, args = render.tool_call_parts({"function": {"name": "t", "arguments": "[" * DEEP + "]" * DEEP}})
    assert name == "t" and args.startswith("[[[[")


@settings(max_examples=300, deadline=None)
@given(
    ids=st.lists(
        st.text(min_size=0, max_size=300) | st.sampled_from(["a/b", "a_b", "A_B", "..", "a_b-1693b0cfc4"]),
        max_size=12,
        unique=True,
    ),
    profile=st.none() | st.text(max_size=40),
)
def test_any_ids_get_unique_safe_stable_names(ids: list[str], profile: str | None) -> None:
    from hermes_tui.exporting import markdown_filenames

    sessions = [{"id": i} if profile is None else {"profile": profile, "id": i} for i in ids]
    names = markdown_filenames(sessions)
    assert names == markdown_filenames(sessions)  # stable
    assert len({n.casefold() for n in names}) == len(ids)  # unique, even case-insensitively
    for name in names:
        assert re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*\.md", name) and len(name) < 255


@settings(max_examples=100, deadline=None)
@given(
    ids=st.lists(st.from_regex(r"[a-z0-9][a-z0-9_-]{0,30}[a-z0-9]", fullmatch=True), max_size=12, unique=True)
)
def test_plain_ids_keep_their_plain_names(ids: list[str]) -> None:
    from hermes_tui.exporting import markdown_filenames

    assert markdown_filenames([{"id": i} for i in ids]) == [f"{i}.md" for i in ids]
