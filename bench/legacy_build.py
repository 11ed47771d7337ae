"""A legacy (hermes-agent 0.19.0-written, schema v22) store of the bench corpus, fast (issue #21).

    nice -n 10 python3 bench/legacy_build.py --size huge --out /work/bench-data/legacy/huge-legacy.db \
        [--deadline 07:10] [--stop-at N] [--batch 20000] [--json bench/results/legacy-build-….json]

Upstream's own API writes one message per transaction and rewrites its whole FTS index every
1,000 writes: 1M messages took 10.4 min and 10M would take 3–12 h (bench/README.md). This builds
the same kind of file much faster, as `bench/live_bench.py`'s `build_store` does: hermes-agent
0.19.0's `SessionDB` creates the file (schema v22, its legacy inline FTS tables and their
triggers), then the corpus rows go in through 0.19.0's own stdlib `sqlite3` connection in
batched transactions, so its triggers index every message, and the per-model usage rows are
written by 0.19.0's own `_record_model_usage`. Rows are what its API would write for the same
corpus (`bench/worker.py`'s upstream build: `create_session`, `append_message`,
`update_token_counts`, `set_session_title`, `end_session`, corpus timestamps), except that
`session_model_usage.first_seen/last_seen` and nothing else carry the build's clock.

The corpus is `bench/corpus.py`'s `iter_sessions(--size)` (seed 1337; `huge` = the 10M corpus of
`run.py --size huge`, ~15% CJK). `--stop-at N` or `--deadline HH:MM` (UTC) stop at a session
boundary: the file then holds the first N messages of that corpus (a complete, consistent
store, smaller). The file is built as `<out>.tmp` and renamed when done. No FTS optimize is run
at the end (`--optimize` runs 0.19.0's own `optimize_fts()`); 0.19.0 runs one on its 1,000th write.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

# Runs under the peer's interpreter (hermes_state 0.19.0 and its stdlib sqlite3).
INNER = r"""
import json, os, sys, time
from pathlib import Path
args = json.loads(sys.argv[1])
sys.path.insert(0, args["bench"])
import corpus
from hermes_state import SessionDB

db = SessionDB(db_path=Path(args["db"]))  # schema v22, legacy FTS tables + triggers, WAL
conn = db._conn  # 0.19.0's own stdlib connection (row_factory sqlite3.Row)
conn.execute("PRAGMA synchronous=OFF")  # a bench file, rebuilt if the machine dies
conn.execute("PRAGMA cache_size=%d" % (-1024 * args["cache_mb"]))
conn.execute("PRAGMA foreign_keys=OFF")  # parents come first anyway; as the API, no FK checks needed
size = args["size"]
size = int(size) if size.isdigit() else size
stop_at = args.get("stop_at") or 0
deadline = args.get("deadline") or 0.0
MSG_SQL = (
    "INSERT INTO messages (session_id, role, content, tool_call_id, tool_calls, tool_name,"
    " effect_disposition, timestamp, token_count, finish_reason, reasoning, reasoning_content,"
    " reasoning_details, codex_reasoning_items, codex_message_items, platform_message_id,"
    " observed, active, api_content) VALUES (?, ?, ?, ?, ?, ?, NULL, ?, ?, ?, NULL, NULL, NULL,"
    " NULL, NULL, NULL, 0, 1, NULL)"
)
SES_SQL = (
    "INSERT INTO sessions (id, source, model, model_config, parent_session_id, started_at,"
    " ended_at, end_reason, title, message_count, tool_call_count, input_tokens, output_tokens,"
    " estimated_cost_usd, api_call_count) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1)"
)
n_msgs = n_sessions = 0
pending = 0
marks = []
stopped = None
t0 = time.perf_counter()
conn.execute("BEGIN IMMEDIATE")
for s in corpus.iter_sessions(size):
    if stop_at and n_msgs + len(s["messages"]) > stop_at:
        stopped = "stop_at"
        break
    if deadline and time.time() > deadline:
        stopped = "deadline"
        break
    rows = []
    tool_calls_n = 0
    for m in s["messages"]:
        tc = m.get("tool_calls")
        tool_calls_n += len(tc) if tc else 0
        rows.append((s["id"], m["role"], m["content"], m.get("tool_call_id"),
                     json.dumps(tc) if tc else None, m.get("tool_name"), m["timestamp"],
                     m.get("token_count"), m.get("finish_reason")))
    conn.execute(SES_SQL, (
        s["id"], s["source"], s["model"],
        json.dumps(s["model_config"]) if s["model_config"] else None,
        s["parent_session_id"], s["started_at"], s["ended_at"],
        s["end_reason"] if s["ended_at"] is not None else None, s["title"], len(rows),
        tool_calls_n, s["input_tokens"], s["output_tokens"], s["estimated_cost_usd"]))
    conn.executemany(MSG_SQL, rows)
    db._record_model_usage(
        conn, s["id"], model=s["model"], billing_provider=None, billing_base_url=None,
        billing_mode=None, input_tokens=s["input_tokens"], output_tokens=s["output_tokens"],
        cache_read_tokens=0, cache_write_tokens=0, reasoning_tokens=0,
        estimated_cost_usd=s["estimated_cost_usd"], actual_cost_usd=None, cost_status=None,
        cost_source=None, api_call_count=1)
    before = n_msgs
    n_msgs += len(rows)
    n_sessions += 1
    pending += len(rows)
    if pending >= args["batch"]:
        conn.execute("COMMIT")
        conn.execute("BEGIN IMMEDIATE")
        pending = 0
    marks.append((n_msgs, time.perf_counter() - t0))
    if n_msgs // 250_000 != before // 250_000:
        el = time.perf_counter() - t0
        sys.stderr.write(f"legacy build {n_msgs:,} msgs {el:,.0f}s ({n_msgs / el:,.0f} msg/s)\n")
        sys.stderr.flush()
