"""Thousands of profile folders (issue #33, item 14): discovery skips a folder without a store
cheaply, and the stores open on a bounded pool however many there are."""

from __future__ import annotations

import os
import random
import shutil
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from hermes_tui.state import SessionDB, SessionFilter, federation, profiles
from hermes_tui.state.federation import open_stores
from hermes_tui.state.profiles import StoreStatus, discover_stores, store_workers
from tests._wait import WAIT_S, wait_until


def template(path: Path, sessions: int = 2, seed: int = 0) -> Path:
    """A small store written through the store API (copied to make many profiles)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with SessionDB(path) as db:
        for i in range(sessions):
            sid = f"t{seed}-{i}"
            db.create_session(sid, "cli")
            db.append_message(sid, "user", "hello there", timestamp=1000 + seed * 10 + i)
    return path


def many_profiles(home: Path, stores: int, empty: int) -> Path:
    """`home` with a default store, `stores` profile stores (copies) and `empty` folders."""
    tpl = template(home.parent / "template.db")
    (home / "profiles").mkdir(parents=True, exist_ok=True)
    shutil.copyfile(tpl, home / "state.db")
    for i in range(stores):
        (home / "profiles" / f"p{i:04d}").mkdir()
        shutil.copyfile(tpl, home / "profiles" / f"p{i:04d}" / "state.db")
    for i in range(empty):
        (home / "profiles" / f"e{i:04d}").mkdir()
    return home


def test_discovery_never_opens_nor_looks_twice_into_a_folder_without_a_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """300 stores and 2,700 profile folders without one: each empty folder costs one `lstat` of
    its `state.db` (no SQLite open, no path resolution walking every component, twice), and
    probing opens only the stores that are there."""
    home = many_profiles(tmp_path / "hermes", stores=300, empty=2700)
    empty_root = str(home / "profiles" / "e")
    looked: Counter[str] = Counter()
    opened: list[str] = []

    def counting(fn: Any) -> Any:
        def call(path: Any, *args: Any, **kwargs: Any) -> Any:
            text = os.fspath(path) if isinstance(path, (str, os.PathLike)) else ""
            if text.startswith(empty_root):
                looked[text.split(os.sep)[len(empty_root.split(os.sep)) - 1]] += 1
            return fn(path, *args, **kwargs)

        return call

    real_db = profiles.SessionDB

    def counting_db(path: Any, *args: Any, **kwargs: Any) -> SessionDB:
        opened.append(os.fspath(path))
        return real_db(path, *args, **kwargs)

    for name in ("lstat", "stat", "access", "open", "listdir", "scandir"):
        monkeypatch.setattr(os, name, counting(getattr(os, name)))
    monkeypatch.setattr(profiles, "SessionDB", counting_db)
    refs = discover_stores(home=home)
    monkeypatch.undo()

    assert len(refs) == 1 + 300 + 2700
    status = Counter(r.status for r in refs)
    assert status == {StoreStatus.OK: 301, StoreStatus.MISSING: 2700}
    assert all("does not exist" in r.reason for r in refs if r.status == StoreStatus.MISSING)
    assert not [p for p in opened if p.startswith(empty_root)]  # no SQLite open of an empty one
    assert len(opened) == 301  # each store probed once
    assert len(looked) == 2700 and set(looked.values()) == {1}, looked.most_common(3)


def test_open_stores_never_runs_more_opens_than_its_pool(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """40 stores open on at most `workers` threads at once (before: one thread per store, all
    40 opening together), and are read on as many home threads, each store always on its own."""
    home = many_profiles(tmp_path / "hermes", stores=39, empty=0)
    refs = discover_stores(home=home, probe=False)
    lock = threading.Lock()
    inside = peak = 0
    threads: set[str] = set()
    real = federation.open_store

    def slowish(ref: Any, read_only: bool = False) -> Any:
        nonlocal inside, peak
        with lock:
            inside += 1
            peak = max(peak, inside)
            threads.add(threading.current_thread().name)
        try:
            time.sleep(0.02)  # long enough for the others to pile up if nothing bounds them
            return real(ref, read_only)
        finally:
            with lock:
                inside -= 1

    monkeypatch.setattr(federation, "open_store", slowish)
    before = threading.active_count()
    with open_stores(refs, read_only=True, workers=3) as fed:
        assert threading.active_count() - before <= 2 * 3  # the openers end once all opened
        assert fed.profiles == [r.profile for r in refs] and not fed.opening
        assert len(fed.session_order(SessionFilter())) == 40 * 2
        homes = {p: fed.call(p, lambda _db: threading.current_thread().name) for p in fed.profiles}
        again = {p: fed.call(p, lambda _db: threading.current_thread().name) for p in fed.profiles}
        # one connection per store: the opener's closed once its home had its own
        assert all(len(fed.dbs[p]._conn_list) == 1 for p in fed.profiles)
    assert peak == 3 and len(threads) == 3
    assert homes == again and len(set(homes.values())) == 3 and not set(homes.values()) & threads
    with open_stores(refs, read_only=True) as fed:  # the default bound
        assert len(fed.profiles) == 40
    assert peak <= store_workers()


def test_stores_open_in_the_background_and_are_heard_of_as_they_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`wait=False`: the first stores are readable while a slow one still opens; the listener
    hears of each store once; a merge with `within` leaves out a store whose order is late and
    names it pending, and the late order is heard of."""
    home = many_profiles(tmp_path / "hermes", stores=5, empty=0)
    refs = discover_stores(home=home, probe=False)
    release, release_order = threading.Event(), threading.Event()
    real_open, real_order = federation.open_store, federation._order_checked

    def held_open(ref: Any, read_only: bool = False) -> Any:
        if ref.profile == "p0003":
            assert release.wait(30)
        return real_open(ref, read_only)

    def held_order(db: SessionDB, *args: Any, **kwargs: Any) -> Any:
        if db.db_path.parent.name == "p0001":
            assert release_order.wait(30)
        return real_order(db, *args, **kwargs)

    monkeypatch.setattr(federation, "open_store", held_open)
    heard: list[str] = []
    fed = open_stores(refs, read_only=True, wait=False, workers=3)
    try:
        fed.listen(heard.append)
        assert fed.wait(30, first=True)
        assert not fed.wait(0.05)  # p0003 holds on
        assert "p0003" in fed.opening and "p0003" not in fed.profiles and fed.profiles
        # A merge does not wait for it, and the stores already open answer (no home opens).
        while len(fed.profiles) < 5:
            time.sleep(0.01)
        merged = fed.session_order(SessionFilter(), within=None)
        assert merged.profiles == [r.profile for r in refs if r.profile != "p0003"]
        assert len(merged.all_pairs()) == 10 and not merged.pending
        release.set()
        assert fed.wait(30) and not fed.opening
        assert heard.count("p0003") == 1
        full = fed.session_order(SessionFilter())
        assert full.profiles == [r.profile for r in refs] and len(full) == 12 and not full.pending
    finally:
        release.set()
        fed.close()
    monkeypatch.setattr(federation, "_order_checked", held_order)
    heard.clear()
    with open_stores(refs, read_only=True, workers=3) as fed:
        fed.listen(heard.append)
        homes = {p: fed.call(p, lambda _db: threading.current_thread().name) for p in fed.profiles}
        # p0001 and what its thread was asked after it (orders are asked in the stores' order)
        after = fed.profiles[fed.profiles.index("p0001") :]
        behind = sorted(p for p in after if homes[p] == homes["p0001"])
        merged = fed.session_order(SessionFilter(), within=0.05)
        assert sorted(merged.pending) == behind  # late: left out, not waited for
        assert merged.profiles == [p for p in fed.profiles if p not in behind]
        assert len(merged.all_pairs()) == 2 * (6 - len(behind))
        release_order.set()
        wait_until(lambda: len(heard) >= len(behind), "every late order heard of")
        assert sorted(heard) == behind  # each late order is heard of once (and kept)
        again = fed.session_order(SessionFilter(), within=0.05)
        assert not again.pending and len(again) == 12


