"""`sessions delete REF…` and `sessions prune [filters]`: review, confirm, then remove exactly
what was reviewed, through the trash.

Both show a plan first (the sessions, the delegate subagents that go with them, what is kept
back and why), ask (or take `--yes`), and then delete exactly the reviewed ids in batches
(`cascade_delegates=False`: a subagent created after the review is not swept along). What they
remove goes to the store's trash first (`SessionDB.trash_sessions`) and the entry is printed
with the command that restores it; `--no-trash` deletes for good. `prune` runs on every selected
store (`--all`, `--profile NAME`), each in its own trash; `delete` changes one store.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from hermes_tui.cli.command import Command, always
from hermes_tui.cli.confirm import confirm
from hermes_tui.cli.errors import CliError
from hermes_tui.cli.output import cell, emit_json, ident, out, s, short_time
from hermes_tui.cli.parser import (
    add_profile_options,
    add_retention_options,
    add_yes,
    non_negative_float,
    non_negative_int,
    parse_duration,
    parse_iso,
)
from hermes_tui.cli.references import Target, resolve, resolve_all
from hermes_tui.cli.stores import Stores, on
from hermes_tui.exporting import iso, to_jsonl, write_export
from hermes_tui.formatting import format_size, plural
from hermes_tui.safe_text import one_line
from hermes_tui.state import BUSY_REASON, SessionDB

DEFAULT_PRUNE_DAYS = 90
#: `prune`'s range filters: each is a `--min-NAME`/`--max-NAME` option and the store's `min_NAME`/`max_NAME`.
PRUNE_RANGES: tuple[tuple[str, Callable[[str], Any]], ...] = (
    ("messages", non_negative_int),
    ("tokens", non_negative_int),
    ("cost", non_negative_float),
    ("tool_calls", non_negative_int),
)
#: One store's reviewed removal: the plan, the ids it deletes (delegate children included).
Review = tuple[dict[str, Any], list[str]]


# ---------------------------------------------------------------- options
def _removal_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dry-run", action="store_true", help="show what would be deleted and stop")
    add_yes(p)
    p.add_argument(
        "--no-trash",
        action="store_true",
        help="delete for good: write no trash entry (the default keeps one to restore)",
    )
    add_retention_options(p)


def prune_arguments(p: argparse.ArgumentParser) -> None:
    add_profile_options(p)
    p.add_argument(
        "--older-than",
        type=parse_duration,
        metavar="AGE",
        help="last active more than AGE ago (5h, 2d, 1w, or days); a store without activity times"
        " (hermes-agent 0.19.0's) counts from the start",
    )
    p.add_argument(
        "--newer-than",
        type=parse_duration,
        metavar="AGE",
        help="last active less than AGE ago (without activity times: started)",
    )
    p.add_argument("--before", type=parse_iso, metavar="DATE", help="started before DATE (ISO, UTC)")
    p.add_argument("--after", type=parse_iso, metavar="DATE", help="started at/after DATE (ISO, UTC)")
    p.add_argument("--source")
    p.add_argument(
        "--title", metavar="ID", help="only this session: its id, a unique id prefix, or its exact title"
    )
    p.add_argument("--title-contains", metavar="TEXT", help="title contains TEXT (case-insensitive)")
    p.add_argument("--end-reason")
    p.add_argument("--model", help="model contains (case-insensitive)")
    for name, typ in PRUNE_RANGES:
        for bound in ("min", "max"):
            p.add_argument(f"--{bound}-{name.replace('_', '-')}", type=typ)
    p.add_argument("--include-archived", action="store_true", help="archived sessions are candidates too")
    p.add_argument(
        "--export-before", type=Path, metavar="PATH", help="write a JSONL export of the sessions first"
    )
    p.add_argument("--force", action="store_true", help="let --export-before replace an existing file")
    _removal_options(p)


def delete_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("sessions", metavar="ID", nargs="+", help="session id, unique id prefix, or exact title")
    add_profile_options(p)
    _removal_options(p)


# ---------------------------------------------------------------- prune's plan
def prune_filters(
    args: argparse.Namespace, by_activity: bool = False
) -> tuple[float | None, str | None, dict[str, Any], bool]:
    """The store's prune filters. `--older-than`/`--newer-than` bound the last activity where the
    store has `last_activity_at` (`by_activity`, as today's Hermes' own prune reads them), the
    start time on older stores; `--before`/`--after` always bound the start time."""
    now = time.time()
    f: dict[str, Any] = {}
    # A duration ago and a date may bound one side of the same time: the stricter one wins.
    ages = ("last_active_before", "last_active_after") if by_activity else ("started_before", "started_after")
    for key, when, stricter in (
        (ages[0], None if args.older_than is None else now - args.older_than, min),
        (ages[1], None if args.newer_than is None else now - args.newer_than, max),
        ("started_before", args.before, min),
        ("started_after", args.after, max),
    ):
        if when is not None:
            f[key] = when if key not in f else stricter(f[key], when)
    for key, attr in (
        ("title_like", "title_contains"),
        ("end_reason", "end_reason"),
        ("model_like", "model"),
    ):
        if getattr(args, attr):
            f[key] = getattr(args, attr)
    for key in (f"{bound}_{name}" for name, _typ in PRUNE_RANGES for bound in ("min", "max")):
        if getattr(args, key) is not None:
            f[key] = getattr(args, key)
    any_filter = bool(f) or bool(args.source) or bool(args.title)
    older = None if any_filter else DEFAULT_PRUNE_DAYS
    return older, args.source or None, f, any_filter


def _plan_for_one(db: SessionDB, plan: dict[str, Any], sid: str | None) -> dict[str, Any]:
    """`plan` cut down to the one session `prune --title` names (and its delegate children)."""
    candidates = [c for c in plan["candidates"] if c["id"] == sid]
    cascade_all = db.delegate_children([sid]) if candidates and sid is not None else []
    rows = db.list_rows(cascade_all) if cascade_all else []
    cascade = [r for r in rows if r.get("ended_at") is not None]
    messages = sum(int(c.get("message_count") or 0) for c in candidates + cascade)
    estimate = int(plan["bytes_estimate"] * messages / plan["messages"]) if plan["messages"] else 0
    return {
        **plan,
        "ids": [c["id"] for c in candidates],
        "sessions": len(candidates),
        "messages": messages,
        "oldest": candidates[0]["started_at"] if candidates else None,
        "newest": candidates[-1]["started_at"] if candidates else None,
        "bytes_estimate": estimate,
        "cascade_ids": [r["id"] for r in cascade],
        "cascade": cascade,
        "cascade_open": [r for r in rows if r.get("ended_at") is None],
        "candidates": candidates,
        "excluded": [e for e in plan["excluded"] if e["id"] == sid],
    }


def _prune_plan(db: SessionDB, args: argparse.Namespace, target: Target | None) -> Review:
    """The reviewed prune plan of one store (on its thread)."""
    older, source, filters, _any = prune_filters(args, db.prunes_by_activity())
    if target is not None and target.title:
        # Narrows the scan; the plan is then cut to exactly this session (the LIKE also
        # matches "T #2", "my T", …).
        filters["title_like"] = target.title
    plan = db.plan_prune(
        older_than_days=older, source=source, include_archived=args.include_archived, **filters
    )
    if target is not None:
        # --title-contains still applies: a target whose title lacks the text is not a candidate.
        keeps = not args.title_contains or args.title_contains.lower() in (target.title or "").lower()
        plan = _plan_for_one(db, plan, target.id if keeps else None)
    return plan, list(plan["ids"]) + [c for c in plan["cascade_ids"] if c not in set(plan["ids"])]


def print_plan(plan: dict[str, Any]) -> None:
    n = plan["sessions"]
    out(
        f"{plural(n, 'session')}, {plural(int(plan['messages'] or 0), 'message')} would be deleted"
        f" (about {format_size(plan['bytes_estimate'])} of the file)."
    )
    if n:
        out(f"oldest: {iso(plan['oldest'])}   newest: {iso(plan['newest'])}")
        for c in plan["candidates"][:50]:
            out(
                f"  - {s(c['id'])}  {s(c.get('source'), 40) or '-'}  {short_time(c.get('started_at'))}"
                f"  {c.get('message_count') or 0} msgs  {cell(c.get('title'), 40)}"
            )
        if n > 50:
            out(f"  … and {n - 50} more")
    _print_group("Delegate subagent sessions that go with them", plan["cascade"], cascade_line)
    _print_group("Kept back", plan["excluded"], lambda e: f"  = {s(e['id'])}: {s(e['reason'])}", 50)


def _print_group(
    title: str, rows: list[dict[str, Any]], line: Callable[[dict[str, Any]], str], most: int = 0
) -> None:
    """`title (N):` and a line per row (the first `most`), or nothing for no rows."""
    if rows:
        out(f"{title} ({len(rows)}):")
        for row in rows[: most or None]:
            out(line(row))


def cascade_line(child: dict[str, Any]) -> str:
    """A delegate subagent session that goes with a deleted parent, as `prune` and `delete` list it."""
    return (
        f"  + {s(child['id'])}  (child of {s(child.get('parent_session_id'))},"
        f" {child.get('message_count') or 0} msgs)"
    )


# ---------------------------------------------------------------- delete's plan
def _delete_plan(db: SessionDB, ids: Sequence[str]) -> dict[str, Any]:
    """The sessions, the delegate children that cascade and the other children left as roots."""
    targets = [db.get_session(i) for i in ids]
    cascade: list[dict[str, Any]] = []
    orphaned: list[dict[str, Any]] = []
    chosen = set(ids)
    seen: set[str] = set()
    for sid in ids:
        delegate_ids = {sid}
        for d in db.get_descendants(sid):
            if d["id"] in chosen or d["id"] in seen:
                continue
            if d.get("edge_kind") == "delegate" and d.get("parent_session_id") in delegate_ids:
                delegate_ids.add(d["id"])
                cascade.append(d)
                seen.add(d["id"])
            elif d.get("parent_session_id") in delegate_ids:
                orphaned.append(d)
                seen.add(d["id"])
    doomed = chosen | {c["id"] for c in cascade}
    orphaned = [o for o in orphaned if o["id"] not in doomed]
    messages = sum(int(t.get("message_count") or 0) for t in targets if t) + sum(
        int(c.get("message_count") or 0) for c in cascade
    )
    return {
        "ids": list(ids),
        "sessions": [t for t in targets if t],
        "cascade": cascade,
        "cascade_ids": [c["id"] for c in cascade],
        "orphaned": orphaned,
        "orphaned_ids": [o["id"] for o in orphaned],
        "messages": messages,
    }


def _print_delete_plan(plan: dict[str, Any]) -> None:
    out(f"{plural(len(plan['ids']), 'session')} ({plural(plan['messages'], 'message')} incl. cascades):")
    for row in plan["sessions"]:
        out(
            f"  - {s(row['id'])}  {s(row.get('source'), 40) or '-'}  "
            f"{row.get('message_count') or 0} msgs"
            f"  {cell(row.get('title'), 40)}"
            f"{'  [pinned]' if row.get('pinned') else ''}"  # honoured, but a pin is a keep flag
        )
    _print_group("Delegate subagent sessions deleted with them", plan["cascade"], cascade_line)
    _print_group(
        "Children kept as roots (orphaned)",
        plan["orphaned"],
        lambda o: f"  ~ {s(o['id'])}  [{s(o.get('edge_kind'))}] child of {s(o.get('parent_session_id'))}",
    )


def delete_question(rows: Sequence[dict[str, Any]], extra: int) -> str:
    """The prompt names what goes: `Delete session ID “title”?`, or the count and the first few."""
    more = f" and {plural(extra, 'delegate subagent session')}" if extra else ""
    if len(rows) == 1:
        return f"Delete session {ident(rows[0])}{more}?"
    shown = ", ".join(ident(r) for r in rows[:3]) + (", …" if len(rows) > 3 else "")
    return f"Delete {plural(len(rows) + extra, 'session')} ({shown}{more})?"


# ---------------------------------------------------------------- removing
def _progress_printer(enabled: bool) -> Callable[[int, int], None] | None:
    if not enabled:
        return None

    def progress(done: int, total: int) -> None:
        if total:
            sys.stderr.write(f"\rdeleting… {done}/{total}")
            if done >= total:
                sys.stderr.write("\n")
            sys.stderr.flush()

    return progress


def _remove(
    db: SessionDB,
    args: argparse.Namespace,
    ids: Sequence[str],
    what: str,
    require_ended: bool,
    cancel: threading.Event,
) -> dict[str, Any]:
    """Delete exactly `ids` (no cascade: the caller reviewed them), through the trash unless
    --no-trash (on the store's thread; `cancel` stops it between batches)."""
    progress = _progress_printer(not args.json and sys.stderr.isatty())
    if args.no_trash:
        result = db.delete_sessions_batched(
            ids,
            cascade_delegates=False,
            require_ended=require_ended,
            progress=progress,
            cancel=cancel,
            exclude_active_write_guards=True,
        )
        return {**result, "trash_entry": None}
    db.trash_retention_s = args.trash_keep
    db.trash_max_bytes = args.trash_max_mb
    return db.trash_sessions(
        ids,
        what=what,
        cascade_delegates=False,
        require_ended=require_ended,
        progress=progress,
        cancel=cancel,
        exclude_active_write_guards=True,
    )


def _print_result(result: dict[str, Any], args: argparse.Namespace, db_option: str) -> None:
    out(
        f"Deleted {result['deleted']:,} of {plural(result['requested'], 'session')}"
        f" in {plural(result['batches'], 'batch', 'batches')}."
    )
    busy = len(result.get("guarded_ids") or ())
    if busy:
        out(f"{plural(busy, 'session')} kept: {BUSY_REASON}.")
    if result.get("skipped", 0) > busy:
        out(f"{result['skipped'] - busy} were kept: they changed (reopened or removed) after the review.")
    if result.get("cancelled"):
        out("Cancelled before the end.")
    entry = result.get("trash_entry")
    if entry:
        out(f"moved to trash: {entry} — restore with `hermes-tui sessions{db_option} trash restore {entry}`")
        removed = (result.get("retention") or {}).get("removed") or []
        if removed:
            out(f"Trash retention removed {plural(len(removed), 'older entry', 'older entries')}.")
    elif args.no_trash and result.get("deleted"):
        out("Deleted for good (--no-trash): these sessions cannot be restored.")


def _removal(
    stores: Stores, args: argparse.Namespace, reviews: dict[str, Review], what: str, require_ended: bool
) -> tuple[dict[str, dict[str, Any]], CliError | None]:
    """Each store's reviewed ids removed, one store after the other (each in its own batches,
    through its own trash), the result printed as it comes; with the error to end with when a
    store failed (the others were still pruned)."""
    results: dict[str, dict[str, Any]] = {}
    failures = {}
    for profile, (_plan, ids) in reviews.items():
        if not ids:
            continue
        got, failed = stores.each({profile: on(_remove, args, ids, what, require_ended, stores.cancel)})
        failures.update(failed)
        if profile in got:
            results[profile] = got[profile]
            if not args.json:
                if stores.several:
                    out(f"== {one_line(profile)} ==")
                _print_result(got[profile], args, stores.db_option(profile))
    return results, stores.failure(what, failures, "pruned" if results else None) if failures else None


def _report(
    stores: Stores,
    args: argparse.Namespace,
    reviews: dict[str, Review],
    results: dict[str, dict[str, Any]] | None,
    **extra: Any,
) -> None:
    """The one JSON document of a delete or prune: each store's plan, result and trash entry."""
    emit_json(
        {
            "profiles": {
                p: {
                    "plan": plan,
                    "result": (results or {}).get(p),
                    "trash_entry": ((results or {}).get(p) or {}).get("trash_entry"),
                }
                for p, (plan, _ids) in reviews.items()
            },
            "dry_run": results is None and bool(args.dry_run),
            **extra,
            "errors": stores.errors(),
        }
    )


# ---------------------------------------------------------------- prune
def _prune_question(reviews: dict[str, Review], several: bool) -> str:
    if not several:
        ((plan, ids),) = [r for r in reviews.values() if r[1]]
        return delete_question(plan["candidates"], len(ids) - len(plan["ids"]))
    total = sum(len(ids) for _plan, ids in reviews.values())
    per = ", ".join(f"{p} {len(ids)}" for p, (_plan, ids) in reviews.items() if ids)
    stores = sum(1 for _p, ids in reviews.values() if ids)
    return f"Delete {plural(total, 'session')} in {plural(stores, 'profile')} ({per})?"


def _exported(db: SessionDB, ids: Sequence[str]) -> list[dict[str, Any]]:
    return [x for x in map(db.export_session, ids) if x]


def _export_before(stores: Stores, args: argparse.Namespace, reviews: dict[str, Review]) -> int:
    """Every reviewed session written to `--export-before` as JSONL (each with its profile)."""
    items = [
        {"profile": p, **item}
        for p, (_plan, ids) in reviews.items()
        if ids
        for item in stores.call(p, _exported, ids)
    ]
    write_export(args.export_before, to_jsonl(items), force=args.force)
    if not args.json:
        out(f"Exported {plural(len(items), 'session')} to {args.export_before}.")
    return len(items)


def run_prune(stores: Stores, args: argparse.Namespace) -> int:
    profiles, target = stores.profiles, None
    if args.title:
        owner, target = resolve(stores, args.title)
        profiles = [owner]
    reviews, _failed = stores.each({p: on(_prune_plan, args, target) for p in profiles})
    if not args.json:
        if not prune_filters(args)[3]:
            out(f"No filters: pruning ended sessions older than {DEFAULT_PRUNE_DAYS} days.")
        for profile, (plan, _ids) in reviews.items():
            if stores.several:
                out(f"== {one_line(profile)} ==")
            print_plan(plan)
    doomed = sum(len(plan["ids"]) for plan, _ids in reviews.values())
    if args.dry_run or not doomed:
        if args.json:
            _report(stores, args, reviews, None, exported=None)
        else:
            out("Nothing to prune." if not doomed else "Dry run: nothing was deleted.")
        return 0
    if args.export_before is not None and args.export_before.exists() and not args.force:
        raise CliError(
            f"refusing to overwrite existing file {args.export_before} (use --force to replace it)", "refused"
        )
    if not confirm(args.yes, _prune_question(reviews, stores.several)):
        raise CliError("not confirmed: nothing was deleted", "refused")
    exported = _export_before(stores, args, reviews) if args.export_before is not None else None
    # Exactly the reviewed rows: the candidates plus the delegate children the plan showed.
    results, failed = _removal(stores, args, reviews, "prune", require_ended=True)
    if args.json:
        _report(stores, args, reviews, results, exported=exported)
    if failed is not None:
        raise failed
    return 0


# ---------------------------------------------------------------- delete
def run_delete(stores: Stores, args: argparse.Namespace) -> int:
    profile = stores.only()
    ids = list(resolve_all(stores, args.sessions).get(profile, {}))
    plan = stores.call(profile, _delete_plan, ids)
    # Exactly what is shown: the ids plus the delegate children listed. The store's own cascade
    # (cascade_delegates=True) also follows `_delegate_from` markers on rows whose
    # parent_session_id is not set, which get_descendants cannot preview; those are left alone.
    reviews = {profile: (plan, ids + [c for c in plan["cascade_ids"] if c not in set(ids)])}
    if not args.json:
        _print_delete_plan(plan)
    if args.dry_run:
        if args.json:
            _report(stores, args, reviews, None)
        else:
            out("Dry run: nothing was deleted.")
        return 0
    if not confirm(args.yes, delete_question(plan["sessions"], len(plan["cascade"]))):
        raise CliError("not confirmed: nothing was deleted", "refused")
    results, _failed = _removal(stores, args, reviews, "delete", require_ended=False)  # one store: raised
    done = results.get(profile) or {}
    if done.get("guarded_ids") and not done.get("deleted"):
        raise CliError(f"nothing was deleted: {BUSY_REASON}", "locked")
    if args.json:
        _report(stores, args, reviews, results)
    return 0


COMMANDS = (
    Command(
        "prune",
        "Delete ended sessions matching filters (bare prune: older than 90 days).",
        prune_arguments,
        run_prune,
        writes=always,
    ),
    Command(
        "delete",
        "Delete sessions (their delegate subagents cascade; other children are orphaned).",
        delete_arguments,
        run_delete,
        "one",
        always,
    ),
)
