"""`hermes-tui sessions ...`: the browser's headless twin (list, show, search, rename, prune,
delete, export, stats) on the same store API.

Exit codes: 0 ok, 1 error (store errors, unknown sessions, refused writes), 2 usage.
Reads always open the database read-only; writes open it with `migrate=False`, so a command
never changes a database's structure.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hermes_tui.exporting import (
    content_text,
    iso,
    markdown_filename,
    sha256_text,
    to_json,
    to_jsonl,
    to_markdown,
    write_export,
)
from hermes_tui.state import SessionDB, SessionFilter, SessionNotFound, StoreError
from hermes_tui.state.paths import default_db_path

DEFAULT_PRUNE_DAYS = 90
ORDERS = ("last_active", "started", "messages", "tokens", "cost")
WRITE_COMMANDS = frozenset({"rename", "prune", "delete"})
_DURATION_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*$", re.IGNORECASE)
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400, "": 86400}


class CliError(Exception):
    """An error to report as `error: <message>` with exit code 1."""


class UsageError(Exception):
    """A bad option value found after parsing (exit code 2)."""


# ---------------------------------------------------------------- value parsing
def parse_duration(text: str) -> float:
    """`5h`, `2d`, `1w`, `30m`, `90s` or bare days (`30`) → seconds."""
    m = _DURATION_RE.match(text or "")
    if not m:
        raise argparse.ArgumentTypeError(f"invalid duration {text!r} (use e.g. 12h, 7d, 2w or a number of days)")
    return float(m.group(1)) * _UNITS[m.group(2).lower()]


def parse_iso(text: str) -> float:
    """ISO date or date-time → unix time (naive values are UTC)."""
    raw = (text or "").strip()
    try:
        dt = datetime.fromisoformat(raw.replace("Z", "+00:00") if raw.endswith("Z") else raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid date {text!r} (use YYYY-MM-DD or YYYY-MM-DDTHH:MM)") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.timestamp()


def parse_when(text: str) -> float:
    """An ISO date, or a duration meaning "that long ago"."""
    if _DURATION_RE.match(text or "") and not re.match(r"^\s*\d{4}-", text):
        return time.time() - parse_duration(text)
    return parse_iso(text)


def non_negative_int(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid number {text!r}") from None
    if n < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {n}")
    return n


def non_negative_float(text: str) -> float:
    try:
        n = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid number {text!r}") from None
    if n < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {text}")
    return n


# ---------------------------------------------------------------- parser
class _Parser(argparse.ArgumentParser):
    """Raises instead of exiting, so `main()` can return the code in-process."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        raise SystemExit(2)


def _add_globals(p: argparse.ArgumentParser, suppress: bool) -> None:
    d = argparse.SUPPRESS
    p.add_argument("--db", type=Path, metavar="PATH", default=d if suppress else None,
                   help="state.db to use (default: $HERMES_HOME/state.db or ~/.hermes/state.db)")
    p.add_argument("--json", action="store_true", default=d if suppress else False,
                   help="machine output: one JSON document on stdout")
    p.add_argument("--read-only", action="store_true", default=d if suppress else False,
                   help="open the database read-only; write commands are refused")


def _add_list_filters(p: argparse.ArgumentParser) -> None:
    p.add_argument("--source", action="append", default=[], help="only this source (repeatable)")
    p.add_argument("--model", action="append", default=[], help="only this model (repeatable)")
    p.add_argument("--after", type=parse_when, metavar="WHEN",
                   help="started at/after (ISO date, UTC, or a duration ago like 7d/12h)")
    p.add_argument("--before", type=parse_when, metavar="WHEN", help="started before (ISO date or duration ago)")
    p.add_argument("--order", choices=ORDERS, default="last_active")