conn.execute("COMMIT")
insert_s = time.perf_counter() - t0
optimize_s = None
if args.get("optimize"):
    t = time.perf_counter()
    db.optimize_fts()
    optimize_s = time.perf_counter() - t
db.close()  # 0.19.0's close: checkpoint(TRUNCATE)
wall = time.perf_counter() - t0
out = {"messages": n_msgs, "sessions": n_sessions, "insert_s": insert_s, "optimize_s": optimize_s,
       "wall_s": wall, "msgs_per_s": n_msgs / insert_s if insert_s else None, "stopped": stopped}
if len(marks) >= 10:
    k = max(1, len(marks) // 10)
    out["first10_msgs_per_s"] = marks[k - 1][0] / marks[k - 1][1]
    (a_n, a_t), (b_n, b_t) = marks[-k - 1], marks[-1]
    out["last10_msgs_per_s"] = (b_n - a_n) / (b_t - a_t) if b_t > a_t else None
print(json.dumps(out))
"""


def peer_python() -> Path:
    """hermes-agent 0.19.0's interpreter (built and cached by the test oracle)."""
    sys.path.insert(0, str(ROOT / "tests"))
    from peer.oracle import peer_python as find  # noqa: PLC0415 - tests/ is not an installed package

    return find()


def deadline_ts(hhmm: str) -> float:
    """Today's HH:MM UTC as a Unix time (tomorrow's if already past)."""
    now = dt.datetime.now(dt.UTC)
    h, m = (int(x) for x in hhmm.split(":"))
    at = now.replace(hour=h, minute=m, second=0, microsecond=0)
    if at <= now:
        at += dt.timedelta(days=1)
    return at.timestamp()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", default="large", help="corpus size: large, huge, … or a message count")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--stop-at", type=int, default=0, help="stop after this many messages (0: all)")
    ap.add_argument("--deadline", default="", help="HH:MM UTC: stop at the next session boundary after it")
    ap.add_argument("--batch", type=int, default=20_000, help="messages per transaction")
    ap.add_argument("--cache-mb", type=int, default=1024)
    ap.add_argument("--optimize", action="store_true", help="run 0.19.0's optimize_fts() at the end")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()

    out_path = args.out.resolve()
    out_path.parent.mkdir(parents=True, exist_ok=True)
    if out_path.exists():
        ap.error(f"{out_path} exists")
    tmp = Path(f"{out_path}.tmp")
    for suffix in ("", "-wal", "-shm"):
        Path(f"{tmp}{suffix}").unlink(missing_ok=True)
    inner = {
        "db": str(tmp),
        "bench": str(HERE),
        "size": str(args.size),
        "stop_at": args.stop_at,
        "deadline": deadline_ts(args.deadline) if args.deadline else 0.0,
        "batch": args.batch,
        "cache_mb": args.cache_mb,
        "optimize": args.optimize,
    }
    home = out_path.parent / ".legacy-build-home"  # 0.19.0 reads $HERMES_HOME; never the user's
    home.mkdir(exist_ok=True)
    started = dt.datetime.now(dt.UTC)
    proc = subprocess.run(
        [str(peer_python()), "-c", INNER, json.dumps(inner)],
        stdout=subprocess.PIPE,
        text=True,
        env=dict(os.environ, HERMES_HOME=str(home)),
        check=False,
    )
    if proc.returncode != 0:
        print(f"legacy build failed ({proc.returncode})", file=sys.stderr)
        return 1
    res: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    wal = Path(f"{tmp}-wal")
    if wal.exists() and wal.stat().st_size:
        print(f"{wal} not checkpointed: left as is", file=sys.stderr)
        return 1
    for suffix in ("-wal", "-shm"):
        Path(f"{tmp}{suffix}").unlink(missing_ok=True)  # empty after 0.19.0's close (TRUNCATE)
    os.rename(tmp, out_path)
    size = out_path.stat().st_size
    res.update(
        {
            "out": str(out_path),
            "size": args.size,
            "started": started.isoformat(timespec="seconds"),
            "file_mb": size / 1e6,
            "mb_per_100k": size / 1e6 / max(1, res["messages"]) * 100_000,
            "argv": sys.argv[1:],
        }
    )
    print(json.dumps(res, indent=1))
    if args.json:
        args.json.write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
