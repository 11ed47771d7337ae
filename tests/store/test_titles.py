"""Titles: sanitising, uniqueness, numbering, resolution (T50–T54)."""

from __future__ import annotations

import pytest
from conftest import count

from hermes_tui.state import SessionDB, TitleError

sanitize = SessionDB.sanitize_title


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("  Fix  Docker\tBuild\n ", "Fix Docker Build"),
        ("a\x00b\x07c", "abc"),
        ("zero\u200bwidth", "zerowidth"),
        ("Tab\x0bvt", "Tabvt"),
        ("\u3000全角スペース\u3000", "全角スペース"),
        ("nbsp\u00a0here", "nbsp here"),
        ("line\u2028sep", "linesep"),
        ("", None),
        ("   ", None),
        (None, None),
        ("x" * 100, "x" * 100),
        (" " + "x" * 100 + " ", "x" * 100),
    ],
)
def test_t50_sanitize(raw, expected):
    assert sanitize(raw) == expected


def test_t50_too_long():
    with pytest.raises(TitleError) as ei:
        sanitize("x" * 101)
    assert str(ei.value) == "Title too long (101 chars, max 100)"
    assert isinstance(ei.value, ValueError)


@pytest.fixture
def abc(db):
    for sid in "abcdef":
        db.create_session(sid, "cli")
        db._execute_write(
            lambda c, sid=sid: c.execute(
                "UPDATE sessions SET started_at = ? WHERE id = ?", (1000 + ord(sid), sid)
            )
        )
    return db


def test_t51_uniqueness(abc):
    db = abc
    assert db.set_session_title("a", "Fix Docker Build") is True
    for t in ("Fix Docker Build", "  Fix   Docker Build "):
        with pytest.raises(TitleError) as ei:
            db.set_session_title("b", t)
        assert str(ei.value) == "Title 'Fix Docker Build' is already in use by session a"
        assert db.get_session_title("b") is None
    assert db.set_session_title("b", "fix docker build") is True
    assert db.set_session_title("a", "Fix Docker Build") is True
    assert db.set_session_title("zzz", "Whatever") is False
    assert count(db, "sessions") == 6
    assert db.set_session_title("b", "   ") is True
    assert db.get_session_title("b") is None


def test_title_too_long_changes_nothing(abc):
    abc.set_session_title("a", "keep")
    with pytest.raises(TitleError):
        abc.set_session_title("a", "y" * 101)
    assert abc.get_session_title("a") == "keep"


def test_check_title(abc):
    abc.set_session_title("a", "Fix Docker Build")
    r = abc.check_title("b", "Fix Docker Build")
    assert r["ok"] is False and r["holder"] == "a" and r["error"]
    r = abc.check_title("b", "  New   one ")
    assert r["ok"] is True and r["title"] == "New one"
    assert abc.get_session_title("b") is None


def test_t52_next_title(abc):
    db = abc
    db.set_session_title("a", "Fix Docker Build")
    assert db.get_next_title_in_lineage("Fix Docker Build") == "Fix Docker Build #2"
    db.set_session_title("c", "Fix Docker Build #2")
    assert db.get_next_title_in_lineage("Fix Docker Build") == "Fix Docker Build #3"
    assert db.get_next_title_in_lineage("Fix Docker Build #2") == "Fix Docker Build #3"
    db.set_session_title("d", "Fix Docker Build #10")
    assert db.get_next_title_in_lineage("Fix Docker Build") == "Fix Docker Build #11"
    assert db.get_next_title_in_lineage("Brand New") == "Brand New"
    assert db.get_next_title_in_lineage("Foo#2") == "Foo#2"
    assert db.get_next_title_in_lineage("X #abc") == "X #abc"


def test_t53_resolve(abc):
    db = abc
    db.set_session_title("a", "Fix Docker Build")
    db.set_session_title("c", "Fix Docker Build #2")
    db.set_session_title("d", "Fix Docker Build #10")
    assert db.resolve_session_by_title("Fix Docker Build") == "d"
    assert db.resolve_session_by_title("Fix Docker Build #2") == "c"
    assert db.resolve_session_by_title("Nope") is None
    assert db.resolve_session_by_title("fix docker build") == "d"
    db.set_session_title("e", "100%_done")
    db.set_session_title("f", "100X_done #3")
    assert db.resolve_session_by_title("100%_done") == "e"
    assert db.get_session_by_title("100%_done")["id"] == "e"


def test_t54_auto_title(abc):
    abc.set_session_title("a", "Mine")
    assert abc.set_auto_title_if_empty("a", "Other") is False
    assert abc.get_session_title("a") == "Mine"
    assert abc.set_auto_title_if_empty("f", "Auto") is True
    assert abc.get_session_title("f") == "Auto"