def _confirm_opts(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dry-run", action="store_true", help="show what would be deleted and stop")
    p.add_argument("-y", "--yes", action="store_true", help="do not ask for confirmation")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="hermes-tui sessions", description="Headless session commands (the browser's twin).")
    _add_globals(parser, suppress=False)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

    def cmd(name: str, help_: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_, description=help_)
        _add_globals(p, suppress=True)
        return p

    p = cmd("list", "List sessions, most recently active first.")
    _add_list_filters(p)
    p.add_argument("--limit", type=non_negative_int, default=50, help="at most N rows (0 = all; default 50)")

    p = cmd("show", "Show one session: metadata, lineage and messages.")
    p.add_argument("session", metavar="ID", help="session id, unique id prefix, or title")
    p.add_argument("--all", action="store_true", help="include rewound/archived (inactive) messages")

    p = cmd("search", "Full-text search over messages.")
    p.add_argument("query", metavar="QUERY")
    p.add_argument("--source", action="append", default=[], help="only this source (repeatable)")
    p.add_argument("--role", action="append", default=[], help="only this role (repeatable)")
    p.add_argument("--limit", type=non_negative_int, default=20)
    p.add_argument("--sort", choices=("newest", "oldest", "rank"), default="rank")

    p = cmd("rename", "Set a session's title (an empty title clears it).")
    p.add_argument("session", metavar="ID")
    p.add_argument("title", metavar="TITLE", nargs="*", help="the new title (several words are joined)")

    p = cmd("prune", "Delete ended sessions matching filters (bare prune: older than 90 days).")
    p.add_argument("--older-than", type=parse_duration, metavar="AGE", help="started more than AGE ago (5h, 2d, 1w, or days)")
    p.add_argument("--newer-than", type=parse_duration, metavar="AGE", help="started less than AGE ago")
    p.add_argument("--before", type=parse_iso, metavar="DATE", help="started before DATE (ISO, UTC)")
    p.add_argument("--after", type=parse_iso, metavar="DATE", help="started at/after DATE (ISO, UTC)")
    p.add_argument("--source")
    p.add_argument("--title", help="title contains (case-insensitive)")
    p.add_argument("--end-reason")
    p.add_argument("--model", help="model contains (case-insensitive)")
    for name, typ in (("messages", non_negative_int), ("tokens", non_negative_int), ("cost", non_negative_float),
                      ("tool-calls", non_negative_int)):
        p.add_argument(f"--min-{name}", type=typ)
        p.add_argument(f"--max-{name}", type=typ)
    p.add_argument("--include-archived", action="store_true", help="archived sessions are candidates too")
    p.add_argument("--export-before", type=Path, metavar="PATH", help="write a JSONL export of the sessions first")
    p.add_argument("--force", action="store_true", help="let --export-before replace an existing file")
    _confirm_opts(p)

    p = cmd("delete", "Delete sessions (their delegate subagents cascade; other children are orphaned).")
    p.add_argument("sessions", metavar="ID", nargs="+")
    _confirm_opts(p)

    p = cmd("export", "Export sessions as JSON, JSONL or Markdown.")
    p.add_argument("sessions", metavar="ID", nargs="*", help="sessions to export (none: every session matching the filters)")
    p.add_argument("--format", choices=("json", "jsonl", "md"), default="jsonl")
    p.add_argument("--lineage", action="store_true", help="export each id's whole compression lineage as one")
    _add_list_filters(p)
    p.add_argument("--limit", type=non_negative_int, default=0, help="with filters: at most N sessions (0 = all)")
    p.add_argument("-o", "--output", metavar="PATH",
                   help="file (json/jsonl; '-' = stdout, the default) or directory (md)")
    p.add_argument("--force", action="store_true", help="replace existing files")

    p = cmd("stats", "Totals, usage by source and model, costliest sessions and chains, activity, health.")
    p.add_argument("--days", type=non_negative_int, default=30, help="days of activity to chart (default 30)")
    p.add_argument("--top", type=non_negative_int, default=10, help="rows in the costliest lists")
    return parser


# ---------------------------------------------------------------- output helpers
def _out(text: str = "") -> None:
    print(text)


def _emit_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, ensure_ascii=False, indent=2, default=str) + "\n")


def _err(text: str) -> None:
    print(text, file=sys.stderr)


def _short_time(ts: Any) -> str:
    if ts is None:
        return "-"
    try:
        return datetime.fromtimestamp(float(ts), UTC).strftime("%Y-%m-%dT%H:%MZ")
    except (TypeError, ValueError, OverflowError, OSError):
        return str(ts)


