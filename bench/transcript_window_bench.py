"""The transcript's mounted window under Home/End/PageDown/PageUp storms on one huge session.

    .venv/bin/python bench/transcript_window_bench.py [--messages 50000] [--keys 300] [--timeout 120]
        [--db PATH] [--json out.json]

Builds (once, cached beside the other bench stores in ``bench/work/``) a store with one session
of ``--messages`` messages (user / assistant with a tool call / tool output, in turn) through
`SessionDB.append_messages`, opens the browser headless (`App.run_test`, 120×40), opens the
session, focuses the transcript and runs storms of keys. After each storm it prints the widgets
mounted in the transcript, the widgets on the screen, the transcript's window (start..end of
total items), the RSS (as left, then after a full collection, with the message widgets still
alive) and the time the storm took. A storm that has not finished after
``--timeout`` seconds is reported as such with what was mounted by then (the unbounded window of
before issue #16 mounted every message on End).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
WORK = HERE / "work"
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))
from measure import private_settings  # noqa: E402

private_settings()

SESSION = "bench-transcript-window"
BASE = 1748779200.0


def build(messages: int, path: Path | None = None) -> Path:
    """One session of ``messages`` messages, written in batches of 2,000 (cached by size)."""
    from hermes_tui.state import SessionDB

    path = path or WORK / f"transcript-{messages}.db"
    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".building")
    for p in (tmp, Path(f"{tmp}-wal"), Path(f"{tmp}-shm")):
        p.unlink(missing_ok=True)
    with SessionDB(tmp) as db:
        db.create_session(SESSION, "cli", model="bench-model")
        db.set_session_title(SESSION, "Transcript window bench")
        batch: list[dict[str, Any]] = []
        for i in range(messages):
            kind = i % 3
            ts = BASE + i
            if kind == 0:
                batch.append(
                    {"role": "user", "content": f"Question {i}: why does step {i} fail?", "timestamp": ts}
                )
            elif kind == 1:
                call = {
                    "id": f"c{i}",
                    "function": {"name": "terminal", "arguments": json.dumps({"cmd": f"ls {i}"})},
                }
                batch.append(
                    {
                        "role": "assistant",
                        "content": f"Let me look at **step {i}**.\n\n- one\n- two",
                        "tool_calls": [call],
                        "timestamp": ts,
                    }
                )
            else:
                batch.append(
                    {
                        "role": "tool",
                        "tool_name": "terminal",
                        "tool_call_id": f"c{i - 1}",
                        "content": f"file-{i}.txt\nother-{i}.log",
                        "timestamp": ts,
                    }
                )
            if len(batch) >= 2000:
                db.append_messages(SESSION, batch)
                batch = []
        if batch:
            db.append_messages(SESSION, batch)
    for suffix in ("-wal", "-shm"):
        side = Path(f"{tmp}{suffix}")
        if side.exists():
            side.rename(f"{path}{suffix}")
    tmp.rename(path)
    return path


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def run(path: Path, keys: int, timeout: float) -> list[dict[str, Any]]:
    from hermes_tui.app.app import HermesApp
    from hermes_tui.app.widgets.transcript_pane import Transcript

    app = HermesApp(path, now=lambda: BASE + 600, theme="textual-dark", path_label="state.db")
    rows: list[dict[str, Any]] = []
    async with app.run_test(size=(120, 40)) as pilot:

        async def settle() -> None:
            for _ in range(3):
                await pilot.pause(0.05)
                await app.workers.wait_for_complete()
            await pilot.pause()

        def record(storm: str, seconds: float, finished: bool) -> None:
            transcript = app.screen.query_one("#transcript", Transcript)
            row = {
                "storm": storm,
                "finished": finished,
                "seconds": round(seconds, 2),
                "transcript_children": len(transcript.children),
                "screen_widgets": len(list(app.screen.walk_children())),
                "window": f"{transcript.start}..{transcript.end} of {len(transcript.items)}",
                "rss_mb": round(rss_mb(), 1),
            }
            # The app defers full collections until input is idle (app/gc_policy.py), and a storm
            # is never idle: what a full collection leaves is what the window really holds.
            gc.collect()
            row["rss_after_gc_mb"] = round(rss_mb(), 1)
            row["lines_held"] = len(transcript.window_text().split("\n"))  # (one view: no widget per message)
            rows.append(row)
            print(json.dumps(row), flush=True)

        await settle()
        t0 = time.perf_counter()
        app.screen.open_session(SESSION)  # type: ignore[attr-defined]
        await settle()
        transcript = app.screen.query_one("#transcript", Transcript)
        while not transcript.items:
            await settle()
        transcript.focus()
        await pilot.pause()
        record("open", time.perf_counter() - t0, True)

        storms: list[tuple[str, list[str]]] = [
            ("pagedown", ["pagedown"] * keys),
            ("pageup", ["pageup"] * keys),
            ("end", ["end"]),
            ("pageup after end", ["pageup"] * keys),
            ("home", ["home"]),
            ("home/end", ["end", "home"] * (keys // 2)),
            ("end/pagedown", ["end"] + ["pageup", "pagedown"] * (keys // 2)),
        ]
        for name, storm in storms:
            t0 = time.perf_counter()
            task = asyncio.ensure_future(_press_all(pilot, storm))
            done, _ = await asyncio.wait({task}, timeout=timeout)
            finished = bool(done)
            if not finished:
                task.cancel()
                try:
                    await task
                except (asyncio.CancelledError, Exception):
                    pass
            else:
                await settle()
            record(name, time.perf_counter() - t0, finished)
            if not finished:
                break
    return rows


async def _press_all(pilot: Any, keys: list[str]) -> None:
    for key in keys:
        await pilot.press(key)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--messages", type=int, default=50_000)
    parser.add_argument("--keys", type=int, default=300)
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--db", type=Path, default=None)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    t0 = time.perf_counter()
    path = build(args.messages, args.db)
    print(f"store: {path} ({time.perf_counter() - t0:.1f}s)", file=sys.stderr)
    rows = asyncio.run(run(path, args.keys, args.timeout))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
