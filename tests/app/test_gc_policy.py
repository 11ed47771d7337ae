"""The app's GC policy: full collections only when input is quiet, defaults restored on exit."""

from __future__ import annotations

import gc

from hermes_tui.app.gc_policy import IdleCollector

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
    finally:
        c.stop()
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0


async def test_the_app_freezes_after_startup_and_restores_the_gc_when_it_exits(demo_db):
    before = gc.get_threshold()
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause(1.3)  # the policy starts a second after mount
        assert gc.get_threshold()[2] >= 1_000_000
        await pilot.press("down")
        assert app.collector.last_input > 0
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0
