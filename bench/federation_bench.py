"""Benchmark of the browser across profiles (issue #20): six stores, one large and five small, as
one merged list (`hermes-tui --all`), against opening the largest store alone.

    .venv/bin/python bench/federation_bench.py [--large 150000] [--small 10000] [--json out.json]

Stores come from `bench/corpus.py` (deterministic; each store its own seed) written with
`import_sessions` into `bench/work/fed-<large>-<small>/` (`state.db` is the large one, five
`profiles/p<N>/state.db` the small ones; built once, reused). Each measurement runs in a fresh
subprocess (RSS and first paint include the interpreter, Textual and opening the files):

- first paint: process start → the list has its first row on screen;
- list page p95: 50 random jumps anywhere in the list → that row drawn (a page merged + fetched);
- keystroke → results p95: the typed queries of `app_bench.py`, newest first, merged results on
  screen after the last key;
- RSS after paint and at the end.

The ratio columns divide the federated figure by the largest store's alone.
"""

from __future__ import annotations

import argparse
import asyncio
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
from app_bench import SEARCH_QUERIES, rss_mb  # noqa: E402
from measure import pct, private_settings  # noqa: E402

private_settings()

SMALL_STORES = 5


def build_store(path: Path, messages: int, seed: int) -> None:
    """One store of about `messages` messages through `import_sessions` (built once)."""
    import corpus  # type: ignore[import-not-found]

    from hermes_tui.state import SessionDB

    if path.exists():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name("building.db")
    for p in (tmp, Path(f"{tmp}-wal"), Path(f"{tmp}-shm")):
        p.unlink(missing_ok=True)
    t0 = time.perf_counter()
    batch: list[dict[str, Any]] = []
    with SessionDB(tmp) as db:
        for s in corpus.iter_sessions(messages, seed=seed):
            exp = {k: v for k, v in s.items() if k != "edge_kind"}
            exp["model_config"] = json.dumps(s["model_config"]) if s["model_config"] else None
            batch.append(exp)
            if len(batch) >= 200:
                db.import_sessions(batch)
                batch.clear()
        if batch:
            db.import_sessions(batch)
    for suffix in ("-wal", "-shm"):
        side = Path(f"{tmp}{suffix}")
        if side.exists():
            side.rename(f"{path}{suffix}")
    tmp.rename(path)
    print(f"built {path}: ~{messages:,} messages in {time.perf_counter() - t0:.0f}s", file=sys.stderr)


def build(large: int, small: int) -> Path:
    """The `$HERMES_HOME` with the six stores."""
    home = WORK / f"fed-{large}-{small}"
    build_store(home / "state.db", large, seed=1337)
    for i in range(SMALL_STORES):
        build_store(home / "profiles" / f"p{i + 1}" / "state.db", small, seed=2000 + i)
    return home


def child(home: str, federated: bool, queries: list[str]) -> dict[str, Any]:
    """Run in a subprocess: first paint, RSS, list jumps, typed searches (newest first)."""
    t_start = time.perf_counter()
    from hermes_tui.app.app import HermesApp
    from hermes_tui.app.stores import StoreChoice, federate
    from hermes_tui.app.widgets.search import SearchPane
    from hermes_tui.app.widgets.session_list import SessionList

    out: dict[str, Any] = {}
    shown: list[tuple[float, str]] = []

    def hook(message: object) -> None:
        if isinstance(message, SearchPane.ResultsShown):
            shown.append((time.perf_counter(), message.request.query))

    async def run() -> None:
        app = HermesApp(Path(home) / "state.db", read_only=True)
        if federated:
            federate(app, StoreChoice(all_profiles=True, home=Path(home)))
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
            out["sessions"] = sl.total
            await pilot.pause(0.3)
            out["rss_after_paint_mb"] = rss_mb()
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


def run_child(home: Path, federated: bool) -> dict[str, Any]:
    code = (
        "import json, sys; sys.path[:0] = [sys.argv[1], sys.argv[2]]; import federation_bench as b; "
        "print(json.dumps(b.child(sys.argv[3], sys.argv[4] == '1', json.loads(sys.argv[5]))))"
    )
    env = {**os.environ, "HERMES_HOME": str(home), "XDG_CACHE_HOME": str(WORK / "cache")}
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            code,
            str(HERE),
            str(ROOT),
            str(home),
            "1" if federated else "0",
            json.dumps(SEARCH_QUERIES),
        ],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--large", type=int, default=150_000, help="messages in the large store")
    parser.add_argument("--small", type=int, default=10_000, help="messages in each of the five small ones")
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    args = parser.parse_args()
    home = build(args.large, args.small)
    alone = run_child(home, federated=False)
    fed = run_child(home, federated=True)
    keys = ("first_paint_s", "jump_p95_ms", "search_p95_ms", "rss_after_paint_mb", "rss_end_mb")
    result = {
        "large": args.large,
        "small": args.small,
        "stores": 1 + SMALL_STORES,
        "alone": alone,
        "federated": fed,
        "ratio": {k: round(fed[k] / alone[k], 2) if alone.get(k) else None for k in keys},
    }
    print(f"{'metric':<22}{'largest alone':>15}{'all six':>12}{'ratio':>8}")
    for k in keys:
        print(f"{k:<22}{alone[k]:>15.1f}{fed[k]:>12.1f}{result['ratio'][k]:>8.2f}")
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
