"""End-to-end flows of the browser: the installed ``hermes-tui`` in a 120x40 pty, read through
pyte, on databases written by the real hermes-agent 0.19.0, with the real clock."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

pytest.importorskip("pexpect", reason="e2e tests need the dev extras (pexpect, pyte)")
pytest.importorskip("pyte", reason="e2e tests need the dev extras (pexpect, pyte)")

from .conftest import PeerDB, SessionSpec, write_sessions
from .terminal import Terminal

#: Five sessions, one minute apart, so the list's default order (last active) is known.
NAMES = ("alpha", "bravo", "charlie", "delta", "echo")


def five_sessions(db: PeerDB, *, filler: int = 2, hit_in: str | None = None, hit_at: int = 0) -> None:
    """``sess-<name>`` titled ``<Name> project``; newest first in the list: echo … alpha."""
    specs = []
    for n, name in enumerate(NAMES):
        messages = [
            ("user" if i % 2 == 0 else "assistant", f"{name} message {i} lorem ipsum") for i in range(filler)
        ]
        if name == hit_in:
            messages[hit_at] = ("assistant", f"{name} message {hit_at} mentions zebrafish once")
        specs.append(
            SessionSpec(
                id=f"sess-{name}",
                title=f"{name.capitalize()} project",
                messages=messages,
                offset_s=3600 - 60 * n,
            )
        )
    write_sessions(db, specs)
    db.close()


def list_row(t: Terminal, title: str) -> int | None:
    """The screen row showing ``title`` in the session list (left pane), if any."""
    for y, line in enumerate(t.screen.display):
        if title in line[:62]:
            return y
    return None


def cursor_title(t: Terminal, titles: list[str]) -> str | None:
    """Which of ``titles`` sits on the list's cursor row (the one row drawn with another background)."""
    rows = {title: list_row(t, title) for title in titles}
    if None in rows.values():
        return None  # mid-repaint
    backgrounds = {title: t.chars(y, 10, 1)[0].bg for title, y in rows.items()}
    counts: dict[str, int] = {}
    for bg in backgrounds.values():
        counts[bg] = counts.get(bg, 0) + 1
    odd = [title for title, bg in backgrounds.items() if counts[bg] == 1]
    return odd[0] if len(odd) == 1 and len(titles) > 2 else None


def wait_ready(t: Terminal, sessions: int) -> None:
    """The header says the store is open with ``sessions`` sessions."""
    t.wait_for(re.compile(rf"Sessions {sessions:,}\b"))


def test_open_lists_titles_written_by_the_peer(peer_db: Callable[..., PeerDB], term, db_path: Path) -> None:
    five_sessions(peer_db())
    t = term("--db", db_path)
    wait_ready(t, 5)
    for name in NAMES:
        t.wait_for(f"{name.capitalize()} project")
    ys = [list_row(t, f"{name.capitalize()} project") for name in reversed(NAMES)]
    assert None not in ys and ys == sorted(ys), "newest (last active) first"
    assert "schema v22" in t.screen_text()
    t.press("q")
    assert t.wait_exit() == 0


def test_q_is_typed_while_searching_and_ctrl_q_quits(
    peer_db: Callable[..., PeerDB], term, db_path: Path
) -> None:
    five_sessions(peer_db())
    t = term("--db", db_path)
    wait_ready(t, 5)
    t.search("aq")  # a query with a q in it is typed, not a quit
    assert t.child.isalive()
    t.press("ctrl+q")
    assert t.wait_exit() == 0


def test_search_hit_opens_the_transcript_and_escape_puts_the_cursor_on_it(
    peer_db: Callable[..., PeerDB], term, db_path: Path
) -> None:
    five_sessions(peer_db(), filler=40, hit_in="bravo", hit_at=31)
    t = term("--db", db_path)
    wait_ready(t, 5)
    titles = [f"{n.capitalize()} project" for n in NAMES]
    t.wait_until(lambda: cursor_title(t, titles) == "Echo project", what="the cursor on the first row")
    t.press("down")
    t.wait_until(lambda: cursor_title(t, titles) == "Delta project", what="the cursor on the second row")
    t.wait_for("sess-delta · cli")  # its transcript header: the move was taken
    t.search("zebrafish")
    t.wait_for(re.compile(r"\b1 hits?\b"))

    def rows_with_word() -> list[int]:
        return [y for y, line in enumerate(t.screen.display) if "zebrafish" in line[:62]]

    # the query box and, below it, the hit's snippet with the word highlighted
    t.wait_until(lambda: len(rows_with_word()) == 2, what="the hit under the query box")
    hit_y = rows_with_word()[1]
    hit = (hit_y, t.screen.display[hit_y].find("zebrafish"))
    cells = t.chars(hit[0], hit[1], len("zebrafish"))
    assert all(c.reverse or c.bold for c in cells), cells
    before = t.chars(hit[0], hit[1] - 2, 1)[0]
    assert not (before.reverse or before.bold), "only the matched word is highlighted"
    t.press("down")
    t.press("enter")
    t.wait_for("◆ match")
    t.wait_for("sess-bravo · cli")
    # the transcript scrolled to the hit: message 31 of 40 and its text are on screen
    t.wait_for("bravo message 31 mentions zebrafish once")
    assert "bravo message 0 lorem" not in t.screen_text()
    match_row = t.find("◆ match")
    text_row = t.find("bravo message 31 mentions zebrafish once", last=True)
    assert match_row is not None and text_row is not None and text_row[0] == match_row[0] + 1
    # Esc from the transcript goes back (through the results) to the list, its cursor on the
    # session read (issue #33: it stayed on the row left before, under another transcript)
    t.escape_until("Sessions 5")
    t.wait_until(lambda: cursor_title(t, titles) is not None, what="a cursor row in the list")
    assert cursor_title(t, titles) == "Bravo project"
    assert "sess-bravo · cli" in t.screen_text() and "◆ match" not in t.screen_text()
    t.press("q")
    assert t.wait_exit() == 0


