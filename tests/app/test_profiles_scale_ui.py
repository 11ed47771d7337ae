"""The browser over many profiles (issue #33, item 14): the list shows the first stores that
answer, merges the others as they arrive with the cursor kept on its session, and 300 stores
cost a bounded number of threads and a few notifications. Real threads and clocks throughout."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Static
from textual.worker import get_current_worker

from hermes_tui.app.app import HermesApp
from hermes_tui.app.screens.main import MainScreen
from hermes_tui.app.stores import BrowserStores
from hermes_tui.app.widgets.session_list import SessionList
from hermes_tui.state import SessionDB, federation
from tests._wait import WAIT_S, pilot_until

from ._profiles import T0, federated_app
from ._support import settle

SLOW = "zz-slow"


def write(path: Path, sessions: list[tuple[str, float]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with SessionDB(path) as db:
        for sid, ts in sessions:
            db.create_session(sid, "cli", model="test/model")
            db.append_message(sid, "user", f"message of {sid}", timestamp=ts)


def info_text(app: HermesApp) -> str:
    return str(app.screen.query_one("#info", Static).render())


def keys(sessions: SessionList) -> list[Any]:
    return [sessions.key_at(i) for i in range(sessions.total)]


async def test_the_list_shows_the_first_stores_and_merges_a_slow_one_keeping_the_cursor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Seven stores answer, one is slow to open (held until released): the list shows the seven
    stores' sessions, the header says one is still opening; once it answers its sessions (the
    newest of all) are merged in at the top and the cursor stays on the session it was on."""
    home = tmp_path / "hermes"
    names = ["default"] + [f"p{i}" for i in range(1, 7)]
    expected: list[tuple[float, str, str]] = []
    for n, name in enumerate(names):
        rows = [(f"{name}-s{j}", T0 + 100 * j + n) for j in range(3)]
        write(home / "state.db" if name == "default" else home / "profiles" / name / "state.db", rows)
        expected += [(ts, name, sid) for sid, ts in rows]
    slow_rows = [(f"slow-s{j}", T0 + 10_000 + j) for j in range(2)]
    write(home / "profiles" / SLOW / "state.db", slow_rows)
    release = threading.Event()
    real = federation.open_store

    def held(ref: Any, read_only: bool = False) -> Any:
        if ref.profile == SLOW:
            release.wait(60)
        return real(ref, read_only)

    monkeypatch.setattr(federation, "open_store", held)
    app = federated_app(home)
    try:
        async with app.run_test(size=(140, 40)) as pilot:
            screen = app.screen
            assert isinstance(screen, MainScreen)
            sessions = screen.session_list
            await pilot_until(
                pilot,
                lambda: sessions.total == 21 and sessions.row_at(0) is not None,
                "sessions.total == 21 and sessions.row_at(0) is not None",
            )
            await settle(pilot)  # a store that answered late is merged by now: the order stands
            assert not release.is_set()  # the slow store is still opening
            first = keys(sessions)
            assert first == [(p, s) for _ts, p, s in sorted(expected, reverse=True)]
            assert "opening 1 more" in info_text(app)
            # Where the cursor starts: the top, or the session it was on when a store that answered
            # late was merged in above it (the cursor stays on its session).
            start = sessions.cursor
            assert sessions.selected_key == first[start]
            await pilot.press("down", "down", "down")
            # `press` may return before the list has taken every key: wait for the moves.
            await pilot_until(pilot, lambda: sessions.cursor == start + 3, "the three moves")
            picked, at = sessions.selected_key, sessions.cursor
            assert picked == first[start + 3]
            release.set()
            await pilot_until(pilot, lambda: sessions.total == 23, "sessions.total == 23")
            await settle(pilot)
            everything = expected + [(ts, SLOW, sid) for sid, ts in slow_rows]
            assert keys(sessions) == [(p, s) for _ts, p, s in sorted(everything, reverse=True)]
            assert sessions.selected_key == picked and sessions.cursor == at + 2
            assert "opening" not in info_text(app) and f"{SLOW} 2" in info_text(app)
            # The late store is followed live like the others (one follower for all of them).
            follower = screen.federation.watch.follower
            assert follower is not None and set(follower.profiles) == {*names, SLOW}
            with SessionDB(home / "profiles" / SLOW / "state.db") as db:
                db.create_session("slow-new", "cli")
                db.append_message("slow-new", "user", "a late arrival writes", timestamp=T0 + 20_000)
            await pilot_until(
                pilot,
                lambda: sessions.total == 24 and sessions.key_at(0) == (SLOW, "slow-new"),
                'sessions.total == 24 and sessions.key_at(0) == (SLOW, "slow-new")',
            )
            assert sessions.selected_key == picked
    finally:
        release.set()