def _cost(row: dict[str, Any]) -> float:
    val = row.get("actual_cost_usd")
    if val is None:
        val = row.get("estimated_cost_usd")
    return float(val or 0)


def _fmt_cost(value: Any) -> str:
    return f"${float(value or 0):.4f}"


def _one_line(text: Any, width: int) -> str:
    s = re.sub(r"\s+", " ", str(text or "")).strip()
    return s if len(s) <= width else s[: max(0, width - 1)] + "…"


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]], right: Sequence[int] = ()) -> str:
    cells = [[str(c) for c in r] for r in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]

    def line(vals: Sequence[str]) -> str:
        return "  ".join(v.rjust(widths[i]) if i in right else v.ljust(widths[i]) for i, v in enumerate(vals)).rstrip()

    return "\n".join([line(headers), line(["-" * w for w in widths])] + [line(r) for r in cells])


def _ident(row: dict[str, Any]) -> str:
    title = row.get("title")
    return f"{row['id']} ({title})" if title else str(row["id"])


# ---------------------------------------------------------------- opening
def _open(args: argparse.Namespace, write: bool) -> SessionDB:
    path = Path(args.db or default_db_path()).expanduser()
    if not path.exists():
        raise CliError(f"no database at {path}")
    if write and args.read_only:
        raise CliError(f"'{args.command}' writes to the database, but --read-only was given; nothing was changed")
    if write:
        return SessionDB(path, migrate=False)
    return SessionDB(path, read_only=True)


def _resolve(db: SessionDB, ref: str) -> str:
    sid = db.resolve_session_id(ref)
    if sid:
        return sid
    by_title = db.resolve_session_by_title(ref)
    if by_title:
        return by_title
    prefixed = [i for i in db.session_order(SessionFilter(text=ref)).ids if i.startswith(ref)]
    if len(prefixed) > 1:
        shown = ", ".join(prefixed[:5]) + (" …" if len(prefixed) > 5 else "")
        raise CliError(f"{ref!r} is ambiguous: it starts {len(prefixed)} session ids ({shown})")
    raise CliError(f"no session matching {ref!r} (not an id, a unique id prefix, or a title)")


def _list_filter(args: argparse.Namespace) -> SessionFilter:
    return SessionFilter(
        sources=tuple(args.source or ()),
        models=tuple(args.model or ()),
        started_after=args.after,
        started_before=args.before,
    )


def _confirm(args: argparse.Namespace, question: str) -> bool:
    """True to go ahead. `--yes` skips the question; without a terminal we refuse."""
    if args.yes:
        return True
    stdin = sys.stdin
    if stdin is None or not stdin.isatty():
        raise CliError("refusing to delete without confirmation: stdin is not a terminal (pass --yes)")
    sys.stderr.write(f"{question} [y/N] ")
    sys.stderr.flush()
    answer = stdin.readline().strip().lower()
    return answer in ("y", "yes")


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


# ---------------------------------------------------------------- commands
def cmd_list(db: SessionDB, args: argparse.Namespace) -> int:
    order = db.session_order(_list_filter(args), order=args.order)
    ids = order.ids if not args.limit else order.ids[: args.limit]
    rows = db.list_rows(ids)
    if args.json:
        _emit_json(rows)
        return 0
    if not rows:
        _out("No sessions match.")
        return 0
    table = [
        (
            r["id"],
            _one_line(r.get("title") or r.get("preview") or "", 40),
            r.get("source") or "-",
            _one_line(r.get("model") or "-", 24),
            r.get("message_count") or 0,
            (r.get("input_tokens") or 0) + (r.get("output_tokens") or 0),
            _fmt_cost(_cost(r)),
            _short_time(r.get("last_active")),
        )
        for r in rows
    ]
    _out(_table(("ID", "TITLE / PREVIEW", "SOURCE", "MODEL", "MSGS", "TOKENS", "COST", "LAST ACTIVE"), table,
                right=(4, 5, 6)))
    more = len(order) - len(rows)
    _out(f"\n{len(rows)} of {len(order)} sessions" + (f" ({more} more: raise --limit)" if more > 0 else ""))
    return 0


