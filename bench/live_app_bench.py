"""Live-follow bench with the real browser (issue #18): hermes-agent 0.19.0 writers, our app following.

```sh
.venv/bin/python bench/live_app_bench.py --messages 1000000 --phase-s 600 --multi-phase-s 180 \
    --workdir /work/bench-data --json bench/results/live-1m-<date>.json
```

Writers are real hermes-agent 0.19.0 processes (`tests/peer/oracle.py` `Peer.run_appender`, one
peer process per writer, each appending `--rate` messages/s to its own session). The follower is
a separate process running the real app headless (`HermesApp(path).run_test(size=(160, 50))`):
its live follower (`hermes_tui/app/live_follow.py`), session list and transcript exactly as a
user has them, plus instruments that only read:

- every frame (`App._display`, which Textual calls with each compositor update; the update is
  also rendered to its terminal string, the work a real terminal's frame costs) looks for the
  new messages of the transcript among the widgets the compositor shows: commit → visible is that
  frame's wall clock minus the message's stored `timestamp` (upstream stamps it just before its
  commit);
- a coroutine on the app's loop sleeps 5 ms and records how late it wakes (event-loop lag);
- keystrokes (`down`/`up` alternately, sent through the driver like a terminal's) are timed until
  the list cursor is on the expected row in a displayed frame;
- the time in each `Screen._refresh_layout` (with the transcript's widget count), and the app's
  full garbage collections per window: counted (`IdleCollector.full_collections`) and timed
  (`gc.callbacks`; one holds the GIL, so the watchdog below cannot see it);
- the session list's own event-loop time (`render_lines` and `update_order`) summed per displayed
  frame, the live reorders' time, and the rows rendered from scratch (`_row_strip` calls);
- the transcript's live appends (calls, and those that mounted messages: UI updates) and the
  screen's reads of the open session (`session_pace.starts`);
- what each screen update repaints (`frame_kinds`: "layout: " when it lays the screen out, then
  the widgets it repaints);
- which widgets asked for each layout (`layout_causes`; with `HERMES_BENCH_WHO=1`, the stacks
  that asked the right pane or the transcript for one);
- with `HERMES_BENCH_RENDERS=1`, per window and widget type, the lines Textual rendered from
  scratch (`renders.lines`: misses of a widget's styles cache) and the stylesheet applications
  (`renders.styles`: a mount or a class change), with their time;
- a watchdog thread keeps the loop thread's stack whenever the lag probe has not woken for 0.5 s;
- `HERMES_BENCH_WHATIF=gc30` tries a fix without changing the app: at most one full collection
  per 30 s (the app's own policy runs one every 0.5 s once input is quiet for 1 s); `window`:
  live appends unmount the oldest messages past 450 mounted, down to 300 (the app mounts all);
- with `HERMES_BENCH_PROFILE=FILE` the app's loop thread runs under cProfile (stats to FILE;
  with `HERMES_BENCH_PROFILE_LABEL=writers` only while the writers write);
- with `HERMES_BENCH_PYSPY=PREFIX` (py-spy installed beside the bench's Python) every browser
  phase's writers window is sampled by `py-spy record --threads` at 200 Hz, every thread, its
  collapsed stacks to `PREFIX-<phase>-<time>.txt` (`bench/pyspy_shares.py` sums them by part);
- every append's latency per phase (`latencies_ms`), and `pooled` at the top of the result file:
  each kind of phase over all its phases of the run, p99 against the pooled writer-alone phases;
- with `HERMES_BENCH_TRACE=1`, the hops of each live append (`hops_ms`): ms from the newest
  commit it brings to the follower's report, the read's start and end, the apply's start and
  end, and the first frame after it (start, end), p50 and p95; and how many frames waited for
  the writer's next commit (`frame_holds`, `hermes_tui/app/frame_hold.py`);
- CPU is `time.process_time()` (every thread of the process) over labelled windows; the idle
  window starts 1.5 s after the writers stop, with no input and the lag probe off; `idle-slow`
  is its part from 32 s on, once the live follower has slowed down to its idle rate.

Phases (each on a fresh copy of the cached store; `--order`, default `A1,B1,A8,B8`):
`A1` one writer alone; `B1` one writer with the browser open on its session (no input: a user
watching); `A8` `--writers` writers alone; `B8` the same writers with the browser on the session
list (a key every `--key-every-s`, the next only once the last one showed or 2 s passed, during
`--keys-s` before the writers start, while they run, and `--keys-s` after they stop). Each phase
records writer p50/p99/max, appends over 1 s and errors, and the `-wal` size (max sampled every
0.5 s, and at the phase's end before the writers close and truncate it).
`E1`/`E8` are `B1`/`B8` with the open session followed as before the pacing (a read and an append
per follower report, several reads in flight, the transcript title re-laid out on each).
`O1`/`O8` are `B1`/`B8` with the app of `--base-tree` (another checkout, e.g. the previous commit
from `git archive`): before/after in one run.
`P1`/`P8` and `Q1`/`Q8` are `B1`/`B8` and `O1`/`O8` without the lag probe (its coroutine wakes the
app's loop every 5 ms, which a user's browser never does): how much of a writer's tail is the
instrument?
`T1`/`T8` are `P1`/`P8` with the browser pinned to one CPU, `I1`/`I8` with it at `SCHED_IDLE`
(experiments: is the writer's tail the browser's threads running side by side, or priority?).
`H1`/`H8` run it at `SCHED_BATCH`, `L1`/`L8` with a 50 ms EEVDF slice, `K1`/`K8` with a 0.1 ms one;
`W1`/`W8` with every thread but the loop's at `SCHED_IDLE`, `X1`/`X8` that and the loop thread's
slice at 0.1 ms (what `hermes_tui/app/cpu_share.py` found, 2026-12-04: only `I` kept the writer's
p99 as alone). `Y1`/`Y8` are `B1`/`B8` with the app's `--yield-cpu` (every thread at `SCHED_IDLE`); `S8`/`Z8`/
`U8`/`V8` are `B8`/`Y8`/`O8`/`A8` with a process burning each core (what a key costs a yielding
browser then, and what its starved reads cost the `-wal`).
`G1`/`G8` are `B1`/`B8` with `HERMES_BENCH_WHATIF=gc30` (at most one full collection per 30 s).
`N1`/`N8` are `B1`/`B8` with the browser process at `--nice` (default 10): does a browser that
yields the CPU to the agents keep them as fast as alone?
`D1`/`D8` are `B1`/`B8` with the follower as it was before the incremental order (whole order
re-read on every change, polls at 4 Hz after changes, every visible status re-reported; the
transcript's follow fix stays). 2026-12-05, which part of the browser costs the writer its tail
(all `P`-like, no lag probe): `J1` runs it in a session of its own with that session's autogroup
at nice 19 (a priority the app could take back, unlike `SCHED_IDLE`); `M1` gives the CPU away
(`sched_yield`) after every millisecond of its CPU time; `F1` takes live messages into the open
transcript once a second instead of five times; `R1` follows, reads and reports everything but
draws nothing of it; `e1` polls every 5 ms and draws at the first commit after its interval
(what the write signal then shipped); `n1` is `B1` with the store's write signal off (the app's
timer polls only); `w1` keeps 16 items mounted while following instead of 40 (drops 8 at a time);
`h1` draws a live append's frame at once instead of holding it to the writer's next commit.
`g1`/`g8` are `B1`/`B8` with the follower's polls at least 0.12 s apart (`SIGNAL_GAP_S` and its
hot rhythm). `p1`/`p8` are `B1`/`B8` with the session list's live reorders started at most every 0.2 s (paced
like the transcript's appends; the order and the list's page are read once per reorder).
`x1`/`x8` are `B1`/`B8` with the app's Textual tuning asked for (`HERMES_TUI_TEXTUAL_TUNING=1`,
`hermes_tui/app/textual_private.py`; issue 36), `b1`/`b8` with it turned off (`=0`): Textual's
public API only. (The tuning was opt-in when `live-public-1m-20261205.json` was measured, so its
`B` phases are `b`; since then the app installs it by default.)
A scrollbar in `frame_kinds` is named by its widget (`PaintedScrollBar<transcript>`).
`--separate-sessions` starts each writer and the browser in a session (autogroup) of its own, as
agents and the browser in separate terminals are, and every phase reads the writers' scheduler
statistics (`/proc/PID/task/*/schedstat`): time on a CPU and waiting for one, per append.
`C1`/`C8` are controls: the writers with a process burning `--burn` of a core (what the browser
used while they wrote) instead of the browser: is a slower writer the browser, or just CPU?
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from live_bench import SESSION, WRITER_SESSIONS, build_store, wal_size  # noqa: E402
from measure import pct, private_settings  # noqa: E402

private_settings()

from tests.peer.oracle import Peer, peer_python  # noqa: E402

#: The follower polls at its fast rate until 30 s without input or change (live_follow.IDLE_INPUT_S).
SLOWS_DOWN_S = 32.0

APP_FOLLOWER = r"""
import asyncio, cProfile, json, os, sys, threading, time
from pathlib import Path
from textual import events
from textual.widget import Widget as TextualWidget
from hermes_tui.app.app import HermesApp
from hermes_tui.app.screens.main import MainScreen
from hermes_tui.app.controllers.messages import LiveSession
from hermes_tui.app.widgets.session_list import SessionList
try:  # the one transcript (Line-API) where the tree has it
    from hermes_tui.app.widgets.transcript_pane import Transcript as PaneTranscript
    from hermes_tui.app.widgets.transcript_items import MessageView
    LINES_TREE = True