def test_a_store_late_with_its_order_again_keeps_its_last_order_in_the_merge(tmp_path: Path) -> None:
    """A store already merged once whose thread is busy when the list merges again (a page, a
    live poll under load) keeps its last order in the merge, named pending: its rows stayed
    out of the list until its fresh order arrived (and the cursor lost its session)."""
    home = many_profiles(tmp_path / "hermes", stores=3, empty=0)
    with open_stores(discover_stores(home=home, probe=False), read_only=True) as fed:
        heard: list[str] = []
        fed.listen(heard.append)
        first = fed.session_order(SessionFilter(), within=None)
        busy, free = threading.Event(), threading.Event()

        def occupied(_db: SessionDB) -> None:
            busy.set()
            free.wait(WAIT_S)

        late = fed.profiles[1]
        held = fed.submit(late, occupied)  # its thread is busy with something else
        try:
            assert busy.wait(WAIT_S)
            again = fed.session_order(SessionFilter(), within=0.05)
            assert again.pending == [late]  # named late: it is merged again when it answers
            assert again.all_pairs() == first.all_pairs()  # but its rows are still there
        finally:
            free.set()
        held.result(WAIT_S)
        wait_until(lambda: late in heard, "the late order heard of")
        fresh = fed.session_order(SessionFilter(), within=0.05)
        assert not fresh.pending and fresh.all_pairs() == first.all_pairs()


