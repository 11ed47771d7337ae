"""What `u` can undo: the trash entries this app's deletes and prunes wrote, and how a restore's
result reads.

Kept apart from the dialogs and from the key handlers because both use it: the delete and prune
dialogs remember each entry they write, the trash screen forgets the ones it restores or
empties, and the `u` handler (`session_actions.undo`) restores the newest.
"""

from __future__ import annotations

import weakref
from pathlib import Path
from typing import Any

from textual.app import App

from hermes_tui.app.screens.dialog_base import plural

#: Trash entries written by this app's deletes and prunes, oldest first (`u` takes the last).
_UNDO: weakref.WeakKeyDictionary[App[Any], list[str]] = weakref.WeakKeyDictionary()


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


def undo_entries(app: App[Any]) -> list[str]:
    """The entries `u` can still restore in this app, oldest first (the list itself)."""
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
