"""The issue-size federation corpus: six Hermes stores, one large and five small, in one `$HERMES_HOME`.

    .venv/bin/python bench/federation_build.py --home /work/bench-data/fed/home

- `state.db` (the default profile, ~1M messages): a copy of `--large-from` (default
  `/work/bench-data/live/live-base-1000000.db`: `bench/live_bench.py`'s base store, hermes-agent
  0.19.0's schema v22 with its legacy FTS triggers, created by its `SessionDB` and filled through
  its own sqlite3: 20,000 sessions of 50 messages) when that file exists, else a v23 store of
  `--large` messages built here through `import_sessions`;
- `profiles/v23-<N>/state.db` (ours, v23): `--small` messages each through `import_sessions`;
- `profiles/v22-<N>/state.db`: `--small` messages each written by the real hermes-agent 0.19.0
  (`hermes_state.SessionDB`, schema v22, legacy FTS layout) through its public API in its own
  interpreter (the peer venv of `tests/peer/oracle.py`): create, append, token counts, title, end.

Every store has its own corpus seed (`bench/corpus.py`, deterministic), all over the same 180-day
span, so their sessions interleave everywhere in the merged list. A store that exists is kept:
delete the folder to rebuild. Files are written under a temporary name and renamed when complete.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DEFAULT_HOME = Path("/work/bench-data/fed/home")
DEFAULT_LARGE_FROM = Path("/work/bench-data/live/live-base-1000000.db")

# Runs in hermes-agent 0.19.0's interpreter: argv = bench dir, db path, messages, seed.
_UPSTREAM_BUILD = r"""
import sqlite3, sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[1])
import corpus
import hermes_state

db_path, size, seed = Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
db = hermes_state.SessionDB(db_path=db_path)
times = []
for s in corpus.iter_sessions(size, seed=seed):
    kw = {"model": s["model"]}
    if s["model_config"]:
        kw["model_config"] = s["model_config"]
    if s["parent_session_id"]:
        kw["parent_session_id"] = s["parent_session_id"]
    db.create_session(s["id"], s["source"], **kw)
    for m in s["messages"]:
        mk = {k: m[k] for k in ("tool_name", "tool_calls", "tool_call_id", "token_count",
                                "finish_reason", "timestamp") if m.get(k) is not None}
        db.append_message(s["id"], m["role"], content=m["content"], **mk)
    db.update_token_counts(s["id"], input_tokens=s["input_tokens"], output_tokens=s["output_tokens"],
                           model=s["model"], estimated_cost_usd=s["estimated_cost_usd"], api_call_count=1)
    if s["title"]:
        try:
            db.set_session_title(s["id"], s["title"])
        except Exception:
            pass
    if s["ended_at"] is not None:
        db.end_session(s["id"], s["end_reason"] or "user_exit")
    times.append((s["started_at"], s["ended_at"], s["id"]))
db.close()
# The API stamps time.time(); the corpus times go in afterwards (upstream's own process, stdlib).
conn = sqlite3.connect(str(db_path), timeout=60, isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
conn.executemany("UPDATE sessions SET started_at = ?, ended_at = ? WHERE id = ?", times)
conn.execute("COMMIT")
conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
conn.close()
"""


def _finish(tmp: Path, path: Path) -> None:
    """Move a complete build (and any WAL files beside it) into place."""
    for suffix in ("-wal", "-shm"):
        side = Path(f"{tmp}{suffix}")
        if side.exists():
            side.rename(f"{path}{suffix}")
    tmp.rename(path)


def _fresh_tmp(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name("building.db")
    for p in (tmp, Path(f"{tmp}-wal"), Path(f"{tmp}-shm")):
        p.unlink(missing_ok=True)
    return tmp


def build_ours(path: Path, messages: int, seed: int) -> dict[str, Any]:
    """A v23 store of about `messages` messages through our `import_sessions`."""
    sys.path.insert(0, str(HERE))
    import corpus  # type: ignore[import-not-found]

    from hermes_tui.state import SessionDB

    tmp = _fresh_tmp(path)
    t0 = time.perf_counter()
    batch: list[dict[str, Any]] = []
    with SessionDB(tmp) as db:
        for s in corpus.iter_sessions(messages, seed=seed):
            exp = {k: v for k, v in s.items() if k != "edge_kind"}
            exp["model_config"] = json.dumps(s["model_config"]) if s["model_config"] else None
            batch.append(exp)
            if len(batch) >= 200:
                db.import_sessions(batch)
                batch.clear()
        if batch:
            db.import_sessions(batch)
        db.fts_upkeep()
    _finish(tmp, path)
    return {"kind": "ours v23 (import_sessions)", "seconds": round(time.perf_counter() - t0, 1)}


def build_upstream(path: Path, messages: int, seed: int) -> dict[str, Any]:
    """A v22 store written by hermes-agent 0.19.0 itself, in its own interpreter."""
    sys.path.insert(0, str(ROOT / "tests"))
    from peer.oracle import peer_python  # noqa: PLC0415 - tests/ is not an installed package

    tmp = _fresh_tmp(path)
    t0 = time.perf_counter()
    env = {**os.environ, "HERMES_HOME": str(tmp.parent)}
    subprocess.run(
        [str(peer_python()), "-c", _UPSTREAM_BUILD, str(HERE), str(tmp), str(messages), str(seed)],
        check=True,
        env=env,
        cwd=str(tmp.parent),
    )
    _finish(tmp, path)
    return {"kind": "hermes-agent 0.19.0 v22 (API)", "seconds": round(time.perf_counter() - t0, 1)}


def build(
    home: Path,
    *,
    large: int = 1_000_000,
    large_from: Path | None = DEFAULT_LARGE_FROM,
    small: int = 20_000,
    ours_small: int = 2,
    upstream_small: int = 3,
) -> dict[str, Any]:
    """Build whatever is missing of the six-store home; returns what each store is."""
    made: dict[str, Any] = {}
    big = home / "state.db"
    if not big.exists():
        if large_from is not None and large_from.exists():
            tmp = _fresh_tmp(big)
            t0 = time.perf_counter()
            shutil.copyfile(large_from, tmp)
            _finish(tmp, big)
            made["default"] = {"kind": f"copy of {large_from}", "seconds": round(time.perf_counter() - t0, 1)}
        else:
            made["default"] = build_ours(big, large, seed=1337)
    for i in range(ours_small):
        p = home / "profiles" / f"v23-{i + 1}" / "state.db"
        if not p.exists():
            made[p.parent.name] = build_ours(p, small, seed=2000 + i)
    for i in range(upstream_small):
        p = home / "profiles" / f"v22-{i + 1}" / "state.db"
        if not p.exists():
            made[p.parent.name] = build_upstream(p, small, seed=3000 + i)
    for name, info in made.items():
        print(f"built {name}: {info}", file=sys.stderr)
    return made


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", type=Path, default=DEFAULT_HOME)
    parser.add_argument("--large", type=int, default=1_000_000, help="messages in the large store (if built)")
    parser.add_argument(
        "--large-from", type=Path, default=DEFAULT_LARGE_FROM, help="copy this as the large one"
    )
    parser.add_argument("--small", type=int, default=20_000, help="messages in each small store")
    args = parser.parse_args()
    build(args.home, large=args.large, large_from=args.large_from, small=args.small)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
