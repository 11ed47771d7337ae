"""The app's one debounce (`hermes_tui.app.debounce`): what tests wait on instead of sleeping."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.widgets import Static

from hermes_tui.app.debounce import Debouncer, any_pending
from tests._wait import pilot_until

from ._support import settle


class Owner(Static):
    pass


class DebounceApp(App[None]):
    def compose(self) -> ComposeResult:
        yield Owner(id="owner")


async def test_restarts_run_the_callback_once_with_the_last_callback() -> None:
    app = DebounceApp()
    calls: list[str] = []
    async with app.run_test() as pilot:
        d = Debouncer(app.query_one(Owner), 0.05)
        assert not d.pending and not any_pending(app)
        d.restart(lambda: calls.append("first"))
        d.restart(lambda: calls.append("second"))
        assert d.pending and any_pending(app)
        await pilot_until(pilot, lambda: not d.pending, "the debounced call ran")
        assert calls == ["second"] and not any_pending(app)


async def test_cancel_drops_the_call_and_start_if_idle_does_not_postpone() -> None:
    app = DebounceApp()
    calls: list[int] = []
    async with app.run_test() as pilot:
        d = Debouncer(app.query_one(Owner), 0.05, lambda: calls.append(len(calls)))
        d.restart()
        d.cancel()
        assert not d.pending
        d.start_if_idle()
        first = d._timer
        d.start_if_idle()  # already due: the same countdown goes on
        assert d._timer is first
        await settle(pilot)  # waits for the pending call, then for quiet
        assert calls == [0] and not d.pending


async def test_a_removed_owner_leaves_nothing_pending() -> None:
    app = DebounceApp()
    calls: list[int] = []
    async with app.run_test() as pilot:
        owner = app.query_one(Owner)
        d = Debouncer(owner, 30.0, lambda: calls.append(1))
        d.restart()
        assert any_pending(app)
        await owner.remove()
        await pilot.pause()
        assert not d.pending and not any_pending(app)  # its timers stopped with it: never fires
        assert calls == []