def open_row(t: Terminal, titles: list[str], title: str, session_id: str) -> None:
    """Move the list cursor to ``title`` and wait until its transcript header shows."""
    t.wait_until(lambda: cursor_title(t, titles) is not None, what="a cursor row in the list")
    for _ in range(len(titles)):
        current = cursor_title(t, titles)
        if current == title:
            break
        t.press("down" if titles.index(title) > titles.index(current or title) else "up")
        t.wait_until(lambda c=current: cursor_title(t, titles) not in (None, c), what="the cursor to move")
    assert cursor_title(t, titles) == title
    t.wait_for(f"{session_id} · cli")


TITLES = [f"{n.capitalize()} project" for n in reversed(NAMES)]  # list order, newest first


def test_rename_is_read_back_by_the_peer(peer_db: Callable[..., PeerDB], term, db_path: Path) -> None:
    five_sessions(peer_db())
    t = term("--db", db_path)
    wait_ready(t, 5)
    open_row(t, TITLES, "Charlie project", "sess-charlie")
    t.press("r")
    t.wait_for("Rename session sess-charlie")
    t.wait_for("will be saved as: Charlie project")  # the current title was loaded into the field
    t.press("ctrl+u")
    t.type("Renamed in a real terminal")
    t.wait_for("will be saved as: Renamed in a real terminal")
    t.press("enter")
    t.wait_gone("Rename session sess-charlie")
    t.wait_until(
        lambda: list_row(t, "Renamed in a real terminal") is not None, what="the new title in the list"
    )
    t.press("q")
    assert t.wait_exit() == 0
    db = peer_db()
    assert db.call("get_session_title", "sess-charlie") == "Renamed in a real terminal"
    assert db.call("get_session_title", "sess-bravo") == "Bravo project"


def test_multi_select_delete_removes_exactly_the_marked(
    peer_db: Callable[..., PeerDB], term, db_path: Path
) -> None:
    five_sessions(peer_db())
    t = term("--db", db_path)
    wait_ready(t, 5)
    open_row(t, TITLES, "Delta project", "sess-delta")
    t.press("space")
    t.wait_for("1 selected")
    t.press("space")
    t.wait_for("2 selected")
    t.press("D")
    t.wait_for("will be deleted")
    dialog = t.box_text("will be deleted")
    assert "sess-delta" in dialog and "sess-charlie" in dialog
    assert "2 sessions" in dialog
    t.click_text("Delete", box="sessions selected?")  # the dialog title
    t.wait_for(re.compile(r"Sessions 3\b"))
    t.press("q")
    assert t.wait_exit() == 0
    db = peer_db()
    left = [r[0] for r in db.sql("SELECT id FROM sessions ORDER BY id")]
    assert left == ["sess-alpha", "sess-bravo", "sess-echo"]
    assert db.sql("SELECT COUNT(*) FROM messages WHERE session_id IN ('sess-delta', 'sess-charlie')") == [[0]]
    assert db.sql("PRAGMA integrity_check") == [["ok"]]


def test_export_writes_the_session(peer_db: Callable[..., PeerDB], term, db_path: Path, home: Path) -> None:
    five_sessions(peer_db())
    t = term("--db", db_path)
    wait_ready(t, 5)
    open_row(t, TITLES, "Bravo project", "sess-bravo")
    before = set(home.iterdir())
    t.press("e")
    t.wait_for("Export — session sess-bravo")
    t.press("enter")
    t.wait_for("Exported to")
    t.press("q")
    assert t.wait_exit() == 0
    new = sorted(set(home.iterdir()) - before)
    assert len(new) == 1 and new[0].suffix == ".json", new
    text = new[0].read_text(encoding="utf-8")
    assert "sess-bravo" in text and "bravo message 1 lorem ipsum" in text and "Bravo project" in text
    assert "sess-alpha" not in text


