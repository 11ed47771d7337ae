"""Progressive first paint (issue #21): on a store whose whole order is slow (seconds on a cold
10M-message file), the list paints the head of the order at once, says it is still counting, and
the keys that need the whole order wait for it without freezing the app; the whole order then
takes over with the cursor on the same session.

The slow order is injected through the store's public method (`SessionDB.session_order` waits
for an event); the app runs on the real clock.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Input, Select, Static

from hermes_tui.app.list_views import DEFAULT_FILTER
from hermes_tui.app.screens.main import MainScreen
from hermes_tui.app.widgets.session_list import PAGE_SIZE, SessionList
from hermes_tui.state import SessionDB, SessionFilter
from hermes_tui.state.listing import ListingMixin
from tests._wait import pilot_until
from tests.store.test_order_head import build_live

from ._support import make_app, settle

SESSIONS = 300


@pytest.fixture(scope="module")
def live_master(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("first-paint") / "state.db"
    build_live(path, SESSIONS, 3)
    return path


@pytest.fixture
def store(live_master: Path, tmp_path: Path) -> Path:
    target = tmp_path / "state.db"
    target.write_bytes(live_master.read_bytes())
    return target


@pytest.fixture
def slow_order(monkeypatch: pytest.MonkeyPatch) -> Iterator[threading.Event]:
    """The unfiltered order waits for the event (a cold file); filtered orders do not."""
    gate = threading.Event()
    real: Callable[..., Any] = SessionDB.session_order

    def gated(self: SessionDB, filter: SessionFilter | None = None, *args: Any, **kw: Any) -> Any:
        if filter is None or filter in (SessionFilter(), DEFAULT_FILTER):  # the list's default
            gate.wait(30)
        return real(self, filter, *args, **kw)

    monkeypatch.setattr(SessionDB, "session_order", gated)
    yield gate
    gate.set()


def expected_order(path: Path) -> list[str]:
    """The whole order, by the store's own method (not the slowed one)."""
    with SessionDB(path, read_only=True, migrate=False) as db:
        return ListingMixin.session_order(db, SessionFilter()).ids


def main_of(app: Any) -> MainScreen:
    screen = app.screen
    assert isinstance(screen, MainScreen)
    return screen


async def painted_head(pilot: Any) -> tuple[MainScreen, SessionList]:
    """Wait for the head's first paint (its rows on screen)."""
    app = pilot.app
    await pilot_until(pilot, lambda: isinstance(app.screen, MainScreen), "the main screen shows")
    main = main_of(app)
    sessions = main.query_one("#sessions", SessionList)
    await pilot_until(
        pilot, lambda: sessions.provisional and sessions.row_at(0) is not None, "the head is painted"
    )
    return main, sessions


def header(main: MainScreen) -> str:
    return str(main.query_one("#info", Static).render())


async def test_head_paints_first_and_counts_honestly(store: Path, slow_order: threading.Event) -> None:
    full = expected_order(store)
    app = make_app(store, now=time.time)
    async with app.run_test(size=(120, 40)) as pilot:
        main, sessions = await painted_head(pilot)
        assert list(sessions._ids) == full[:PAGE_SIZE]
        assert sessions.total == PAGE_SIZE and not sessions.loading
        assert f"Sessions ≥ {PAGE_SIZE}" in str(sessions.border_title)
        assert "counting sessions…" in header(main)
        assert f"{PAGE_SIZE} sessions" not in header(main)  # never a wrong count
        await pilot.press("down", "down", "down")
        await pilot_until(pilot, lambda: sessions.cursor == 3, "the cursor moves within the head")
        assert sessions.selected_id == full[3]
        top = sessions.scroll_offset.y
        slow_order.set()
        await pilot_until(pilot, lambda: not sessions.provisional, "the whole order takes over")
        await settle(pilot)
        assert list(sessions._ids) == full
        assert sessions.selected_id == full[3] and sessions.cursor == 3
        assert sessions.scroll_offset.y == top
        # Hermes' list: the untagged children (sub-agent runs) of the store are folded away.
        assert len(full) < SESSIONS
        assert f"Sessions {len(full)}" in str(sessions.border_title)
        assert f"{len(full)} sessions" in header(main) and "counting" not in header(main)


