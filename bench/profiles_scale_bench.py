"""Benchmark of `--all` over many profiles (issue #33, item 14): N small stores plus M empty
profile folders in one `$HERMES_HOME`, before and after in one run.

    .venv/bin/python bench/profiles_scale_bench.py --stores 300 --empty 2700 \
        --before-root /tmp/profiles-main --json bench/results/profiles-scale-<date>.json

The home (`bench/work/profiles-<N>-<M>/`, built once) holds the default store and
`profiles/p0001 … p<N>/state.db`, each a copy of one of four small template stores written through
our store API (5 sessions of 4 messages each, every template its own timestamps, so the merged list
interleaves them), plus `profiles/e0001 … e<M>/`, folders without a `state.db` (a profile that never
ran). Each measurement runs in a fresh interpreter importing the `hermes_tui` of `--root` (default:
this tree) or `--before-root` (another checkout, e.g. `git worktree add /tmp/profiles-main main`
plus the built `hermes_tui/state/cjk/*.so`), and reports:

- `discover_s` / `discover_probe_s`: `discover_stores(probe=False)` (what the browser does) and
  `discover_stores()` (probed, what the CLI does);
- `open_s`: `open_stores(usable refs)`, with `open_threads` (`threading.active_count()` once open)
  and `open_fds` (`/proc/self/fd`), then `close_s`; a search over every store as the browser's
  search pane makes it (`BrowserStores.searcher`, newest first, 20 hits): `search_first_ms`,
  `search_next_ms` (the median of the 12 queries after it) and `search_threads` (threads alive
  after them);
- `cli_s`: `hermes-tui sessions list --all --limit 50` in a subprocess (wall time, the interpreter
  included), with its exit code and stderr lines;
- the browser (`--all` under `run_test`, 120x36, as `hermes-tui --all` builds it): `first_rows_s`
  (process start → the list has a row drawn), `all_rows_s` (→ the list holds every store's
  sessions), `max_threads` (the highest `threading.active_count()` seen, sampled every 5 ms until
  0.5 s after every row arrived, the sampler included) and `max_fds` (every 50 ms), and `idle_cpu_pct` (CPU
  of the whole process, the sampler stopped, over 3 s of an
  idle list once every store answered: the live followers' polling, and the background work
  after paint) and `idle_late_cpu_pct` (the same 8 s later), and `stages` (seconds from process
  start to the screen's first `StoresOpened`, `MergedLoaded`, `StoresArrived`, `LiveOrder`).

A browser run that has no row after `--timeout` seconds is reported as `timeout` (its fields
say how far it got).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
WORK = HERE / "work"

TEMPLATES = 4
SESSIONS = 5
MESSAGES = 4
T0 = 1_780_000_000.0


def build_template(path: Path, seed: int) -> None:
    """One small store through our store API: `SESSIONS` sessions of `MESSAGES` messages."""
    sys.path.insert(0, str(ROOT))
    from hermes_tui.state import SessionDB

    path.parent.mkdir(parents=True, exist_ok=True)
    with SessionDB(path) as db:
        for s in range(SESSIONS):
            sid = f"t{seed}-s{s}"
            db.create_session(sid, "cli", model="bench/model")
            for m in range(MESSAGES):
                ts = T0 + seed * 37 + s * 600 + m * 7
                db.append_message(
                    sid, "user" if m % 2 == 0 else "assistant", f"kestrel {seed} {s} {m}", timestamp=ts
                )
            db.set_session_title(sid, f"template {seed} session {s}")


def build(stores: int, empty: int) -> Path:
    """The `$HERMES_HOME` (built once, reused)."""
    home = WORK / f"profiles-{stores}-{empty}"
    done = home / ".complete"
    if done.exists():
        return home
    if home.exists():
        shutil.rmtree(home)
    templates = WORK / "profiles-templates"
    for t in range(TEMPLATES):
        path = templates / f"t{t}.db"
        if not path.exists():
            build_template(path, t)
    (home / "profiles").mkdir(parents=True)
    shutil.copyfile(templates / "t0.db", home / "state.db")
    for i in range(1, stores + 1):
        folder = home / "profiles" / f"p{i:04d}"
        folder.mkdir()
        shutil.copyfile(templates / f"t{i % TEMPLATES}.db", folder / "state.db")
    for i in range(1, empty + 1):
        (home / "profiles" / f"e{i:04d}").mkdir()
    done.write_text("")
    return home


def fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def store_child(home: str) -> dict[str, Any]:
    """Discovery and opening at store level (no UI)."""
    import threading

    import hermes_tui
    from hermes_tui.state import discover_stores, open_stores

    out: dict[str, Any] = {"tree": str(Path(hermes_tui.__file__).parent.parent)}
    t = time.perf_counter()
    refs = discover_stores(home=home, probe=False)
    out["discover_s"] = time.perf_counter() - t
    out["refs"] = len(refs)
    out["usable"] = sum(1 for r in refs if r.usable)
    t = time.perf_counter()
    discover_stores(home=home)
    out["discover_probe_s"] = time.perf_counter() - t
    t = time.perf_counter()
    fed = open_stores([r for r in refs if r.usable], read_only=True)
    out["open_s"] = time.perf_counter() - t
    out["open_threads"] = threading.active_count()
    out["open_fds"] = fds()
    out["opened"] = len(fed.profiles)
    t = time.perf_counter()
    fed.close()
    out["close_s"] = time.perf_counter() - t
    from hermes_tui.app.stores import BrowserStores, StoreChoice

    stores = BrowserStores.open(StoreChoice(all_profiles=True, home=Path(home)), True)
    try:
        search = stores.searcher()
        t = time.perf_counter()
        hits, _route = search("kestrel", limit=20)
        out["search_first_ms"] = (time.perf_counter() - t) * 1000
        took = []
        for query in ["kestrel 2", "kestrel 1", "message", "template 3"] * 3:
            t = time.perf_counter()
            hits, _route = search(query, limit=20)
            took.append(time.perf_counter() - t)
        out["search_next_ms"] = statistics.median(took) * 1000
        out["search_hits"] = len(hits)
        out["search_threads"] = threading.active_count()
    finally:
        stores.close()
    return out


def browser_child(home: str, timeout: float, expected: int) -> dict[str, Any]:
    """`hermes-tui --all` under `run_test`: first rows, every row, threads, fds, idle CPU."""
    t_start = time.perf_counter()
    import asyncio
    import threading

    import hermes_tui
    from hermes_tui.app.app import HermesApp
    from hermes_tui.app.federated_prefetch import federate
    from hermes_tui.app.stores import StoreChoice
    from hermes_tui.app.widgets.session_list import SessionList

    sys.path.insert(0, str(HERE))
    from measure import private_settings  # type: ignore[import-not-found]

    private_settings()
    out: dict[str, Any] = {"tree": str(Path(hermes_tui.__file__).parent.parent), "expected": expected}
    peak = {"threads": 0, "fds": 0}
    stop = threading.Event()

    def sample() -> None:
        n = 0
        while not stop.is_set():
            peak["threads"] = max(peak["threads"], threading.active_count())
            if n % 10 == 0:  # listing 1,500 fds is not free: every 50 ms
                try:
                    peak["fds"] = max(peak["fds"], fds())
                except OSError:
                    pass
            n += 1
            stop.wait(0.005)

    threading.Thread(target=sample, name="bench-sampler", daemon=True).start()

    stages: dict[str, float] = {}

    def hook(message: object) -> None:
        name = type(message).__name__
        if name in STAGES and name not in stages:
            stages[name] = round(time.perf_counter() - t_start, 3)

    async def run() -> None:
        app = HermesApp(Path(home) / "state.db", read_only=True, prefetch=False)
        federate(app, StoreChoice(all_profiles=True, home=Path(home)))
        stages["constructed"] = round(time.perf_counter() - t_start, 3)
        async with app.run_test(size=(120, 36), message_hook=hook) as pilot:
            sl: SessionList | None = None
            while True:
                await asyncio.sleep(0.005)
                if time.perf_counter() - t_start > timeout:
                    out["timeout"] = True
                    out["total_at_timeout"] = sl.total if sl is not None else None
                    return
                try:
                    sl = app.screen.query_one("#sessions", SessionList)
                except Exception:  # noqa: BLE001 - not composed yet
                    continue
                if "first_rows_s" not in out and sl.total and sl.row_at(0) is not None:
                    out["first_rows_s"] = time.perf_counter() - t_start
                    out["rows_at_first"] = sl.total
                if "first_rows_s" in out and sl.total >= expected and sl.row_at(0) is not None:
                    out["all_rows_s"] = time.perf_counter() - t_start
                    break
            out["sessions"] = sl.total
            out["stages"] = dict(stages)
            await pilot.pause(0.5)
            stop.set()  # the sampler's own reads of /proc (every 5 ms) are not the browser's CPU
            c0, w0 = time.process_time(), time.perf_counter()
            await asyncio.sleep(3.0)
            out["idle_cpu_pct"] = 100 * (time.process_time() - c0) / (time.perf_counter() - w0)
            out["threads_idle"] = threading.active_count()
            await asyncio.sleep(5.0)  # the background work after paint is done by now
            c0, w0 = time.process_time(), time.perf_counter()
            await asyncio.sleep(3.0)
            out["idle_late_cpu_pct"] = 100 * (time.process_time() - c0) / (time.perf_counter() - w0)

    try:
        asyncio.run(run())
    finally:
        stop.set()
    out["max_threads"] = peak["threads"]
    out["max_fds"] = peak["fds"]
    out["wall_s"] = time.perf_counter() - t_start
    return out


STAGES = ("Ready", "StoresOpened", "MergedLoaded", "PageLoaded", "StoresArrived", "LiveOrder")


def run_child(root: Path, home: Path, mode: str, timeout: float, expected: int) -> dict[str, Any]:
    """One measurement in a fresh interpreter importing `root`'s `hermes_tui`."""
    code = (
        "import json, sys; sys.path.insert(0, sys.argv[1]); import profiles_scale_bench as b; "
        "assert not [m for m in sys.modules if m.split('.')[0] == 'hermes_tui']; "
        "sys.path.insert(0, sys.argv[2]); "
        "r = b.store_child(sys.argv[3]) if sys.argv[4] == 'store' "
        "else b.browser_child(sys.argv[3], float(sys.argv[5]), int(sys.argv[6])); "
        "print(json.dumps(r))"
    )
    env = {**os.environ, "HERMES_HOME": str(home), "XDG_CACHE_HOME": str(WORK / "cache")}
    argv = [sys.executable, "-c", code, str(HERE), str(root), str(home), mode, str(timeout), str(expected)]
    try:
        proc = subprocess.run(
            argv, capture_output=True, text=True, env=env, check=False, timeout=timeout + 60
        )
    except subprocess.TimeoutExpired:
        return {"timeout": True, "killed": True}
    if proc.returncode != 0:
        return {"error": proc.stderr[-2000:]}
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def run_cli(root: Path, home: Path) -> dict[str, Any]:
    """`hermes-tui sessions list --all --limit 50` in a fresh interpreter (wall time)."""
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); from hermes_tui.cli import main; "
        "sys.exit(main(['sessions', 'list', '--all', '--limit', '50']))"
    )
    env = {**os.environ, "HERMES_HOME": str(home), "XDG_CACHE_HOME": str(WORK / "cache")}
    t = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", code, str(root)], capture_output=True, text=True, env=env, check=False
    )
    return {
        "cli_s": time.perf_counter() - t,
        "cli_code": proc.returncode,
        "cli_stdout_lines": len(proc.stdout.splitlines()),
        "cli_stderr_lines": len(proc.stderr.splitlines()),
    }


