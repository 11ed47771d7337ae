"""The search pane over many hits: the total (exact or a stated bound), pages loaded as the user
moves down, `n`/`N` across pages, and leaving search clears the transcript's hit marker."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import OptionList

from hermes_tui.app.screens.main import MainScreen
from hermes_tui.app.widgets import search as search_mod
from hermes_tui.app.widgets.search import RESULT_LIMIT, SearchPane, route_words
from hermes_tui.app.widgets.transcript_pane import Transcript
from hermes_tui.state import SessionDB

from ._support import DEMO_BASE, any_match_drawn, drawn_as_match, make_app, settle

HITS = 2 * RESULT_LIMIT + 7  # three pages: 25 + 25 + 7


@pytest.fixture
def many_hits(tmp_path: Path) -> Path:
    """A store with `HITS` messages containing "needle" over three sessions, and noise."""
    path = tmp_path / "state.db"
    with SessionDB(path) as db:
        for s in range(3):
            sid = f"sess-{s}"
            db.create_session(sid, "cli", model="m")
            db.set_session_title(sid, f"Haystack {s}")
        for i in range(HITS):
            sid = f"sess-{i % 3}"
            db.append_message(sid, "user", f"needle number {i}", timestamp=DEMO_BASE + i)
            db.append_message(sid, "assistant", f"plain reply {i}", timestamp=DEMO_BASE + i + 0.5)
    return path


def main_of(app) -> MainScreen:  # type: ignore[no-untyped-def]
    screen = app.screen
    assert isinstance(screen, MainScreen)
    return screen


def expected_ids(path: Path, query: str, sort: str = "newest") -> list[int]:
    with SessionDB(path, read_only=True, migrate=False) as db:
        return [r["id"] for r in db.search(query, limit=1000, sort=sort).results]


def status_of(main: MainScreen) -> str:
    return str(main.query_one("#search-status").render())


async def test_total_shown_and_pages_load_as_the_highlight_moves_down(many_hits: Path) -> None:
    want = expected_ids(many_hits, "needle")
    assert len(want) == HITS
    app = make_app(many_hits)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        main = main_of(app)
        await pilot.press("slash", *"needle")
        await settle(pilot)
        search = main.query_one("#search", SearchPane)
        assert len(search.hits) == RESULT_LIMIT
        assert search.total == HITS and search.total_exact
        assert f"{RESULT_LIMIT} of {HITS} hits" in status_of(main)
        assert route_words("fts5") in status_of(main)
        await pilot.press("down")  # into the result list
        results = main.query_one("#search-results", OptionList)
        assert app.focused is results
        await pilot.press("end")  # the last loaded hit: the next page comes
        await settle(pilot)
        assert len(search.hits) == 2 * RESULT_LIMIT
        await pilot.press("end")
        await settle(pilot)
        assert [h["id"] for h in search.hits] == want  # every hit, in order, no duplicates
        assert search.exhausted
        assert results.option_count == HITS
        assert f"{HITS} hits" in status_of(main)


async def test_scrolling_to_the_bottom_loads_the_next_page(many_hits: Path) -> None:
    app = make_app(many_hits)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        main = main_of(app)
        await pilot.press("slash", *"needle")
        await settle(pilot)
        search = main.query_one("#search", SearchPane)
        results = main.query_one("#search-results", OptionList)
        assert len(search.hits) == RESULT_LIMIT
        results.scroll_end(animate=False, immediate=True)
        await settle(pilot)
        assert len(search.hits) == 2 * RESULT_LIMIT
        assert results.highlighted == 0  # scrolling does not move the highlight


async def test_n_walks_past_the_first_page_and_esc_clears_the_hit_marker(many_hits: Path) -> None:
    want = expected_ids(many_hits, "needle")
    app = make_app(many_hits)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        main = main_of(app)
        await pilot.press("slash", *"needle")
        await settle(pilot)
        search = main.query_one("#search", SearchPane)
        transcript = main.query_one("#transcript", Transcript)
        search.choose(RESULT_LIMIT - 1)  # the last hit of the first page
        await settle(pilot)
        assert transcript.target_id == want[RESULT_LIMIT - 1]
        await pilot.press("n")  # past the loaded hits: fetch the next page, open its first hit
        await settle(pilot)
        assert transcript.target_id == want[RESULT_LIMIT]
        assert search.highlighted == RESULT_LIMIT
        assert f"hit {RESULT_LIMIT + 1}/{HITS}" in str(transcript.border_subtitle)
        assert drawn_as_match(transcript, want[RESULT_LIMIT])
        await pilot.press("N")
        await settle(pilot)
        assert transcript.target_id == want[RESULT_LIMIT - 1]
        # Esc: transcript → results; Esc again leaves search
        await pilot.press("escape")
        await settle(pilot)
        assert main.has_class("-searching")
        await pilot.press("escape")
        await settle(pilot)
        assert not main.has_class("-searching")
        assert transcript.target_id is None
        assert not any_match_drawn(transcript)
        assert "hit " not in str(transcript.border_subtitle)


async def test_n_wraps_only_once_every_hit_is_loaded(many_hits: Path) -> None:
    want = expected_ids(many_hits, "needle")
    app = make_app(many_hits)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        main = main_of(app)
        await pilot.press("slash", *"needle")
        await settle(pilot)
        search = main.query_one("#search", SearchPane)
        transcript = main.query_one("#transcript", Transcript)
        search.choose(0)
        await settle(pilot)
        await pilot.press("N")  # on the first hit with more pages unloaded: stays
        await settle(pilot)
        assert transcript.target_id == want[0]
        for _ in range(HITS - 1):
            search.step(+1)
            await settle(pilot, rounds=1)
        assert transcript.target_id == want[-1]
        assert search.exhausted
        await pilot.press("n")
        await settle(pilot)
        assert transcript.target_id == want[0]  # wrapped
        await pilot.press("N")
        await settle(pilot)
        assert transcript.target_id == want[-1]


async def test_count_bound_is_stated(many_hits: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the cap the total reads "≥cap", never a made-up exact number."""
    monkeypatch.setattr(search_mod, "COUNT_CAP", 30)
    app = make_app(many_hits)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        main = main_of(app)
        await pilot.press("slash", *"needle")
        await settle(pilot)
        search = main.query_one("#search", SearchPane)
        assert (search.total, search.total_exact) == (30, False)
        assert f"{RESULT_LIMIT} of ≥30 hits" in status_of(main)