def _message_lines(msg: dict[str, Any]) -> list[str]:
    head = f"[#{msg.get('id')}] {msg.get('role')}"
    if msg.get("tool_name"):
        head += f" ({msg['tool_name']})"
    head += f"  {_short_time(msg.get('timestamp'))}"
    if msg.get("active") == 0:
        head += "  [inactive]"
    lines = [head]
    reasoning = msg.get("reasoning") or msg.get("reasoning_content")
    if reasoning:
        lines.append("  (reasoning) " + _one_line(reasoning, 200))
    text = content_text(msg.get("content"))
    if text:
        lines += ["  " + ln for ln in text.splitlines()]
    for call in msg.get("tool_calls") or []:
        if isinstance(call, dict):
            fn = call.get("function") if isinstance(call.get("function"), dict) else {}
            name = fn.get("name") or call.get("name") or "tool"
            arguments = fn.get("arguments", call.get("arguments"))
            if not isinstance(arguments, str):
                arguments = json.dumps(arguments, ensure_ascii=False)
            lines.append(f"  → tool call {name}({_one_line(arguments, 200)})")
    return lines


def cmd_show(db: SessionDB, args: argparse.Namespace) -> int:
    sid = _resolve(db, args.session)
    session = db.get_session(sid)
    if session is None:
        raise SessionNotFound(f"no session with id {sid!r}")
    lineage = db.get_lineage(sid)
    messages = db.get_messages(sid, include_inactive=args.all)
    if args.json:
        _emit_json({"session": session, "lineage": lineage, "messages": messages})
        return 0
    fields = [
        ("id", session["id"]), ("title", session.get("title")), ("source", session.get("source")),
        ("model", session.get("model")), ("started", iso(session.get("started_at"))),
        ("ended", iso(session.get("ended_at"))), ("end reason", session.get("end_reason")),
        ("parent", session.get("parent_session_id")), ("messages", session.get("message_count")),
        ("tool calls", session.get("tool_call_count")),
        ("tokens", f"{session.get('input_tokens') or 0} in / {session.get('output_tokens') or 0} out"),
        ("cost", _fmt_cost(_cost(session))), ("cwd", session.get("cwd")),
    ]
    for k, v in fields:
        if v not in (None, ""):
            _out(f"{k + ':':<12} {v}")
    nodes = lineage.get("nodes") or []
    if len(nodes) > 1:
        _out("\nLineage:")
        for node in nodes:
            marks = []
            if node.get("is_self"):
                marks.append("this")
            if node.get("is_tip"):
                marks.append("tip")
            kind = node.get("edge_kind") or "root"
            label = f"{node['id']}" + (f" “{node['title']}”" if node.get("title") else "")
            _out(f"  {'  ' * int(node.get('depth') or 0)}{'* ' if node.get('is_self') else '- '}{label} [{kind}]"
                 f" {node.get('message_count') or 0} msgs" + (f" ({', '.join(marks)})" if marks else ""))
    _out(f"\nMessages ({len(messages)}{', including inactive' if args.all else ''}):")
    for msg in messages:
        _out("")
        for ln in _message_lines(msg):
            _out(ln)
    return 0


def cmd_search(db: SessionDB, args: argparse.Namespace) -> int:
    outcome = db.search(
        args.query,
        source_filter=list(args.source) or None,
        role_filter=list(args.role) or None,
        limit=args.limit or 20,
        sort=None if args.sort == "rank" else args.sort,
    )
    if args.json:
        _emit_json({"route": outcome.route, "query": outcome.query, "results": outcome.results})
        return 0
    _out(f"route: {outcome.route}  ({len(outcome.results)} hit{'s' if len(outcome.results) != 1 else ''})")
    for hit in outcome.results:
        _out("")
        _out(f"#{hit.get('id')}  {hit.get('session_id')}  {hit.get('role')}  {_short_time(hit.get('timestamp'))}"
             f"  [{hit.get('source')}]")
        _out("  " + _one_line(hit.get("snippet"), 400))
    return 0


