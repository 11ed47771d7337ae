"""`sessions trash list | show | restore | empty`: what `delete` and `prune` moved to a store's trash.

One store (`--db PATH`, or the current profile's). Restore brings an entry's sessions back and
reports each conflict (an id that exists again, a title now taken) without overwriting anything
live (exit 0). A damaged entry, or a trash folder that was not read, is one `warning:` line and
an item of the JSON `skipped` list; `show`/`restore` of a damaged entry fail with the reason.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence
from typing import Any

from hermes_tui.cli.command import Command
from hermes_tui.cli.confirm import confirm
from hermes_tui.cli.errors import CliError, UsageError
from hermes_tui.cli.output import emit_json, err, ident, out, s, short_time, table
from hermes_tui.cli.parser import add_retention_options, add_subcommands, add_yes, parse_duration
from hermes_tui.cli.references import CANDIDATES_SHOWN
from hermes_tui.cli.stores import Stores
from hermes_tui.exporting import iso
from hermes_tui.formatting import format_size
from hermes_tui.safe_text import one_line
from hermes_tui.state import SessionDB

WRITE_ACTIONS = frozenset({"restore", "empty"})


def arguments(p: argparse.ArgumentParser) -> None:
    add = add_subcommands(p, "trash_command", "ACTION")
    add("list", "Trash entries, newest first: when, what, how many, size, status.")
    tp = add("show", "One entry: its sessions (id, title) and counts.")
    tp.add_argument("entry", metavar="ENTRY", help="entry id or a unique prefix of one")
    tp = add("restore", "Bring an entry's sessions back (conflicts are reported, never overwritten).")
    tp.add_argument("entry", metavar="ENTRY", help="entry id or a unique prefix of one")
    tp = add("empty", "Remove entries for good (all, or --older-than AGE, or --retention).")
    tp.add_argument("--older-than", type=parse_duration, metavar="AGE", help="only entries older than AGE")
    tp.add_argument(
        "--retention", action="store_true", help="apply the retention only (--trash-keep, --trash-max-mb)"
    )
    add_retention_options(tp)
    add_yes(tp)


def writes(args: argparse.Namespace) -> bool:
    return getattr(args, "trash_command", None) in WRITE_ACTIONS


def _warn_skipped(skipped: Sequence[dict[str, Any]]) -> None:
    for item in skipped:
        if item["id"] is None:
            err(f"warning: trash folder {s(item['path'])} skipped: {s(item['reason'])}")
        else:
            err(f"warning: trash entry {s(item['id'])} is damaged and was skipped: {s(item['reason'])}")


def _entry(stores: Stores, profile: str, ref: str) -> tuple[str, dict[str, Any]]:
    """The entry id `ref` names (an id, or a unique prefix of one) and the trash's report; the
    other damaged entries are warned about (the named one's own error says why)."""
    report = stores.call(profile, SessionDB.trash_report)
    entries = report["entries"]
    found = [e for e in entries if e["id"] == ref] or [e for e in entries if ref and e["id"].startswith(ref)]
    if not found:
        raise CliError(
            f"no trash entry {one_line(ref)!r} for {one_line(str(stores.path(profile)))}"
            f" (see: hermes-tui sessions trash list)",
            "not_found",
        )
    if len(found) > 1:
        shown = ", ".join(e["id"] for e in found[:CANDIDATES_SHOWN])
        more = f" and {len(found) - CANDIDATES_SHOWN} more" if len(found) > CANDIDATES_SHOWN else ""
        raise CliError(f"{one_line(ref)!r} matches {len(found)} trash entries: {shown}{more}", "ambiguous")
    target = found[0]["id"]
    _warn_skipped([x for x in report["skipped"] if x["id"] != target])
    return target, report


def run_list(stores: Stores, args: argparse.Namespace) -> int:
    report = stores.call(stores.only(), SessionDB.trash_report)
    _warn_skipped(report["skipped"])
    entries = report["entries"]
    if args.json:
        emit_json(report)
        return 0
    if not entries:
        out("The trash is empty.")
        return 0
    rows = [
        [
            e["id"],
            short_time(e["created_at"]),
            e["what"] or "-",
            "-" if e["status"] == "damaged" else e["sessions"],
            "-" if e["status"] == "damaged" else e["messages"],
            format_size(e["bytes"]),
            e["status"],
            s(e.get("reason")) or ", ".join(one_line(t) for t in e["titles"] if t),
        ]
        for e in entries
    ]
    out(
        table(
            ["ENTRY", "WHEN", "WHAT", "SESSIONS", "MESSAGES", "SIZE", "STATUS", "TITLES"],
            rows,
            right=(3, 4, 5),
            limits={7: 50},
        )
    )
    return 0


def _on_entry(stores: Stores, args: argparse.Namespace, action: Callable[[SessionDB, str], Any]) -> Any:
    """`action(db, entry id)` on the entry `args.entry` names; with --json its result is printed
    (with the trash's `skipped` list) and None returned."""
    profile = stores.only()
    target, report = _entry(stores, profile, args.entry)
    result = stores.call(profile, action, target)
    if args.json:
        emit_json({**result, "skipped": report["skipped"]})
        return None
    return result


def run_show(stores: Stores, args: argparse.Namespace) -> int:
    entry = _on_entry(stores, args, SessionDB.trash_entry)
    if entry is None:
        return 0
    deleted = entry.get("deleted_ids")
    gone = set(deleted) if isinstance(deleted, list) else None
    out(f"entry:    {entry['id']}")
    out(f"when:     {iso(entry.get('created_at'))}")
    out(f"what:     {s(entry.get('what'))}   status: {s(entry.get('status'))}")
    counts = entry.get("counts") or {}
    out(
        f"rows:     {', '.join(f'{s(k)} {int(v)}' for k, v in counts.items())}   size: "
        f"{format_size(entry.get('bytes'))}"
    )
    out(f"store:    {s(entry.get('store'))}")
    out(f"sessions ({len(entry.get('sessions') or [])}):")
    for srow in entry.get("sessions") or []:
        mark = " " if gone is None or srow.get("id") in gone else "="
        out(f"  {mark} {ident(srow)}")
    if gone is not None and len(gone) < len(entry.get("sessions") or []):
        out("  (= kept by the delete: not in the trash's restore)")
    if entry.get("status") == "interrupted":
        out("The delete was interrupted: restore brings back the sessions it removed.")
    return 0


def run_restore(stores: Stores, args: argparse.Namespace) -> int:
    result = _on_entry(stores, args, SessionDB.restore_trash)
    if result is None:
        return 0
    n = result["restored"]
    out(
        f"Restored {n} session{'s' if n != 1 else ''} ({result['messages']} messages) from {result['entry']}."
    )
    for r in result["sessions"]:
        if r["status"] == "conflict":
            out(f"  ! {s(r['id'])}: not restored: {s(r.get('reason'))}")
        elif r["status"] == "present":
            out(f"  = {s(r['id'])}: {s(r.get('reason'))}")
        for note in r.get("notes") or []:
            out(f"  ~ {s(r['id'])}: {s(note)}")
    for o in result.get("orphans") or []:
        if o["status"] != "relinked":
            out(
                f"  ~ {s(o['id'])}: parent link to {s(o['parent_session_id'])} not restored: "
                f"{s(o.get('reason'))}"
            )
    if result["conflicts"]:
        c = result["conflicts"]
        out(
            f"{c} session{'s' if c != 1 else ''} not restored (conflicts above);"
            " nothing live was overwritten."
        )
    return 0


def _retention(db: SessionDB, keep_s: float, max_bytes: int) -> dict[str, Any]:
    db.trash_retention_s = keep_s
    db.trash_max_bytes = max_bytes
    return db.apply_trash_retention()


def run_empty(stores: Stores, args: argparse.Namespace) -> int:
    profile = stores.only()
    if args.retention:
        if args.older_than is not None:
            raise UsageError("--retention and --older-than cannot be combined")
        result = stores.call(profile, _retention, args.trash_keep, args.trash_max_mb)
        _warn_skipped(result["skipped"])
    else:
        report = stores.call(profile, SessionDB.trash_report)
        folders = [x for x in report["skipped"] if x["id"] is None]
        _warn_skipped(folders)  # damaged entries are emptied like the others
        now = time.time()
        doomed = [
            e
            for e in report["entries"]
            if args.older_than is None or now - (e["created_at"] or now) >= args.older_than
        ]
        if not doomed:
            result = {"removed": [], "bytes": 0, "skipped": folders}
        else:
            age = f" older than {args.older_than / 86400:g} days" if args.older_than is not None else ""
            question = f"Remove {len(doomed)} trash entr{'ies' if len(doomed) != 1 else 'y'}{age} for good?"
            if not confirm(args.yes, question):
                raise CliError("not confirmed: the trash was not emptied", "refused")
            result = stores.call(profile, SessionDB.empty_trash, older_than_s=args.older_than)
            _warn_skipped([x for x in result["skipped"] if x["id"] is not None])  # not removed
    if args.json:
        emit_json(result)
    else:
        n = len(result["removed"])
        out(f"Removed {n} trash entr{'ies' if n != 1 else 'y'} ({format_size(result['bytes'])}).")
    return 0


ACTIONS: dict[str, Callable[[Stores, argparse.Namespace], int]] = {
    "list": run_list,
    "show": run_show,
    "restore": run_restore,
    "empty": run_empty,
}


def run(stores: Stores, args: argparse.Namespace) -> int:
    return ACTIONS[args.trash_command](stores, args)


COMMANDS = (
    Command(
        "trash",
        "What delete and prune moved to the trash: list, show, restore or empty it.",
        arguments,
        run,
        "file",
        writes,
    ),
)
