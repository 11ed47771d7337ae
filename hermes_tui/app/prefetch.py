"""OpenPrefetch: open the store and order its sessions while Textual is still starting.

First paint waits for three things in a row: the app's own start-up (compose, CSS, first
render: ~0.4 s of GIL-bound Python), opening the file, and `session_order()` (0.2–0.3 s of
SQLite at 1M messages, which runs without the GIL). Started from `HermesApp.__init__`, this
thread does the store's part meanwhile, so the screen's open worker usually finds it done.
It reads only (`migrate=False`); anything unexpected is left for the normal open path to
report, so errors look the same either way.
"""

from __future__ import annotations

import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hermes_tui.state import SessionDB, SessionFilter


def open_store(path: Path, read_only: bool) -> tuple[SessionDB, dict[str, Any], list[str], list[str]]:
    """The browser's one way to open a file: no migration, plus what the header and filters show.
    Raises whatever the store raises (after closing what it opened)."""
    db = SessionDB(path, read_only=read_only, migrate=False)
    try:
        caps = db.capabilities()
        sources = [v for v, _n in db.distinct_values("source") if v]
        models = [v for v, _n in db.distinct_values("model") if v]
    except Exception:
        db.close()
        raise
    return db, caps, sources, models


@dataclass
class Prefetched:
    """What the thread produced for one (path, read_only)."""

    db: SessionDB
    caps: dict[str, Any]
    sources: list[str]
    models: list[str]
    ids: list[str]
    first_rows: list[dict[str, Any]] = field(default_factory=list)


class OpenPrefetch:
    """One background open of `path`; `take()` hands the result over exactly once."""

    def __init__(self, path: Path, read_only: bool, first_page: int) -> None:
        self.path = path
        self.read_only = read_only
        self._first_page = first_page
        self._result: Prefetched | None = None
        self._taken = False
        # The open makes dozens of short SQLite calls; each gives up the GIL and must win it back
        # from the UI thread, which keeps it for the whole 5 ms switch interval: 26 ms of work
        # took 250–380 ms. A short interval while this thread runs lets both make progress.
        self._switch = sys.getswitchinterval()
        sys.setswitchinterval(0.0002)
        self._thread = threading.Thread(target=self._run, name="hermes-open-prefetch", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._open()
        finally:
            sys.setswitchinterval(self._switch)

    def _open(self) -> None:
        try:
            db, caps, sources, models = open_store(self.path, self.read_only)
        except Exception:  # noqa: BLE001 - the normal open path reports it
            return
        try:
            ids = db.session_order(SessionFilter(), order="last_active").ids
            rows = db.list_rows(ids[: self._first_page])
        except Exception:  # noqa: BLE001 - the normal open path reports it
            db.close()
            return
        self._result = Prefetched(db, caps, sources, models, ids, rows)

    def take(self, path: Path, read_only: bool, timeout: float = 30.0) -> Prefetched | None:
        """The result for this open (waiting for the thread), or None: not ours, failed, taken."""
        if self._taken or path != self.path or read_only != self.read_only:
            return None
        self._taken = True
        self._thread.join(timeout)
        return self._result

    def discard(self) -> None:
        """Close a result nobody took (the app quit or opened something else)."""
        self._thread.join(5.0)
        if not self._taken and self._result is not None:
            self._result.db.close()
        self._taken = True