def cmd_rename(db: SessionDB, args: argparse.Namespace) -> int:
    sid = _resolve(db, args.session)
    title = " ".join(args.title)
    check = db.check_title(sid, title)
    if not check["ok"]:
        msg = check.get("error") or "invalid title"
        if check.get("holder"):
            holder = db.get_session(check["holder"]) or {"id": check["holder"]}
            msg += f" (held by {_ident(holder)}: {holder.get('source') or '?'}, started {iso(holder.get('started_at'))})"
        raise CliError(msg)
    db.set_session_title(sid, title)
    new = db.get_session_title(sid)
    if args.json:
        _emit_json({"id": sid, "title": new, "transfer_from": check.get("transfer_from")})
        return 0
    if new is None:
        _out(f"Cleared the title of {sid}.")
    else:
        _out(f"Renamed {sid} to {new!r}.")
    if check.get("transfer_from"):
        _out(f"(the title moved from its compression ancestor {check['transfer_from']})")
    return 0


def _prune_filters(args: argparse.Namespace) -> tuple[float | None, str | None, dict[str, Any], bool]:
    now = time.time()
    f: dict[str, Any] = {}
    before = []
    if args.older_than is not None:
        before.append(now - args.older_than)
    if args.before is not None:
        before.append(args.before)
    if before:
        f["started_before"] = min(before)
    after = []
    if args.newer_than is not None:
        after.append(now - args.newer_than)
    if args.after is not None:
        after.append(args.after)
    if after:
        f["started_after"] = max(after)
    for key, attr in (("title_like", "title"), ("end_reason", "end_reason"), ("model_like", "model")):
        if getattr(args, attr):
            f[key] = getattr(args, attr)
    for key in ("min_messages", "max_messages", "min_tokens", "max_tokens", "min_cost", "max_cost",
                "min_tool_calls", "max_tool_calls"):
        if getattr(args, key) is not None:
            f[key] = getattr(args, key)
    any_filter = bool(f) or bool(args.source)
    older = None if any_filter else DEFAULT_PRUNE_DAYS
    return older, args.source or None, f, any_filter


def _print_plan(plan: dict[str, Any], implicit: bool) -> None:
    if implicit:
        _out(f"No filters: pruning ended sessions older than {DEFAULT_PRUNE_DAYS} days.")
    n = plan["sessions"]
    _out(f"{n} session{'s' if n != 1 else ''}, {plan['messages']} messages would be deleted"
         f" (about {plan['bytes_estimate']:,} bytes of the file).")
    if n:
        _out(f"oldest: {iso(plan['oldest'])}   newest: {iso(plan['newest'])}")
        for c in plan["candidates"][:50]:
            _out(f"  - {c['id']}  {c.get('source') or '-'}  {_short_time(c.get('started_at'))}"
                 f"  {c.get('message_count') or 0} msgs  {_one_line(c.get('title') or '', 40)}")
        if n > 50:
            _out(f"  … and {n - 50} more")
    if plan["cascade_ids"]:
        _out(f"Delegate subagent sessions that go with them ({len(plan['cascade_ids'])}):")
        for c in plan["cascade"]:
            _out(f"  + {c['id']}  (child of {c.get('parent_session_id')}, {c.get('message_count') or 0} msgs)")
    if plan["excluded"]:
        _out(f"Kept back ({len(plan['excluded'])}):")
        for e in plan["excluded"][:50]:
            _out(f"  = {e['id']}: {e['reason']}")


def _export_sessions_jsonl(db: SessionDB, ids: Sequence[str], path: Path, force: bool) -> int:
    exported = [s for s in (db.export_session(i) for i in ids) if s]
    write_export(path, to_jsonl(exported), force=force)
    return len(exported)


