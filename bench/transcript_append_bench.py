"""What one live append into the open transcript costs the browser, without writers.

```sh
.venv/bin/python bench/transcript_append_bench.py --db /dev/shm/live40/live-base-1000000.db
```

The real app runs headless (160×50, read-only) on a store, opens `--session`, then hands the
screen `--appends` live updates `--every-s` apart, `--batch` short user messages each (what
following one 0.19.0 writer at 20 messages/s brings per paced apply), through the screen's own
handler (`MainScreen._live_session`), as the live follower's reads would. It reports the app
process's CPU per append (`time.process_time`, every thread), the frames drawn per append, what
each frame repainted ("layout: " when it laid the screen out, then the dirty widgets; Textual
internals read by this bench only), the CPU in arranging the screen and composing frames, and,
per widget type, the lines rendered and the stylesheet applications (a mount, a class change).
`live_app_bench.py` measures the whole browser with real writers (the follower, the session list,
the reads); this isolates the transcript's part in 15 s, with no writer to share the machine
with.

The transcript is the app's own: the Line-API one (`widgets/transcript_lines.py`) since the
branch that replaced the widget transcript; run this file from the commit before it for the
widget transcript (`--what-if` there). `--runs N` runs the app N times in one process.
`--hide-list` hides the session list (the transcript pane alone on the screen).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import pstats
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from live_bench import SESSION  # noqa: E402
from measure import private_settings  # noqa: E402

private_settings()

from textual._compositor import Compositor  # noqa: E402
from textual.css.stylesheet import Stylesheet  # noqa: E402
from textual.screen import Screen  # noqa: E402
from textual.widget import Widget  # noqa: E402

from hermes_tui.app.app import HermesApp  # noqa: E402
from hermes_tui.app.controllers.messages import LiveSession  # noqa: E402
from hermes_tui.app.screens.main import MainScreen  # noqa: E402
from hermes_tui.app.widgets.transcript_items import message_view  # noqa: E402
from hermes_tui.app.widgets.transcript_lines import LinesTranscript  # noqa: E402


def _name(widget: Any) -> str:
    name = type(widget).__name__
    parent = getattr(widget, "parent", None)
    if name == "ScrollBar" and parent is not None:
        return f"ScrollBar<{parent.id}>"
    return name


def instrument(census: dict[str, list[float]], frames: dict[str, int]) -> None:
    """Count what each frame repaints, the lines rendered and the styles applied (CPU time)."""
    tick = Screen._on_timer_update

    def counted_tick(self: Screen[Any]) -> None:
        if self.is_current and not self.app._batch_count and (self._layout_required or self._dirty_widgets):
            names = ",".join(sorted({_name(w) for w in self._dirty_widgets})[:6])
            key = ("layout: " if self._layout_required else "") + (names or "-")
            frames[key] = frames.get(key, 0) + 1
        tick(self)

    def timed(kind: str, fn: Any) -> Any:
        def wrapper(self: Any, target: Any, *a: Any, **kw: Any) -> Any:
            t = time.thread_time()
            try:
                return fn(self, target, *a, **kw)
            finally:
                row = census.setdefault(f"{kind} {_name(self if kind == 'lines' else target)}", [0, 0.0])
                row[0] += 1
                row[1] += time.thread_time() - t

        return wrapper

    def whole(kind: str, fn: Any) -> Any:
        def wrapper(*a: Any, **kw: Any) -> Any:
            t = time.thread_time()
            try:
                return fn(*a, **kw)
            finally:
                row = census.setdefault(kind, [0, 0.0])
                row[0] += 1
                row[1] += time.thread_time() - t

        return wrapper

    Screen._on_timer_update = counted_tick  # type: ignore[method-assign]
    Compositor.reflow = whole("arrange the screen (Compositor.reflow)", Compositor.reflow)  # type: ignore[method-assign]
    Compositor.render_update = whole(  # type: ignore[method-assign]
        "compose a frame (Compositor.render_update, with the lines below)", Compositor.render_update
    )
    Widget.render_lines = timed("lines", Widget.render_lines)  # type: ignore[method-assign]
    # Outside the frames: what every append costs whichever transcript takes it.
    import hermes_tui.app.controllers.shown as shown
    import hermes_tui.app.widgets.transcript_lines_items as transcript_lines_items

    shown.transcript_subtitle = whole("the subtitle (transcript_subtitle)", shown.transcript_subtitle)
    prepare = transcript_lines_items.prepare
    transcript_lines_items.prepare = whole("prepare a message (Markdown parsed)", prepare)  # type: ignore[attr-defined]
    LinesTranscript._render_message = whole(  # type: ignore[method-assign]
        "render a message's strips", LinesTranscript._render_message
    )
    Stylesheet.apply = timed("styles", Stylesheet.apply)  # type: ignore[method-assign]


#: What `instrument` counts (cleared when a run starts measuring).
CENSUS: dict[str, list[float]] = {}
FRAMES: dict[str, int] = {}


async def run(args: argparse.Namespace, what_if: str = "lines") -> dict[str, Any]:
    census, frames = CENSUS, FRAMES
    app = HermesApp(args.db, read_only=True)
    async with app.run_test(size=(160, 50)) as pilot:
        while not isinstance(app.screen, MainScreen) or app.screen.state != "ready":
            await asyncio.sleep(0.05)
        screen = app.screen
        transcript = screen.query_one("#transcript", LinesTranscript)
        await pilot.pause(1.5)  # the list's first selection opens its session: then ours
        screen.open_session(args.session)
        while transcript.data is None or transcript.data.session_id != args.session or transcript.loading:
            await asyncio.sleep(0.05)
        if args.hide_list:
            screen.add_class("-hide-list")
        view = transcript
        transcript.focus()
        await pilot.pause(0.5)
        if not view.at_bottom:  # (the session's end, where a writer's messages land)
            await pilot.press("end")
        await pilot.pause(1.0)
        assert screen.db is not None
        row = screen.db.list_rows([args.session])[0]
        next_id = view.last_message_id + 1
        census.clear()
        frames.clear()
        profile = cProfile.Profile() if args.profile else None
        if profile is not None:
            profile.enable()
        t0, cpu0 = time.perf_counter(), time.process_time()
        for _ in range(args.appends):
            items = []
            for _ in range(args.batch):
                raw = {"id": next_id, "role": "user", "content": f"appender message {next_id}"}
                t = time.thread_time()
                items.append(
                    message_view({**raw, "timestamp": time.time(), "session_id": args.session}, False)
                )
                row_ = census.setdefault("the bench builds the records (a worker's job in the app)", [0, 0.0])
                row_[0] += 1
                row_[1] += time.thread_time() - t
                next_id += 1
            await screen._live_session(LiveSession(args.session, row, items, None))
            await asyncio.sleep(args.every_s)
        wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
        if profile is not None:
            profile.disable()
            pstats.Stats(profile).sort_stats(args.profile_sort).print_stats(45)
        out = {
            "what_if": what_if,
            "hide_list": args.hide_list,
            "appends": args.appends,
            "batch": args.batch,
            "every_s": args.every_s,
            "cpu_pct": cpu / wall * 100,
            "cpu_ms_per_append": cpu / args.appends * 1e3,
            "frames_per_append": sum(frames.values()) / args.appends,
            "followed": view.at_bottom,
            "mounted_widgets": len(view.children),
            "window": [view.start, view.end, len(view.items)],
            "frames": sorted(frames.items(), key=lambda kv: -kv[1])[:8],
            "per_append": sorted(
                ((k, n / args.appends, s * 1e3 / args.appends) for k, (n, s) in census.items()),
                key=lambda r: -r[2],
            )[:14],
        }
        app.exit()
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--db", type=Path, required=True)
    ap.add_argument("--session", default=SESSION)
    ap.add_argument("--appends", type=int, default=75)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--every-s", type=float, default=0.2)
    ap.add_argument("--runs", type=int, default=1, help="run the app this many times, one after another")
    ap.add_argument("--hide-list", action="store_true", help="hide the session list")
    ap.add_argument("--profile", action="store_true", help="print a cProfile of the appends (slower)")
    ap.add_argument("--profile-sort", default="cumulative", help="cProfile sort key (cumulative, tottime)")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    instrument(CENSUS, FRAMES)
    runs = []
    for what_if in ["lines"] * args.runs:
        out = asyncio.run(run(args, what_if))
        runs.append(out)
        print(
            f"[{what_if}{', list hidden' if args.hide_list else ''}] "
            f"{out['cpu_ms_per_append']:.1f} ms of CPU per append ({out['cpu_pct']:.1f} % of a core at "
            f"{1 / args.every_s:g} appends/s), {out['frames_per_append']:.2f} frames per append, "
            f"{out['mounted_widgets']} widgets mounted, window {out['window']}, following: {out['followed']}"
        )
        for key, n in out["frames"]:
            print(f"  {n:4d} frames  {key}")
        for key, n, ms in out["per_append"]:
            print(f"  {ms:6.2f} ms  {n:5.1f}×  {key}  (per append)")
    if args.json is not None:
        result = runs[0] if len(runs) == 1 else {"argv": sys.argv[1:], "runs": runs}
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
