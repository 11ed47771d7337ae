"""What the transcript shows, as records built off the event loop: one `MessageView` per message
(decoded, truncated, made inert and, for the first screen, prepared: Markdown parsed, code
highlighted), the dividers of a compression chain and the session's head; and the pure helpers
over them (the first window and its sizes, find, fold counts). No widgets here:
`transcript_lines.py` windows and draws them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from rich.console import RenderableType
from rich.highlighter import JSONHighlighter
from rich.text import Text

from hermes_tui.app.render import (
    clock_time,
    content_text,
    human_count,
    pretty_json,
    tool_call_parts,
    truncate_text,
)
from hermes_tui.formatting import plural
from hermes_tui.safe_text import as_text, inert, is_inert, one_line
from hermes_tui.state import FOLD_HIDDEN, FOLD_INACTIVE

if TYPE_CHECKING:
    from rich.markdown import Markdown

    from hermes_tui.state import SessionDB

# Mounting runs on the event loop (40 messages at once blocked it for up to 1 s): a first window
# of FIRST_WINDOW items fills the screen, BEFORE_TARGET of them before the message asked for;
# the view mounts the rest as the reader scrolls.
FIRST_WINDOW = 12
BEFORE_TARGET = 4
#: The window grows CHUNK items at a time as the reader scrolls to an edge.
CHUNK = 20
#: Most items with lines at once: past it, growing at one end drops items at the other. 50,000
#: messages all rendered (End used to take everything) took minutes and GBs.
MAX_WINDOW = 120
#: Items a fresh window holds after Home, End or a jump to a far find hit, and how many of them
#: come before the hit.
JUMP_WINDOW = 40
JUMP_BEFORE = 10
#: While following a writer the window keeps the last FOLLOW_WINDOW items (scrolling up brings
#: earlier ones back as usual), dropping its front FOLLOW_DROP_STEP items at a time.
FOLLOW_WINDOW = 40
FOLLOW_DROP_STEP = 20

#: Tool calls of one message prepared and mounted at first, and revealed per press of the
#: "more tool calls" row. One message with 5,000 calls took 12.6 s to appear and 300+ MB when
#: every call became a widget.
CALLS_SHOWN = 50
#: Longest tool-call arguments, reasoning and header fields kept for display.
MAX_CALL_CHARS = 6000
MAX_CALL_LINES = 200
MAX_REASONING_CHARS = 8000
_JSON = JSONHighlighter()


@dataclass(frozen=True)
class MessageView:
    """What one message block needs, prepared in a worker thread."""

    id: int
    role: str
    text: str
    dropped: int = 0
    tool_calls: tuple[tuple[str, str], ...] = ()
    tool_name: str | None = None
    tool_call_id: str | None = None
    reasoning: str = ""
    timestamp: Any = None  # as stored: `clock_time` shows a marker for one that is not a time
    token_count: Any = None
    finish_reason: str | None = None
    active: bool = True
    compacted: bool = False
    session_id: str = ""
    #: Why the message is folded away: None (shown), "inactive" (rewound; compaction-archived on
    #: files without Hermes' display index: the `i` toggle) or "hidden" (model-facing
    #: scaffolding the person never saw: the `h` toggle). `SessionDB.transcript_rows`.
    fold: str | None = None
    #: The ids of the rows this message stands for, itself first (compaction copies of one
    #: logical message are one message), and its display group (None outside the groups).
    members: tuple[int, ...] = ()
    group: Any = None
    prepared: Prepared | None = field(default=None, compare=False, repr=False)
    #: The stored tool calls past the first `CALLS_SHOWN`, prepared only when revealed.
    more_calls: tuple[Any, ...] = field(default=(), compare=False, repr=False)
    #: Lower-cased text the find bar searches (body or tool output, reasoning, tool calls),
    #: built in the loading worker so a find over 50,000 messages is one pass of `in` checks.
    find_text: str = field(default="", compare=False, repr=False)


@dataclass(frozen=True)
class Divider:
    """A segment boundary when a compression chain is read as one transcript."""

    session_id: str
    index: int
    count: int
    title: str = ""
    edge_kind: str | None = None
    message_count: int = 0


@dataclass(frozen=True)
class SessionHead:
    """The top of a session's transcript: what a working session is doing now and its system
    prompt (folded, like reasoning), prepared in the loading worker; inert text."""

    session_id: str
    activity: str = ""
    prompt: str = ""
    prompt_lines: int = 0
    prompt_chars: int = 0


Item = MessageView | Divider | SessionHead


@dataclass
class TranscriptData:
    """Everything the transcript shows, built in a worker."""

    session_id: str
    items: list[Item] = field(default_factory=list)
    chain: bool = False


def call_list(value: Any) -> list[Any]:
    """The stored ``tool_calls`` as a list of calls, whatever shape they arrived in.

    The store decodes the JSON; what it could not decode (or a writer stored as something other
    than a list) becomes one call whose name says so and whose arguments show the value.
    """
    if value is None or (isinstance(value, (str, bytes, bytearray, list, tuple, dict)) and not value):
        return []
    if isinstance(value, list):
        return value
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, dict):
        return [value]
    if isinstance(value, (str, bytes, bytearray, memoryview)):
        return [{"name": "tool_calls (not valid JSON)", "arguments": as_text(value)}]
    return [{"name": f"tool_calls ({type(value).__name__}, not a list)", "arguments": value}]


def call_view(call: Any) -> tuple[str, str]:
    """(name, arguments) of one tool call, inert and cut to `MAX_CALL_CHARS`."""
    name, args = tool_call_parts(call)
    args, cut = truncate_text(args, max_chars=MAX_CALL_CHARS, max_lines=MAX_CALL_LINES)
    if cut:
        args += f"\n… {cut:,} more characters"
    return name, args


def _message_id(value: Any) -> int:
    try:
        return int(value or 0)
    except (TypeError, ValueError, OverflowError):
        return 0


def _field(value: Any, width: int) -> str | None:
    """A one-line header field (tool name, finish reason), None when empty."""
    return one_line(value, width) or None


def message_view(row: dict[str, Any], prepared: bool = True) -> MessageView:
    """Turn a `get_messages` dict into a MessageView (runs in a worker). Every text field is
    inert; no stored value makes it raise. ``prepared``: parse its Markdown and highlight its
    code now (slow: ~2 ms a message); otherwise that happens when it is mounted (`prepare_first_window`
    prepares the messages the first paint shows, so a 50,000-message session does not parse all)."""
    role = one_line(row.get("role"), 40) or "?"
    raw = content_text(row.get("content"))
    if role == "tool" and raw[:1] in ("[", "{"):
        raw = inert(pretty_json(raw))
    text, dropped = truncate_text(raw)
    calls = call_list(row.get("tool_calls"))
    shown = tuple(call_view(call) for call in calls[:CALLS_SHOWN])
    reasoning_raw = row.get("reasoning") or row.get("reasoning_content") or ""
    if not isinstance(reasoning_raw, (str, bytes, bytearray, memoryview)):
        reasoning_raw = pretty_json(reasoning_raw)
    reasoning, rcut = truncate_text(reasoning_raw, max_chars=MAX_REASONING_CHARS, max_lines=MAX_CALL_LINES)
    reasoning = inert(reasoning)
    if rcut:
        reasoning += f"\n… {rcut:,} more characters"
    active = row.get("active")
    mid = _message_id(row.get("id"))
    fold = row["fold"] if "fold" in row else (None if active is None or bool(active) else FOLD_INACTIVE)
    view = MessageView(
        id=mid,
        role=role,
        text=text,
        dropped=dropped,
        tool_calls=shown,
        tool_name=_field(row.get("tool_name"), 80),
        tool_call_id=_field(row.get("tool_call_id"), 80),
        reasoning=reasoning,
        timestamp=row.get("timestamp"),
        token_count=row.get("token_count"),
        finish_reason=_field(row.get("finish_reason"), 40),
        active=active is None or bool(active),
        compacted=bool(row.get("compacted")),
        session_id=one_line(row.get("session_id")),
        fold=fold if fold in (FOLD_INACTIVE, FOLD_HIDDEN) else None,
        members=tuple(_message_id(m) for m in row.get("members") or ()) or (mid,),
        group=row.get("display_group"),
        more_calls=tuple(calls[CALLS_SHOWN:]),
    )
    return replace(view, prepared=prepare(view) if prepared else None, find_text=find_text(view))


def fresh_items(shown: Sequence[Item], items: Sequence[Item]) -> list[Item]:
    """The live ``items`` a transcript showing ``shown`` does not show yet. A copy of a message
    already shown (compaction carries the tail into a new generation with the same display
    group) is that message: Hermes shows it once."""
    known = {m for i in shown if isinstance(i, MessageView) for m in (i.id, *i.members)}
    groups = {i.group for i in shown if isinstance(i, MessageView) and i.group is not None}
    return [
        i
        for i in items
        if not (isinstance(i, MessageView) and (i.id in known or (i.group is not None and i.group in groups)))
    ]


def item_index(items: Sequence[Item], message_id: int | None) -> int | None:
    """Where message ``message_id`` is: the message with that id, or the one it is a copy of
    (a compaction copy folded into one logical message, `MessageView.members`)."""
    if message_id is None:
        return None
    for i, it in enumerate(items):
        if isinstance(it, MessageView) and (it.id == message_id or message_id in it.members):
            return i
    return None


def first_window(items: Sequence[Item], target_id: int | None) -> tuple[int, int]:
    """The items the transcript's `show` draws first: the head, or a window around the target."""
    index = item_index(items, target_id)
    if index is None:
        return 0, min(len(items), FIRST_WINDOW)
    return max(0, index - BEFORE_TARGET), min(len(items), index + FIRST_WINDOW)


