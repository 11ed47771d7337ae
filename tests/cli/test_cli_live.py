"""`sessions tail --follow --json` and `sessions watch` in a subprocess against a live writer.

The follower is a real process (`python -m hermes_tui.cli_live`, what `hermes-tui sessions
tail|watch` runs); the writer is our store in this process. Lines are read on a thread and
waited for with timeouts (conditions, never fixed sleeps).
"""

from __future__ import annotations

import json
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from hermes_tui.state import SessionDB

TIMEOUT = 20.0


def _as_from_a_shell() -> None:
    """The child starts with SIGINT's default action and unblocked, as a shell starts it: a child
    inherits the test process's signal state, which the full suite's earlier event loops can
    leave changed (ctrl+c then never reached the follower, and only in the full run)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGINT])


class Follower:
    def __init__(self, *args: str):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "hermes_tui.cli_live", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            preexec_fn=_as_from_a_shell,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)

    def next(self) -> str:
        try:
            return self.lines.get(timeout=TIMEOUT)
        except queue.Empty:
            raise AssertionError(f"no line within {TIMEOUT}s; stderr: {self.stderr()}") from None

    def next_json(self) -> dict[str, Any]:
        return json.loads(self.next())

    def until(self, pred, limit: int = 500) -> list[dict[str, Any]]:
        """Events up to and including the first one `pred` accepts."""
        seen = []
        for _ in range(limit):
            ev = self.next_json()
            seen.append(ev)
            if pred(ev):
                return seen
        raise AssertionError(f"condition not met in {limit} events: {seen[-5:]}")

    def stderr(self) -> str:
        if self.proc.poll() is None:
            return "(running)"
        assert self.proc.stderr is not None
        return self.proc.stderr.read()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=10)


@pytest.fixture
def store(tmp_path: Path):
    path = tmp_path / "state.db"
    db = SessionDB(path)
    db.create_session("live-1", "cli")
    db.set_session_title("live-1", "Live \x1b[31mred\x1b[0m")
    db.append_message("live-1", "user", "first \x1b]0;pwned\x07 question")
    db.append_message("live-1", "assistant", "first answer")
    yield path, db
    db.close()


def test_tail_follow_json_through_compression_and_deletion(store):
    path, db = store
    f = Follower("tail", "live-1", "--follow", "--json", "--db", str(path), "--interval", "0.05")
    try:
        history = [f.next_json(), f.next_json()]
        assert [e["message"]["content"] for e in history] == [
            "first \x1b]0;pwned\x07 question",
            "first answer",
        ]
        ids = [db.append_message("live-1", "user", f"live {i}") for i in range(5)]
        got = [f.next_json() for _ in ids]
        assert [e["message"]["id"] for e in got] == ids and {e["session_id"] for e in got} == {"live-1"}
        # compression: the parent ends, then the continuation is created (upstream's order)
        last_old = db.append_message("live-1", "assistant", "before the split")
        db.end_session("live-1", "compression")
        db.create_session("live-2", "cli", parent_session_id="live-1")
        db.append_message("live-2", "user", "summary of earlier turns")
        events = f.until(lambda e: e["type"] == "message" and e["session_id"] == "live-2")
        assert [e["type"] for e in events] == ["message", "continued", "message"]
        assert events[0]["message"]["id"] == last_old
        assert events[1] == {"type": "continued", "from": "live-1", "to": "live-2", "reason": "compression"}
        more = db.append_message("live-2", "assistant", "carrying on")
        assert f.next_json()["message"]["id"] == more
        db.delete_session("live-2")
        assert f.next_json() == {"type": "deleted", "session_id": "live-2"}
        assert f.proc.wait(timeout=TIMEOUT) == 3
    finally:
        f.stop()


def test_tail_text_is_inert_and_ctrl_c_exits_130(store):
    path, db = store
    f = Follower("tail", "live", "--follow", "--db", str(path), "--interval", "0.05")  # a unique prefix
    try:
        head = f.next()
        assert head.startswith("[#1] user")
        body = f.next()
        assert "\x1b" not in body and "\x07" not in body and "question" in body
        db.append_message("live-1", "tool", "tool \x1b[2J output", tool_name="term\x1binal")
        lines = [f.next() for _ in range(4)]  # answer (2 lines), then the new tool message (2 lines)
        assert lines[2].startswith("[#3] tool (") and "\x1b" not in "".join(lines)
        f.proc.send_signal(signal.SIGINT)
        assert f.proc.wait(timeout=TIMEOUT) == 130
        assert "Traceback" not in f.stderr()
    finally:
        f.stop()


def test_tail_without_follow_prints_and_exits(store):
    path, _db = store
    proc = subprocess.run(
        [sys.executable, "-m", "hermes_tui.cli_live", "tail", "live-1", "--json", "--db", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0
    assert [json.loads(x)["message"]["id"] for x in proc.stdout.splitlines()] == [1, 2]
    missing = subprocess.run(
        [sys.executable, "-m", "hermes_tui.cli_live", "tail", "nope", "--db", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert missing.returncode == 3 and missing.stderr.startswith("error: no session")


def test_tail_of_an_already_compressed_session_goes_to_the_tip(store):
    path, db = store
    db.end_session("live-1", "compression")
    db.create_session("live-2", "cli", parent_session_id="live-1")
    db.append_message("live-2", "user", "in the tip")
    f = Follower("tail", "live-1", "-f", "--json", "--db", str(path), "--interval", "0.05")
    try:
        events = f.until(lambda e: e.get("session_id") == "live-2")
        assert [e["type"] for e in events] == ["message", "message", "continued", "message"]
    finally:
        f.stop()


def test_watch_streams_sessions_messages_and_ends(store):
    path, db = store
    f = Follower("watch", "--json", "--db", str(path), "--interval", "0.05")
    try:
        assert f.next_json() == {"type": "start", "message_id": 2}  # from here on everything is streamed
        db.create_session("w-new", "telegram")
        db.set_session_title("w-new", "Fresh")
        ids = [db.append_message("w-new", "user", f"w {i}") for i in range(3)]
        ids.append(db.append_message("live-1", "user", "old session again"))
        events = f.until(lambda e: e["type"] == "message" and e["message"]["id"] == ids[-1])
        assert events[0]["type"] == "session" and events[0]["session"]["id"] == "w-new"
        assert [e["message"]["id"] for e in events if e["type"] == "message"] == ids
        db.end_session("w-new", "user_exit")
        assert f.until(lambda e: e["type"] == "ended")[-1] == {
            "type": "ended",
            "session_id": "w-new",
            "end_reason": "user_exit",
        }
        f.proc.send_signal(signal.SIGINT)
        assert f.proc.wait(timeout=TIMEOUT) == 130
    finally:
        f.stop()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the write signal is inotify")
def test_a_commit_prints_at_once_whatever_the_interval(store):
    """With a minute between polls, only the store's write signal can print these in time."""
    path, db = store
    tail = Follower("tail", "live-1", "--follow", "--json", "--db", str(path), "--interval", "60")
    watch = Follower("watch", "--json", "--db", str(path), "--interval", "60")
    try:
        assert [tail.next_json()["type"] for _ in range(2)] == ["message", "message"]
        assert watch.next_json()["type"] == "start"
        for i in range(3):
            started = time.monotonic()
            mid = db.append_message("live-1", "user", f"signalled {i}")
            assert tail.next_json()["message"]["id"] == mid
            assert watch.next_json()["message"]["id"] == mid
            assert time.monotonic() - started < 10  # not the 60 s tick
    finally:
        tail.stop()
        watch.stop()
