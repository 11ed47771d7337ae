"""A fork shows in the open session's lineage at once, as a branch naming the message it was cut
at (issue #35): made by another process while the browser follows the file, real clock."""

from __future__ import annotations

import time
from pathlib import Path

from hermes_tui.app.widgets.lineage import LineageTree, node_label
from hermes_tui.state import SessionDB

from ._support import make_app, settle, wait_until


async def test_a_fork_made_elsewhere_shows_in_the_lineage_with_its_cut(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    with SessionDB(path) as db:
        db.create_session("src", "cli", model="m")
        ids = [db.append_message("src", "user" if i % 2 == 0 else "assistant", f"m{i}") for i in range(6)]
    app = make_app(path, now=time.time)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        await pilot.press("enter")  # the only session
        lineage = app.screen.query_one("#lineage", LineageTree)

        def nodes() -> list[dict]:
            return list((lineage.lineage or {}).get("nodes") or [])

        await wait_until(pilot, lambda: any(n["id"] == "src" for n in nodes()), "src's lineage is shown")
        with SessionDB(path) as db:
            fork = db.fork_session("src", ids[2])
        await wait_until(pilot, lambda: any(n["id"] == fork for n in nodes()), "the fork is in the lineage")
        node = next(n for n in nodes() if n["id"] == fork)
        assert node["edge_kind"] == "branch" and node["cut_at"] == ids[2]
        label = node_label(node).plain
        assert label.startswith("[b] ") and f"cut at #{ids[2]}" in label
        parent = next(n for n in nodes() if n["id"] == "src")
        assert "cut at" not in node_label(parent).plain
