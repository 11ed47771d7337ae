"""`SessionDB`: the public face of the store, composed of one mixin per concern."""

from __future__ import annotations

from .display import DisplayMixin
from .flags import FlagsMixin
from .forking import ForkMixin
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
from .usage import UsageMixin
from .usage_check import UsageCheckMixin


class SessionDB(
    SessionsMixin,
    MessagesMixin,
    DisplayMixin,
    TitlesMixin,
    ForkMixin,
    FlagsMixin,
    ListingMixin,
    LineageMixin,
    SearchMixin,
    HousekeepingMixin,
    StatsMixin,
    UsageMixin,
    UsageCheckMixin,
    MaintenanceMixin,
    ImportMixin,
    RepairMixin,
    TrashMixin,
    LiveMixin,
):
    """The Hermes session store (`state.db`, schema v23) on APSW.

    `SessionDB(db_path=None, read_only=False, migrate=True)`; see docs/store-api.md.
    """

    def _install_hooks(self) -> None:
        """Every way a mixin hooks into the core, in one place (called by `_Core.__init__`)."""
        self._write_guards.append(self._side_write_guard)  # search: deleted text leaves the side index
        self._open_hooks.append(self._resume_conversion)  # maintenance: resume a storage conversion
        self._open_hooks.append(self._side_check)  # search: forget what others deleted from the side index
        self._close_hooks.append(self._side_stop)  # search: ... and stop that before closing
        self._upkeep_pre_steps.append(self._finish_conversion)  # maintenance: ... and finish it
