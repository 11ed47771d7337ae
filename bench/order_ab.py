"""The first `session_order(SessionFilter())` of a process, two source trees interleaved A-B-B-A.

    .venv/bin/python bench/order_ab.py --base /tmp/base-tree --db bench/work/app-wide.db \\
        --rounds 3 [--cold] [--json bench/results/order-ab.json]

What the browser's whole list costs once its head is painted (`app_bench.py --only order` of one
tree; `paint_ab.py` measures first paint). Each run is a fresh interpreter with the tree first on
`PYTHONPATH`: it opens the store read-only, times the default order (the list the browser and
`sessions list` show) and then the same call again (warm). `--cold`: `echo 1 > drop_caches`
before each run (root). The default filter is each tree's own: on a tree before issue #34 every
session unfiltered; since, Hermes' list (flags, children folded, a chain as its tip).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent.parent
CHILD = r"""
import json, sys, time
from hermes_tui.state import SessionDB, SessionFilter
db = SessionDB(sys.argv[1], read_only=True, migrate=False)
t0 = time.perf_counter(); first = db.session_order(SessionFilter()); t1 = time.perf_counter()
db.session_order(SessionFilter()); t2 = time.perf_counter()
print(json.dumps({"first_s": t1 - t0, "again_s": t2 - t1, "ids": len(first)}))
"""


def run(tree: Path, db: Path, cold: bool) -> dict[str, Any]:
    if cold:
        os.sync()
        Path("/proc/sys/vm/drop_caches").write_text("1\n")
    env = dict(os.environ, PYTHONPATH=str(tree))
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(db)], capture_output=True, text=True, env=env, cwd=tree
    )
    if proc.returncode != 0:
        return {"error": proc.stderr[-2000:]}
    res: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return res


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", type=Path, required=True, help="the other tree (A)")
    ap.add_argument("--db", type=Path, required=True)
    ap.add_argument("--rounds", type=int, default=2, help="A-B-B-A rounds")
    ap.add_argument("--cold", action="store_true", help="drop the page cache before each run (root)")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    trees = {"base": args.base.resolve(), "new": HERE}
    runs: dict[str, list[dict[str, Any]]] = {"base": [], "new": []}
    for _ in range(args.rounds):
        for name in ("base", "new", "new", "base"):
            res = run(trees[name], args.db.resolve(), args.cold)
            runs[name].append(res)
            print(name, json.dumps(res), flush=True)
    summary: dict[str, Any] = {}
    for name, rs in runs.items():
        ok = [r for r in rs if "error" not in r]
        summary[name] = {k: statistics.median(r[k] for r in ok) for k in ("first_s", "again_s", "ids") if ok}
    if summary["base"] and summary["new"]:
        summary["ratio_new_over_base"] = {
            k: summary["new"][k] / summary["base"][k] for k in ("first_s", "again_s")
        }
    print(json.dumps(summary, indent=2))
    if args.json:
        args.json.write_text(
            json.dumps({"db": str(args.db), "cold": args.cold, "runs": runs, "summary": summary}, indent=2)
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
