"""Crash tests of the trash: a subprocess running delete, prune or restore is
SIGKILLed at a random moment, 20 times each. Afterwards the store opens, `PRAGMA
integrity_check` and FTS5 integrity-check pass, every session is either whole or wholly gone
(each batch is one transaction), and the trash entry brings back exactly what was removed."""

from __future__ import annotations

import json
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from test_trash import fts_check, table_dump

from hermes_tui.state import SessionDB

RUNS = 20
N_SESSIONS = 80
N_MESSAGES = 10

CHILD = r"""
import json, sys
from hermes_tui.state import SessionDB
path, op, arg = sys.argv[1:4]
db = SessionDB(path, migrate=False)
print("ready", flush=True)
if op == "delete":
    db.trash_sessions(json.loads(arg))
elif op == "prune":
    db.trash_sessions(json.loads(arg), what="prune", require_ended=True)
else:
    db.restore_trash(arg)
db.close()
print("done", flush=True)
"""


def _build(path: Path) -> None:
    db = SessionDB(path)
    try:
        for i in range(N_SESSIONS):
            sid = f"c{i:03d}"
            # every 10th session is the child of the one before it: deletes orphan or cascade them
            parent = f"c{i - 1:03d}" if i % 10 == 9 else None
            db.create_session(sid, "cli", model="m", parent_session_id=parent)
            db.append_messages(
                sid,
                [
                    {
                        "role": "user" if j % 2 == 0 else "assistant",
                        "content": f"crash{i} text {j} 日本語 zebra",
                        "timestamp": 1.7e9 + i + j / 100,
                    }
                    for j in range(N_MESSAGES)
                ],
            )
            db.update_token_counts(
                sid, input_tokens=i, output_tokens=2 * i, model="m", estimated_cost_usd=i / 7
            )
            db.set_session_title(sid, f"crash title {i}")
            if i % 7:
                db.end_session(sid, "done")
    finally:
        db.close()


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("crash-template") / "state.db"
    _build(path)
    return path


def _copy(template: Path, dest: Path) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    path = dest / "state.db"
    shutil.copy2(template, path)
    return path


def _session_rows(db: SessionDB, sid: str) -> tuple[Any, ...]:
    c = db._conn()
    return (
        c.execute("SELECT * FROM sessions WHERE id = ?", (sid,)).fetchall(),
        c.execute("SELECT * FROM messages WHERE session_id = ? ORDER BY id", (sid,)).fetchall(),
        c.execute("SELECT * FROM session_model_usage WHERE session_id = ?", (sid,)).fetchall(),
    )


def _without_parent(rows: tuple[Any, ...]) -> tuple[Any, ...]:
    """A sessions row with parent_session_id (column 13) blanked: a committed batch may clear it."""
    sess = [r[:13] + (None,) + r[14:] for r in rows[0]]
    return (sess, rows[1], rows[2])


def _run_child(path: Path, op: str, arg: str, kill_after: float | None) -> tuple[float, bool]:
    """Run the child; SIGKILL it `kill_after` s after it is ready. Returns (seconds it ran, finished)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(path), op, arg],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "ready", proc.stderr.read() if proc.stderr else ""
    t0 = time.monotonic()
    if kill_after is not None:
        try:
            proc.wait(timeout=kill_after)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    ran = time.monotonic() - t0
    finished = proc.returncode == 0
    if kill_after is None:
        assert finished, proc.stderr.read() if proc.stderr else ""
    proc.stdout.close()
    if proc.stderr:
        proc.stderr.close()
    return ran, finished


def _check_store(db: SessionDB) -> None:
    assert db._conn().execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    fts_check(db)


def _targets(op: str) -> list[str]:
    rng = random.Random(op)
    return sorted(rng.sample([f"c{i:03d}" for i in range(N_SESSIONS)], 60))


def _calibrate(template: Path, tmp: Path, op: str, arg: str) -> float:
    path = _copy(template, tmp / "calibrate")
    ran, _ = _run_child(path, op, arg, None)
    return ran


@pytest.mark.parametrize("op", ["delete", "prune"])
def test_killed_delete_or_prune_leaves_a_sound_store_and_a_restorable_entry(template, tmp_path, op):
    targets = _targets(op)
    arg = json.dumps(targets)
    with SessionDB(template, read_only=True) as ref:
        before = table_dump(ref)
        rows = {f"c{i:03d}": _session_rows(ref, f"c{i:03d}") for i in range(N_SESSIONS)}
    span = _calibrate(template, tmp_path, op, arg)
    rng = random.Random(f"kill-{op}")
    interrupted_with_deletes = 0
    for run in range(RUNS):
        path = _copy(template, tmp_path / f"run{run}")
        _ran, finished = _run_child(path, op, arg, rng.uniform(0, span * 1.1))
        db = SessionDB(path, migrate=False)
        try:
            _check_store(db)
            gone = []
            for sid, want in rows.items():
                now = _session_rows(db, sid)
                if not now[0]:
                    assert sid in targets and now == ([], [], []), f"{sid} half deleted"
                    gone.append(sid)
                else:
                    assert _without_parent(now) == _without_parent(want), f"{sid} changed"
            entries = db.list_trash()
            if gone:
                interrupted_with_deletes += not finished
                assert len(entries) == 1 and entries[0]["status"] in ("interrupted", "deleted"), entries
            for e in entries:
                if e["status"] == "incomplete":
                    assert not gone  # a manifest is fsynced before the first row goes
                    continue
                out = db.restore_trash(e["id"])
                assert out["conflicts"] == 0, out
            assert table_dump(db) == before, f"run {run}: the store differs after restoring"
            _check_store(db)
        finally:
            db.close()
    print(f"{op}: {interrupted_with_deletes} of {RUNS} runs killed after rows were deleted")
    assert interrupted_with_deletes >= 1, "no run was killed in the middle of deleting"


def test_killed_restore_leaves_a_sound_store_and_restore_can_finish(template, tmp_path):
    targets = _targets("delete")
    with SessionDB(template, read_only=True) as ref:
        before = table_dump(ref)
        rows = {sid: _session_rows(ref, sid) for sid in targets}

    def deleted_copy(dest: Path) -> tuple[Path, str]:
        path = _copy(template, dest)
        with SessionDB(path, migrate=False) as db:
            entry = db.trash_sessions(targets)["trash_entry"]
        return path, entry

    path, entry = deleted_copy(tmp_path / "calibrate")
    span, _ = _run_child(path, "restore", entry, None)
    rng = random.Random("kill-restore")
    partial = 0
    for run in range(RUNS):
        path, entry = deleted_copy(tmp_path / f"run{run}")
        _ran, finished = _run_child(path, "restore", entry, rng.uniform(0, span * 1.1))
        db = SessionDB(path, migrate=False)
        try:
            _check_store(db)
            back = 0
            for sid in targets:
                now = _session_rows(db, sid)
                if now[0]:
                    back += 1
                    assert _without_parent(now) == _without_parent(rows[sid]), f"{sid} partly restored"
                else:
                    assert now == ([], [], [])
            partial += 0 < back < len(targets)
            out = db.restore_trash(entry)  # finishing the interrupted restore
            assert out["conflicts"] == 0 and out["restored"] == len(targets) - back, out
            assert table_dump(db) == before
            _check_store(db)
        finally:
            db.close()
    print(f"restore: {partial} of {RUNS} runs killed mid-restore")
    assert partial >= 1, "no run was killed in the middle of restoring"
