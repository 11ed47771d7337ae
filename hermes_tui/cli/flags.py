"""`sessions archive | unarchive | pin | unpin REF…`: reversible flags, so no trash and no question.

Each acts on the session's whole compression lineage and says how many of its sessions changed.
Every reference is resolved before anything is written (`PROFILE:ID` across stores); then each
store's sessions are changed on its own thread. With several stores a store that fails is
reported and the others are changed; a store without the column (pin on hermes-agent 0.19.0's
v22) refuses with the reason (exit 4).
"""

from __future__ import annotations

import argparse
from typing import Any

from hermes_tui.cli.command import Command, always
from hermes_tui.cli.output import emit_json, ident, out, s
from hermes_tui.cli.parser import add_profile_options
from hermes_tui.cli.references import Target, resolve_all
from hermes_tui.cli.stores import Stores, on
from hermes_tui.formatting import plural
from hermes_tui.state import SessionDB

#: The reversible flag verbs: (flag, value, past tense, the state "already" names, help).
FLAG_VERBS: dict[str, tuple[str, bool, str, str, str]] = {
    "archive": (
        "archived",
        True,
        "Archived",
        "archived",
        "Archive sessions with their compression lineage: out of Hermes' lists, nothing deleted.",
    ),
    "unarchive": (
        "archived",
        False,
        "Unarchived",
        "not archived",
        "Bring archived sessions (and their compression lineage) back into the lists.",
    ),
    "pin": (
        "pinned",
        True,
        "Pinned",
        "pinned",
        "Pin sessions with their compression lineage: kept by prune, listed first.",
    ),
    "unpin": ("pinned", False, "Unpinned", "not pinned", "Unpin sessions (and their compression lineage)."),
}


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("sessions", metavar="ID", nargs="+", help="session id, unique id prefix, or exact title")
    add_profile_options(p)


def _set_flags(db: SessionDB, flag: str, value: bool, targets: list[Target]) -> dict[str, Any]:
    """`set_session_flags` of the resolved `targets`, each entry with its title (for the lines)."""
    result = db.set_session_flags([t.id for t in targets], flag, value)
    titles = {t.id: t.title for t in targets}
    for entry in result["sessions"]:
        entry["title"] = titles.get(entry["id"])
    return result


def flag_line(verb: str, entry: dict[str, Any], profile: str | None = None) -> str:
    """What one archive/unarchive/pin/unpin did to a session and the rows of its lineage."""
    _flag, _value, done, state, _help = FLAG_VERBS[verb]
    who = (f"{s(profile)}:" if profile else "") + ident(entry)
    if not entry["found"]:  # removed between the resolution and the write
        return f"{who}: no longer exists; nothing was changed."
    n, changed = len(entry["lineage"]), len(entry["changed"])
    if not changed:
        line = f"{who}: already {state}" + (
            f" (all {n} sessions of its compression lineage)" if n > 1 else ""
        )
    else:
        line = f"{done} {who}" + (
            f" with its compression lineage ({changed} of {n} sessions changed)" if n > 1 else ""
        )
    if entry["unhidden"]:
        line += f"; {plural(len(entry['unhidden']), 'hidden session')} made visible"
    if entry["bot_chat"]:
        line += "; the bot's canonical Bot Chat stays hidden"
    return line + "."


def run(stores: Stores, args: argparse.Namespace) -> int:
    flag, value, _done, _state, _help = FLAG_VERBS[args.command]
    by_store = resolve_all(stores, args.sessions)
    calls = {p: on(_set_flags, flag, value, list(targets.values())) for p, targets in by_store.items()}
    results, failures = stores.each(calls)  # each store on its own thread
    entries = [{"profile": p, **e} for p, r in results.items() for e in r["sessions"]]
    if args.json:
        emit_json(
            {
                "action": args.command,
                "flag": flag,
                "value": value,
                "sessions": entries,
                "rows": sum(r["rows"] for r in results.values()),
                "changed": sum(r["changed"] for r in results.values()),
                "errors": stores.errors(),
            }
        )
    else:
        for entry in entries:
            out(flag_line(args.command, entry, entry["profile"] if stores.several else None))
    if failures:
        raise stores.failure(args.command, failures, "changed" if results else None)
    return 0


COMMANDS = tuple(Command(verb, spec[4], arguments, run, writes=always) for verb, spec in FLAG_VERBS.items())
