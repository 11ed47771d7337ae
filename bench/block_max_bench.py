"""Newest-first bounds after the owner's appends (issue #21): extend by id vs re-read the index.

    .venv/bin/python bench/block_max_bench.py --store /work/bench-data/live/live-base-1000000.db \
        [--append 10000] [--reps 3] [--json bench/results/block-max-1m-<date>.json]

A newest-first search walks matches by id and stops early using per-block timestamp maxima
(`SearchMixin._block_max`). The browser builds them once after first paint; after other writers
append, the next newest-first search extends them. Until 2026-12-04 the extension read the
(session_id, timestamp) index with `id >= start`, which is the whole index (it is ordered by
session): 54.6 s for the first CJK search after 10k appends at 10M on a cold 24 GB file. Now
the new rows are read by id. This measures both on a copy of `--store` (any store: upstream's
or ours; `--in-place` appends to it instead), warm and after dropping the page cache (needs
root; skipped otherwise), and checks that both give the bounds a build from scratch gives.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from hermes_tui.state import SessionDB  # noqa: E402


def drop_caches() -> bool:
    try:
        os.sync()
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
        return True
    except OSError:
        return False


def timed_extension(
    db: SessionDB, before: tuple[int, list[float], list[float]], by_rowid: bool, cold: bool
) -> float:
    db._blockmax_cache = (before[0], list(before[1]), list(before[2]))
    db._BLOCK_EXTEND_BY_ROWID = 16 if by_rowid else 10**15  # never by id: the code before
    if cold and not drop_caches():
        return float("nan")
    t = time.perf_counter()
    db._block_max()
    return (time.perf_counter() - t) * 1000


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store", type=Path, required=True)
    ap.add_argument("--workdir", type=Path, default=None, help="for the copy (default: beside --store)")
    ap.add_argument(
        "--in-place", action="store_true", help="append to --store itself, no copy (a 10M store is 16 GB)"
    )
    ap.add_argument("--append", type=int, default=10_000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    work = args.workdir or args.store.parent
    copy = args.store if args.in_place else work / f"block-max-{os.getpid()}.db"
    if not args.in_place:
        shutil.copyfile(args.store, copy)
    out: dict[str, Any] = {"store": str(args.store), "append": args.append}
    try:
        with SessionDB(copy, migrate=False) as db:
            out["messages"] = db._scalar("SELECT COUNT(*) FROM messages")
            t = time.perf_counter()
            db.prepare_search()
            out["build_from_scratch_ms"] = (time.perf_counter() - t) * 1000
            before = db._blockmax_cache
            assert before is not None
            db.create_session("block-max-bench", "cli")
            rows = [
                {"role": "user", "content": f"appended {i}", "timestamp": 2e9 + i} for i in range(args.append)
            ]
            db.append_messages("block-max-bench", rows)
            runs: dict[str, list[float]] = {}
            for cold in (False, True):
                for by_rowid in (False, True):
                    key = f"{'cold' if cold else 'warm'}|{'by_id' if by_rowid else 'index'}"
                    runs[key] = [timed_extension(db, before, by_rowid, cold) for _ in range(args.reps)]
            db._BLOCK_EXTEND_BY_ROWID = 16
            extended = db._block_max()
            db._blockmax_cache = None
            assert db._block_max() == extended, "the extension differs from a build from scratch"
            out["extension_ms"] = {k: {"median": statistics.median(v), "all": v} for k, v in runs.items()}
    finally:
        for suffix in ("", "-wal", "-shm") if not args.in_place else ():
            Path(f"{copy}{suffix}").unlink(missing_ok=True)
    print(json.dumps(out, indent=1))
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
