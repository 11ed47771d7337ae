"""OpenPrefetch: open the store and order its sessions while Textual is still starting.

First paint waits for three things in a row: the app's own start-up (compose, CSS, first
render: ~0.4 s of GIL-bound Python), opening the file, and the first page of the list. Started
from `HermesApp.__init__`, this thread does the store's part meanwhile, so the screen's open
worker usually finds it done.

The first page comes from the order's head (`SessionDB.session_order_head`: a short walk of the
newest messages, ~15 ms warm at 1M messages), not from the whole order: `session_order()` seeks
every session's newest message (0.2 s warm at 6M messages, 7-10 s on a cold 6M file), so the
screen paints the head at once and installs the whole order when this thread has it (issue #21).
The model list (a table scan on 0.19.0 files, 0.3-0.4 s cold) is read after first paint too
(`filter_values`). It reads only (`migrate=False`); anything unexpected is left for the normal
open path to report, so errors look the same either way.
"""

from __future__ import annotations

import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hermes_tui.app.list_views import DEFAULT_FILTER
from hermes_tui.state import SessionDB, SessionFilter


def open_store(path: Path, read_only: bool) -> tuple[SessionDB, dict[str, Any], list[str]]:
    """The browser's one way to open a file: no migration, plus what the header and the source
    filter show (an indexed read). Raises whatever the store raises (after closing what it
    opened). The model list is read later, off the first-paint path: `filter_values`."""
    db = SessionDB(path, read_only=read_only, migrate=False)
    try:
        caps = db.capabilities()
        sources = [v for v, _n in db.distinct_values("source") if v]
    except Exception:
        db.close()
        raise
    return db, caps, sources


def filter_values(db: SessionDB) -> list[str]:
    """The model filter's choices (worker thread, after first paint). `model` has no index in a
    file hermes-agent 0.19.0 wrote: a scan of every session row (0.3-0.4 s cold at 100k
    sessions, with the list's own reads waiting behind it)."""
    return [v for v, _n in db.distinct_values("model") if v]


def order_head(
    db: SessionDB, flt: SessionFilter, order: str, limit: int
) -> tuple[list[str], list[dict[str, Any]]]:
    """The first ids of `session_order(flt, order)` and their rows, read without the whole order
    (([], []) when the store cannot tell them cheaply: the caller waits for the whole order)."""
    head = db.session_order_head(flt, order, limit)
    if head is None or not head.ids:
        return [], []
    return list(head.ids), db.list_rows(head.ids)


@dataclass
class Prefetched:
    """What the thread produced for one (path, read_only): the open store, the head of the
    default order (unfiltered, last active first) with its rows, and the whole order later
    (`DEFAULT_FILTER`: pinned sessions first; the head is read without them, see `_open`)."""

    db: SessionDB
    caps: dict[str, Any]
    sources: list[str]
    head: list[str]
    first_rows: list[dict[str, Any]] = field(default_factory=list)
    owner: OpenPrefetch | None = field(default=None, repr=False)
    #: `head` is the whole order (a store too small for a head: its order costs milliseconds).
    complete: bool = False

    def full_order(self, flt: SessionFilter, order: str, timeout: float | None = None) -> list[str] | None:
        """The whole order of `flt`/`order` when it is the one the thread computes (waiting for
        it, in a worker thread), else None: compute it yourself. None also if it failed."""
        if self.owner is None or flt != DEFAULT_FILTER or order != "last_active":
            return None
        return self.owner.full_order(timeout)


class OpenPrefetch:
    """One background open of `path`; `take()` hands the store over exactly once, as soon as the
    first page is ready; `full_order()` waits for the whole default order."""

    def __init__(self, path: Path, read_only: bool, first_page: int) -> None:
        self.path = path
        self.read_only = read_only
        self._first_page = first_page
        self._result: Prefetched | None = None
        self._ids: list[str] | None = None
        self._opened = threading.Event()  # the store is open and the head read (or it failed)
        self._stop = threading.Event()  # nobody wants the whole order any more
        self._taken = False
        self._thread_id: int | None = None
        # The open makes dozens of short SQLite calls; each gives up the GIL and must win it back
        # from the UI thread, which keeps it for the whole 5 ms switch interval: 26 ms of work
        # took 250–380 ms. A short interval while this thread opens lets both make progress.
        self._switch = sys.getswitchinterval()
        sys.setswitchinterval(0.0002)
        self._thread = threading.Thread(target=self._run, name="hermes-open-prefetch", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        self._thread_id = threading.get_ident()
        try:
            self._open()
        finally:
            sys.setswitchinterval(self._switch)
            self._opened.set()
        if self._result is not None and not self._result.complete and not self._stop.is_set():
            try:
                # A long read of SQLite's (the GIL is released): the normal interval is fine.
                self._ids = self._result.db.session_order(DEFAULT_FILTER, order="last_active").ids
            except Exception:  # noqa: BLE001 - the screen computes it again and reports
                self._ids = None

    def _open(self) -> None:
        try:
            db, caps, sources = open_store(self.path, self.read_only)
        except Exception:  # noqa: BLE001 - the normal open path reports it
            return
        try:
            # The head walk cannot put pinned sessions first: it is read without them (a
            # provisional head), and the whole order, pinned first, takes over from it.
            head, rows = order_head(db, SessionFilter(), "last_active", self._first_page)
            complete = not head
            if complete:
                head = db.session_order(DEFAULT_FILTER, order="last_active").ids
                rows = db.list_rows(head[: self._first_page])
        except Exception:  # noqa: BLE001 - the normal open path reports it
            db.close()
            return
        self._result = Prefetched(db, caps, sources, head, rows, owner=self, complete=complete)
        if complete:
            self._ids = head

    def take(self, path: Path, read_only: bool, timeout: float = 30.0) -> Prefetched | None:
        """The open store for this open (waiting for its first page), or None: not ours,
        failed, taken already."""
        if self._taken or path != self.path or read_only != self.read_only:
            return None
        self._taken = True
        self._opened.wait(timeout)
        return self._result

    def full_order(self, timeout: float | None = None) -> list[str] | None:
        """The whole default order (waiting for the thread), or None if it failed or timed out."""
        self._thread.join(timeout)
        return None if self._thread.is_alive() else self._ids

    def discard(self) -> None:
        """Stop and close what nobody took (the app quit or opened something else); a store
        that was taken belongs to the screen, but the order read on it is stopped."""
        self._stop.set()
        self._opened.wait(5.0)
        result = self._result
        if result is not None and self._thread.is_alive() and self._thread_id is not None:
            result.db.interrupt(self._thread_id)  # a cold whole order takes seconds
        self._thread.join(5.0)
        if not self._taken and result is not None:
            result.db.close()
        self._taken = True
