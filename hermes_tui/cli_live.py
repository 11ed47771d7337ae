"""`hermes-tui sessions tail ID [--follow] [--json]` and `hermes-tui sessions watch [--json]`.

Both open the store read-only (tailing never writes) and follow it with the store's change
detection (`SessionDB.change_watcher`: one `PRAGMA data_version` per idle poll, no read
transaction held between polls, so the agents writing to the file are never slowed down). On
Linux they also poll right after any write to the store's files (`SessionDB.write_signal`), so
a commit prints within milliseconds whatever `--interval` is.

`tail` prints a session's messages, then (with `--follow`) each new one as it is committed until
interrupted. When the session is compressed it says `→ continued in <child id> (compression)` and
goes on in the new tip; when the session is deleted it says so and exits 3. `watch` streams new
sessions, messages, ends, continuations and deletions across the whole store. With `--json` every
event is one JSON object per line (`{"type": "message" | "session" | "ended" | "continued" |
"deleted" | "title" | "removed", ...}`; `watch` starts with a `"start"` event). Ctrl-C ends both
with exit code 130 and no traceback.
Every store string is printed through `hermes_tui.safe_text`.

The functions `add_tail_args`/`cmd_tail` and `add_watch_args`/`cmd_watch` are registered by
`cli_sessions`; `python -m hermes_tui.cli_live tail|watch ...` runs them standalone.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hermes_tui.exporting import json_text
from hermes_tui.safe_text import as_text, inert, one_line
from hermes_tui.state import (
    Changes,
    ChangeWatcher,
    SessionDB,
    SessionNotFound,
    StoreError,
    WriteSignal,
    content_text,
    default_db_path,
    tool_call_fields,
)

TAIL_HELP = "Print a session's messages; with --follow, new ones as they are committed."
WATCH_HELP = "Stream new sessions and messages across the whole store as they are committed."
DEFAULT_INTERVAL_S = 0.25
PAGE = 500
EXIT_DELETED = 3  # the followed session was deleted (the `not_found` code of `sessions`)
EXIT_INTERRUPTED = 130
TEXT_LIMIT = 100_000  # characters of one message `tail` prints (JSON: all of it)


def _interval(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid interval {text!r}") from None
    if not 0.01 <= value <= 3600:
        raise argparse.ArgumentTypeError(f"interval must be between 0.01 and 3600 seconds, not {text}")
    return value


def add_tail_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("session", metavar="ID", help="session id or unique id prefix")
    p.add_argument("-f", "--follow", action="store_true", help="keep printing new messages until Ctrl-C")
    p.add_argument(
        "--interval",
        type=_interval,
        default=DEFAULT_INTERVAL_S,
        metavar="SECONDS",
        help=f"poll interval while following (default {DEFAULT_INTERVAL_S})",
    )


def add_watch_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--interval",
        type=_interval,
        default=DEFAULT_INTERVAL_S,
        metavar="SECONDS",
        help=f"poll interval (default {DEFAULT_INTERVAL_S})",
    )


# ---------------------------------------------------------------- output
def _emit(args: argparse.Namespace, obj: dict[str, Any], text: str | list[str]) -> None:
    """One event: a JSON line with --json, else the (already inert) text lines. Flushed at
    once: a follower is read line by line by people and pipes."""
    if getattr(args, "json", False):
        sys.stdout.write(json_text(obj) + "\n")
    else:
        for line in [text] if isinstance(text, str) else text:
            sys.stdout.write(inert(line) + "\n")
    sys.stdout.flush()


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
        text = text[:TEXT_LIMIT] + f" [… {len(text) - TEXT_LIMIT:,} more characters]"
    lines += ["  " + ln for ln in inert(text).splitlines()]
    calls = msg.get("tool_calls") or []
    for call in calls if isinstance(calls, list) else [calls]:
        name, args = tool_call_fields(call) if isinstance(call, dict) else (None, as_text(call))
        lines.append(
            f"  → tool call {one_line(name or 'tool', 80)}"
            f"({one_line(args if isinstance(args, str) else json_text(args), 200)})"
        )
    return lines


def _session_label(row: dict[str, Any]) -> str:
    title = row.get("title")
    return one_line(row.get("id")) + (f" “{one_line(title, 60)}”" if title else "")


# ---------------------------------------------------------------- tail
class _Tail:
    """Prints one session's messages exactly once each (by id), across compressions."""

    def __init__(self, db: SessionDB, args: argparse.Namespace, sid: str):
        self.db, self.args, self.sid, self.last_id = db, args, sid, 0

    def drain(self) -> None:
        """Every message of the current session after the last one printed."""
        while True:
            page = self.db.get_messages_page(
                self.sid, after_id=self.last_id, limit=PAGE, include_inactive=False
            )
            for msg in page:
                _emit(
                    self.args,
                    {"type": "message", "session_id": self.sid, "message": msg},
                    _message_lines(msg),
                )
                self.last_id = max(self.last_id, int(msg["id"]))
            if len(page) < PAGE:
                return

    def continue_in(self, tip: str, watcher: ChangeWatcher | None) -> None:
        self.drain()  # whatever the old session got before it ended
        _emit(
            self.args,
            {"type": "continued", "from": self.sid, "to": tip, "reason": "compression"},
            f"→ continued in {one_line(tip)} (compression)",
        )
        self.sid, self.last_id = tip, 0
        if watcher is not None:
            watcher.care([tip])
        self.drain()

    def compressed_tip(self) -> str | None:
        """The live tip if the current session already ended by compression and has a child."""
        row = self.db.get_session(self.sid)
        if row is None or row.get("end_reason") != "compression":
            return None
        tip = self.db.get_compression_tip(self.sid)
        return tip if tip and tip != self.sid else None


