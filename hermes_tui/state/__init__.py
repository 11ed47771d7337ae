"""The Hermes Agent session store (`state.db`), re-implemented on APSW. Knows nothing of Textual."""

from .db import SessionDB
from .errors import (
    IntegrityError,
    InvalidArgument,
    LockTimeout,
    NotADatabaseError,
    ReadOnlyError,
    SessionNotFound,
    StoreError,
    StructureLocked,
    TitleError,
)
from .listing import SessionFilter, SessionOrder
from .schema import SCHEMA_VERSION
from .search import SearchOutcome

__all__ = [
    "SCHEMA_VERSION",
    "IntegrityError",
    "InvalidArgument",
    "LockTimeout",
    "NotADatabaseError",
    "ReadOnlyError",
    "SearchOutcome",
    "SessionDB",
    "SessionFilter",
    "SessionNotFound",
    "SessionOrder",
    "StoreError",
    "StructureLocked",
    "TitleError",
]
