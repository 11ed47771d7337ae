"""The usage queries (issue #37) at 1M messages in ~100k sessions, on a file of hermes-agent 0.19.0.

    nice -n 10 python3 bench/legacy_build.py --size wide --out /work/bench-data/usage/wide-legacy.db
    .venv/bin/python bench/usage_bench.py --legacy /work/bench-data/usage/wide-legacy.db \
        --workdir /work/bench-data/usage [--prompt-bytes 12000] [--reps 7] [--writes 3] [--cold] \
        [--drop-caches] [--json bench/results/usage-1m-<date>.json] [--base-tree /work/wt/base [--rounds 3]]

**The store.** `legacy_build.py --size wide` writes the `wide` corpus (1M messages, ~100k sessions
of median 7 messages, 180 days ending 2025-06-01) through hermes-agent 0.19.0's own `SessionDB`
(schema v22, its indexes only, one `session_model_usage` row per session). Its usage rows carry
the build's clock and no cache tokens, so this script prepares a copy once (`<workdir>/
usage-<variant>.db`, reused by later runs) the way the writer would have filled it, with plain
SQL on the copy (no index, no schema change):

- `first_seen`/`last_seen` = the session's first and last assistant message (else its start):
  ~1 in 12 rows then spans a local midnight and is split;
- cache read/write and reasoning tokens on the rows and the sessions alike;
- 5% of sessions switch model (a second row: a third of the tokens, the later half of the span),
  every titled session (~58%) has an auxiliary `title_generation` row (not in the session's
  counters, as the writer does), 1% have counters beyond their rows (a residual), 2% are
  unpriced (`cost_status` 'unknown'), 0.5% have replies but no tokens (no rows, zero counters);
- `--prompt-bytes N`: every session gets an N-byte `system_prompt`, as 0.19.0 stores the whole
  prompt in each session row (10–30 KB in real use). The token columns come after it in the row,
  so a scan of them reads every prompt's overflow pages: the worst case of a real 0.19.0 file.

**What is timed** (`SessionDB(read_only=True)`, as the browser opens a file): the reports the
Usage screen and `hermes-tui sessions usage` ask for (`usage_report` by day/week/month, stacked
by nothing/model/source, over the last 7/30/90 local days and all, as `last_days_start` and an
open end give them; one more from 90×24 hours before now to now, ends that are not local
midnights, as `--since DATE THH:MM` asks), the costliest sessions of 30 and 90 days and of all
(each asked after the reports, as the Usage screen asks them), the accounting
check and a page of its sessions, the budget. "Now" is the corpus' last minute; the zone
Europe/Berlin (the 180 days hold both DST changes). Warm: each case once first (`first_ms`),
then `--reps` rounds of every case in turn, so no question follows itself and whatever a store
keeps between questions serves different ones: p50 and max of the wall time, p50 of the
process' CPU time (steadier on a shared machine). `--writes N`: on a scratch copy of the file
(removed at the end), N times each of three reports and two costliest-sessions questions right
after a commit of another connection (`agent_turn`: a reply appended to the latest session and
its API call through `SessionDB.update_token_counts`, undone exactly after), then the question
after it (no commit between); RSS before and after
the warm rounds (`memory`). `--cold`: each case once more in a fresh interpreter (its first
call; `--drop-caches`, root: the page cache dropped before each, else the file is in the OS
cache).

`--base-tree DIR`: the same warm cases with the code of another checkout (`hermes_tui` imported
from DIR: the commit before a change), side by side: `--rounds` fresh processes each, this tree's
and DIR's alternating (a busy moment of the shared machine hits both), every repetition of a case
pooled per tree; the summaries must match (the change leaves every result as it was).
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
sys.path.insert(0, str(ROOT))

TZ = "Europe/Berlin"
DAY = 86400.0
#: (name, method, kwargs) — `days`: the last N local days as the Usage screen and `--since Nd`
#: ask them (`last_days_start`, to the end of today; None: all); `exact`: from N×24 h before now
#: to now, as `--since DATE THH:MM` asks (ends that are not local midnights). Filled in by `call`.
CASES: list[tuple[str, str, dict[str, Any]]] = [
    ("report day · model · 7d", "usage_report", {"by": "day", "group": "model", "days": 7}),
    ("report day · model · 30d", "usage_report", {"by": "day", "group": "model", "days": 30}),
    ("report day · none · 30d", "usage_report", {"by": "day", "group": None, "days": 30}),
    ("report day · source · 90d", "usage_report", {"by": "day", "group": "source", "days": 90}),
    ("report week · model · 90d", "usage_report", {"by": "week", "group": "model", "days": 90}),
    ("report day · model · all", "usage_report", {"by": "day", "group": "model", "days": None}),
    ("report week · source · all", "usage_report", {"by": "week", "group": "source", "days": None}),
    ("report month · model · all", "usage_report", {"by": "month", "group": "model", "days": None}),
    (
        "report day · model · 90d to the minute",
        "usage_report",
        {"by": "day", "group": "model", "days": 90, "exact": True},
    ),
    ("costliest sessions · 30d", "usage_sessions", {"days": 30, "limit": 10}),
    ("costliest sessions · 90d", "usage_sessions", {"days": 90, "limit": 10}),
    ("costliest sessions · all", "usage_sessions", {"days": None, "limit": 10}),
    ("check · all", "usage_check", {"days": None}),
    ("check · 30d", "usage_check", {"days": 30}),
    (
        "check sessions · unpriced · page",
        "usage_check_sessions",
        {"kind": "unpriced", "days": None, "limit": 50},
    ),
    ("budget · month", "usage_budget", {"budget_usd": 100.0}),
]

PREP = [
    # realistic first_seen / last_seen: the session's first and last assistant message
    """UPDATE session_model_usage SET
         first_seen = COALESCE((SELECT MIN(m.timestamp) FROM messages m
                                WHERE m.session_id = session_model_usage.session_id AND m.role = 'assistant'),
                               (SELECT started_at FROM sessions s
                                WHERE s.id = session_model_usage.session_id)),
         last_seen = COALESCE((SELECT MAX(m.timestamp) FROM messages m
                               WHERE m.session_id = session_model_usage.session_id AND m.role = 'assistant'),
                              (SELECT started_at FROM sessions s
                               WHERE s.id = session_model_usage.session_id))""",
    # cache and reasoning tokens, the same on the session and its (only) row
    """UPDATE sessions SET cache_read_tokens = input_tokens * (rowid % 4) / 2,
                           cache_write_tokens = CASE WHEN rowid % 3 = 0 THEN input_tokens / 10 ELSE 0 END,
                           reasoning_tokens = CASE WHEN rowid % 5 = 0 THEN output_tokens / 3 ELSE 0 END,
                           cost_status = 'estimated', cost_source = 'official_docs_snapshot'""",
    """UPDATE session_model_usage SET
         cache_read_tokens = (SELECT cache_read_tokens FROM sessions s WHERE s.id = session_id),
         cache_write_tokens = (SELECT cache_write_tokens FROM sessions s WHERE s.id = session_id),
         reasoning_tokens = (SELECT reasoning_tokens FROM sessions s WHERE s.id = session_id),
         cost_status = 'estimated', cost_source = 'official_docs_snapshot'""",
    # 5%: a model switch half way (a third of the tokens and cost move to a second row)
    """INSERT INTO session_model_usage (session_id, model, billing_provider, billing_base_url,
           billing_mode, task, api_call_count, input_tokens, output_tokens, cache_read_tokens,
           cache_write_tokens, reasoning_tokens, estimated_cost_usd, actual_cost_usd, cost_status,
           cost_source, first_seen, last_seen)
       SELECT u.session_id, 'openai/gpt-5', 'openai', '', '', '', 1, u.input_tokens / 3,
              u.output_tokens / 3, u.cache_read_tokens / 3, u.cache_write_tokens / 3,
              u.reasoning_tokens / 3, u.estimated_cost_usd / 3, 0, 'estimated', 'official_docs_snapshot',
              (u.first_seen + u.last_seen) / 2, u.last_seen
       FROM session_model_usage u JOIN sessions s ON s.id = u.session_id WHERE s.rowid % 20 = 7""",
    """UPDATE session_model_usage SET input_tokens = input_tokens - input_tokens / 3,
           output_tokens = output_tokens - output_tokens / 3,
           cache_read_tokens = cache_read_tokens - cache_read_tokens / 3,
           cache_write_tokens = cache_write_tokens - cache_write_tokens / 3,
           reasoning_tokens = reasoning_tokens - reasoning_tokens / 3,
           estimated_cost_usd = estimated_cost_usd - estimated_cost_usd / 3,
           last_seen = (first_seen + last_seen) / 2
       WHERE model <> 'openai/gpt-5'
         AND session_id IN (SELECT id FROM sessions WHERE rowid % 20 = 7)""",
    # every titled session (~58%): the auxiliary title_generation call's row, never in the
    # session's counters (`record_auxiliary_usage`)
    """INSERT INTO session_model_usage (session_id, model, billing_provider, task, api_call_count,
           input_tokens, output_tokens, estimated_cost_usd, first_seen, last_seen)
       SELECT id, 'google/gemini-2.5-flash', 'openrouter', 'title_generation', 1, 600, 12, 0.00021,
              started_at + 5, started_at + 5
       FROM sessions WHERE title IS NOT NULL""",
    # 1%: counters beyond the rows (a residual)
    """UPDATE sessions SET input_tokens = input_tokens + 1000, estimated_cost_usd = estimated_cost_usd + 0.01,
           api_call_count = api_call_count + 1 WHERE rowid % 100 = 2""",
    # 2%: unpriced (the writer found no price for the route)
    """UPDATE sessions SET cost_status = 'unknown', estimated_cost_usd = 0 WHERE rowid % 50 = 3""",
    """UPDATE session_model_usage SET cost_status = 'unknown', estimated_cost_usd = 0
       WHERE session_id IN (SELECT id FROM sessions WHERE rowid % 50 = 3)""",
    # 0.5%: replies but no tokens (the accounting gap)
    """DELETE FROM session_model_usage WHERE session_id IN (SELECT id FROM sessions WHERE rowid % 200 = 4)""",
    """UPDATE sessions SET input_tokens = 0, output_tokens = 0, cache_read_tokens = 0, cache_write_tokens = 0,
           reasoning_tokens = 0, estimated_cost_usd = 0, api_call_count = 0, cost_status = NULL
       WHERE rowid % 200 = 4""",
]


def prepare(legacy: Path, workdir: Path, prompt_bytes: int) -> Path:
    """The realistic copy of `legacy` (built once per variant, then reused)."""
    import apsw

    out = workdir / f"usage-p{prompt_bytes}.db"
    if out.exists():
        return out
    tmp = Path(f"{out}.tmp")
    t = time.perf_counter()
    shutil.copyfile(legacy, tmp)
    conn = apsw.Connection(str(tmp))
    conn.execute("PRAGMA journal_mode=DELETE")  # a bench file: one rollback journal, no WAL left behind
    conn.execute("PRAGMA synchronous=OFF")
    conn.execute("PRAGMA cache_size=-512000")
    conn.execute("BEGIN")
    for sql in PREP:
        conn.execute(sql)
    if prompt_bytes:
        conn.execute("UPDATE sessions SET system_prompt = hex(randomblob(?))", (prompt_bytes // 2,))
    conn.execute("COMMIT")
    conn.execute("PRAGMA journal_mode=WAL")  # as 0.19.0 keeps it
    conn.close()
    os.rename(tmp, out)
    print(f"prepared {out} in {time.perf_counter() - t:.0f} s", file=sys.stderr)
    return out


#: Asked right after a commit (another connection's: the agent's next turn on the latest session,
#: `agent_turn`), each time after a new one, and once more (no commit between).
AFTER_WRITE = [
    c
    for c in CASES
    if c[0]
    in (
        "report day · model · 7d",
        "report day · source · 90d",
        "report day · model · all",
        "costliest sessions · 90d",
        "costliest sessions · all",
    )
]


def call(db: Any, method: str, kw: dict[str, Any], now: float) -> Any:
    from hermes_tui.state import last_days_start

    kw = dict(kw)
    days = kw.pop("days", None)
    if method == "usage_budget":
        return db.usage_budget(kw["budget_usd"], tz=TZ, now=now)
    if kw.pop("exact", False):
        since, until = now - days * DAY, now
    else:
        since, until = (None if days is None else last_days_start(days, TZ, now)), None
    if method == "usage_report":
        return db.usage_report(kw["by"], kw["group"], since, until, TZ, now)
    if method == "usage_sessions":
        return db.usage_sessions(since, until, TZ, limit=kw["limit"], now=now)
    if method == "usage_check":
        return db.usage_check(since, until, TZ)
    return db.usage_check_sessions(kw["kind"], since, until, TZ, limit=kw["limit"])


def rss_kib() -> dict[str, int]:
    """This process' resident memory (KiB): anonymous (the heap: Python objects, SQLite's page
    cache) and file-backed (the memory-mapped store, shared with the OS page cache)."""
    out = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("RssAnon", "RssFile", "VmHWM"):
            out[key] = int(value.split()[0])
    return out


def agent_turn(path: Path, now: float) -> Any:
    """A commit by another connection as the agent makes it: a reply appended to the latest
    session and its API call's usage (`update_token_counts`: the session's counters and its
    usage row, the writer's per-call path), at `now`, through `SessionDB` (`migrate=False`: the
    file's own schema), on the bench's scratch copy. Returns what `undo_turn` needs."""
    import apsw

    import hermes_tui.state.sessions as sessions_module
    from hermes_tui.state import SessionDB

    conn = apsw.Connection(str(path))
    sid = conn.execute("SELECT id FROM sessions ORDER BY started_at DESC LIMIT 1").fetchall()[0][0]
    s_row = conn.execute("SELECT * FROM sessions WHERE id = ?", (sid,)).fetchall()[0]
    u_rows = conn.execute("SELECT rowid, * FROM session_model_usage WHERE session_id = ?", (sid,)).fetchall()
    conn.close()

    class Clock:
        def __getattr__(self, name: str) -> Any:
            return getattr(time, name)

        def time(self) -> float:
            return now

    patch = hasattr(sessions_module, "time")  # (later trees stamp with `SessionDB.clock` instead)
    real = getattr(sessions_module, "time", None)
    if patch:
        sessions_module.time = Clock()  # type: ignore[assignment]
    try:
        with SessionDB(path, migrate=False) as w:
            w.clock = lambda: now  # type: ignore[attr-defined,method-assign]
            mid = w.append_message(sid, "assistant", "done", timestamp=now)
            w.update_token_counts(
                sid,
                input_tokens=1000,
                output_tokens=100,
                estimated_cost_usd=0.01,
                api_call_count=1,
                model="anthropic/claude-sonnet-4",
                billing_provider="openrouter",
                cost_status="estimated",
            )
    finally:
        if patch:
            sessions_module.time = real
    return sid, s_row, u_rows, mid


def undo_turn(path: Path, turn: Any) -> None:
    """Undo `agent_turn` exactly (the session's row and usage rows as they were, the reply
    gone): another commit, so every tree's results stay the same run after run."""
    import apsw

    sid, s_row, u_rows, mid = turn
    conn = apsw.Connection(str(path))
    s_cols = [r[1] for r in conn.execute("PRAGMA table_info(sessions)")]
    u_cols = ["rowid"] + [r[1] for r in conn.execute("PRAGMA table_info(session_model_usage)")]
    conn.execute("BEGIN")
    conn.execute("DELETE FROM messages WHERE id = ?", (mid,))
    conn.execute(f"UPDATE sessions SET {', '.join(f'{c} = ?' for c in s_cols)} WHERE id = ?", (*s_row, sid))
    conn.execute("DELETE FROM session_model_usage WHERE session_id = ?", (sid,))
    for row in u_rows:
        conn.execute(
            f"INSERT INTO session_model_usage ({', '.join(u_cols)}) VALUES ({', '.join('?' * len(u_cols))})",
            row,
        )
    conn.execute("COMMIT")
    conn.close()


