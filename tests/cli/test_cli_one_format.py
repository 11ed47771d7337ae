"""The CLI shows content, costs and sizes through the one shared implementation of each:
what `sessions show`, `prune --dry-run`, `trash list` and `--json` print agrees with the browser
and the exports."""

from __future__ import annotations

import json
import re
import sys
from io import StringIO

import pytest

from hermes_tui.formatting import format_cost, format_size
from hermes_tui.state import SessionDB, content_text
from tests.cli._cli import run

from .conftest import one_store


@pytest.fixture(autouse=True)
def no_tty(monkeypatch):
    monkeypatch.setattr(sys, "stdin", StringIO(""))


def test_show_flattens_multimodal_content_like_the_transcript(db_path, capsys):
    with SessionDB(db_path, read_only=True) as db:
        msgs = [m for m in db.get_messages("tg-parent") if isinstance(m["content"], list)]
    assert msgs, "the fixture has a multimodal message"
    expected = content_text(msgs[0]["content"])
    assert "\n[image_url]" in expected
    code, out, _ = run(capsys, "show", "tg-parent", "--db", db_path)
    assert code == 0
    body = ["  " + ln for ln in expected.splitlines()]
    lines = out.splitlines()
    start = lines.index(body[0])
    assert lines[start : start + len(body)] == body


def test_show_and_list_cost_is_the_one_formatter(db_path, capsys):
    code, out, _ = run(capsys, "show", "cli-docker", "--db", db_path)
    assert code == 0 and re.search(r"^cost\W+\$0\.0500$", out, re.M), out
    assert format_cost(0.05, places=4) == "$0.0500"


def test_prune_plan_and_trash_sizes_are_the_one_formatter(db_path, capsys):
    code, out, _ = run(capsys, "prune", "--dry-run", "--json", "--db", db_path)
    estimate = one_store(json.loads(out))["plan"]["bytes_estimate"]
    code, out, _ = run(capsys, "prune", "--dry-run", "--db", db_path)
    assert code == 0 and f"(about {format_size(estimate)} of the file)" in out, out
    code, out, _ = run(capsys, "delete", "cli-docker", "--yes", "--db", db_path)
    assert code == 0
    code, out, _ = run(capsys, "trash", "list", "--json", "--db", db_path)
    size = json.loads(out)["entries"][0]["bytes"]
    code, out, _ = run(capsys, "trash", "list", "--db", db_path)
    assert code == 0 and format_size(size) in out, out