async def test_end_pagedown_and_select_all_wait_for_the_order(
    store: Path, slow_order: threading.Event
) -> None:
    """End, PageDown past the head and select-all are kept and run once the order is there;
    meanwhile the app keeps handling keys (a move within the head is not one of them: a key
    after a waiting one waits too, so the order of the keys is kept)."""
    full = expected_order(store)
    app = make_app(store, now=time.time)
    async with app.run_test(size=(120, 40)) as pilot:
        _main, sessions = await painted_head(pilot)
        await pilot.press("end")
        await pilot.pause()
        assert sessions.cursor == 0 and sessions.waiting_moves
        assert "your keys wait" in "".join(
            seg.text for seg in sessions.render_line(PAGE_SIZE + 1 - int(sessions.scroll_offset.y))
        )
        await pilot.press("up")  # after End: relative to where End lands
        await pilot.press("asterisk")  # select all: of the whole order
        await pilot.pause()
        assert sessions.cursor == 0 and not sessions.selection
        assert app.is_running
        slow_order.set()
        await pilot_until(pilot, lambda: not sessions.provisional, "the whole order takes over")
        await settle(pilot)
        assert sessions.cursor == len(full) - 2 and sessions.selected_id == full[-2]
        assert sessions.selection == set(full)
        assert not sessions.waiting_moves


async def test_pagedown_far_lands_where_it_would_have(store: Path, slow_order: threading.Event) -> None:
    full = expected_order(store)
    app = make_app(store, now=time.time)
    async with app.run_test(size=(120, 40)) as pilot:
        _main, sessions = await painted_head(pilot)
        height = sessions._body_height
        presses = PAGE_SIZE // height + 2  # the last ones go past the head
        for _ in range(presses):
            await pilot.press("pagedown")
        await pilot.pause()
        assert sessions.cursor < PAGE_SIZE and sessions.waiting_moves
        slow_order.set()
        await pilot_until(pilot, lambda: not sessions.provisional, "the whole order takes over")
        await settle(pilot)
        assert sessions.cursor == presses * height
        assert sessions.selected_id == full[presses * height]
        top = int(sessions.scroll_offset.y)
        assert top <= sessions.cursor < top + height  # and it is on screen


async def test_jump_to_a_session_past_the_head(store: Path, slow_order: threading.Event) -> None:
    full = expected_order(store)
    target = full[200]
    app = make_app(store, now=time.time)
    async with app.run_test(size=(120, 40)) as pilot:
        main, sessions = await painted_head(pilot)
        main.open_session(target)
        await pilot_until(pilot, lambda: main.current_session == target, "the transcript shows it")
        assert sessions.provisional and sessions.waiting_moves
        slow_order.set()
        await pilot_until(pilot, lambda: not sessions.provisional, "the whole order takes over")
        await settle(pilot)
        assert sessions.selected_id == target and sessions.cursor == 200
        assert main.current_session == target


async def test_a_filter_typed_meanwhile_is_not_replaced_by_the_late_order(
    store: Path, slow_order: threading.Event
) -> None:
    """The user filters before the whole order arrives: the filtered order (not slow) shows,
    and the unfiltered order finishing later does not replace it."""
    with SessionDB(store, read_only=True, migrate=False) as db:
        matching = len(ListingMixin.session_order(db, SessionFilter(text="live012")))
    assert matching == 9  # live0120-live0129 but live0126, a sub-agent run Hermes' list folds away
    app = make_app(store, now=time.time)
    async with app.run_test(size=(120, 40)) as pilot:
        main, sessions = await painted_head(pilot)
        main.query_one("#filter-text", Input).value = "live012"
        await pilot_until(pilot, lambda: not sessions.provisional, "the filtered order shows")
        await pilot_until(pilot, lambda: sessions.total == matching, "the filtered list is complete")
        slow_order.set()
        await settle(pilot)
        await pilot.pause(0.2)
        await settle(pilot)
        assert sessions.total == matching and not sessions.provisional
        assert all(sid.startswith("live012") for sid in sessions._ids)