def prepare_first_window(items: list[Item], target_id: int | None) -> list[Item]:
    """Prepare (in the loader's worker) the messages of the first window, so the first paint
    does no Markdown work on the event loop; the others are prepared as they are mounted and
    not kept (memory stays bounded by the mounted window, not the session's length)."""
    start, end = first_window(items, target_id)
    for i in range(start, end):
        item = items[i]
        if isinstance(item, MessageView) and item.prepared is None:
            items[i] = replace(item, prepared=prepare(item))
    return items


def find_text(view: MessageView) -> str:
    """What the transcript's find matches in one message, lower-cased (as `highlight_terms`
    compares): the text shown in its body or tool output, its reasoning and its shown tool
    calls' names and arguments."""
    parts = [view.text, view.reasoning]
    for name, args in view.tool_calls:
        parts += (name, args)
    return "\n".join(p for p in parts if p).lower()


ROLES = frozenset({"user", "assistant", "tool", "system"})


@dataclass(frozen=True)
class Prepared:
    """The renderables of one message as shown when it is not the search hit.

    Built in the loading worker: parsing Markdown and highlighting JSON cost ~1 ms a message,
    which used to run on the event loop in `compose`. Shared Text objects are never mutated on
    the loop; the matched message copies them before highlighting its terms.
    """

    header: Text
    body: RenderableType | None
    output: Text | None
    calls: tuple[tuple[str, Text], ...]
    reasoning: Text | None


