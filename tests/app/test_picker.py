"""Picker mode (`hermes-tui pick`): starts in search with the query typed in, Enter picks the hit
or list row, Esc / ctrl+c cancel with status 1 and no result, --source narrows both panes."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest
from textual.widgets import Input, Select

from hermes_tui.app.app import HermesApp, PickOptions
from hermes_tui.app.handoff import Handoff
from hermes_tui.app.screens.main import MainScreen
from hermes_tui.app.stores import StoreChoice
from hermes_tui.app.widgets.search import SearchPane
from hermes_tui.state import SessionDB
from tests._wait import pilot_until

from ._support import make_app
from .test_handoff import session_facts, settle


async def test_pick_starts_in_search_and_enter_prints_the_hit(demo_db: Path) -> None:
    app = make_app(demo_db, pick=PickOptions(query="refund"))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, rounds=3)
        main = app.screen
        assert isinstance(main, MainScreen) and main.has_class("-searching")
        field = main.query_one("#search-input", Input)
        assert main.focused is field and field.value == "refund"
        hits = main.query_one("#search", SearchPane).hits
        assert hits
        await pilot.press("enter")  # from the box: the first (highlighted) hit
        await settle(pilot)
    assert app.return_value == Handoff("pick", hits[0]["session_id"], output=hits[0]["session_id"])
    assert app.return_code == 0


async def test_pick_from_the_results_and_the_list(demo_db: Path) -> None:
    app = make_app(demo_db, pick=PickOptions(query="refund"))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, rounds=3)
        search = app.screen.query_one("#search", SearchPane)
        await pilot.press("down", "down")
        await settle(pilot)
        index = search.highlighted
        assert index is not None
        chosen = search.hits[index]["session_id"]
        await pilot.press("enter")
        await settle(pilot)
    assert app.return_value is not None and app.return_value.output == chosen

    app = make_app(demo_db, pick=PickOptions())
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, rounds=3)
        main = app.screen
        assert isinstance(main, MainScreen)
        main.session_list.focus()
        await pilot.press("down", "down")
        await settle(pilot)
        row = main.session_list.selected_id
        await pilot.press("enter")
        await settle(pilot)
    assert app.return_value is not None and app.return_value.output == row


async def test_pick_format_resume_prints_the_tip_command(demo_db: Path) -> None:
    """The compressed runbook is one row of Hermes' list, its live tip: picked, the command
    resumes it."""
    root, tip = session_facts(demo_db, "Postgres upgrade runbook")
    assert root != tip
    app = make_app(demo_db, pick=PickOptions(output="resume"))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, rounds=3)
        main = app.screen
        assert isinstance(main, MainScreen)
        assert root not in main.session_list._ids
        main.open_session(tip)
        await settle(pilot)
        main.session_list.focus()
        await pilot.pause()
        assert main.session_list.selected_id == tip
        await pilot.press("enter")
        await settle(pilot)
    home = (("HERMES_HOME", str(demo_db.parent)),)
    output = f"env HERMES_HOME={demo_db.parent} hermes --resume={tip}"
    assert app.return_value == Handoff("pick", tip, ("hermes", f"--resume={tip}"), output, home)


async def test_escape_and_ctrl_c_cancel_with_status_1(demo_db: Path) -> None:
    for key in ("escape", "ctrl+c"):
        app = make_app(demo_db, pick=PickOptions(query="refund"))
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot, rounds=3)
            await pilot.press(key)
            await settle(pilot)
        assert app.return_value is None and app.return_code == 1, key


async def test_escape_in_the_transcript_goes_back_not_out(demo_db: Path) -> None:
    """Only the top level cancels: Esc from a transcript opened on a hit returns to the results."""
    app = make_app(demo_db, pick=PickOptions(query="refund"))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, rounds=3)
        main = app.screen
        assert isinstance(main, MainScreen)
        main.query_one("#search", SearchPane).choose(0)
        await settle(pilot)
        assert main.focused is main.query_one("#transcript")
        await pilot.press("escape")
        await settle(pilot)
        assert app.is_running and main.focused is main.query_one("#search-results")


async def test_pick_source_narrows_list_and_search(demo_db: Path) -> None:
    app = make_app(demo_db, pick=PickOptions(query="the", source="telegram"))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, rounds=3)
        main = app.screen
        assert isinstance(main, MainScreen)
        assert main.query_one("#filter-source", Select).value == "telegram"
        assert main.query_one("#search-source", Select).value == "telegram"
        hits = main.query_one("#search", SearchPane).hits
        assert hits
        ids = {h["session_id"] for h in hits} | set(main.session_list._ids or [])
    with SessionDB(demo_db, read_only=True, migrate=False) as db:
        assert {r["source"] for r in db.list_rows(sorted(ids))} == {"telegram"}


async def test_browser_mode_keeps_escape_and_enter(demo_db: Path) -> None:
    """Without pick, Esc in search closes it and the app keeps running (no picker bindings)."""
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("slash", "r", "e", "f", "escape")
        await settle(pilot)
        assert app.is_running and not app.screen.has_class("-searching")


# ---------------------------------------------------------------------- several profiles
def _chain_in_work(home: Path) -> None:
    """`c-root` in the default and the work store; only work's is compressed into `c-tip`."""
    from ._profiles import T0, store_path

    with SessionDB(store_path(home, "default"), migrate=False) as db:
        db.create_session("c-root", "cli")
        db.append_message("c-root", "user", "plain root in default", timestamp=T0 + 1)
    with SessionDB(store_path(home, "work"), migrate=False) as db:
        db.create_session("c-root", "cli")
        db.append_message("c-root", "user", "compressed root in work", timestamp=T0 + 2)
        db.end_session("c-root", "compression")
        db.create_session("c-tip", "cli", parent_session_id="c-root")
        db.append_message("c-tip", "user", "tip in work", timestamp=T0 + 3)


