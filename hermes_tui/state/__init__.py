"""The Hermes Agent session store (`state.db`), re-implemented on APSW. Knows nothing of Textual."""

from .db import SessionDB
from .display import FOLD_HIDDEN, FOLD_INACTIVE
from .errors import (
    DiskFullError,
    FeatureUnavailable,
    IntegrityError,
    InvalidArgument,
    LockTimeout,
    MessageNotFound,
    NotADatabaseError,
    NotAHermesStore,
    QueryTooComplex,
    ReadOnlyError,
    SessionNotFound,
    StorageError,
    StoreError,
    StructureLocked,
    TitleError,
)
from .federation import (
    FederatedSearch,
    Federation,
    MergedOrder,
    OrderKeys,
    ProfileError,
    RowKeys,
    open_stores,
)
from .list_order import OrderHead, SessionFilter, SessionOrder, sort_key
from .live import Changes, ChangeWatcher, LiveCursor
from .paths import default_db_path, user_cache_dir, user_data_dir
from .profiles import (
    StoreRef,
    StoreStatus,
    discover_stores,
    hermes_root,
    open_store,
    probe_store,
    probe_stores,
    store_workers,
)
from .repair import diagnose, is_fts_corruption_error, is_malformed_db_error, repair, repair_state_db_schema
from .schema import SCHEMA_VERSION
from .search import SearchOutcome
from .text import content_text, tool_call_fields
from .trash import TRASH_MAX_BYTES, TRASH_RETENTION_S, TrashEntryNotFound, TrashError
from .usage_federation import (
    federated_check_sessions,
    federated_usage_budget,
    federated_usage_check,
    federated_usage_report,
    federated_usage_sessions,
)
from .usage_model import (
    CHECK_KINDS,
    BudgetStatus,
    UnpricedModel,
    UsageCheck,
    UsageFigures,
    UsageReport,
    UsageSession,
)
from .usage_model import (
    GROUPS as USAGE_GROUPS,
)
from .usage_time import PERIODS as USAGE_PERIODS
from .usage_time import UsagePeriod, last_days_start, local_tz
from .write_signal import RECHECK_S, WriteSignal, WriteSignals, write_signals

__all__ = [
    "FOLD_HIDDEN",
    "FOLD_INACTIVE",
    "Changes",
    "ChangeWatcher",
    "LiveCursor",
    "WriteSignal",
    "RECHECK_S",
    "WriteSignals",
    "write_signals",
    "FederatedSearch",
    "Federation",
    "MergedOrder",
    "ProfileError",
    "OrderKeys",
    "RowKeys",
    "StoreRef",
    "StoreStatus",
    "default_db_path",
    "user_cache_dir",
    "user_data_dir",
    "discover_stores",
    "hermes_root",
    "open_store",
    "open_stores",
    "probe_store",
    "probe_stores",
    "store_workers",
    "SCHEMA_VERSION",
    "DiskFullError",
    "FeatureUnavailable",
    "IntegrityError",
    "InvalidArgument",
    "LockTimeout",
    "MessageNotFound",
    "NotADatabaseError",
    "NotAHermesStore",
    "QueryTooComplex",
    "ReadOnlyError",
    "SearchOutcome",
    "SessionDB",
    "content_text",
    "tool_call_fields",
    "SessionFilter",
    "SessionNotFound",
    "SessionOrder",
    "sort_key",
    "OrderHead",
    "StorageError",
    "StoreError",
    "StructureLocked",
    "TitleError",
    "diagnose",
    "is_fts_corruption_error",
    "is_malformed_db_error",
    "repair",
    "repair_state_db_schema",
    "TRASH_MAX_BYTES",
    "TRASH_RETENTION_S",
    "TrashEntryNotFound",
    "TrashError",
    "BudgetStatus",
    "CHECK_KINDS",
    "UnpricedModel",
    "USAGE_GROUPS",
    "USAGE_PERIODS",
    "UsageCheck",
    "UsageFigures",
    "UsagePeriod",
    "UsageReport",
    "UsageSession",
    "federated_check_sessions",
    "federated_usage_budget",
    "federated_usage_check",
    "federated_usage_report",
    "federated_usage_sessions",
    "last_days_start",
    "local_tz",
]