def message_header(view: MessageView, match: bool = False) -> Text:
    """Role, tool name, #id, UTC time, tokens, finish reason, rewound/compacted, match marker."""
    text = Text(overflow="ellipsis")
    text.append(view.role, style="bold")
    if view.tool_name and view.role == "tool":
        text.append(f" {view.tool_name}")
    text.append(f"  #{view.id}", style="dim")
    if view.timestamp is not None:
        text.append(f"  {clock_time(view.timestamp)}", style="dim")
    if view.token_count:
        text.append(f"  {human_count(view.token_count)} tok", style="dim")
    if view.finish_reason:
        text.append(f"  {view.finish_reason}", style="dim")
    if not view.active:
        text.append("  compacted" if view.compacted else "  rewound", style="italic")
    if view.fold == FOLD_HIDDEN:
        text.append("  hidden", style="italic")
    if match:
        text.append("  ◆ match", style="bold")
    return text


def _body_source(view: MessageView) -> str:
    if view.dropped:
        return view.text + f"\n\n… {view.dropped:,} more characters not shown"
    return view.text


def _tool_output(view: MessageView) -> Text:
    body = Text(view.text + (f"\n… {view.dropped:,} more characters" if view.dropped else ""))
    if view.text[:1] in "[{":
        _JSON.highlight(body)
    return body


_WARM_LEXERS: set[str] = set()


def _warm_code_blocks(markdown: Markdown) -> None:
    """Load the Pygments lexers and theme a Markdown body's code blocks will use.

    A lexer's first instance compiles its regexes (50-100 ms for some languages), and rich only
    creates it while rendering, on the event loop. Here, in the worker, it is compiled once per
    process; later instances reuse the compiled tables.
    """
    names = {
        (token.info or "").partition(" ")[0] or "text"
        for token in markdown.parsed
        if token.type in {"fence", "code_block"}
    }
    if not names - _WARM_LEXERS:
        return
    from pygments.lexers import get_lexer_by_name
    from pygments.util import ClassNotFound
    from rich.syntax import Syntax

    Syntax.get_theme(markdown.code_theme)
    for name in names - _WARM_LEXERS:
        _WARM_LEXERS.add(name)
        try:
            get_lexer_by_name(name)
        except ClassNotFound:
            pass