KEYS = (
    "discover_s",
    "discover_probe_s",
    "open_s",
    "open_threads",
    "open_fds",
    "close_s",
    "search_first_ms",
    "search_next_ms",
    "search_threads",
    "cli_s",
    "cli_stderr_lines",
    "first_rows_s",
    "all_rows_s",
    "max_threads",
    "max_fds",
    "idle_cpu_pct",
    "idle_late_cpu_pct",
    "threads_idle",
)


def measure(root: Path, home: Path, timeout: float, expected: int) -> dict[str, Any]:
    got: dict[str, Any] = {}
    got.update(run_child(root, home, "store", timeout, expected))
    got.update(run_cli(root, home))
    got.update(run_child(root, home, "browser", timeout, expected))
    return got


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stores", type=int, default=300, help="profile stores (besides the default one)")
    parser.add_argument("--empty", type=int, default=2700, help="profile folders without a state.db")
    parser.add_argument("--root", type=Path, default=ROOT, help="the tree measured (default: this one)")
    parser.add_argument(
        "--before-root", type=Path, default=None, help="another tree, measured in the same run"
    )
    parser.add_argument("--timeout", type=float, default=120.0, help="give a browser run this long")
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    args = parser.parse_args()
    home = build(args.stores, args.empty)
    expected = (args.stores + 1) * SESSIONS
    trees = [("after", args.root)] + ([("before", args.before_root)] if args.before_root else [])
    results: dict[str, dict[str, Any]] = {}
    for name, root in reversed(trees):  # before first: a cold cache hurts it, not the change
        results[name] = measure(root, home, args.timeout, expected)
        print(f"{name}: {json.dumps({k: results[name].get(k) for k in KEYS})}", file=sys.stderr)
    names = [n for n, _r in trees][::-1]
    print(f"{'metric':<20}" + "".join(f"{n:>14}" for n in names))
    for k in KEYS:
        cells = []
        for n in names:
            v = results[n].get(k)
            if v is None and results[n].get("timeout") and k in ("first_rows_s", "all_rows_s"):
                cells.append(f"{'>' + str(int(args.timeout)):>14}")
            elif isinstance(v, float):
                cells.append(f"{v:>14.3f}")
            else:
                cells.append(f"{v!s:>14}")
        print(f"{k:<20}" + "".join(cells))
    if args.json is not None:
        doc = {
            "command": " ".join([Path(sys.executable).name, *sys.argv]),
            "stores": args.stores + 1,
            "empty": args.empty,
            "sessions": expected,
            "results": results,
        }
        args.json.write_text(json.dumps(doc, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
