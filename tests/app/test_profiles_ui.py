"""The browser across every Hermes profile: Pilot tests on three stores in a temporary
`$HERMES_HOME` plus broken ones (a text file named state.db, a folder named state.db, a profile
without a store), and one store written by the real hermes-agent 0.19.0.

Ids repeat across stores on purpose (`s-shared` is in two of them): everything the UI passes
around must be `(profile, id)`.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Input, Static

from hermes_tui.app.app import HermesApp
from hermes_tui.app.screens.main import MainScreen
from hermes_tui.app.stores import BrowserStores, StoreChoice
from hermes_tui.app.widgets.search import SearchPane
from hermes_tui.app.widgets.session_list import PROFILE_TITLE_MIN, SessionList, layout_columns
from hermes_tui.app.widgets.transcript_pane import Transcript
from hermes_tui.state import SessionDB, SessionFilter
from tests._wait import WAIT_S, pilot_until
from tests.peer.conftest import peer_factory, peer_venv_python  # noqa: F401 - fixtures
from tests.peer.oracle import Peer

from ._profiles import T0, build_home, expected_order, federated_app, store_path
from ._support import FIXED_NOW, make_app, settle


def info_text(app: HermesApp) -> str:
    return str(app.screen.query_one("#info", Static).render())


def list_keys(sessions: SessionList) -> list[Any]:
    return [sessions.key_at(i) for i in range(sessions.total)]


async def six_listed(pilot: Any, app: HermesApp) -> tuple[MainScreen, SessionList]:
    """The main screen once the three good stores' six sessions are listed."""
    await settle(pilot, 3)
    screen = app.screen
    assert isinstance(screen, MainScreen)
    await pilot_until(pilot, lambda: screen.session_list.total == 6, "the six sessions listed")
    return screen, screen.session_list


# ---------------------------------------------------------------------- list, badges, columns
async def test_merged_list_profile_column_and_badges(tmp_path: Path) -> None:
    home = build_home(tmp_path / "hermes")
    app = federated_app(home)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot, 3)
        screen = app.screen
        assert isinstance(screen, MainScreen)
        sessions = screen.session_list
        await pilot_until(pilot, lambda: sessions.total == 6, "sessions.total == 6")
        # merged order equals sorting the union; ids that repeat across stores stay distinct
        assert list(sessions._ids) == expected_order(home)
        assert ("default", "s-shared") in list(sessions._ids) and ("work", "s-shared") in list(sessions._ids)
        # a profile column, and each row's profile drawn in it
        assert sessions.show_profile
        header = "".join(seg.text for seg in sessions.render_line(0))
        assert "Profile" in header
        first = "".join(seg.text for seg in sessions.render_line(1))
        assert "work" in first and "work three" in first
        # per-store error badges in the header; the others keep working
        info = info_text(app)
        assert "broken: not a database" in info
        assert "folder: unreadable" in info
        assert "fresh: missing" in info
        assert "default 2" in info and "work 3" in info and "zeta 1" in info


async def test_toggle_current_profile_and_all(tmp_path: Path) -> None:
    home = build_home(tmp_path / "hermes")
    app = federated_app(home)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot, 3)
        screen = app.screen
        assert isinstance(screen, MainScreen)
        sessions = screen.session_list
        await pilot_until(pilot, lambda: sessions.total == 6, "sessions.total == 6")
        await pilot.press("p")
        await pilot_until(pilot, lambda: sessions.total == 2, "sessions.total == 2")
        assert {k[0] for k in list_keys(sessions)} == {"default"}  # $HERMES_HOME's store
        assert not sessions.show_profile
        assert "profile=default" in (sessions.border_title or "")
        await pilot.press("p")
        await pilot_until(pilot, lambda: sessions.total == 6, "sessions.total == 6")
        assert sessions.show_profile


