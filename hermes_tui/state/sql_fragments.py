"""SQL fragments shared by listing, lineage, migrations and deletes (the writers' exact predicates).

One place for "what kind of child is this row", so every query classifies edges the same way.
Two generations of Hermes define them: 0.19.0 (schema v22, and our v23) knows branch, compression
and delegate children; today's Hermes (schema v24+, the v31 writer's `hermes_state_common.py`)
adds *reset* children (`_reset_from`, or the legacy same-`session_key` heuristic), lists them
like branches and never follows them as compression continuations. Functions taking `reset`
give the v24+ predicate when it is True (`resets_known(db)` decides it per file).
"""

from __future__ import annotations

from typing import Protocol

# json_valid first: an empty or malformed model_config (any writer may store one) must read as
# "no marker", not fail the whole listing with "malformed JSON".
BRANCHED_FROM = (
    "json_extract(CASE WHEN json_valid({a}.model_config) THEN {a}.model_config END, '$._branched_from')"
)
DELEGATE_FROM = (
    "json_extract(CASE WHEN json_valid({a}.model_config) THEN {a}.model_config END, '$._delegate_from')"
)
RESET_FROM = "json_extract(CASE WHEN json_valid({a}.model_config) THEN {a}.model_config END, '$._reset_from')"

#: End reasons of a deliberate conversation reset (v31's `_RESET_END_REASONS`): a child on the
#: parent's own non-empty `session_key` after one of them is a legacy (pre-marker) reset child.
RESET_END_REASONS = (
    "session_reset",
    "session_switch",
    "idle",
    "daily",
    "suspended",
    "resume_pending_expired",
)

_BRANCH_CHILD = (
    BRANCHED_FROM + " IS NOT NULL"
    " OR EXISTS (SELECT 1 FROM sessions p"
    "            WHERE p.id = {a}.parent_session_id"
    "            AND p.end_reason = 'branched'"
    "            AND {a}.started_at >= p.ended_at)"
)

_COMPRESSION_CHILD = (
    "EXISTS (SELECT 1 FROM sessions p"
    "        WHERE p.id = {a}.parent_session_id"
    "        AND p.end_reason = 'compression')"
)

_RESET_CHILD = (
    RESET_FROM + " IS NOT NULL"
    " OR EXISTS (SELECT 1 FROM sessions p"
    "            WHERE p.id = {a}.parent_session_id"
    "            AND p.end_reason IN (" + ", ".join(f"'{r}'" for r in RESET_END_REASONS) + ")"
    "            AND {a}.session_key IS NOT NULL"
    "            AND {a}.session_key != ''"
    "            AND {a}.session_key = p.session_key)"
)


#: The first schema of today's Hermes (v24–v31): files read (and written) by its rules.
TODAYS_HERMES_SCHEMA = 24


class _Schema(Protocol):
    _schema_version: int | None

    def has_column(self, table: str, column: str) -> bool: ...


def todays_hermes(db: _Schema) -> bool:
    """The file is written by today's Hermes (schema v24+; the v31 writer is the reference)."""
    return (db._schema_version or 0) >= TODAYS_HERMES_SCHEMA


def resets_known(db: _Schema) -> bool:
    """The file is written by today's Hermes (schema v24+), whose rules know reset children.
    0.19.0's files (v22) and ours (v23) keep 0.19.0's rules: a reset child there is an
    untagged child, as 0.19.0 treats it."""
    return todays_hermes(db) and db.has_column("sessions", "session_key")


def branch_child(alias: str = "s") -> str:
    return "(" + _BRANCH_CHILD.format(a=alias) + ")"


def compression_child(alias: str = "s") -> str:
    return "(" + _COMPRESSION_CHILD.format(a=alias) + ")"


def reset_child(alias: str = "s") -> str:
    """A reset child (v31's `_RESET_CHILD_SQL`): its own conversation after a reset boundary."""
    return "(" + _RESET_CHILD.format(a=alias) + ")"


def delegate_from(alias: str = "s") -> str:
    return DELEGATE_FROM.format(a=alias)


def listable(alias: str = "s", reset: bool = False) -> str:
    """Rows pickers surface: roots and branch children (0.19.0's `_LISTABLE_CHILD_SQL`), and
    with `reset` reset children too (v31's)."""
    resets = f" OR {reset_child(alias)}" if reset else ""
    return f"({alias}.parent_session_id IS NULL OR {branch_child(alias)}{resets})"


def continuation_child(alias: str = "c", reset: bool = False) -> str:
    """Conditions on a child of a compression-ended parent that make it the chain's continuation
    (not a branch, delegate, reset fork or tool session): the chain walks of both writers."""
    resets = f" AND NOT {reset_child(alias)}" if reset else ""
    return (
        f"{BRANCHED_FROM.format(a=alias)} IS NULL AND {DELEGATE_FROM.format(a=alias)} IS NULL"
        f"{resets} AND COALESCE({alias}.source, '') != 'tool'"
    )


def ephemeral_child(alias: str = "s", reset: bool = False) -> str:
    """Subagent runs: children that are neither branches, compression continuations nor (with
    `reset`) reset children."""
    resets = f" AND NOT {reset_child(alias)}" if reset else ""
    return (
        f"({alias}.parent_session_id IS NOT NULL"
        f" AND NOT {branch_child(alias)}"
        f" AND NOT {compression_child(alias)}{resets})"
    )


def edge_kind_case(alias: str = "s", reset: bool = False) -> str:
    """CASE expression naming the edge from `alias` to its parent (NULL for roots).

    Order matters: a delegate marker wins over everything (it is written at creation),
    then an explicit branch, then (with `reset`) a reset, then compression, then "other"
    (untagged children). A reset child of a compression-ended parent is a reset: v31 never
    follows it as the continuation.
    """
    resets = f" WHEN {reset_child(alias)} THEN 'reset'" if reset else ""
    return (
        f"CASE WHEN {alias}.parent_session_id IS NULL THEN NULL"
        f" WHEN {delegate_from(alias)} IS NOT NULL THEN 'delegate'"
        f" WHEN {branch_child(alias)} THEN 'branch'{resets}"
        f" WHEN {compression_child(alias)} THEN 'compression'"
        " ELSE 'other' END"
    )


def like_escape(text: str) -> str:
    """Escape LIKE wildcards for `ESCAPE '\\'`."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
