"""Holding a live append's frame back to the writer's next commit.

Why: on 2 cores an agent's append that commits while the browser draws waits for it (the live
bench, `bench/live_app_bench.py`: drawing nothing, the writer is as fast as alone). Following a
writer that commits every 50 ms, the browser's work for one append — mounting the new messages
(~11 ms) and the frame that lays out and paints them (~22 ms) — starts ~7 ms after a commit and,
in one append of eight, was still running at the next one. Split in two, each half fits in the
writer's pause: the mount right after one commit, the frame right after the next (the
follower's report of it releases the hold), or `HOLD_MAX_S` later when no commit comes.

Only while a writer streams (`WriteRhythm`: two commits seen close together): a message after a
quiet spell is drawn at once. Input releases the hold (`HermesApp.on_event` calls `release`).
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any, Protocol

#: The longest a frame waits for the next commit (a writer at 20 messages/s commits every 50 ms).
HOLD_MAX_S = 0.075
#: Two commits seen at most this far apart: the writer streams and another commit is coming.
STREAM_GAP_S = 0.15


class _Screen(Protocol):
    @property
    def app(self) -> Any: ...

    def set_timer(self, delay: float, callback: Any) -> Any: ...

    def check_idle(self) -> None: ...


class WriteRhythm:
    """When the follower last saw a write happen, and whether writes come in a stream."""

    def __init__(self, stream_gap_s: float = STREAM_GAP_S) -> None:
        self.stream_gap_s = stream_gap_s
        self._last: float | None = None
        self._gap = float("inf")

    def note(self, at: float) -> None:
        """A poll started by a write signal at monotonic time ``at`` reported changes."""
        if self._last is not None and at > self._last:
            self._gap = at - self._last
        self._last = at

    def streaming(self, now: float) -> bool:
        """Another commit is likely within the hold: the last two came close together, and
        the last one recently."""
        last = self._last
        return last is not None and self._gap <= self.stream_gap_s and now - last <= self.stream_gap_s


class FrameHold:
    """Suspends the screen's drawing (`App.batch_update`) from `hold()` until `release()` or
    `max_s`, whichever comes first; one hold at a time."""

    def __init__(self, screen: _Screen, max_s: float = HOLD_MAX_S) -> None:
        self.screen = screen
        self.max_s = max_s
        self._batch: AbstractContextManager[None] | None = None
        self._timer: Any = None
        self.holds = 0  # holds started (tests and the bench read it)

    @property
    def held(self) -> bool:
        return self._batch is not None

    def hold(self) -> None:
        if self._batch is not None:
            return
        batch = self.screen.app.batch_update()
        batch.__enter__()
        self._batch = batch
        self.holds += 1
        self._timer = self.screen.set_timer(self.max_s, self.release)

    def release(self) -> None:
        """Draw what waited (at the next frame: the screen's idle check resumes its timer)."""
        batch, self._batch = self._batch, None
        if batch is None:
            return
        timer, self._timer = self._timer, None
        if timer is not None:
            timer.stop()
        batch.__exit__(None, None, None)
        self.screen.check_idle()