async def test_single_store_p_opens_every_profile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Started on one store, `p` opens every discovered profile beside it."""
    home = build_home(tmp_path / "hermes", broken=False)
    monkeypatch.setenv("HERMES_HOME", str(home))  # discovery's root
    app = make_app(home / "state.db")
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot, 3)
        screen = app.screen
        assert isinstance(screen, MainScreen)
        assert screen.stores is None and screen.session_list.total == 2
        await pilot.press("p")
        await pilot_until(pilot, lambda: screen.session_list.total == 6, "screen.session_list.total == 6")
        assert screen.stores is not None
        assert list(screen.session_list._ids) == expected_order(home)


async def test_transcript_and_rename_reach_the_owning_store(tmp_path: Path) -> None:
    home = build_home(tmp_path / "hermes")
    app = federated_app(home)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot, 3)
        screen = app.screen
        assert isinstance(screen, MainScreen)
        sessions = screen.session_list
        await pilot_until(pilot, lambda: sessions.total == 6, "sessions.total == 6")
        order = list(sessions._ids)
        target = order.index(("work", "s-shared"))
        sessions.cursor = target
        await settle(pilot, 2)
        assert (screen.current_profile, screen.current_session) == ("work", "s-shared")
        assert screen.db is not None and screen.db.db_path == store_path(home, "work")
        title = str(screen.query_one("#transcript-title", Static).render())
        assert "work shared beta" in title
        transcript = screen.query_one("#transcript", Transcript)
        assert transcript.data is not None
        texts = [getattr(i, "text", "") or str(getattr(i, "content", "")) for i in transcript.data.items]
        assert any("in work" in t for t in texts), texts
        # rename acts on the work store only; the default store's s-shared keeps its title
        sessions.focus()
        await pilot.press("r")
        await settle(pilot, 2)
        field = app.screen.query_one(Input)
        field.value = "renamed in work"
        await pilot.press("enter")
        await settle(pilot, 3)
    with SessionDB(store_path(home, "work"), read_only=True, migrate=False) as db:
        assert db.get_session_title("s-shared") == "renamed in work"
    with SessionDB(store_path(home, "default"), read_only=True, migrate=False) as db:
        assert db.get_session_title("s-shared") == "default shared alpha"


async def test_federated_search_hit_opens_the_right_store_and_back(tmp_path: Path) -> None:
    home = build_home(tmp_path / "hermes")
    app = federated_app(home)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot, 3)
        screen = app.screen
        assert isinstance(screen, MainScreen)
        await pilot_until(pilot, lambda: screen.session_list.total == 6, "screen.session_list.total == 6")
        await pilot.press("slash")
        for ch in "kestrel":
            await pilot.press(ch)
        search = screen.query_one("#search", SearchPane)
        await pilot_until(pilot, lambda: len(search.hits) == 4, "len(search.hits) == 4")
        # newest first, merged exactly across stores; each hit names its profile
        assert [(h["profile"], h["session_id"]) for h in search.hits] == [
            ("work", "w-3"),
            ("work", "s-shared"),
            ("default", "s-shared"),
            ("zeta", "z-1"),
        ]
        status = str(screen.query_one("#search-status", Static).render())
        assert "work 2" in status and "default 1" in status and "zeta 1" in status
        # n walks the hits; the third is default's s-shared: its transcript, not work's
        await pilot.press("down")
        await settle(pilot)
        await pilot.press("n", "n")
        await settle(pilot, 3)
        assert (screen.current_profile, screen.current_session) == ("default", "s-shared")
        transcript = screen.query_one("#transcript", Transcript)
        assert transcript.data is not None and transcript.data.session_id == "s-shared"
        texts = [str(getattr(i, "text", "")) for i in transcript.data.items]
        assert any("in default" in t for t in texts), texts
        # back: Esc returns to the hits, kept as they were
        transcript.focus()
        await pilot.press("escape")
        await settle(pilot)
        assert screen.has_class("-searching")
        assert len(search.hits) == 4


async def test_read_only_store_refuses_writes_alone(tmp_path: Path) -> None:
    home = build_home(tmp_path / "hermes", broken=False)
    app = federated_app(home)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot, 3)
        screen = app.screen
        assert isinstance(screen, MainScreen) and screen.stores is not None
        await pilot_until(pilot, lambda: screen.session_list.total == 6, "screen.session_list.total == 6")
        # the zeta store refuses writes (as one opened read-only because its file does)
        zeta = screen.stores.db_for("zeta")
        assert zeta is not None
        zeta.read_only = True  # type: ignore[misc]
        sessions = screen.session_list
        sessions.cursor = list(sessions._ids).index(("zeta", "z-1"))
        await settle(pilot, 2)
        sessions.focus()
        await pilot.press("r")
        await settle(pilot, 2)
        assert isinstance(app.screen, MainScreen)  # refused: no rename dialog
        sessions.cursor = list(sessions._ids).index(("work", "w-2"))
        await settle(pilot, 2)
        await pilot.press("r")
        await settle(pilot, 2)
        assert not isinstance(app.screen, MainScreen)  # the work store is writable


def test_layout_profile_column_only_when_asked() -> None:
    assert "profile" not in [c.key for c, _w in layout_columns(140)]
    assert "profile" in [c.key for c, _w in layout_columns(140, profile=True)]
    for width in (60, 80, 120, 200):
        cols = layout_columns(width, profile=True)
        assert sum(w for _c, w in cols) + len(cols) - 1 <= width


def test_merged_keys_match_sorted_union(tmp_path: Path) -> None:
    """The list's lazily merged keys (no Textual): peek never merges, slicing does."""
    home = build_home(tmp_path / "hermes")
    stores = BrowserStores.open(StoreChoice(all_profiles=True, home=home))
    try:
        assert {r.profile for r in stores.failed} == {"broken", "folder", "fresh"}
        result = stores.order(
            SessionFilter(),
            "last_active",
            None,
            ("zeta", "z-1"),
            first=1,
        )
        keys = result.keys
        assert len(keys) == 6
        assert result.keep_index == expected_order(home).index(("zeta", "z-1"))
        assert keys[:] == expected_order(home)
        assert [keys.peek(i) for i in range(6)] == expected_order(home)
        rows = stores.list_rows(keys[:3])
        assert [(r["profile"], r["id"]) for r in rows] == expected_order(home)[:3]
    finally:
        stores.close()


def test_a_new_query_does_not_wait_for_the_previous_ones(tmp_path: Path) -> None:
    """Each keystroke's search supersedes the last: what that one still runs on a store's
    search thread is stopped, so the new query is answered at once instead of queueing."""
    home = build_home(tmp_path / "hermes", broken=False)
    stores = BrowserStores.open(StoreChoice(all_profiles=True, home=home))
    started = threading.Event()

    def endless(db: SessionDB) -> Any:  # a superseded query that would never end by itself
        started.set()
        return (
            db._conn()
            .execute("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c")
            .fetchall()
        )

    try:
        stale = stores.fed.submit_search("work", endless)
        assert started.wait(10)
        got: list[Any] = []
        runner = threading.Thread(target=lambda: got.append(stores.searcher()("kestrel", limit=10)))
        runner.start()
        runner.join(10)
        assert not runner.is_alive(), "the new query waited for the superseded one"
        hits, _route = got[0]
        assert sorted((h["profile"], h["session_id"]) for h in hits) == [
            ("default", "s-shared"),
            ("work", "s-shared"),
            ("work", "w-3"),
            ("zeta", "z-1"),
        ]
        assert stale.exception(10) is not None  # interrupted
    finally:
        stores.fed.cancel_searches()
        stores.close()


