"""Pilot tests of the main screen for a keyboard user: startup keys, visible filters, per-pane
footer, the header at 80×24 and the clear screens for files that are not Hermes stores."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from textual import events
from textual.widgets import Input

import hermes_tui.app.prefetch as prefetch_mod
from hermes_tui.app.screens.main import MainScreen
from hermes_tui.app.widgets.search import SearchPane
from hermes_tui.app.widgets.session_list import SessionList
from hermes_tui.app.widgets.transcript_pane import Transcript
from hermes_tui.state import SessionDB

from ._support import make_app, settle


def main_of(app) -> MainScreen:  # type: ignore[no-untyped-def]
    screen = app.screen
    assert isinstance(screen, MainScreen)
    return screen


@pytest.fixture
def slow_open(monkeypatch: pytest.MonkeyPatch) -> Iterator[threading.Event]:
    """Every open of a store (the prefetch thread's and the screen worker's) waits for the event."""
    gate = threading.Event()
    real = prefetch_mod.open_store

    def gated(path: Path, read_only: bool):  # type: ignore[no-untyped-def]
        gate.wait(10)
        return real(path, read_only)

    monkeypatch.setattr(prefetch_mod, "open_store", gated)
    monkeypatch.setattr("hermes_tui.app.controllers.opening.open_store", gated)
    yield gate
    gate.set()


# ---------------------------------------------------------------------------------------- startup
async def test_slash_then_q_while_opening_types_into_search(
    demo_db: Path, slow_open: threading.Event
) -> None:
    """`/` then `q` before the store has opened: the search box shows and gets the `q`; the app
    does not quit. Once the open finishes, the typed query runs."""
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        main = main_of(app)
        assert main.db is None and main.state == "opening"
        await pilot.press("slash", "q")
        await pilot.pause()
        assert app.is_running
        search = main.query_one("#search", SearchPane)
        field = search.query_one("#search-input", Input)
        assert main.has_class("-searching") and field.display
        assert app.focused is field
        assert field.value == "q"
        slow_open.set()
        await settle(pilot, rounds=3)
        assert main.state == "ready"
        assert search.shown is not None and search.shown.query == "q"
        assert app.is_running


async def test_keys_queued_together_go_to_the_search_box(demo_db: Path) -> None:
    """`/` and the next keys arriving in one read (before Textual's deferred focus lands) still
    go to the search box: nothing reaches the app's `q` (quit) or `?` (help)."""
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        main = main_of(app)
        driver = app._driver
        assert driver is not None
        for key, char in (("slash", "/"), ("q", "q"), ("question_mark", "?"), ("x", "x")):
            event = events.Key(key, char)
            event.set_sender(app)
            driver.send_message(event)
        await settle(pilot)
        assert app.is_running
        assert isinstance(app.screen, MainScreen)  # no help screen either
        field = main.query_one("#search-input", Input)
        assert field.value == "q?x"
        assert app.focused is field


async def test_q_from_search_results_does_not_quit(demo_db: Path) -> None:
    """While the search pane is shown, printable keys never reach the app's single-letter keys:
    from the result list they go back into the query."""
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        main = main_of(app)
        await pilot.press("slash", *"postgres")
        await settle(pilot)
        await pilot.press("down")
        await pilot.pause()
        assert app.focused is main.query_one("#search-results")
        await pilot.press("q")
        await settle(pilot)
        assert app.is_running
        field = main.query_one("#search-input", Input)
        assert field.value == "postgresq"
        assert app.focused is field
        await pilot.press("escape")  # closes search; now q quits
        await pilot.pause()
        assert not main.has_class("-searching")
        await pilot.press("q")
        await pilot.pause()
        assert not app.is_running


# ---------------------------------------------------------------------------------- bad --db files
def _bad_file(tmp_path: Path, kind: str) -> Path:
    """A zero-byte file, a text file, a directory, or another application's SQLite database."""
    path = tmp_path / "bad" / f"{kind}.db"
    path.parent.mkdir()
    if kind == "zero":
        path.write_bytes(b"")
    elif kind == "text":
        path.write_text("just some notes\nnot a database\n")
    elif kind == "directory":
        path.mkdir()
    else:  # another program's SQLite file, written by the stdlib in a subprocess (never in-process)
        import subprocess
        import sys

        code = (
            "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); "
            "c.execute('CREATE TABLE notes(id INTEGER PRIMARY KEY, body TEXT)'); "
            "c.execute(\"INSERT INTO notes(body) VALUES ('hello')\"); c.commit(); c.close()"
        )
        subprocess.run([sys.executable, "-c", code, str(path)], check=True)
    return path


def _snapshot(path: Path) -> tuple[object, ...]:
    if path.is_dir():
        return ("dir", sorted(p.name for p in path.iterdir()), path.stat().st_mtime_ns)
    return (path.read_bytes(), path.stat().st_size, path.stat().st_mtime_ns)


@pytest.mark.parametrize(
    ("kind", "words"),
    [
        ("zero", "empty"),
        ("text", "not an sqlite database"),
        ("directory", "directory"),
        ("foreign", "not a hermes"),
    ],
)
async def test_bad_db_shows_a_clear_screen_and_writes_nothing(tmp_path: Path, kind: str, words: str) -> None:
    path = _bad_file(tmp_path, kind)
    before = _snapshot(path)
    siblings = sorted(p.name for p in path.parent.iterdir())
    app = make_app(path)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        main = main_of(app)
        assert main.state == "failed"
        notice = main.query_one("#notice")
        assert notice.display and not main.query_one("#body").display
        text = str(notice.render()).lower()
        assert words in text, text
        assert "nothing was changed" in text and "press d" in text
        header = str(main.query_one("#info").render())
        assert "cannot open" in header
        assert "None" not in header and "None" not in text  # never "schema vNone"
        assert not any(n.severity == "error" for n in app._notifications)  # no SQL error toast
        footer_keys = set(main.active_bindings)
        assert "d" in footer_keys and main.active_bindings["d"].binding.show
        await pilot.press("down", "slash", "x", "enter", "c", "n")  # nothing here may open it
        await settle(pilot)
        assert main.state == "failed"
    assert _snapshot(path) == before
    assert sorted(p.name for p in path.parent.iterdir()) == siblings  # no -wal, -shm, -journal


async def test_bad_db_then_demo_key_opens_the_demo(tmp_path: Path) -> None:
    path = _bad_file(tmp_path, "text")
    app = make_app(path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        main = main_of(app)
        assert main.state == "failed"
        await pilot.press("d")
        await settle(pilot, rounds=8)
        assert main.state == "ready"
        assert not main.query_one("#notice").display and main.query_one("#body").display
        assert main.session_list.total > 20


# ----------------------------------------------------------------------------------------- filters
def _store_ids(path: Path) -> list[str]:
    from hermes_tui.state import SessionFilter

    with SessionDB(path, read_only=True, migrate=False) as db:
        return list(db.session_order(SessionFilter()).ids)


async def test_active_filter_is_visible_and_an_empty_result_says_how_to_clear_it(demo_db: Path) -> None:
    total = len(_store_ids(demo_db))
    app = make_app(demo_db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        main = main_of(app)
        sessions = main.query_one("#sessions", SessionList)
        assert sessions.border_title == f"Sessions {total}"
        assert "F" not in main.active_bindings  # nothing to clear
        await pilot.press("f")
        main.query_one("#filter-text", Input).value = "zzzq"
        await settle(pilot)
        await pilot.press("escape")  # the filter bar closes; the filter stays and stays visible
        await settle(pilot)
        assert not main.has_class("-filters")
        assert app.focused is sessions
        assert sessions.total == 0
        assert str(sessions.border_title) == f"0 of {total} · filter: title~zzzq"
        assert "title~zzzq" in sessions.empty_text and "Press F" in sessions.empty_text
        assert f"0 of {total} sessions" in str(main.query_one("#info").render())
        note = main.query_one("#transcript", Transcript).window_text()  # (its note, drawn)
        assert "Press F" in note
        assert main.active_bindings["F"].binding.show  # the footer offers the way out
        await pilot.press("F")
        await settle(pilot)
        assert sessions.total == total
        assert sessions.border_title == f"Sessions {total}"
        assert main.query_one("#filter-text", Input).value == ""
        assert "F" not in main.active_bindings


async def test_empty_store_says_it_is_empty_not_filtered(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    SessionDB(path).close()
    app = make_app(path)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        main = main_of(app)
        sessions = main.query_one("#sessions", SessionList)
        assert sessions.empty_text == "This database has no sessions yet."
        assert "filter" not in str(sessions.border_title)


# ------------------------------------------------------------------------------ footer and header
def _shown_keys(app) -> set[str]:  # type: ignore[no-untyped-def]
    return {k for k, b in app.screen.active_bindings.items() if b.binding.show}


async def test_footer_follows_the_focused_pane(demo_db: Path) -> None:
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        main = main_of(app)
        assert isinstance(app.focused, SessionList)
        keys = _shown_keys(app)
        assert {"enter", "space", "r", "D", "slash", "f"} <= keys
        assert not keys & {"x", "n", "N", "c"}
        await pilot.press("enter")
        await settle(pilot)
        keys = _shown_keys(app)
        assert {"x", "c", "i", "slash"} <= keys
        assert not keys & {"space", "D", "n"}  # no hits outside search
        await pilot.press("s", "slash", *"postgres")  # `/` in the transcript finds in it
        await settle(pilot)
        keys = _shown_keys(app)  # caret in the box: letters type, so no letter keys shown
        assert "down" in keys and "escape" in keys
        assert not {k for k in keys if len(k) == 1}
        await pilot.press("down")
        keys = _shown_keys(app)
        assert {"n", "N", "o", "escape"} <= keys
        assert "q" not in keys and "question_mark" not in keys
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.focused, main.query_one("#transcript").__class__)
        assert {"n", "N", "x"} <= _shown_keys(app)


async def test_header_at_80x24_keeps_mode_and_count(demo_db: Path) -> None:
    total = len(_store_ids(demo_db))
    long_label = "~/" + "/".join(["very-long-folder-name"] * 6) + "/state.db"
    app = make_app(demo_db, path_label=long_label, read_only=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        main = main_of(app)
        header = str(main.query_one("#info").render())
        assert "read-only" in header
        assert f"{total} sessions" in header
        assert "state.db" in header  # the path is cut from the left: the file name stays
        assert len(header.rstrip()) <= 78
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        header = str(main_of(app).query_one("#info").render())
        assert "schema v23" in header and "read-write" in header and f"{total} sessions" in header
