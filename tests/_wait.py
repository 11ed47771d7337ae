"""The one way a test waits (issue 36): poll a condition until it holds, or fail saying what did
not happen. A test never sleeps a fixed time for something to happen and never asserts how long
something took (timings belong in `bench/`): the deadline only ends a hang, and is generous, for
a 2-core machine running other suites at the same time.

`wait_until` is for a test's own thread (a store's upkeep thread, a follower, a child process
does the work); `pilot_until` for a test inside `App.run_test`, where the app runs between checks.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

#: How long a wait may take before the test fails (a hang, not a slow machine).
WAIT_S = 60.0
#: Between two checks of the condition.
POLL_S = 0.005


class Deadline:
    """`timeout` seconds from now; `check(what)` fails the test once they have passed."""

    def __init__(self, timeout: float = WAIT_S) -> None:
        self.timeout = timeout
        self._end = time.monotonic() + timeout

    @property
    def passed(self) -> bool:
        return time.monotonic() > self._end

    def check(self, what: str) -> None:
        if self.passed:
            raise AssertionError(f"timed out after {self.timeout:g} s waiting until {what}")


def wait_until(
    condition: Callable[[], Any], what: str, timeout: float = WAIT_S, poll: float = POLL_S
) -> None:
    """Poll `condition` from this thread until it is true; fail naming `what` after `timeout`."""
    deadline = Deadline(timeout)
    while not condition():
        deadline.check(what)
        time.sleep(poll)


async def pilot_until(
    pilot: Any, condition: Callable[[], Any], what: str, timeout: float = WAIT_S, poll: float = POLL_S
) -> None:
    """Poll `condition` between pauses of the running app (`pilot.pause`) until it is true;
    fail naming `what` after `timeout`."""
    deadline = Deadline(timeout)
    while not condition():
        deadline.check(what)
        await pilot.pause(poll)