async def test_models_are_read_after_first_paint(store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The model list (a table scan on 0.19.0 files) no longer holds first paint: the list shows
    while it is read, and the model filter's choices fill in when it is ready."""
    gate = threading.Event()
    real: Callable[..., Any] = SessionDB.distinct_values

    def gated(self: SessionDB, column: str) -> Any:
        if column == "model":
            gate.wait(30)
        return real(self, column)

    monkeypatch.setattr(SessionDB, "distinct_values", gated)
    with SessionDB(store) as db:
        db._execute_write(lambda c: c.execute("UPDATE sessions SET model = 'm-' || (rowid % 3)"))
    app = make_app(store, now=time.time)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot_until(pilot, lambda: isinstance(app.screen, MainScreen), "the main screen shows")
            main = main_of(app)
            sessions = main.query_one("#sessions", SessionList)
            await pilot_until(pilot, lambda: sessions.row_at(0) is not None, "first paint")
            models = main.query_one("#filter-model", Select)
            assert len(models._options) == 1  # only the "any model" prompt so far
            gate.set()
            await pilot_until(pilot, lambda: len(models._options) == 4, "the model choices fill in")
            await settle(pilot)
    finally:
        gate.set()


async def test_a_live_change_while_the_head_shows_is_applied_after_the_hand_over(
    store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The whole order was read before an agent started a session (a cold read takes seconds):
    the live refresh skipped while the head showed runs once the order has taken over, so the
    new session is listed first instead of waiting for the next commit."""
    gate = threading.Event()
    real: Callable[..., Any] = SessionDB.session_order
    listed = len(expected_order(store))

    def read_then_wait(self: SessionDB, filter: SessionFilter | None = None, *args: Any, **kw: Any) -> Any:
        result = real(self, filter, *args, **kw)
        if filter is None or filter in (SessionFilter(), DEFAULT_FILTER):  # the list's default
            gate.wait(30)
        return result

    monkeypatch.setattr(SessionDB, "session_order", read_then_wait)
    app = make_app(store, now=time.time)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            main, sessions = await painted_head(pilot)
            with SessionDB(store) as writer:
                writer.create_session("agent-new", "cli", model="m")
                writer.append_message("agent-new", "user", "started while the list was counting")
            await pilot_until(pilot, lambda: main.order_refresh.missed, "the follower saw the change")
            assert "agent-new" not in sessions._ids
            gate.set()
            await pilot_until(pilot, lambda: not sessions.provisional, "the whole order takes over")
            await pilot_until(
                pilot, lambda: sessions._ids and sessions._ids[0] == "agent-new", "the new session is first"
            )
            assert len(sessions._ids) == listed + 1
    finally:
        gate.set()


async def test_a_cursor_on_the_first_row_goes_to_the_pinned_row_first(
    store: Path, slow_order: threading.Event
) -> None:
    """Pinned sessions come first in the default order, but the head of the first paint is read
    without them (its walk of the newest messages cannot put them first). When the whole order
    takes over, a cursor still on the first row goes to the first row, the pinned session,
    instead of staying on its session one row down."""
    pinned = expected_order(store)[-5]  # an old session
    with SessionDB(store, migrate=False) as db:
        db._execute_write(lambda c: c.execute("UPDATE sessions SET pinned = 1 WHERE id = ?", (pinned,)))
    app = make_app(store, now=time.time)
    async with app.run_test(size=(120, 40)) as pilot:
        main, sessions = await painted_head(pilot)
        assert sessions.cursor == 0 and sessions.selected_id != pinned
        slow_order.set()
        await pilot_until(pilot, lambda: not sessions.provisional, "the whole order takes over")
        await settle(pilot)
        assert sessions._ids[0] == pinned
        assert sessions.cursor == 0 and sessions.selected_id == pinned
        await pilot_until(pilot, lambda: main.current_session == pinned, "the pinned session opens")
