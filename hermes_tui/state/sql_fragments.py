"""SQL fragments shared by listing, lineage, migrations and deletes (0.19.0's exact predicates).

One place for "what kind of child is this row", so every query classifies edges the same way.
"""

from __future__ import annotations

# json_valid first: an empty or malformed model_config (any writer may store one) must read as
# "no marker", not fail the whole listing with "malformed JSON".
BRANCHED_FROM = (
    "json_extract(CASE WHEN json_valid({a}.model_config) THEN {a}.model_config END, '$._branched_from')"
)
DELEGATE_FROM = (
    "json_extract(CASE WHEN json_valid({a}.model_config) THEN {a}.model_config END, '$._delegate_from')"
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


def branch_child(alias: str = "s") -> str:
    return "(" + _BRANCH_CHILD.format(a=alias) + ")"


def compression_child(alias: str = "s") -> str:
    return "(" + _COMPRESSION_CHILD.format(a=alias) + ")"


def delegate_from(alias: str = "s") -> str:
    return DELEGATE_FROM.format(a=alias)


def listable(alias: str = "s") -> str:
    """Rows pickers surface: roots and branch children (0.19.0's `_LISTABLE_CHILD_SQL`)."""
    return f"({alias}.parent_session_id IS NULL OR {branch_child(alias)})"


def ephemeral_child(alias: str = "s") -> str:
    """Subagent runs: children that are neither branches nor compression continuations."""
    return (
        f"({alias}.parent_session_id IS NOT NULL"
        f" AND NOT {branch_child(alias)}"
        f" AND NOT {compression_child(alias)})"
    )


def edge_kind_case(alias: str = "s") -> str:
    """CASE expression naming the edge from `alias` to its parent (NULL for roots).

    Order matters: a delegate marker wins over everything (it is written at creation),
    then an explicit branch, then compression, then "other" (untagged children).
    """
    return (
        f"CASE WHEN {alias}.parent_session_id IS NULL THEN NULL"
        f" WHEN {delegate_from(alias)} IS NOT NULL THEN 'delegate'"
        f" WHEN {branch_child(alias)} THEN 'branch'"
        f" WHEN {compression_child(alias)} THEN 'compression'"
        " ELSE 'other' END"
    )


def like_escape(text: str) -> str:
    """Escape LIKE wildcards for `ESCAPE '\\'`."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
