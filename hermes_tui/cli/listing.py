"""`sessions list`, `show` and `search`: reading sessions, over one store or several.

`list` is Hermes' own list of each store (its `list_sessions_rich()`: hidden and archived left
out, sub-agent runs and compression continuations folded), merged in one order across stores;
`show` prints one session (metadata, lineage, system prompt, messages); `search` is full-text
search, merged across stores. Text output names profiles only when several stores are open.
"""

from __future__ import annotations

import argparse
from typing import Any

from hermes_tui.cli.command import Command
from hermes_tui.cli.output import (
    emit_json,
    err,
    fmt_cost,
    ident,
    out,
    s,
    short_time,
    table,
    tool_call_line,
    tool_calls_of,
)
from hermes_tui.cli.parser import add_list_filters, add_profile_options, non_negative_int
from hermes_tui.cli.references import resolve
from hermes_tui.cli.stores import Stores
from hermes_tui.exporting import iso
from hermes_tui.formatting import plural, row_cost
from hermes_tui.safe_text import inert, one_line
from hermes_tui.state import SessionDB, SessionFilter, SessionNotFound, content_text

SHOW_TEXT_LIMIT = 100_000  # characters of one message `show` prints (--full: all of it)
#: The list's marks column: pinned, unread, archived, hidden (legend printed under the table).
ROW_MARKS = (("pinned", "*"), ("unread", "●"), ("archived", "a"), ("hidden", "h"))
MARKS_LEGEND = "* pinned  ● unread  a archived  h hidden"


# ---------------------------------------------------------------- list
def list_arguments(p: argparse.ArgumentParser) -> None:
    add_profile_options(p)
    add_list_filters(p)
    p.add_argument("--limit", type=non_negative_int, default=50, help="at most N rows (0 = all; default 50)")
    p.add_argument(
        "--archived",
        action="store_true",
        help="only archived sessions (hidden ones too, as Hermes' archived view lists them)",
    )
    p.add_argument(
        "--include-hidden", action="store_true", help="also list hidden sessions (e.g. Bot Mode's chat)"
    )


def list_filter(args: argparse.Namespace) -> SessionFilter:
    """`list`: Hermes' own list (`--archived`: its archived view; `--include-hidden`)."""
    return SessionFilter(
        sources=tuple(args.source or ()),
        models=tuple(args.model or ()),
        started_after=args.after,
        started_before=args.before,
        archived="only" if args.archived else "exclude",
        include_hidden=bool(args.include_hidden),
    )


def run_list(stores: Stores, args: argparse.Namespace) -> int:
    merged = stores.session_order(list_filter(args), args.order)
    rows = merged.page(0, len(merged) if not args.limit else min(args.limit, len(merged)))
    stores.failed(merged.errors)
    if args.json:
        emit_json(
            {"sessions": rows, "total": len(merged), "counts": merged.counts, "errors": stores.errors()}
        )
        return 0
    if not rows:
        out("No sessions match.")
        return 0
    out(list_table(rows, with_profile=stores.several))
    more = len(merged) - len(rows)
    if stores.several:
        per = ", ".join(f"{one_line(p)} {c}" for p, c in merged.counts.items())
        tail = f" ({per})" + (f"; {more} more: raise --limit" if more > 0 else "")
    else:
        tail = f" ({more:,} more: raise --limit)" if more > 0 else ""
    out(f"\n{len(rows):,} of {plural(len(merged), 'session')}{tail}")
    return 0


def marks(row: dict[str, Any]) -> str:
    return "".join(mark for key, mark in ROW_MARKS if row.get(key))


def list_table(rows: list[dict[str, Any]], with_profile: bool) -> str:
    """The list as a table; a marks column (and its legend) only when a row has a mark."""
    marked = any(marks(r) for r in rows)
    cells = [
        (
            *((r.get("profile"),) if with_profile else ()),
            *((marks(r),) if marked else ()),
            r["id"],
            r.get("title") or r.get("preview") or "",
            r.get("source") or "-",
            r.get("model") or "-",
            r.get("message_count") or 0,
            (r.get("input_tokens") or 0) + (r.get("output_tokens") or 0),
            fmt_cost(row_cost(r)),
            short_time(r.get("last_active")),
        )
        for r in rows
    ]
    shift = (1 if with_profile else 0) + (1 if marked else 0)
    headers = ("ID", "TITLE / PREVIEW", "SOURCE", "MODEL", "MSGS", "TOKENS", "COST", "LAST ACTIVE")
    return table(
        (("PROFILE",) if with_profile else ()) + (("",) if marked else ()) + headers,
        cells,
        right=tuple(i + shift for i in (4, 5, 6)),
        limits=({0: 24} if with_profile else {}) | {i + shift: w for i, w in ((1, 40), (2, 16), (3, 24))},
    ) + (f"\n{MARKS_LEGEND}" if marked else "")