def cmd_prune(db: SessionDB, args: argparse.Namespace) -> int:
    older, source, filters, any_filter = _prune_filters(args)
    plan = db.plan_prune(older_than_days=older, source=source, include_archived=args.include_archived, **filters)
    to_delete = list(plan["ids"]) + [c for c in plan["cascade_ids"] if c not in set(plan["ids"])]
    if not args.json:
        _print_plan(plan, implicit=not any_filter)
    if args.dry_run or not plan["ids"]:
        if args.json:
            _emit_json({"plan": plan, "result": None, "dry_run": bool(args.dry_run)})
        elif not plan["ids"]:
            _out("Nothing to prune.")
        else:
            _out("Dry run: nothing was deleted.")
        return 0
    if args.export_before is not None and args.export_before.exists() and not args.force:
        raise CliError(f"refusing to overwrite existing file {args.export_before} (use --force to replace it)")
    if not _confirm(args, f"Delete {len(to_delete)} sessions?"):
        _out("Nothing was deleted.")
        return 1
    exported = None
    if args.export_before is not None:
        exported = _export_sessions_jsonl(db, to_delete, args.export_before, args.force)
        if not args.json:
            _out(f"Exported {exported} sessions to {args.export_before}.")
    # Exactly the reviewed rows: the candidates plus the delegate children the plan showed
    # (cascade_delegates=False, so a subagent created after the review is not swept along).
    result = db.delete_sessions_batched(to_delete, cascade_delegates=False, require_ended=True,
                                        progress=_progress_printer(not args.json and sys.stderr.isatty()))
    if args.json:
        _emit_json({"plan": plan, "result": result, "exported": exported, "dry_run": False})
    else:
        _print_result(result)
    return 0


def _print_result(result: dict[str, Any]) -> None:
    _out(f"Deleted {result['deleted']} of {result['requested']} sessions in {result['batches']} batches.")
    if result.get("skipped"):
        _out(f"{result['skipped']} were kept: they changed (reopened or removed) after the review.")
    if result.get("cancelled"):
        _out("Cancelled before the end.")


def _delete_plan(db: SessionDB, ids: Sequence[str]) -> dict[str, Any]:
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
    return {"ids": list(ids), "sessions": [t for t in targets if t], "cascade": cascade,
            "cascade_ids": [c["id"] for c in cascade], "orphaned": orphaned,
            "orphaned_ids": [o["id"] for o in orphaned], "messages": messages}


def cmd_delete(db: SessionDB, args: argparse.Namespace) -> int:
    ids = list(dict.fromkeys(_resolve(db, ref) for ref in args.sessions))
    plan = _delete_plan(db, ids)
    if not args.json:
        _out(f"{len(ids)} session{'s' if len(ids) != 1 else ''} ({plan['messages']} messages incl. cascades):")
        for s in plan["sessions"]:
            _out(f"  - {s['id']}  {s.get('source') or '-'}  {s.get('message_count') or 0} msgs"
                 f"  {_one_line(s.get('title') or '', 40)}")
        if plan["cascade"]:
            _out(f"Delegate subagent sessions deleted with them ({len(plan['cascade'])}):")
            for c in plan["cascade"]:
                _out(f"  + {c['id']}  (child of {c.get('parent_session_id')}, {c.get('message_count') or 0} msgs)")
        if plan["orphaned"]:
            _out(f"Children kept as roots (orphaned) ({len(plan['orphaned'])}):")
            for o in plan["orphaned"]:
                _out(f"  ~ {o['id']}  [{o.get('edge_kind')}] child of {o.get('parent_session_id')}")
    if args.dry_run:
        if args.json:
            _emit_json({"plan": plan, "result": None, "dry_run": True})
        else:
            _out("Dry run: nothing was deleted.")
        return 0
    total = len(ids) + len(plan["cascade"])
    if not _confirm(args, f"Delete {total} sessions?"):
        _out("Nothing was deleted.")
        return 1
    # Exactly what was shown: the ids plus the delegate children listed above. The store's own
    # cascade (cascade_delegates=True) also follows `_delegate_from` markers on rows whose
    # parent_session_id is not set, which get_descendants cannot preview; those are left alone.
    reviewed = ids + [c for c in plan["cascade_ids"] if c not in set(ids)]
    result = db.delete_sessions_batched(reviewed, cascade_delegates=False,
                                        progress=_progress_printer(not args.json and sys.stderr.isatty()))
    if args.json:
        _emit_json({"plan": plan, "result": result, "dry_run": False})
    else:
        _print_result(result)
    return 0


