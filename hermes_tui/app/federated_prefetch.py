"""FederatedPrefetch: open several profiles' stores and merge their first page while Textual starts.

Over several stores the first paint used to wait, in a row, for Textual's start-up, opening
every store, their source/model lists, every store's `session_order`, the merge, and then a page
worker for the first rows. Started by `federate` (below; before the app runs), this thread does
the store part meanwhile: the screen's open worker takes the open stores (`take`) and the first
`BrowserStores.order()` call of the default list finds the merged order and the first page's
rows ready (`BrowserStores.seed_order`). It reads only; a failure is left for the normal open
path to report, so errors look the same either way.
"""

from __future__ import annotations

import sys
import threading
from dataclasses import dataclass
from typing import Any

from hermes_tui.app.list_views import DEFAULT_FILTER
from hermes_tui.app.stores import BrowserStores, StoreChoice

_DEFAULT_SWITCH_S = 0.005  # CPython's default
_FAST_SWITCH_S = 0.0002


@dataclass
class PrefetchedStores:
    """What the thread produced for one (choice, read_only)."""

    stores: BrowserStores
    sources: list[str]
    models: list[str]


class FederatedPrefetch:
    """One background open of `choice`'s stores; `take()` hands the result over exactly once."""

    def __init__(self, choice: StoreChoice, read_only: bool, first_page: int) -> None:
        self.choice = choice
        self.read_only = read_only
        self._first_page = first_page
        self._result: PrefetchedStores | None = None
        self._taken = False
        self._lock = threading.Lock()
        # As for one store (prefetch.py): the opens make dozens of short SQLite calls and thread
        # hops, each of which must win the GIL back from the UI thread starting up; with the
        # default 5 ms switch interval that multiplied the work several times. Short while this
        # runs, then back to the default (another prefetch may have shortened it already).
        self._normal_switch = max(sys.getswitchinterval(), _DEFAULT_SWITCH_S)
        sys.setswitchinterval(_FAST_SWITCH_S)
        self._thread = threading.Thread(target=self._run, name="hermes-open-stores", daemon=True)
        self._thread.start()

    def keep_fast_switching(self) -> None:
        """Shorten the switch interval again while this still runs (the dropped one-file
        prefetch restores the default when it ends)."""
        with self._lock:
            if self._thread.is_alive():
                sys.setswitchinterval(_FAST_SWITCH_S)

    def _run(self) -> None:
        try:
            self._open()
        finally:
            with self._lock:
                sys.setswitchinterval(self._normal_switch)

    def _open(self) -> None:
        try:
            stores = BrowserStores.open(self.choice, self.read_only, wait=False)
        except Exception:  # noqa: BLE001 - the normal open path reports it
            return
        try:
            stores.settle()  # the first stores; the others join the list as they answer
            sources, models = stores.values("source"), stores.values("model")
            if stores.profiles:
                # The screen's first list: every store, last active first, no filter yet.
                result = stores.order(
                    DEFAULT_FILTER, "last_active", None, None, first=2 * self._first_page, prepare=False
                )
                keys = list(result.keys[: self._first_page])
                rows = stores.list_rows(keys)
                stores.seed_order(
                    DEFAULT_FILTER, "last_active", result, rows if len(rows) == len(keys) else []
                )
        except Exception:  # noqa: BLE001 - the normal open path reports it
            stores.close()
            return
        with self._lock:
            if self._taken:  # discarded meanwhile: nobody will take it
                stores.close()
                return
            self._result = PrefetchedStores(stores, sources, models)

    def take(self, choice: StoreChoice, read_only: bool, timeout: float = 30.0) -> PrefetchedStores | None:
        """The result for this open (waiting for the thread), or None: not ours, failed, taken."""
        if self._taken or choice != self.choice or read_only != self.read_only:
            return None
        self._thread.join(timeout)
        with self._lock:
            self._taken = True
            return self._result

    def discard(self) -> None:
        """Close a result nobody took (the app quit, or opened something else)."""
        with self._lock:
            result, self._result = (None if self._taken else self._result), None
            self._taken = True
        if result is not None:
            result.stores.close()


def federate(app: Any, choice: StoreChoice) -> None:
    """Make `app` (a `HermesApp` not yet running) open `choice`'s stores instead of its one
    file: the main screen reads `app.store_choice` when it mounts, and takes the stores from
    `app.stores_prefetch`, which opens them and merges the first page now, while Textual starts.
    The one-file open prefetch started by the app's constructor is dropped in the background
    (waiting for it here delayed the first paint by its whole order)."""
    from hermes_tui.app.widgets.session_list import PAGE_SIZE

    ahead = FederatedPrefetch(choice, bool(getattr(app, "read_only", False)), PAGE_SIZE)
    prefetch = getattr(app, "prefetch", None)
    if prefetch is not None:
        app.prefetch = None

        def drop() -> None:
            prefetch.discard()
            ahead.keep_fast_switching()

        threading.Thread(target=drop, name="hermes-drop-prefetch", daemon=True).start()
    app.store_choice = choice
    app.stores_prefetch = ahead
