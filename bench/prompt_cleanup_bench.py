"""The `system_prompts` cleanup of a batched delete: a sweep of the whole table in every batch
against only the prompts each batch's sessions held (the first batch that deletes still sweeps,
as the v31 writer's `_delete_unreferenced_system_prompts` does).

    .venv/bin/python bench/prompt_cleanup_bench.py [--sessions 20000] [--every 10] [--repeat 2]

A store of today's Hermes keeps each system prompt once, by hash; a store whose prompts differ per
session (dates, memory) has as many prompts as sessions. The file is our v23 store with the v31
table and columns added (`system_prompts`, `sessions.system_prompt_hash`, `tool_names`, their
indexes), `--sessions` sessions each with its own 2 KB prompt; every `--every`-th session is
deleted with `delete_sessions_batched` (40 batches at the defaults). Both variants run on copies
of one file, interleaved, in one process.
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import apsw

from hermes_tui.state import SessionDB
from hermes_tui.state import housekeeping as H


def build(path: Path, n: int) -> None:
    with SessionDB(path):
        pass
    c = apsw.Connection(str(path))
    c.execute("CREATE TABLE system_prompts (hash TEXT PRIMARY KEY, prompt TEXT NOT NULL)")
    c.execute("ALTER TABLE sessions ADD COLUMN system_prompt_hash TEXT REFERENCES system_prompts(hash)")
    c.execute("ALTER TABLE sessions ADD COLUMN tool_names TEXT")
    c.execute("CREATE INDEX idx_sp ON sessions(system_prompt_hash)")
    c.execute("CREATE INDEX idx_tn ON sessions(tool_names)")
    c.execute("BEGIN")
    for i in range(n):
        h = hashlib.sha256(str(i).encode()).hexdigest()
        c.execute("INSERT INTO system_prompts VALUES (?, ?)", (h, f"prompt {i} " + "x" * 2000))
        c.execute(
            "INSERT INTO sessions (id, source, started_at, ended_at, system_prompt_hash) "
            "VALUES (?, 'cli', ?, ?, ?)",
            (f"s{i:06d}", 1e9 + i, 1e9 + i + 1, h),
        )
    c.execute("COMMIT")
    c.close()


def run(base: Path, work: Path, label: str, n: int, every: int, sweep_each: bool) -> dict[str, Any]:
    path = work / f"{label}.db"
    shutil.copy(base, path)
    orig = H.HousekeepingMixin._delete_ids_in

    def sweeping(self, conn, ids, guard="", guard_params=(), *, sweep=True):  # type: ignore[no-untyped-def]
        return orig(self, conn, ids, guard, guard_params, sweep=True)

    if sweep_each:
        H.HousekeepingMixin._delete_ids_in = sweeping  # type: ignore[method-assign]
    try:
        with SessionDB(path, migrate=False) as db:
            t = time.perf_counter()
            r = db.delete_sessions_batched([f"s{i:06d}" for i in range(0, n, every)], cascade_delegates=False)
            total = time.perf_counter() - t
            left = db._scalar("SELECT COUNT(*) FROM system_prompts")
    finally:
        H.HousekeepingMixin._delete_ids_in = orig  # type: ignore[method-assign]
    return {
        "label": label,
        "deleted": r["deleted"],
        "batches": r["batches"],
        "total_s": total,
        "longest_batch_ms": r["longest_batch_s"] * 1000,
        "prompts_left": left,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", type=int, default=20000)
    ap.add_argument("--every", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=2)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="prompt-bench-") as tmp:
        work = Path(tmp)
        base = work / "base.db"
        build(base, a.sessions)
        for r in range(a.repeat):
            for label, sweep in (("sweep_each_batch", True), ("batch_prompts", False)):
                out = run(base, work, f"{label}-{r}", a.sessions, a.every, sweep)
                print(
                    f"{label:>17}: {out['deleted']} sessions in {out['batches']} batches, total "
                    f"{out['total_s']:.2f} s, longest batch {out['longest_batch_ms']:.1f} ms, "
                    f"prompts left {out['prompts_left']}"
                )


if __name__ == "__main__":
    main()
