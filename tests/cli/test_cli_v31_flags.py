"""`sessions list --archived/--include-hidden`, the marks and `show`'s flags, activity and system
prompt, on a store shaped as the v31 writer leaves it (the differential tests against the
writer itself are in tests/peer/test_v31_list.py and test_v31_show_export.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hermes_tui.cli import sessions
from hermes_tui.state import SessionDB
from tests.store.test_v31_reading import T, make_v31, sql

HOSTILE = "\x1b]52;c;cm0gLXJmIH4=\x07\x1b[2J\u202eevil"


def run(capsys: Any, *argv: Any) -> tuple[int, str, str]:
    code = sessions.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def v31(tmp_path: Path) -> Path:
    path = tmp_path / "state.db"
    make_v31(path)
    with SessionDB(path, migrate=False) as db:
        for i, sid in enumerate(("plain", "pinned", "unread", "archived", "hidden", "both", "busy")):
            db.create_session(sid, "cli")
            db.append_message(sid, "user", f"text of {sid}", timestamp=T + 10 * i)
    sql(path, "UPDATE sessions SET pinned = 1 WHERE id IN ('pinned', 'both')")
    sql(path, "UPDATE sessions SET last_read_at = 0 WHERE id = 'unread'")
    sql(path, "UPDATE sessions SET archived = 1 WHERE id IN ('archived', 'both')")
    sql(path, "UPDATE sessions SET hidden = 1 WHERE id IN ('hidden', 'both')")
    sql(path, "INSERT INTO system_prompts VALUES ('h', ?)", (f"be careful {HOSTILE}",))
    sql(
        path,
        "UPDATE sessions SET last_activity_at = ?, last_activity_description = ?, system_prompt_hash = 'h' "
        "WHERE id = 'busy'",
        (T + 500, f"running {HOSTILE}"),
    )
    return path


def ids(out: str) -> list[str]:
    return [r["id"] for r in json.loads(out)["sessions"]]


def test_list_views(v31: Path, capsys: Any) -> None:
    assert ids(run(capsys, "list", "--db", v31, "--json")[1]) == ["busy", "unread", "pinned", "plain"]
    assert ids(run(capsys, "list", "--db", v31, "--json", "--archived")[1]) == ["both", "archived"]
    assert ids(run(capsys, "list", "--db", v31, "--json", "--include-hidden")[1]) == [
        "busy",
        "hidden",
        "unread",
        "pinned",
        "plain",
    ]
    rows = {
        r["id"]: r
        for r in json.loads(run(capsys, "list", "--db", v31, "--json", "--archived")[1])["sessions"]
    }
    assert {k: rows["both"][k] for k in ("archived", "hidden", "pinned", "unread")} == {
        "archived": 1,
        "hidden": 1,
        "pinned": 1,
        "unread": False,
    }
    busy = json.loads(run(capsys, "list", "--db", v31, "--json")[1])["sessions"][0]
    assert busy["last_active"] == T + 500 and busy["last_activity_description"] == f"running {HOSTILE}"


def test_list_text_marks_and_stays_inert(v31: Path, capsys: Any) -> None:
    code, out, _ = run(capsys, "list", "--db", v31)
    assert code == 0 and "\x1b" not in out and "\u202e" not in out
    first = {ln[3:].split()[0]: ln[:3] for ln in out.splitlines()[2:6]}
    assert first == {"busy": "   ", "unread": "●  ", "pinned": "*  ", "plain": "   "}
    assert out.splitlines()[0].startswith("   ID")
    assert "* pinned  ● unread  a archived  h hidden" in out
    code, out, _ = run(capsys, "list", "--db", v31, "--archived")
    assert [ln[:4] for ln in out.splitlines()[2:4]] == ["*ah ", "a   "]
    code, out, _ = run(capsys, "list", "--db", v31, "--source", "telegram")
    assert code == 0 and out.strip() == "No sessions match."


def test_a_list_without_marks_has_no_marks_column(tmp_path: Path, capsys: Any) -> None:
    with SessionDB(tmp_path / "v23.db") as db:
        db.create_session("only", "cli")
    code, out, _ = run(capsys, "list", "--db", tmp_path / "v23.db")
    assert code == 0 and out.startswith("ID ") and "unread" not in out


def test_show_flags_activity_and_prompt_are_inert(v31: Path, capsys: Any) -> None:
    code, out, _ = run(capsys, "show", "busy", "--db", v31)
    assert code == 0 and "\x1b" not in out and "\u202e" not in out
    assert "activity:    running ␛]52;c;" in out
    assert "System prompt (" in out and "be careful ␛]52" in out
    code, out, _ = run(capsys, "show", "both", "--db", v31)
    assert code == 0 and "flags:       pinned, archived, hidden" in out
    doc = json.loads(run(capsys, "show", "busy", "--db", v31, "--json")[1])
    assert doc["session"]["system_prompt"] == f"be careful {HOSTILE}"
    assert doc["session"]["last_active"] == T + 500 and doc["session"]["unread"] is False


def test_references_resolve_to_any_session(v31: Path, capsys: Any) -> None:
    """A hidden or archived session is not in the default list but still found by a prefix."""
    code, out, err = run(capsys, "show", "hidd", "--db", v31)
    assert code == 0 and "id:          hidden" in out and "only session whose id starts" in err


def test_watch_names_a_reset_child(v31: Path) -> None:
    """`watch` reports a new reset child as such (the live `Changes` edge kind, which its text
    line prints as "(child of PARENT, reset)"), beside compression, branch and delegate."""
    from tests.cli.test_cli_live import Follower

    with SessionDB(v31, migrate=False) as db:
        db.create_session("chat", "telegram", session_key="tg:1")
        f = Follower("watch", "--json", "--db", str(v31), "--interval", "0.05")
        try:
            assert f.next_json()["type"] == "start"
            db.end_session("chat", "session_reset")
            db.create_session(
                "chat-2",
                "telegram",
                session_key="tg:1",
                parent_session_id="chat",
                model_config={"_reset_from": "chat"},
            )
            db.create_session("legacy-2", "telegram", session_key="tg:1", parent_session_id="chat")
            events = f.until(lambda e: e["type"] == "session" and e["session"]["id"] == "legacy-2")
        finally:
            f.stop()
    kinds = {e["session"]["id"]: e["session"]["edge_kind"] for e in events if e["type"] == "session"}
    assert kinds == {"chat-2": "reset", "legacy-2": "reset"}


def test_show_lineage_names_reset_children(v31: Path, capsys: Any) -> None:
    with SessionDB(v31, migrate=False) as db:
        db.create_session("chat", "telegram", session_key="tg:1")
        db.end_session("chat", "session_reset")
        db.create_session("chat-2", "telegram", session_key="tg:1", parent_session_id="chat")
    code, out, _ = run(capsys, "show", "chat-2", "--db", v31)
    assert code == 0 and "* chat-2 [reset]" in out and "- chat [root]" in out
    doc = json.loads(run(capsys, "show", "chat-2", "--db", v31, "--json")[1])
    assert {n["id"]: n["edge_kind"] for n in doc["lineage"]["nodes"]} == {"chat": None, "chat-2": "reset"}