def _inert_markdown(markdown: Markdown) -> None:
    """Make the parsed tokens inert: Markdown decodes character references, so the inert source
    ``&#x202E;`` or ``&#13;`` would come back as a bidi override or a carriage return."""
    stack = list(markdown.parsed)
    while stack:
        token = stack.pop()
        if token.content and not is_inert(token.content):
            token.content = inert(token.content)
        if token.attrs:
            for key, value in list(token.attrs.items()):
                if isinstance(value, str) and not is_inert(value):
                    token.attrs[key] = one_line(value)
        if token.info and not is_inert(token.info):
            token.info = one_line(token.info)
        if token.children:
            stack.extend(token.children)


def prepare_calls(calls: Sequence[tuple[str, str]]) -> tuple[tuple[str, Text], ...]:
    """Highlighted argument Texts of prepared tool calls (JSON colouring, agent text as data)."""
    out = []
    for name, args in calls:
        text = Text(args)
        _JSON.highlight(text)
        out.append((name, text))
    return tuple(out)


def prepare(view: MessageView) -> Prepared:
    """Build every renderable of a message that does not depend on it being the search hit.

    Agent text goes into `Text` and `Markdown` as data, never through markup parsing.
    """
    body: RenderableType | None = None
    output: Text | None = None
    if view.role == "tool":
        output = _tool_output(view)
    elif view.text:
        if view.role in {"user", "assistant"}:
            from rich.markdown import Markdown  # deferred: ~90 ms of imports off the startup path

            body = Markdown(_body_source(view))
            _inert_markdown(body)
            _warm_code_blocks(body)
        else:
            body = Text(_body_source(view))
    reasoning = Text(view.reasoning) if view.reasoning else None
    return Prepared(message_header(view), body, output, prepare_calls(view.tool_calls), reasoning)


def session_activity(row: dict[str, Any] | None) -> str:
    """What an open session is doing now: Hermes stamps `last_activity_description` during a
    turn and clears it after (an ended session shows none)."""
    if row is None or row.get("ended_at") is not None:
        return ""
    return one_line(row.get("last_activity_description"), 200)


def session_head(session: dict[str, Any] | None, row: dict[str, Any] | None) -> SessionHead | None:
    """The head of a session's transcript (worker thread): its system prompt (`get_session`
    resolves Hermes' `system_prompts` hash) and, while it is open, what it is doing now
    (`last_activity_description` of its list row). None when there is neither."""
    prompt_raw = content_text((session or {}).get("system_prompt"))
    activity = session_activity(row)
    if not prompt_raw.strip() and not activity:
        return None
    prompt, cut = truncate_text(prompt_raw, max_chars=MAX_REASONING_CHARS, max_lines=MAX_CALL_LINES)
    prompt = inert(prompt)
    if cut:
        prompt += f"\n… {cut:,} more characters"
    return SessionHead(
        session_id=one_line((session or row or {}).get("id")),
        activity=activity,
        prompt=prompt if prompt_raw.strip() else "",
        prompt_lines=prompt_raw.count("\n") + 1 if prompt_raw.strip() else 0,
        prompt_chars=len(prompt_raw),
    )


def transcript_items(db: SessionDB, session_id: str, after_id: int | None = None) -> list[MessageView]:
    """One session's messages as the transcript shows them (worker thread): Hermes' display
    groups where the file keeps them (`SessionDB.transcript_rows`), not prepared (mounting
    prepares a message; `prepare_first_window` the first screen's)."""
    return [message_view(m, prepared=False) for m in db.transcript_rows(session_id, after_id=after_id)]


def find_hits(
    items: Sequence[Item], needle: str, include_inactive: bool = True, include_hidden: bool = True
) -> list[int]:
    """Indexes of the messages whose `find_text` contains ``needle`` (already lower-cased),
    among those shown (folded rows only while their toggle shows them).

    One pass of `in` over precomputed strings: ~10 ms for 50,000 messages, run in a thread by
    the view all the same (a long session of long tool outputs costs more).
    """
    skip = {f for f, shown in ((FOLD_INACTIVE, include_inactive), (FOLD_HIDDEN, include_hidden)) if not shown}
    return [
        i
        for i, item in enumerate(items)
        if isinstance(item, MessageView) and item.fold not in skip and needle in item.find_text
    ]


def folded_counts(items: Sequence[Item]) -> dict[str, int]:
    """How many messages each toggle folds away: `{"inactive": n, "hidden": m}`."""
    counts = {FOLD_INACTIVE: 0, FOLD_HIDDEN: 0}
    for item in items:
        if isinstance(item, MessageView) and item.fold in counts:
            counts[item.fold] += 1
    return counts


def more_label(where: str, count: int) -> str:
    """The words of a window's "more" row: ``count`` items before it ("before") or after it."""
    return (
        f"▲ {plural(count, 'earlier message')}" if where == "before" else f"▼ {plural(count, 'more message')}"
    )
