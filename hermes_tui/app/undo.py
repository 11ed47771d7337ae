"""What `u` can undo: the trash entries this app's deletes and prunes wrote and the flags its
archive / pin keys changed, and how a restore's result reads.

Kept apart from the dialogs and from the key handlers because both use it: the delete and prune
dialogs remember each entry they write, the flag keys each change they make, the trash screen
forgets the entries it restores or empties, and the `u` handler (`session_actions.undo`) undoes
the newest.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from textual.app import App

from hermes_tui.formatting import plural


@dataclass(frozen=True)
class FlagChange:
    """An archive, unarchive, pin or unpin this app made: `u` sets `flag` back to `not value` on
    the sessions whose value it changed (`set_session_flags` spans their compression lineages,
    as the change did) and hides again those a pin made visible. Hermes' `auto_archived` mark,
    which a deliberate archive or unarchive clears, is not put back (no store call sets it)."""

    flag: str
    value: bool
    changed: tuple[str, ...]
    unhidden: tuple[str, ...] = ()
    db_path: Path | None = None


@dataclass(frozen=True)
class ForkMade:
    """A fork this app made (`B`): `u` removes it through the trash, as a delete does (the
    trash entry can itself be restored from `T`)."""

    session_id: str
    db_path: Path | None = None


#: What `u` can undo, one entry of this app each, oldest first (`u` takes the last).
UndoEntry = str | FlagChange | ForkMade

#: What `u` can undo, oldest first (`u` takes the last): trash entry ids written by this app's
#: deletes and prunes, its flag changes and its forks.
_UNDO: weakref.WeakKeyDictionary[App[Any], list[UndoEntry]] = weakref.WeakKeyDictionary()


#: The store each entry was written by: with several profiles open, `u` restores through that
#: store (its trash folder sits beside it), not through the store of the row under the cursor.
_WHERE: weakref.WeakKeyDictionary[App[Any], dict[str, Path]] = weakref.WeakKeyDictionary()


def remember_trash_entry(app: App[Any], entry_id: str | None, db_path: Path | None = None) -> None:
    """A delete or prune of the store at `db_path` wrote `entry_id`: `u` will restore it (the
    newest first)."""
    if entry_id:
        _UNDO.setdefault(app, []).append(entry_id)
        if db_path is not None:
            _WHERE.setdefault(app, {})[entry_id] = Path(db_path)


def entry_store(app: App[Any], entry_id: str) -> Path | None:
    """The store file whose delete or prune wrote `entry_id` (None: not recorded)."""
    return _WHERE.get(app, {}).get(entry_id)


def remember_flag_change(app: App[Any], change: FlagChange) -> None:
    """An archive/pin key changed `change.changed`: `u` will set them back (newest first)."""
    if change.changed:
        _UNDO.setdefault(app, []).append(change)


def remember_fork(app: App[Any], fork: ForkMade) -> None:
    """`B` made `fork.session_id`: `u` will move it to the trash."""
    _UNDO.setdefault(app, []).append(fork)


def undo_entries(app: App[Any]) -> list[UndoEntry]:
    """What `u` can still undo in this app, oldest first (the list itself): trash entry ids,
    flag changes and forks."""
    return _UNDO.setdefault(app, [])


def restore_summary(result: dict[str, Any]) -> tuple[str, list[str]]:
    """What a `restore_trash` result says: one line, then one line per session that did not
    come back as it was (conflicts, cleared titles, roots). Ids are the store's; titles are not
    shown here, so nothing needs sanitizing beyond the caller's `Text`."""
    line = f"Restored {plural(result['restored'], 'session')} ({plural(result['messages'], 'message')})"
    if result["conflicts"]:
        line += f", {plural(result['conflicts'], 'conflict')}: kept out, live data untouched"
    details: list[str] = []
    for item in result.get("sessions") or []:
        if item["status"] == "conflict":
            details.append(f"{item['id']}: conflict: {item.get('reason') or ''}")
        elif item["status"] == "present":
            details.append(f"{item['id']}: {item.get('reason') or 'already present'}")
        for note in item.get("notes") or []:
            details.append(f"{item['id']}: {note}")
    return line, details
