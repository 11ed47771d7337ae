"""What the workers (and the followers' threads) tell the main screen.

Their handler names are the main screen's (``namespace="main_screen"``): the app listens to
`on_main_screen_opened` and `on_main_screen_stores_opened`. `MainScreen` exposes each one under
its name (`MainScreen.LiveOrder`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.message import Message

from hermes_tui.app.controllers.transcript_loading import LoadedSession
from hermes_tui.app.live_follow import LiveUpdate
from hermes_tui.app.prefetch import Prefetched
from hermes_tui.app.stores import BrowserStores, OrderResult
from hermes_tui.app.widgets.transcript_items import MessageView
from hermes_tui.state import SessionDB


class Opened(Message, namespace="main_screen"):
    """The database opened (worker → screen)."""

    def __init__(
        self,
        db: SessionDB,
        caps: dict[str, Any],
        sources: list[str],
        models: list[str],
        ids: list[str] | None = None,
        first_rows: list[dict[str, Any]] | None = None,
        prefetched: Prefetched | None = None,
    ) -> None:
        super().__init__()
        self.db = db
        self.caps = caps
        self.sources = sources
        self.models = models
        self.ids = ids  # the default order, when the open prefetch computed it
        self.first_rows = first_rows or []
        self.prefetched = prefetched  # the open prefetch: its head and, later, its order


class Missing(Message, namespace="main_screen"):
    """There is no database file at the path."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path


class OpenFailed(Message, namespace="main_screen"):
    """The file exists but could not be opened (corrupt, not SQLite, permissions)."""

    def __init__(self, path: Path, error: str) -> None:
        super().__init__()
        self.path = path
        self.error = error


class OrderLoaded(Message, namespace="main_screen"):
    """Ordered ids for the current filter."""

    def __init__(
        self,
        ids: Any,
        keep: str | None,
        seconds: float,
        store_total: int | None = None,
        first_rows: list[dict[str, Any]] | None = None,
        provisional: bool = False,
        handover: bool = False,
    ) -> None:
        super().__init__()
        self.ids = ids
        self.keep = keep
        self.seconds = seconds
        self.store_total = store_total  # every session of the store (None: not counted)
        self.first_rows = first_rows  # the rows of page 0, read with the order
        #: `ids` are only the head of the order (first paint); the whole order follows.
        self.provisional = provisional
        #: The whole order for the head shown: the view and cursor stay where they are.
        self.handover = handover

    @classmethod
    def of(cls, result: OrderResult, keep: Any) -> OrderLoaded:
        """What the list shows of an order that came (`OrderSource.orders`): its keys, its
        first rows, and whether it is a head (first paint) or the whole order for it."""
        extra = result.extra
        return cls(
            result.keys,
            keep,
            result.seconds,
            extra.get("store_total"),
            extra.get("first_rows"),
            provisional=bool(extra.get("provisional")),
            handover=bool(extra.get("handover")),
        )


class SessionLoaded(Message, namespace="main_screen"):
    """A transcript and lineage are ready."""

    def __init__(self, loaded: LoadedSession) -> None:
        super().__init__()
        self.loaded = loaded


class ModelsRead(Message, namespace="main_screen"):
    """The model filter's choices, read after first paint (worker → screen)."""

    def __init__(self, scope: Any, models: list[str]) -> None:
        super().__init__()
        self.scope = scope  # the one store's `OneStore` (stale once `MainScreen.scope` is another)
        self.models = models


class StoresRead(Message, namespace="main_screen"):
    """The stores and the source and model menus' choices over them (worker → screen)."""

    def __init__(self, stores: BrowserStores, sources: list[str], models: list[str]) -> None:
        super().__init__()
        self.stores = stores
        self.sources = sources
        self.models = models


class StoresOpened(StoresRead, namespace="main_screen"):
    """Several profiles' stores opened (worker → screen)."""


class StoresArrived(Message, namespace="main_screen"):
    """Stores answered since the last of these: opened, failed to, or brought an order they
    were late with (a pool thread → screen; one on its way at a time)."""

    def __init__(self, stores: BrowserStores) -> None:
        super().__init__()
        self.stores = stores


class StoreValues(StoresRead, namespace="main_screen"):
    """The source and model menus over every store, once all answered (worker → screen)."""


class MergedLoaded(Message, namespace="main_screen"):
    """The list's order, of one store or the merge of several (worker → screen)."""

    def __init__(self, result: OrderResult, profiles: tuple[str, ...] | None, keep: Any = None) -> None:
        super().__init__()
        self.result = result
        self.profiles = profiles
        self.keep = keep  # the session the cursor stays on


class StoreLive(Message, namespace="main_screen"):
    """A store's follower saw commits or fresh statuses (polling thread → screen); ``profile``
    None: the one store of a single-store browser."""

    def __init__(self, profile: str | None, update: LiveUpdate) -> None:
        super().__init__()
        self.profile = profile
        self.update = update


class LiveSession(Message, namespace="main_screen"):
    """What the live follower's changes mean for the open session (worker → screen)."""

    def __init__(
        self,
        session_id: str,
        row: dict[str, Any] | None,
        items: list[MessageView] | None,
        lineage: dict[str, Any] | None,
        failed: bool = False,
    ) -> None:
        super().__init__()
        self.session_id = session_id
        self.row = row
        self.items = items
        self.lineage = lineage
        self.failed = failed  # the read failed (StoreFailed says why): only the pacer hears


class LiveOrder(Message, namespace="main_screen"):
    """A fresh order after live changes, of one store or the merge of several (worker →
    screen); ``result`` None: it could not be read (`StoreFailed` says why)."""

    def __init__(self, result: OrderResult | None, key: tuple[Any, ...]) -> None:
        super().__init__()
        self.result = result
        self.key = key  # (filter, order, profiles, active) it answers
