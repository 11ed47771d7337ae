"""`hermes-tui sessions usage --budget USD` as a cron job runs it (issue 37, item 4), and the Usage
screen (item 3) in the installed browser in a pty: the installed console script, on a store
written by hermes-agent 0.19.0 just now (the real clock); the budget's exit code is the one
documented in `sessions --help` and docs/cli.md (10 when over)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from hermes_tui.cli.errors import EXIT_CODES

from .conftest import PeerDB


def usage(script: Path, db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # --since 2d: the last two local days, so usage written seconds ago is in the range even
    # when the test runs across midnight
    return subprocess.run(
        [str(script), "sessions", "usage", "--db", str(db), "--since", "2d", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def spend(db: PeerDB) -> None:
    """Two priced API calls ($0.30 + $0.12, estimated) and one session without a price."""
    db.call("create_session", "cron-1", "cli", model="anthropic/claude-sonnet-4")
    db.call("append_message", "cron-1", "user", content="summarise the logs")
    db.call("append_message", "cron-1", "assistant", content="done")
    for cost in (0.30, 0.12):
        db.call(
            "update_token_counts",
            "cron-1",
            input_tokens=1000,
            output_tokens=100,
            estimated_cost_usd=cost,
            cost_status="estimated",
            model="anthropic/claude-sonnet-4",
            api_call_count=1,
        )
    db.call("end_session", "cron-1", "user_exit")
    db.call("create_session", "cron-2", "telegram", model="acme/secret-1")
    db.call("update_token_counts", "cron-2", input_tokens=50, cost_status="unknown", model="acme/secret-1")
    db.close()


def test_budget_exit_code_from_the_installed_command(hermes_tui_bin, peer_db, db_path) -> None:
    spend(peer_db())
    over = usage(hermes_tui_bin, db_path, "--budget", "0.25")
    assert over.returncode == EXIT_CODES["over_budget"] == 10, over.stderr
    assert "over budget by $0.17 (spent $0.42 of $0.25, estimated)" in over.stdout
    assert "1 session of the range had usage without a price" in over.stdout
    under = usage(hermes_tui_bin, db_path, "--budget", "1")
    assert under.returncode == 0 and "under budget: $0.58 left (spent $0.42 of $1.00" in under.stdout
    doc = json.loads(usage(hermes_tui_bin, db_path, "--budget", "0.40", "--json").stdout)
    assert (doc["budget"]["over"], doc["budget"]["exit_code"]) == (True, 10)
    assert abs(doc["budget"]["over_by_usd"] - 0.02) < 1e-9
    # the budget's exit code is the documented one
    helptext = subprocess.run(
        [str(hermes_tui_bin), "sessions", "--help"], capture_output=True, text=True, timeout=60
    ).stdout
    assert "10   usage --budget" in helptext


def test_budget_of_a_store_without_usage_is_unknown_not_over(hermes_tui_bin, peer_db, db_path) -> None:
    db = peer_db()
    db.call("create_session", "quiet", "cli", model="m")
    db.call("append_message", "quiet", "user", content="hello")
    db.close()
    proc = usage(hermes_tui_bin, db_path, "--budget", "0")
    assert proc.returncode == 0 and "the cost is unknown" in proc.stdout
    assert proc.stderr.startswith("warning: budget not checked")


def test_usage_screen_in_the_installed_browser(peer_db, term, db_path) -> None:  # type: ignore[no-untyped-def]
    """U opens the Usage screen over a 0.19.0 store spent on just now (the real clock): its
    cost is this month's, the check counts the unpriced session, Enter opens the costliest."""
    pytest.importorskip("pyte", reason="e2e tests need the dev extras (pexpect, pyte)")
    spend(peer_db())
    t = term("--db", db_path)
    t.wait_for("summarise the logs")
    t.press("U")
    t.wait_for("Month to date")
    t.wait_for("costliest sessions")
    assert t.has("Range: $0.42 estimated") and t.has(re.compile(r"Month to date \(.*\): \$0\.42 estimated"))
    assert t.has("Check (c): 0 no tokens · 1 unpriced")
    t.press("enter")
    t.wait_gone("costliest sessions")
    t.wait_for("cron-1 · cli")  # the header of the session opened
