"""The demo has realistic ages relative to its build time, and a cached demo of another version
is rebuilt: prune, the orders and the statistics show something on a first launch (real clock)."""

from __future__ import annotations

import time
from pathlib import Path

from textual.widgets import Button, Static

from hermes_tui import demo
from hermes_tui.app.render import system_clock
from hermes_tui.app.screens.prune import PruneDialog
from hermes_tui.state import SessionDB, SessionFilter

from ._support import DEMO_BASE, THEME, settle
from .test_actions import plain

DAY = 86400.0


def ages(path: Path, now: float) -> list[dict[str, float | None]]:
    """Every session's start age in days and whether it ended."""
    with SessionDB(path, read_only=True, migrate=False) as db:
        rows = db.list_rows(list(db.session_order(SessionFilter()).ids))
    return [
        {
            "age": (now - r["started_at"]) / DAY,
            "ended": r["ended_at"],
            "end_age": r["ended_at"] and now - r["ended_at"],
        }
        for r in rows
    ]


def test_demo_spreads_over_months_mostly_ended(tmp_path: Path) -> None:
    path = demo.build_demo(tmp_path / "state.db", base=DEMO_BASE)
    rows = ages(path, DEMO_BASE)
    assert all(r["age"] > 0 for r in rows)  # type: ignore[operator]
    assert max(r["age"] for r in rows) > 100  # type: ignore[type-var]
    assert min(r["age"] for r in rows) < 1  # type: ignore[type-var]
    assert sum(1 for r in rows if r["age"] > 90) >= 5  # type: ignore[operator]
    open_ = [r for r in rows if r["ended"] is None]
    assert 2 <= len(open_) <= len(rows) // 5
    assert all(r["end_age"] >= 0 for r in rows if r["ended"] is not None)  # type: ignore[operator]
    with SessionDB(path, read_only=True, migrate=False) as db:
        assert db.get_meta(demo.DEMO_META_VERSION) == str(demo.DEMO_VERSION)
        assert db.top_sessions(5) and db.usage_by_model()
        days = {d["day"] for d in db.activity_by_day()}
        assert len(days) >= 20


def test_demo_usage_lands_on_the_days_its_sessions_ran(tmp_path: Path) -> None:
    """Each turn's usage is stamped at its answer: the Usage screen shows the demo's spend over
    its months, and every usage row lies inside its session's own messages."""
    path = demo.build_demo(tmp_path / "state.db", base=DEMO_BASE)
    with SessionDB(path, read_only=True, migrate=False) as db:
        rows = (
            db._conn()
            .execute(
                "SELECT u.first_seen, u.last_seen, MIN(m.timestamp), MAX(m.timestamp) "
                "FROM session_model_usage u JOIN messages m ON m.session_id = u.session_id "
                "GROUP BY u.rowid"
            )
            .fetchall()
        )
        report = db.usage_report("day", None, since=DEMO_BASE - 130 * 86400, until=DEMO_BASE, tz="UTC")
    assert rows and all(lo <= first <= last <= hi for first, last, lo, hi in rows)
    assert sum(1 for r in rows if DEMO_BASE - r[1] > 30 * 86400) >= len(rows) // 2
    days_with_cost = [k for k, fig in report.period_totals.items() if fig.estimated_cost_usd > 0]
    assert len(days_with_cost) >= 20


async def test_fresh_demo_prune_preview_with_the_real_clock() -> None:
    """A first launch: ensure_demo_db() builds at the wall clock and the default prune finds rows."""
    from hermes_tui.app.app import HermesApp

    path = demo.ensure_demo_db()
    assert path == demo.demo_path()
    rows = ages(path, time.time())
    assert min(r["age"] for r in rows) < 1 < 90 < max(r["age"] for r in rows)  # type: ignore[operator]
    app = HermesApp(path, now=system_clock, theme=THEME, path_label="state.db")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("P")
        await settle(pilot, rounds=3)
        dialog = app.screen
        assert isinstance(dialog, PruneDialog)
        assert dialog.plan is not None and dialog.plan["sessions"] >= 5
        assert not dialog.query_one("#confirm", Button).disabled
        assert "still open" in plain(dialog.query_one("#prune-excluded-summary", Static))


def test_cached_demo_of_another_version_is_rebuilt(tmp_path: Path) -> None:
    target = demo.demo_path()
    target.parent.mkdir(parents=True)
    old_v1 = target.parent / "demo-state-v1.db"
    old_v1.write_bytes(b"an old demo")
    demo.build_demo(target, base=DEMO_BASE - 400 * DAY)
    with SessionDB(target) as db:
        db.set_meta(demo.DEMO_META_VERSION, str(demo.DEMO_VERSION - 1))  # as if built by an older release
    path = demo.ensure_demo_db()
    assert path == target and not old_v1.exists()
    with SessionDB(path, read_only=True, migrate=False) as db:
        assert db.get_meta(demo.DEMO_META_VERSION) == str(demo.DEMO_VERSION)
        assert abs(float(db.get_meta(demo.DEMO_META_BASE) or 0) - time.time()) < 600
    built = demo.fingerprint(path)
    assert demo.ensure_demo_db() == path and demo.fingerprint(path) == built  # current: kept