def _prepare_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "hermes-prepare-search"]


def _recording_prepare(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """Record (store path, thread name) of every `SessionDB.prepare_search` call."""
    calls: list[tuple[str, str]] = []
    real = SessionDB.prepare_search

    def recording(db: SessionDB) -> None:
        calls.append((str(db.db_path), threading.current_thread().name))
        real(db)

    monkeypatch.setattr(SessionDB, "prepare_search", recording)
    return calls


def test_search_bounds_are_built_after_the_first_order_when_quiet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every store's one-time newest-first build (`prepare_search`) starts once the list's first
    order is handed over and the widgets are quiet, on a thread of its own, once per store: not
    in the open prefetch (first paint), and not inline in each store's first search (0.7 s at 1M
    messages, thrown away whenever the next keystroke cancels that search)."""
    from hermes_tui.app import stores as stores_module
    from hermes_tui.app.federated_prefetch import FederatedPrefetch

    monkeypatch.setattr(stores_module, "PREPARE_QUIET_S", 0.0)
    home = build_home(tmp_path / "hermes", broken=False)
    calls = _recording_prepare(monkeypatch)
    choice = StoreChoice(all_profiles=True, home=home)
    pre = FederatedPrefetch(choice, False, 50)
    got = pre.take(choice, False)
    assert got is not None
    stores = got.stores
    try:
        assert calls == [] and _prepare_threads() == []  # the prefetch: order and first page only
        first = stores.order(SessionFilter(), "last_active", None, None, first=10)
        assert list(first.keys) == expected_order(home)
        for t in _prepare_threads():
            t.join(10)
        expected = sorted(str(store_path(home, p)) for p in ("default", "work", "zeta"))
        assert sorted(path for path, _thread in calls) == expected
        assert {thread for _path, thread in calls} == {"hermes-prepare-search"}
        stores.order(SessionFilter(), "started", None, None, first=10)
        for t in _prepare_threads():
            t.join(10)
        assert len(calls) == 3  # once per store
    finally:
        stores.close()


def test_a_search_does_not_wait_for_quiet_to_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """While the list keeps reading, the builds wait; the first search starts them at once."""
    from hermes_tui.app import stores as stores_module

    monkeypatch.setattr(stores_module, "PREPARE_QUIET_S", 3600.0)
    home = build_home(tmp_path / "hermes", broken=False)
    calls = _recording_prepare(monkeypatch)
    stores = BrowserStores.open(StoreChoice(all_profiles=True, home=home))
    try:
        stores.order(SessionFilter(), "last_active", None, None, first=10)
        (thread,) = _prepare_threads()
        assert thread.is_alive() and calls == []  # waiting for an hour of quiet
        hits, _route = stores.searcher()("kestrel", limit=10)
        assert len(hits) == 4
        thread.join(10)
        assert not thread.is_alive()
        prepared = [path for path, name in calls if name == "hermes-prepare-search"]
        assert sorted(prepared) == sorted(str(store_path(home, p)) for p in ("default", "work", "zeta"))
    finally:
        stores.close()


def test_closing_stops_a_search_build_in_progress(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Closing the stores while a build still reads one of them aborts that read and builds
    no further store, so no thread is left using a closed connection."""
    home = build_home(tmp_path / "hermes", broken=False)
    started = threading.Event()
    entered: list[str] = []

    def endless(db: SessionDB) -> None:  # a build that would not end by itself
        entered.append(str(db.db_path))
        started.set()
        db._conn().execute(
            "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"
        ).fetchall()

    monkeypatch.setattr(SessionDB, "prepare_search", endless)
    stores = BrowserStores.open(StoreChoice(all_profiles=True, home=home))
    try:
        stores.prepare_search()
        assert started.wait(10)
        (thread,) = _prepare_threads()
    finally:
        stores.close()
    assert not thread.is_alive()
    assert len(entered) == 1


# ---------------------------------------------------------------------- the real hermes-agent
@pytest.mark.peer
async def test_store_written_by_hermes_agent(
    tmp_path: Path,
    peer_factory: Callable[..., Peer],  # noqa: F811
) -> None:
    home = build_home(tmp_path / "hermes", broken=False)
    peer_path = home / "profiles" / "agent" / "state.db"
    peer_path.parent.mkdir(parents=True)
    peer = peer_factory(peer_path)
    peer.call("create_session", "p-1", "cli", model="peer/model")
    peer.call("append_message", "p-1", "user", "kestrel from the real agent")
    peer.call("set_session_title", "p-1", "written by hermes-agent")
    peer.close()
    app = federated_app(home)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot, 3)
        screen = app.screen
        assert isinstance(screen, MainScreen)
        sessions = screen.session_list
        await pilot_until(pilot, lambda: sessions.total == 7, "sessions.total == 7")
        assert list(sessions._ids)[0] == ("agent", "p-1")  # written now: the newest
        await pilot.press("slash")
        for ch in "kestrel":
            await pilot.press(ch)
        search = screen.query_one("#search", SearchPane)
        await pilot_until(pilot, lambda: len(search.hits) == 5, "len(search.hits) == 5")
        assert (search.hits[0]["profile"], search.hits[0]["session_id"]) == ("agent", "p-1")