def summary(result: Any) -> str:
    """What a case found, so runs can be compared (not timed)."""
    if hasattr(result, "total"):
        return f"{len(result.periods)} periods, {len(result.groups)} groups, ${result.total.cost_usd:,.2f}"
    if hasattr(result, "counts"):
        return json.dumps(result.counts)
    if hasattr(result, "pace_usd"):
        return f"spent ${result.spent.cost_usd:,.2f}, pace ${result.pace_usd:,.2f}"
    return f"{len(result)} rows"


def now_of(db: Any) -> float:
    """The corpus' last minute: the latest usage of the file."""
    bounds = db.usage_bounds()
    return float(bounds[1]) if bounds else time.time()


def warm(
    path: Path, reps: int, quiet: bool = False, scratch: Path | None = None, writes: int = 0
) -> dict[str, Any]:
    """Each case once (`first_ms`), then `reps` rounds of every case in turn: no question is
    asked twice in a row, so whatever is kept between questions is used by different ones.
    `scratch` (a copy of the store): then `writes` times each `AFTER_WRITE` case right after a
    commit of another connection (`agent_turn`)."""
    from hermes_tui.state import SessionDB

    rows: list[dict[str, Any]] = []
    after: list[dict[str, Any]] = []
    mem: dict[str, Any] = {}
    with SessionDB(path, read_only=True) as db:
        now = now_of(db)
        mem["before"] = rss_kib()
        for name, method, kw in CASES:
            t = time.perf_counter()
            result = call(db, method, kw, now)
            first_ms = (time.perf_counter() - t) * 1000
            rows.append(
                {"case": name, "times": [], "cpu": [], "first_ms": first_ms, "result": summary(result)}
            )
        for _ in range(reps):
            for row, (_name, method, kw) in zip(rows, CASES, strict=True):
                t, c = time.perf_counter(), time.process_time()
                result = call(db, method, kw, now)
                row["times"].append((time.perf_counter() - t) * 1000)
                row["cpu"].append((time.process_time() - c) * 1000)
                assert summary(result) == row["result"], row["case"]
        mem["after"] = rss_kib()
        roll = getattr(db, "_usage_rollup", None)
        if roll is not None:
            mem["rollup_session_ids"] = roll.size()
            mem["rollup_days"] = len(roll.days)
    if scratch is not None and writes:
        with SessionDB(scratch, read_only=True) as db:
            now = now_of(db)
            for _name, method, kw in CASES:
                call(db, method, kw, now)  # as warm as above
            for name, method, kw in AFTER_WRITE:
                right = {"case": f"{name} · right after a commit", "times": [], "cpu": []}
                next_ = {"case": f"{name} · the question after that", "times": [], "cpu": []}
                for _n in range(writes):
                    turn = agent_turn(scratch, now)
                    for row in (right, next_):
                        t, c = time.perf_counter(), time.process_time()
                        result = call(db, method, kw, now)
                        row["times"].append((time.perf_counter() - t) * 1000)
                        row["cpu"].append((time.process_time() - c) * 1000)
                        row["result"] = summary(result)
                    undo_turn(scratch, turn)
                    call(db, method, kw, now)  # (the undo is a commit too: not timed)
                    call(db, method, kw, now)
                after += [right, next_]
    for row in rows + after:
        row.update(
            p50_ms=statistics.median(row["times"]),
            cpu_p50_ms=statistics.median(row["cpu"]),
            max_ms=max(row["times"]),
            reps=len(row["times"]),
        )
        if not quiet:
            print(
                f"{row['case']:52} p50 {row['p50_ms']:7.1f} ms  cpu {row['cpu_p50_ms']:7.1f}  "
                f"max {row['max_ms']:7.1f}  first {row.get('first_ms', 0):7.1f}  {row['result']}"
            )
    return {"cases": rows + after, "memory": mem}


