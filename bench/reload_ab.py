"""A list reload (`MainScreen.reload_order`, as a filter or order change runs it) in the tree on
`PYTHONPATH`, on one store: open it, wait for its whole order, then reload N times alternating
Hermes' order and message count (each until the list stops loading); the process's peak RSS.

    HERMES_TUI_CONFIG=/tmp/s.toml PYTHONPATH=TREE .venv/bin/python bench/reload_ab.py STORE [N]

Run it from each tree in turn (A-B-B-A) to compare two trees; prints one JSON line.
"""

from __future__ import annotations

import asyncio
import json
import resource
import sys
import time
from pathlib import Path
from typing import Any

from hermes_tui.app.app import HermesApp
from hermes_tui.app.list_views import with_order


async def measure(db: Path, n: int) -> dict[str, Any]:
    app = HermesApp(db, read_only=True, path_label="state.db")
    out: dict[str, Any] = {}
    async with app.run_test(size=(160, 40)) as pilot:
        screen: Any = app.screen
        started = time.perf_counter()
        while screen.state != "ready" or screen.session_list.loading or screen.session_list.provisional:
            await pilot.pause(0.01)
        out["open_to_whole_order_s"] = round(time.perf_counter() - started, 3)
        times = []
        for i in range(n):
            screen.order = ("last_active", "message_count")[i % 2]
            screen.filter = with_order(screen.filter, screen.order)
            t = time.perf_counter()
            screen.reload_order()
            await pilot.pause(0)
            while screen.session_list.loading:
                await pilot.pause(0.005)
            times.append(time.perf_counter() - t)
        out["rows"] = screen.session_list.total
        out["reload_s"] = [round(x, 3) for x in times]
        out["reload_median_s"] = round(sorted(times)[len(times) // 2], 3)
        out["rss_max_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    return out


if __name__ == "__main__":
    print(json.dumps(asyncio.run(measure(Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 6))))
