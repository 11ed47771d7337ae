"""The live list order kept incrementally (`hermes_tui.app.live_order.IncrementalOrder`).

Differential: random writes by another connection, the follower's changes noted, and after each
poll the incrementally updated order must equal a fresh `session_order` — for every order and
several filters, including timestamp ties, old and unusable timestamps, sessions leaving and
entering a filter, children, branches and deletions (named and only counted). Titles and ends
are written only to sessions the watcher follows (the list's rows): elsewhere the periodic whole
read picks them up, as `test_whole_order_read_again_after_a_while_and_on_invalidate` checks.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from hermes_tui.app.live_order import IncrementalOrder
from hermes_tui.state import SessionDB, SessionFilter
from tests._wait import pilot_until

ORDERS = ("last_active", "started", "messages", "tokens", "cost")
FILTERS = (
    SessionFilter(),  # Hermes' list: children folded, a compression chain listed as its tip
    SessionFilter(sources=("cli",)),
    SessionFilter(text="a"),
    SessionFilter.every_session(),
    SessionFilter.every_session(sources=("telegram",), pinned_first=True),
)


class _Counting:
    """The reader, counting whole-order reads and the ids re-keyed."""

    def __init__(self, db: SessionDB) -> None:
        self.db = db
        self.whole = 0
        self.keyed: list[set[str]] = []

    def session_order(self, *a, **kw):
        self.whole += 1
        return self.db.session_order(*a, **kw)

    def order_keys(self, ids, *a, **kw):
        self.keyed.append(set(ids))
        return self.db.order_keys(ids, *a, **kw)

    def order_scope(self, ids, *a, **kw):
        return self.db.order_scope(ids, *a, **kw)

    def list_count(self, *a, **kw):
        return self.db.list_count(*a, **kw)

    def active_sessions(self, *a, **kw):
        return self.db.active_sessions(*a, **kw)


def _set_started(writer: SessionDB, sid: str, started: float | str) -> None:
    """`create_session` stamps now; the tests need chosen starts (ties, unknown ones)."""
    writer._conn().execute("UPDATE sessions SET started_at = ? WHERE id = ?", (started, sid))


def _random_step(
    rng: random.Random, writer: SessionDB, ids: list[str], n: int, base: float, hidden: set[str]
) -> None:
    """One of the writes agents make (a few per poll), with the odd hostile value. `hidden`:
    sessions the watcher does not care about (off screen): they only get messages or go."""
    for _ in range(rng.randint(1, 4)):
        op = rng.random()
        if op < 0.2 or not ids:
            sid = f"{rng.choice('abcxyz')}-{n}-{rng.randint(0, 10**6)}"
            parent = rng.choice(ids) if ids and rng.random() < 0.3 else None
            started = rng.choice([base + rng.randint(-5000, 5000), base, "unknown"])
            writer.create_session(sid, rng.choice(["cli", "telegram"]), parent_session_id=parent)
            _set_started(writer, sid, started)
            ids.append(sid)
            if rng.random() < 0.3:
                hidden.add(sid)
        elif op < 0.7:
            sid = rng.choice(ids)
            ts = rng.choice([base + rng.randint(-5000, 5000), base + 100, base, "not a time", 1e300])
            writer.append_message(sid, rng.choice(["user", "assistant", "tool"]), "hi", timestamp=ts)
            if rng.random() < 0.5:  # agents update totals with their messages
                writer.update_token_counts(
                    sid,
                    input_tokens=rng.randint(0, 500),
                    output_tokens=rng.randint(0, 500),
                    estimated_cost_usd=rng.choice([0.0, 0.01, 0.5]),
                )
        elif op < 0.8:  # ends and titles are followed for the sessions the list cares about
            cared = [i for i in ids if i not in hidden] or ids
            writer.end_session(rng.choice(cared), rng.choice(["user_exit", "compression", "branched"]))
        elif op < 0.9:
            sid = rng.choice([i for i in ids if i not in hidden] or ids)
            k = rng.randint(0, 10**6)
            writer.set_session_title(sid, rng.choice([f"alpha {n} {k}", f"zz {n} {k}", None]))
        else:
            sid = rng.choice(ids)
            writer.delete_session(sid)
            ids[:] = [i for i in ids if writer.get_session(i) is not None]


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("seed", range(3))
def test_incremental_order_equals_a_fresh_order(tmp_path: Path, order: str, seed: int) -> None:
    rng = random.Random(f"{order}-{seed}")
    path = tmp_path / "state.db"
    writer = SessionDB(path)
    base = 1_700_000_000.0
    ids: list[str] = []
    hidden: set[str] = set()
    for n in range(30):
        _random_step(rng, writer, ids, n, base, hidden)
    reader = SessionDB(path, read_only=True)
    counting = _Counting(reader)
    watcher = reader.change_watcher([i for i in ids if i not in hidden])
    keepers = {flt: IncrementalOrder(full_every_s=float("inf")) for flt in FILTERS}
    for flt, keeper in keepers.items():
        assert keeper.base(counting, flt, order) == reader.session_order(flt, order=order).ids
    whole_needed = 0
    for n in range(30, 90):
        _random_step(rng, writer, ids, n, base, hidden)
        ch = watcher.poll()
        watcher.care([i for i in ids if i not in hidden])  # deletions of the others are counted
        unnamed = bool(ch.reset or ch.sessions_removed)
        new_tip = any(r["edge_kind"] == "compression" for r in ch.new_sessions)
        parents = bool(
            ch.ended or ch.reopened or ch.deleted or ch.sessions_removed or ch.continued or new_tip
        )
        for flt, keeper in keepers.items():
            keeper.note(ch)
            got = keeper.base(counting, flt, order)
            assert got == reader.session_order(flt, order=order).ids, (flt, n)
            whole_needed += unnamed or (parents and not flt.include_children)
    # Whole reads only at the start and where the changes did not name their sessions.
    assert counting.whole == len(FILTERS) + whole_needed
    assert whole_needed < len(FILTERS) * 60 / 3
    reader.close()
    writer.close()


def test_only_the_changed_sessions_are_read_again(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    writer = SessionDB(path)
    for i in range(50):
        writer.create_session(f"s{i}", "cli")
        _set_started(writer, f"s{i}", 1000.0 + i)
        writer.append_message(f"s{i}", "user", "hi", timestamp=2000.0 + i)
    reader = SessionDB(path, read_only=True)
    counting = _Counting(reader)
    watcher = reader.change_watcher()
    keeper = IncrementalOrder()
    first = keeper.base(counting, SessionFilter(), "last_active")
    assert first[:2] == ["s49", "s48"]
    writer.append_message("s3", "assistant", "back", timestamp=3000.0)
    writer.create_session("new", "cli")
    _set_started(writer, "new", 2500.0)
    keeper.note(watcher.poll())
    got = keeper.base(counting, SessionFilter(), "last_active")
    assert got[:3] == ["s3", "new", "s49"] and len(got) == 51
    assert counting.whole == 1 and counting.keyed == [{"s3", "new"}]
    # a poll with nothing new re-reads nothing
    assert keeper.base(counting, SessionFilter(), "last_active") == got
    assert counting.whole == 1 and len(counting.keyed) == 1
    reader.close()
    writer.close()


def test_whole_order_read_again_after_a_while_and_on_invalidate(tmp_path: Path) -> None:
    """Writes the follower cannot name (token totals alone) are picked up by the periodic whole
    read; a list reload (`invalidate`) reads it whole at once."""
    path = tmp_path / "state.db"
    writer = SessionDB(path)
    for i in range(5):
        writer.create_session(f"s{i}", "cli")
        _set_started(writer, f"s{i}", 1000.0 + i)
    reader = SessionDB(path, read_only=True)
    now = [0.0]
    keeper = IncrementalOrder(clock=lambda: now[0], full_every_s=30.0)
    assert keeper.base(reader, SessionFilter(), "tokens")[0] == "s4"
    writer.update_token_counts("s0", input_tokens=999)
    now[0] = 10.0
    assert keeper.base(reader, SessionFilter(), "tokens")[0] == "s4"  # not named: not seen yet
    now[0] = 31.0
    assert keeper.base(reader, SessionFilter(), "tokens")[0] == "s0"
    writer.update_token_counts("s1", input_tokens=5000)
    now[0] = 32.0
    keeper.invalidate()
    assert keeper.base(reader, SessionFilter(), "tokens")[0] == "s1"
    assert keeper.full_reads == 3
    reader.close()
    writer.close()


def test_ordered_counts_and_active_filter_like_a_whole_read(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    writer = SessionDB(path)
    writer.create_session("old", "cli")
    _set_started(writer, "old", 1000.0)
    writer.append_message("old", "user", "hi", timestamp=1000.0)
    writer.create_session("live", "telegram")
    _set_started(writer, "live", 5000.0)
    writer.append_message("live", "user", "hi", timestamp=5000.0)
    reader = SessionDB(path, read_only=True)
    watcher = reader.change_watcher()
    keeper = IncrementalOrder()
    flt = SessionFilter(sources=("cli",))
    assert keeper.ordered(reader, flt, "last_active") == (["old"], 2)
    writer.create_session("new", "cli")
    _set_started(writer, "new", 5100.0)
    keeper.note(watcher.poll())
    assert keeper.ordered(reader, flt, "last_active") == (["new", "old"], 3)
    assert keeper.ordered(reader, SessionFilter(), "last_active", active_since=(5200.0, 600.0)) == (
        ["new", "live"],
        3,
    )
    reader.close()
    writer.close()


def test_ordered_counts_the_view_a_filter_narrows(tmp_path: Path) -> None:
    """ "3 of M": M is the length of the view shown (the archived view's archived sessions), not
    of Hermes' default list; the unfiltered view is its own count."""
    path = tmp_path / "state.db"
    writer = SessionDB(path)
    flags = (("cli", 0), ("cli", 1), ("telegram", 1), ("cli", 0), ("telegram", 1))
    for i, (source, archived) in enumerate(flags):
        writer.create_session(f"s{i}", source)
        _set_started(writer, f"s{i}", 1000.0 + i)
        writer._conn().execute("UPDATE sessions SET archived = ? WHERE id = ?", (archived, f"s{i}"))
    reader = SessionDB(path, read_only=True)
    archived_view = SessionFilter(archived="only")
    assert IncrementalOrder().ordered(reader, archived_view, "started") == (["s4", "s2", "s1"], 3)
    narrowed = SessionFilter(archived="only", sources=("cli",))
    assert IncrementalOrder().ordered(reader, narrowed, "started") == (["s1"], 3)
    pinned = SessionFilter(pinned_first=True)  # an ordering option, not a filter
    assert IncrementalOrder().ordered(reader, pinned, "started") == (["s3", "s0"], 2)
    reader.close()
    writer.close()


async def test_the_browser_moves_only_the_sessions_that_changed(demo_db: Path) -> None:
    """A writer in another process touches old sessions one after another: the list follows,
    equal to a fresh order each time, with one whole-order read for the lot."""
    from tests.app.test_live import Writer, live_app, screen_of

    from ._support import settle

    writer = Writer(demo_db)
    reader = SessionDB(demo_db, read_only=True)
    try:
        app = live_app(demo_db)
        async with app.run_test(size=(120, 30)) as pilot:
            await settle(pilot)
            main = screen_of(pilot)
            sl = main.session_list
            old = list(sl._ids)[-6:]
            for n, sid in enumerate(old):
                writer.call("append_message", sid, "user", content=f"back {n}")
                await pilot_until(pilot, lambda sid=sid: list(sl._ids)[:1] == [sid], f"{sid} on top")
            assert list(sl._ids) == reader.session_order(SessionFilter()).ids
            assert list(sl._ids)[:6] == old[::-1]
            # the first change reads the whole order (with its keys); the others move one row each
            assert main.live_ids.full_reads == 1 and main.live_ids.moved >= len(old) - 1
    finally:
        reader.close()
        writer.close()


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("order", ("last_active", "tokens"))
@pytest.mark.parametrize("flt", (SessionFilter(), SessionFilter.every_session()))
def test_the_rows_a_live_order_brings_keep_every_listed_row_current(
    tmp_path: Path, order: str, flt: SessionFilter, seed: int
) -> None:
    """`OneStore.live_order` brings the rows of the sessions it moved, and the list keeps every
    other row it has (`SessionList.update_order`): differential against reading every row again,
    after each poll of random writes; a whole order read brings none (all are read again)."""
    from hermes_tui.app.controllers.search_source import OneStore

    rng = random.Random(f"rows-{order}-{flt}-{seed}")
    path = tmp_path / "state.db"
    writer = SessionDB(path)
    base = 1_700_000_000.0
    ids: list[str] = []
    hidden: set[str] = set()
    for n in range(30):
        _random_step(rng, writer, ids, n, base, hidden)
    reader = SessionDB(path, read_only=True)
    watcher = reader.change_watcher([i for i in ids if i not in hidden])
    keeper = IncrementalOrder(full_every_s=float("inf"))
    one = OneStore(reader)
    first = one.live_order(flt, order, None, None, keeper)
    assert "rows" not in first.extra  # the whole order: every row is read
    shown = {r["id"]: r for r in reader.list_rows(list(first.keys))}
    placed = 0
    for n in range(30, 80):
        _random_step(rng, writer, ids, n, base, hidden)
        ch = watcher.poll()
        watcher.care([i for i in ids if i not in hidden])
        keeper.note(ch)
        got = one.live_order(flt, order, None, None, keeper)
        listed = list(got.keys)
        assert listed == reader.session_order(flt, order=order).ids
        if "rows" in got.extra:
            placed += 1
            shown.update(got.extra["rows"])
        else:
            shown = {r["id"]: r for r in reader.list_rows(listed)}
        fresh = {r["id"]: r for r in reader.list_rows(listed)}
        stale = {
            i: {k: (shown[i].get(k), v) for k, v in fresh[i].items() if shown[i].get(k) != v}
            for i in listed
            if shown.get(i) != fresh[i]
        }
        assert not stale, (n, stale)
    assert placed > 0
    reader.close()
    writer.close()
