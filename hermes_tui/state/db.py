"""`SessionDB`: the public face of the store, composed of one mixin per concern."""

from __future__ import annotations

from .housekeeping import HousekeepingMixin
from .importing import ImportMixin
from .lineage import LineageMixin
from .listing import ListingMixin
from .maintenance import MaintenanceMixin
from .messages import MessagesMixin
from .search import SearchMixin
from .sessions import SessionsMixin
from .stats import StatsMixin
from .titles import TitlesMixin


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
):
    """The Hermes session store (`state.db`, schema v23) on APSW.

    `SessionDB(db_path=None, read_only=False, migrate=True)`; see docs/store-api.md.
    """
