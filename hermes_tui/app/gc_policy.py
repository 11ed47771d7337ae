"""Full garbage collections only while nobody is typing.

A full (generation 2) collection walks every tracked object: ~140k after first paint on a 1M
store, most of them Textual's strips and caches, 100-170 ms on this machine. Stepping through
transcripts mounts and drops widgets, so with Python's default thresholds one landed every few
sessions, and it was every event-loop stall over 50 ms measured (bench/app_bench.py, `--only
transcript`). After first paint the startup objects are frozen (collections skip them), automatic
full collections are switched off, and one runs once input has been quiet for `IDLE_S`, at most
every `MIN_FULL_S`: while agents write, something is always left to collect, and a collection
every poll (0.5 s, 100-300 ms each at 1M) took a third of a core and stalled the live view.
How long a collection pauses depends mostly on how much garbage waits (~5 µs an object to free,
on top of ~60 ms to walk a 1M store's live objects), so the interval adapts: it halves, down to
`MIN_FULL_S`, after a collection that took more than `TARGET_PAUSE_S` of CPU and found at least
`MUCH_GARBAGE` objects, and doubles, up to `MAX_FULL_S`, after one that found less. Following a
busy writer that is a short pause every few seconds rather than a 0.4-1.2 s one every half
minute; an idle app (no garbage to speak of) keeps the long interval and costs no CPU.
Generations 0 and 1 keep collecting as usual. Everything is restored when the app exits, so
tests that run many apps in one process keep the default GC.
"""

from __future__ import annotations

import gc
import time

IDLE_S = 1.0
POLL_S = 0.5
MIN_FULL_S = 4.0
MAX_FULL_S = 30.0
START_FULL_S = 8.0
TARGET_PAUSE_S = 0.08
MUCH_GARBAGE = 10_000
_NO_AUTOMATIC_FULL = 1_000_000


class IdleCollector:
    """Owns the process's GC settings between `start()` and `stop()`."""

    def __init__(self) -> None:
        self.last_input = time.monotonic()
        self._saved: tuple[int, int, int] | None = None
        self.full_collections = 0
        self._last_full = float("-inf")
        self.interval = START_FULL_S
        self.last_pause_s = 0.0

    def start(self) -> None:
        if self._saved is not None:
            return
        self._saved = gc.get_threshold()
        gc.collect()
        gc.freeze()
        t0, t1, _t2 = self._saved
        gc.set_threshold(t0, t1, _NO_AUTOMATIC_FULL)

    @property
    def started(self) -> bool:
        """The policy is in force: the heap is frozen and automatic full collections are off."""
        return self._saved is not None

    def touch(self) -> None:
        """Input arrived: postpone the next full collection."""
        self.last_input = time.monotonic()

    def poll(self) -> None:
        """Called every `POLL_S`: collect if generation 2 has grown and input has been quiet."""
        if self._saved is None or gc.get_count()[2] == 0:
            return
        now = time.monotonic()
        if now - self.last_input >= IDLE_S and now - self._last_full >= self.interval:
            started = time.thread_time()
            found = gc.collect()
            self.collected(time.thread_time() - started, found)

    def collected(self, pause_s: float, found: int) -> None:
        """A full collection took ``pause_s`` of CPU and freed ``found`` unreachable objects:
        adapt the interval to the next one."""
        self._last_full = time.monotonic()
        self.full_collections += 1
        self.last_pause_s = pause_s
        if found < MUCH_GARBAGE:
            self.interval = min(MAX_FULL_S, self.interval * 2)
        elif pause_s > TARGET_PAUSE_S:
            self.interval = max(MIN_FULL_S, self.interval / 2)

    def stop(self) -> None:
        if self._saved is None:
            return
        gc.set_threshold(*self._saved)
        gc.unfreeze()
        self._saved = None