async def _pick_list_row(app: HermesApp, key: tuple[str, str]) -> None:

    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot, rounds=3)
        main = app.screen
        assert isinstance(main, MainScreen)
        sessions = main.session_list
        await pilot_until(
            pilot,
            lambda: sessions.total > 0 and key in list(sessions._ids),
            "sessions.total > 0 and key in list(sessions._ids)",
        )
        sessions.focus()
        sessions.cursor = list(sessions._ids).index(key)
        await settle(pilot)
        assert sessions.selected_key == key
        await pilot.press("enter")
        await settle(pilot)


async def test_pick_all_profiles_prints_the_row_and_its_profile(tmp_path: Path) -> None:
    """`pick --all`: Enter on a list row prints its id; `--format resume` prints the command of
    the tip in that row's own store, with `-p NAME` (nothing for the default store)."""
    from ._profiles import build_home, federated_app

    home = build_home(tmp_path / "hermes", broken=False)
    _chain_in_work(home)
    app = federated_app(home, pick=PickOptions())
    await _pick_list_row(app, ("work", "w-2"))
    assert app.return_value == Handoff("pick", "w-2", output="w-2")
    cases = {  # Hermes' list shows work's compressed chain as its tip
        ("work", "c-tip"): ("hermes", "-p", "work", "--resume=c-tip"),
        ("default", "c-root"): ("hermes", "--resume=c-root"),
        ("zeta", "z-1"): ("hermes", "-p", "zeta", "--resume=z-1"),
    }
    for key, argv in cases.items():
        app = federated_app(home, pick=PickOptions(output="resume"))
        await _pick_list_row(app, key)
        assert app.return_value == Handoff("pick", key[1], argv, " ".join(argv)), key


async def test_pick_all_profiles_search_hit_names_its_own_profile(tmp_path: Path) -> None:
    """A search hit is picked from its own store, whatever row the list's cursor is on."""
    from ._profiles import build_home, federated_app

    home = build_home(tmp_path / "hermes", broken=False)

    async def pick_hit_of(profile: str) -> Handoff | None:
        app = federated_app(home, pick=PickOptions(query="kestrel", output="resume"))
        async with app.run_test(size=(140, 40)) as pilot:
            await settle(pilot, rounds=3)
            main = app.screen
            assert isinstance(main, MainScreen) and main.has_class("-searching")
            search = main.query_one("#search", SearchPane)
            await pilot_until(pilot, lambda: len(search.hits) == 4, "len(search.hits) == 4")
            assert main.session_list.selected_profile == "work"  # the list's first row
            wanted = next(i for i, h in enumerate(search.hits) if h["profile"] == profile)
            await pilot.press("down", *(["down"] * wanted))
            await settle(pilot)
            assert search.highlighted == wanted
            await pilot.press("enter")
            await settle(pilot)
        return app.return_value

    for profile, argv in [
        ("zeta", ("hermes", "-p", "zeta", "--resume=z-1")),
        ("default", ("hermes", "--resume=s-shared")),
    ]:
        sid = argv[-1].removeprefix("--resume=")
        assert await pick_hit_of(profile) == Handoff("pick", sid, argv, " ".join(argv)), profile


async def test_pick_one_profile_with_source(tmp_path: Path) -> None:
    """`pick --profile work --source telegram`: the source menus are filled from the profile's
    store once it opens, and the list keeps to that source."""
    from ._profiles import build_home, federated_app, store_path

    home = build_home(tmp_path / "hermes", broken=False)
    with SessionDB(store_path(home, "work"), migrate=False) as db:
        db.create_session("w-tg", "telegram")
        db.append_message("w-tg", "user", "from telegram")
    app = federated_app(home, StoreChoice(profiles=("work",), home=home), pick=PickOptions(source="telegram"))
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot, rounds=3)
        main = app.screen
        assert isinstance(main, MainScreen)
        await pilot_until(
            pilot,
            lambda: main.query_one("#filter-source", Select).value == "telegram",
            'main.query_one("#filter-source", Select).value == "telegram"',
        )
        assert main.query_one("#search-source", Select).value == "telegram"
        await pilot_until(
            pilot,
            lambda: list(main.session_list._ids) == [("work", "w-tg")],
            'list(main.session_list._ids) == [("work", "w-tg")]',
        )


