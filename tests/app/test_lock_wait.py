"""The lock-wait UI against a real lock holder: another process holding `BEGIN IMMEDIATE`.

A plain-`sqlite3` subprocess takes the write lock and keeps it until the test writes a line to
its stdin (or a safety cap passes). While it holds the lock the user renames a session: the
dialog shows "waiting for the write lock…"; Esc gives up (nothing is written and the dialog says
so); a second attempt succeeds once the holder lets go. Every wait is on a condition with a
timeout, never a fixed sleep.

While the app runs, the test reads through the app's own `SessionDB` (`app.db`), never a second
`SessionDB` on the same file: constructing one reads the file header with a plain `open()`,
and closing that descriptor drops every POSIX lock this process holds on the file (POSIX
locks belong to the process, not the descriptor) — the holder's close then deletes the WAL
under the app's connections.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from textual.widgets import Input, Static

from hermes_tui.app.screens.main import MainScreen
from hermes_tui.app.screens.rename import RenameDialog
from tests._wait import pilot_until

from ._support import make_app, settle
from .test_actions import open_on, plain, sid_of, title_of

HOLDER = r"""
import select, sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=10)
conn.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
select.select([sys.stdin], [], [], float(sys.argv[2]))  # until the test says so, or the cap
conn.execute("ROLLBACK")
conn.close()
print("released", flush=True)
"""

#: The holder lets go by itself after this long, so a failing test never wedges the run.
HOLD_CAP_S = 20.0
WAIT_S = 8.0


@contextmanager
def lock_holder(path: Path) -> Iterator[Callable[[], None]]:
    """Start the holder, wait until it owns the write lock, yield a `release()`."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(path), str(HOLD_CAP_S)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    released = False

    def release() -> None:
        nonlocal released
        if released:
            return
        released = True
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
        assert proc.stdout.readline().strip() == "released"
        proc.wait(timeout=WAIT_S)

    try:
        assert proc.stdout.readline().strip() == "locked"  # blocks until BEGIN IMMEDIATE returned
        yield release
    finally:
        if not released:
            proc.kill()
        proc.wait(timeout=WAIT_S)


async def test_rename_waits_for_a_real_lock_holder_cancel_then_succeed(demo_db: Path) -> None:
    sid = sid_of(demo_db, "Nightly backup report")
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_on(pilot, sid)
        await pilot.press("r")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, RenameDialog)
        dialog.query_one("#rename-input", Input).value = "Nightly backup, under lock"
        await settle(pilot)
        status = dialog.query_one("#status", Static)
        assert app.db is not None
        db = app.db

        def title_now() -> str | None:
            return db.get_session_title(sid)

        with lock_holder(demo_db) as release:
            # 1. Cancel path: the write waits, Esc abandons it, nothing is written.
            await pilot.press("enter")
            await pilot_until(
                pilot,
                lambda: dialog.has_class("-waiting") and "waiting for the write lock" in plain(status),
                "the waiting-for-lock status",
            )
            assert dialog.busy and isinstance(app.screen, RenameDialog)
            await pilot.press("escape")
            await pilot_until(pilot, lambda: not dialog.busy, "the abandoned write to finish")
            assert "gave up waiting for the write lock; nothing was written" in plain(status)
            assert not dialog.has_class("-waiting")
            assert isinstance(app.screen, RenameDialog)  # still open: the user may retry
            assert title_now() == "Nightly backup report"

            # 2. Success path: retry, still locked, then the holder lets go.
            await pilot_until(pilot, lambda: not dialog.query_one("#ok").disabled, "OK enabled again")
            await pilot.press("enter")
            await pilot_until(
                pilot,
                lambda: dialog.has_class("-waiting") and "waiting for the write lock" in plain(status),
                "the waiting-for-lock status (second attempt)",
            )
            assert title_now() == "Nightly backup report"
            release()
            await pilot_until(pilot, lambda: isinstance(app.screen, MainScreen), "the dialog to close")

        await settle(pilot)
        assert any("Renamed" in (n.title or "") for n in app._notifications)
        assert title_now() == "Nightly backup, under lock"
    db.close()
    assert title_of(demo_db, sid) == "Nightly backup, under lock"
