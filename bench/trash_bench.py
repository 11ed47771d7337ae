"""How long a delete through the trash and its restore take (moved here from the test suite,
where a wall-clock bound depended on the machine's load).

    .venv/bin/python bench/trash_bench.py [--sessions 100] [--messages 20] [--reps 3]

Each rep builds a fresh store of `--sessions` sessions of `--messages` messages, then times
`trash_sessions` over all of them and `restore_trash` of the entry it wrote.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from hermes_tui.state import SessionDB


def one_rep(folder: Path, sessions: int, messages: int) -> tuple[float, float]:
    """(delete seconds, restore seconds) on a fresh store in `folder`."""
    with SessionDB(folder / "state.db") as db:
        ids = [f"b{i}" for i in range(sessions)]
        for sid in ids:
            db.create_session(sid, "cli")
            db.append_messages(sid, [{"role": "user", "content": f"bulk text {j}"} for j in range(messages)])
        t = time.perf_counter()
        res = db.trash_sessions(ids)
        deleted = time.perf_counter() - t
        assert res["deleted"] == sessions
        t = time.perf_counter()
        db.restore_trash(res["trash_entry"])
        restored = time.perf_counter() - t
        assert db.message_count() == sessions * messages
    return deleted, restored


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=100)
    parser.add_argument("--messages", type=int, default=20)
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    runs = []
    for rep in range(args.reps):
        with tempfile.TemporaryDirectory() as tmp:
            runs.append(one_rep(Path(tmp), args.sessions, args.messages))
        print(f"rep {rep + 1}: delete {runs[-1][0]:.3f} s, restore {runs[-1][1]:.3f} s")
    print(
        f"median: delete {statistics.median(r[0] for r in runs):.3f} s, "
        f"restore {statistics.median(r[1] for r in runs):.3f} s "
        f"({args.sessions} sessions × {args.messages} messages)"
    )


if __name__ == "__main__":
    main()
