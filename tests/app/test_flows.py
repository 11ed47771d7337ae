"""Pilot tests: one per user flow, over the seeded demo database (store state checked too)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from textual.widgets import Input, Select

from hermes_tui.app.screens.help import HelpScreen
from hermes_tui.app.screens.main import MainScreen
from hermes_tui.app.widgets.lineage import LineageTree
from hermes_tui.app.widgets.search import SearchPane, route_words
from hermes_tui.app.widgets.session_list import SessionList
from hermes_tui.app.widgets.transcript_items import MessageView
from hermes_tui.app.widgets.transcript_pane import Transcript
from hermes_tui.demo import fingerprint
from hermes_tui.state import SessionDB, SessionFilter

from ._support import make_app, settle


def store_order(path: Path, **kw: object) -> list[str]:
    with SessionDB(path, read_only=True, migrate=False) as db:
        return list(db.session_order(SessionFilter(**kw)).ids)  # type: ignore[arg-type]


def main_of(app) -> MainScreen:  # type: ignore[no-untyped-def]
    screen = app.screen
    assert isinstance(screen, MainScreen)
    return screen


async def test_navigate_list_and_open_transcript(demo_db: Path) -> None:
    expected = store_order(demo_db)
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        main = main_of(app)
        sessions = main.query_one("#sessions", SessionList)
        assert sessions.total == len(expected)
        assert main.current_session == expected[0]
        await pilot.press("down", "down")
        await settle(pilot)
        assert sessions.cursor == 2
        assert main.current_session == expected[2]
        await pilot.press("end")
        await settle(pilot)
        assert sessions.cursor == len(expected) - 1
        await pilot.press("home", "pagedown")
        await settle(pilot)
        # one page = visible rows minus the header (Hermes' list of the demo is about one page)
        assert sessions.cursor == min(sessions.size.height - 1, len(expected) - 1)
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.focused, Transcript)
        with SessionDB(demo_db, read_only=True, migrate=False) as db:
            messages = db.get_messages(main.current_session, include_inactive=True)
        transcript = main.query_one("#transcript", Transcript)
        assert [i.id for i in transcript.items] == [m["id"] for m in messages]


async def test_mouse_click_selects_row(demo_db: Path) -> None:
    expected = store_order(demo_db)
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        sessions = main_of(app).query_one("#sessions", SessionList)
        # row 0 of the widget is the border, 1 the column header, 2 the first session
        await pilot.click("#sessions", offset=(10, 5))
        await settle(pilot)
        assert sessions.cursor == 3
        assert main_of(app).current_session == expected[3]


async def test_search_open_hit_step_and_back_restores(demo_db: Path) -> None:
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        main = main_of(app)
        await pilot.press("slash", *"postgres")
        await settle(pilot)
        search = main.query_one("#search", SearchPane)
        assert search.shown is not None and search.shown.query == "postgres"
        with SessionDB(demo_db, read_only=True, migrate=False) as db:
            outcome = db.search("postgres", limit=50, sort="newest")  # the pane's default order
            ranked = db.search("postgres", limit=50)
        assert [h["id"] for h in search.hits] == [r["id"] for r in outcome.results]
        status = str(main.query_one("#search-status").render())
        assert f"{len(outcome.results)} hits" in status and route_words(outcome.route) in status
        main.query_one("#search-sort", Select).value = "rank"  # best match: bm25 order
        await settle(pilot)
        assert search.shown is not None and search.shown.sort == "rank"
        assert [h["id"] for h in search.hits] == [r["id"] for r in ranked.results]
        main.query_one("#search-sort", Select).value = "newest"
        await settle(pilot)
        assert len(search.hits) >= 3
        await pilot.press("down", "down", "enter")
        await settle(pilot)
        hit = search.hits[1]
        transcript = main.query_one("#transcript", Transcript)
        assert main.current_session == hit["session_id"]
        assert transcript.target_id == hit["id"]
        index = transcript.index_of(hit["id"])
        assert index is not None and "◆ match" in (transcript.item_text(index) or "")  # drawn as the match
        assert "postgres" in [t.lower() for t in transcript.terms]
        assert isinstance(app.focused, Transcript)
        await pilot.press("n")
        await settle(pilot)
        assert transcript.target_id == search.hits[2]["id"]
        await pilot.press("N", "N")
        await settle(pilot)
        assert transcript.target_id == search.hits[0]["id"]
        await pilot.press("escape")
        await settle(pilot)
        assert main.has_class("-searching")
        assert search.query_one("#search-input", Input).value == "postgres"
        assert search.highlighted == 0
        assert app.focused is search.query_one("#search-results")


async def test_search_stale_results_dropped(demo_db: Path) -> None:
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        main = main_of(app)
        await pilot.press("slash", *"kubectl")
        await settle(pilot)
        search = main.query_one("#search", SearchPane)
        from hermes_tui.app.widgets.search import SearchRequest, SearchResults

        # a late answer for an older query must not replace what is on screen
        search.post_message(SearchPane.Found(SearchResults(SearchRequest("kub"), [{"id": 1}], "fts5")))
        await settle(pilot)
        assert search.shown == SearchRequest("kubectl")
        assert all(h["id"] != 1 or h.get("session_id") for h in search.hits)


async def test_search_role_filter(demo_db: Path) -> None:
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        main = main_of(app)
        await pilot.press("slash", *"checklist")
        await settle(pilot)
        search = main.query_one("#search", SearchPane)
        assert {h["role"] for h in search.hits} - {"user"}  # both roles present before filtering
        main.query_one("#search-role", Select).value = "user"
        await settle(pilot)
        assert search.hits and {h["role"] for h in search.hits} == {"user"}


async def test_lineage_jump(demo_db: Path) -> None:
    with SessionDB(demo_db, read_only=True, migrate=False) as db:
        root = db.get_session_by_title("CI flakiness deep dive")
        assert root is not None
        lineage = db.get_lineage(root["id"])
    kids = {n["id"]: n["edge_kind"] for n in lineage["nodes"] if n["id"] != root["id"]}
    assert set(kids.values()) == {"branch", "delegate"}
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        main = main_of(app)
        main.open_session(root["id"])
        await settle(pilot)
        tree = main.query_one("#lineage", LineageTree)
        labels = [str(n.label) for n in tree.root.children[0].children]
        assert any("branch" in label for label in labels) and any("delegate" in label for label in labels)
        await pilot.press("l", "down")
        await settle(pilot)
        target = tree.cursor_session_id
        assert target in kids
        await pilot.press("enter")
        await settle(pilot)
        assert main.current_session == target


async def test_chain_reader_has_segment_dividers(demo_db: Path) -> None:
    with SessionDB(demo_db, read_only=True, migrate=False) as db:
        tip = db.get_session_by_title("Postgres upgrade runbook #3")
        assert tip is not None
        chain = [n for n in db.get_ancestors(tip["id"])]
        expected = [m["id"] for s in chain for m in db.get_messages(s["id"], include_inactive=True)]
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        main = main_of(app)
        main.open_session(tip["id"])
        await settle(pilot)
        await pilot.press("c")
        await settle(pilot)
        transcript = main.query_one("#transcript", Transcript)
        assert transcript.data is not None and transcript.data.chain
        from hermes_tui.app.widgets.transcript_items import Divider

        dividers = [i for i in transcript.items if isinstance(i, Divider)]
        assert [d.session_id for d in dividers] == [s["id"] for s in chain]
        assert [i.id for i in transcript.items if not isinstance(i, Divider)] == expected
        assert transcript.end < len(transcript.items)  # a first window; the rest on scrolling
        while transcript.end < len(transcript.items):
            transcript.grow("after")
        await settle(pilot)
        drawn = transcript.window_text()
        assert [drawn.count(f"segment {n}/3") for n in (1, 2, 3)] == [1, 1, 1]


async def test_filters_by_source_model_and_text(demo_db: Path) -> None:
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        main = main_of(app)
        sessions = main.query_one("#sessions", SessionList)
        await pilot.press("f")
        assert main.has_class("-filters")
        main.query_one("#filter-source", Select).value = "telegram"
        await settle(pilot)
        assert list(sessions._ids) == store_order(demo_db, sources=("telegram",))
        main.query_one("#filter-model", Select).value = "openai/gpt-5"
        await settle(pilot)
        both = store_order(demo_db, sources=("telegram",), models=("openai/gpt-5",))
        assert list(sessions._ids) == both and 0 < len(both) < sessions.total + 1
        main.query_one("#filter-source", Select).clear()
        main.query_one("#filter-model", Select).clear()
        main.query_one("#filter-text", Input).value = "runbook"
        await settle(pilot)
        assert list(sessions._ids) == store_order(demo_db, text="runbook")
        assert sessions.total == 1  # the runbook's compression chain, listed once as its tip


async def test_date_filter_uses_injected_clock(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    with SessionDB(path) as db:
        for i in range(3):
            db.create_session(f"s{i}", "cli")
            db.append_message(f"s{i}", "user", content=f"hello {i}")
    two_days_later = time.time() + 2 * 86400
    app = make_app(path, now=lambda: two_days_later)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        main = main_of(app)
        sessions = main.query_one("#sessions", SessionList)
        assert sessions.total == 3
        await pilot.press("f")
        main.query_one("#filter-date", Select).value = 1  # last 24 h: all started two "days" ago
        await settle(pilot)
        assert sessions.total == 0
        main.query_one("#filter-date", Select).value = 7
        await settle(pilot)
        assert sessions.total == 3


async def test_order_cycle(demo_db: Path) -> None:
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        main = main_of(app)
        await pilot.press("o")
        await settle(pilot)
        assert main.order == "started"
        with SessionDB(demo_db, read_only=True, migrate=False) as db:
            assert list(main.session_list._ids) == list(
                db.session_order(SessionFilter(), order="started").ids
            )


async def test_empty_database(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    SessionDB(path).close()
    app = make_app(path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        main = main_of(app)
        assert main.state == "ready"
        assert main.session_list.total == 0
        assert "no sessions" in main.query_one("#transcript", Transcript).window_text().lower()
        await pilot.press("down", "end", "enter", "slash", *"x")
        await settle(pilot)
        assert main.query_one("#search", SearchPane).hits == []


async def test_database_not_found_offers_demo(tmp_path: Path) -> None:
    missing = tmp_path / "nothing" / "state.db"
    app = make_app(missing)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        main = main_of(app)
        assert main.state == "missing"
        assert not missing.exists(), "the app must not create a database it was asked to open"
        note = str(main.query_one("#notice").render())
        assert "no session database" in note.lower() and "press d" in note.lower()
        await pilot.press("d")
        await settle(pilot, rounds=8)
        assert main.state == "ready"
        assert main.session_list.total > 20
        assert app.db_path.name.startswith("demo-state")
        assert Path.home() in app.db_path.parents  # cached under the (temp) XDG cache, not ~/.hermes
        assert not (Path.home() / ".hermes").exists()


async def test_corrupt_file_is_a_notification_not_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    path.write_bytes(b"this is not sqlite" * 500)
    before = path.read_bytes()
    app = make_app(path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        main = main_of(app)
        assert main.state == "failed"
        assert "not an sqlite database" in str(main.query_one("#notice").render()).lower()
        assert not any(n.severity == "error" for n in app._notifications)  # the screen says it
        await pilot.press("down", "slash", "enter", "c")
        await settle(pilot)
    assert path.read_bytes() == before


async def test_store_error_in_worker_becomes_notification(demo_db: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    def boom(self, ids):  # type: ignore[no-untyped-def]
        raise RuntimeError("disk I/O error")

    monkeypatch.setattr(SessionDB, "list_rows", boom)
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert app.is_running
        assert any("disk I/O error" in str(n.message) for n in app._notifications)


async def test_agent_markup_renders_literally(demo_db: Path) -> None:
    with SessionDB(demo_db, read_only=True, migrate=False) as db:
        row = db.get_session_by_title("Prompt template with [/INST] markers")
        assert row is not None
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        main = main_of(app)
        main.open_session(row["id"])
        await settle(pilot)
        rendered = app.export_screenshot()
        assert "[/INST]" in rendered.replace("&#160;", " ")
        assert "[bold]x[/bold]" in rendered.replace("&#160;", " ")


async def test_inactive_messages_toggle(demo_db: Path) -> None:
    with SessionDB(demo_db, read_only=True, migrate=False) as db:
        row = db.get_session_by_title("FTS5 tokenizers (rewound)")
        assert row is not None
        inactive = [m["id"] for m in db.get_messages(row["id"], include_inactive=True) if not m["active"]]
    assert inactive
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        main = main_of(app)
        main.open_session(row["id"])
        await settle(pilot)
        transcript = main.query_one("#transcript", Transcript)
        index = transcript.index_of(inactive[0])
        assert index is not None
        item = transcript.items[index]
        assert isinstance(item, MessageView) and item.fold == "inactive"
        assert not (transcript.item_text(index) or "").strip()  # folded away: no lines drawn
        await pilot.press("i")
        await pilot.pause()
        assert f"#{inactive[0]}" in (transcript.item_text(index) or "")


async def test_palette_jumps_to_session(demo_db: Path) -> None:
    with SessionDB(demo_db, read_only=True, migrate=False) as db:
        target = db.get_session_by_title("Kubernetes deploy rollback")
        assert target is not None
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+p", *"Kubern")
        await settle(pilot, rounds=4)
        await pilot.press("enter")
        await settle(pilot)
        main = main_of(app)
        assert main.current_session is not None
        with SessionDB(demo_db, read_only=True, migrate=False) as db:
            title = db.get_session(main.current_session)["title"]
        assert title.startswith("Kubernetes deploy rollback")


async def test_help_lists_every_binding(demo_db: Path) -> None:
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        from hermes_tui.app.screens.help import binding_rows

        described = {d for _s, _k, d in binding_rows(app.screen.sections)}
        for b in MainScreen.BINDINGS:
            assert b.description in described  # type: ignore[union-attr]
        await pilot.press("escape")
        assert isinstance(app.screen, MainScreen)


async def test_browsing_never_writes_and_sql_stays_off_the_loop(demo_db: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    before = fingerprint(demo_db)
    loop_thread = threading.get_ident()
    calls: list[tuple[str, bool]] = []
    for name in ("list_rows", "session_order", "get_messages", "get_lineage", "search", "capabilities"):
        original = getattr(SessionDB, name)

        def spy(self, *a, __name=name, __orig=original, **k):  # type: ignore[no-untyped-def]
            calls.append((__name, threading.get_ident() == loop_thread))
            return __orig(self, *a, **k)

        monkeypatch.setattr(SessionDB, name, spy)
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("down", "down", "enter", "c", "s", "slash", *"rust")
        await settle(pilot)
        await pilot.press("down", "enter", "n")
        await settle(pilot)
    assert {n for n, _ in calls} >= {"list_rows", "session_order", "get_messages", "get_lineage", "search"}
    assert not [n for n, on_loop in calls if on_loop], "SQL ran on the event loop"
    assert fingerprint(demo_db) == before


async def test_small_terminal_80x24(demo_db: Path) -> None:
    app = make_app(demo_db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        main = main_of(app)
        assert main.session_list.size.width >= 36
        assert main.query_one("#transcript").size.width >= 30
        await pilot.press("z")
        await pilot.pause()
        assert not main.query_one("#right").display


async def test_open_prefetch_orders_while_textual_starts(demo_db: Path) -> None:
    """The app opens and orders the store in a thread from its constructor; the screen uses that
    order and first page (no second `session_order`, no fetch of page 0) and shows the same list
    as a plain open would."""
    app = make_app(demo_db)
    assert app.prefetch is not None
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        main = main_of(app)
        sessions = main.query_one("#sessions", SessionList)
        with SessionDB(demo_db, read_only=True, migrate=False) as db:
            expected = db.session_order(SessionFilter()).ids
            first = db.list_rows(expected[:3])
        assert list(sessions._ids) == expected
        assert main.last_order_seconds == 0.0  # came from the prefetch
        assert sessions.page_fetches == 0  # page 0 was seeded
        assert [sessions.row_at(i)["id"] for i in range(3)] == [r["id"] for r in first]
        assert app.prefetch.take(demo_db, False) is None  # handed over once
        await pilot.press("o")  # another order: a normal worker query
        await settle(pilot)
        assert main.last_order_seconds > 0.0


async def test_no_prefetch_for_a_missing_file(tmp_path: Path) -> None:
    app = make_app(tmp_path / "nope.db")
    assert app.prefetch is None
