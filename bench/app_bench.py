"""Benchmark of the browser: first paint, RSS, list page fetch, search keystroke-to-results.

    .venv/bin/python bench/app_bench.py [--sizes small,large] [--json out.json]
        [--only transcript|paint|order|open] [--repeat N] [--gc default|freeze|deferred] [--db PATH]
        [--drop-caches]

Databases come from `bench/corpus.py` (deterministic, seed 1337) written with the store's
`import_sessions` into `bench/work/app-<size>.db` (built once, reused). `small` is 10k messages;
`large` 1M messages in ~15k sessions (median 45 messages each); `wide` 1M messages in ~100k
sessions (a gateway-heavy store of short chats). `--db PATH` measures an existing store instead
(one size; e.g. the 10M `huge` store `bench/run.py --size huge --vs ours` leaves in its workdir).
`--drop-caches` (root) syncs and drops the OS page cache right before the app starts, after the
list-page step: first paint with the interpreter, libraries and file all cold. Each measurement
of the app runs in a fresh subprocess so RSS and first paint include the interpreter, Textual
and the store opening the file. First paint is the list's first rows on screen: on a large
store the head of the order (`first_paint_provisional`), the whole order following
(`whole_order_s`; issue #21). `bench/paint_ab.py` runs `--only paint` of two source trees
interleaved A-B-B-A (before/after, cold or warm).

Targets (2-core machine): first paint < 1 s and RSS < 200 MB at 1M messages; a list page
< 5 ms at any size; search results on screen within 150 ms of the last keystroke (p95); while
stepping through sessions (`transcript` phase) the event loop is never busy more than ~50 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
WORK = HERE / "work"
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))
from measure import pct, private_settings  # noqa: E402

private_settings()

SEARCH_QUERIES = [
    "error",
    "docker container",
    "zeppelin",
    "deploy",
    "connection refused",
    "kubernetes",
    "数据库",
]


def build(size: str) -> Path:
    """Write the corpus through `SessionDB.import_sessions` (the store's public bulk path)."""
    import corpus  # type: ignore[import-not-found]

    from hermes_tui.state import SessionDB

    path = WORK / f"app-{size}.db"
    if path.exists():
        return path
    WORK.mkdir(exist_ok=True)
    tmp = path.with_suffix(".building")
    for p in (tmp, Path(f"{tmp}-wal"), Path(f"{tmp}-shm")):
        p.unlink(missing_ok=True)
    t0 = time.perf_counter()
    n = 0
    batch: list[dict[str, Any]] = []
    with SessionDB(tmp) as db:

        def flush() -> None:
            res = db.import_sessions(batch)
            if not res.get("ok", True) or res.get("errors"):
                raise RuntimeError(f"import_sessions errors: {res.get('errors')[:3]}")
            batch.clear()

        for s in corpus.iter_sessions(size):
            exp = {k: v for k, v in s.items() if k != "edge_kind"}
            exp["model_config"] = json.dumps(s["model_config"]) if s["model_config"] else None
            batch.append(exp)
            n += len(s["messages"])
            if len(batch) >= 200:
                flush()
        if batch:
            flush()
    for suffix in ("-wal", "-shm"):
        side = Path(f"{tmp}{suffix}")
        if side.exists():
            side.rename(f"{path}{suffix}")
    tmp.rename(path)
    print(f"built {path.name}: {n:,} messages in {time.perf_counter() - t0:.0f}s", file=sys.stderr)
    return path


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


PHASES = ("paint", "jumps", "transcript", "search")
GC_POLICIES = ("default", "freeze", "deferred")
LAST_INPUT = [0.0]  # when the app last received a key (the message hook sets it)


def apply_gc_policy(app: Any, policy: str) -> dict[str, Any]:
    """A what-if for the measured process only, on top of the app's own policy (app/gc_policy.py).

    A full (generation 2) collection walks every tracked object: ~140k at first paint on the 1M
    store (Textual's strips and their caches are most of them), 80-190 ms on this machine, and
    it runs whenever enough objects have survived into generation 2, which stepping through
    transcripts (mounting and dropping widgets) does every few sessions.
    ``freeze``: `gc.freeze()` after first paint, so collections skip what startup built.
    ``deferred``: freeze, no automatic full collections, and a full collection after 1 s without
    input (what an app-level policy could do: the pause lands when nobody is typing).
    """
    import gc

    if policy == "default":
        return {}
    gc.collect()
    gc.freeze()
    info: dict[str, Any] = {"gc_frozen_objects": gc.get_freeze_count()}
    if policy == "deferred":
        t0, t1, _t2 = gc.get_threshold()
        gc.set_threshold(t0, t1, 1_000_000)

        def maybe_collect() -> None:
            if time.perf_counter() - LAST_INPUT[0] > 1.0 and gc.get_count()[2] > 0:
                gc.collect()

        app.set_interval(0.5, maybe_collect)
    return info


TRANSCRIPT_STEPS = 30


async def transcript_phase(app: Any, pilot: Any, windows: list[tuple[float, str | None]]) -> dict[str, Any]:
    """Step the list cursor through TRANSCRIPT_STEPS sessions while a 5 ms timer measures the loop.

    Each step presses "down" and waits until the transcript of the new session has been shown
    (its `WindowChanged` was handled) and painted (the next `App._display`). Meanwhile a task
    sleeps 5 ms in a loop; how much longer than 5 ms each sleep took is how long the event loop
    was busy with something else (mounting, layout, CSS, rendering): a key pressed then waits
    that long. Full collections of Python's GC during the phase are counted and timed too.
    """
    import asyncio
    import gc

    from hermes_tui.app.widgets.session_list import SessionList
    from hermes_tui.app.widgets.transcript_pane import Transcript

    screen = app.screen
    sl = screen.query_one("#sessions", SessionList)
    transcript = screen.query_one("#transcript", Transcript)
    painted: list[float] = []
    display = app._display

    def counting_display(screen: Any, renderable: Any) -> None:
        display(screen, renderable)
        if renderable is not None and not app._batch_count:  # a batched update is not drawn
            painted.append(time.perf_counter())

    app._display = counting_display
    sl.focus()
    await pilot.pause(0.3)

    async def wait_shown(sid: str | None, since: float) -> tuple[float, float]:
        deadline = time.perf_counter() + 30
        while time.perf_counter() < deadline:
            hit = next((t for t, s in windows if s == sid and t >= since), None)
            if hit is not None:
                paint = next((t for t in painted if t >= hit), None)
                if paint is not None:
                    return hit, paint
            await asyncio.sleep(0.001)
        raise TimeoutError(f"transcript of {sid} not shown in 30 s")

    # The cursor starts on row 0, whose transcript loads on its own: wait for it first.
    await wait_shown(sl.selected_id, 0.0)
    await pilot.pause(0.3)
    gaps: list[float] = []
    stop = False

    async def ticker() -> None:
        while not stop:
            t = time.perf_counter()
            await asyncio.sleep(0.005)
            gaps.append(time.perf_counter() - t - 0.005)

    full_gc: list[float] = []  # full (generation 2) collections during the phase, their pauses
    gc_start = [0.0]

    def gc_callback(phase: str, info: dict[str, int]) -> None:
        if info.get("generation") != 2:
            return
        if phase == "start":
            gc_start[0] = time.perf_counter()
        else:
            full_gc.append(time.perf_counter() - gc_start[0])

    gc.callbacks.append(gc_callback)
    task = asyncio.create_task(ticker())
    to_shown: list[float] = []
    to_painted: list[float] = []
    sizes: list[int] = []
    for _ in range(TRANSCRIPT_STEPS):
        before = sl.cursor
        t_key = time.perf_counter()
        await pilot.press("down")
        if sl.cursor == before:
            break
        shown_t, paint_t = await wait_shown(sl.selected_id, t_key)
        to_shown.append(shown_t - t_key)
        to_painted.append(paint_t - t_key)
        sizes.append(len(transcript.children))
        await asyncio.sleep(0.15)  # the next key after the debounce window, as a reader would
    stop = True
    await task
    gc.callbacks.remove(gc_callback)
    app._display = display
    busy = [max(0.0, g) for g in gaps]
    return {
        "transcript_steps": len(to_shown),
        "transcript_widgets_mean": round(sum(sizes) / max(1, len(sizes)), 1),
        "transcript_loop_busy_p50_ms": pct(busy, 50) * 1000,
        "transcript_loop_busy_p95_ms": pct(busy, 95) * 1000,
        "transcript_loop_busy_p99_ms": pct(busy, 99) * 1000,
        "transcript_loop_busy_max_ms": max(busy) * 1000,
        "transcript_loop_busy_over_50ms": sum(1 for b in busy if b > 0.05),
        "transcript_full_gc_count": len(full_gc),
        "transcript_full_gc_max_ms": max(full_gc, default=0.0) * 1000,
        "transcript_key_to_shown_p50_ms": pct(to_shown, 50) * 1000,
        "transcript_key_to_shown_p95_ms": pct(to_shown, 95) * 1000,
        "transcript_key_to_painted_p50_ms": pct(to_painted, 50) * 1000,
        "transcript_key_to_painted_p95_ms": pct(to_painted, 95) * 1000,
    }


def child_app(
    db_path: str, queries: list[str], phases: tuple[str, ...] = PHASES, gc_policy: str = "default"
) -> dict[str, Any]:
    """Run in a subprocess: first paint, RSS, list jumps, stepping through transcripts, then typed
    searches with per-keystroke timing (``phases`` picks which of the last three run)."""
    t_start = time.perf_counter()
    import asyncio

    from textual import events

    from hermes_tui.app.app import HermesApp
    from hermes_tui.app.widgets.search import SearchPane
    from hermes_tui.app.widgets.session_list import SessionList
    from hermes_tui.app.widgets.transcript_pane import Transcript

    out: dict[str, Any] = {}
    shown: list[tuple[float, str]] = []
    windows: list[tuple[float, str | None]] = []
    app_ref: list[Any] = []

    def hook(message: object) -> None:
        if isinstance(message, events.Key):
            LAST_INPUT[0] = time.perf_counter()
        elif isinstance(message, SearchPane.ResultsShown):
            shown.append((time.perf_counter(), message.request.query))
        elif isinstance(message, Transcript.WindowChanged) and app_ref:
            data = app_ref[0].screen.query_one("#transcript", Transcript).data
            windows.append((time.perf_counter(), data.session_id if data else None))

    async def run() -> None:
        app = HermesApp(Path(db_path), read_only=True)
        app_ref.append(app)
        async with app.run_test(size=(120, 40), message_hook=hook) as pilot:
            while True:  # first paint: the list has its rows on screen
                await asyncio.sleep(0.005)
                screen = app.screen
                try:
                    sl = screen.query_one("#sessions", SessionList)
                except Exception:  # noqa: BLE001 - screen not composed yet
                    continue
                if sl.total and sl.row_at(0) is not None:
                    break
                if time.perf_counter() - t_start > 60:
                    raise TimeoutError("no first paint in 60 s")
            out["first_paint_s"] = time.perf_counter() - t_start
            # Painted from the head of the order (issue #21): the whole order follows.
            out["first_paint_provisional"] = bool(getattr(sl, "provisional", False))
            while getattr(sl, "provisional", False):
                await asyncio.sleep(0.005)
                if time.perf_counter() - t_start > 120:
                    raise TimeoutError("no whole order in 120 s")
            out["whole_order_s"] = time.perf_counter() - t_start
            out["sessions"] = sl.total
            await pilot.pause(0.3)
            out["rss_after_paint_mb"] = rss_mb()
            if gc_policy != "default":
                out["gc_policy"] = gc_policy
                out.update(apply_gc_policy(app, gc_policy))
            if "transcript" in phases:
                out.update(await transcript_phase(app, pilot, windows))
            if "jumps" in phases:
                # scroll: 50 random jumps through the whole list (pages fetched by workers)
                jumps = []
                rng = random.Random(1)
                for _ in range(50):
                    target = rng.randrange(sl.total)
                    t = time.perf_counter()
                    sl.cursor = target
                    while sl.row_at(target) is None:
                        await asyncio.sleep(0.001)
                    jumps.append(time.perf_counter() - t)
                out["jump_p50_ms"] = pct(jumps, 50) * 1000
                out["jump_p95_ms"] = pct(jumps, 95) * 1000
            if "search" not in phases:
                out["rss_end_mb"] = rss_mb()
                return
            await pilot.press("slash")
            lat: list[float] = []
            for q in queries:
                await pilot.press("ctrl+a", "ctrl+k")  # clear the box
                await pilot.pause(0.3)
                shown.clear()
                last_key = time.perf_counter()
                for ch in q:
                    last_key = time.perf_counter()  # when the last key is sent
                    await pilot.press("space" if ch == " " else ch)
                    await asyncio.sleep(0.06)  # a fast typist: ~16 keys/s
                while not any(text == q.strip() for _t, text in shown):
                    await asyncio.sleep(0.002)
                    if time.perf_counter() - last_key > 30:
                        break
                done = next((t for t, text in shown if text == q.strip()), time.perf_counter())
                lat.append(done - last_key)
            out["search_latency_ms"] = {q: round(v * 1000, 1) for q, v in zip(queries, lat, strict=True)}
            out["search_p95_ms"] = pct(lat, 95) * 1000
            out["rss_end_mb"] = rss_mb()

    asyncio.run(run())
    return out


def order_first_call(path: Path) -> dict[str, Any]:
    """Open the store and compute the whole ordered id list once, as the browser does at start."""
    from hermes_tui.state import SessionDB, SessionFilter

    t = time.perf_counter()
    with SessionDB(path, read_only=True, migrate=False) as db:
        open_s = time.perf_counter() - t
        t = time.perf_counter()
        n = len(db.session_order(SessionFilter()).ids)
        order_s = time.perf_counter() - t
    return {"open_ms": open_s * 1000, "session_order_first_ms": order_s * 1000, "sessions": n}


def open_steps(path: Path) -> dict[str, Any]:
    """The store's share of first paint, step by step in one fresh process, as the browser runs it
    (`app/prefetch.py`: open, capabilities and the source filter's values, the head of the order
    with its rows: first paint; then the whole ordered id list and the model list, both after
    first paint), then the first transcript page and lineage. Each step in ms; run with
    `--drop-caches` to see which ones read the file from disk (issue #21)."""
    t0 = time.perf_counter()
    from hermes_tui.app import prefetch
    from hermes_tui.state import SessionFilter

    out: dict[str, Any] = {"import_ms": (time.perf_counter() - t0) * 1000}
    t = time.perf_counter()

    def step(name: str) -> None:
        nonlocal t
        now = time.perf_counter()
        out[f"{name}_ms"] = (now - t) * 1000
        t = now

    db, _caps, sources = prefetch.open_store(path, read_only=True)
    step("open_caps_sources")
    try:
        if hasattr(prefetch, "order_head"):
            head, _rows = prefetch.order_head(db, SessionFilter(), "last_active", 50)
            step("head_and_rows")
            out["store_first_paint_ms"] = (time.perf_counter() - t0) * 1000 - out["import_ms"]
            out["head"] = len(head)
        ids = db.session_order(SessionFilter(), order="last_active").ids
        step("session_order")
        db.list_rows(ids[:60])
        step("first_rows")
        models = db.distinct_values("model")
        step("models")
        db.get_messages_page(ids[0], 0, 200)
        db.get_lineage(ids[0])
        step("first_transcript")
    finally:
        db.close()
    out["total_ms"] = (time.perf_counter() - t0) * 1000
    out["sessions"] = len(ids)
    out["sources"] = len(sources)
    out["models"] = len(models)
    return out


def store_pages(path: Path) -> dict[str, Any]:
    """Page fetch time of the session list: `session_order` once, then `list_rows` of one page
    (the widget's `PAGE_SIZE` ids) anywhere in the list."""
    from hermes_tui.app.widgets.session_list import PAGE_SIZE
    from hermes_tui.state import SessionDB, SessionFilter

    def pages(db: Any, ids: list[str], seed: int) -> list[float]:
        rng = random.Random(seed)
        times = []
        for _ in range(200):
            k = rng.randrange(max(1, len(ids) - PAGE_SIZE))
            t = time.perf_counter()
            db.list_rows(ids[k : k + PAGE_SIZE])
            times.append(time.perf_counter() - t)
        return times

    with SessionDB(path, read_only=True, migrate=False) as db:
        t = time.perf_counter()
        ids = db.session_order(SessionFilter()).ids
        order_s = time.perf_counter() - t
        first = pages(db, ids, 2)  # as the file is: pages never read since the build come from disk
    # The same measurement with the file in the OS page cache (read once, sequentially), in a new
    # store so SQLite's own cache starts empty: what a user who has opened the file before sees.
    with open(path, "rb") as f:
        while f.read(1 << 22):
            pass
    with SessionDB(path, read_only=True, migrate=False) as db:
        ids = db.session_order(SessionFilter()).ids
        warm = pages(db, ids, 3)
        n_messages = db.message_count()
    return {
        "page_size": PAGE_SIZE,
        "sessions": len(ids),
        "messages": n_messages,
        "session_order_ms": order_s * 1000,
        "page_p50_ms": pct(first, 50) * 1000,
        "page_p95_ms": pct(first, 95) * 1000,
        "page_max_ms": max(first) * 1000,
        "page_os_cached_p50_ms": pct(warm, 50) * 1000,
        "page_os_cached_p95_ms": pct(warm, 95) * 1000,
        "page_os_cached_max_ms": max(warm) * 1000,
    }


def drop_caches() -> None:
    os.sync()
    Path("/proc/sys/vm/drop_caches").write_text("1\n")


def in_subprocess(what: str, path: Path) -> dict[str, Any]:
    """`order_first_call` or `open_steps` in a fresh interpreter (its imports are part of a cold
    start, and a second call in one process would find SQLite's own cache warm)."""
    proc = subprocess.run(
        [sys.executable, __file__, "--store-child", what, str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        return {"error": proc.stderr[-3000:]}
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def run_app_child(args: argparse.Namespace, path: Path, phases: tuple[str, ...]) -> dict[str, Any]:
    env = dict(os.environ, TEXTUAL_ANIMATIONS="none")
    proc = subprocess.run(
        [
            sys.executable,
            __file__,
            "--child",
            str(path),
            json.dumps(SEARCH_QUERIES),
            "--phases",
            ",".join(phases),
            "--gc",
            args.gc,
        ],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if proc.returncode != 0:
        return {"app_error": proc.stderr[-3000:]}
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def measure_once(args: argparse.Namespace, path: Path, phases: tuple[str, ...]) -> dict[str, Any]:
    if args.drop_caches:
        drop_caches()
    if args.only in ("order", "open"):
        return in_subprocess(args.only, path)
    return run_app_child(args, path, phases)


def medians(runs: list[dict[str, Any]]) -> dict[str, float]:
    keys = [k for k, v in runs[0].items() if isinstance(v, (int, float)) and not isinstance(v, bool)]
    out = {}
    for k in keys:
        vals = sorted(r[k] for r in runs if isinstance(r.get(k), (int, float)))
        if vals:
            mid = len(vals) // 2
            out[k] = vals[mid] if len(vals) % 2 else (vals[mid - 1] + vals[mid]) / 2
    return out


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="small,large")
    parser.add_argument("--json", type=Path)
    parser.add_argument(
        "--only",
        choices=("transcript", "paint", "order", "open"),
        help="run only this app phase (after first paint); no list-page or store measurement; "
        "`order`: no app, only the first `session_order` call (with --drop-caches: from a cold file); "
        "`open`: no app, the store's steps of the browser's open, each timed (`open_steps`)",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="with --only order|open|paint: measure N times (each after its own --drop-caches); the "
        "JSON keeps every run under `runs` and the median of each number",
    )
    parser.add_argument(
        "--gc",
        choices=GC_POLICIES,
        default="default",
        help=(
            "what-if: apply this GC policy in the measured app process (default: the app's own policy, "
            "hermes_tui/app/gc_policy.py)"
        ),
    )
    parser.add_argument(
        "--db", type=Path, help="measure this existing store (one size) instead of building one"
    )
    parser.add_argument(
        "--drop-caches",
        action="store_true",
        help="sync and `echo 1 > /proc/sys/vm/drop_caches` (root) right before the app starts",
    )
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--store-child", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--phases", default=",".join(PHASES), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.store_child:
        what, db = args.store_child
        print(json.dumps((order_first_call if what == "order" else open_steps)(Path(db))))
        return 0
    if args.child:
        phases = tuple(args.phases.split(","))
        print(json.dumps(child_app(args.child[0], json.loads(args.child[1]), phases, args.gc)))
        return 0
    results: dict[str, Any] = {}
    phases = ("paint", args.only) if args.only else PHASES
    if args.db and "," in args.sizes:
        parser.error("--db takes one size (the label of the results)")
    for size in args.sizes.split(","):
        path = args.db or build(size)
        res = {} if args.only else store_pages(path)
        if args.only in ("order", "open", "paint") and args.repeat > 1:
            runs = [measure_once(args, path, phases) for _ in range(args.repeat)]
            res = {"caches_dropped": args.drop_caches, "runs": runs, "median": medians(runs)}
            results[size] = res
            print(f"== {size}", json.dumps(res["median"], indent=1, ensure_ascii=False))
            continue
        if args.drop_caches:
            drop_caches()
            res["caches_dropped"] = True
        if args.only in ("order", "open"):
            res.update(in_subprocess(args.only, path))
            results[size] = res
            print(f"== {size}", json.dumps(res, indent=1, ensure_ascii=False))
            continue
        res.update(run_app_child(args, path, phases))
        results[size] = res
        print(f"== {size}", json.dumps(res, indent=1, ensure_ascii=False))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
