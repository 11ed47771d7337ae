"""Live-follow bench: does a follower slow down a real hermes-agent 0.19.0 writer?

```sh
.venv/bin/python bench/live_bench.py                       # 100k-message store, 30 s phases
.venv/bin/python bench/live_bench.py --messages 1000000 --phase-s 600   # the issue's 1M / 10 min
```

Flags: `--messages N` (store size, default 100,000; built once through the peer's own sqlite3 in
one transaction and cached under `--workdir`, with the writer's session and `WRITER_SESSIONS`
more for bench/live_app_bench.py's multi-writer phases), `--phase-s S` (length of each writer
phase, default 30), `--rate R` (writer messages/s, default 20), `--hz H` (follower polls/s, default 4),
`--idle-s S` (follower CPU measured with the store quiet, default 10), `--workdir`, `--json PATH`.

Phases, on fresh copies of the same store: (A) the writer alone — a thread in the peer process
(`tests/peer/oracle.py` `Peer.run_appender`) appending to one session at `--rate`; (B) the same
writer with a follower process (our store, `read_only=True`, `ChangeWatcher` at `--hz`) following
that session: it fetches each new message (as `sessions tail` does) and records commit → seen
(seen wall clock minus the message's `timestamp`, which upstream stamps just before its commit).
Then the writer stops and the follower's CPU is measured over `--idle-s` of a quiet store.
Reported: writer p50/p99/max append latency with/without and the ratios, errors, commit → seen
p50/p95/max, the follower's idle CPU (% of one core), and the `-wal` file's size (max sampled
every 0.5 s and at the end of each phase, before the writer closes and truncates it).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from measure import pct  # noqa: E402

from tests.peer.oracle import Peer, peer_python  # noqa: E402

SESSION = "bench-live-writer"
WRITER_SESSIONS = 8

FILL = r"""
import sqlite3, time, random
rnd = random.Random(1337)
n = int(N)
conn = sqlite3.connect(db_path, isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
per = 50
base = time.time() - 90 * 86400
words = "deploy docker kubernetes python error fix config test build release cache query index".split()
for s in range(n // per):
    sid = "fill-%06d" % s
    t0 = base + s * (90 * 86400 / (n // per))
    conn.execute("INSERT INTO sessions (id, source, started_at, ended_at, end_reason, message_count)"
                 " VALUES (?, 'cli', ?, ?, 'user_exit', ?)", (sid, t0, t0 + per * 10, per))
    conn.executemany(
        "INSERT INTO messages (session_id, role, content, timestamp) VALUES (?, ?, ?, ?)",
        [(sid, "user" if i % 2 == 0 else "assistant",
          " ".join(rnd.choice(words) for _ in range(40)), t0 + i * 10) for i in range(per)])
conn.execute("COMMIT")
conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
conn.close()
result = n // per
"""

FOLLOWER = r"""
import json, sys, time, threading
from hermes_tui.state import SessionDB
path, sid, hz = sys.argv[1], sys.argv[2], float(sys.argv[3])
db = SessionDB(path, read_only=True)
watcher = db.change_watcher([sid])
lat, polls, state = [], [0], {"idle": None}
def commands():
    for line in sys.stdin:
        state[line.strip()] = (time.process_time(), time.monotonic(), polls[0])
threading.Thread(target=commands, daemon=True).start()
last = watcher.cursor.message_hw
print("ready", flush=True)
while "stop" not in state:
    ch = watcher.poll()
    polls[0] += 1
    if sid in ch.messages:
        for m in db.get_messages_page(sid, after_id=last, limit=500):
            lat.append(time.time() - m["timestamp"])
            last = m["id"]
    time.sleep(1 / hz)
idle, stop = state.get("idle"), state["stop"]
out = {"latencies": lat, "polls": polls[0]}
if idle:
    out["idle_cpu_s"] = stop[0] - idle[0]
    out["idle_wall_s"] = stop[1] - idle[1]
    out["idle_polls"] = stop[2] - idle[2]
print(json.dumps(out), flush=True)
db.close()
"""


def build_store(workdir: Path, messages: int) -> Path:
    """The base store (upstream's schema and FTS, filled in one transaction), cached."""
    path = workdir / f"live-base-{messages}.db"
    if path.exists():
        return path
    tmp = workdir / f"live-base-{messages}.tmp.db"
    for p in (tmp, Path(f"{tmp}-wal"), Path(f"{tmp}-shm")):
        p.unlink(missing_ok=True)
    t0 = time.monotonic()
    with Peer(tmp) as peer:
        peer.call("create_session", SESSION, "cli")
        for i in range(WRITER_SESSIONS):  # one per writer process of the multi-writer phase
            peer.call("create_session", f"{SESSION}-{i}", "cli")
        peer.exec(FILL.replace("int(N)", str(messages)))
    os.rename(tmp, path)
    print(f"built {path} ({messages:,} messages) in {time.monotonic() - t0:.0f}s", file=sys.stderr)
    return path


def wal_size(db: Path) -> int:
    try:
        return os.path.getsize(f"{db}-wal")
    except OSError:
        return 0


def phase(base: Path, workdir: Path, args: argparse.Namespace, follow: bool) -> dict[str, Any]:
    db = workdir / ("phase-follow.db" if follow else "phase-alone.db")
    for p in (db, Path(f"{db}-wal"), Path(f"{db}-shm")):
        p.unlink(missing_ok=True)
    shutil.copyfile(base, db)
    n = int(args.phase_s * args.rate * 2) + 10  # more than the phase needs: stopped, not finished, at its end
    with Peer(db) as peer:
        follower = None
        if follow:
            follower = subprocess.Popen(
                [sys.executable, "-c", FOLLOWER, str(db), SESSION, str(args.hz)],
                cwd=ROOT,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
            assert follower.stdout is not None and follower.stdin is not None
            assert follower.stdout.readline().strip() == "ready"
        # the appender's own interval is the pause after each append: aim at `rate` appends/s
        peer.run_appender(SESSION, n, interval_s=max(0.0, 1 / args.rate - 0.002))
        t_end = time.monotonic() + args.phase_s
        wal_max = 0
        while time.monotonic() < t_end:
            wal_max = max(wal_max, wal_size(db))
            time.sleep(0.5)
        wal_end = wal_size(db)
        result = peer.stop_appender(wait=False)
        out: dict[str, Any] = {
            "appended": len(result["appended"]),
            "errors": len(result["errors"]),
            "error_samples": result["errors"][:3],
            "p50_ms": pct(result["latencies"], 50) * 1e3,
            "p99_ms": pct(result["latencies"], 99) * 1e3,
            "max_ms": max(result["latencies"]) * 1e3,
            "wal_max_bytes": max(wal_max, wal_end),
            "wal_end_bytes": wal_end,
        }
        if follower is not None:
            assert follower.stdin is not None and follower.stdout is not None
            time.sleep(1.0)  # let it see the last commits
            follower.stdin.write("idle\n")
            follower.stdin.flush()
            time.sleep(args.idle_s)
            follower.stdin.write("stop\n")
            follower.stdin.flush()
            res = json.loads(follower.stdout.readline())
            follower.wait(timeout=30)
            lat = res["latencies"]
            out.update(
                {
                    "seen": len(lat),
                    "seen_p50_ms": pct(lat, 50) * 1e3,
                    "seen_p95_ms": pct(lat, 95) * 1e3,
                    "seen_max_ms": max(lat) * 1e3 if lat else float("nan"),
                    "polls": res["polls"],
                    "idle_cpu_pct": 100 * res["idle_cpu_s"] / res["idle_wall_s"],
                    "idle_polls": res["idle_polls"],
                }
            )
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--messages", type=int, default=100_000)
    ap.add_argument("--phase-s", type=float, default=30.0)
    ap.add_argument("--rate", type=float, default=20.0)
    ap.add_argument("--hz", type=float, default=4.0)
    ap.add_argument("--idle-s", type=float, default=10.0)
    ap.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "hermes-tui-bench")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    peer_python()
    base = build_store(args.workdir, args.messages)
    alone = phase(base, args.workdir, args, follow=False)
    follow = phase(base, args.workdir, args, follow=True)
    rows = [
        ("writer appends", alone["appended"], follow["appended"]),
        ("writer errors", alone["errors"], follow["errors"]),
        ("writer p50 ms", alone["p50_ms"], follow["p50_ms"]),
        ("writer p99 ms", alone["p99_ms"], follow["p99_ms"]),
        ("writer max ms", alone["max_ms"], follow["max_ms"]),
        ("-wal max bytes", alone["wal_max_bytes"], follow["wal_max_bytes"]),
        ("-wal end bytes", alone["wal_end_bytes"], follow["wal_end_bytes"]),
    ]
    print(
        f"\n{args.messages:,} messages, {args.phase_s:g} s per phase, {args.rate:g} msg/s, follower "
        f"{args.hz:g} Hz\n"
    )
    print("| metric | alone | with follower | ratio |\n|---|---|---|---|")
    for name, a, b in rows:
        ratio = f"{b / a:.2f}" if isinstance(a, (int, float)) and a else "-"
        print(f"| {name} | {a:,.2f} | {b:,.2f} | {ratio} |")
    print(
        f"\nfollower: saw {follow['seen']} messages, commit → seen p50 {follow['seen_p50_ms']:.0f} ms, "
        f"p95 {follow['seen_p95_ms']:.0f} ms, max {follow['seen_max_ms']:.0f} ms; "
        f"idle CPU {follow['idle_cpu_pct']:.3f}% of a core ({follow['idle_polls']} polls in "
        f"{args.idle_s:g} s)"
    )
    if args.json:
        args.json.write_text(
            json.dumps(
                {"args": {k: str(v) for k, v in vars(args).items()}, "alone": alone, "follow": follow},
                indent=2,
            )
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