# ---------------------------------------------------------------- show
def show_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "session",
        metavar="ID",
        help="session id, unique id prefix, or title (a numbered family's newest, like --resume)",
    )
    p.add_argument(
        "--all",
        action="store_true",
        help="every stored row: rewound/archived (inactive) ones, Hermes' hidden rows, compaction copies",
    )
    p.add_argument(
        "--full",
        action="store_true",
        help=f"print every message in full (default: the first {SHOW_TEXT_LIMIT:,} characters)",
    )
    add_profile_options(p, ("--all-profiles",))


_HOW = {
    "prefix": "the only session whose id starts with {ref}",
    "title": "the session titled {ref}",
    "family": "the newest session of the {ref} title family (as `hermes --resume` picks it)",
}


def _show_data(db: SessionDB, sid: str, include_inactive: bool) -> dict[str, Any]:
    """The session (with what the list shows: last active, unread, the flags as 0/1), its
    lineage and its messages (on the store's thread)."""
    session = db.get_session(sid)
    if session is None:
        raise SessionNotFound(f"no session with id {sid!r}")
    listed = (db.list_rows([sid]) or [{}])[0]
    from_list = ("last_active", "unread", "archived", "hidden", "pinned")
    return {
        "session": {**session, **{k: listed[k] for k in from_list if k in listed}},
        "lineage": db.get_lineage(sid),
        # What a person sees (Hermes' display groups where the file keeps them); --all: every row.
        "messages": (
            db.get_messages(sid, include_inactive=True) if include_inactive else db.display_messages(sid)
        ),
    }


def run_show(stores: Stores, args: argparse.Namespace) -> int:
    profile, target = resolve(stores, args.session, family=True)
    data = stores.call(profile, _show_data, target.id, args.all)
    session = data["session"]
    if target.how != "id":
        # Said on stderr so stdout stays the session (and valid JSON with --json).
        err(f"note: showing {ident(session)}: {_HOW[target.how].format(ref=repr(args.session))}")
    if args.json:
        emit_json({"profile": profile, **data, "errors": stores.errors()})
        return 0
    fields = [
        ("profile", profile if stores.several else None),
        ("id", session["id"]),
        ("title", session.get("title")),
        ("source", session.get("source")),
        ("model", session.get("model")),
        ("flags", ", ".join(key for key, _mark in ROW_MARKS if session.get(key))),
        ("started", iso(session.get("started_at"))),
        ("last active", iso(session.get("last_active"))),
        ("activity", session.get("last_activity_description")),
        ("ended", iso(session.get("ended_at"))),
        ("end reason", session.get("end_reason")),
        ("parent", session.get("parent_session_id")),
        ("messages", session.get("message_count")),
        ("tool calls", session.get("tool_call_count")),
        ("tokens", f"{session.get('input_tokens') or 0} in / {session.get('output_tokens') or 0} out"),
        ("cost", fmt_cost(row_cost(session))),
        ("cwd", session.get("cwd")),
    ]
    for k, v in fields:
        if v not in (None, ""):
            out(f"{k + ':':<12} {s(v)}")
    _print_lineage(data["lineage"].get("nodes") or [])
    _print_prompt(content_text(session.get("system_prompt")), args.full)
    messages = data["messages"]
    hidden = 0 if args.all else sum(1 for m in messages if m.get("display_kind") == "hidden")
    seen = messages if args.all else [m for m in messages if m.get("display_kind") != "hidden"]
    out(f"\nMessages ({len(seen)}{', including inactive' if args.all else ''}):")
    for msg in seen:
        out("")
        for ln in message_lines(msg, full=args.full):
            out(ln)
    if hidden:
        why = "model-facing, Hermes never shows them; --all shows every row"
        out(f"\n({plural(hidden, 'hidden row')} not shown: {why})")
    return 0


