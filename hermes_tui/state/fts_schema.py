"""FTS objects of both layouts, and how to tell which one a database has.

Two layouts exist in the wild: the legacy *inline* tables of v11–v22 (what
hermes-agent 0.19.0 creates; each FTS table keeps its own copy of the text) and the v23
*external-content* tables that read text from `messages` through views. A database must only
ever receive the DDL of its own layout: running v23 DDL on a legacy file leaves a mixed, broken
index, and inline `DELETE FROM messages_fts` on an external-content table corrupts it.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

BASE_TRIGGERS = ("messages_fts_insert", "messages_fts_delete", "messages_fts_update")
TRIGRAM_TRIGGERS = (
    "messages_fts_trigram_insert",
    "messages_fts_trigram_delete",
    "messages_fts_trigram_update",
)
CJK_TRIGGERS = ("messages_fts_cjk_insert", "messages_fts_cjk_delete", "messages_fts_cjk_update")

# state_meta keys (v23)
FTS_STORAGE_VERSION_KEY = "fts_storage_version"
FTS_OPTIMIZE_AVAILABLE_KEY = "fts_optimize_available"
REBUILD_HIGH_WATER = "fts_rebuild_high_water"
REBUILD_PROGRESS = "fts_rebuild_progress"
CJK_HIGH_WATER = "fts_cjk_rebuild_high_water"
CJK_PROGRESS = "fts_cjk_rebuild_progress"
CJK_STALE = "fts_cjk_stale"

# ---------------------------------------------------------------------------
# Legacy inline layout (0.19.0's DDL, verbatim: its writers must keep working on it).
# ---------------------------------------------------------------------------
_LEGACY_CONCAT = (
    "COALESCE(new.content, '') || ' ' || COALESCE(new.tool_name, '') || ' ' || COALESCE(new.tool_calls, '')"
)


def _legacy_ddl(table: str, tokenize: str) -> str:
    tok = f",\n    tokenize='{tokenize}'" if tokenize else ""
    return f"""
CREATE VIRTUAL TABLE IF NOT EXISTS {table} USING fts5(
    content{tok}
);

CREATE TRIGGER IF NOT EXISTS {table}_insert AFTER INSERT ON messages BEGIN
    INSERT INTO {table}(rowid, content) VALUES (
        new.id,
        {_LEGACY_CONCAT}
    );
END;

CREATE TRIGGER IF NOT EXISTS {table}_delete AFTER DELETE ON messages BEGIN
    DELETE FROM {table} WHERE rowid = old.id;
END;

CREATE TRIGGER IF NOT EXISTS {table}_update AFTER UPDATE ON messages BEGIN
    DELETE FROM {table} WHERE rowid = old.id;
    INSERT INTO {table}(rowid, content) VALUES (
        new.id,
        {_LEGACY_CONCAT}
    );
END;
"""


LEGACY_BASE_SQL = _legacy_ddl("messages_fts", "")
LEGACY_TRIGRAM_SQL = _legacy_ddl("messages_fts_trigram", "trigram")

LEGACY_CONCAT_SELECT = (
    "SELECT id, COALESCE(content, '') || ' ' || COALESCE(tool_name, '') || ' ' || "
    "COALESCE(tool_calls, '') FROM messages"
)

# ---------------------------------------------------------------------------
# v23 external-content layout with rebuild gates.
# ---------------------------------------------------------------------------


def _gate(ref: str, high_key: str, progress_key: str) -> str:
    """A row is in the index iff id > high-water OR id <= progress (absent markers → -1)."""
    return (
        f"({ref}.id > COALESCE((SELECT CAST(value AS INTEGER) FROM state_meta WHERE key = '{high_key}'), -1)"
        f" OR {ref}.id <= COALESCE((SELECT CAST(value AS INTEGER) FROM state_meta WHERE key = "
        f"'{progress_key}'), -1))"
    )


def _v23_ddl(table: str, source: str, tokenize: str | None, skip_tool: bool, high: str, prog: str) -> str:
    tok = f", tokenize='{tokenize}'" if tokenize else ""
    cols = "content, tool_name, tool_calls"
    role_new = " AND new.role <> 'tool'" if skip_tool else ""
    role_old = " AND old.role <> 'tool'" if skip_tool else ""
    view = ""
    if source != "messages":
        view = (
            f"CREATE VIEW IF NOT EXISTS {source} AS SELECT id, role, content, tool_name, tool_calls "
            "FROM messages WHERE role <> 'tool';\n"
        )
    changed = (
        "(old.content IS NOT new.content OR old.tool_name IS NOT new.tool_name "
        "OR old.tool_calls IS NOT new.tool_calls"
        + (" OR old.role IS NOT new.role" if skip_tool else "")
        + ")"
    )
    of_cols = "content, tool_name, tool_calls" + (", role" if skip_tool else "")
    del_where = " WHERE old.role <> 'tool'" if skip_tool else ""
    ins_where = " WHERE new.role <> 'tool'" if skip_tool else ""
    return f"""
{view}CREATE VIRTUAL TABLE IF NOT EXISTS {table} USING fts5(
    {cols}, content='{source}', content_rowid='id'{tok}
);