# ---------------------------------------------------------------------- #19: wide terminals
async def test_title_column_takes_the_spare_width(tmp_path: Path) -> None:
    """At 200 columns the transcript keeps a reading width and the list's title takes the rest
    (it was cut at 26 cells); at 120 the stylesheet's split stands; zoom still gives all."""
    home = build_home(tmp_path / "hermes", broken=False)

    def title_width(app: HermesApp) -> int:
        sessions = app.screen.query_one(SessionList)
        cols = layout_columns(sessions.scrollable_content_region.width)
        return next(w for c, w in cols if c.key == "title")

    app = make_app(home / "state.db")
    async with app.run_test(size=(200, 40)) as pilot:
        await settle(pilot, 2)
        assert title_width(app) >= 40
        right = app.screen.query_one("#right")
        assert 78 <= right.size.width <= 82
        await pilot.press("z")
        await settle(pilot)
        assert app.screen.query_one("#left").size.width == 200
        await pilot.press("z")
        await settle(pilot)
        assert title_width(app) >= 40
    app = make_app(home / "state.db")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, 2)
        assert app.screen.query_one("#left").size.width == round(120 * 0.52)


async def test_merged_list_follows_writes_to_any_store(tmp_path: Path) -> None:
    """Another connection writes a new session into one store: the merged list takes it in
    (no key pressed) and keeps the cursor on its row."""
    home = build_home(tmp_path / "hermes", broken=False)
    app = federated_app(home)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot, 3)
        screen = app.screen
        assert isinstance(screen, MainScreen)
        sessions = screen.session_list
        await pilot_until(pilot, lambda: sessions.total == 6, "sessions.total == 6")
        sessions.cursor = list(sessions._ids).index(("default", "d-2"))
        await settle(pilot)
        with SessionDB(store_path(home, "zeta"), migrate=False) as db:
            db.create_session("z-new", "cli")
            db.append_message("z-new", "user", "fresh", timestamp=FIXED_NOW - 60)
        await pilot_until(pilot, lambda: sessions.total == 7, "sessions.total == 7")
        assert sessions.key_at(0) == ("zeta", "z-new")
        assert sessions.selected_key == ("default", "d-2")
        assert "zeta 2" in info_text(app)


async def test_active_now_across_stores(tmp_path: Path) -> None:
    """`a` keeps, in the merged order, the sessions active now in every store."""
    home = build_home(tmp_path / "hermes", broken=False)
    for profile, sid, age in (("work", "w-live", 120), ("zeta", "z-live", 30)):
        with SessionDB(store_path(home, profile), migrate=False) as db:
            db.create_session(sid, "cli")
            db.append_message(sid, "user", "still going", timestamp=FIXED_NOW - age)
    app = federated_app(home)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot, 3)
        screen = app.screen
        assert isinstance(screen, MainScreen)
        sessions = screen.session_list
        await pilot_until(pilot, lambda: sessions.total == 8, "sessions.total == 8")
        await pilot.press("a")
        await pilot_until(pilot, lambda: sessions.total == 2, "sessions.total == 2")
        assert list_keys(sessions) == [("zeta", "z-live"), ("work", "w-live")]
        await pilot.press("a")
        await pilot_until(pilot, lambda: sessions.total == 8, "sessions.total == 8")


async def test_one_profile_then_p_widens_to_all(tmp_path: Path) -> None:
    """`--profile work`: one store; `p` opens every profile, `p` again narrows back to work."""
    home = build_home(tmp_path / "hermes")
    app = federated_app(home, StoreChoice(profiles=("work",), home=home))
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot, 3)
        screen = app.screen
        assert isinstance(screen, MainScreen)
        sessions = screen.session_list
        await pilot_until(pilot, lambda: sessions.total == 3, "sessions.total == 3")
        assert not sessions.show_profile and "broken" not in info_text(app)
        await pilot.press("p")
        await pilot_until(pilot, lambda: sessions.total == 6, "sessions.total == 6")
        assert sessions.show_profile and "broken: not a database" in info_text(app)
        await pilot.press("p")
        await pilot_until(pilot, lambda: sessions.total == 3, "sessions.total == 3")
        assert {k[0] for k in list_keys(sessions)} == {"work"}


