"""`sessions export [REF…] [filters]`: sessions as JSON, JSONL, Markdown or HTML, from one store or several.

Without references every session matching the filters is exported (archived, hidden and child
sessions included: an export is a copy, not a view). Every reference is resolved before anything
is written, so a typo leaves no half export. Each exported session carries its `profile`.
`-o FILE` takes its format from the extension; Markdown or HTML for several sessions goes to a
folder, one file per session plus `manifest.jsonl` (file names are `<profile>-<id>.md` / `.html`
when several stores are open, as ids repeat across stores). `--redact` (HTML) hides home paths,
e-mail addresses and key-like strings (`hermes_tui.redact`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from hermes_tui.cli.command import Command
from hermes_tui.cli.errors import CliError, UsageError
from hermes_tui.cli.output import emit_json, ident, out
from hermes_tui.cli.parser import add_list_filters, add_profile_options, non_negative_int
from hermes_tui.cli.references import resolve
from hermes_tui.cli.stores import Stores, on
from hermes_tui.exporting import (
    json_text,
    make_private_dirs,
    markdown_filenames,
    sha256_text,
    to_json,
    to_jsonl,
    to_markdown,
    write_export,
)
from hermes_tui.formatting import plural
from hermes_tui.html_export import to_html
from hermes_tui.state import SessionDB, SessionFilter

EXPORT_FORMATS = ("json", "jsonl", "md", "html")
#: The formats written as files, one per session (a folder with a manifest for several).
FILE_FORMATS = {"md": ".md", "html": ".html"}
DEFAULT_EXPORT_FORMAT = "jsonl"
#: The export format an `-o` file's extension names when `--format` is not given.
FORMAT_OF_SUFFIX = {
    ".json": "json",
    ".jsonl": "jsonl",
    ".md": "md",
    ".markdown": "md",
    ".html": "html",
    ".htm": "html",
}


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "sessions",
        metavar="ID",
        nargs="*",
        help="sessions to export (none: every session matching the filters)",
    )
    p.add_argument(
        "--format",
        choices=EXPORT_FORMATS,
        default=None,
        help=f"json (one array), jsonl (one session per line), md (Markdown) or html (one safe,"
        " self-contained page per session). Default: from the -o"
        f" file's extension ({', '.join(FORMAT_OF_SUFFIX)}), {DEFAULT_EXPORT_FORMAT} on stdout;"
        " any other -o needs --format",
    )
    add_profile_options(p)
    p.add_argument(
        "--lineage",
        action="store_true",
        help="export each session's whole compression chain (root to live tip) as one session",
    )
    add_list_filters(p)
    p.add_argument(
        "--limit", type=non_negative_int, default=0, help="with filters: at most N sessions (0 = all)"
    )
    p.add_argument(
        "-o",
        "--output",
        metavar="PATH",
        help="file ('-' = stdout, the default for json/jsonl); md: a file for one session, a"
        " directory (with manifest.jsonl) for several or when PATH is a directory; html: the same",
    )
    p.add_argument("--force", action="store_true", help="replace existing files")
    p.add_argument(
        "--redact",
        action="store_true",
        help="html: replace home paths, e-mail addresses and strings that look like API keys or tokens",
    )


def export_format(args: argparse.Namespace) -> str:
    """`--format`, else the one the `-o` file's extension names (`backup.json` is JSON, not the
    default JSONL under a misleading name); stdout gets the default. Any other `-o` without
    `--format` is a usage error rather than a guess."""
    if args.format:
        return str(args.format)
    target = args.output
    if not target or target == "-":
        return DEFAULT_EXPORT_FORMAT
    suffix = Path(target).suffix.lower()
    if suffix in FORMAT_OF_SUFFIX:
        return FORMAT_OF_SUFFIX[suffix]
    if Path(target).expanduser().is_dir():
        raise UsageError(f"{target!r} is a directory: give --format md or html to write one file per session")
    raise UsageError(
        f"cannot tell the export format from {target!r}: name the file {', '.join(FORMAT_OF_SUFFIX)},"
        " or give --format json, jsonl, md or html"
    )


def export_filter(args: argparse.Namespace) -> SessionFilter:
    """Every session matching the filters, archived, hidden and child sessions included."""
    return SessionFilter.every_session(
        sources=tuple(args.source or ()),
        models=tuple(args.model or ()),
        started_after=args.after,
        started_before=args.before,
    )


def _export_many(
    db: SessionDB, ids: list[str], lineage: bool, display: bool = False
) -> list[dict[str, Any] | None]:
    """Each session of one store as an export (its whole chain with `lineage`; None: gone): the
    stored rows (JSON, JSONL) or, `display` (Markdown, read by a person), the messages as Hermes
    shows them (its display groups where the file keeps them)."""
    if lineage:
        return [db.export_session_lineage(sid, display) for sid in ids]
    return [db.export_session(sid, display) for sid in ids]


def _items(stores: Stores, args: argparse.Namespace) -> list[dict[str, Any]]:
    """The sessions to write, in order, each with its `profile` (a compression chain once with
    --lineage); every store exports its own sessions at once, on its thread."""
    if args.sessions:  # every reference resolved before anything is written
        pairs = list(dict.fromkeys((p, t.id) for p, t in (resolve(stores, r) for r in args.sessions)))
    else:
        merged = stores.session_order(export_filter(args), args.order)
        pairs = merged.pairs(0, args.limit or len(merged))
        stores.failed(merged.errors)
    by_store: dict[str, list[str]] = {}
    for profile, sid in pairs:
        by_store.setdefault(profile, []).append(sid)
    display = export_format(args) in FILE_FORMATS
    got, _failed = stores.each(
        {p: on(_export_many, ids, args.lineage, display) for p, ids in by_store.items()}
    )
    exported = {p: iter(items) for p, items in got.items()}
    items: list[dict[str, Any]] = []
    done: set[tuple[str, tuple[str, ...]]] = set()
    for profile, sid in pairs:
        item = next(exported[profile]) if profile in exported else None
        if not item:
            continue
        if args.lineage:
            key = (profile, tuple(item.get("lineage_session_ids") or [sid]))
            if key in done:
                continue
            done.add(key)
        items.append({"profile": profile, **item})
    return items


def run(stores: Stores, args: argparse.Namespace) -> int:
    fmt = export_format(args)
    if args.redact and fmt != "html":
        raise UsageError("--redact is for --format html (the other formats are copies of the store)")
    if fmt in FILE_FORMATS and (not args.output or args.output == "-"):
        raise UsageError(
            f"--format {fmt} writes files: give -o FILE{FILE_FORMATS[fmt]} for one session or -o DIRECTORY"
        )
    items = _items(stores, args)
    if fmt in FILE_FORMATS:
        return _export_files(stores, args, fmt, Path(args.output).expanduser(), items)
    chunks: Any = to_json(items) if fmt == "json" else to_jsonl(items)
    if not args.output or args.output == "-":
        for chunk in [chunks] if isinstance(chunks, str) else chunks:
            sys.stdout.write(chunk)
        return 0
    path = write_export(args.output, chunks, force=args.force)
    if args.json:
        emit_json({"format": fmt, "path": str(path), "sessions": len(items), "errors": stores.errors()})
    else:
        out(f"Exported {plural(len(items), 'session')} to {path}.")
    return 0


def render(fmt: str, args: argparse.Namespace) -> Callable[[dict[str, Any]], str]:
    """The page of one session in a file format (Markdown, or HTML redacted with --redact)."""
    if fmt == "html":
        return partial(to_html, redact=bool(args.redact))
    return to_markdown


def _export_files(
    stores: Stores, args: argparse.Namespace, fmt: str, target: Path, items: list[dict[str, Any]]
) -> int:
    """One session → the file `target`; several (or `target` an existing folder) → one file each
    in that folder plus `manifest.jsonl`."""
    if target.is_dir():
        return _export_dir(stores, args, fmt, target, items)
    if len(items) == 1:
        body = render(fmt, args)(items[0])
        path = write_export(target, body, force=args.force)
        if args.json:
            emit_json(
                {
                    "format": fmt,
                    "path": str(path),
                    "sessions": 1,
                    "profile": items[0]["profile"],
                    "id": items[0].get("id"),
                    "bytes": len(body.encode("utf-8")),
                    "sha256": sha256_text(body),
                    "errors": stores.errors(),
                }
            )
        else:
            out(f"Exported {ident(items[0])} to {path}.")
        return 0
    if target.exists():
        raise CliError(
            f"{target} exists and is not a directory ({plural(len(items), 'session')} need a directory)",
            "refused",
        )
    if not items:
        raise CliError("no sessions match: nothing was written", "not_found")
    return _export_dir(stores, args, fmt, target, items)


def _export_dir(
    stores: Stores, args: argparse.Namespace, fmt: str, directory: Path, items: list[dict[str, Any]]
) -> int:
    # Ids repeat across stores: names carry the profile only when several are open.
    named = items if stores.several else [{k: v for k, v in i.items() if k != "profile"} for i in items]
    page = render(fmt, args)
    names = markdown_filenames(named, FILE_FORMATS[fmt])
    bodies = [(name, item, page(item)) for name, item in zip(names, items, strict=True)]
    manifest_path = directory / "manifest.jsonl"
    if not args.force:
        clashes = [directory / name for name, _i, _b in bodies if (directory / name).exists()]
        if manifest_path.exists():
            clashes.append(manifest_path)
        if clashes:
            raise CliError(
                f"refusing to overwrite existing file {clashes[0]}"
                + (f" and {len(clashes) - 1} more" if len(clashes) > 1 else "")
                + " (use --force)",
                "refused",
            )
    make_private_dirs(directory)
    manifest = []
    for name, item, body in bodies:
        write_export(directory / name, body, force=args.force)
        manifest.append(
            {
                "profile": item["profile"],
                "file": name,
                "id": item.get("id"),
                "title": item.get("title"),
                "lineage_session_ids": item.get("lineage_session_ids") or [item.get("id")],
                "messages": len(item.get("messages") or []),
                "bytes": len(body.encode("utf-8")),
                "sha256": sha256_text(body),
            }
        )
    write_export(manifest_path, (json_text(m) + "\n" for m in manifest), force=args.force)
    if args.json:
        emit_json(
            {
                "format": fmt,
                "directory": str(directory),
                "sessions": len(manifest),
                "manifest": str(manifest_path),
                "files": manifest,
                "errors": stores.errors(),
            }
        )
    else:
        out(f"Exported {plural(len(manifest), 'session')} to {directory} (manifest: {manifest_path.name}).")
    return 0


COMMANDS = (Command("export", "Export sessions as JSON, JSONL, Markdown or HTML.", arguments, run),)