except ImportError:  # an older tree (`--base-tree`): the widget transcript
    from hermes_tui.app.widgets.transcript import MessageView, TranscriptView as PaneTranscript
    LINES_TREE = False

path, open_id, key_every = sys.argv[1], sys.argv[2], float(sys.argv[3])
state = {"label": "start", "lag": False, "keys": False, "stop": False}
marks = []          # (label, wall, monotonic, cpu) at each label change
lag = {}            # label -> [seconds late]
keys = {}           # label -> [seconds key -> frame with the cursor moved]
seen = []           # (wall at visible, commit -> visible s, label)
layouts = {}        # label -> [(seconds in Screen._refresh_layout, transcript widgets)]
holder = {}
frames = {"n": 0, "items": None, "index": 0, "pending": [], "key": None, "render_s": 0.0}

def thread_ticks():
    # CPU clock ticks per thread name (Linux /proc): which thread burns the idle CPU
    out = {}
    try:
        tids = os.listdir("/proc/self/task")
    except OSError:
        return out
    names = {t.native_id: t.name for t in threading.enumerate()}
    for tid in tids:
        try:
            with open(f"/proc/self/task/{tid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            with open(f"/proc/self/task/{tid}/comm") as f:
                name = f.read().strip()
        except OSError:
            continue
        name = names.get(int(tid), name)
        out[name] = out.get(name, 0) + int(fields[11]) + int(fields[12])
    return out

def store_rhythm(screen):
    # the open store's follower (its rhythm, its reports): one store is a federation of one
    # (a `StoresFollower` with the store under the name None); before that, a `LiveFollower`
    follower = screen.follower
    one = getattr(follower, "follower", None)
    return one(None) if callable(one) else follower

def mark(label):
    app = holder.get("app")
    gcs = app.collector.full_collections if app is not None else 0
    follower = getattr(getattr(app, "screen", None), "follower", None) if app is not None else None
    polls = getattr(follower, "polls", 0)
    marks.append((label, time.time(), time.monotonic(), time.process_time(), gcs, thread_ticks(), polls))
    state["label"] = label

def commands():
    for line in sys.stdin:
        cmd, _, arg = line.strip().partition(" ")
        if cmd == "label":
            mark(arg)
        elif cmd in ("lag", "keys"):
            state[cmd] = arg == "on"
        elif cmd == "stop":
            mark("stop")
            state["stop"] = True
            return

async def main():
    whatif = set(filter(None, os.environ.get("HERMES_BENCH_WHATIF", "").split(",")))
    app = HermesApp(Path(path), read_only=True, **({"yield_cpu": True} if "yield" in whatif else {}))
    holder["app"] = app
    if "thr-idle" in whatif:  # every thread but the loop's at SCHED_IDLE
        from hermes_tui.app import cpu_share
        orig_run = threading.Thread.run
        def idle_run(self):
            cpu_share.background_thread()
            orig_run(self)
        threading.Thread.run = idle_run
    if "loop-short" in whatif:  # the loop thread with EEVDF's shortest slice
        from hermes_tui.app import cpu_share
        cpu_share.short_slices()
    if "yield1ms" in whatif:  # every 1 ms of the process's CPU, the loop thread gives way
        import signal
        signal.signal(signal.SIGVTALRM, lambda *a: os.sched_yield())
        signal.siginterrupt(signal.SIGVTALRM, False)
        signal.setitimer(signal.ITIMER_VIRTUAL, 0.001, 0.001)
    if "nohold" in whatif:  # a live append's frame drawn at once, not held to the next commit
        from hermes_tui.app.frame_hold import FrameHold
        FrameHold.hold = lambda self: None
    if "nosignal" in whatif:  # the follower polls on its timer only
        from hermes_tui.app.live_follow import LiveFollower
        LiveFollower._open_signal = lambda self: None  # (before one store was a federation of one)
        from hermes_tui.app import stores_follow
        stores_follow.write_signals = lambda: None
    if "noshow" in whatif:  # the follower and its reads as they are, nothing drawn from them
        async def apply_nothing(self, message):  # the next read starts after these, as it would
            tv = self.query_one("#transcript", PaneTranscript)
            if message.items and tv.data is not None and tv.data.session_id == message.session_id:
                tv.items.extend(message.items)

        MainScreen._apply_live_session = apply_nothing
        SessionList.set_live = lambda self, statuses: None
        MainScreen._refresh_order_live = lambda self: None
    if "gc30" in whatif:  # what if full collections were at most one per 30 s
        import gc
        from hermes_tui.app import gc_policy
        col, last = app.collector, [time.monotonic()]
        def poll():
            if col._saved is None or gc.get_count()[2] == 0 or time.monotonic() - last[0] < 30:
                return
            if time.monotonic() - col.last_input >= gc_policy.IDLE_S:
                gc.collect()
                col.full_collections += 1
                last[0] = time.monotonic()
        col.poll = poll
    if "window" in whatif:  # (a what-if of the widget transcript, gone with it)
        raise SystemExit("what-if 'window' was the widget transcript's: this one bounds its window itself")
    # What each screen update repaints (`Screen._on_timer_update`): "layout: " when it lays the
    # screen out, then the widgets it repaints (message parts by class) — counted per label.
    frame_kinds = {}
    frame_walls = []
    orig_tick = MainScreen._on_timer_update

    def counted_tick(self):
        if not (self.is_current and not self.app._batch_count and (
            self._layout_required or self._scroll_required or self._repaint_required or self._dirty_widgets
        )):
            return orig_tick(self)
        def name(w):  # a scrollbar by its widget's id: whose bar is it?
            if w.id is None and isinstance(getattr(w, "parent", None), TextualWidget) and w.parent.id:
                return f"{type(w).__name__}<{w.parent.id}>"
            return type(w).__name__ + (f"#{w.id}" if w.id and not w.id.startswith("msg-") else "")

        names = sorted({name(w) for w in self._dirty_widgets})
        key = ("layout: " if self._layout_required else "") + (",".join(names[:6]) or "-")
        kinds = frame_kinds.setdefault(state["label"], {})
        kinds[key] = kinds.get(key, 0) + 1
        t0 = time.time()
        try:
            return orig_tick(self)
        finally:  # when each frame's work ran (wall clock, as the writers' commit stamps)
            frame_walls.append((state["label"], t0, time.time(), key))

    MainScreen._on_timer_update = counted_tick
    async with app.run_test(size=(160, 50)) as pilot:
        t_open = time.monotonic()
        while not isinstance(app.screen, MainScreen) or app.screen.state != "ready":
            await asyncio.sleep(0.05)
        screen = app.screen
        sl = screen.query_one(SessionList)
        tv = screen.query_one("#transcript", PaneTranscript)
        lines_view = LINES_TREE  # messages are lines, not widgets
        while sl.total == 0:
            await asyncio.sleep(0.05)
        if open_id != "-":
            screen.open_session(open_id)
            while tv.data is None or tv.data.session_id != open_id or tv.loading:
                await asyncio.sleep(0.05)
        sl.focus()
        await pilot.pause(0.5)
        ready_s = time.monotonic() - t_open
        if "align" in whatif:  # what if the browser drew right after a commit, in the writer's pause
            from hermes_tui.app.live_follow import Pacer
            store_rhythm(screen).hot_s = 0.005
            pace = screen.session_pace

            def aligned_next(self=pace):  # a commit after the interval starts a run at once
                if self.running or not self.pending:
                    return None
                wait = self._last_start + self.every_s - self.clock()
                if wait <= 0:
                    return 0.0
                if self.timed:
                    return None
                self.timed = True  # a fallback for the last commit of a burst
                return wait + 0.2

            pace._next = aligned_next
        for w in whatif:  # what if the window kept while following were N items (drops N/2 at a time)
            if w.startswith("fw"):
                from hermes_tui.app.widgets import transcript_lines as transcript_module
                transcript_module.FOLLOW_WINDOW = int(w[2:])  # (the name the transcript reads)
                transcript_module.FOLLOW_DROP_STEP = max(1, int(w[2:]) // 2)
        for w in whatif:  # what if the follower's polls were at least N s apart (hot and by signal)
            if w.startswith("gap"):
                from hermes_tui.app import stores_follow
                stores_follow.SIGNAL_GAP_S = float(w[len("gap"):])
                store_rhythm(screen).hot_s = float(w[len("gap"):])
        for w in whatif:  # what if the open transcript took live messages at most every N s
            if w.startswith("apply"):
                screen.session_pace.every_s = float(w[len("apply"):])
        for w in whatif:  # what if the list's live reorders started at most every N s (paced)
            if w.startswith("order"):
                gap, refresh = float(w[len("order"):]), screen.order_refresh
                ask, paced = refresh.ask, {"last": 0.0, "timed": False}

                def paced_ask(start, gap=gap, refresh=refresh, ask=ask, paced=paced):
                    if refresh.running:  # merged into the run in flight, as before
                        refresh.again = True
                        return
                    wait = paced["last"] + gap - time.monotonic()
                    if wait > 0:  # one timer for every change until then
                        if not paced["timed"]:
                            paced["timed"] = True

                            def due():
                                paced["timed"] = False
                                paced_ask(start)

                            screen.set_timer(wait, due)
                        return
                    paced["last"] = time.monotonic()
                    ask(start)

                refresh.ask = paced_ask
        if "before" in whatif:  # the follower as it was: whole order per change, 4 Hz, every status
            from hermes_tui.app.live_follow import LiveFollower
            screen.live_ids.full_every_s = 0.0
            store_rhythm(screen).hot_s = store_rhythm(screen).fast_s
            LiveFollower._news = lambda self, statuses: statuses
        if "unpaced" in whatif:  # the open session as it was: a read and an append per report
            from hermes_tui.app.live_follow import Pacer
            Pacer._next = lambda self: 0.0 if self.pending else None
            title = screen.query_one("#transcript-title")
            title_update = title.update
            title.update = lambda content, *, layout=True: title_update(content, layout=True)
        appends = {"calls": 0, "mounted": 0}
        orig_append_items = tv.append_items

        async def counted_append(items):
            appends["calls"] += 1
            before = len(tv.items)
            out = await orig_append_items(items)
            appends["mounted"] += len(tv.items) > before
            return out

        tv.append_items = counted_append
        orig = app._display
        console = app.console

        def on_frame(scr, renderable):
            orig(scr, renderable)
            if listcost["acc"]:  # the list's event-loop time that went into this frame
                listcost["frames"].setdefault(state["label"], []).append(listcost["acc"])
                listcost["frames_cpu"].setdefault(state["label"], []).append(listcost["acc_cpu"])
                listcost["acc"] = listcost["acc_cpu"] = 0.0
            if renderable is None or app._batch_count or scr is not app.screen:
                return
            t = time.perf_counter()
            try:
                renderable.render_segments(console)  # what a real terminal's frame costs
            except Exception:
                pass
            frames["render_s"] += time.perf_counter() - t
            frames["n"] += 1
            now = time.time()
            items = tv.items
            if items is not frames["items"]:  # a (re)load: only messages appended after it count
                frames["items"], frames["index"], frames["pending"] = items, len(items), []
            for item in items[frames["index"]:]:
                if isinstance(item, MessageView):
                    frames["pending"].append(item)
            frames["index"] = len(items)
            if frames["pending"]:
                shown = scr._compositor.visible_widgets
                on_lines = {m.id for m in tv._on_screen()} if lines_view and tv in shown else set()
                last = -1
                for i, item in enumerate(frames["pending"]):
                    if lines_view:
                        if item.id in on_lines:
                            last = i
                        continue
                    try:
                        w = tv.get_child_by_id(f"msg-{item.id}")
                    except Exception:
                        continue
                    if w in shown:
                        last = i
                for item in frames["pending"][: last + 1]:  # earlier ones scrolled past with it
                    if isinstance(item.timestamp, (int, float)):
                        seen.append((now, now - item.timestamp, state["label"]))
                del frames["pending"][: last + 1]
            k = frames["key"]
            if k is not None and sl.selected_id == k[1]:
                keys.setdefault(k[2], []).append(time.perf_counter() - k[0])
                frames["key"] = None

        app._display = on_frame
        # The session list's own loop time: drawing (`render_lines`), live reorders (`update_order`)
        # and the rows rendered from scratch (`_row_strip`), per label and per displayed frame.
        # `acc` is wall time; `acc_cpu` the loop thread's CPU time in the same calls: with more
        # writer processes than cores, wall time also counts the time the OS ran a writer instead.
        listcost = {"acc": 0.0, "acc_cpu": 0.0, "frames": {}, "frames_cpu": {}, "render": {}, "update": {},
                    "strips": {}}

        def timed(name, fn):
            def wrapper(*a, **kw):
                t, c = time.perf_counter(), time.thread_time()
                try:
                    return fn(*a, **kw)
                finally:
                    d = time.perf_counter() - t
                    listcost["acc"] += d
                    listcost["acc_cpu"] += time.thread_time() - c
                    listcost[name].setdefault(state["label"], []).append(d)
            return wrapper

        sl.render_lines = timed("render", sl.render_lines)
        sl.update_order = timed("update", sl.update_order)
        orig_strip = sl._row_strip

        def counted_strip(*a, **kw):
            listcost["strips"][state["label"]] = listcost["strips"].get(state["label"], 0) + 1
            return orig_strip(*a, **kw)

        sl._row_strip = counted_strip
        orig_layout = screen._refresh_layout

        causes = {}  # which widgets asked for each layout (Screen._layout_widgets), counted
        if os.environ.get("HERMES_BENCH_WHO"):  # what asks the right pane for a layout (stacks)
            import traceback
            from textual.widget import Widget
            orig_refresh = Widget.refresh

            def who_refresh(self, *a, **kw):
                if kw.get("layout") and self.id in ("right", "transcript-title", "transcript"):
                    k = self.id + " " + " | ".join(
                        line.strip().split("\n")[0][-90:] for line in traceback.format_stack(limit=6)[:-1]
                    )
                    causes[k] = causes.get(k, 0) + 1
                return orig_refresh(self, *a, **kw)

            Widget.refresh = who_refresh

        def timed_layout(*a, **kw):
            key = ",".join(sorted({f"{type(w).__name__}#{w.id}" for w in screen._layout_widgets})[:4])
            causes[key] = causes.get(key, 0) + 1
            t = time.perf_counter()
            try:
                return orig_layout(*a, **kw)
            finally:
                scroll = bool(kw.get("scroll", a[1] if len(a) > 1 else False))
                layouts.setdefault(state["label"], []).append(
                    (time.perf_counter() - t, len(tv.children), scroll)
                )

        screen._refresh_layout = timed_layout
        # With HERMES_BENCH_RENDERS=1, per window and widget type: the lines Textual rendered
        # from scratch (a miss of the widget's styles cache: `StylesCache.render_line`), their
        # time, and the stylesheet applications (`Stylesheet.apply`, a class change or a mount).
        renders = {}
        if os.environ.get("HERMES_BENCH_RENDERS"):
            from textual._styles_cache import StylesCache
            from textual.css.stylesheet import Stylesheet

            orig_render_line = StylesCache.render_line
            orig_apply = Stylesheet.apply

            def census(kind, widget, seconds):
                wid = getattr(widget, "id", None)
                name = type(widget).__name__ + (f"#{wid}" if wid and not wid.startswith("msg-") else "")
                row = renders.setdefault(state["label"], {}).setdefault(kind, {}).setdefault(name, [0, 0.0])
                row[0] += 1
                row[1] += seconds

            def counted_render_line(self, styles, y, size, content_size, padding, base, bg, line, *a, **kw):
                t = time.perf_counter()
                try:
                    return orig_render_line(
                        self, styles, y, size, content_size, padding, base, bg, line, *a, **kw
                    )
                finally:
                    census("lines", getattr(line, "__self__", None), time.perf_counter() - t)

            def counted_apply(self, node, *a, **kw):
                t = time.perf_counter()
                try:
                    return orig_apply(self, node, *a, **kw)
                finally:
                    census("styles", node, time.perf_counter() - t)

            StylesCache.render_line = counted_render_line
            Stylesheet.apply = counted_apply
        # With HERMES_BENCH_TRACE=1, when each hop of a live append ran (wall clock): the
        # follower's reports, each read of the open session (start, end), its apply (start, end).
        hops = {"report": [], "read": [], "apply": []}
        if os.environ.get("HERMES_BENCH_TRACE"):
            live_follower = store_rhythm(screen)  # its reports, on the follower's thread
            orig_report = live_follower.report

            def traced_report(update):
                if update.changes:
                    hops["report"].append(time.time())
                return orig_report(update)

            live_follower.report = traced_report
            orig_list_rows = type(screen.db).list_rows
            read_at = {}

            def traced_list_rows(db, ids, *a, **kw):
                if threading.current_thread() is not threading.main_thread():
                    read_at[threading.get_ident()] = time.time()
                return orig_list_rows(db, ids, *a, **kw)

            type(screen.db).list_rows = traced_list_rows
            orig_ls_init = LiveSession.__init__

            def traced_ls_init(self, *a, **kw):
                orig_ls_init(self, *a, **kw)
                hops["read"].append((read_at.pop(threading.get_ident(), None), time.time()))

            LiveSession.__init__ = traced_ls_init
            # the open session's live read applied: `ShownSession.live_read` (before the
            # controllers: `MainScreen._apply_live_session`)
            applier = screen.shown if hasattr(screen, "shown") else screen
            apply_name = "live_read" if hasattr(screen, "shown") else "_apply_live_session"
            orig_apply = getattr(applier, apply_name)

            async def traced_apply(message):
                t0 = time.time()
                try:
                    return await orig_apply(message)
                finally:
                    stamps = [i.timestamp for i in (message.items or [])
                              if isinstance(i.timestamp, (int, float))]
                    hops["apply"].append((max(stamps) if stamps else None, t0, time.time(), state["label"]))

            setattr(applier, apply_name, traced_apply)
        prof_path = os.environ.get("HERMES_BENCH_PROFILE")  # cProfile of the loop thread, whole run
        prof = cProfile.Profile() if prof_path else None
        prof_label = os.environ.get("HERMES_BENCH_PROFILE_LABEL")  # only in this window (e.g. writers)
        if prof is not None and not prof_label:
            prof.enable()
        if prof is not None and prof_label:
            async def profile_window():
                on = False
                while not state["stop"]:
                    if (state["label"] == prof_label) != on:
                        on = not on
                        prof.enable() if on else prof.disable()
                    await asyncio.sleep(0.05)

            asyncio.create_task(profile_window())

        async def lag_probe():
            while not state["stop"]:
                if not state["lag"]:  # off: wake rarely (the idle CPU window is the app's own)
                    await asyncio.sleep(0.5)
                    continue
                t, label = time.perf_counter(), state["label"]
                beat[0] = t
                await asyncio.sleep(0.005)
                lag.setdefault(label, []).append(time.perf_counter() - t - 0.005)
                beat[0] = time.perf_counter()

        beat, stalls, loop_thread = [time.perf_counter()], [], threading.get_ident()

        def watchdog():
            # the loop thread's stack when the lag probe has not woken for 0.5 s (stalls)
            import traceback
            caught = None
            while not state["stop"]:
                time.sleep(0.1 if state["lag"] else 0.5)
                stale = time.perf_counter() - beat[0]
                if not state["lag"] or stale < 0.5:
                    caught = None
                    continue
                if caught is None or stale - caught > 1.0:
                    caught = stale
                    frame = sys._current_frames().get(loop_thread)
                    stack = traceback.format_stack(frame)[-14:] if frame is not None else []
                    stalls.append({"label": state["label"], "stale_s": round(stale, 2),
                                   "stack": [line.strip() for line in stack]})

        threading.Thread(target=watchdog, daemon=True).start()
        import gc

        gc_full, gc_t, gc_heap = [], [0.0, 0.0], []

        def gc_timer(phase, info):  # a full collection holds the GIL: the watchdog cannot see it
            if info.get("generation") != 2:
                return
            if phase == "start":
                gc_t[0], gc_t[1] = time.perf_counter(), time.thread_time()
            else:  # wall, and CPU (wall also counts the time the OS ran another process)
                gc_full.append((state["label"], time.perf_counter() - gc_t[0], time.thread_time() - gc_t[1]))
                # what the next full collection will walk (after this one's timing): tracked, frozen
                gc_heap.append((state["label"], len(gc.get_objects()), gc.get_freeze_count()))

        gc.callbacks.append(gc_timer)

        async def key_presser():
            down = True
            while not state["stop"]:
                await asyncio.sleep(key_every if state["keys"] else max(key_every, 0.5))
                if not state["keys"]:
                    continue
                pending = frames["key"]
                if pending is not None:  # one key at a time; one unseen after 2 s counts as lost
                    if time.perf_counter() - pending[0] < 2.0:
                        continue
                    keys.setdefault("lost:" + pending[2], []).append(time.perf_counter() - pending[0])
                ids, cur = sl._ids, sl.cursor
                target = cur + 1 if down else cur - 1
                if not 0 <= target < len(ids):
                    down = not down
                    target = cur + 1 if down else cur - 1
                key = "down" if down else "up"
                down = not down
                frames["key"] = (time.perf_counter(), ids[target], state["label"])
                ev = events.Key(key, None)
                ev.set_sender(app)
                app._driver.send_message(ev)

        threading.Thread(target=commands, daemon=True).start()
        tasks = [asyncio.create_task(lag_probe()), asyncio.create_task(key_presser())]
        mark("ready")
        print(json.dumps({"ready_s": ready_s, "sessions": sl.total}), flush=True)
        while not state["stop"]:
            await asyncio.sleep(0.5)
        for t in tasks:
            t.cancel()
        if prof is not None:
            prof.disable()
            prof.dump_stats(prof_path)
        follower = screen.follower
        out = {"ready_s": ready_s, "marks": marks, "lag": lag, "keys": keys, "seen": seen,
               "layouts": layouts, "whatif": sorted(whatif), "stalls": stalls[:40], "gc_full": gc_full,
               "gc_heap": gc_heap,
               "frames": frames["n"], "render_s": frames["render_s"],
               "polls": follower.polls if follower is not None else None,
               "transcript_items": len(tv.items), "transcript_widgets": len(tv.children),
               "pending_never_visible": len(frames["pending"]),
               "live_appends": appends, "live_reads": screen.session_pace.starts,
               "frame_holds": getattr(getattr(screen, "frame_hold", None), "holds", None),
               "layout_causes": sorted(causes.items(), key=lambda kv: -kv[1])[:12],
               "frame_kinds": {k: sorted(v.items(), key=lambda kv: -kv[1])[:8]
                               for k, v in frame_kinds.items()},
               "list": {k: listcost[k] for k in ("frames", "frames_cpu", "render", "update", "strips")},
               "frame_walls": frame_walls, "hops": hops,
               "renders": {label: {kind: sorted(((k, v[0], round(v[1], 4)) for k, v in rows.items()),
                                                key=lambda r: -r[2])[:12]
                                   for kind, rows in kinds.items()} for label, kinds in renders.items()},
               "commits": sorted(i.timestamp for i in tv.items
                                 if isinstance(i, MessageView) and isinstance(i.timestamp, (int, float)))}
        sys.__stdout__.write(json.dumps(out) + "\n")
        sys.__stdout__.flush()
        app.exit()

asyncio.run(main())
"""


#: The control phases' CPU load: busy for `duty` of every 10 ms, asleep for the rest.
BURNER = r"""
import sys, time
duty = float(sys.argv[1])
while True:
    t = time.perf_counter()
    while time.perf_counter() - t < 0.01 * duty:
        pass
    time.sleep(0.01 * (1 - duty))
"""


class AppFollower:
    """The browser in its own process; `label()` names the window its samples fall in."""

    def __init__(
        self,
        db: Path,
        open_id: str,
        key_every_s: float,
        whatif: str | None = None,
        tree: Path = ROOT,
        nice: int = 0,
        sched: str | None = None,
        new_session: bool = False,
    ) -> None:
        env = dict(os.environ)

        def prepare() -> None:
            if sched == "autogroup":  # its session's autogroup at nice 19 (needs a session of its own)
                Path("/proc/self/autogroup").write_text("19")
            if nice:
                os.nice(nice)
            if sched == "pin":  # one CPU: its threads never run side by side
                os.sched_setaffinity(0, {max(os.sched_getaffinity(0))})
            elif sched == "idle":
                os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
            elif sched == "batch":
                os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))
            elif sched in ("long", "short"):  # EEVDF's own slice (Linux 6.12+)
                from hermes_tui.app import cpu_share

                if not cpu_share.set_slice(50_000_000 if sched == "long" else cpu_share.SHORTEST_SLICE_NS):
                    raise OSError("this kernel has no per-task slice")

        if whatif is not None:
            env["HERMES_BENCH_WHATIF"] = whatif
            tuning = {"tuning": "1", "notuning": "0"}  # the app's Textual tuning (textual_private.py)
            for name in whatif.split(","):
                if name in tuning:
                    env["HERMES_TUI_TEXTUAL_TUNING"] = tuning[name]
        self.proc = subprocess.Popen(  # `-c` puts the working directory first: `tree`'s hermes_tui
            [sys.executable, "-c", APP_FOLLOWER, str(db), open_id, str(key_every_s)],
            cwd=tree,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
            preexec_fn=prepare if (nice or sched) else None,
            start_new_session=new_session,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("the app follower died before it was ready")
        self.ready = json.loads(line)

    def send(self, cmd: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(cmd + "\n")
        self.proc.stdin.flush()

    def finish(self) -> dict[str, Any]:
        self.send("stop")
        assert self.proc.stdout is not None
        out = json.loads(self.proc.stdout.readline())
        self.proc.wait(timeout=60)
        return out


def writer_stats(results: list[dict[str, Any]]) -> dict[str, Any]:
    lat = [x for r in results for x in r["latencies"]]
    errors = [e for r in results for e in r["errors"]]
    return {
        "appended": sum(len(r["appended"]) for r in results),
        "errors": len(errors),
        "error_samples": errors[:3],
        "p50_ms": pct(lat, 50) * 1e3,
        "p99_ms": pct(lat, 99) * 1e3,
        "max_ms": max(lat) * 1e3 if lat else float("nan"),
        "mean_ms": sum(lat) / len(lat) * 1e3 if lat else float("nan"),
        # appends over 1 s: 0.19.0 runs its FTS 'optimize' inside an append every 1,000 writes
        "over_1s": sorted(round(x, 1) for x in lat if x > 1.0),
        "latencies_ms": [round(x * 1e3, 3) for x in lat],  # every append, for `pooled`
    }


def pooled(phases: list[dict[str, Any]]) -> dict[str, Any]:
    """Each kind of phase (its name: `B1`, `O8`, …) over all its phases of the run, the writers'
    appends pooled: p50/p99/max, and p99 against the pooled writer-alone phases of as many
    writers. A phase's p99 is the 8th-slowest of ~800 appends and the writer-alone phases of one
    run differ by ±7 % in it; pooled over several interleaved phases the comparison steadies."""
    kinds: dict[str, list[float]] = {}
    for ph in phases:
        kinds.setdefault(ph["phase"], []).extend(x / 1e3 for x in ph.get("latencies_ms", []))
    counts = {k: sum(1 for ph in phases if ph["phase"] == k) for k in kinds}
    out: dict[str, Any] = {}
    for kind, lat in kinds.items():
        if not lat:
            continue
        alone = kinds.get("A" + kind[1:], [])
        p99 = pct(lat, 99) * 1e3
        out[kind] = {
            "phases": counts[kind],
            "appends": len(lat),
            "p50_ms": round(pct(lat, 50) * 1e3, 3),
            "p99_ms": round(p99, 3),
            "max_ms": round(max(lat) * 1e3, 2),
            "p99_vs_alone": round(p99 / (pct(alone, 99) * 1e3), 3) if alone else None,
        }
    return out


def frames_vs_commits(walls: list[Any], commits: list[float]) -> dict[str, Any]:
    """When the screen's frames ran against the followed writer's commits (1-writer phases): the
    end of each frame after the last commit before it, and the frames still running at the next
    commit (a draw that lands on the writer's append)."""
    import bisect

    out: dict[str, Any] = {}
    for label in sorted({w[0] for w in walls}):
        ends, over, n = [], 0, 0
        over_kinds: dict[str, int] = {}
        starts_by_kind: dict[str, list[float]] = {}
        for w in (w for w in walls if w[0] == label):
            start, end = w[1], w[2]
            i = bisect.bisect_right(commits, start)
            if i == 0 or i >= len(commits):
                continue
            n += 1
            ends.append(end - commits[i - 1])
            if len(w) > 3:  # when each kind of frame starts after the commit, and how long it runs
                starts_by_kind.setdefault(w[3], []).append((start - commits[i - 1], end - start))
            if end > commits[i]:
                over += 1
                kind = w[3] if len(w) > 3 else "?"
                over_kinds[kind] = over_kinds.get(kind, 0) + 1
        if n:
            out[label] = {
                "n": n,
                "end_after_commit_p50_ms": pct(ends, 50) * 1e3,
                "end_after_commit_p95_ms": pct(ends, 95) * 1e3,
                "on_the_next_commit": over,
                "on_the_next_commit_by_kind": dict(sorted(over_kinds.items(), key=lambda kv: -kv[1])[:8]),
                "start_after_commit_and_run_p50_ms_by_kind": {
                    kind: [
                        round(pct([x[0] for x in xs], 50) * 1e3, 1),
                        round(pct([x[1] for x in xs], 50) * 1e3, 1),
                        len(xs),
                    ]
                    for kind, xs in sorted(starts_by_kind.items(), key=lambda kv: -len(kv[1]))[:6]
                },
            }
    return out


def summarize(res: dict[str, Any]) -> dict[str, Any]:
    """Percentiles per labelled window of what the app follower recorded."""
    out: dict[str, Any] = {
        k: res[k]
        for k in (
            "ready_s",
            "frames",
            "render_s",
            "polls",
            "transcript_items",
            "transcript_widgets",
            "pending_never_visible",
        )
    }
    out["live_appends"] = res.get("live_appends")
    out["live_reads"] = res.get("live_reads")
    out["frame_holds"] = res.get("frame_holds")
    out["layout_causes"] = res.get("layout_causes")
    out["frame_kinds"] = res.get("frame_kinds")
    out["renders"] = res.get("renders")
    seen = [s[1] for s in res["seen"]]
    if seen:
        t0 = res["seen"][0][0]
        first = [s[1] for s in res["seen"] if s[0] - t0 < 60]
        last_t = res["seen"][-1][0]
        last = [s[1] for s in res["seen"] if last_t - s[0] < 60]
        out["visible"] = {
            "n": len(seen),
            "p50_ms": pct(seen, 50) * 1e3,
            "p95_ms": pct(seen, 95) * 1e3,
            "max_ms": max(seen) * 1e3,
            "first_minute_p95_ms": pct(first, 95) * 1e3,
            "last_minute_p95_ms": pct(last, 95) * 1e3,
            "per_minute_p95_ms": [  # NaN: nothing became visible that minute
                pct([s[1] for s in res["seen"] if m * 60 <= s[0] - t0 < (m + 1) * 60], 95) * 1e3
                for m in range(int((last_t - t0) // 60) + 1)
            ],
        }
    out["lag"] = {
        label: {
            "n": len(v),
            "p50_ms": pct(v, 50) * 1e3,
            "p99_ms": pct(v, 99) * 1e3,
            "max_ms": max(v) * 1e3,
            "over_16ms": sum(1 for x in v if x > 0.016),
        }
        for label, v in res["lag"].items()
    }
    out["keys"] = {
        label: {"n": len(v), "p50_ms": pct(v, 50) * 1e3, "p95_ms": pct(v, 95) * 1e3, "max_ms": max(v) * 1e3}
        for label, v in res["keys"].items()
    }
    out["layout"] = {
        label: {
            "n": len(v),
            "p50_ms": pct([d for d, *_ in v], 50) * 1e3,
            "p95_ms": pct([d for d, *_ in v], 95) * 1e3,
            "max_ms": max(d for d, *_ in v) * 1e3,
            "widgets_at_end": v[-1][1],
            "last_100_p50_ms": pct([d for d, *_ in v[-100:]], 50) * 1e3,
            # scroll-only layouts (`reflow_visible`): a scroll, not widgets added or resized
            "scroll_only": sum(1 for x in v if len(x) > 2 and x[2]),
            "scroll_only_s": sum(x[0] for x in v if len(x) > 2 and x[2]),
            "total_s": sum(x[0] for x in v),
        }
        for label, v in res["layouts"].items()
        if v
    }
    lst = res.get("list", {})
    out["list"] = {
        label: {
            "frames": len(v),
            "frame_p50_ms": pct(v, 50) * 1e3,
            "frame_p99_ms": pct(v, 99) * 1e3,
            "frame_max_ms": max(v) * 1e3,
            "frames_over_16ms": sum(1 for x in v if x > 0.016),
            "frame_cpu_p50_ms": pct(lst.get("frames_cpu", {}).get(label, [0.0]), 50) * 1e3,
            "frame_cpu_p99_ms": pct(lst.get("frames_cpu", {}).get(label, [0.0]), 99) * 1e3,
            "frame_cpu_max_ms": max(lst.get("frames_cpu", {}).get(label, [0.0])) * 1e3,
            "total_s": sum(v),
            "render_s": sum(lst.get("render", {}).get(label, [])),
            "update_order_n": len(lst.get("update", {}).get(label, [])),
            "update_order_s": sum(lst.get("update", {}).get(label, [])),
            "update_order_max_ms": max(lst.get("update", {}).get(label, [0.0])) * 1e3,
            "row_strips": lst.get("strips", {}).get(label, 0),
        }
        for label, v in lst.get("frames", {}).items()
        if v
    }
    out["whatif"] = res["whatif"]
    out["stalls"] = res.get("stalls", [])
    full: dict[str, list[float]] = {}
    full_cpu: dict[str, list[float]] = {}
    for label, d, *cpu in res.get("gc_full", []):
        full.setdefault(label, []).append(d)
        full_cpu.setdefault(label, []).append(cpu[0] if cpu else float("nan"))
    out["gc_full_ms"] = {
        label: {
            "n": len(v),
            "p50": pct(v, 50) * 1e3,
            "max": max(v) * 1e3,
            "total": sum(v) * 1e3,
            "cpu_p50": pct(full_cpu[label], 50) * 1e3,
            "cpu_max": max(full_cpu[label]) * 1e3,
            "cpu_total": sum(full_cpu[label]) * 1e3,
        }
        for label, v in full.items()
    }
    out["gc_heap"] = [  # after each full collection: (label, tracked objects, frozen objects)
        list(x) for x in res.get("gc_heap", [])
    ]
    marks = res["marks"]
    out["full_gcs"] = {marks[i][0]: marks[i + 1][4] - marks[i][4] for i in range(len(marks) - 1)}
    labels = [m[0] for m in res["marks"]]
    out["cpu_pct"] = {
        labels[i]: 100
        * (res["marks"][i + 1][3] - res["marks"][i][3])
        / max(1e-9, res["marks"][i + 1][2] - res["marks"][i][2])
        for i in range(len(labels) - 1)
    }
    if marks and len(marks[0]) > 6:  # per-thread CPU (% of a core) and polls per window
        tick = float(os.sysconf("SC_CLK_TCK"))
        out["thread_cpu_pct"] = {
            labels[i]: {
                name: round(
                    100 * (v - marks[i][5].get(name, 0)) / tick / max(1e-9, marks[i + 1][2] - marks[i][2]), 2
                )
                for name, v in marks[i + 1][5].items()
                if v - marks[i][5].get(name, 0)
            }
            for i in range(len(labels) - 1)
        }
        out["polls_per_s"] = {
            labels[i]: round((marks[i + 1][6] - marks[i][6]) / max(1e-9, marks[i + 1][2] - marks[i][2]), 2)
            for i in range(len(labels) - 1)
        }
    out["frames_vs_commits"] = frames_vs_commits(res.get("frame_walls", []), res.get("commits", []))
    if res.get("hops", {}).get("apply"):
        out["hops_ms"] = hop_latencies(res["hops"], res.get("frame_walls", []))
    return out


def hop_latencies(hops: dict[str, list[Any]], frame_walls: list[Any]) -> dict[str, Any]:
    """`HERMES_BENCH_TRACE`: for each live apply of the writers' window, ms from the newest
    commit it brings to each hop (the follower's report, the read's start and end, the apply's
    start and end, the first frame started after it and that frame's end); p50 and p95."""
    import bisect

    reports = sorted(hops["report"])
    reads = sorted((s, e) for s, e in hops["read"] if s is not None)
    read_ends = [e for _, e in reads]
    frames = sorted((t0, t1) for label, t0, t1, _ in frame_walls if label == "writers")
    frame_starts = [f[0] for f in frames]
    rows: dict[str, list[float]] = {}
    for commit, a0, a1, label in hops["apply"]:
        if commit is None or label != "writers":
            continue
        i = bisect.bisect_left(reports, commit)
        j = bisect.bisect_right(read_ends, a0) - 1  # the read this apply brings
        k = bisect.bisect_left(frame_starts, a1)
        if i >= len(reports) or j < 0 or k >= len(frames):
            continue
        points = {
            "report": reports[i],
            "read_start": reads[j][0],
            "read_end": reads[j][1],
            "apply_start": a0,
            "apply_end": a1,
            "frame_start": frames[k][0],
            "frame_end": frames[k][1],
        }
        for name, t in points.items():
            rows.setdefault(name, []).append((t - commit) * 1e3)

    def summary(v: list[float]) -> dict[str, Any]:
        return {"p50": round(pct(v, 50), 1), "p95": round(pct(v, 95), 1), "n": len(v)}

    return {name: summary(v) for name, v in rows.items()}


def fresh_copy(base: Path, workdir: Path, name: str) -> Path:
    db = workdir / f"phase-{name}.db"
    for p in (db, Path(f"{db}-wal"), Path(f"{db}-shm")):
        p.unlink(missing_ok=True)
    shutil.copyfile(base, db)
    # Written back before the phase starts: on this VM the 1.6 GB copy's writeback otherwise ran
    # during the phase and stalled the writer's appends (p99 27-46 ms alone, a 1.5 s first one).
    fd = os.open(db, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    return db


def run_writers(db: Path, sessions: list[str], args: argparse.Namespace, seconds: float) -> dict[str, Any]:
    """`len(sessions)` peer processes appending for `seconds`; writer stats and `-wal` sizes."""
    peers = [Peer(db, new_session=args.separate_sessions) for _ in sessions]
    try:
        n = int(seconds * args.rate * 2) + 10  # more than needed: stopped, not finished, at the end
        for peer, sid in zip(peers, sessions, strict=True):
            peer.run_appender(sid, n, interval_s=max(0.0, 1 / args.rate - 0.002))
        t_end = time.monotonic() + seconds
        sched0 = [schedstat(peer._proc.pid) for peer in peers]
        wal_max = 0
        while time.monotonic() < t_end:
            wal_max = max(wal_max, wal_size(db))
            time.sleep(0.5)
        wal_end = wal_size(db)
        sched1 = [schedstat(peer._proc.pid) for peer in peers]
        results = [peer.stop_appender(wait=False) for peer in peers]
    finally:
        for peer in peers:
            peer.close()
    stats = writer_stats(results)
    ran, waited, slices = (sum(b[i] - a[i] for a, b in zip(sched0, sched1, strict=True)) for i in range(3))
    # the writers' time on a CPU and waiting for one (the kernel's schedstat, every thread), per append
    per = max(stats["appended"], 1)
    stats.update(
        ran_ms_per_append=ran / per / 1e6,
        runq_wait_ms_per_append=waited / per / 1e6,
        slices_per_append=slices / per,
    )
    return {**stats, "wal_max_bytes": max(wal_max, wal_end), "wal_end_bytes": wal_end}


def schedstat(pid: int) -> tuple[int, int, int]:
    """Summed over a process's threads: ns on a CPU, ns waiting on a run queue, timeslices."""
    total = [0, 0, 0]
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            fields = (task / "schedstat").read_text().split()
        except OSError:
            continue
        for i in range(3):
            total[i] += int(fields[i])
    return total[0], total[1], total[2]


#: Browser phases that only change how the app process is scheduled or run (the docstring).
PHASE_WHATIF = {
    "D": "before",
    "E": "unpaced",
    "W": "thr-idle",
    "X": "thr-idle,loop-short",
    "Y": "yield",
    "Z": "yield",
    "G": "gc30",
    "R": "noshow",
    "x": "tuning",
    "b": "notuning",
    "M": "yield1ms",
    "F": "apply1.0",
    "e": "align",
    "n": "nosignal",
    "w": "fw16",
    "h": "nohold",
    "p": "order0.2",
    "g": "gap0.12",
}
PHASE_SCHED = {"T": "pin", "I": "idle", "H": "batch", "L": "long", "K": "short", "J": "autogroup"}
NO_PROBE = "PQTIHLKWXJRMFe"  # scheduling experiments: no lag probe (its 5 ms wakeups are the bench's)
SATURATED = "SZUV"  # B, Y, O and A with a process burning each core


def phase(base: Path, args: argparse.Namespace, name: str) -> dict[str, Any]:
    follow, writers = name[0] in "BDEONnwhxbpg" + NO_PROBE + "YSZUG", int(name[1:])
    burners = []
    if name.startswith("C"):  # control: no browser, a process burning `--burn` of a core instead
        burners.append(subprocess.Popen([sys.executable, "-c", BURNER, str(args.burn)]))
    if name[0] in SATURATED:  # every core busy: what does a key cost the browser then?
        burn = [sys.executable, "-c", BURNER, "1.0"]
        burners += [subprocess.Popen(burn) for _ in range(os.cpu_count() or 2)]
    seconds = args.phase_s if writers == 1 else args.multi_phase_s
    sessions = [SESSION] if writers == 1 else [f"{SESSION}-{i}" for i in range(writers)]
    db = fresh_copy(base, args.workdir, name)
    t0 = time.monotonic()
    app = None
    if follow:
        whatif = PHASE_WHATIF.get(name[0])
        tree = args.base_tree if name[0] in "OQU" else ROOT
        if tree is None:
            raise SystemExit("an O phase needs --base-tree")
        app = AppFollower(
            db,
            SESSION if writers == 1 else "-",
            args.key_every_s,
            whatif,
            tree,
            nice=args.nice if name[0] == "N" else 0,
            sched=PHASE_SCHED.get(name[0]),
            new_session=args.separate_sessions or name[0] == "J",
        )
        if name[0] not in NO_PROBE:  # the browser as a user has it, no 5 ms probe waking its loop
            app.send("lag on")
        if writers > 1:
            app.send("label before")
            app.send("keys on")
            time.sleep(args.keys_s)
        app.send("label writers")
    print(
        f"[{time.strftime('%H:%M:%S')}] {name}: {writers} writer(s), {seconds:g} s",
        file=sys.stderr,
        flush=True,
    )
    out: dict[str, Any] = {"phase": name, "writers": writers, "seconds": seconds}
    spy = None
    if app is not None and os.environ.get("HERMES_BENCH_PYSPY"):  # every thread's stacks, sampled
        spy_out = f"{os.environ['HERMES_BENCH_PYSPY']}-{name}-{time.strftime('%H%M%S')}.txt"
        spy = subprocess.Popen(
            [
                str(Path(sys.executable).parent / "py-spy"),
                "record",
                "--pid",
                str(app.proc.pid),
                "--threads",
                "--format",
                "raw",
                "--rate",
                "200",
                "--duration",
                str(int(seconds)),
                "--output",
                spy_out,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    out.update(run_writers(db, sessions, args, seconds))
    if spy is not None:
        spy.wait(timeout=60)
    if app is not None:
        if writers > 1:
            app.send("label after")
            time.sleep(args.keys_s)
            app.send("keys off")
        time.sleep(1.5)  # the last commits reach the screen
        app.send("lag off")
        app.send("label idle")
        if args.idle_window_s > 0:  # the idle CPU window by window (idle, idle+10, idle+20, ...)
            t_idle = time.monotonic()
            while time.monotonic() - t_idle < args.idle_s - 0.5:
                time.sleep(min(args.idle_window_s, args.idle_s - (time.monotonic() - t_idle)))
                app.send(f"label idle+{round(time.monotonic() - t_idle)}")
        elif args.idle_s > SLOWS_DOWN_S + 5:  # also the CPU once the follower slowed down
            time.sleep(SLOWS_DOWN_S)
            app.send("label idle-slow")
            time.sleep(args.idle_s - SLOWS_DOWN_S)
        else:
            time.sleep(args.idle_s)
        res = app.finish()
        out["app"] = summarize(res)
        out["app"]["idle_cpu_pct"] = out["app"]["cpu_pct"].get("idle-slow", out["app"]["cpu_pct"].get("idle"))
        out["app"]["sessions"] = app.ready["sessions"]
    for burner in burners:
        burner.kill()
        burner.wait()
    if burners:
        out["burn"] = args.burn if name.startswith("C") else float(len(burners))
    out["wall_s"] = time.monotonic() - t0
    shown = {k: v for k, v in out.items() if k != "latencies_ms"}
    print(f"[{time.strftime('%H:%M:%S')}] {name}: {json.dumps(shown)}", file=sys.stderr, flush=True)
    return out


def fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:,.1f}" if abs(v) >= 10 else f"{v:,.2f}"
    return f"{v:,}" if isinstance(v, int) else str(v)


def report(results: list[dict[str, Any]], args: argparse.Namespace) -> str:
    """The README table: each B phase beside the A phase of the same writer count."""
    lines = [f"{args.messages:,} messages, {args.rate:g} msg/s per writer\n"]
    by: dict[str, list[dict[str, Any]]] = {}
    for r in results:
        by.setdefault(r["phase"], []).append(r)
    for w in sorted({r["writers"] for r in results}):
        a, b = by.get(f"A{w}", [{}])[0], by.get(f"B{w}", [{}])[0]
        if not b:
            continue
        lines.append(f"\n**{w} writer(s), {b['seconds']:g} s per phase**\n")
        lines.append("| metric | writers alone | with the browser | ratio |\n|---|---|---|---|")
        for key, label in (
            ("appended", "appends"),
            ("errors", "errors"),
            ("p50_ms", "writer p50 ms"),
            ("p99_ms", "writer p99 ms"),
            ("max_ms", "writer max ms"),
            ("wal_max_bytes", "-wal max MB"),
            ("wal_end_bytes", "-wal at the end MB"),
        ):
            va, vb = a.get(key, float("nan")), b[key]
            if key.startswith("wal"):
                va, vb = va / 1e6, vb / 1e6
            ratio = f"{vb / va:.2f}" if va and va == va else "-"
            lines.append(f"| {label} | {fmt(va)} | {fmt(vb)} | {ratio} |")
        app = b["app"]
        vis = app.get("visible")
        if vis:
            lines.append(
                f"| commit → visible p50 / p95 / max ms | | {vis['p50_ms']:.0f} / {vis['p95_ms']:.0f} / "
                f"{vis['max_ms']:.0f} ({vis['n']} msgs; p95 first min {vis['first_minute_p95_ms']:.0f}, "
                f"last min {vis['last_minute_p95_ms']:.0f}) | |"
            )
        for label, lg in app["lag"].items():
            lines.append(
                f"| loop lag ({label}) p99 / max ms | | {lg['p99_ms']:.1f} / {lg['max_ms']:.1f} "
                f"({lg['over_16ms']} of {lg['n']} > 16 ms) | |"
            )
        for label, k in app["keys"].items():
            lines.append(
                f"| key → frame ({label}) p50 / p95 / max ms | | {k['p50_ms']:.1f} / {k['p95_ms']:.1f} / "
                f"{k['max_ms']:.1f} (n={k['n']}) | |"
            )
        for label, ly in app.get("layout", {}).items():
            lines.append(
                f"| Screen layout ({label}) p50 / p95 / max ms | | {ly['p50_ms']:.0f} / {ly['p95_ms']:.0f} / "
                f"{ly['max_ms']:.0f} (n={ly['n']}; {ly['widgets_at_end']} transcript widgets at the end) | |"
            )
        for label, ls in app.get("list", {}).items():
            lines.append(
                f"| session list ({label}) loop ms per frame p50 / p99 / max | | {ls['frame_p50_ms']:.1f} / "
                f"{ls['frame_p99_ms']:.1f} / {ls['frame_max_ms']:.1f} (CPU p50 / p99 / max "
                f"{ls['frame_cpu_p50_ms']:.1f} / {ls['frame_cpu_p99_ms']:.1f} / "
                f"{ls['frame_cpu_max_ms']:.1f}; "
                f"{ls['frames_over_16ms']} of "
                f"{ls['frames']} > 16 ms; {ls['total_s']:.2f} s in all; {ls['update_order_n']} reorders, "
                f"max {ls['update_order_max_ms']:.1f} ms; {ls['row_strips']} rows rendered) | |"
            )
        for label, kinds in (app.get("frame_kinds") or {}).items():
            if label == "writers":
                top = "; ".join(f"{n} {k}" for k, n in kinds[:4])
                lines.append(f"| screen updates ({label}): what they repaint, top 4 | | {top} | |")
        if "full_gcs" in app:
            gcs = ", ".join(f"{k} {v}" for k, v in app["full_gcs"].items() if k not in ("start", "ready"))
            lines.append(f"| app full GCs | | {gcs} | |")
        cpu = app["cpu_pct"]
        lines.append(
            "| app CPU % of a core | | "
            + ", ".join(f"{k} {v:.2f}" for k, v in cpu.items() if k not in ("start", "ready"))
            + " | |"
        )
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--messages", type=int, default=100_000)
    ap.add_argument("--phase-s", type=float, default=30.0, help="single-writer phases")
    ap.add_argument("--multi-phase-s", type=float, default=30.0, help="multi-writer phases")
    ap.add_argument("--writers", type=int, default=WRITER_SESSIONS)
    ap.add_argument("--rate", type=float, default=20.0)
    ap.add_argument("--idle-s", type=float, default=20.0)
    ap.add_argument("--idle-window-s", type=float, default=0.0, help="label the idle CPU every N s")
    ap.add_argument("--keys-s", type=float, default=15.0)
    ap.add_argument("--key-every-s", type=float, default=0.5)
    ap.add_argument("--order", default="A1,B1,A8,B8")
    ap.add_argument(
        "--separate-sessions",
        action="store_true",
        help="each writer and the browser in a session (autogroup) of its own, as in separate terminals",
    )
    ap.add_argument("--nice", type=int, default=10, help="N phases: the browser's nice value")
    ap.add_argument("--burn", type=float, default=0.7, help="C phases: fraction of a core burnt")
    ap.add_argument("--workdir", type=Path, default=Path("/work/bench-data"))
    ap.add_argument(
        "--base-tree",
        type=Path,
        default=None,
        help="O phases: B with the app of this tree (e.g. `git archive`)",
    )
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    if args.writers > WRITER_SESSIONS:
        ap.error(f"at most {WRITER_SESSIONS} writers (sessions made when the store is built)")
    args.workdir.mkdir(parents=True, exist_ok=True)
    peer_python()
    base = build_store(args.workdir, args.messages)
    names = [n.strip().replace("8", str(args.writers)) for n in args.order.split(",") if n.strip()]
    results: list[dict[str, Any]] = []
    for name in names:
        results.append(phase(base, args, name))
        if args.json:  # partial results survive an interrupted run
            args.json.write_text(
                json.dumps(
                    {
                        "args": {k: str(v) for k, v in vars(args).items()},
                        "pooled": pooled(results),
                        "phases": results,
                    },
                    indent=2,
                )
            )
    print(report(results, args))
    for kind, st in pooled(results).items():
        print(f"pooled {kind}: {st}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
