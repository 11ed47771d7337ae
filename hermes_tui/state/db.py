"""`SessionDB`: the public face of the store, composed of one mixin per concern."""

from __future__ import annotations

from .housekeeping import HousekeepingMixin
from .importing import ImportMixin
from .lineage import LineageMixin
from .listing import ListingMixin
from .live import LiveMixin
from .maintenance import MaintenanceMixin
from .messages import MessagesMixin
from .repair import RepairMixin
from .search import SearchMixin
from .sessions import SessionsMixin
from .stats import StatsMixin
from .titles import TitlesMixin
from .trash import TrashMixin


class SessionDB(
    SessionsMixin,
    MessagesMixin,
    TitlesMixin,
    ListingMixin,
    LineageMixin,
    SearchMixin,
    HousekeepingMixin,
    StatsMixin,
    MaintenanceMixin,
    ImportMixin,
    RepairMixin,
    TrashMixin,
    LiveMixin,
):
    """The Hermes session store (`state.db`, schema v23) on APSW.

    `SessionDB(db_path=None, read_only=False, migrate=True)`; see docs/store-api.md.
    """
