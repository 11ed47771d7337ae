"""The Hermes Agent session store (`state.db`), re-implemented on APSW. Knows nothing of Textual."""

from .db import SessionDB
from .errors import (
    DiskFullError,
    IntegrityError,
    InvalidArgument,
    LockTimeout,
    NotADatabaseError,
    NotAHermesStore,
    ReadOnlyError,
    SessionNotFound,
    StorageError,
    StoreError,
    StructureLocked,
    TitleError,
)
from .listing import SessionFilter, SessionOrder
from .schema import SCHEMA_VERSION
from .search import SearchOutcome

__all__ = [
    "SCHEMA_VERSION",
    "DiskFullError",
    "IntegrityError",
    "InvalidArgument",
    "LockTimeout",
    "NotADatabaseError",
    "NotAHermesStore",
    "ReadOnlyError",
    "SearchOutcome",
    "SessionDB",
    "SessionFilter",
    "SessionNotFound",
    "SessionOrder",
    "StorageError",
    "StoreError",
    "StructureLocked",
    "TitleError",
]
