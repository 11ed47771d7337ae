"""Opening a store (or several) and its first order: what the open workers read and tell.

Each function runs in one of the main screen's thread workers and returns (or yields) the
messages the worker posts (`controllers/messages.py`); none touches a widget, so each is
tested with a store file and no app.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from rich.text import Text
from textual.message import Message

from hermes_tui.app.controllers.messages import Missing, Opened, OpenFailed, OrderLoaded, StoresOpened
from hermes_tui.app.controllers.ordering import ordered_ids
from hermes_tui.app.list_views import DEFAULT_FILTER
from hermes_tui.app.messages import StoreFailed
from hermes_tui.app.prefetch import OpenPrefetch, Prefetched, filter_values, open_store, order_head
from hermes_tui.app.stores import StoreChoice, open_chosen
from hermes_tui.app.widgets.session_list import PAGE_SIZE
from hermes_tui.safe_text import inert
from hermes_tui.state import SessionDB, SessionFilter, StoreError


def open_one(path: Path, read_only: bool, prefetch: OpenPrefetch | None) -> Message:
    """Open without migrating (never change the file's structure) and read capabilities; the
    open prefetch's store when it opened this file while Textual started."""
    if not path.exists():
        return Missing(path)
    pre = prefetch.take(path, read_only) if prefetch is not None else None
    if pre is not None:
        return Opened(pre.db, pre.caps, pre.sources, [], prefetched=pre)
    try:
        db, caps, sources = open_store(path, read_only)
    except StoreError as exc:  # the store's own words: what the file is
        return OpenFailed(path, str(exc))
    except Exception as exc:
        return OpenFailed(path, f"{type(exc).__name__}: {exc}")
    return Opened(db, caps, sources, [])


def open_several(app: Any, choice: StoreChoice, read_only: bool, path: Path) -> Message:
    """The stores open on a bounded pool (a failure is that store's badge); this waits for the
    first ones, the others join as they answer (`StoresArrived`). The stores the open prefetch
    opened while Textual started are taken, if it is this choice."""
    try:
        stores, sources, models = open_chosen(app, choice, read_only)
    except Exception as exc:
        return OpenFailed(path, f"{type(exc).__name__}: {exc}")
    return StoresOpened(stores, sources, models)


def first_order(
    db: SessionDB,
    flt: SessionFilter,
    order: str,
    active: bool,
    pre: Prefetched | None,
    now: Callable[[], float],
    cancelled: Callable[[], bool],
) -> Iterator[Message]:
    """First paint from the head of the order (its first page, read in milliseconds), then the
    whole order (seconds on a cold 10M-message file), which takes over without moving the view
    (issue #21)."""
    started = time.perf_counter()
    # "Active now" keeps only recent sessions of the order: no head, and not the prefetch's.
    from_prefetch = pre is not None and not active and flt == DEFAULT_FILTER and order == "last_active"
    if pre is not None and from_prefetch:
        if pre.complete:  # a small store: the prefetch read the whole order
            yield OrderLoaded(pre.head, None, 0.0, len(pre.head), pre.first_rows)
            return
        head, rows = pre.head, pre.first_rows
    else:
        try:
            # Pinned first: the head is read without the pins (the walk cannot put them
            # first); the whole order puts them above it.
            unpinned = replace(flt, pinned_first=False)
            head, rows = ([], []) if active else order_head(db, unpinned, order, PAGE_SIZE)
        except Exception:  # noqa: BLE001 - the whole order below reports the store's error
            head, rows = [], []
    if head and not cancelled():
        yield OrderLoaded(head, None, 0.0, None, rows, provisional=True)
    ids = pre.full_order(flt, order) if pre is not None and from_prefetch else None
    from_prefetch = ids is not None
    try:
        if ids is not None:
            total: int | None = len(ids)
        else:
            ids, total = ordered_ids(db, flt, order, active, now())
    except Exception as exc:
        yield StoreFailed("list sessions", f"{type(exc).__name__}: {exc}")
        ids, total = [], None
    if not cancelled():
        seconds = 0.0 if from_prefetch else time.perf_counter() - started  # 0: not ours to time
        yield OrderLoaded(ids, None, seconds, total, handover=bool(head))


def model_choices(db: SessionDB) -> list[str] | None:
    """The model filter's choices (None when the store cannot say; the list reports its
    errors). The model list scans every session row of a 0.19.0 file: off the first-paint path."""
    try:
        return filter_values(db)
    except Exception:  # noqa: BLE001 - the menu stays empty
        return None


def prepare_search(db: SessionDB) -> None:
    """The first search's one-time scan (seconds at 10M messages), so the first keystroke does
    not wait for it; a search meets the same error and reports it."""
    with contextlib.suppress(Exception):
        db.prepare_search()


def notice_text(what: str, safety: str) -> Text:
    """The message that replaces the panes when nothing could be opened: what the file is, that
    nothing was changed, and how to go on (the demo, another --db)."""
    text = Text()
    text.append(inert(what) + "\n\n", style="bold")
    text.append(safety + "\n\n")
    text.append("Press d to open the demo database (built once and cached), or start hermes-tui ")
    text.append("with --db PATH to a Hermes state.db. q quits.")
    return text
