"""`sessions fork REF --at MESSAGE_ID|-N [--title T]`: a new session continuing REF from one of
its messages (the store's `fork_session`, shaped as Hermes' `/branch`), for `hermes --resume`.

`--at` is a message id of that session, or `-N`: the N-th message from the end of its live
conversation (`-1` the last), so a script need not know ids. Prints the new id alone on stdout
(a summary on stderr); `--json`: `{"id", "parent", "messages", "title", "profile", "errors"}`.
One store: `--db`, the current profile's, or `--profile NAME`.
"""

from __future__ import annotations

import argparse
from typing import Any

from hermes_tui.cli.command import Command, always
from hermes_tui.cli.errors import CliError, UsageError
from hermes_tui.cli.output import emit_json, err, out, s
from hermes_tui.cli.parser import add_profile_options
from hermes_tui.cli.references import resolve
from hermes_tui.cli.stores import Stores
from hermes_tui.state import SessionDB


def message_ref(text: str) -> int:
    """`--at`'s value: a message id (> 0) or `-N` (N ≥ 1 from the end)."""
    try:
        value = int(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a message id nor -N: {text!r}") from None
    if value == 0:
        raise argparse.ArgumentTypeError("0 is no message: give a message id or -N (-1 is the last)")
    return value


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("session", metavar="REF", help="session id, unique id prefix, or exact title")
    p.add_argument(
        "--at",
        required=True,
        type=message_ref,
        metavar="MESSAGE_ID|-N",
        help="the last message the fork keeps: its id, or -N (the N-th from the end; -1 the last)",
    )
    p.add_argument(
        "--title", metavar="T", help="the fork's title (default: the next in the source's lineage)"
    )
    add_profile_options(p)


def until_id(db: SessionDB, sid: str, at: int) -> int:
    """The message id `--at` names: itself when positive, else counted from the end of the
    session's live conversation."""
    if at > 0:
        return at
    ids = db.get_active_message_ids(sid)
    if -at > len(ids):
        raise UsageError(f"--at {at}: the session has {len(ids)} message{'s' * (len(ids) != 1)}")
    return ids[at]


def _fork(db: SessionDB, sid: str, at: int, title: str | None) -> dict[str, Any]:
    """Resolve `--at`, fork (on the store's thread), and read back what was made."""
    if title is not None and not title.strip():
        raise CliError("the title is empty (leave --title out for the automatic one)", "invalid")
    until = until_id(db, sid, at)
    new_id = db.fork_session(sid, until, title=title)
    row = db.get_session(new_id) or {}
    return {
        "id": new_id,
        "parent": sid,
        "at": until,
        "messages": row.get("message_count"),
        "title": row.get("title"),
    }


def run(stores: Stores, args: argparse.Namespace) -> int:
    profile, target = resolve(stores, args.session)
    done = stores.call(profile, _fork, target.id, args.at, args.title)
    if args.json:
        emit_json({**done, "profile": profile, "errors": stores.errors()})
        return 0
    out(s(done["id"]))
    title = f" “{s(done['title'])}”" if done["title"] else ""
    err(
        f"Forked {s(done['parent'])} at message {done['at']}: {done['messages']} messages copied to "
        f"{s(done['id'])}{title}. Resume it with: hermes --resume {s(done['id'])}"
    )
    return 0


COMMANDS = (
    Command(
        "fork",
        "Start a new session from one of a session's messages (as Hermes' /branch).",
        arguments,
        run,
        "one",
        always,
    ),
)
