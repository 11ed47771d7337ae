"""The prune dialog lists every excluded row (a scrollable Line-API list), reasons summarised."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Button, Input, Static

from hermes_tui.app.screens.prune import ExcludedList, PruneDialog
from hermes_tui.state import SessionDB

from ._support import DEMO_BASE, make_app, settle
from .test_actions import plain

OPEN_ROWS = 1500
PINNED_ROWS = 5


def add_bulk(path: Path, open_rows: int = OPEN_ROWS, pinned_rows: int = PINNED_ROWS) -> None:
    """``bulk-NNNN`` sessions titled ``bulk NNNN``: the first `pinned_rows` ended and pinned,
    the rest still open — all held back by a prune on the title ``bulk``."""
    rows = [
        (f"bulk-{i:04d}", f"bulk {i:04d}", DEMO_BASE - 86400 * 200 + i, i < pinned_rows)
        for i in range(open_rows + pinned_rows)
    ]
    with SessionDB(path, migrate=False) as db:
        db._execute_write(
            lambda c: c.executemany(
                "INSERT INTO sessions (id, source, title, started_at, ended_at, pinned, message_count) "
                "VALUES (?, 'cli', ?, ?, ?, ?, 0)",
                [
                    (sid, title, ts, ts + 60 if pinned else None, int(pinned))
                    for sid, title, ts, pinned in rows
                ],
            )
        )


@pytest.fixture
def bulk_db(demo_db: Path) -> Path:
    add_bulk(demo_db)
    return demo_db


async def test_prune_lists_every_excluded_row_with_its_reason(bulk_db: Path) -> None:
    app = make_app(bulk_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("P")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, PruneDialog)
        dialog.query_one("#prune-days", Input).value = ""
        dialog.query_one("#prune-title", Input).value = "bulk"
        await settle(pilot, rounds=3)
        assert dialog.plan is not None and dialog.plan["sessions"] == 0
        assert dialog.query_one("#confirm", Button).disabled
        summary = plain(dialog.query_one("#prune-excluded-summary", Static))
        assert (
            f"Excluded ({OPEN_ROWS + PINNED_ROWS:,}): {OPEN_ROWS:,} still open · {PINNED_ROWS} pinned"
            in summary
        )
        listed = dialog.query_one("#prune-excluded", ExcludedList)
        assert len(listed.rows) == OPEN_ROWS + PINNED_ROWS  # no cap, no "… and N more"
        assert listed.virtual_size.height == OPEN_ROWS + PINNED_ROWS
        assert 0 < listed.size.height < 10
        first = "".join(seg.text for seg in listed.render_line(0))
        assert first.startswith("bulk-0000  pinned  bulk 0000")
        listed.focus()
        await pilot.press("end")
        await pilot.pause()
        last = OPEN_ROWS + PINNED_ROWS - 1
        bottom = "".join(seg.text for seg in listed.render_line(listed.size.height - 1))
        assert bottom.startswith(f"bulk-{last:04d}  still open  bulk {last:04d}")
        assert listed.scroll_offset.y == last - listed.size.height + 1


async def test_prune_excluded_list_hidden_when_nothing_is_excluded(demo_db: Path) -> None:
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("P")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, PruneDialog)
        dialog.query_one("#prune-days", Input).value = ""
        dialog.query_one("#prune-title", Input).value = "no such title anywhere"
        await settle(pilot, rounds=3)
        assert dialog.plan is not None and not dialog.plan["excluded"]
        assert not dialog.query_one("#prune-excluded", ExcludedList).display
        assert not dialog.query_one("#prune-excluded-summary", Static).display
