"""Benchmark of the browser across profiles (issue #20): six stores, one large and five small, as
one merged list (`hermes-tui --all`), against opening the largest store alone.

    .venv/bin/python bench/federation_bench.py --home /work/bench-data/fed/home --rounds 2 \
        --json bench/results/federation-1m-<date>.json     # the issue's size (1.1M messages)
    .venv/bin/python bench/federation_bench.py [--large 150000] [--small 10000] [--json out.json]

`--home` measures an existing `$HERMES_HOME` (the issue-size one is built by
`bench/federation_build.py`: a 1M-message v22 store of hermes-agent 0.19.0's schema and five 20k
ones, three written by hermes-agent 0.19.0 (v22) and two by our `import_sessions` (v23); it builds
whatever is missing first). Without it, stores come from
`bench/corpus.py` (deterministic; each store its own seed) written with `import_sessions` into
`bench/work/fed-<large>-<small>/` (`state.db` is the large one, five `profiles/p<N>/state.db` the
small ones; built once, reused). Each measurement runs in a fresh subprocess (RSS and first paint
include the interpreter, Textual and opening the files); `--rounds N` runs the pair N times in
A-B-B-A order (alone, all, all, alone, ...) so machine noise hits both alike, and reports medians.
`--before-root TREE` adds two runs per round, the largest alone and all six with the `hermes_tui`
of another source tree (`mkdir /tmp/old && git archive HEAD hermes_tui | tar -x -C /tmp/old`, plus the built
`hermes_tui/state/cjk/*.so`): before/after in the same rounds. Measured:

- first paint: process start → the list has its first row on screen;
- list page p95: 50 random jumps anywhere in the list → that row drawn (a page merged + fetched);
- keystroke → results p95: the typed queries of `app_bench.py`, newest first, merged results on
  screen after the last key;
- RSS after paint and at the end;
- `stages`: seconds from the start of the measured code to: its imports done (`imported`:
  Textual and the app), the app built (`constructed`), Textual's start-up done (`Ready`), the
  screen's first store message (`Opened` / `StoresOpened`), the order (`OrderLoaded` /
  `MergedLoaded`) and the first page of rows (`PageLoaded`, when not read with the order);
- CPU seconds of the process at first paint (`cpu_at_paint_s`, every thread);
- store level, no UI (`store_page_*`): a fresh merged order, then 200 random pages of 50 rows
  anywhere in it (`MergedOrder.page`) and 50 `index_of` of random sessions.

The ratio columns divide the federated figure by the largest store's alone.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
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
from app_bench import SEARCH_QUERIES, rss_mb  # noqa: E402
from measure import pct, private_settings  # noqa: E402

private_settings()

SMALL_STORES = 5


def build_store(path: Path, messages: int, seed: int) -> None:
    """One store of about `messages` messages through `import_sessions` (built once)."""
    import federation_build  # type: ignore[import-not-found]

    if path.exists():
        return
    got = federation_build.build_ours(path, messages, seed)
    print(f"built {path}: ~{messages:,} messages in {got['seconds']:.0f}s", file=sys.stderr)


def build(large: int, small: int) -> Path:
    """The `$HERMES_HOME` with the six stores."""
    home = WORK / f"fed-{large}-{small}"
    build_store(home / "state.db", large, seed=1337)
    for i in range(SMALL_STORES):
        build_store(home / "profiles" / f"p{i + 1}" / "state.db", small, seed=2000 + i)
    return home


def child(
    home: str, federated: bool, queries: list[str], jumps_n: int = 50, cli_like: bool = True
) -> dict[str, Any]:
    """Run in a subprocess: first paint, RSS, list jumps, typed searches (newest first).
    `cli_like` False: the app also prefetches the default store alone, as this bench did
    until 2026-12-04 (the command line never did)."""
    t_start = time.perf_counter()
    import hermes_tui
    from hermes_tui.app.app import HermesApp
    from hermes_tui.app.federated_prefetch import federate
    from hermes_tui.app.stores import StoreChoice
    from hermes_tui.app.widgets.search import SearchPane
    from hermes_tui.app.widgets.session_list import SessionList

    out: dict[str, Any] = {"tree": str(Path(hermes_tui.__file__).parent.parent)}
    stages: dict[str, float] = {"imported": round(time.perf_counter() - t_start, 3)}
    shown: list[tuple[float, str]] = []

    def hook(message: object) -> None:
        if isinstance(message, SearchPane.ResultsShown):
            shown.append((time.perf_counter(), message.request.query))
        name = type(message).__name__
        if name in STAGES and name not in stages:
            stages[name] = round(time.perf_counter() - t_start, 3)

    async def run() -> None:
        # As `hermes-tui --all` builds it (cli.py): no one-file prefetch of the default store
        # when several stores open (it would only compete with theirs, then be dropped).
        app = HermesApp(Path(home) / "state.db", read_only=True, prefetch=not federated or not cli_like)
        if federated:
            federate(app, StoreChoice(all_profiles=True, home=Path(home)))
        stages["constructed"] = round(time.perf_counter() - t_start, 3)
        async with app.run_test(size=(120, 40), message_hook=hook) as pilot:
            while True:
                await asyncio.sleep(0.005)
                try:
                    sl = app.screen.query_one("#sessions", SessionList)
                except Exception:  # noqa: BLE001 - not composed yet
                    continue
                if sl.total and sl.row_at(0) is not None:
                    break
                if time.perf_counter() - t_start > 120:
                    raise TimeoutError("no first paint in 120 s")
            out["first_paint_s"] = time.perf_counter() - t_start
            out["cpu_at_paint_s"] = time.process_time()
            out["stages"] = dict(stages)
            out["sessions"] = sl.total
            await pilot.pause(0.3)
            out["rss_after_paint_mb"] = rss_mb()
            jumps = []
            rng = random.Random(1)
            for _ in range(jumps_n):
                target = rng.randrange(sl.total)
                t = time.perf_counter()
                sl.cursor = target
                while sl.row_at(target) is None:
                    await asyncio.sleep(0.001)
                jumps.append(time.perf_counter() - t)
            out["jump_p50_ms"] = pct(jumps, 50) * 1000
            out["jump_p95_ms"] = pct(jumps, 95) * 1000
            if queries:
                await pilot.press("slash")
            lat: list[float] = []
            for q in queries:
                await pilot.press("ctrl+a", "ctrl+k")
                await pilot.pause(0.3)
                shown.clear()
                last_key = time.perf_counter()
                for ch in q:
                    last_key = time.perf_counter()
                    await pilot.press("space" if ch == " " else ch)
                    await asyncio.sleep(0.06)
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


def store_child(home: str) -> dict[str, Any]:
    """Run in a subprocess: the merged list at store level (no UI): open, order, random pages."""
    import hermes_tui
    from hermes_tui.app.stores import BrowserStores, StoreChoice
    from hermes_tui.state import SessionFilter

    t0 = time.perf_counter()
    stores = BrowserStores.open(StoreChoice(all_profiles=True, home=Path(home)), read_only=True)
    t1 = time.perf_counter()
    out: dict[str, Any] = {"open_s": t1 - t0, "tree": str(Path(hermes_tui.__file__).parent.parent)}
    try:
        merged = stores.fed.session_order(SessionFilter(), order="last_active")
        t2 = time.perf_counter()
        out["order_s"] = t2 - t1
        first = merged.page(0, 50)
        out["first_page_ms"] = (time.perf_counter() - t2) * 1000
        out["sessions"] = len(merged)
        out["counts"] = merged.counts
        rng = random.Random(2)
        lat = []
        for _ in range(200):
            off = rng.randrange(len(merged))
            t = time.perf_counter()
            merged.page(off, 50)
            lat.append(time.perf_counter() - t)
        out["store_page_p50_ms"] = pct(lat, 50) * 1000
        out["store_page_p95_ms"] = pct(lat, 95) * 1000
        out["store_page_max_ms"] = max(lat) * 1000
        fresh = stores.fed.session_order(SessionFilter(), order="last_active")
        pairs = merged.all_pairs()
        look = []
        for _ in range(50):
            profile, sid = pairs[rng.randrange(len(pairs))]
            t = time.perf_counter()
            fresh.index_of(profile, sid)
            look.append(time.perf_counter() - t)
        out["index_of_p95_ms"] = pct(look, 95) * 1000
        out["first_rows"] = len(first)
    finally:
        stores.close()
    return out


STAGES = ("Ready", "Opened", "StoresOpened", "OrderLoaded", "MergedLoaded", "MergedFirst", "PageLoaded")


def run_child(home: Path, mode: str, paint_only: bool = False, root: Path = ROOT) -> dict[str, Any]:
    """One measurement in a fresh interpreter: `mode` is "alone", "all" or "store"; `root` is
    the source tree whose `hermes_tui` it imports."""
    code = (
        # The bench modules put this checkout first on sys.path: the tree measured goes first
        # after them, and nothing of hermes_tui may have been imported before.
        "import json, sys; sys.path.insert(0, sys.argv[1]); import federation_bench as b; "
        "assert not [m for m in sys.modules if m.split('.')[0] == 'hermes_tui']; "
        "sys.path.insert(0, sys.argv[2]); "
        "a = sys.argv[4]; q = json.loads(sys.argv[5]); "
        "n = 50 if q else 0; "
        "r = b.store_child(sys.argv[3]) if a == 'store' else b.child(sys.argv[3], a == 'all', q, n); "
        "print(json.dumps(r))"
    )
    env = {**os.environ, "HERMES_HOME": str(home), "XDG_CACHE_HOME": str(WORK / "cache")}
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            code,
            str(HERE),
            str(root),
            str(home),
            mode,
            json.dumps([] if paint_only else SEARCH_QUERIES),
        ],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{mode} child failed:\n{proc.stderr[-3000:]}")
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def median(values: list[float]) -> float:
    return float(statistics.median(values)) if values else float("nan")


KEYS = ("first_paint_s", "cpu_at_paint_s", "jump_p95_ms", "search_p95_ms", "rss_after_paint_mb", "rss_end_mb")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", type=Path, default=None, help="an existing $HERMES_HOME to measure")
    parser.add_argument("--large", type=int, default=150_000, help="messages in the large store")
    parser.add_argument("--small", type=int, default=10_000, help="messages in each of the five small ones")
    parser.add_argument("--rounds", type=int, default=1, help="A-B-B-A pairs of runs (medians reported)")
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    parser.add_argument(
        "--paint-only", action="store_true", help="first paint and RSS only (no jumps, searches)"
    )
    parser.add_argument(
        "--root", type=Path, default=ROOT, help="the tree whose hermes_tui is measured (default: this one)"
    )
    parser.add_argument(
        "--before-root",
        type=Path,
        default=None,
        help="also measure all six with the hermes_tui of this tree (e.g. `git archive HEAD` unpacked)",
    )
    args = parser.parse_args()
    if args.home is not None:
        import federation_build  # type: ignore[import-not-found]

        federation_build.build(args.home)
        home = args.home
    else:
        home = build(args.large, args.small)
    runs: dict[str, list[dict[str, Any]]] = {
        "alone": [],
        "all": [],
        "store": [],
        "before": [],
        "before_alone": [],
    }
    modes = ("alone", "all") + (("before", "before_alone") if args.before_root is not None else ())
    for r in range(max(1, args.rounds)):
        order = modes if r % 2 == 0 else modes[::-1]
        for mode in order:
            if mode.startswith("before"):
                fed_mode = "alone" if mode == "before_alone" else "all"
                runs[mode].append(run_child(home, fed_mode, args.paint_only, args.before_root))
            else:
                runs[mode].append(run_child(home, mode, args.paint_only, args.root))
            got = {k: runs[mode][-1].get(k) for k in KEYS}
            print(f"round {r + 1} {mode}: {json.dumps(got)}", file=sys.stderr)
        if not args.paint_only:
            runs["store"].append(run_child(home, "store", root=args.root))
    alone = {k: median([x[k] for x in runs["alone"]]) for k in KEYS}
    fed = {k: median([x[k] for x in runs["all"]]) for k in KEYS}
    store_keys = (
        "open_s",
        "order_s",
        "first_page_ms",
        "store_page_p95_ms",
        "store_page_max_ms",
        "index_of_p95_ms",
    )
    store = {k: median([x[k] for x in runs["store"]]) for k in store_keys} if runs["store"] else {}
    before = {k: median([x[k] for x in runs["before"]]) for k in KEYS} if runs["before"] else None
    before_alone = (
        {k: median([x[k] for x in runs["before_alone"]]) for k in KEYS} if runs["before_alone"] else None
    )
    result = {
        "home": str(home),
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "stores": 1 + SMALL_STORES,
        "sessions": runs["all"][0].get("sessions"),
        "alone": alone,
        "federated": fed,
        "ratio": {k: round(fed[k] / alone[k], 2) if alone.get(k) else None for k in KEYS},
        "store_level": store,
        "before": before,
        "before_alone": before_alone,
        "ratio_after_before": (
            {k: round(fed[k] / before[k], 2) if before.get(k) else None for k in KEYS} if before else None
        ),
        "runs": runs,
    }
    print(f"{'metric':<22}{'largest alone':>15}{'all six':>12}{'ratio':>8}")
    for k in KEYS:
        print(f"{k:<22}{alone[k]:>15.1f}{fed[k]:>12.1f}{result['ratio'][k]:>8.2f}")
    if before and before_alone:
        print(f"{'metric':<22}{'before: alone':>15}{'all six':>12}{'after: alone':>14}{'all six':>12}")
        for k in KEYS:
            print(f"{k:<22}{before_alone[k]:>15.1f}{before[k]:>12.1f}{alone[k]:>14.1f}{fed[k]:>12.1f}")
    for k, v in store.items():
        print(f"store level {k:<22}{v:>10.1f}")
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