def test_cli_flags_choose_the_stores(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """`--all`, `--profile NAME` (repeatable) and a repeated `--db` open several stores; one
    `--db` stays the one-store browser (with its open prefetch)."""
    from hermes_tui import cli

    seen: list[tuple[Any, Any]] = []

    def fake_run(self: HermesApp) -> None:
        seen.append((getattr(self, "store_choice", None), self.prefetch))

    monkeypatch.setattr(HermesApp, "run", fake_run)
    a, b = tmp_path / "a.db", tmp_path / "b.db"
    assert cli.main(["--all"]) == 0
    assert cli.main(["--profile", "work", "--profile", "zeta"]) == 0
    assert cli.main(["--db", str(a), "--db", str(b)]) == 0
    assert cli.main(["--db", str(a)]) == 0
    assert [choice for choice, _p in seen] == [
        StoreChoice(all_profiles=True),
        StoreChoice(profiles=("work", "zeta")),
        StoreChoice(paths=(a, b)),
        None,
    ]
    assert all(prefetch is None for choice, prefetch in seen if choice is not None)


async def test_open_transcript_follows_its_own_store(tmp_path: Path) -> None:
    """A message committed to the open session's store appears in its transcript; one written
    to the session with the same id in another store does not."""
    home = build_home(tmp_path / "hermes", broken=False)
    app = federated_app(home)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot, 3)
        screen = app.screen
        assert isinstance(screen, MainScreen)
        sessions = screen.session_list
        await pilot_until(pilot, lambda: sessions.total == 6, "sessions.total == 6")
        sessions.cursor = list(sessions._ids).index(("work", "s-shared"))
        await pilot_until(
            pilot,
            lambda: (screen.current_profile, screen.current_session) == ("work", "s-shared"),
            '(screen.current_profile, screen.current_session) == ("work", "s-shared")',
        )
        transcript = screen.query_one("#transcript", Transcript)

        def texts() -> str:
            assert transcript.data is not None
            return " ".join(str(getattr(i, "text", "")) for i in transcript.data.items)

        with SessionDB(store_path(home, "default"), migrate=False) as db:
            db.append_message("s-shared", "assistant", "written to the default store", timestamp=T0 + 70)
        with SessionDB(store_path(home, "work"), migrate=False) as db:
            db.append_message("s-shared", "assistant", "streamed into work", timestamp=T0 + 80)
        await pilot_until(pilot, lambda: "streamed into work" in texts(), '"streamed into work" in texts()')
        assert "written to the default store" not in texts()


def test_unknown_profile_is_a_missing_badge(tmp_path: Path) -> None:
    """`--profile nope work`: nope is a "missing" badge, work opens."""
    home = build_home(tmp_path / "hermes", broken=False)
    stores = BrowserStores.open(StoreChoice(profiles=("nope", "work"), home=home))
    try:
        assert stores.profiles == ["work"] and stores.current == "work"
        assert [(r.profile, str(r.status)) for r in stores.failed] == [("nope", "missing")]
    finally:
        stores.close()


# ---------------------------------------------------------------------- command palette
async def test_palette_jump_opens_a_session_of_another_profile(tmp_path: Path) -> None:
    """The palette's session lookup asks every open store, not only the selected row's, and a
    hit opens the session in its own store (ids repeat: `s-shared` is in default and work)."""
    from textual.command import CommandList

    from .test_palette import palette, plain

    home = build_home(tmp_path / "hermes", broken=False)
    app = federated_app(home)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot, 3)
        screen = app.screen
        assert isinstance(screen, MainScreen)
        sessions = screen.session_list
        await pilot_until(pilot, lambda: sessions.total == 6, "sessions.total == 6")
        sessions.cursor = list(sessions._ids).index(("default", "s-shared"))
        await pilot_until(
            pilot,
            lambda: (screen.current_profile, screen.current_session) == ("default", "s-shared"),
            '(screen.current_profile, screen.current_session) == ("default", "s-shared")',
        )
        # a title only the work store has; the selected row is in default
        hits = await palette(pilot, "work shared beta")
        opens = [h for h in hits if plain(h.match_display).startswith("Open: ")]
        assert [plain(h.match_display) for h in opens] == ["Open: work shared beta · work"]
        assert "work · s-shared · cli" in str(opens[0].help)
        app.screen.query_one(CommandList).highlighted = hits.index(opens[0])
        await pilot.press("enter")
        await pilot_until(
            pilot,
            lambda: (screen.current_profile, screen.current_session) == ("work", "s-shared"),
            '(screen.current_profile, screen.current_session) == ("work", "s-shared")',
        )
        assert sessions.selected_key == ("work", "s-shared")  # the list cursor follows it
        transcript = screen.query_one("#transcript", Transcript)
        assert transcript.data is not None
        texts = " ".join(str(getattr(i, "text", "")) for i in transcript.data.items)
        assert "in work" in texts and "in default" not in texts
        assert screen.db is not None and screen.db.db_path == store_path(home, "work")
        # an id in two stores: one hit per store, each opening its own
        hits = await palette(pilot, "s-shared")
        opens = {plain(h.match_display): h for h in hits if plain(h.match_display).startswith("Open: ")}
        assert set(opens) == {"Open: default shared alpha · default", "Open: work shared beta · work"}
        app.screen.query_one(CommandList).highlighted = hits.index(
            opens["Open: default shared alpha · default"]
        )
        await pilot.press("enter")
        await pilot_until(
            pilot,
            lambda: (screen.current_profile, screen.current_session) == ("default", "s-shared"),
            '(screen.current_profile, screen.current_session) == ("default", "s-shared")',
        )
        assert transcript.data is not None
        assert "in default" in " ".join(str(getattr(i, "text", "")) for i in transcript.data.items)


async def test_palette_lookup_keeps_to_the_profile_filter(tmp_path: Path) -> None:
    """Narrowed with `p` to the current profile, the lookup asks that store only (as the list
    and the search pane do); widened again, every store."""
    from .test_palette import palette, plain

    home = build_home(tmp_path / "hermes", broken=False)
    app = federated_app(home, StoreChoice(all_profiles=True, home=home, prefer="zeta"))
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot, 3)
        screen = app.screen
        assert isinstance(screen, MainScreen)
        await pilot_until(pilot, lambda: screen.session_list.total == 6, "screen.session_list.total == 6")
        await pilot.press("p")
        await pilot_until(pilot, lambda: screen.session_list.total == 1, "screen.session_list.total == 1")

        async def opened(query: str) -> list[str]:
            hits = await palette(pilot, query)
            await pilot.press("escape")
            await settle(pilot)
            return sorted(plain(h.match_display) for h in hits if plain(h.match_display).startswith("Open: "))

        assert await opened("work three") == []
        assert await opened("zeta one") == ["Open: zeta one · zeta"]
        await pilot.press("p")
        await pilot_until(pilot, lambda: screen.session_list.total == 6, "screen.session_list.total == 6")
        assert await opened("work three") == ["Open: work three · work"]


