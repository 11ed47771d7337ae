"""The live decisions as pure functions (`controllers/live_rules.py`): no app, no store."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from hermes_tui.app.controllers.live_rules import (
    ORDER_EVERY_S,
    LivePlan,
    LiveView,
    OrderRefresh,
    cared_ids,
    live_plan,
    order_affected,
    store_live_plan,
)
from hermes_tui.app.live_follow import LiveUpdate
from hermes_tui.state import Changes


def test_an_error_is_told_once_then_kept_quiet() -> None:
    update = LiveUpdate(error="OperationalError: disk I/O error\nmore")
    first = live_plan(update, LiveView())
    assert first == LivePlan(error="OperationalError: disk I/O error more", error_shown=True)
    assert live_plan(update, LiveView(error_shown=True)) == LivePlan(error_shown=True)


def test_a_good_report_clears_the_error_and_sets_statuses() -> None:
    statuses = {"s1": {"state": "working"}}
    plan = live_plan(LiveUpdate(statuses=statuses), LiveView(current_session="s1", error_shown=True))
    assert plan == LivePlan(statuses=statuses, show_tip=True)
    assert not plan.error_shown


def test_active_now_refreshes_the_order_when_statuses_age() -> None:
    plan = live_plan(LiveUpdate(statuses={"x": {}}), LiveView(active_only=True))
    assert plan.refresh_for_age and not plan.refresh_for_changes and not plan.show_tip


def test_changes_that_move_rows_note_and_refresh_the_order() -> None:
    ch = Changes(new_sessions=[{"id": "n"}])
    assert order_affected(ch)
    plan = live_plan(LiveUpdate(changes=ch), LiveView())
    assert plan.note_changes and plan.refresh_for_changes and plan.follow_lineage is None


def test_a_continuation_alone_does_not_touch_the_order() -> None:
    ch = Changes(continued={"a": "b"})
    assert not order_affected(ch)
    plan = live_plan(LiveUpdate(changes=ch), LiveView(current_session="a", lineage_ids=frozenset({"a"})))
    assert not plan.refresh_for_changes
    assert plan.follow_lineage is True  # the open session's chain went on: its lineage is read


def test_search_reruns_only_while_searching_and_for_messages_or_removals() -> None:
    ch = Changes(messages={"s": [1]})
    assert live_plan(LiveUpdate(changes=ch), LiveView(searching=True)).search_changed
    assert not live_plan(LiveUpdate(changes=ch), LiveView()).search_changed
    titles = Changes(titles={"s": "t"})
    assert not live_plan(LiveUpdate(changes=titles), LiveView(searching=True)).search_changed


def test_the_open_session_deleted_elsewhere() -> None:
    ch = Changes(deleted=["s"], messages={"s": [3]})
    plan = live_plan(LiveUpdate(changes=ch), LiveView(current_session="s"))
    assert plan.current_deleted == "s" and plan.follow_lineage is None


def test_new_messages_follow_the_open_session_without_its_lineage() -> None:
    ch = Changes(messages={"s": [3]})
    assert live_plan(LiveUpdate(changes=ch), LiveView(current_session="s")).follow_lineage is False
    other = Changes(messages={"t": [3]})
    assert live_plan(LiveUpdate(changes=other), LiveView(current_session="s")).follow_lineage is None


def test_an_end_or_a_reset_reads_the_lineage_too() -> None:
    ended = Changes(ended={"s": "done"})
    assert live_plan(LiveUpdate(changes=ended), LiveView(current_session="s")).follow_lineage is True
    reset = Changes(reset=True)
    assert live_plan(LiveUpdate(changes=reset), LiveView(current_session="s")).follow_lineage is True


def test_a_child_of_the_lineage_reads_the_lineage() -> None:
    ch = Changes(children=[{"id": "c", "parent_session_id": "p"}])
    view = LiveView(current_session="s", lineage_ids=frozenset({"p", "s"}))
    assert live_plan(LiveUpdate(changes=ch), view).follow_lineage is True


def test_a_chain_reloads_for_its_segments_messages_only() -> None:
    view = LiveView(current_session="b", chain_sessions=frozenset({"a", "b"}))
    plan = live_plan(LiveUpdate(changes=Changes(messages={"a": [1]})), view)
    assert plan.reload_chain and plan.follow_lineage is None
    plan = live_plan(LiveUpdate(changes=Changes(messages={"z": [1]})), view)
    assert not plan.reload_chain and plan.follow_lineage is None


def test_several_stores_key_statuses_by_profile_and_follow_only_the_open_store() -> None:
    statuses = {"s": {"state": "idle"}}
    ch = Changes(messages={"s": [2]})
    view = LiveView(current_session="s", current_profile="work")
    plan = store_live_plan("work", LiveUpdate(changes=ch, statuses=statuses), view)
    assert plan.statuses == {("work", "s"): {"state": "idle"}}
    assert plan.show_tip and plan.refresh_for_changes and plan.follow_lineage is False
    assert not plan.note_changes  # the merged order is read again, not kept incrementally
    other = store_live_plan("home", LiveUpdate(changes=ch, statuses=statuses), view)
    assert not other.show_tip and other.follow_lineage is None and other.refresh_for_changes


def test_several_stores_errors_are_badges_not_notifications() -> None:
    assert store_live_plan("p", LiveUpdate(error="boom"), LiveView()) == LivePlan()


def test_several_stores_a_chain_reloads_on_any_message() -> None:
    view = LiveView(current_session="s", current_profile="p", chain_sessions=frozenset({"s"}))
    plan = store_live_plan("p", LiveUpdate(changes=Changes(messages={"z": [1]})), view)
    assert plan.reload_chain


def test_order_refreshes_run_one_at_a_time_and_once_more_after() -> None:
    refresh = OrderRefresh()
    started: list[int] = []
    refresh.ask(lambda: started.append(1))
    refresh.ask(lambda: started.append(2))  # one is in flight: asked again, not started
    refresh.ask(lambda: started.append(3))
    assert started == [1] and refresh.running and refresh.again
    refresh.running = False  # its answer came (the screen's handler)
    refresh.ask(lambda: started.append(4))
    assert started == [1, 4] and not refresh.again


def test_live_order_refreshes_start_at_most_every_order_every_s() -> None:
    """After each commit the order and the list's page were read again: most of the list's live
    CPU. Asked again within `ORDER_EVERY_S` of the last start, one timer runs the latest ask."""
    now = [100.0]
    timers: list[tuple[float, Callable[[], None]]] = []
    refresh = OrderRefresh(lambda wait, due: timers.append((wait, due)), clock=lambda: now[0])
    started: list[int] = []
    refresh.ask(lambda: started.append(1))  # after a quiet spell: at once
    refresh.running = False  # its answer came (the screen's handler)
    now[0] += 0.05
    refresh.ask(lambda: started.append(2))
    refresh.ask(lambda: started.append(3))  # merged: one timer, the latest ask
    assert started == [1] and not refresh.running and len(timers) == 1
    assert timers[0][0] == pytest.approx(ORDER_EVERY_S - 0.05)
    now[0] += timers[0][0]
    timers[0][1]()
    assert started == [1, 3] and refresh.running
    refresh.running = False
    now[0] += ORDER_EVERY_S
    refresh.ask(lambda: started.append(4))  # a quiet spell again: at once, no timer
    assert started == [1, 3, 4] and len(timers) == 1


def test_the_follower_cares_about_the_rows_the_session_and_its_lineage() -> None:
    nodes = {"nodes": [{"id": f"n{i}"} for i in range(70)]}
    ids = cared_ids(["a", "b"], "s", nodes)
    assert ids[:3] == ["a", "b", "s"] and ids[3:] == [f"n{i}" for i in range(64)]
    assert cared_ids(["a"], None, None) == ["a"]


def test_one_agent_writing_20_messages_a_second_is_two_live_order_reads_a_second() -> None:
    """Each live order read repaints the open session's row (its counts) in a frame of its own
    and costs a read: at five a second, following one agent, the list's live work was about
    2 % of a core. Counted on the refresh's own clock: a commit every 50 ms for 10 s, each
    read answered at once (the screen's handler: `running` off, again when asked meanwhile)."""
    now = [100.0]
    timers: list[tuple[float, Callable[[], None]]] = []
    refresh = OrderRefresh(lambda wait, due: timers.append((now[0] + wait, due)), clock=lambda: now[0])
    starts: list[float] = []

    def start() -> None:
        starts.append(now[0])

    for _commit in range(200):
        now[0] += 0.05
        for due_at, due in [t for t in timers if t[0] <= now[0]]:
            timers.remove((due_at, due))
            due()
        refresh.ask(start)
        if refresh.running:  # its answer came
            refresh.running = False
            if refresh.again:
                refresh.ask(start)
    assert len(starts) <= 10 * 2 + 1, len(starts)  # not 50
    assert len(starts) >= 10 * 2 - 1  # still every 0.5 s: the list lags a commit by at most that
    assert all(b - a >= ORDER_EVERY_S - 1e-9 for a, b in zip(starts, starts[1:], strict=False))
