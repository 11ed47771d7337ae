"""The merged list and federated search at store level (no Textual), two source trees side by side.

    .venv/bin/python bench/federation_store_ab.py --home /work/bench-data/fed/home \
        --before-root /tmp/old --rounds 3 --json bench/results/federation-store-ab-<date>.json

`--before-root` is another tree's `hermes_tui` (`mkdir /tmp/old && git archive HEAD hermes_tui |
tar -x -C /tmp/old`, plus the built `hermes_tui/state/cjk/*.so`). Each measurement runs in a fresh
interpreter, alternating before/after (A-B-B-A), through the browser's own adapter
(`hermes_tui.app.stores.BrowserStores`) over every store of `--home`:

- `open_s`, `order_s`, `first_page_ms`: open the stores, the merged order's first 100 keys, the
  rows of the first 50 (what the first paint waits for);
- `page_p95_ms`: 30 pages of 50 rows at random positions, each in a fresh order (a jump);
- `find_p95_ms`: the merged position of 20 random sessions (`index_or_none`, in a fresh order);
- `first_typed_ms`: right after that (or after `--pause` seconds), the first query of
  `app_bench.py` ("error") typed a character every 60 ms, as below, the process's first search:
  from the last character to its hits. It includes what the first newest-first search of each
  store builds once (`SessionDB.prepare_search`: 0.5-0.7 s at 1M messages), unless the tree
  built it ahead;
- `typed_p95_ms`: each query of `app_bench.py` typed a character every 60 ms, every prefix's
  search started on a thread of its own as the search pane's workers do (newest first, 25 hits):
  from the last character to its hits. Each query is searched once first (its index pages read
  once per process), so these are warm.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from app_bench import SEARCH_QUERIES  # noqa: E402
from measure import pct  # noqa: E402

KEYS = ("open_s", "order_s", "first_page_ms", "page_p95_ms", "find_p95_ms", "first_typed_ms", "typed_p95_ms")


def child(home: str, pause_s: float = 0.0) -> dict[str, Any]:
    """Run in a subprocess whose `hermes_tui` is the tree measured."""
    import hermes_tui
    from hermes_tui.app.stores import BrowserStores, StoreChoice
    from hermes_tui.state import SessionFilter

    out: dict[str, Any] = {"tree": str(Path(hermes_tui.__file__).parent.parent)}
    t0 = time.perf_counter()
    stores = BrowserStores.open(StoreChoice(all_profiles=True, home=Path(home)), read_only=True)
    t1 = time.perf_counter()
    try:
        result = stores.order(SessionFilter(), "last_active", None, None, first=100)
        t2 = time.perf_counter()
        stores.list_rows(result.keys[:50])
        t3 = time.perf_counter()
        out.update(open_s=t1 - t0, order_s=t2 - t1, first_page_ms=(t3 - t2) * 1000, sessions=result.total)
        rng = random.Random(7)
        pages, finds = [], []
        every = list(result.keys)
        for _ in range(30):
            keys = stores.order(SessionFilter(), "last_active", None, None, first=100).keys
            off = rng.randrange(len(keys))
            t = time.perf_counter()
            stores.list_rows(keys[off : off + 50])
            pages.append(time.perf_counter() - t)
        for _ in range(20):
            keys = stores.order(SessionFilter(), "last_active", None, None, first=100).keys
            key = every[rng.randrange(len(every))]
            t = time.perf_counter()
            keys.index_or_none(key)  # type: ignore[union-attr]
            finds.append(time.perf_counter() - t)
        out["page_p95_ms"] = pct(pages, 95) * 1000
        out["find_p95_ms"] = pct(finds, 95) * 1000
        search = stores.searcher()
        time.sleep(pause_s)  # `--pause`: the user looks at the list before typing
        out["first_typed_ms"] = type_query(search, SEARCH_QUERIES[0])
        for q in SEARCH_QUERIES:  # each term's index pages read once: the typed figures are warm
            search(q, limit=25, sort="newest")
        typed = {q: type_query(search, q) for q in SEARCH_QUERIES}
        out["typed_ms"] = typed
        out["typed_p95_ms"] = pct(list(typed.values()), 95)
    finally:
        stores.close()
    return out


def type_query(search: Any, q: str) -> float:
    """`q` typed a character every 60 ms, each prefix searched on a thread of its own (as the
    search pane's workers do): ms from the last character to its hits."""
    threads: list[threading.Thread] = []
    done: dict[str, float] = {}
    last = 0.0
    for i in range(1, len(q) + 1):
        prefix = q[:i].strip()
        if not prefix:
            continue

        def run(p: str = prefix) -> None:
            try:
                search(p, limit=25, sort="newest")
            finally:
                done[p] = time.perf_counter()

        last = time.perf_counter()
        th = threading.Thread(target=run, daemon=True)
        th.start()
        threads.append(th)
        time.sleep(0.06)
    for th in threads:
        th.join(60)
    return (done.get(q.strip(), time.perf_counter()) - last) * 1000


def run_child(home: Path, root: Path, pause_s: float = 0.0) -> dict[str, Any]:
    code = (
        # The bench modules put this checkout first on sys.path: the tree measured goes first
        # after them, and nothing of hermes_tui may have been imported before.
        "import json, sys; sys.path.insert(0, sys.argv[1]); import federation_store_ab as b; "
        "assert not [m for m in sys.modules if m.split('.')[0] == 'hermes_tui']; "
        "sys.path.insert(0, sys.argv[2]); "
        "print(json.dumps(b.child(sys.argv[3], float(sys.argv[4]))))"
    )
    env = {**os.environ, "HERMES_HOME": str(home), "XDG_CACHE_HOME": str(HERE / "work" / "cache")}
    proc = subprocess.run(
        [sys.executable, "-c", code, str(HERE), str(root), str(home), str(pause_s)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"child failed ({root}):\n{proc.stderr[-3000:]}")
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--before-root", type=Path, required=True)
    parser.add_argument(
        "--root", type=Path, default=ROOT, help="the tree measured as after (a copy: others edit this one)"
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--pause", type=float, default=0.0, help="seconds between the list's last read and the first key"
    )
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    runs: dict[str, list[dict[str, Any]]] = {"before": [], "after": []}
    trees = {"before": args.before_root, "after": args.root}
    for r in range(max(1, args.rounds)):
        for name in ("before", "after") if r % 2 == 0 else ("after", "before"):
            runs[name].append(run_child(args.home, trees[name], args.pause))
            print(
                f"round {r + 1} {name}: {json.dumps({k: runs[name][-1][k] for k in KEYS})}", file=sys.stderr
            )
    med = {n: {k: float(statistics.median(x[k] for x in runs[n])) for k in KEYS} for n in runs}
    ratio = {k: round(med["after"][k] / med["before"][k], 2) if med["before"][k] else None for k in KEYS}
    print(f"{'metric':<16}{'before':>10}{'after':>10}{'ratio':>8}")
    for k in KEYS:
        print(f"{k:<16}{med['before'][k]:>10.3f}{med['after'][k]:>10.3f}{ratio[k]:>8.2f}")
    if args.json is not None:
        result = {"home": str(args.home), "command": " ".join(sys.argv), "median": med, "ratio": ratio}
        args.json.write_text(json.dumps({**result, "runs": runs}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
