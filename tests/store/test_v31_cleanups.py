"""Store rules on files of today's Hermes that older code read by 0.19.0's: a prune by last
activity bounds the recency the list shows (one rule, `chains.last_active_sql`), a delete's
preview names reset children, the compression lineage an export follows never takes a reset
child as the continuation, and the list's preview skips hidden rows and compaction summaries.
0.19.0's own files (v22) and ours (v23) keep 0.19.0's rules. (Differential tests against the v31
writer: tests/peer/test_v31_cleanups.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes_tui.state import SessionDB
from tests.store.test_v31_reading import T, _family, add, make_v31, sql

SUMMARY = "[CONTEXT SUMMARY]: the user asked about deploys"
END = "--- END OF CONTEXT SUMMARY — respond to the message below, not the summary above ---"
PRIOR = "[PRIOR CONTEXT — for reference only; not a new message]"
MERGED = "[END OF PRIOR CONTEXT — COMPACTION SUMMARY BELOW]"


@pytest.fixture
def v31(tmp_path: Path) -> Path:
    path = tmp_path / "v31.db"
    make_v31(path)
    return path


# ---------------------------------------------------------------------- prune: one recency rule
@pytest.mark.parametrize("shape", ["v23", "v31"])
def test_prune_by_last_activity_bounds_what_the_list_shows(tmp_path: Path, shape: str) -> None:
    path = tmp_path / "state.db"
    if shape == "v31":
        make_v31(path)
    with SessionDB(path, migrate=shape == "v23") as db:
        add(db, "old", T, T + 10)
        add(db, "far", T, T + 10)  # its newest message is far ahead (year 2106: past v31's window)
        add(db, "fresh", T, T + 10)
        for sid in ("old", "far", "fresh"):
            db.end_session(sid, "user_exit")
    sql(path, "UPDATE messages SET timestamp = 4.3e9 WHERE session_id = 'far'")
    sql(path, "UPDATE messages SET timestamp = ? WHERE session_id = 'fresh'", (T + 5000,))
    cut = T + 1000
    with SessionDB(path, migrate=False) as db:
        listed = {r["id"]: r["last_active"] for r in db.list_rows(["old", "far", "fresh"])}
        planned = {r["id"] for r in db.list_prune_candidates(last_active_before=cut)}
        assert planned == {sid for sid, at in listed.items() if at is not None and at < cut}
        assert planned == ({"old"} if shape == "v23" else {"old", "far"})  # v31 ignores 4.3e9
        assert {r["id"] for r in db.list_prune_candidates(last_active_after=cut)} == set(listed) - planned


# ---------------------------------------------------------------------- deletes name reset children
def test_a_delete_preview_names_reset_children(v31: Path, tmp_path: Path) -> None:
    with SessionDB(v31, migrate=False) as db:
        _family(db)
        kinds = {o["id"]: o["edge_kind"] for o in db.plan_delete(["p", "c"])["orphans"]}
    assert kinds == {
        "marked": "reset",
        "legacy": "reset",
        "other-key": "other",
        "c-reset": "reset",
        "c-next": "compression",
    }
    with SessionDB(tmp_path / "v23.db") as db:  # 0.19.0's rules: untagged children
        _family(db)
        kinds = {o["id"]: o["edge_kind"] for o in db.plan_delete(["p"])["orphans"]}
    assert kinds == {"marked": "other", "legacy": "other", "other-key": "other"}


# ---------------------------------------------------------------------- compression lineage
def _reset_first(db: SessionDB) -> None:
    """A compression-ended parent whose reset fork started before its real continuation."""
    add(db, "c", T, T + 1)
    db.end_session("c", "compression")
    add(db, "c-reset", T + 5, T + 6, parent_session_id="c", model_config={"_reset_from": "c"})
    add(db, "c-next", T + 8, T + 9, parent_session_id="c", model_config={"_reset_from": "elsewhere"})


def test_the_compression_lineage_never_takes_a_reset_child(v31: Path, tmp_path: Path) -> None:
    with SessionDB(v31, migrate=False) as db:
        _reset_first(db)
        assert db.get_compression_lineage("c") == ["c", "c-next"]  # an inherited marker is not its own
        assert db.get_compression_lineage("c-next") == ["c", "c-next"]
        assert db.get_compression_lineage("c-reset") == ["c-reset"]
        exported = db.export_session_lineage("c")
        assert exported is not None and exported["lineage_session_ids"] == ["c", "c-next"]
    with SessionDB(tmp_path / "v23.db") as db:  # 0.19.0: the first child that is not a branch
        _reset_first(db)
        assert db.get_compression_lineage("c") == ["c", "c-reset"]


# ---------------------------------------------------------------------- the preview
PREVIEW_CASES = {
    "hidden": [("a hidden handoff", "hidden"), ("the real question", None)],
    "summary": [(SUMMARY, None), ("what happened next?", None)],
    "carrier": [(f"{SUMMARY}\n{END}\n  deploy it again please", None)],
    "merged": [(f"{PRIOR}\n my own words first \n{MERGED}\n{SUMMARY}", None)],
    "plain": [("just a question", None)],
}
EXPECTED = {
    "hidden": "the real question",
    "summary": "what happened next?",
    "carrier": "deploy it again please",
    "merged": "my own words first",
    "plain": "just a question",
}


def _previews(path: Path) -> dict[str, str]:
    with SessionDB(path) as db:
        for n, (sid, rows) in enumerate(PREVIEW_CASES.items()):
            db.create_session(sid, "cli")
            for i, (text, kind) in enumerate(rows):
                db.append_message(sid, "user", text, timestamp=T + 10 * n + i)
                if kind:
                    sql(path, "UPDATE messages SET display_kind = ? WHERE content = ?", (kind, text))
    with SessionDB(path, read_only=True, migrate=False) as db:
        rows = {r["id"]: r["preview"] for r in db.list_rows(list(PREVIEW_CASES))}
        rich = {r["id"]: r["preview"] for r in db.list_sessions_rich(limit=50)}
        assert {k: rich[k] for k in rows} == rows
        return rows


def test_the_preview_skips_hidden_rows_and_summaries(v31: Path, tmp_path: Path) -> None:
    assert _previews(v31) == EXPECTED
    first = {sid: rows[0][0].replace("\n", " ").strip() for sid, rows in PREVIEW_CASES.items()}
    old = _previews(tmp_path / "v23.db")  # 0.19.0's rule: the first user message
    assert old == {sid: (text[:60] + "..." if len(text) > 60 else text) for sid, text in first.items()}