def _export_items(db: SessionDB, args: argparse.Namespace) -> Iterator[dict[str, Any]]:
    if args.sessions:
        ids = list(dict.fromkeys(_resolve(db, ref) for ref in args.sessions))
    else:
        ids = db.session_order(_list_filter(args), order=args.order).ids
        if args.limit:
            ids = ids[: args.limit]
    done: set[str] = set()
    for sid in ids:
        if args.lineage:
            item = db.export_session_lineage(sid)
            key = item and tuple(item.get("lineage_session_ids") or [sid])
            if not item or key in done:
                continue
            done.add(key)  # type: ignore[arg-type]
        else:
            item = db.export_session(sid)
            if not item:
                continue
        yield item


def cmd_export(db: SessionDB, args: argparse.Namespace) -> int:
    out = args.output
    if args.format == "md":
        if not out or out == "-":
            raise CliError("--format md writes one file per session: give a directory with -o DIR")
        return _export_md(db, args, Path(out).expanduser())
    # Resolve every id before writing anything, so a typo leaves no half export.
    items = list(_export_items(db, args))
    chunks: Any = to_json(items) if args.format == "json" else to_jsonl(items)
    if not out or out == "-":
        if isinstance(chunks, str):
            sys.stdout.write(chunks)
        else:
            for c in chunks:
                sys.stdout.write(c)
        return 0
    path = write_export(out, chunks, force=args.force)
    summary = {"format": args.format, "path": str(path), "sessions": len(items)}
    if args.json:
        _emit_json(summary)
    else:
        _out(f"Exported {len(items)} sessions to {path}.")
    return 0


def _export_md(db: SessionDB, args: argparse.Namespace, directory: Path) -> int:
    if directory.exists() and not directory.is_dir():
        raise CliError(f"{directory} exists and is not a directory")
    items = list(_export_items(db, args))
    bodies = [(markdown_filename(item), item, to_markdown(item)) for item in items]
    manifest_path = directory / "manifest.jsonl"
    if not args.force:
        clashes = [directory / name for name, _i, _b in bodies if (directory / name).exists()]
        if manifest_path.exists():
            clashes.append(manifest_path)
        if clashes:
            raise CliError(f"refusing to overwrite existing file {clashes[0]}"
                           + (f" and {len(clashes) - 1} more" if len(clashes) > 1 else "") + " (use --force)")
    directory.mkdir(parents=True, exist_ok=True)
    manifest = []
    for name, item, body in bodies:
        write_export(directory / name, body, force=args.force)
        manifest.append({
            "file": name, "id": item.get("id"), "title": item.get("title"),
            "lineage_session_ids": item.get("lineage_session_ids") or [item.get("id")],
            "messages": len(item.get("messages") or []), "bytes": len(body.encode("utf-8")),
            "sha256": sha256_text(body),
        })
    write_export(manifest_path, (json.dumps(m, ensure_ascii=False) + "\n" for m in manifest), force=args.force)
    if args.json:
        _emit_json({"format": "md", "directory": str(directory), "sessions": len(manifest),
                    "manifest": str(manifest_path), "files": manifest})
    else:
        _out(f"Exported {len(manifest)} sessions to {directory} (manifest: {manifest_path.name}).")
    return 0


def _bar(value: int, top: int, width: int = 40) -> str:
    if top <= 0 or value <= 0:
        return ""
    return "█" * max(1, round(width * value / top))


