"""Prune with the real clock: the dialog's defaults ("older than 90 days") must produce a
preview and a working Delete. Every other Pilot test freezes the clock, which hid that each
preview was thrown away (the days filter was recomputed from the live clock and compared)."""

from __future__ import annotations

import time
from pathlib import Path

from textual.widgets import Button, Static

from hermes_tui.app.render import system_clock
from hermes_tui.app.screens.prune import PruneDialog
from hermes_tui.state import SessionDB

from ._support import THEME, settle
from .test_actions import plain

DAY = 86400.0


def _aged_store(path: Path) -> tuple[list[str], list[str]]:
    """Three ended sessions 120 days old, two recent ones; returns (old ids, recent ids)."""
    now = time.time()
    sessions = []
    for i in range(3):
        start = now - 120 * DAY + i * 60
        sessions.append(
            {
                "id": f"old-{i}",
                "source": "cli",
                "title": f"old work {i}",
                "started_at": start,
                "ended_at": start + 600,
                "end_reason": "user_exit",
                "messages": [
                    {"role": "user", "content": f"old question {i}", "timestamp": start + 1},
                    {"role": "assistant", "content": "old answer", "timestamp": start + 2},
                ],
            }
        )
    for i in range(2):
        start = now - 2 * DAY + i * 60
        sessions.append(
            {
                "id": f"new-{i}",
                "source": "cli",
                "title": f"new work {i}",
                "started_at": start,
                "ended_at": start + 600,
                "end_reason": "user_exit",
                "messages": [{"role": "user", "content": "recent", "timestamp": start + 1}],
            }
        )
    with SessionDB(path) as db:
        assert db.import_sessions(sessions)["ok"]
    return [f"old-{i}" for i in range(3)], [f"new-{i}" for i in range(2)]


async def test_prune_defaults_with_the_real_clock(tmp_path: Path) -> None:
    from hermes_tui.app.app import HermesApp

    path = tmp_path / "state.db"
    old, recent = _aged_store(path)
    app = HermesApp(path, now=system_clock, theme=THEME, path_label="state.db")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("P")
        await settle(pilot, rounds=3)
        dialog = app.screen
        assert isinstance(dialog, PruneDialog)
        assert dialog.plan is not None, plain(dialog.query_one("#prune-preview", Static))
        assert sorted(dialog.plan["ids"]) == old
        assert not dialog.query_one("#confirm", Button).disabled
        assert "3 sessions" in plain(dialog.query_one("#prune-preview", Static))
        await pilot.click("#confirm")
        await settle(pilot, rounds=3)
        assert not isinstance(app.screen, PruneDialog)
    with SessionDB(path, read_only=True) as db:
        assert [db.get_session(i) for i in old] == [None] * 3
        assert all(db.get_session(i) for i in recent)
