"""The CJK side index on a legacy (hermes-agent 0.19.0-written, schema v22) store (issue #21).

    .venv/bin/python bench/side_index_bench.py --legacy /tmp/h20-bench/large-upstream.db \
        [--append 10000] [--every-s 2] [--json bench/results/side-<date>.json]

A v22 file has no cjk index and must not get one (its triggers would break 0.19.0's writers), so
1–2 character CJK queries are answered from a side file under the cache folder; until it has
caught up they use LIKE. This measures what a user of such a store sees, on a copy of `--legacy`
(the original is never written; `--in-place`: no copy, the owner's appends stay in it) with a
fresh cache folder:

1. first build: the first 1–2 character CJK search starts it in a background thread (as in the
   browser); meanwhile one bench CJK query every `--every-s` seconds, with its latency and route
   (`like_scan` before any of the index is built, then `cjk_side_partial`: the index so far and
   LIKE above its high water);
   the build time is until the side file's high water reaches the store's last message id;
2. the side route once built: p50/p95 of each CJK class, all/one source, rank/newest;
3. catch-up: the owner (hermes-agent 0.19.0 itself, `append_message`) appends `--append`
   messages of the corpus (~15% CJK); then the first CJK search (route, latency) and, polled
   every 10 ms meanwhile, the time until the side file has caught up again (that search starts
   the catch-up in the background when the side file is more than `MAX_INLINE_LAG` ids behind).
   `--owner-no-optimize`: the same `append_message` calls without 0.19.0's full FTS optimize
   every 1,000 writes (at 10M each rewrites the whole index, minutes; the side file only reads
   `messages`, so the catch-up measured is the same).
4. reopened (`--reopen-append`, default 1,000; 0 skips it): the owner appends while no browser is
   open; then a new `SessionDB` runs the first CJK search (its first sync first checks every id
   the side file holds against the store) and the catch-up is polled as in 3; that check
   (`_reconcile`) is also timed on its own, and a control: the first CJK search of another new
   `SessionDB` once nothing is behind. Each new `SessionDB` runs `prepare_search()` first, as
   the browser does after first paint.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from measure import pct  # noqa: E402

# The bench classes the side index serves (1–2 character CJK terms), from corpus.QUERIES.
SIDE_QUERIES = [
    ("cjk_1char_zh", "错"),
    ("cjk_2char_zh", "部署"),
    ("cjk_2char_ko", "배포"),
    ("cjk_or_2char", "部署 OR 缓存"),
    ("mixed_ascii_cjk", "docker 部署"),
]

# The owner's appends, run under the peer's interpreter (hermes_state 0.19.0).
OWNER_SCRIPT = r"""
import json, sys, time
sys.path.insert(0, sys.argv[3])
import corpus
from hermes_state import SessionDB
if sys.argv[4] == "1":  # no 1,000-write full optimize (at 10M each one rewrites ~20 GB of index)
    SessionDB._OPTIMIZE_EVERY_N_WRITES = 10**12
db = SessionDB(db_path=__import__("pathlib").Path(sys.argv[1]))
n = int(sys.argv[2]); done = 0; t0 = time.perf_counter(); worst = 0.0
for s in corpus.iter_sessions(max(n, 2000), seed=int(sys.argv[5])):
    sid = "owner%s-" % sys.argv[5] + s["id"]
    db.create_session(sid, s["source"], model=s["model"])
    for m in s["messages"]:
        if done >= n:
            break
        t = time.perf_counter()
        db.append_message(sid, m["role"], content=m["content"], tool_name=m.get("tool_name"),
                          tool_calls=m.get("tool_calls"), tool_call_id=m.get("tool_call_id"))
        worst = max(worst, time.perf_counter() - t)
        done += 1
    if done >= n:
        break