def cmd_tail(db: SessionDB, args: argparse.Namespace) -> int:
    sid = db.resolve_session_id(args.session)
    if sid is None:
        raise SessionNotFound(f"no session with id or unique id prefix {one_line(args.session, 80)!r}")
    tail = _Tail(db, args, sid)
    signal = db.write_signal() if args.follow else None
    try:
        watcher = (
            db.change_watcher([sid]) if args.follow else None
        )  # before the history: nothing falls between
        tail.drain()
        if watcher is None:
            return 0
        while (tip := tail.compressed_tip()) is not None:
            tail.continue_in(tip, watcher)
        while True:
            ch = watcher.poll()
            if tail.sid in ch.deleted:
                _emit(
                    args,
                    {"type": "deleted", "session_id": tail.sid},
                    f"× session {one_line(tail.sid)} was deleted",
                )
                return EXIT_DELETED
            if tail.sid in ch.messages or ch.reset or ch.more:
                tail.drain()
            if tail.sid in ch.continued:
                tail.continue_in(ch.continued[tail.sid], watcher)
                while (tip := tail.compressed_tip()) is not None:
                    tail.continue_in(tip, watcher)
            if not ch.more:
                _pause(signal, args.interval)
    except KeyboardInterrupt:
        sys.stdout.flush()
        return EXIT_INTERRUPTED
    finally:
        if signal is not None:
            signal.close()


def _pause(signal: WriteSignal | None, seconds: float) -> None:
    """Until the next poll: `seconds`, or sooner when the store's files are written."""
    if signal is None:
        time.sleep(seconds)
    else:
        signal.wait(seconds)


# ---------------------------------------------------------------- watch
def _watch_events(db: SessionDB, args: argparse.Namespace, ch: Changes) -> None:
    for row in ch.new_sessions:
        extra = ""
        if row.get("parent_session_id"):
            extra = f" (child of {one_line(row['parent_session_id'])}, {one_line(row.get('edge_kind'))})"
        _emit(
            args,
            {"type": "session", "session": row},
            f"+ session {_session_label(row)} [{one_line(row.get('source'), 30)}]{extra}",
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
                    _emit(
                        args,
                        {"type": "message", "session_id": sid, "message": msg},
                        f"{one_line(sid)} [#{msg['id']}] {one_line(msg.get('role'), 20)}: "
                        f"{one_line(text, 160)}",
                    )
            if not page:
                break
            after = int(page[-1]["id"])
    for sid, title in ch.titles.items():
        _emit(
            args,
            {"type": "title", "session_id": sid, "title": title},
            f"~ session {one_line(sid)} titled “{one_line(title, 60)}”",
        )
    for sid, reason in ch.ended.items():
        _emit(
            args,
            {"type": "ended", "session_id": sid, "end_reason": reason},
            f"- session {one_line(sid)} ended ({one_line(reason, 40) or 'no reason'})",
        )
    for sid, tip in ch.continued.items():
        _emit(
            args,
            {"type": "continued", "from": sid, "to": tip, "reason": "compression"},
            f"→ {one_line(sid)} continued in {one_line(tip)} (compression)",
        )
    for sid in ch.deleted:
        _emit(args, {"type": "deleted", "session_id": sid}, f"× session {one_line(sid)} was deleted")
    if ch.sessions_removed:
        _emit(
            args,
            {"type": "removed", "count": ch.sessions_removed},
            f"× {ch.sessions_removed} other session(s) deleted",
        )


def cmd_watch(db: SessionDB, args: argparse.Namespace) -> int:
    signal = db.write_signal()
    try:
        watcher = db.change_watcher()
        start = {"type": "start", "message_id": watcher.cursor.message_hw}
        if args.json:
            _emit(args, start, "")
        else:
            print(
                f"watching {inert(str(db.db_path))} for new sessions and messages (Ctrl-C to stop)",
                file=sys.stderr,
                flush=True,
            )
        while True:
            ch = watcher.poll()
            if ch:
                _watch_events(db, args, ch)
            if not ch.more:
                _pause(signal, args.interval)
    except KeyboardInterrupt:
        sys.stdout.flush()
        return EXIT_INTERRUPTED
    finally:
        if signal is not None:
            signal.close()


# ---------------------------------------------------------------- standalone
def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m hermes_tui.cli_live", description="Follow a Hermes store."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for name, help_, add in (("tail", TAIL_HELP, add_tail_args), ("watch", WATCH_HELP, add_watch_args)):
        p = sub.add_parser(name, help=help_, description=help_)
        p.add_argument("--db", type=Path, metavar="PATH", default=None)
        p.add_argument("--json", action="store_true")
        p.add_argument("--read-only", action="store_true", help="accepted; following always opens read-only")
        add(p)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run `tail` or `watch` on their own (what `hermes-tui sessions tail|watch` runs)."""
    args = build_parser().parse_args(argv)
    db: SessionDB | None = None
    try:
        db = SessionDB(Path(args.db or default_db_path()).expanduser(), read_only=True)
        return (cmd_tail if args.command == "tail" else cmd_watch)(db, args)
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return 0
    except StoreError as exc:
        code = EXIT_DELETED if isinstance(exc, SessionNotFound) else 1
        if args.json:
            sys.stdout.write(
                json_text({"error": one_line(str(exc)), "kind": "not_found" if code == 3 else "error"}) + "\n"
            )
        else:
            print("error: " + one_line(str(exc)), file=sys.stderr)
        return code
    finally:
        if db is not None:
            db.close()


if __name__ == "__main__":
    raise SystemExit(main())