def rollup_memory(path: Path) -> dict[str, Any]:
    """What the day rollup holds (`tracemalloc`: Python's allocations, not SQLite's page cache)
    once built by a report of the whole history, and its peak while being built; then once the
    costliest sessions of the whole history have read every day's sessions and costs
    (`sessions_*`: the rollup's share of the costliest sessions, where the tree has one)."""
    import tracemalloc

    from hermes_tui.state import SessionDB

    with SessionDB(path, read_only=True) as db:
        now = now_of(db)
        call(db, "usage_report", {"by": "day", "group": None, "days": 7}, now)  # the connection, warm
        tracemalloc.start()
        call(db, "usage_report", {"by": "day", "group": "model", "days": None}, now)
        held, peak = tracemalloc.get_traced_memory()
        roll = db._usage_rollup
        out = {
            "held_mb": held / 1e6,
            "peak_mb": peak / 1e6,
            "session_ids": roll.size(),
            "days": len(roll.days),
            "cells": sum(len(d) for d in roll.days),
        }
        tracemalloc.reset_peak()
        call(db, "usage_sessions", {"days": None, "limit": 10}, now)
        held2, peak2 = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        days = getattr(roll, "sessions", {})
        out |= {
            "sessions_held_mb": held2 / 1e6,
            "sessions_peak_mb": peak2 / 1e6,
            "sessions_session_ids": roll.size(),
            "day_session_entries": sum(len(d.sids) + len(d.edge) for d in days.values()),
        }
        return out


