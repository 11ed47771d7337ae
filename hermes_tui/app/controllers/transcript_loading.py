"""Reading a session for the transcript pane, and the words around it (title, subtitle).

The reads run in the main screen's thread workers (`load_session_worker`,
`live_session_worker`); the functions here take a store and return records, so they are
tested with a store and no app. The title and subtitle are pure functions of what they show.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rich.text import Text

from hermes_tui.app.render import flag_words, format_cost, human_count, to_number
from hermes_tui.app.widgets.transcript_items import (
    Divider,
    Item,
    MessageView,
    TranscriptData,
    folded_counts,
    prepare_first_window,
    session_head,
    transcript_items,
)
from hermes_tui.safe_text import one_line
from hermes_tui.state import SessionDB


class SessionGone(LookupError):
    """The store holds no such session (any more)."""


def chain_segments(db: SessionDB, session_id: str, lineage: dict[str, Any]) -> list[dict[str, Any]]:
    """Nodes of the compression chain through ``session_id``, root first (worker thread)."""
    nodes = {n["id"]: n for n in lineage.get("nodes", [])}
    if session_id not in nodes:
        return []
    root = session_id
    while nodes[root].get("edge_kind") == "compression" and nodes[root].get("parent_session_id") in nodes:
        root = nodes[root]["parent_session_id"]
    try:
        tip = db.get_compression_tip(session_id) or session_id
    except Exception:  # an odd chain must not stop the reader
        tip = session_id
    path: list[str] = []
    cur: str | None = tip if tip in nodes else session_id
    while cur is not None and cur in nodes and cur not in path:
        path.append(cur)
        if cur == root:
            break
        cur = nodes[cur].get("parent_session_id")
    path.reverse()
    if not path or path[0] != root or session_id not in path:
        path = [root] if root == session_id else [root, session_id]
    return [nodes[i] for i in path]


@dataclass
class LoadedSession:
    """A transcript, its lineage and its list row, fetched together in one worker."""

    session_id: str
    row: dict[str, Any]
    data: TranscriptData
    lineage: dict[str, Any] | None
    target_id: int | None
    terms: tuple[str, ...]
    focus: bool
    profile: str | None = None  # the owning store over several profiles


def read_session(
    db: SessionDB,
    session_id: str,
    target_id: int | None,
    terms: tuple[str, ...],
    focus: bool,
    chain: bool,
    profile: str | None,
    cancelled: Callable[[], bool],
) -> LoadedSession | None:
    """get_session + get_lineage + get_messages, prepared into view records (worker thread).
    None when ``cancelled()`` said so; `SessionGone` when the store has no such session."""
    rows = db.list_rows([session_id])
    if not rows:
        raise SessionGone(session_id)
    lineage = db.get_lineage(session_id)
    segments = chain_segments(db, session_id, lineage) if chain else []
    head = session_head(db.get_session(session_id), rows[0])  # the prompt: not in list rows
    items: list[Item] = [head] if head is not None else []
    if chain and len(segments) > 1:
        for i, seg in enumerate(segments, 1):
            items.append(
                Divider(
                    session_id=seg["id"],
                    index=i,
                    count=len(segments),
                    title=one_line(seg.get("title")),
                    edge_kind=seg.get("edge_kind"),
                    message_count=seg.get("message_count") or 0,
                )
            )
            if cancelled():
                return None
            items.extend(transcript_items(db, seg["id"]))
    else:
        chain = False
        items.extend(transcript_items(db, session_id))
    if cancelled():
        return None
    data = TranscriptData(session_id=session_id, items=prepare_first_window(items, target_id), chain=chain)
    return LoadedSession(
        session_id,
        rows[0] if profile is None else {**rows[0], "profile": profile},
        data,
        lineage,
        target_id,
        terms,
        focus,
        profile,
    )


def read_live(
    db: SessionDB, session_id: str, after_id: int | None, lineage_too: bool
) -> tuple[dict[str, Any] | None, list[MessageView] | None, dict[str, Any] | None]:
    """The open session's row, messages after the last one shown, and (when a child or an end
    appeared) its lineage — one small read each (worker thread)."""
    rows = db.list_rows([session_id])
    items = None
    if rows and after_id is not None:
        # Not prepared here: a prepared message keeps its parsed Markdown for as long
        # as the transcript lists it (2,000 live messages made each full GC 1-2 s);
        # mounting prepares it, and the widget alone holds the result.
        items = transcript_items(db, session_id, after_id=after_id)
    lineage = db.get_lineage(session_id) if rows and lineage_too else None
    return (rows[0] if rows else None), items, lineage


def doing_text(row: dict[str, Any], status: dict[str, Any] | None) -> str:
    """What the session of `row` is doing now (today's Hermes' `last_activity_description`),
    while its live ``status`` is "working"; "" otherwise (a description outlives its work)."""
    doing = one_line(row.get("last_activity_description"), 80)
    if not doing:
        return ""
    return doing if (status or {}).get("state") == "working" else ""


def tip_note(lineage: dict[str, Any] | None, tip: str | None) -> str:
    """ "continued in …" for a session whose compression chain went on to ``tip`` (`L` jumps)."""
    if tip is None:
        return ""
    node: dict[str, Any] = next((n for n in (lineage or {}).get("nodes", []) if n["id"] == tip), {})
    return f"continued in {one_line(node.get('title'), 40) or one_line(tip, 40)} — L"


def title_text(row: dict[str, Any], note: str = "", doing: str = "", show_profile: bool = False) -> Text:
    """The transcript's two title lines: the title, then what the session is and does."""
    text = Text(no_wrap=True, overflow="ellipsis")
    title = one_line(row.get("title"))
    text.append(title or one_line(row.get("preview")) or "(untitled)", style="bold")
    text.append("\n")
    if note:  # first on the second line, so a narrow pane still shows it
        text.append(note + " · ", style="bold reverse")
    if doing:  # what a working session is doing now, early enough to show at 80 columns
        text.append(f"● {doing}", style="bold")
        text.append(" · ")
    for word in flag_words(row):
        text.append(word, style="bold")
        text.append(" · ")
    if show_profile and row.get("profile"):
        text.append(f"{one_line(row.get('profile'), 24)}: ", style="bold")
    text.append(
        f"{one_line(row.get('id'))} · {one_line(row.get('source'))} · {one_line(row.get('model')) or '—'}"
    )
    tokens = (to_number(row.get("input_tokens")) or 0) + (to_number(row.get("output_tokens")) or 0)
    text.append(f" · {human_count(row.get('message_count'))} msgs · {human_count(tokens)} tok")
    cost = format_cost(row)
    if cost:
        text.append(f" · {cost}")
    if row.get("end_reason"):
        text.append(f" · ended: {one_line(row['end_reason'], 60)}", style="dim")
    return text


def transcript_subtitle(
    items: list[Item], *, show_inactive: bool, showing_hidden: bool, hit: str | None, new_below: int
) -> str:
    """The transcript's subtitle: counts, folded rows and how to show them, the search hit
    ("hit 3/17", when one is shown) and "N new ↓ G"."""
    count = sum(1 for i in items if isinstance(i, MessageView))
    folded = folded_counts(items)
    parts = [f"{count} msgs"]
    if folded["inactive"]:
        parts.append(f"{folded['inactive']} rewound/compacted ({'shown' if show_inactive else 'i'})")
    if folded["hidden"]:
        parts.append(f"{folded['hidden']} hidden ({'shown' if showing_hidden else 'h'})")
    if hit is not None:
        parts.append(hit)
    if new_below:
        parts.insert(0, f"{new_below:,} new ↓ G")
    return " · ".join(parts)
