"""`sessions show`, the Markdown and JSON exports and the pager's text on a file of today's Hermes:
what a person reads follows Hermes' display (one message per display group, compaction-archived
turns in, hidden rows left out with a count); `show --json` carries the display messages with
their display fields; the JSON export keeps the stored rows. (The differential tests against the
v31 writer are in tests/peer/test_v31_display.py.)"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from hermes_tui.app.handoff_actions import _session_markdown
from hermes_tui.state import SessionDB
from tests.app._display import HIDDEN, SHOWN, SID, build_display_store
from tests.cli.test_cli_v31_flags import run


@pytest.fixture
def display_db(tmp_path: Path) -> Path:
    return build_display_store(tmp_path / "state.db")


def shown_ids(out: str) -> list[int]:
    return [int(m) for m in re.findall(r"^\[#(\d+)\]", out, flags=re.M)]


def test_show_reads_what_hermes_shows(display_db: Path, capsys: Any) -> None:
    code, out, _ = run(capsys, "show", SID, "--db", display_db)
    assert code == 0
    assert shown_ids(out) == SHOWN
    assert "Messages (6):" in out
    assert "(2 hidden rows not shown: model-facing, Hermes never shows them; --all shows every row)" in out
    assert "[#1] user" in out and "[compacted]" in out  # an archived turn is still the person's
    code, out, _ = run(capsys, "show", SID, "--db", display_db, "--all")
    assert shown_ids(out) == list(range(1, 10))
    assert "[#5] user" in out and "[hidden]" in out and "hidden rows not shown" not in out
    doc = json.loads(run(capsys, "show", SID, "--db", display_db, "--json")[1])
    assert [m["id"] for m in doc["messages"]] == [1, 2, 3, 6, 5, 7, 8, 9]  # hidden ones flagged
    assert [m["id"] for m in doc["messages"] if m.get("display_kind") != "hidden"] == SHOWN


def test_markdown_export_and_the_pager_follow_the_display(
    display_db: Path, capsys: Any, tmp_path: Path
) -> None:
    target = tmp_path / "out.md"
    code, _out, _ = run(capsys, "export", SID, "--db", display_db, "--format", "md", "-o", target)
    assert code == 0
    text = target.read_text()
    headings = re.findall(r"^## \d+\. (\w+)", text, flags=re.M)
    assert headings == ["user", "assistant", "tool", "assistant", "user", "assistant"]
    assert "Deployed to staging in 42 s." in text and text.count("Deployed to staging in 42 s.") == 1
    assert "CONTEXT SUMMARY" not in text
    assert (
        "_2 hidden rows (model-facing: Hermes never shows them) left out; the JSON export keeps every row._"
        in text
    )
    with SessionDB(display_db, read_only=True, migrate=False) as db:
        pager, _name, line = _session_markdown(db, SID, 7)
    assert pager == text
    assert pager.splitlines()[line - 1].startswith("## 5. user")


def test_json_export_keeps_the_stored_rows(display_db: Path, capsys: Any) -> None:
    code, out, _ = run(capsys, "export", SID, "--db", display_db, "--format", "json")
    assert code == 0
    (item,) = json.loads(out)
    assert [m["id"] for m in item["messages"]] == [5, 6, 7, 8, 9]  # upstream's export: the live rows
    assert {m["id"]: m["display_kind"] for m in item["messages"] if m["display_kind"]} == dict.fromkeys(
        [i for i in HIDDEN], "hidden"
    )
    assert all("display_order" in m for m in item["messages"])
