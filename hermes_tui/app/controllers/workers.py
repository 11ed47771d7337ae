"""Starting a controller's thread worker on the main screen: the one way every controller does.

Every store call from the UI runs in a thread worker, started with `exit_on_error=False` (a
failure is told by a message, it never ends the app). ``group`` names the kind of read (with
``exclusive`` a newer one cancels the older: a filter changed meanwhile), ``description`` what
it does (Textual's worker list and the tests' `busy_with` show it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textual.dom import DOMNode
from textual.worker import Worker


def run_thread(
    node: DOMNode, work: Callable[[], object], group: str, description: str, *, exclusive: bool = False
) -> Worker[Any]:
    """Run ``work`` in a thread worker of ``node`` (the main screen)."""
    return node.run_worker(
        work, thread=True, exit_on_error=False, exclusive=exclusive, group=group, description=description
    )