def test_cli_pick_flags_choose_the_stores(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """`pick --all` / `--profile NAME` open several stores in picker mode; a plain `pick` stays
    on one store."""
    from hermes_tui import cli

    seen: list[tuple[object, object]] = []

    def fake_run(self: HermesApp) -> None:
        seen.append((getattr(self, "store_choice", None), self.pick))

    monkeypatch.setattr(HermesApp, "run", fake_run)
    monkeypatch.setattr("hermes_tui.app.handoff.picker_terminal", contextlib.nullcontext)
    assert cli.main(["pick", "--all", "--format", "resume"]) == 1  # nothing picked
    assert cli.main(["pick", "--profile", "work", "--profile", "zeta", "-q", "x"]) == 1
    assert cli.main(["pick"]) == 1
    assert [choice for choice, _pick in seen] == [
        StoreChoice(all_profiles=True),
        StoreChoice(profiles=("work", "zeta")),
        None,
    ]
    assert [pick for _choice, pick in seen] == [
        PickOptions(output="resume"),
        PickOptions(query="x"),
        PickOptions(),
    ]


# ---------------------------------------------------------------------- titles
def _titled_store(path: Path) -> None:
    with SessionDB(path) as db:
        db.create_session("s-title", "cli")
        db.append_message("s-title", "user", "nothing about airships here")
        db.set_session_title("s-title", "Quarterly Zeppelin review")
        db.create_session("s-msg", "telegram")
        db.append_message("s-msg", "user", "quarterly zeppelin plans")


async def test_pick_search_finds_sessions_by_title(tmp_path: Path) -> None:
    """What is typed is matched against titles (and ids) the way the list's title filter
    matches them, before the message hits: a title no message holds is found, and Enter on
    it picks that session."""
    path = tmp_path / "state.db"
    _titled_store(path)
    for query, expected in [
        ("zeppelin review", [("title", "s-title")]),  # no message has both words
        ("Quarterly zeppelin", [("title", "s-title"), ("user", "s-msg")]),
        ("s-ms", [("title", "s-msg")]),  # an id, as the list's filter matches it
    ]:
        app = make_app(path, pick=PickOptions(query=query))
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot, rounds=3)
            main = app.screen
            assert isinstance(main, MainScreen)
            search = main.query_one("#search", SearchPane)
            assert [(h["role"], h["session_id"]) for h in search.hits] == expected, query
            assert search.total == len(expected)
            await pilot.press("enter")
            await settle(pilot)
        assert app.return_value is not None and app.return_value.output == expected[0][1], query
    # the source filter and a role filter apply: telegram has no such title, a role asks for messages
    app = make_app(path, pick=PickOptions(query="Quarterly zeppelin", source="telegram"))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, rounds=3)
        search = app.screen.query_one("#search", SearchPane)
        assert [(h["role"], h["session_id"]) for h in search.hits] == [("user", "s-msg")]
        app.screen.query_one("#search-role", Select).value = "user"
        await settle(pilot)
        assert [(h["role"], h["session_id"]) for h in search.hits] == [("user", "s-msg")]


async def test_browser_search_stays_on_messages(tmp_path: Path) -> None:
    """Only the picker adds title hits: the browser's search is a message search."""
    path = tmp_path / "state.db"
    _titled_store(path)
    app = make_app(path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("slash", *"zeppelin")
        await settle(pilot)
        hits = app.screen.query_one("#search", SearchPane).hits
        assert [(h["role"], h["session_id"]) for h in hits] == [("user", "s-msg")]


async def test_pick_all_profiles_finds_titles_in_every_store(tmp_path: Path) -> None:
    from ._profiles import build_home, federated_app

    home = build_home(tmp_path / "hermes", broken=False)
    app = federated_app(home, pick=PickOptions(query="shared", output="resume"))
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot, rounds=3)
        search = app.screen.query_one("#search", SearchPane)
        await pilot_until(pilot, lambda: len(search.hits) == 2, "len(search.hits) == 2")
        assert {(h["profile"], h["session_id"], h["role"]) for h in search.hits} == {
            ("default", "s-shared", "title"),
            ("work", "s-shared", "title"),
        }
        work = next(i for i, h in enumerate(search.hits) if h["profile"] == "work")
        await pilot.press("down", *(["down"] * work))
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
    assert app.return_value is not None and app.return_value.output == "hermes -p work --resume=s-shared"