def test_seeking_over_many_stores_equals_the_forward_merge(tmp_path: Path) -> None:
    """With 60 stores a page found by selection (no front merged) equals the forward merge at
    every offset, ties across stores included."""
    rng = random.Random(7)
    refs = []
    for i in range(60):
        path = tmp_path / f"s{i:02d}.db"
        with SessionDB(path) as db:
            for j in range(rng.randrange(0, 6)):
                sid = f"x{j}"
                db.create_session(sid, "cli")
                db.append_message(sid, "user", "hi", timestamp=float(rng.choice([10, 20, 20, 30, 40])))
        refs.append(profiles.StoreRef(f"s{i:02d}", path))
    with open_stores(refs, read_only=True) as fed:
        forward = fed.session_order(SessionFilter())
        forward._seek = False
        expected = forward.pairs(0, len(forward))
        assert len(expected) == len(forward) > 0
        for off in range(len(expected) + 1):
            merged = fed.session_order(SessionFilter())
            assert merged.pairs(off, 3) == expected[off : off + 3], off
            assert not merged._merge.merged
        for i, (profile, sid) in enumerate(expected):
            assert merged.index_of(profile, sid) == i


def test_a_page_anywhere_costs_bisects_in_proportion_to_the_stores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Finding where a page starts costs about one bisect per store per selection round, not
    one per store per step of a binary search per store tried (300 stores: 0.3 s a page, on the
    event loop when the list kept its cursor through a re-merge)."""
    refs = []
    for i in range(120):
        path = tmp_path / f"s{i:03d}.db"
        with SessionDB(path) as db:
            for j in range(4):
                db.create_session(f"x{j}", "cli")
                db.append_message(f"x{j}", "user", "hi", timestamp=float(1000 + (i * 7 + j * 13) % 97))
        refs.append(profiles.StoreRef(f"s{i:03d}", path))
    calls = 0
    real = federation.MergedOrder._before

    def counting(self: Any, *args: Any) -> int:
        nonlocal calls
        calls += 1
        return real(self, *args)

    monkeypatch.setattr(federation.MergedOrder, "_before", counting)
    with open_stores(refs, read_only=True) as fed:
        worst = 0
        for off in (1, 120, 240, 333, 479):
            merged = fed.session_order(SessionFilter())
            calls = 0
            assert len(merged.pairs(off, 1)) == 1
            worst = max(worst, calls)
    assert worst <= 10 * len(refs), worst  # a few rounds of at most one bisect per store
