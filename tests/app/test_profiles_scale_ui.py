"""The browser over many profiles (issue #33, item 14): the list shows the first stores that
answer, merges the others as they arrive with the cursor kept on its session, and 300 stores
cost a bounded number of threads and a few notifications. Real threads and clocks throughout."""

from __future__ import annotations

import shutil
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Static

from hermes_tui.app.app import HermesApp
from hermes_tui.app.screens.main import MainScreen
from hermes_tui.app.widgets.session_list import SessionList
from hermes_tui.state import SessionDB, federation

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


async def wait_for(pilot: Pilot[Any], cond: Callable[[], bool], rounds: int = 60) -> None:
    for _ in range(rounds):
        if cond():
            return
        await pilot.pause(0.1)
    assert cond()


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
            await wait_for(pilot, lambda: sessions.total == 21 and sessions.row_at(0) is not None)
            assert not release.is_set()  # the slow store is still opening
            first = keys(sessions)
            assert first == [(p, s) for _ts, p, s in sorted(expected, reverse=True)]
            assert "opening 1 more" in info_text(app)
            await pilot.press("down", "down", "down")
            picked, at = sessions.selected_key, sessions.cursor
            assert picked == first[3]
            release.set()
            await wait_for(pilot, lambda: sessions.total == 23)
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
            await wait_for(pilot, lambda: sessions.total == 24 and sessions.key_at(0) == (SLOW, "slow-new"))
            assert sessions.selected_key == picked
    finally:
        release.set()


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
            await wait_for(pilot, lambda: sessions.total == 600 and sessions.row_at(0) is not None, 200)
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
