"""Several stores open at once: their live follower, what each store's follower cares about,
the failures told, and whether the list's last merge is behind the stores that opened since.

`StoresWatch` is a plain object the main screen owns while several stores are open; its
decisions (`keys_by_profile`, `merge_behind`, `failure_notes`) are pure functions.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from hermes_tui.app import cpu_share
from hermes_tui.app.live_follow import LiveUpdate
from hermes_tui.app.stores import BrowserStores, OrderResult
from hermes_tui.app.stores_follow import StoresFollower
from hermes_tui.safe_text import inert

#: Stores whose failure is notified one by one (then one notification for the rest), and named
#: in the header's tooltip (2,700 profile folders without a store were 2,700 notifications).
FAILURES_TOLD = 3


def keys_by_profile(keys: Iterable[Any], profiles: Iterable[str]) -> dict[str, list[str]]:
    """The list's ``(profile, id)`` keys grouped by store (every profile present, maybe empty)."""
    by_profile: dict[str, list[str]] = {p: [] for p in profiles}
    for key in keys:
        if isinstance(key, tuple) and key[0] in by_profile:
            by_profile[key[0]].append(key[1])
    return by_profile


def merge_behind(
    wanted: Iterable[str], open_profiles: Iterable[str], merged: set[str], pending: set[str]
) -> bool:
    """Open stores of the list's profiles that the last merge neither covered nor waits for."""
    return not set(wanted) & set(open_profiles) <= merged | pending


def failure_notes(failed: Sequence[Any], told: set[str]) -> tuple[list[tuple[str, str]], set[str]]:
    """The notifications ``(text, title)`` for stores that failed since (``told`` were told): one
    each for the first `FAILURES_TOLD` of all, then one for the rest; and the profiles told now."""
    new = [r for r in failed if r.profile not in told]
    if not new:
        return [], set()
    room = max(0, FAILURES_TOLD - len(told))
    notes = [(inert(ref.badge, newlines=False), "A store could not be opened") for ref in new[:room]]
    if len(new) > room:
        notes.append(
            (
                f"{len(new) - room:,} more stores could not be opened: see the header.",
                "Stores could not be opened",
            )
        )
    return notes, {r.profile for r in new}


class StoresWatch:
    """One follower thread for every open store, and the bookkeeping of the merged list."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self.follower: StoresFollower | None = None
        #: Stores whose failure was notified.
        self.failures_told: set[str] = set()
        #: The list's last merge: the stores it covered and those it left out because they had
        #: not answered yet.
        self.merged_profiles: set[str] = set()
        self.merge_pending: set[str] = set()
        self.menu_profiles: list[str] = []  # the profile menu's choices

    def start(self, stores: BrowserStores, report: Callable[[str, LiveUpdate], None]) -> None:
        """Follow every open store (stores that open later join: `add_open`); ``report`` runs on
        the follower's thread, and only for the current follower."""
        self.stop()

        def reported(profile: str, update: LiveUpdate) -> None:
            if follower is self.follower and not follower.stopped:
                report(profile, update)

        follower = StoresFollower(stores.fed.submit_each, reported, clock=self.clock)
        self.follower = follower
        self.add_open(stores)
        thread = threading.Thread(target=follower.run, name="hermes-live-stores", daemon=True)
        cpu_share.start_thread(thread)  # at normal priority under `--yield-cpu` (cpu_share.py)

    def add_open(self, stores: BrowserStores) -> None:
        """The stores open now join the follower (adding one twice is a no-op)."""
        follower = self.follower
        for profile in stores.profiles:
            db = stores.db_for(profile)
            if follower is not None and db is not None:
                follower.add(profile, db)

    def stop(self) -> None:
        if self.follower is not None:
            self.follower.stop()
        self.follower = None

    def care(
        self, visible: Iterable[Any], session: str | None, profile: str | None, lineage: list[str]
    ) -> None:
        """Each store's follower cares about its rows on screen; the open session's store also
        about that session and its lineage (so its new messages are reported)."""
        follower = self.follower
        if follower is None:
            return
        by_profile = keys_by_profile(visible, follower.profiles)
        if session and profile in by_profile:
            by_profile[profile].append(session)
            by_profile[profile] += lineage
        for name, ids in by_profile.items():
            follower.care(name, ids)

    def show(self, keys: Iterable[Any]) -> bool:
        """The rows on screen changed: each follower reads their statuses. False when none
        follows."""
        follower = self.follower
        if follower is None:
            return False
        for profile, ids in keys_by_profile(keys, follower.profiles).items():
            follower.show(profile, ids)
        return True

    def merged(self, result: OrderResult) -> None:
        self.merged_profiles = set(result.counts) | set(result.errors)
        self.merge_pending = set(result.pending)

    def behind(self, stores: BrowserStores | None, profiles: tuple[str, ...] | None, opening: bool) -> bool:
        """Open stores (of the list's profiles) that the list's last merge neither covered nor
        is waiting for (those it waits for come with their own `StoresArrived`). While stores
        still open only `StoresArrived` (paced) asks, with `opening`: a re-merge after each
        re-merge kept the event loop and the stores' threads busy."""
        if stores is None or (stores.opening and not opening):
            return False
        wanted = profiles or stores.profiles
        return merge_behind(wanted, stores.profiles, self.merged_profiles, self.merge_pending)

    def failures(self, stores: BrowserStores) -> list[tuple[str, str]]:
        """The notifications to show for the stores that failed since the last call."""
        notes, told = failure_notes(stores.failed, self.failures_told)
        self.failures_told |= told
        return notes
