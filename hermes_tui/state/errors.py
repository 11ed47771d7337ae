"""Exceptions of the store: one clear type per kind of bad input, all under `StoreError`.

APSW's own exceptions never escape the public API for the expected failures (unknown ids,
bad titles, lock timeouts, read-only files, non-SQLite files), so callers — the browser and
the CLI — can show a human message without knowing SQLite.
"""

from __future__ import annotations


class StoreError(Exception):
    """Base class of every error the store raises on purpose."""


class NotADatabaseError(StoreError):
    """The file exists but is not an SQLite database (or is corrupt beyond opening)."""


class NotAHermesStore(NotADatabaseError):
    """The file is not a Hermes session store: empty (0 bytes), or an SQLite database without the
    Hermes tables (another application's). Nothing was written to it."""


class ReadOnlyError(StoreError):
    """A write was attempted on a store opened read-only, or on a read-only file or folder."""


class DiskFullError(StoreError):
    """SQLite ran out of space (disk or quota full): the change was rolled back, nothing was saved."""


class StorageError(StoreError):
    """The file or one of its -wal/-shm/-journal companions could not be opened, read or written
    (disk I/O error, a companion that is a folder, a folder that vanished…)."""


class SessionNotFound(StoreError, KeyError):
    """The named session does not exist."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else "session not found"


class MessageNotFound(StoreError, KeyError):
    """The named message does not exist in that session."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else "message not found"


class IntegrityError(StoreError):
    """The write would break a constraint (a parent that does not exist, a duplicate id…)."""


class TitleError(StoreError, ValueError):
    """A title is too long or already held by another session."""


class FeatureUnavailable(StoreError):
    """The file has no column for this (an older Hermes wrote it: no `pinned` in 0.19.0's v22,
    no `hidden` before today's Hermes); nothing was changed. The store never adds the column."""


class LockTimeout(StoreError):
    """Another process held the write lock through every retry."""


class InvalidArgument(StoreError, ValueError):
    """An argument cannot be stored (for example a field that is not JSON-serialisable)."""


class StructureLocked(StoreError):
    """A structural change was refused (migrate=False, newer schema, or another writer holds the DB)."""


class QueryTooComplex(StoreError):
    """A search query too large to run in bounded time (too many words); the message says why."""


class SessionActiveWriteGuardError(StoreError):
    """Today's Hermes is working in the session right now (a live turn lease or compression
    lock): a user's delete refuses it, as `hermes sessions delete` does. Nothing was changed."""
