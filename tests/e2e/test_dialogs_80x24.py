"""End-to-end at 80×24 (issue #33, item 3): the installed ``hermes-tui`` in a real pty of the
smallest supported size opens the prune dialog on a store written by hermes-agent 0.19.0 and
shows its excluded list, its key line and both buttons; ctrl+d then prunes. Real clock.

At 80×24 the dialog used to run off the bottom of the screen: the excluded list, the key line
and the buttons were not drawn, and Tab could not reach them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

pytest.importorskip("pexpect", reason="e2e tests need the dev extras (pexpect, pyte)")
pytest.importorskip("pyte", reason="e2e tests need the dev extras (pexpect, pyte)")

from .conftest import PeerDB, SessionSpec, write_sessions  # noqa: E402
from .terminal import Terminal, terminal_env  # noqa: E402


def test_prune_dialog_at_80x24_shows_its_excluded_list_keys_and_buttons(
    peer_db: Callable[..., PeerDB], hermes_tui_bin: Path, home: Path, db_path: Path, tmp_path: Path
) -> None:
    owner = peer_db()
    old = [
        SessionSpec(
            id=f"old-{c}",
            title=f"Old work {c}",
            age_days=120,
            messages=[("user", f"ancient question {c}"), ("assistant", "ancient answer")],
        )
        for c in "abc"
    ]
    still_open = SessionSpec(
        id="old-open", title="Old but open", ended=False, age_days=120, messages=[("user", "in progress")]
    )
    write_sessions(owner, [*old, still_open])
    owner.close()
    t = Terminal(
        [str(hermes_tui_bin), "--db", str(db_path)], terminal_env(home), cols=80, rows=24, cwd=tmp_path
    )
    try:
        t.wait_for(re.compile(r"Sessions 4\b"))
        t.press("P")
        t.wait_for("3 sessions")
        wanted = (
            "Excluded (1): 1 still open",
            "old-open  still open  Old but open",
            "ctrl+d delete the sessions previewed",
            "Delete (ctrl+d)",
            "Cancel (esc)",
        )

        def whole_dialog() -> bool:  # the plan and its excluded list may come a frame apart
            return t.has("Prune ended sessions") and all(
                seen in t.box_text("Prune ended sessions") for seen in wanted
            )

        t.wait_until(whole_dialog, what="the excluded list, the key line and both buttons at 80×24")
        top, bottom, _left, _right = t.box("Prune ended sessions")
        assert top >= 0 and bottom < 24
        t.press("ctrl+d")
        t.wait_gone("Prune ended sessions")
        t.wait_for(re.compile(r"Sessions 1\b"))
        t.press("q")
        assert t.wait_exit() == 0
    finally:
        t.close()
    check = peer_db()
    assert [r[0] for r in check.sql("SELECT id FROM sessions ORDER BY id")] == ["old-open"]
