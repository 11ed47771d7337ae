"""Where the browser's CPU goes while it follows: sums `py-spy record --format raw --threads`
samples (from `live_app_bench.py` with `HERMES_BENCH_PYSPY`) by thread, by function (inclusive:
every sample a function is on the stack of) and by innermost function (exclusive).

```sh
.venv/bin/python bench/pyspy_shares.py /tmp/prof-B1-*.txt [--top 40] [--seconds 30]
```

At `--rate 200` (the bench's) 200 samples are one core-second: the shares are printed as % of a
core over `--seconds`. On this VM py-spy's idle detection does not hold (threads blocked in
`select` or `sleep` are sampled too): read the shares within a thread (the loop thread's
`EpollSelector.select` is its idle time) and take each thread's CPU from the bench's
`thread_cpu_pct`.
"""

from __future__ import annotations

import argparse
import re
from collections import Counter
from pathlib import Path


def read(path: Path) -> tuple[Counter[str], dict[str, Counter[str]], dict[str, Counter[str]]]:
    threads: Counter[str] = Counter()
    inclusive: dict[str, Counter[str]] = {}
    exclusive: dict[str, Counter[str]] = {}
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit():
            continue
        n = int(count)
        head, *frames = stack.split(";")
        name = re.sub(r"^thread \(\w+\): ?", "", head) or "?"
        if name.startswith("Thread-") or name.startswith("ThreadPool"):  # workers: by their target
            name = "worker: " + next((f.split(" (")[0] for f in frames if "hermes_tui" in f), name)
        threads[name] += n
        funcs = {re.sub(r":\d+\)$", ")", f) for f in frames}
        inc = inclusive.setdefault(name, Counter())
        for f in funcs:
            inc[f] += n
        if frames:
            exclusive.setdefault(name, Counter())[re.sub(r":\d+\)$", ")", frames[-1])] += n
    return threads, inclusive, exclusive


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+", type=Path)
    ap.add_argument("--rate", type=float, default=200.0)
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--thread", default="MainThread", help="the thread whose functions are listed")
    args = ap.parse_args()
    scale = 100 / (args.rate * args.seconds)
    for path in args.files:
        threads, inclusive, exclusive = read(path)
        print(f"\n== {path.name}: {sum(threads.values()) * scale:.1f} % of a core")
        for name, n in threads.most_common(12):
            print(f"  {n * scale:6.2f} %  {name}")
        print(f"  -- {args.thread}, inclusive")
        for name, n in inclusive.get(args.thread, Counter()).most_common(args.top):
            print(f"  {n * scale:6.2f} %  {name}")
        print(f"  -- {args.thread}, exclusive")
        for name, n in exclusive.get(args.thread, Counter()).most_common(args.top // 2):
            print(f"  {n * scale:6.2f} %  {name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