async def test_filters_reach_the_count(many_hits: Path) -> None:
    """The total counts what the pages show: a role filter that leaves no hit says so."""
    app = make_app(many_hits)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        main = main_of(app)
        await pilot.press("slash", *"reply")
        await settle(pilot)
        search = main.query_one("#search", SearchPane)
        assert search.total == HITS
        from textual.widgets import Select

        main.query_one("#search-role", Select).value = "user"
        await settle(pilot)
        assert search.hits == [] and search.total == 0
        assert "no hits" in status_of(main)


async def test_o_cycles_the_result_order_from_the_list(many_hits: Path) -> None:
    app = make_app(many_hits)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        main = main_of(app)
        await pilot.press("slash", *"needle")
        await settle(pilot)
        search = main.query_one("#search", SearchPane)
        await pilot.press("down", "o")
        await settle(pilot)
        assert search.shown is not None and search.shown.sort == "rank"
        assert search.query_one("#search-input").value == "needle"  # `o` was a key, not typed
        await pilot.press("o")
        await settle(pilot)
        assert search.shown is not None and search.shown.sort == "oldest"
        assert [h["id"] for h in search.hits] == expected_ids(many_hits, "needle", "oldest")[:RESULT_LIMIT]


async def test_a_substring_scan_while_the_cjk_index_builds_says_how_far_it_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a store whose CJK side index is not built yet, a CJK search is a substring scan (minutes
    at 10M messages): the status line says so while it runs and how far the index is after."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    path = tmp_path / "state.db"
    with SessionDB(path) as db:
        db.create_session("s", "cli")
        for i in range(40):
            db.append_message("s", "user", f"密码 message {i}", timestamp=DEMO_BASE + i)
    app = make_app(path)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        main = main_of(app)
        search = main.query_one("#search", SearchPane)
        progress = search.index_progress
        assert progress is not None
        asked: list[tuple[str, object]] = []
        search.index_progress = lambda q: asked.append((q, got := progress(q))) or got  # type: ignore[func-returns-value]
        await pilot.press("slash", "密")  # one character: the side index's to answer
        await settle(pilot)
        assert asked == [("密", (0, 40))]  # nothing indexed of the 40 messages
        assert search.route == "like_scan" and len(search.hits) == RESULT_LIMIT
        assert "CJK index 0% built" in status_of(main)
        # While the scan runs (the worker posts this first), the status says why it may take long.
        search.post_message(SearchPane.Building(search.current_request(), (25, 100)))
        await pilot.pause()
        assert "CJK index 25% built" in status_of(main) and "reads every message" in status_of(main)


async def test_a_partly_built_cjk_index_answers_with_a_scan_of_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once part of the side index is built, a CJK search reads only the messages it does not
    hold yet: the status names both and says how far the index is."""
    import hermes_tui.state.search.side as store_search
    import hermes_tui.state.side_index as side_index

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(side_index, "BATCH", 10)
    monkeypatch.setattr(store_search, "MAX_INLINE_LAG", 0)
    monkeypatch.setattr(side_index.SideIndex, "build_in_background", lambda self, open_source: None)
    path = tmp_path / "state.db"
    with SessionDB(path) as db:
        db.create_session("s", "cli")
        for i in range(40):
            db.append_message("s", "user", f"密码 message {i}", timestamp=DEMO_BASE + i)
        assert db._side().sync(db._conn(), limit_rows=10) == 10
    app = make_app(path)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        main = main_of(app)
        search = main.query_one("#search", SearchPane)
        await pilot.press("slash", "密")
        await settle(pilot)
        assert search.route == "cjk_side_partial" and len(search.hits) == RESULT_LIMIT
        assert [h["id"] for h in search.hits][:3] == [40, 39, 38]  # newest first, from the scan
        status = status_of(main)
        assert route_words("cjk_side_partial") in status and "CJK index 25% built" in status
