"""First paint of two source trees of hermes-tui on one store, interleaved A-B-B-A (issue #21).

    python3 bench/paint_ab.py --base /tmp/base-tree --db /big/wide-ours.db --rounds 2 --cold \\
        --json bench/results/paint-ab-wide-cold.json

`--base` is another checkout (e.g. `git archive HEAD | tar -x -C /tmp/base-tree`); each run is
`bench/app_bench.py --only paint` of that tree in a fresh interpreter with the tree first on
`PYTHONPATH` (the venv's packages otherwise), so "base" and "this tree" alternate on a machine
whose load drifts. `--cold`: `echo 1 > drop_caches` before every run (root). Each run's
`first_paint_s` (list rows on screen) and, where the tree paints a provisional head first,
`whole_order_s` (the whole order installed).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent.parent


def run(tree: Path, db: Path, cold: bool) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "r.json"
        cmd = [sys.executable, str(tree / "bench" / "app_bench.py"), "--db", str(db), "--sizes", "x"]
        cmd += ["--only", "paint", "--json", str(out)] + (["--drop-caches"] if cold else [])
        env = dict(os.environ, PYTHONPATH=str(tree))
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False, cwd=tree)
        if proc.returncode != 0 or not out.exists():
            return {"error": (proc.stderr or proc.stdout)[-2000:]}
        res = json.loads(out.read_text())["x"]
        if "app_error" in res:
            return {"error": res["app_error"][-2000:]}
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
            res = run(trees[name], args.db, args.cold)
            runs[name].append(res)
            print(name, json.dumps({k: v for k, v in res.items() if k != "error"} or res), flush=True)
    summary: dict[str, Any] = {}
    for name, rs in runs.items():
        ok = [r for r in rs if "first_paint_s" in r]
        summary[name] = {
            "first_paint_s_median": statistics.median(r["first_paint_s"] for r in ok) if ok else None,
            "first_paint_s": [round(r["first_paint_s"], 3) for r in ok],
            "whole_order_s": [round(r.get("whole_order_s", r["first_paint_s"]), 3) for r in ok],
            "errors": len(rs) - len(ok),
        }
    b, n = summary["base"]["first_paint_s_median"], summary["new"]["first_paint_s_median"]
    if b and n:
        summary["new_over_base"] = round(n / b, 3)
    result = {
        "db": str(args.db),
        "cold": args.cold,
        "command": " ".join(sys.argv),
        "summary": summary,
        "runs": runs,
    }
    print(json.dumps(summary, indent=1))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