db.close()
print(json.dumps({"appended": done, "wall_s": time.perf_counter() - t0, "worst_append_s": worst}))
"""


def timed_search(db: Any, q: str, **kw: Any) -> tuple[float, str, int]:
    t = time.perf_counter()
    out = db.search(q, limit=20, **kw)
    return (time.perf_counter() - t) * 1000, out.route, len(out.results)


def search_while_catching_up(
    db: Any, side: Any, top: int, timeout_s: float
) -> tuple[tuple[float, str, int], float | None]:
    """The first CJK search runs in a thread (as in the browser's worker) while this thread polls
    the side file every 10 ms: the catch-up time (None: not within `timeout_s`) is measured on its
    own, not rounded up to the end of that search. Returns the search's (ms, route, n) too."""
    first: list[tuple[float, str, int]] = []
    t1 = time.perf_counter()
    searcher = threading.Thread(target=lambda: first.append(timed_search(db, "错")))
    searcher.start()
    catch_s = None
    while time.perf_counter() - t1 < timeout_s:
        if side.high_water() >= top:
            catch_s = time.perf_counter() - t1
            break
        time.sleep(0.01)
    searcher.join()
    return first[0], catch_s


def wait_caught_up(
    db: Any, side: Any, top: int, every_s: float, log: list[dict[str, Any]], t0: float, timeout_s: float
) -> float | None:
    """Until the side file's high water reaches `top`: one CJK query every `every_s` seconds."""
    i = 0
    while time.perf_counter() - t0 < timeout_s:
        hw = side.high_water()
        if hw >= top:
            return time.perf_counter() - t0
        name, q = SIDE_QUERIES[i % len(SIDE_QUERIES)]
        ms, route, n = timed_search(db, q, sort="newest" if i % 2 else None)
        log.append(
            {
                "t_s": round(time.perf_counter() - t0, 2),
                "query": name,
                "sort": "newest" if i % 2 else "rank",
                "ms": round(ms, 2),
                "route": route,
                "n": n,
                "high_water": hw,
                "top": top,
            }
        )
        print(f"  {log[-1]}", file=sys.stderr)
        i += 1
        time.sleep(every_s)
    return None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--legacy", type=Path, required=True, help="a store written by hermes-agent 0.19.0")
    ap.add_argument("--workdir", type=Path, default=None, help="for the copy (default: beside --legacy)")
    ap.add_argument("--append", type=int, default=10_000)
    ap.add_argument("--every-s", type=float, default=2.0)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--timeout-s", type=float, default=3600)
    ap.add_argument(
        "--reopen-append",
        type=int,
        default=1000,
        help="step 4: messages the owner appends while no browser is open (0: skip the step)",
    )
    ap.add_argument(
        "--owner-no-optimize",
        action="store_true",
        help="the owner's appends without 0.19.0's full FTS optimize every 1,000 writes (a 10M "
        "store: each one rewrites ~20 GB); the rows and their triggers are the same",
    )
    ap.add_argument(
        "--in-place",
        action="store_true",
        help="no copy (disk): the owner's appends stay in --legacy (sessions 'owner4242-…', 'owner4343-…')",
    )
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()

    work = args.workdir or args.legacy.parent
    copy = args.legacy if args.in_place else work / f"side-{args.legacy.name}"
    t = time.perf_counter()
    if not args.in_place:
        for suffix in ("", "-wal", "-shm"):
            Path(f"{copy}{suffix}").unlink(missing_ok=True)
        shutil.copyfile(args.legacy, copy)
        if Path(f"{args.legacy}-wal").exists():
            shutil.copyfile(f"{args.legacy}-wal", f"{copy}-wal")
    copy_s = time.perf_counter() - t
    cache = Path(tempfile.mkdtemp(prefix="side-cache-", dir=work))
    os.environ["XDG_CACHE_HOME"] = str(cache)  # a fresh side index, never the user's
    sys.path.insert(0, str(ROOT))
    from hermes_tui.state import SessionDB  # noqa: PLC0415 - after XDG_CACHE_HOME is set
    from hermes_tui.state.side_index import SideIndex  # noqa: PLC0415

    out: dict[str, Any] = {"legacy": str(args.legacy), "copy_s": copy_s, "in_place": args.in_place}
    db = SessionDB(copy, migrate=False)  # as the browser opens a store
    caps = db.capabilities()
    out["fts_layout"], out["schema_version"] = caps["fts_layout"], caps["schema_version"]
    out["messages"] = db.message_count()
    side = SideIndex(copy)

    # 1. first build, started by the first CJK search, with searches meanwhile
    top0 = _max_id(copy)
    t0 = time.perf_counter()
    ms, route, n = timed_search(db, "错")
    during: list[dict[str, Any]] = [
        {
            "t_s": 0.0,
            "query": "cjk_1char_zh",
            "sort": "rank",
            "ms": round(ms, 2),
            "route": route,
            "n": n,
            "high_water": -1,
            "top": top0,
        }
    ]
    build_s = wait_caught_up(db, side, top0, args.every_s, during, t0, args.timeout_s)
    out["first_build"] = {
        "build_s": build_s,
        "top_id": top0,
        "searches": during,
        "like_p50_ms": pct([d["ms"] for d in during if d["route"] == "like_scan"], 50),
        "like_p95_ms": pct([d["ms"] for d in during if d["route"] == "like_scan"], 95),
        # The side index so far + LIKE above its high water (from 2026-12-04's second run on).
        "partial_p50_ms": pct([d["ms"] for d in during if d["route"] == "cjk_side_partial"], 50),
        "partial_p95_ms": pct([d["ms"] for d in during if d["route"] == "cjk_side_partial"], 95),
        "side_file_mb": side.path.stat().st_size / 1e6 if side.path.exists() else None,
    }
    print(f"first build: {build_s} s", file=sys.stderr)

    # 2. the side route once built
    routes: dict[str, Any] = {}
    for name, q in SIDE_QUERIES:
        for src_name, src in (("all", None), ("src", ["telegram"])):
            for sort in (None, "newest"):
                kw: dict[str, Any] = {"sort": sort}
                if src:
                    kw["source_filter"] = src
                timed_search(db, q, **kw)
                runs = [timed_search(db, q, **kw) for _ in range(args.reps)]
                routes[f"{name}|{src_name}|{sort or 'rank'}"] = {
                    "p50_ms": pct([r[0] for r in runs], 50),
                    "p95_ms": pct([r[0] for r in runs], 95),
                    "route": runs[-1][1],
                    "n": runs[-1][2],
                }
    out["side_route"] = routes

    # 3. the owner appends; catch-up
    home = tempfile.mkdtemp(prefix="hermes-home-", dir=work)
    out["owner_append"] = owner_append(copy, args.append, 4242, args.owner_no_optimize, home)
    top1 = _max_id(copy)
    # The user's first CJK search after the appends, with the catch-up timed on its own.
    t1 = time.perf_counter()  # the later searches' `t_s` count from it
    (ms, route, n), catch_s = search_while_catching_up(db, side, top1, args.timeout_s)
    after = [
        {
            "t_s": 0.0,
            "query": "cjk_1char_zh",
            "sort": "rank",
            "ms": round(ms, 2),
            "route": route,
            "n": n,
            "top": top1,
        }
    ]
    for name, q in SIDE_QUERIES:  # once caught up: the side route again
        ms, route, n = timed_search(db, q)
        after.append(
            {
                "t_s": round(time.perf_counter() - t1, 2),
                "query": name,
                "sort": "rank",
                "ms": round(ms, 2),
                "route": route,
                "n": n,
                "top": top1,
            }
        )
    out["catch_up"] = {"new_ids": top1 - top0, "catch_up_s": catch_s, "searches": after}
    print(f"catch-up of {top1 - top0} ids: {catch_s} s", file=sys.stderr)
    db.close()

    # 4. reopened: the browser was closed while the owner appended `--reopen-append` messages;
    # a new process's first sync first checks every id the side file holds against the store
    # (`_reconcile`: rows another program deleted), then indexes the new ones.
    if args.reopen_append:
        out["reopen"] = reopen(copy, args, home, SessionDB, SideIndex)
        print(f"reopen: {json.dumps(out['reopen'], ensure_ascii=False)}", file=sys.stderr)
    shutil.rmtree(cache, ignore_errors=True)
    shutil.rmtree(home, ignore_errors=True)
    if not args.in_place:
        for suffix in ("", "-wal", "-shm"):
            Path(f"{copy}{suffix}").unlink(missing_ok=True)
    print(
        json.dumps({k: v for k, v in out.items() if k != "side_route"}, indent=1, ensure_ascii=False)[:4000]
    )
    print(json.dumps(routes, indent=1, ensure_ascii=False))
    if args.json:
        args.json.write_text(json.dumps(out, indent=1, ensure_ascii=False))
    return 0


def owner_append(copy: Path, n: int, seed: int, no_optimize: bool, home: str) -> dict[str, Any]:
    """`n` messages appended by hermes-agent 0.19.0 itself (`append_message`), in its interpreter;
    `seed` picks the corpus (and the session ids)."""
    sys.path.insert(0, str(ROOT / "tests"))
    from peer.oracle import peer_python  # noqa: PLC0415 - tests/ is not an installed package

    t = time.perf_counter()
    proc = subprocess.run(
        [
            str(peer_python()),
            "-c",
            OWNER_SCRIPT,
            str(copy),
            str(n),
            str(HERE),
            "1" if no_optimize else "0",
            str(seed),
        ],
        capture_output=True,
        text=True,
        env=dict(os.environ, HERMES_HOME=home),
        check=False,
    )
    owner: dict[str, Any] = (
        json.loads(proc.stdout.strip().splitlines()[-1])
        if proc.returncode == 0
        else {"error": proc.stderr[-2000:]}
    )
    owner["wall_with_start_s"] = time.perf_counter() - t
    owner["no_optimize"] = no_optimize
    return owner


def reopen(
    copy: Path, args: argparse.Namespace, home: str, session_db: Any, side_index: Any
) -> dict[str, Any]:
    """Step 4: the owner appends while no browser is open; then a new `SessionDB` (as a new
    browser process) runs its first CJK search, and the side file's reconcile is timed alone."""
    owner = owner_append(copy, args.reopen_append, 4343, args.owner_no_optimize, home)
    top = _max_id(copy)
    t = time.perf_counter()
    db = session_db(copy, migrate=False)
    open_ms = (time.perf_counter() - t) * 1000
    t = time.perf_counter()
    db.prepare_search()  # as the browser does after first paint: not part of the first search
    prepare_ms = (time.perf_counter() - t) * 1000
    side = side_index(copy)
    hw0 = side.high_water()
    (ms, route, n), catch_s = search_while_catching_up(db, side, top, args.timeout_s)
    second = timed_search(db, "部署")
    # What that first sync's reconcile costs on its own (a fresh instance has not reconciled).
    fresh = side_index(copy)
    conn = fresh._open()
    held = conn.execute("SELECT count(*) FROM side_fts_docsize").fetchall()[0][0]
    t2 = time.perf_counter()
    fresh._reconcile(conn, db._conn())
    reconcile_s = time.perf_counter() - t2
    conn.close()
    db.close()
    # Control: the first CJK search of another new process once nothing is behind.
    db = session_db(copy, migrate=False)
    db.prepare_search()
    control = timed_search(db, "错")
    db.close()
    return {
        "owner_append": owner,
        "new_ids": top - hw0,
        "open_ms": open_ms,
        "prepare_search_ms": prepare_ms,
        "first_search": {"query": "cjk_1char_zh", "ms": round(ms, 2), "route": route, "n": n},
        "second_search": {"query": "cjk_2char_zh", "ms": round(second[0], 2), "route": second[1]},
        "catch_up_s": catch_s,
        "held_ids": held,
        "reconcile_s": reconcile_s,
        "control_first_search": {"ms": round(control[0], 2), "route": control[1]},
    }


def _max_id(path: Path) -> int:
    """The store's last message id, read in a subprocess with the stdlib (never APSW + sqlite3 in
    one process on the same file)."""
    code = (
        "import sqlite3,sys; c=sqlite3.connect(f'file:{sys.argv[1]}?mode=ro', uri=True); "
        "print(c.execute('SELECT COALESCE(MAX(id),0) FROM messages').fetchone()[0])"
    )
    return int(
        subprocess.run(
            [sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True
        ).stdout
    )


if __name__ == "__main__":
    raise SystemExit(main())