def git_head(tree: Path) -> str:
    proc = subprocess.run(
        ["git", "-C", str(tree), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    )
    return proc.stdout.strip() or "?"


def warm_in(tree: Path, path: Path, reps: int, scratch: Path | None, writes: int) -> dict[str, Any]:
    """`warm` in a fresh interpreter importing `hermes_tui` from `tree`."""
    more = ["--scratch", str(scratch), "--writes", str(writes)] if scratch is not None else []
    proc = subprocess.run(
        [sys.executable, __file__, "--warm-child", str(path), str(reps), "--tree", str(tree), *more],
        capture_output=True,
        text=True,
        check=True,
    )
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def side_by_side(
    path: Path, base: Path, reps: int, rounds: int, scratch: Path | None, writes: int
) -> dict[str, Any]:
    """This tree and `base`, `rounds` processes each, alternating; each case's repetitions pooled."""
    runs: dict[str, list[list[dict[str, Any]]]] = {"new": [], "base": []}
    memory: dict[str, list[Any]] = {"new": [], "base": []}
    for _ in range(rounds):
        for name, tree in (("base", base), ("new", ROOT)):
            found = warm_in(tree, path, reps, scratch, writes)
            runs[name].append(found["cases"])
            memory[name].append(found["memory"])
    out: dict[str, Any] = {
        "base_tree": str(base),
        "base_commit": git_head(base),
        "new_commit": git_head(ROOT),
        "memory": memory,
    }
    for name, found in runs.items():
        cases = []
        for i in range(len(found[0])):
            case = found[0][i]["case"]
            rows = [r[i] for r in found]
            cases.append(
                {
                    "case": case,
                    "p50_ms": statistics.median(t for r in rows for t in r["times"]),
                    "cpu_p50_ms": statistics.median(t for r in rows for t in r["cpu"]),
                    "reps": sum(len(r["times"]) for r in rows),
                    "result": rows[0]["result"],
                }
            )
        out[name] = cases
    print(f"{'case':52} {'base cpu':>9} {'new cpu':>8} {'ratio':>6} {'base wall':>10} {'new wall':>9}")
    for b, n in zip(out["base"], out["new"], strict=True):
        same = "" if b["result"] == n["result"] else f"  RESULTS DIFFER: {b['result']} / {n['result']}"
        print(
            f"{n['case']:52} {b['cpu_p50_ms']:9.0f} {n['cpu_p50_ms']:8.0f} "
            f"{b['cpu_p50_ms'] / n['cpu_p50_ms']:6.2f} {b['p50_ms']:10.0f} {n['p50_ms']:9.0f}{same}"
        )
    return out


def child(path: Path, index: int) -> None:
    """One case's first call in this fresh interpreter (`--cold`)."""
    t0 = time.perf_counter()
    from hermes_tui.state import SessionDB

    imported = time.perf_counter()
    db = SessionDB(path, read_only=True)
    opened = time.perf_counter()
    now = now_of(db)
    bounded = time.perf_counter()
    name, method, kw = CASES[index]
    call(db, method, kw, now)
    done = time.perf_counter()
    db.close()
    print(
        json.dumps(
            {
                "case": name,
                "import_ms": (imported - t0) * 1000,
                "open_ms": (opened - imported) * 1000,
                "bounds_ms": (bounded - opened) * 1000,
                "call_ms": (done - bounded) * 1000,
            }
        )
    )


def cold(path: Path, drop: bool) -> list[dict[str, Any]]:
    out = []
    for i in range(len(CASES)):
        if drop:
            os.sync()
            Path("/proc/sys/vm/drop_caches").write_text("1\n")
        proc = subprocess.run(
            [sys.executable, __file__, "--child", str(path), str(i)],
            capture_output=True,
            text=True,
            check=True,
        )
        row = json.loads(proc.stdout.strip().splitlines()[-1])
        out.append(row)
        print(
            f"cold {row['case']:33} call {row['call_ms']:7.1f} ms  "
            f"(bounds {row['bounds_ms']:.1f}, open {row['open_ms']:.1f})"
        )
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--legacy", type=Path, help="a legacy_build.py --size wide store")
    ap.add_argument("--workdir", type=Path, default=Path("/work/bench-data/usage"))
    ap.add_argument("--prompt-bytes", type=int, default=0)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--cold", action="store_true")
    ap.add_argument(
        "--drop-caches", action="store_true", help="root: drop the page cache before each cold case"
    )
    ap.add_argument("--json", type=Path)
    ap.add_argument("--base-tree", type=Path, help="another checkout: the same warm cases with its code")
    ap.add_argument("--rounds", type=int, default=3, help="--base-tree: processes per tree")
    ap.add_argument(
        "--writes", type=int, default=0, help="time each AFTER_WRITE case this often right after a commit"
    )
    ap.add_argument("--scratch", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--rollup-memory", action="store_true", help="only: the day rollup's memory (this tree)")
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    ap.add_argument("--warm-child", nargs=2, help=argparse.SUPPRESS)
    ap.add_argument("--tree", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.tree is not None:
        sys.path.insert(0, str(args.tree))
    if args.warm_child:
        found = warm(
            Path(args.warm_child[0]),
            int(args.warm_child[1]),
            quiet=True,
            scratch=args.scratch,
            writes=args.writes,
        )
        print(json.dumps(found))
        return 0
    if args.child:
        child(Path(args.child[0]), int(args.child[1]))
        return 0
    if args.legacy is None:
        ap.error("--legacy is required")
    path = prepare(args.legacy, args.workdir, args.prompt_bytes)
    res: dict[str, Any] = {
        "store": str(path),
        "prompt_bytes": args.prompt_bytes,
        "file_mb": path.stat().st_size / 1e6,
        "tz": TZ,
    }
    if args.rollup_memory:
        res["rollup_memory"] = rollup_memory(path)
        print(json.dumps(res["rollup_memory"]))
        if args.json:
            args.json.write_text(json.dumps(res, indent=1))
        return 0
    scratch = None
    if args.writes:  # the writes go to a copy (the prepared file stays as it is), removed at the end
        scratch = args.workdir / f"{path.stem}-scratch.db"
        shutil.copyfile(path, scratch)
    try:
        if args.base_tree is not None:
            res["side_by_side"] = side_by_side(
                path, args.base_tree, args.reps, args.rounds, scratch, args.writes
            )
        else:
            res["warm"] = warm(path, args.reps, scratch=scratch, writes=args.writes)
    finally:
        if scratch is not None:
            for suffix in ("", "-wal", "-shm"):
                Path(f"{scratch}{suffix}").unlink(missing_ok=True)
    if args.cold:
        res["cold"] = cold(path, args.drop_caches)
        res["drop_caches"] = args.drop_caches
    if args.json:
        args.json.write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
