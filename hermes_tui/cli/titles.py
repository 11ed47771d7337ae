"""`sessions rename REF TITLE…` (or `--clear`): a session's title, checked as Hermes checks it.

A title held by another session is refused (exit 8) naming that session and where it is from;
a compression continuation may take its ancestor's title (`transfer_from`). One store: `--db`,
the current profile's, or `--profile NAME`.
"""

from __future__ import annotations

import argparse
from typing import Any

from hermes_tui.cli.command import Command, always
from hermes_tui.cli.errors import CliError, UsageError
from hermes_tui.cli.output import emit_json, ident, out, s
from hermes_tui.cli.parser import add_profile_options
from hermes_tui.cli.references import resolve
from hermes_tui.cli.stores import Stores
from hermes_tui.exporting import iso
from hermes_tui.state import SessionDB


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("session", metavar="ID", help="session id, unique id prefix, or exact title")
    p.add_argument("title", metavar="TITLE", nargs="*", help="the new title (several words are joined)")
    p.add_argument("--clear", action="store_true", help="remove the title (instead of giving one)")
    add_profile_options(p)


def new_title(args: argparse.Namespace) -> str:
    """The new title, or '' with --clear; a missing or blank title is a usage error, so a
    slip (`rename ID` alone, an empty variable) never clears a title."""
    title = " ".join(args.title)
    if args.clear:
        if title:
            raise UsageError("give either a new title or --clear, not both")
        return ""
    if not args.title:
        raise UsageError("rename needs the new title (to remove the title, pass --clear)")
    if not title.strip():
        raise UsageError("the new title is empty (to remove the title, pass --clear)")
    return title


def _rename(db: SessionDB, sid: str, title: str) -> dict[str, Any]:
    """Check, then set the title (on the store's thread): the store's check, and the title now."""
    check = db.check_title(sid, title)
    if not check["ok"]:
        msg = check.get("error") or "invalid title"
        if check.get("holder"):  # the store's message names the holder; add where it is from
            holder = db.get_session(check["holder"]) or {"id": check["holder"]}
            msg += f" ({s(holder.get('source')) or '?'}, started {s(iso(holder.get('started_at'))) or '?'})"
        raise CliError(msg, "invalid")
    db.set_session_title(sid, title)
    return {"title": db.get_session_title(sid), "transfer_from": check.get("transfer_from")}


def run(stores: Stores, args: argparse.Namespace) -> int:
    title = new_title(args)
    profile, target = resolve(stores, args.session)
    done = stores.call(profile, _rename, target.id, title)
    sid, new = target.id, done["title"]
    if args.json:
        emit_json({"profile": profile, "id": sid, **done, "errors": stores.errors()})
        return 0
    if new is None:
        out(f"Cleared the title of {ident({'id': sid, 'title': target.title})}.")
    else:
        out(f"Renamed {s(sid)} to “{s(new)}”" + (f" (was “{s(target.title)}”)." if target.title else "."))
    if done["transfer_from"]:
        out(f"(the title moved from its compression ancestor {s(done['transfer_from'])})")
    return 0


COMMANDS = (Command("rename", "Set a session's title (--clear removes it).", arguments, run, "one", always),)