CREATE TRIGGER IF NOT EXISTS {table}_insert AFTER INSERT ON messages
WHEN {_gate("new", high, prog)}{role_new} BEGIN
    INSERT INTO {table}(rowid, content, tool_name, tool_calls)
    VALUES (new.id, new.content, new.tool_name, new.tool_calls);
END;

CREATE TRIGGER IF NOT EXISTS {table}_delete AFTER DELETE ON messages
WHEN {_gate("old", high, prog)}{role_old} BEGIN
    INSERT INTO {table}({table}, rowid, content, tool_name, tool_calls)
    VALUES ('delete', old.id, old.content, old.tool_name, old.tool_calls);
END;

CREATE TRIGGER IF NOT EXISTS {table}_update AFTER UPDATE OF {of_cols} ON messages
WHEN {changed} AND {_gate("old", high, prog)} BEGIN
    INSERT INTO {table}({table}, rowid, content, tool_name, tool_calls)
    SELECT 'delete', old.id, old.content, old.tool_name, old.tool_calls{del_where};
    INSERT INTO {table}(rowid, content, tool_name, tool_calls)
    SELECT new.id, new.content, new.tool_name, new.tool_calls{ins_where};
END;
"""


V23_BASE_SQL = _v23_ddl("messages_fts", "messages", None, False, REBUILD_HIGH_WATER, REBUILD_PROGRESS)
V23_TRIGRAM_SQL = _v23_ddl(
    "messages_fts_trigram", "messages_fts_trigram_src", "trigram", True, REBUILD_HIGH_WATER, REBUILD_PROGRESS
)
V23_CJK_SQL = _v23_ddl(
    "messages_fts_cjk", "messages_fts_cjk_src", "cjk_unicode61", True, CJK_HIGH_WATER, CJK_PROGRESS
)


@dataclass(frozen=True)
class FtsLayout:
    """What the file holds, read from `sqlite_master` and `state_meta` (never guessed)."""

    kind: str  # "v23" | "legacy" | "none"
    has_trigram: bool
    has_cjk: bool
    triggers: frozenset[str]
    cjk_stale: bool
    cjk_building: bool
    base_building: bool
    trash_tables: tuple[str, ...]

    @property
    def base_triggers_complete(self) -> bool:
        return all(t in self.triggers for t in BASE_TRIGGERS)

    @property
    def trigram_triggers_complete(self) -> bool:
        return all(t in self.triggers for t in TRIGRAM_TRIGGERS)

    @functools.cached_property
    def trigram_stands_in(self) -> bool:
        """A plain word's trigram phrase can stand for both v23 retries in the first probe: the
        trigram index is complete and kept current (`SearchMixin._word_on_trigram`). Asked by
        every search of a word, so computed once per layout."""
        return (
            self.kind == "v23"
            and self.has_trigram
            and not self.base_building
            and self.trigram_triggers_complete
        )

    @property
    def cjk_triggers_present(self) -> bool:
        return any(t in self.triggers for t in CJK_TRIGGERS)


def detect_layout(master: dict[str, tuple[str, str | None]], meta: dict[str, str]) -> FtsLayout:
    """Classify from `{name: (type, sql)}` of sqlite_master and the state_meta map.

    Legacy = `messages_fts` exists and its CREATE SQL does not mention `tool_name`
    (catches v11–v22 inline and pre-v11 external single-column shapes alike).
    """
    base = master.get("messages_fts")
    if base is None:
        kind = "none"
    elif "tool_name" in (base[1] or ""):
        kind = "v23"
    else:
        kind = "legacy"
    triggers = frozenset(name for name, (typ, _sql) in master.items() if typ == "trigger")
    return FtsLayout(
        kind=kind,
        has_trigram="messages_fts_trigram" in master,
        has_cjk="messages_fts_cjk" in master,
        triggers=triggers,
        cjk_stale=meta.get(CJK_STALE) == "1",
        cjk_building=CJK_HIGH_WATER in meta,
        base_building=REBUILD_HIGH_WATER in meta,
        trash_tables=tuple(sorted(n for n in master if n.startswith("fts_v22_trash_"))),
    )