async def test_open_session_message_names_the_store(tmp_path: Path) -> None:
    """`OpenSession(profile=...)` opens the session in that store, not the open transcript's."""
    from hermes_tui.app.messages import OpenSession

    home = build_home(tmp_path / "hermes", broken=False)
    app = federated_app(home)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot, 3)
        screen = app.screen
        assert isinstance(screen, MainScreen)
        await pilot_until(pilot, lambda: screen.session_list.total == 6, "screen.session_list.total == 6")
        screen.open_session("s-shared", profile="default")
        await pilot_until(
            pilot,
            lambda: (screen.current_profile, screen.current_session) == ("default", "s-shared"),
            '(screen.current_profile, screen.current_session) == ("default", "s-shared")',
        )
        screen.post_message(OpenSession("s-shared", profile="work"))
        await pilot_until(
            pilot,
            lambda: (screen.current_profile, screen.current_session) == ("work", "s-shared"),
            '(screen.current_profile, screen.current_session) == ("work", "s-shared")',
        )
        assert screen.session_list.selected_key == ("work", "s-shared")
        # without a profile: the open transcript's store
        screen.post_message(OpenSession("w-2"))
        await pilot_until(
            pilot,
            lambda: (screen.current_profile, screen.current_session) == ("work", "w-2"),
            '(screen.current_profile, screen.current_session) == ("work", "w-2")',
        )


async def test_a_session_opened_while_the_list_re_merges_still_gets_the_cursor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A jump (palette, lineage, a search hit) looks the row up in a worker; if a live re-merge
    replaces the list's order before the answer arrives, the row is looked up again in the new
    order (the answer was dropped: the cursor stayed where it was, the transcript elsewhere)."""
    from hermes_tui.app.stores import MergedKeys

    home = build_home(tmp_path / "hermes", broken=False)
    app = federated_app(home)
    looking, answer = threading.Event(), threading.Event()
    real = MergedKeys.index_or_none

    def held(self: MergedKeys, key: Any) -> int | None:
        if threading.current_thread() is not threading.main_thread() and not looking.is_set():
            looking.set()  # the first look-up of the jump: held until the order has changed
            answer.wait(WAIT_S)
        return real(self, key)

    async with app.run_test(size=(140, 40)) as pilot:
        screen = app.screen
        assert isinstance(screen, MainScreen)
        sessions = screen.session_list
        await pilot_until(pilot, lambda: sessions.total == 6, "the six sessions listed")
        await settle(pilot, 3)
        monkeypatch.setattr(MergedKeys, "index_or_none", held)
        before = sessions._ids
        screen.open_session("w-2", profile="work")
        await pilot_until(pilot, looking.is_set, "the jump looks its row up")
        screen.live.refresh_order()  # a live re-merge meanwhile (a store changed)
        await pilot_until(pilot, lambda: sessions._ids is not before, "the re-merged order shown")
        answer.set()
        await pilot_until(pilot, lambda: sessions.selected_key == ("work", "w-2"), "the cursor on w-2")
        assert sessions.cursor == expected_order(home).index(("work", "w-2"))


async def test_open_session_finds_the_merged_row_off_the_event_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Finding a session's merged position reads the stores' orders (and may wait for a page
    being merged): it runs in a worker, and the cursor lands on the row when it is found."""
    from hermes_tui.app.stores import MergedKeys

    home = build_home(tmp_path / "hermes", broken=False)
    app = federated_app(home)
    threads: list[bool] = []
    real = MergedKeys.index_or_none

    def spy(self: MergedKeys, key: Any) -> int | None:
        threads.append(threading.current_thread() is threading.main_thread())
        return real(self, key)

    monkeypatch.setattr(MergedKeys, "index_or_none", spy)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot, 3)
        screen = app.screen
        assert isinstance(screen, MainScreen)
        await pilot_until(pilot, lambda: screen.session_list.total == 6, "screen.session_list.total == 6")
        threads.clear()
        for profile, sid in [("zeta", "z-1"), ("work", "w-2"), ("default", "d-2")]:
            screen.open_session(sid, profile=profile)
            await pilot_until(
                pilot,
                lambda p=profile, s=sid: screen.session_list.selected_key == (p, s),
                "screen.session_list.selected_key == (p, s)",
            )
            assert screen.session_list.cursor == expected_order(home).index((profile, sid))
        assert threads and not any(threads), "looked up on the event loop"


