"""The info line's text over the open stores, as pure functions: one store's (`store_header`:
its path, capabilities and count) and several profiles' (`stores_header`: each one's count and
badges). Each scope (`OneStore`, `BrowserStores`) picks its own from the same `HeaderFacts`
(`header(facts)`), so the header controller never asks how many stores are open."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from rich.text import Text

from hermes_tui.safe_text import cell_width, inert, one_line

#: Over more profiles than this the header sums the sessions and counts failures by kind (300
#: names would not fit, and the badges after them were never seen).
HEADER_PROFILES = 8
#: Stores named in the header's tooltip (2,700 profile folders without a store).
TOOLTIP_BADGES = 20


@dataclass(frozen=True)
class HeaderFacts:
    """What the main screen shows, for the header (`Header.update`); each scope reads its part."""

    width: int
    ready: bool
    #: The session count's words (`count_words`): one store's header.
    count: str
    caps: dict[str, Any]
    path: str
    #: Sessions per profile: several stores' header.
    counts: dict[str, int]


def left_cut(text: str, width: int) -> str:
    """``text`` in at most ``width`` cells, cut from the left ("…/hermes/state.db"): the end of a
    path names the file."""
    if cell_width(text) <= width:
        return text
    out: list[str] = []
    used = 1
    for ch in reversed(text):
        used += cell_width(ch)
        if used > width:
            break
        out.append(ch)
    return "…" + "".join(reversed(out))


def store_header(width: int, caps: dict[str, Any], path: str, count: str) -> Text:
    """The header over one store, fitted to ``width``: read-only/read-write and the count always
    show; the path is cut from the left, then schema and FTS layout drop, to make room."""
    mode = "read-only" if caps.get("read_only") else "read-write"
    extras = []
    if caps.get("schema_version") is not None:
        extras.append(f"schema v{caps['schema_version']}")
    if caps.get("fts_layout"):
        extras.append(f"fts {one_line(caps['fts_layout'])}")
    path = one_line(path)
    sep = " · "
    fixed = (
        cell_width("hermes-tui")
        + len(sep)
        + cell_width(mode)
        + (len(sep) + cell_width(count) if count else 0)
    )
    room = width - fixed - len(sep)
    while extras and room - sum(len(sep) + cell_width(e) for e in extras) < min(24, cell_width(path)):
        extras.pop()  # the path is worth more than the schema details
    room -= sum(len(sep) + cell_width(e) for e in extras)
    text = Text(no_wrap=True, overflow="ellipsis")
    text.append("hermes-tui", style="bold")
    text.append(sep + left_cut(path, max(4, room)))
    for extra in extras:
        text.append(sep + extra)
    text.append(sep + mode, style="bold")
    if count:
        text.append(sep + count)
    return text


def stores_header(
    ready: bool,
    counts: dict[str, int],
    read_only: Callable[[str], bool],
    opening: int,
    failed: Sequence[Any],
) -> tuple[Text, str | None]:
    """The header over several profiles and its tooltip: the sessions per profile, then a badge
    per store that could not be opened (its status; the reason was a notification). ``failed``
    holds the stores' refs (`profile`, `status`, `badge`)."""
    text = Text(no_wrap=True, overflow="ellipsis")
    text.append("hermes-tui", style="bold")
    if ready and len(counts) > HEADER_PROFILES:
        total = sum(counts.values())  # 300 profiles: no room for each one's count
        text.append(f" · {len(counts):,} profiles · {total:,} sessions")
    elif ready:
        for profile, n in counts.items():
            mode = " (read-only)" if read_only(profile) else ""
            text.append(f" · {one_line(profile, 24)} {n:,}{mode}")
    if opening:
        text.append(f" · opening {opening:,} more…")
    if len(failed) > HEADER_PROFILES:  # one badge per kind of failure, with its count
        kinds: dict[str, int] = {}
        for ref in failed:
            kinds[str(ref.status)] = kinds.get(str(ref.status), 0) + 1
        for kind, n in kinds.items():
            text.append(" · ")
            text.append(f"⚠ {n:,} {one_line(kind)}", style="bold reverse")
    else:
        for ref in failed:
            text.append(" · ")
            text.append(f"⚠ {one_line(ref.profile, 24)}: {one_line(str(ref.status))}", style="bold reverse")
    shown = [inert(ref.badge, newlines=False) for ref in failed[:TOOLTIP_BADGES]]
    if len(failed) > TOOLTIP_BADGES:
        shown.append(f"… and {len(failed) - TOOLTIP_BADGES:,} more")
    return text, "\n".join(shown) or None