async def test_a_store_that_answers_while_the_list_is_being_merged_is_merged_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store answers while the list's merge is on its way (started before, shown after): its
    sessions are merged in then, not left out until another store happens to answer. (The
    answer came to a screen whose merge was not shown yet, and that merge left it out; with a
    slow store still opening nothing asked again: the scale test above failed so under load.)"""
    home = tmp_path / "hermes"
    for name in ("default", "p1", "zz-late", SLOW):
        write(
            home / "state.db" if name == "default" else home / "profiles" / name / "state.db",
            [(f"{name}-s0", T0 + len(name))],
        )
    late_go, slow_go, order_go, order_held = (threading.Event() for _ in range(4))
    real_open, real_order = federation.open_store, BrowserStores.order

    def held_open(ref: Any, read_only: bool = False) -> Any:
        if ref.profile == "zz-late":
            late_go.wait(WAIT_S)
        if ref.profile == SLOW:
            slow_go.wait(WAIT_S)
        return real_open(ref, read_only)

    def held_order(self: BrowserStores, *args: Any, **kw: Any) -> Any:
        result = real_order(self, *args, **kw)
        in_worker = threading.current_thread() is not threading.main_thread() and kw.get("prepare", True)
        if in_worker and get_current_worker().group == "order" and not order_held.is_set():
            order_held.set()  # the screen's first merge (not a live re-merge, not the prefetch)
            order_go.wait(WAIT_S)
        return result

    monkeypatch.setattr(federation, "open_store", held_open)
    monkeypatch.setattr(BrowserStores, "order", held_order)
    app = federated_app(home)
    try:
        async with app.run_test(size=(140, 40)) as pilot:
            screen = app.screen
            assert isinstance(screen, MainScreen)
            sessions = screen.session_list
            await pilot_until(pilot, order_held.is_set, "the list's first merge is on its way")
            late_go.set()  # answers now, before that merge (without it) is shown
            await pilot_until(
                pilot, lambda: "zz-late" in screen.federation.watch.menu_profiles, "the late store arrived"
            )
            # the re-merge its arrival asked for is over (its result found the list loading)
            await pilot_until(pilot, lambda: not screen.order_refresh.running, "the arrival's re-merge done")
            order_go.set()
            await pilot_until(pilot, lambda: sessions.total == 3, "the late store merged in")
            assert {sessions.key_at(i) for i in range(3)} == {
                ("default", "default-s0"),
                ("p1", "p1-s0"),
                ("zz-late", "zz-late-s0"),
            }
            assert screen.stores is not None and screen.stores.opening == [SLOW]  # still opening
            slow_go.set()  # before the app closes its stores (closing waits for the open)
    finally:
        late_go.set()
        slow_go.set()
        order_go.set()


async def test_three_hundred_stores_keep_threads_and_notifications_bounded(tmp_path: Path) -> None:
    """300 stores and 40 profile folders without one: every store's sessions in the list, with
    at most a few dozen threads alive at any moment (one pool, one follower: before, two
    threads per store) and four notifications for the 40 missing stores (before: 40)."""
    home = tmp_path / "hermes"
    template = tmp_path / "template.db"
    write(template, [("a", T0 + 1), ("b", T0 + 2)])
    (home / "profiles").mkdir(parents=True)
    shutil.copyfile(template, home / "state.db")
    for i in range(299):
        (home / "profiles" / f"p{i:03d}").mkdir()
        shutil.copyfile(template, home / "profiles" / f"p{i:03d}" / "state.db")
    for i in range(40):
        (home / "profiles" / f"empty{i:02d}").mkdir()
    peak = threading.active_count()
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.wait(0.002):
            peak = max(peak, threading.active_count())

    told: list[str] = []
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    base = threading.active_count()
    app = federated_app(home)
    real_notify = app.notify

    def counting(message: str, **kw: Any) -> None:
        told.append(str(message))
        real_notify(message, **kw)

    app.notify = counting  # type: ignore[method-assign]
    try:
        async with app.run_test(size=(140, 40)) as pilot:
            screen = app.screen
            assert isinstance(screen, MainScreen)
            sessions = screen.session_list
            await pilot_until(
                pilot,
                lambda: sessions.total == 600 and sessions.row_at(0) is not None,
                "sessions.total == 600 and sessions.row_at(0) is not None",
            )
            await pilot.pause(0.5)  # the follower's first polls of every store
            info = info_text(app)
    finally:
        done.set()
        sampler.join()
    assert peak - base <= 40, peak - base
    missing = [t for t in told if "missing" in t or "could not be opened" in t]
    assert len(missing) <= 4, missing
    # 300 names and 40 badges do not fit a header: a sum, and a badge per kind of failure
    assert "300 profiles · 600 sessions" in info and "40 missing" in info