# ---------------------------------------------------------------------- opening ahead
async def test_first_paint_uses_the_stores_opened_while_textual_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`federate` opens the stores and merges the first page in the background: the screen
    takes them (one open of each store, not two) and draws the first page without a page read."""
    home = build_home(tmp_path / "hermes", broken=False)
    opens: list[str] = []
    real = BrowserStores.open.__func__  # type: ignore[attr-defined]

    def counting(
        cls: type[BrowserStores], choice: StoreChoice, read_only: bool = False, **kw: Any
    ) -> BrowserStores:
        opens.append(threading.current_thread().name)
        return real(cls, choice, read_only, **kw)

    monkeypatch.setattr(BrowserStores, "open", classmethod(counting))
    app = federated_app(home)
    assert app.stores_prefetch is not None
    async with app.run_test(size=(140, 40)) as pilot:
        screen = app.screen
        assert isinstance(screen, MainScreen)
        sessions = screen.session_list
        await pilot_until(
            pilot,
            lambda: sessions.total == 6 and sessions.row_at(5) is not None,
            "sessions.total == 6 and sessions.row_at(5) is not None",
        )
        assert [(r["profile"], r["id"]) for r in (sessions.row_at(i) for i in range(6)) if r] == (
            expected_order(home)
        )
        assert sessions.page_fetches == 0  # page 0 came with the order
        assert opens == ["hermes-open-stores"]
        assert app.stores_prefetch is None


def test_an_order_seeded_ahead_is_dropped_when_a_store_changed(tmp_path: Path) -> None:
    """The order merged ahead is used only while no store committed since it was read."""
    from hermes_tui.app.federated_prefetch import FederatedPrefetch

    home = build_home(tmp_path / "hermes", broken=False)
    choice = StoreChoice(all_profiles=True, home=home)
    pre = FederatedPrefetch(choice, False, 50)
    assert pre.take(StoreChoice(all_profiles=True, home=home, prefer="zeta"), False) is None  # not ours
    got = pre.take(choice, False)
    assert got is not None and pre.take(choice, False) is None  # handed over once
    assert sys.getswitchinterval() == pytest.approx(0.005)  # the default again once it is done
    stores = got.stores
    try:
        assert sorted(got.sources) == ["cli"]
        with SessionDB(store_path(home, "zeta")) as other:  # another connection commits
            other.create_session("z-new", "cli")
            other.append_message("z-new", "user", "newest of all", timestamp=T0 + 999)
        result = stores.order(SessionFilter(), "last_active", None, None, first=10)
        assert "first_rows" not in result.extra
        assert list(result.keys) == [("zeta", "z-new"), *expected_order(home)]
        # Unchanged stores: the seeded order (with its first rows) is what the first call gets.
        stores.seed_order(SessionFilter(), "last_active", result, stores.list_rows(list(result.keys)))
        again = stores.order(SessionFilter(), "last_active", None, ("work", "w-2"), first=10)
        assert again is result and again.extra["first_rows"][0]["id"] == "z-new"
        assert again.keep_index == list(result.keys).index(("work", "w-2"))
        # Used once: the next call merges anew.
        assert stores.order(SessionFilter(), "last_active", None, None, first=10) is not result
    finally:
        stores.close()


# ---------------------------------------------------------------------- #33: the Profile column
def test_the_profile_column_shows_wherever_the_title_keeps_its_room() -> None:
    """The Profile column had a minimum list width of 60, while `PROFILE_DROPS` already gives
    it room by dropping the less telling columns: at 120 columns, where the list with its
    scrollbar is 59 cells, `--all` showed no Profile column."""
    for width in range(36, 200):
        keys = [c.key for c, _w in layout_columns(width, profile=True)]
        title = next(w for c, w in layout_columns(width, profile=True) if c.key == "title")
        with_profile = 1 + 2 + 12 + 10 + 4 + PROFILE_TITLE_MIN  # sel, mark, profile, time, 4 gaps
        assert ("profile" in keys) == (width >= with_profile), (width, keys)
        assert title >= PROFILE_TITLE_MIN or "profile" not in keys


async def test_all_profiles_at_120_columns_show_the_profile_column(tmp_path: Path) -> None:
    """`--all` at 120×40 over stores with more sessions than the list shows (so it has a
    scrollbar), with the real clock: the header and every row carry the profile."""
    home = build_home(tmp_path / "hermes", broken=False)
    with SessionDB(store_path(home, "work")) as db:
        for n in range(60):
            db.create_session(f"more-{n:02d}", "cli", model="test/model")
            db.append_message(f"more-{n:02d}", "user", f"filler {n}")
    app = federated_app(home, now=time.time)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, 3)
        sessions = app.screen.query_one(SessionList)
        await pilot_until(pilot, lambda: sessions.total == 66, "sessions.total == 66")
        assert sessions.show_profile and sessions.max_scroll_y > 0
        width = sessions.scrollable_content_region.width
        assert width < 60  # the width the old minimum hid the column at
        header = "".join(seg.text for seg in sessions.render_line(0))
        assert "Profile" in header, header
        first = "".join(seg.text for seg in sessions.render_line(1))
        assert "work" in first or "default" in first or "zeta" in first, first


# ---------------------------------------------------------------------- #33: p in --demo
async def test_a_selection_over_two_profiles_is_refused_by_every_write(tmp_path: Path) -> None:
    """A write acts on one store: delete and archive (one `actions.chosen_sessions`) refuse a
    selection that spans two profiles, saying so, and open nothing."""
    home = build_home(tmp_path / "hermes", broken=False)
    app = federated_app(home)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot, 3)
        screen = app.screen
        assert isinstance(screen, MainScreen) and screen.stores is not None
        await pilot_until(pilot, lambda: screen.session_list.total == 6, "screen.session_list.total == 6")
        sessions = screen.session_list
        sessions.focus()
        for key in (("work", "w-2"), ("zeta", "z-1")):
            sessions.cursor = list(sessions._ids).index(key)
            await settle(pilot, 2)
            await pilot.press("space")
        await pilot_until(pilot, lambda: len(sessions.selection_profiles) == 2, "two profiles selected")
        for key, what in (("D", "delete"), ("m", "archive")):
            await pilot.press(key)
            await settle(pilot, 2)
            assert isinstance(app.screen, MainScreen)  # no dialog, nothing written
            messages = [str(n.message) for n in app._notifications]
            assert any(m.startswith(f"The selection spans several profiles: {what} acts") for m in messages)
        with SessionDB(store_path(home, "zeta")) as db:
            assert not db.get_session("z-1").get("archived")


async def test_p_on_the_demo_says_there_are_no_other_profiles(demo_db: Path) -> None:
    """In `--demo` (a store outside any Hermes home, and no ~/.hermes) `p` opened the demo beside
    a "default: missing" badge; it says there is no other profile and leaves the list alone."""
    app = make_app(demo_db, now=time.time)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, 3)
        screen = app.screen
        assert isinstance(screen, MainScreen)
        total = screen.session_list.total
        await pilot.press("p")
        await settle(pilot, 3)
        assert screen.stores is None and screen.session_list.total == total
        messages = [str(n.message) for n in app._notifications]
        assert any(m.startswith("No other profiles:") for m in messages), messages
        assert "missing" not in str(screen.query_one("#info", Static).render())


async def test_p_leaves_out_profile_folders_without_a_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A profile folder without `state.db` is not opened as a "missing" badge by `p` (it still
    is one with `--all`, which asks for every folder); the stores that exist open."""
    home = build_home(tmp_path / "hermes", broken=False)
    (home / "profiles" / "empty").mkdir()
    monkeypatch.setenv("HERMES_HOME", str(home))
    app = make_app(home / "state.db")
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot, 3)
        screen = app.screen
        assert isinstance(screen, MainScreen)
        await pilot.press("p")
        await pilot_until(pilot, lambda: screen.session_list.total == 6, "screen.session_list.total == 6")
        assert screen.stores is not None
        assert sorted(screen.stores.profiles) == ["default", "work", "zeta"]
        assert "missing" not in str(screen.query_one("#info", Static).render())


