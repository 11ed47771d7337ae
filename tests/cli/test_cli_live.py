"""`sessions tail --follow --json` and `sessions watch` in a subprocess against a live writer.

The follower is a real process (`python -m hermes_tui sessions tail|watch`, what `hermes-tui
sessions tail|watch` runs); the writer is our store in this process. Lines are read on a thread and
waited for with timeouts (conditions, never fixed sleeps).
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from hermes_tui.cli import follow, sessions
from hermes_tui.state import Changes, SessionDB, StoreError
from tests._wait import WAIT_S

TIMEOUT = WAIT_S  # a line's wait: the shared hang bound


def _as_from_a_shell() -> None:
    """The child starts with SIGINT's default action and unblocked, as a shell starts it: a child
    inherits the test process's signal state, which the full suite's earlier event loops can
    leave changed (ctrl+c then never reached the follower, and only in the full run)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGINT])


class Follower:
    def __init__(self, *args: str, env: dict[str, str] | None = None):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "hermes_tui", "sessions", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            preexec_fn=_as_from_a_shell,
            env=env,
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
        assert events[1] == {
            "type": "continued",
            "from": "live-1",
            "to": "live-2",
            "reason": "compression",
            "profile": str(path),  # every event names its store, one or several
        }
        more = db.append_message("live-2", "assistant", "carrying on")
        assert f.next_json()["message"]["id"] == more
        db.delete_session("live-2")
        assert f.next_json() == {"type": "deleted", "session_id": "live-2", "profile": str(path)}
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
        [sys.executable, "-m", "hermes_tui", "sessions", "tail", "live-1", "--json", "--db", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0
    assert [json.loads(x)["message"]["id"] for x in proc.stdout.splitlines()] == [1, 2]
    missing = subprocess.run(
        [sys.executable, "-m", "hermes_tui", "sessions", "tail", "nope", "--db", str(path)],
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
        # from here on everything is streamed
        assert f.next_json() == {"type": "start", "message_id": 2, "profile": str(path)}
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
            "profile": str(path),
        }
        f.proc.send_signal(signal.SIGINT)
        assert f.proc.wait(timeout=TIMEOUT) == 130
    finally:
        f.stop()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the write signal is inotify")
def test_a_commit_prints_at_once_whatever_the_interval(store):
    """With an hour between polls (far beyond any wait of a test), only the store's write signal
    can print these."""
    path, db = store
    tail = Follower("tail", "live-1", "--follow", "--json", "--db", str(path), "--interval", "3600")
    watch = Follower("watch", "--json", "--db", str(path), "--interval", "3600")
    try:
        assert [tail.next_json()["type"] for _ in range(2)] == ["message", "message"]
        assert watch.next_json()["type"] == "start"
        for i in range(3):
            mid = db.append_message("live-1", "user", f"signalled {i}")
            assert tail.next_json()["message"]["id"] == mid  # within the wait: not the hour's tick
            assert watch.next_json()["message"]["id"] == mid
    finally:
        tail.stop()
        watch.stop()


# ---------------------------------------------------------------- references and profiles (issue 33, 5)
def run(capsys: pytest.CaptureFixture[str], *argv: Any) -> tuple[int, str, str]:
    code = sessions.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_tail_resolves_references_like_every_command(store, capsys):
    """An exact title works (it was refused), through the one resolver: the same errors too."""
    path, db = store
    db.create_session("notes-1", "cli")
    db.set_session_title("notes-1", "Release notes")
    db.append_message("notes-1", "user", "draft the notes")
    code, out, err = run(capsys, "tail", "Release notes", "--json", "--db", path)
    assert code == 0, err
    assert [json.loads(x)["message"]["content"] for x in out.splitlines()] == ["draft the notes"]
    db.create_session("live-2", "cli")
    code, _out, err = run(capsys, "tail", "live", "--db", path)  # a prefix of two ids
    assert code == 7 and "is ambiguous" in err
    code, _out, err = run(capsys, "tail", "Release", "--db", path)
    assert code == 3 and "not an id, a unique id prefix, or an exact title" in err


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """$HERMES_HOME with a default store, profiles/work, and profiles/broken (not a database).
    `shared` is in both stores, so it needs PROFILE:ID."""
    root = tmp_path / ".hermes"
    for store, sid, title in ((root, "d1", "Default chat"), (root / "profiles" / "work", "w1", "Work chat")):
        store.mkdir(parents=True, exist_ok=True)
        with SessionDB(store / "state.db") as db:
            db.create_session(sid, "cli")
            db.set_session_title(sid, title)
            db.append_message(sid, "user", f"hello from {sid}")
            db.create_session("shared", "cli")
            db.append_message("shared", "user", f"shared in {sid}")
    (root / "profiles" / "broken").mkdir()
    (root / "profiles" / "broken" / "state.db").write_bytes(b"this is no database " * 100)
    monkeypatch.setenv("HERMES_HOME", str(root))
    return root


def test_tail_takes_all_and_profile(home, capsys):
    code, out, err = run(capsys, "tail", "Work chat", "--all", "--json")
    assert code == 0, err
    events = [json.loads(x) for x in out.splitlines()]
    assert [(e["profile"], e["session_id"], e["message"]["content"]) for e in events] == [
        ("work", "w1", "hello from w1")
    ]
    code, out, _ = run(capsys, "tail", "work:shared", "--all", "--json")
    assert code == 0 and json.loads(out)["message"]["content"] == "shared in w1"
    code, out, _ = run(capsys, "tail", "shared", "--profile", "default", "--json")
    assert code == 0 and json.loads(out)["profile"] == "default"
    code, _out, err = run(capsys, "tail", "shared", "--all")
    assert code == 7 and "write PROFILE:ID" in err
    code, _out, err = run(capsys, "tail", "w1", "--all", "--db", home / "state.db")
    assert code == 2  # --db is one store, as for every command


def test_tail_follows_in_a_profile_store(home):
    f = Follower("tail", "work:w1", "--all", "--follow", "--json", "--interval", "0.05", env=dict(os.environ))
    try:
        assert f.next_json()["message"]["content"] == "hello from w1"
        with SessionDB(home / "profiles" / "work" / "state.db") as db:
            mid = db.append_message("w1", "assistant", "live in work")
        event = f.next_json()
        assert (event["profile"], event["message"]["id"]) == ("work", mid)
        f.proc.send_signal(signal.SIGINT)
        assert f.proc.wait(timeout=TIMEOUT) == 130
        assert "Traceback" not in f.stderr()
    finally:
        f.stop()


def test_watch_all_streams_every_store_and_reports_the_broken_one(home):
    f = Follower("watch", "--all", "--json", "--interval", "0.05", env=dict(os.environ))
    try:
        first = [f.next_json() for _ in range(3)]  # the broken store, then each store's start
        errors = [e for e in first if e["type"] == "error"]
        assert [(e["profile"], e["kind"]) for e in errors] == [("broken", "not_a_database")]
        assert sorted(e["profile"] for e in first if e["type"] == "start") == ["default", "work"]
        with SessionDB(home / "profiles" / "work" / "state.db") as db:
            in_work = db.append_message("w1", "user", "to work")
        with SessionDB(home / "state.db") as db:
            in_default = db.append_message("d1", "user", "to default")
        seen: dict[str, int] = {}
        while len(seen) < 2:
            event = f.next_json()
            if event["type"] == "message":
                seen[event["profile"]] = event["message"]["id"]
        assert seen == {"work": in_work, "default": in_default}
        f.proc.send_signal(signal.SIGINT)
        assert f.proc.wait(timeout=TIMEOUT) == 130
    finally:
        f.stop()


def test_watch_all_text_names_the_profile_on_each_line(home):
    f = Follower("watch", "--all", "--interval", "0.05", env=dict(os.environ))
    try:
        with SessionDB(home / "profiles" / "work" / "state.db") as db:
            deadline = time.monotonic() + TIMEOUT
            line = ""
            while "work:w1 [#" not in line and time.monotonic() < deadline:
                db.append_message("w1", "user", "to work")  # until the follower has started
                try:
                    line = f.lines.get(timeout=1)
                except queue.Empty:
                    continue
        assert line.startswith("work:w1 [#") and line.rstrip().endswith("user: to work")
        f.proc.send_signal(signal.SIGINT)
        assert f.proc.wait(timeout=TIMEOUT) == 130
        err = f.stderr()
        assert "warning: broken: " in err and "watching work (" in err and "watching default (" in err
    finally:
        f.stop()


def test_a_store_that_fails_while_following_is_reported_and_the_others_go_on():
    """`run_followers`: one store's follower raises; it is reported, the other keeps running until
    it ends on its own, and the result is that one's."""
    failed: list[tuple[str, str]] = []
    reported = threading.Event()

    def report(profile: str, exc: BaseException) -> None:
        failed.append((profile, str(exc)))
        reported.set()

    def broken(stop: follow.Stop) -> int:
        raise StoreError("disk I/O error")

    def healthy(stop: follow.Stop) -> int:
        assert reported.wait(TIMEOUT) and not stop.is_set()  # still running after the failure
        return 0

    with ThreadPoolExecutor(max_workers=2) as pool:
        code = follow.run_followers(
            {"bad": lambda stop: pool.submit(broken, stop), "good": lambda stop: pool.submit(healthy, stop)},
            report,
        )
    assert code == 0 and failed == [("bad", "disk I/O error")]


class _SignalOnce:
    """A write signal that fires once, at the first pause, then stays quiet."""

    def __init__(self) -> None:
        self.fired = False

    def wait(self, timeout: float, also: Any = None) -> bool:
        if not self.fired:
            self.fired = True
            return True
        also.wait(timeout)
        return False

    def close(self) -> None:
        pass


class _PublishedLateStore:
    """The commit the signal announced becomes visible one poll later: it is published in the
    `-shm` index just after its last WAL write, which is what the signal saw."""

    db_path = "state.db"

    def __init__(self, published_at_poll: int = 3) -> None:
        self.polls = 0
        self.published_at_poll = published_at_poll

    def write_signal(self) -> _SignalOnce:
        return _SignalOnce()

    def change_watcher(self, care_about: Any = ()) -> Any:
        store = self

        class Watcher:
            def poll(self) -> Changes:
                store.polls += 1  # 1: at start, 2: woken by the write but too early, 3: published
                return Changes(sessions_removed=1 if store.polls == store.published_at_poll else 0)

        return Watcher()


@pytest.mark.parametrize("published_at_poll", [3, 5])
def test_watch_polls_again_soon_when_a_signalled_poll_found_nothing(published_at_poll: int) -> None:
    """`watch` woken by a write whose commit is not yet visible looks again soon, at growing
    delays (`RECHECKS_S`), not at its next interval (a minute here): the flake of the end-to-end
    test above, made exact. Published at poll 3: the first recheck finds it; at poll 5 (under
    load the commit comes later than the first recheck), two rechecks find nothing yet."""
    seen = threading.Event()

    class Recording(follow.Stream):
        def emit(self, obj: dict[str, Any], text: str | list[str]) -> None:
            seen.set()

        def note(self, text: str) -> None:
            pass

    stop = follow.Stop()
    store = _PublishedLateStore(published_at_poll=published_at_poll)
    thread = threading.Thread(
        target=follow.watch_store, args=(store, Recording(interval=60.0), stop), daemon=True
    )
    thread.start()
    try:
        assert seen.wait(TIMEOUT), f"the change was not reported; {store.polls} polls"
        assert store.polls == published_at_poll
    finally:
        stop.set()
        thread.join(TIMEOUT)
    assert not thread.is_alive()
