"""The Usage screen follows writes: while it is open, an agent (hermes-agent 0.19.0 through
`tests/peer/oracle.py`, or our own store) appends costed messages, and the figures on screen
change without a key, reloaded at most once per `LIVE_GAP_S`, on the range and grouping chosen
and with the costliest sessions' cursor on the session it was on. Real clock; every wait polls a
condition (`tests/_wait.py`)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import DataTable

from hermes_tui.app.live_follow import LiveUpdate
from hermes_tui.app.screens.usage import LIVE_GAP_S, LIVE_SETTLE_S, UsageScreen, live_wait, usage_heard
from hermes_tui.state import Changes, SessionDB
from tests._wait import pilot_until
from tests.peer.oracle import Peer

from ._support import make_app, settle
from .test_usage_screen import open_usage

MODEL = "openai/gpt-4.1"


def spend(db: Any, sid: str, cost: float, *, create: bool = True) -> None:
    """A session (new, or `create=False`: one already there) with one more costed reply, as the
    agent writes it: the messages, then the API call's tokens and cost."""
    if create:
        db.call("create_session", sid, "cli", model=MODEL) if isinstance(db, Peer) else db.create_session(
            sid, "cli", model=MODEL
        )
    call = db.call if isinstance(db, Peer) else (lambda name, *a, **kw: getattr(db, name)(*a, **kw))
    call("append_message", sid, "user", "go on")
    call("append_message", sid, "assistant", "done")
    call(
        "update_token_counts", sid, model=MODEL, input_tokens=1000, output_tokens=100,
        estimated_cost_usd=cost, cost_status="estimated", api_call_count=1,
    )  # fmt: skip


def shown_total(screen: UsageScreen) -> float | None:
    return None if screen.data is None else round(screen.data.report.total.cost_usd, 6)


def file_bytes(path: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in (path, Path(f"{path}-wal")) if p.exists()}


def cursor_key(screen: UsageScreen) -> tuple[str | None, str]:
    return screen.session_keys[screen.query_one("#usage-sessions", DataTable).cursor_row]


async def test_a_write_while_open_changes_figures_keeps_cursor(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Our own store writes while the screen is open: the total follows, the range chosen (7
    days) stays, and the cursor stays on its session though a costlier one moves it down."""
    monkeypatch.setenv("TZ", "UTC")
    path = tmp_path / "live.db"
    with SessionDB(path) as db:
        spend(db, "first", 2.0)
        spend(db, "second", 1.0)
    app = make_app(path, now=time.time)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await open_usage(pilot)
        await pilot.press("r", "r", "r")  # 30 -> 90 -> all -> 7 days
        await settle(pilot)
        assert screen.data is not None and screen.data.choice.days == 7
        assert shown_total(screen) == 3.0
        await pilot.press("down")
        assert cursor_key(screen) == (None, "second")
        with SessionDB(path) as db:
            spend(db, "third", 5.0)  # the costliest now: "second" moves to the third row
        await pilot_until(pilot, lambda: shown_total(screen) == 8.0, "the new cost on screen")
        assert screen.data.choice.days == 7 and screen.live_reloads >= 1
        assert [k[1] for k in screen.session_keys] == ["third", "first", "second"]
        assert cursor_key(screen) == (None, "second")
        # reloading writes nothing: the store's files are as the writer left them
        files = file_bytes(path)
        reloads = screen.live_reloads
        usage_heard(app, LiveUpdate(Changes(messages={"third": [9]})))
        await pilot_until(pilot, lambda: screen.live_reloads > reloads, "another reload")
        await settle(pilot)
        assert file_bytes(path) == files


async def test_a_burst_of_writes_reloads_a_bounded_number_of_times(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Many write reports in a row start one reload; a burst of real writes, a few at most (one
    per `LIVE_GAP_S` of the burst, and the one after it)."""
    monkeypatch.setenv("TZ", "UTC")
    path = tmp_path / "burst.db"
    with SessionDB(path) as db:
        spend(db, "s0", 1.0)
    app = make_app(path, now=time.time)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await open_usage(pilot)
        written = LiveUpdate(Changes(messages={"s0": [1]}))
        for _ in range(50):
            usage_heard(app, written)
        usage_heard(app, LiveUpdate())  # statuses only: not a write
        await settle(pilot)
        await pilot_until(pilot, lambda: screen.live_reloads >= 1, "the reload")
        await settle(pilot)
        assert screen.live_reloads == 1
        before = screen.live_reloads
        started = time.monotonic()
        with SessionDB(path) as db:
            for n in range(40):
                spend(db, "s0", 0.5, create=False)
                if n % 10 == 9:
                    await pilot.pause()  # let the follower's reports in during the burst
        await pilot_until(pilot, lambda: shown_total(screen) == 21.0, "the burst's total on screen")
        elapsed = time.monotonic() - started
        assert 1 <= screen.live_reloads - before <= elapsed / LIVE_GAP_S + 2


async def test_with_every_profile_open_a_write_to_either_refreshes(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """`--all`: each profile's follower's reports reach the screen, which adds up both stores."""
    from ._profiles import federated_app

    monkeypatch.setenv("TZ", "UTC")
    home = tmp_path / "hermes"
    stores = {"default": home / "state.db", "work": home / "profiles" / "work" / "state.db"}
    for name, path in stores.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        with SessionDB(path) as db:
            spend(db, f"{name}-1", 1.0)
    app = federated_app(home, now=time.time)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await open_usage(pilot)
        assert screen.source.profiles == ("default", "work") and shown_total(screen) == 2.0
        for name, total in (("work", 5.0), ("default", 9.0)):
            with SessionDB(stores[name]) as db:
                spend(db, f"{name}-1", 3.0 if name == "work" else 4.0, create=False)
            await pilot_until(pilot, lambda t=total: shown_total(screen) == t, f"{name}'s write on screen")


def test_a_slow_load_spaces_the_reloads_out() -> None:
    """Reloads start `LIVE_GAP_S` apart, or four times the last load's duration when that is
    longer (a whole history at 1M messages: ~1 s), and never sooner than `LIVE_SETTLE_S`."""
    assert live_wait(0.0, 0.1) == LIVE_GAP_S
    assert live_wait(0.0, 1.0) == 4.0
    assert live_wait(1.5, 1.0) == 2.5
    assert live_wait(10.0, 1.0) == LIVE_SETTLE_S


@pytest.mark.peer
async def test_hermes_agent_spending_while_open_shows(peer_db: Peer, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """hermes-agent 0.19.0 writes a costed reply while the screen is open: its cost shows."""
    monkeypatch.setenv("TZ", "UTC")
    peer = peer_db
    spend(peer, "agent-1", 0.25)
    assert peer.db_path is not None
    app = make_app(Path(peer.db_path), now=time.time)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await open_usage(pilot)
        assert shown_total(screen) == 0.25
        spend(peer, "agent-1", 0.5, create=False)
        await pilot_until(pilot, lambda: shown_total(screen) == 0.75, "the agent's new cost on screen")
        assert screen.data is not None and screen.data.sessions[0].session_id == "agent-1"