async def test_a_store_late_for_the_first_merge_that_answers_before_the_screen_listens_is_merged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first merge is read while Textual starts (`federated_prefetch`). A store whose order
    is late for it (`pending`) and arrives before the screen listens for the stores' answers was
    never merged: the list waited for an answer that had come already and stayed without its
    sessions (the CI failure of `test_open_transcript_follows_its_own_store`: "the merged list
    never reached its 6 sessions")."""
    from hermes_tui.app.controllers.federation import Federation as Screens
    from hermes_tui.app.stores import ARRIVE_S
    from hermes_tui.state import Federation

    home = build_home(tmp_path / "hermes", broken=False)
    told = threading.Event()
    real_order_of, real_late, real_open = Federation._order_of, Federation._late, Screens._open_worker

    def late_order(self: Federation, db: Any, profile: str, key: Any) -> Any:
        if profile == "work" and not told.is_set():
            time.sleep(4 * ARRIVE_S)  # late for the first merge: left out, `pending`
        return real_order_of(self, db, profile, key)

    def late_told(self: Federation, profile: str, fut: Any) -> None:
        real_late(self, profile, fut)
        if profile == "work":
            told.set()

    def open_once_told(self: Screens, *args: Any) -> None:
        told.wait(WAIT_S)  # the late order arrived (and was told) before the screen listens
        real_open(self, *args)

    monkeypatch.setattr(Federation, "_order_of", late_order)
    monkeypatch.setattr(Federation, "_late", late_told)
    monkeypatch.setattr(Screens, "_open_worker", open_once_told)
    app = federated_app(home)
    async with app.run_test(size=(140, 40)) as pilot:
        screen = app.screen
        assert isinstance(screen, MainScreen)
        sessions = screen.session_list
        await pilot_until(pilot, lambda: sessions.total == 6, "the six sessions listed")
        assert told.is_set()
        assert list(sessions._ids) == expected_order(home)


async def test_u_undoes_a_delete_in_the_store_that_wrote_it(tmp_path: Path) -> None:
    """`u` restores a trash entry in the store it was written to (`scope.db_at`), whichever
    profile's row has the cursor by then."""
    home = build_home(tmp_path / "hermes", broken=False)
    app = federated_app(home)
    async with app.run_test(size=(140, 40)) as pilot:
        screen, sessions = await six_listed(pilot, app)
        sessions.focus()
        sessions.cursor = list(sessions._ids).index(("zeta", "z-1"))
        await settle(pilot, 2)
        await pilot.press("D")
        await pilot_until(pilot, lambda: not isinstance(app.screen, MainScreen), "the delete dialog")
        await pilot.press("ctrl+d")
        await pilot_until(pilot, lambda: sessions.total == 5, "z-1 deleted")
        with SessionDB(store_path(home, "zeta"), read_only=True, migrate=False) as db:
            assert db.session_order().ids == []
        sessions.cursor = list(sessions._ids).index(("work", "w-2"))
        await settle(pilot, 2)
        assert screen.db is not None and screen.db.db_path == store_path(home, "work")
        await pilot.press("u")
        await pilot_until(pilot, lambda: sessions.total == 6, "z-1 restored")
        messages = [str(n.message) for n in app._notifications]
        assert any("Restored 1 session" in m for m in messages), messages
    with SessionDB(store_path(home, "zeta"), read_only=True, migrate=False) as db:
        assert list(db.session_order().ids) == ["z-1"]
    with SessionDB(store_path(home, "work"), read_only=True, migrate=False) as db:
        assert sorted(db.session_order().ids) == ["s-shared", "w-2", "w-3"]
        assert db.list_trash() == []