def _print_lineage(nodes: list[dict[str, Any]]) -> None:
    if len(nodes) <= 1:
        return
    out("\nLineage:")
    for node in nodes:
        flags = [word for key, word in (("is_self", "this"), ("is_tip", "tip")) if node.get(key)]
        kind = s(node.get("edge_kind")) or "root"
        label = s(node["id"]) + (f" “{s(node['title'], 60)}”" if node.get("title") else "")
        out(
            f"  {'  ' * int(node.get('depth') or 0)}{'* ' if node.get('is_self') else '- '}{label} "
            f"[{kind}]"
            f" {node.get('message_count') or 0} msgs" + (f" ({', '.join(flags)})" if flags else "")
        )


def _print_prompt(prompt: str, full: bool) -> None:
    if not prompt:
        return
    out(f"\nSystem prompt ({plural(len(prompt), 'character')}):")
    shown = prompt if full or len(prompt) <= SHOW_TEXT_LIMIT else prompt[:SHOW_TEXT_LIMIT]
    for ln in inert(shown).splitlines():
        out("  " + ln)
    if len(shown) < len(prompt):
        out(f"  [… {plural(len(prompt) - len(shown), 'more character')}: use --full, --json or export]")


def message_lines(msg: dict[str, Any], full: bool = False) -> list[str]:
    """One message as `show` prints it: head, reasoning, text (cut unless `full`), tool calls."""
    head = f"[#{s(msg.get('id'))}] {s(msg.get('role'), 40)}"
    if msg.get("tool_name"):
        head += f" ({s(msg['tool_name'], 80)})"
    head += f"  {short_time(msg.get('timestamp'))}"
    if msg.get("active") == 0:
        head += "  [compacted]" if msg.get("compacted") == 1 else "  [inactive]"
    if msg.get("display_kind") == "hidden":
        head += "  [hidden]"
    lines = [head]
    reasoning = msg.get("reasoning") or msg.get("reasoning_content")
    if reasoning:
        lines.append("  (reasoning) " + s(reasoning, 200))
    text = content_text(msg.get("content"))
    cut = 0
    if not full and len(text) > SHOW_TEXT_LIMIT:
        cut = len(text) - SHOW_TEXT_LIMIT
        text = text[:SHOW_TEXT_LIMIT]
    if text:
        lines += ["  " + ln for ln in inert(text).splitlines()]
    if cut:
        lines.append(f"  [… {plural(cut, 'more character')}: use --full, --json or export]")
    lines += [tool_call_line(call) for call in tool_calls_of(msg.get("tool_calls"))]
    return lines


# ---------------------------------------------------------------- search
def search_arguments(p: argparse.ArgumentParser) -> None:
    add_profile_options(p)
    p.add_argument("query", metavar="QUERY")
    p.add_argument("--source", action="append", default=[], help="only this source (repeatable)")
    p.add_argument("--role", action="append", default=[], help="only this role (repeatable)")
    p.add_argument("--limit", type=non_negative_int, default=20)
    p.add_argument("--sort", choices=("newest", "oldest", "rank"), default="rank")


def run_search(stores: Stores, args: argparse.Namespace) -> int:
    found = stores.search(
        args.query,
        sort=args.sort,
        source_filter=list(args.source) or None,
        role_filter=list(args.role) or None,
        context=True,
    )
    hits = found.page(0, args.limit or 20)
    stores.failed(found.errors)
    if args.json:
        emit_json({"query": args.query, "routes": found.routes, "results": hits, "errors": stores.errors()})
        return 0
    if stores.several:
        routes = ", ".join(f"{one_line(p)} {one_line(r)}" for p, r in found.routes.items())
        out(f"routes: {routes}  ({plural(len(hits), 'hit')})")
    else:
        out(f"route: {one_line(found.routes[stores.only()])}  ({plural(len(hits), 'hit')})")
    for hit in hits:
        where = f"{s(hit.get('profile'))}:" if stores.several else ""
        print_hit(hit, where + s(hit.get("session_id")))
    return 0


def print_hit(hit: dict[str, Any], session: str) -> None:
    """One search hit as `search` prints it (`session` names where it is)."""
    out("")
    out(
        f"#{s(hit.get('id'))}  {session}  {s(hit.get('role'), 40)}"
        f"  {short_time(hit.get('timestamp'))}  [{s(hit.get('source'), 40)}]"
    )
    out("  " + s(hit.get("snippet"), 400))


COMMANDS = (
    Command(
        "list", "List sessions as Hermes lists them, most recently active first.", list_arguments, run_list
    ),
    Command("show", "Show one session: metadata, lineage and messages.", show_arguments, run_show),
    Command("search", "Full-text search over messages.", search_arguments, run_search),
)
