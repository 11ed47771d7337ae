"""The app's GC policy: full collections only when input is quiet, defaults restored on exit."""

from __future__ import annotations

import gc

from hermes_tui.app.gc_policy import MAX_FULL_S, MIN_FULL_S, MUCH_GARBAGE, TARGET_PAUSE_S, IdleCollector
from tests._wait import pilot_until

from ._support import make_app


def test_full_collections_wait_for_quiet_input_and_settings_come_back():
    before = gc.get_threshold()
    c = IdleCollector()
    c.start()
    try:
        assert gc.get_threshold()[2] >= 1_000_000 and gc.get_freeze_count() > 0
        junk = [[i] for i in range(50_000)]  # survivors push work into the older generations
        del junk
        for _ in range(20):
            gc.collect(1)
        assert gc.get_count()[2] > 0
        c.touch()
        c.poll()
        assert c.full_collections == 0  # input just arrived: no pause now
        c.last_input -= 5
        c.poll()
        assert c.full_collections == 1 and gc.get_count()[2] == 0
        for _ in range(20):  # more work left to collect, input quiet: but one ran just now
            gc.collect(1)
        c.poll()
        assert c.full_collections == 1 and gc.get_count()[2] > 0
        c._last_full -= c.interval
        c.poll()
        assert c.full_collections == 2
    finally:
        c.stop()
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0


def test_the_interval_shortens_while_garbage_piles_up_and_grows_back_when_it_stops():
    """The pause is mostly the garbage waiting, so collecting more often keeps each one short."""
    c = IdleCollector()
    assert MIN_FULL_S < c.interval < MAX_FULL_S
    intervals = []
    for _ in range(6):
        c.collected(TARGET_PAUSE_S * 3, MUCH_GARBAGE * 5)
        intervals.append(c.interval)
    assert intervals == sorted(intervals, reverse=True) and intervals[-1] == MIN_FULL_S
    c.collected(TARGET_PAUSE_S * 0.75, MUCH_GARBAGE * 2)  # within the target: keep the pace
    assert c.interval == MIN_FULL_S
    # Idle: a long walk of the live objects, nothing found: collecting sooner would gain nothing.
    for _ in range(6):
        c.collected(TARGET_PAUSE_S * 2, 10)
    assert c.interval == MAX_FULL_S and c.full_collections == 13


def test_a_collection_waits_for_the_adapted_interval():
    c = IdleCollector()
    c.start()
    try:
        first = c.interval
        c.collected(TARGET_PAUSE_S * 3, MUCH_GARBAGE)  # a long pause: the next one comes sooner
        assert c.interval == first / 2
        c.last_input -= 5
        for _ in range(20):
            gc.collect(1)
        c._last_full -= c.interval - 1  # not yet
        c.poll()
        assert c.full_collections == 1
        c._last_full -= 1
        c.poll()
        assert c.full_collections == 2
    finally:
        c.stop()


async def test_the_app_freezes_after_startup_and_restores_the_gc_when_it_exits(demo_db):
    before = gc.get_threshold()
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot_until(  # the policy starts a second after mount
            pilot, lambda: app.collector.started, "the app took over the GC thresholds"
        )
        assert gc.get_threshold()[2] >= 1_000_000
        assert gc.get_freeze_count() > 0
        quiet_since = app.collector.last_input
        await pilot.press("down")
        assert app.collector.last_input > quiet_since  # a key postpones the next full collection
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0
