"""Deep jump in a merged list of two 50k-session stores: `RowKeys` (keys read per block through
`list_rows`) against `OrderKeys` (keys returned by `session_order(with_keys=True)`).

    .venv/bin/python bench/federation_jump.py /tmp/fedjump   # builds a.db and b.db once there
"""

from __future__ import annotations

import random
import sys
import time
from pathlib import Path

from hermes_tui.state import SessionDB
from hermes_tui.state.federation import OrderKeys, RowKeys, open_stores
from hermes_tui.state.profiles import StoreRef

SESSIONS = 50_000


def build(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("a", "b"):
        path = folder / f"{name}.db"
        if path.exists():
            continue
        db = SessionDB(path)
        conn = db._conn()
        rnd = random.Random(name)
        with conn:
            for i in range(SESSIONS):
                t = 1.7e9 + rnd.random() * 1e7
                conn.execute(
                    "INSERT INTO sessions (id, source, started_at, message_count, "
                    "input_tokens, output_tokens)"
                    " VALUES (?, 'cli', ?, ?, ?, ?)",
                    (f"{name}{i:06d}", t, rnd.randint(0, 50), rnd.randint(0, 9999), 5),
                )
                conn.execute(
                    "INSERT INTO messages (session_id, role, content, timestamp) VALUES (?, 'user', 'hi', ?)",
                    (f"{name}{i:06d}", t + 5),
                )
        db.close()


def main(folder: Path) -> None:
    build(folder)
    refs = [StoreRef(n, folder / f"{n}.db") for n in ("a", "b")]
    with open_stores(refs, read_only=True) as fed:
        for order in ("last_active", "started"):
            for keys in (RowKeys(), OrderKeys()):
                for _ in range(2):  # the second round is the warm one
                    t0 = time.perf_counter()
                    merged = fed.session_order(order=order, keys=keys)
                    t1 = time.perf_counter()
                    rows = merged.page(90_000, 50)
                    t2 = time.perf_counter()
                print(
                    f"{order:12} {type(keys).__name__:9} order {1000 * (t1 - t0):7.1f} ms  "
                    f"jump to 90,000 {1000 * (t2 - t1):7.1f} ms  rows {len(rows)}"
                )


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/hermes-fedjump"))