def cmd_stats(db: SessionDB, args: argparse.Namespace) -> int:
    data = {
        "totals": db.totals(),
        "sessions_by_source": db.sessions_by_source(),
        "usage_by_model": db.usage_by_model(),
        "costliest_sessions": db.costliest_sessions(args.top),
        "costliest_chains": db.costliest_chains(args.top),
        "activity_by_day": db.activity_by_day(days=args.days),
        "store_health": db.store_health(),
    }
    if args.json:
        _emit_json(data)
        return 0
    t = data["totals"]
    _out(f"Sessions: {t.get('sessions') or 0}   messages: {t.get('messages') or 0}   tokens: "
         f"{t.get('input_tokens') or 0} in / {t.get('output_tokens') or 0} out   cost: {_fmt_cost(t.get('cost'))}")
    _out("\nBy source:")
    _out(_table(("SOURCE", "SESSIONS", "MESSAGES", "TOKENS", "COST"),
                [(r["source"], r["sessions"], r["messages"] or 0, r["tokens"] or 0, _fmt_cost(r["cost"]))
                 for r in data["sessions_by_source"]], right=(1, 2, 3, 4)))
    _out("\nBy model:")
    _out(_table(("MODEL", "SESSIONS", "INPUT", "OUTPUT", "COST"),
                [(r["model"], r["session_count"], r["total_input"] or 0, r["total_output"] or 0,
                  _fmt_cost(r["total_cost"])) for r in data["usage_by_model"]], right=(1, 2, 3, 4)))
    _out("\nCostliest sessions:")
    _out(_table(("ID", "TITLE", "SOURCE", "TOKENS", "COST"),
                [(r["id"], _one_line(r.get("title") or "", 40), r.get("source") or "-", r.get("total_tokens") or 0,
                  _fmt_cost(r["cost"])) for r in data["costliest_sessions"]], right=(3, 4)))
    if data["costliest_chains"]:
        _out("\nCostliest chains (root and descendants):")
        _out(_table(("ROOT", "TITLE", "SESSIONS", "MESSAGES", "TOKENS", "COST"),
                    [(r["root_id"], _one_line(r.get("title") or "", 40), r["sessions"], r["messages"] or 0,
                      r["tokens"] or 0, _fmt_cost(r["cost"])) for r in data["costliest_chains"]], right=(2, 3, 4, 5)))
    act = data["activity_by_day"]
    _out(f"\nActivity, last {args.days} days (messages per UTC day):")
    if not act:
        _out("  (none)")
    top = max((a["messages"] for a in act), default=0)
    for a in act:
        _out(f"  {a['day']}  {_bar(a['messages'], top):<40}  {a['messages']} msgs, {a['sessions']} sessions")
    h = data["store_health"]
    _out("\nStore health:")
    idx = ", ".join(f"{k}={'?' if v is None else v}" for k, v in (h.get("index_rows") or {}).items()) or "none"
    _out(f"  schema v{h.get('schema_version')} (code v{h.get('code_schema_version')}), FTS layout {h.get('fts_layout')},"
         f" trigram {'yes' if h.get('trigram') else 'no'}, CJK {h.get('cjk') or 'no'} ({h.get('cjk_index')})")
    _out(f"  messages {h.get('messages')} ({h.get('messages_non_tool')} non-tool); index rows: {idx}")
    _out(f"  file {h.get('file_size', 0):,} bytes, WAL {h.get('wal_size', 0):,} bytes;"
         f" other writers: {len(h.get('other_writers') or [])}")
    return 0


COMMANDS: dict[str, Callable[[SessionDB, argparse.Namespace], int]] = {
    "list": cmd_list, "show": cmd_show, "search": cmd_search, "rename": cmd_rename, "prune": cmd_prune,
    "delete": cmd_delete, "export": cmd_export, "stats": cmd_stats,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Run one `sessions` subcommand; returns the exit code (never raises SystemExit)."""
    parser = build_parser()
    try:
        args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    except SystemExit as exc:  # usage errors (2) and --help (0)
        return int(exc.code) if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    db: SessionDB | None = None
    try:
        db = _open(args, write=args.command in WRITE_COMMANDS)
        return int(COMMANDS[args.command](db, args) or 0)
    except UsageError as exc:
        _err(f"hermes-tui sessions {args.command}: error: {exc}")
        return 2
    except (CliError, StoreError, FileExistsError, IsADirectoryError) as exc:
        _err(f"error: {exc}")
        return 1
    except BrokenPipeError:  # `| head`
        return 0
    except OSError as exc:
        _err(f"error: {exc}")
        return 1
    except KeyboardInterrupt:
        _err("interrupted")
        return 130
    finally:
        if db is not None:
            db.close()


if __name__ == "__main__":
    raise SystemExit(main())