def test_prune_defaults_delete_exactly_the_old_sessions_and_the_owner_keeps_writing(
    peer_db: Callable[..., PeerDB], term, db_path: Path
) -> None:
    owner = peer_db()  # hermes-agent keeps the store open the whole time, as a live agent does
    old = [
        SessionSpec(
            id=f"old-{c}",
            title=f"Old work {c}",
            age_days=120,
            messages=[("user", f"ancient question {c}"), ("assistant", "ancient answer")],
        )
        for c in "abc"
    ]
    recent = [
        SessionSpec(
            id=f"new-{c}", title=f"New work {c}", offset_s=600, messages=[("user", f"fresh question {c}")]
        )
        for c in "ab"
    ]
    still_open = SessionSpec(
        id="new-open", title="Open work", ended=False, messages=[("user", "in progress")]
    )
    write_sessions(owner, old + recent + [still_open])
    t = term("--db", db_path)
    wait_ready(t, 6)
    t.press("P")
    t.wait_for("Prune ended sessions")
    t.wait_for("3 sessions")
    preview = t.box_text("Prune ended sessions")
    for spec in old:
        assert re.search(rf"{spec.id}\s+{spec.title}", preview), preview
    for spec in [*recent, still_open]:
        assert spec.id not in preview, preview
    t.click_text("Delete", box="Prune ended sessions")
    t.wait_gone("Prune ended sessions")
    t.wait_for(re.compile(r"Sessions 3\b"))
    t.press("q")
    assert t.wait_exit() == 0
    ids = [r[0] for r in owner.sql("SELECT id FROM sessions ORDER BY id")]
    assert ids == ["new-a", "new-b", "new-open"]
    assert owner.sql("SELECT COUNT(*) FROM messages WHERE session_id LIKE 'old-%'") == [[0]]
    # the owner goes on writing to the same connection it held through the prune
    owner.call("append_message", "new-open", "assistant", content="written after the prune by the owner")
    assert owner.call("get_session", "new-open")["message_count"] == 2
    assert [m["session_id"] for m in owner.call("search_messages", "ancient")] == []
    assert [m["session_id"] for m in owner.call("search_messages", "prune")] == ["new-open"]
    assert owner.sql("PRAGMA integrity_check") == [["ok"]]
    owner.sql("INSERT INTO messages_fts(messages_fts) VALUES('integrity-check')", write=True)
    owner.close()


def test_read_only_refuses_writes_and_leaves_the_file_identical(
    peer_db: Callable[..., PeerDB], term, db_path: Path
) -> None:
    five_sessions(peer_db())
    before = db_path.read_bytes()
    stat = db_path.stat()
    t = term("--db", db_path, "--read-only")
    wait_ready(t, 5)
    assert "read-only" in t.screen_text()
    open_row(t, TITLES, "Delta project", "sess-delta")
    for key, what, dialog in (
        ("r", "rename", "Rename session"),
        ("D", "delete", "will be deleted"),
        ("P", "prune", "Prune ended sessions"),
    ):
        t.press(key)
        t.wait_for(re.compile(rf"{what}\s+refused"))
        assert dialog not in t.screen_text()
    t.press("space")  # a selection does not get a delete through either
    t.wait_for("1 selected")
    t.press("D")
    t.wait_until(
        lambda: len(re.findall(r"delete\s+refused", t.screen_text())) >= 2 or t.has("will be deleted"),
        what="a second refusal",
    )
    assert "will be deleted" not in t.screen_text()
    t.press("q")
    assert t.wait_exit() == 0
    assert db_path.read_bytes() == before
    assert db_path.stat().st_mtime_ns == stat.st_mtime_ns


def _bad_file(kind: str, path: Path) -> None:
    if kind == "zero-byte":
        path.write_bytes(b"")
    elif kind == "text":
        path.write_text("these are notes, not a database\n" * 40, encoding="utf-8")
    else:
        path.mkdir()


#: What a clear screen about the file says (any of these), and what it must never show.
CLEAR = re.compile(
    r"(?i)could not be opened|cannot open|not an? (sqlite|hermes|session)|empty|is a directory"
)
RAW_ERRORS = re.compile(r"Traceback|no such table|File \"|vNone|SQLError")


@pytest.mark.parametrize("kind", ["zero-byte", "text", "directory"])
def test_a_file_that_is_not_a_store_gets_a_clear_screen_and_is_untouched(
    term, tmp_path: Path, kind: str
) -> None:
    folder = tmp_path / "data"
    folder.mkdir()
    path = folder / "state.db"
    _bad_file(kind, path)
    stat = path.stat()
    content = None if kind == "directory" else path.read_bytes()
    t = term("--db", path)
    t.wait_until(
        lambda: bool(CLEAR.search(t.screen_text()) or RAW_ERRORS.search(t.screen_text())),
        what="a message about the file",
    )
    screen = t.screen_text()
    assert CLEAR.search(screen) and "state.db" in screen, screen
    assert not RAW_ERRORS.search(screen), screen
    t.press("q")
    assert t.wait_exit() == 0
    assert b"Traceback" not in bytes(t.raw)
    assert sorted(p.name for p in folder.iterdir()) == ["state.db"], "no -wal, -shm or -journal"
    after = path.stat()
    assert (after.st_size, after.st_mtime_ns) == (stat.st_size, stat.st_mtime_ns)
    if content is not None:
        assert path.read_bytes() == content
