"""Following a store as agents write to it: the engine of `sessions tail` and `sessions watch`.

Both open the store read-only (following never writes) and follow it with the store's change
detection (`SessionDB.change_watcher`: one `PRAGMA data_version` per idle poll, no read
transaction held between polls, so the agents writing to the file are never slowed down). On
Linux they also poll right after any write to the store's files (`SessionDB.write_signal`), so
a commit prints within milliseconds whatever `--interval` is.

`tail_session` prints a session's messages, then (following) each new one as it is committed
until stopped. When the session is compressed it says `→ continued in <child id> (compression)`
and goes on in the new tip; when the session is deleted it says so and ends with 3.
`watch_store` streams new sessions, messages, titles, ends, continuations and deletions across
the whole store. With `--json` every event is one JSON object per line carrying its `profile`
(`{"type": "message" | "session" | "ended" | "continued" | "deleted" | "title" | "removed" |
"error", ...}`; `watch` starts with a `"start"` event).

Each store is followed on its own thread (`run_followers`, with `Federation.submit`); events of
different stores never interleave within an event, and Ctrl-C stops them all (130, no
traceback). Every store string is printed through `hermes_tui.safe_text`.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from hermes_tui.cli.output import tool_call_line, tool_calls_of
from hermes_tui.exporting import json_text
from hermes_tui.formatting import plural
from hermes_tui.safe_text import inert, one_line
from hermes_tui.state import (
    Changes,
    ChangeWatcher,
    Recheck,
    SessionDB,
    WriteSignal,
    content_text,
)

DEFAULT_INTERVAL_S = 0.25
PAGE = 500
EXIT_DELETED = 3  # the followed session was deleted (the `not_found` code of `sessions`)
EXIT_INTERRUPTED = 130
TEXT_LIMIT = 100_000  # characters of one message `tail` prints (JSON: all of it)


# ---------------------------------------------------------------- output
_OUTPUT = threading.Lock()  # one event at a time: several stores' followers share stdout


@dataclass(frozen=True)
class Stream:
    """Where one follower's events go. `profile`: the store's profile (every JSON event carries
    it); `label`: several stores are open, so text lines name it (`PROFILE:ID`)."""

    json: bool = False
    interval: float = DEFAULT_INTERVAL_S
    profile: str | None = None
    label: bool = False

    @classmethod
    def of(cls, args: argparse.Namespace, profile: str | None = None, label: bool = False) -> Stream:
        return cls(bool(getattr(args, "json", False)), args.interval, profile, label)

    def ref(self, sid: Any) -> str:
        """A session id as text lines show it: `PROFILE:ID` when several stores stream."""
        return f"{one_line(self.profile)}:{one_line(sid)}" if self.label else one_line(sid)

    def emit(self, obj: dict[str, Any], text: str | list[str]) -> None:
        """One event: a JSON line with --json, else the (already inert) text lines. Flushed at
        once: a follower is read line by line by people and pipes."""
        if self.json:
            lines = [json_text(obj if self.profile is None else {**obj, "profile": self.profile})]
        else:
            lines = [inert(line) for line in ([text] if isinstance(text, str) else text)]
        with _OUTPUT:
            for line in lines:
                sys.stdout.write(line + "\n")
            sys.stdout.flush()

    def note(self, text: str) -> None:
        """A line for people (stderr), never part of the stream."""
        with _OUTPUT:
            print(inert(text), file=sys.stderr, flush=True)


class Stop:
    """Ctrl-C for followers on other threads: `set()` wakes every pause at once (a pipe each
    pause also selects on, beside the store's write signal)."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._read, self._write = os.pipe()

    def set(self) -> None:
        if not self._event.is_set():
            self._event.set()
            os.write(self._write, b"x")

    def is_set(self) -> bool:
        return self._event.is_set()

    def fileno(self) -> int:
        return self._read

    def wait(self, seconds: float) -> None:
        self._event.wait(seconds)

    def close(self) -> None:
        os.close(self._read)
        os.close(self._write)


def _time(ts: Any) -> str:
    try:
        return datetime.fromtimestamp(float(ts), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    except (TypeError, ValueError, OverflowError, OSError):
        return one_line(ts, 24) or "-"


def _message_lines(msg: dict[str, Any]) -> list[str]:
    head = f"[#{one_line(msg.get('id'))}] {one_line(msg.get('role'), 40)}"
    if msg.get("tool_name"):
        head += f" ({one_line(msg['tool_name'], 80)})"
    lines = [f"{head}  {_time(msg.get('timestamp'))}"]
    text = content_text(msg.get("content"))
    if len(text) > TEXT_LIMIT:
        text = text[:TEXT_LIMIT] + f" [… {plural(len(text) - TEXT_LIMIT, 'more character')}]"
    lines += ["  " + ln for ln in inert(text).splitlines()]
    lines += [tool_call_line(call) for call in tool_calls_of(msg.get("tool_calls"))]
    return lines


def _session_label(stream: Stream, row: dict[str, Any]) -> str:
    title = row.get("title")
    return stream.ref(row.get("id")) + (f" “{one_line(title, 60)}”" if title else "")


# ---------------------------------------------------------------- tail
class _Tail:
    """Prints one session's messages exactly once each (by id), across compressions."""

    def __init__(self, db: SessionDB, stream: Stream, sid: str):
        self.db, self.stream, self.sid, self.last_id = db, stream, sid, 0

    def drain(self) -> None:
        """Every message of the current session after the last one printed."""
        while True:
            page = self.db.get_messages_page(
                self.sid, after_id=self.last_id, limit=PAGE, include_inactive=False
            )
            for msg in page:
                self.stream.emit(
                    {"type": "message", "session_id": self.sid, "message": msg}, _message_lines(msg)
                )
                self.last_id = max(self.last_id, int(msg["id"]))
            if len(page) < PAGE:
                return

    def continue_in(self, tip: str, watcher: ChangeWatcher | None) -> None:
        self.drain()  # whatever the old session got before it ended
        self.stream.emit(
            {"type": "continued", "from": self.sid, "to": tip, "reason": "compression"},
            f"→ continued in {one_line(tip)} (compression)",
        )
        self.sid, self.last_id = tip, 0
        if watcher is not None:
            watcher.care([tip])
        self.drain()

    def changed(self, ch: Changes, watcher: ChangeWatcher) -> int | None:
        """Print what `ch` brings to the followed session; `EXIT_DELETED` once it is deleted."""
        if self.sid in ch.deleted:
            self.stream.emit(
                {"type": "deleted", "session_id": self.sid}, f"× session {one_line(self.sid)} was deleted"
            )
            return EXIT_DELETED
        if self.sid in ch.messages or ch.reset or ch.more:
            self.drain()
        if self.sid in ch.continued:
            self.continue_in(ch.continued[self.sid], watcher)
            while (tip := self.compressed_tip()) is not None:
                self.continue_in(tip, watcher)
        return None

    def compressed_tip(self) -> str | None:
        """The live tip if the current session already ended by compression and has a child."""
        row = self.db.get_session(self.sid)
        if row is None or row.get("end_reason") != "compression":
            return None
        tip = self.db.get_compression_tip(self.sid)
        return tip if tip and tip != self.sid else None


def tail_session(db: SessionDB, stream: Stream, sid: str, follow: bool, stop: Stop | None = None) -> int:
    """Print session `sid` (already resolved), then with `follow` each new message until Ctrl-C
    (130), `stop` (130) or its deletion (3)."""

    def run(signal: WriteSignal | None) -> int:
        tail = _Tail(db, stream, sid)
        watcher = db.change_watcher([sid]) if follow else None  # before the history: nothing falls between
        tail.drain()
        if watcher is None:
            return 0
        while (tip := tail.compressed_tip()) is not None:
            tail.continue_in(tip, watcher)
        return _follow(watcher, signal, stream, stop, lambda ch: tail.changed(ch, watcher))

    return _interruptible(db.write_signal() if follow else None, run)


def _interruptible(signal: WriteSignal | None, run: Callable[[WriteSignal | None], int]) -> int:
    """`run(signal)`, whose Ctrl-C is exit code 130 (no traceback); the signal closed after."""
    try:
        return run(signal)
    except KeyboardInterrupt:
        sys.stdout.flush()
        return EXIT_INTERRUPTED
    finally:
        if signal is not None:
            signal.close()


def _follow(
    watcher: ChangeWatcher,
    signal: WriteSignal | None,
    stream: Stream,
    stop: Stop | None,
    changed: Callable[[Changes], int | None],
) -> int:
    """Poll `watcher` and hand each change to `changed` until it returns an exit code, or until
    `stop` (130). Between polls it pauses the stream's interval, or less when the store's files
    are written."""
    woken = False
    recheck = Recheck()  # a poll a write woke that found nothing looks again soon
    while stop is None or not stop.is_set():
        ch = watcher.poll()
        code = changed(ch)
        if code is not None:
            return code
        if not ch.more:
            woken = _pause(signal, recheck.pause(woken, bool(ch), stream.interval), stop)
    return EXIT_INTERRUPTED


def _pause(signal: WriteSignal | None, seconds: float, stop: Stop | None = None) -> bool:
    """Until the next poll: `seconds`, or sooner when the store's files are written (True) or
    `stop` is set."""
    if signal is not None:
        return signal.wait(seconds, also=stop)
    if stop is not None:
        stop.wait(seconds)
    else:
        time.sleep(seconds)
    return False


# ---------------------------------------------------------------- watch
def _watch_events(db: SessionDB, stream: Stream, ch: Changes) -> None:
    for row in ch.new_sessions:
        extra = ""
        if row.get("parent_session_id"):
            extra = f" (child of {stream.ref(row['parent_session_id'])}, {one_line(row.get('edge_kind'))})"
        stream.emit(
            {"type": "session", "session": row},
            f"+ session {_session_label(stream, row)} [{one_line(row.get('source'), 30)}]{extra}",
        )
    for sid, ids in ch.messages.items():
        wanted = set(ids)
        after = min(ids) - 1
        while wanted:
            page = db.get_messages_page(
                sid, after_id=after, limit=min(PAGE, len(wanted)), include_inactive=True
            )
            for msg in page:
                if msg["id"] in wanted:
                    wanted.discard(msg["id"])
                    text = content_text(msg.get("content")) or (
                        f"→ tool call {one_line(msg.get('tool_calls'), 100)}" if msg.get("tool_calls") else ""
                    )
                    stream.emit(
                        {"type": "message", "session_id": sid, "message": msg},
                        f"{stream.ref(sid)} [#{msg['id']}] {one_line(msg.get('role'), 20)}: "
                        f"{one_line(text, 160)}",
                    )
            if not page:
                break
            after = int(page[-1]["id"])
    for sid, title in ch.titles.items():
        stream.emit(
            {"type": "title", "session_id": sid, "title": title},
            f"~ session {stream.ref(sid)} titled “{one_line(title, 60)}”",
        )
    for sid, reason in ch.ended.items():
        stream.emit(
            {"type": "ended", "session_id": sid, "end_reason": reason},
            f"- session {stream.ref(sid)} ended ({one_line(reason, 40) or 'no reason'})",
        )
    for sid, tip in ch.continued.items():
        stream.emit(
            {"type": "continued", "from": sid, "to": tip, "reason": "compression"},
            f"→ {stream.ref(sid)} continued in {stream.ref(tip)} (compression)",
        )
    for sid in ch.deleted:
        stream.emit({"type": "deleted", "session_id": sid}, f"× session {stream.ref(sid)} was deleted")
    if ch.sessions_removed:
        where = f" in {one_line(stream.profile)}" if stream.label else ""
        stream.emit(
            {"type": "removed", "count": ch.sessions_removed},
            f"× {plural(ch.sessions_removed, 'other session')} deleted{where}",
        )


def watch_store(db: SessionDB, stream: Stream, stop: Stop | None = None) -> int:
    """Stream the store's changes until Ctrl-C or `stop` (130)."""

    def run(signal: WriteSignal | None) -> int:
        watcher = db.change_watcher()
        if stream.json:
            stream.emit({"type": "start", "message_id": watcher.cursor.message_hw}, "")
        else:
            where = f"{one_line(stream.profile)} ({db.db_path})" if stream.label else db.db_path
            stream.note(f"watching {where} for new sessions and messages (Ctrl-C to stop)")
        return _follow(
            watcher, signal, stream, stop, lambda ch: _watch_events(db, stream, ch) if ch else None
        )

    return _interruptible(db.write_signal(), run)


# ---------------------------------------------------------------- several stores
def run_followers(
    followers: dict[str, Callable[[Stop], Future[int]]], failed: Callable[[str, BaseException], None]
) -> int:
    """Start one follower per store (`followers[profile](stop)` submits it to the store's thread)
    and wait until they end or Ctrl-C (then `stop` ends them all: 130). A store whose follower
    raises goes to `failed` and the others go on; the code is the first follower's own (tail: 0
    or 3), 1 when every one of them failed."""
    stop = Stop()
    running: dict[Future[int], str] = {}
    codes: list[int] = []
    try:
        for profile, start in followers.items():
            running[start(stop)] = profile
        try:
            while running:
                done, _ = wait(list(running), return_when=FIRST_COMPLETED)
                for fut in done:
                    profile = running.pop(fut)
                    try:
                        codes.append(fut.result())
                    except Exception as exc:  # noqa: BLE001 - one store's failure, the others go on
                        failed(profile, exc)
        except KeyboardInterrupt:
            stop.set()
            wait(list(running))
            sys.stdout.flush()
            return EXIT_INTERRUPTED
    finally:
        stop.set()
        wait(list(running))
        stop.close()
    return codes[0] if codes else 1
