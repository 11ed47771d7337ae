"""A small store for the `hermes-tui sessions` tests, built through the SessionDB API.

Sessions (sources cli and telegram):
- `cli-docker` (cli, "Docker fix"): user / assistant with a tool call and reasoning / tool result /
  assistant / a rewound user turn; costs $0.05.
- `comp-root` → `comp-tip` (cli): a compression chain ("Long chat", "Long chat #2").
- `tg-parent` (telegram, "Weekly plan", multimodal content) with a delegate child `tg-sub`.
- `tg-solo` (telegram, untitled, no messages).
- `cli-open` (cli): never ended.
- `old-one` (cli): started and ended 200 days ago (the only bare-prune candidate).
"""

from __future__ import annotations

import json
import time

import pytest

from hermes_tui.state import SessionDB, SessionFilter

NOW = time.time()
HOUR_AGO = NOW - 3600
OLD = NOW - 200 * 86400

TOOL_CALLS = [
    {
        "id": "call_1",
        "type": "function",
        "function": {"name": "terminal", "arguments": json.dumps({"cmd": "docker ps"})},
    }
]


def build(path) -> None:
    db = SessionDB(path)
    try:
        db.create_session("cli-docker", "cli", model="gpt-x")
        db.set_session_title("cli-docker", "Docker fix")
        db.append_message("cli-docker", "user", "How do I fix the docker deployment?", timestamp=HOUR_AGO)
        db.append_message(
            "cli-docker",
            "assistant",
            "Let me look.",
            tool_calls=TOOL_CALLS,
            reasoning="The user wants docker help.",
            timestamp=HOUR_AGO + 1,
        )
        db.append_message(
            "cli-docker",
            "tool",
            "CONTAINER ID IMAGE nginx",
            tool_name="terminal",
            tool_call_id="call_1",
            timestamp=HOUR_AGO + 2,
        )
        db.append_message("cli-docker", "assistant", "Restart the nginx container.", timestamp=HOUR_AGO + 3)
        rewound = db.append_message("cli-docker", "user", "never mind, rewound turn", timestamp=HOUR_AGO + 4)
        db.rewind_to_message("cli-docker", rewound)
        db.update_token_counts(
            "cli-docker", input_tokens=1000, output_tokens=500, estimated_cost_usd=0.05, model="gpt-x"
        )
        db.end_session("cli-docker", "user_exit")

        db.create_session("comp-root", "cli", model="claude-y")
        db.set_session_title("comp-root", "Long chat")
        db.append_message("comp-root", "user", "Start of a long kubernetes chat", timestamp=HOUR_AGO)
        db.append_message("comp-root", "assistant", "Sure, kubernetes it is.", timestamp=HOUR_AGO + 1)
        db.update_token_counts(
            "comp-root", input_tokens=5000, output_tokens=2000, estimated_cost_usd=0.30, model="claude-y"
        )
        db.end_session("comp-root", "compression")
        db.create_session("comp-tip", "cli", model="claude-y", parent_session_id="comp-root")
        db.set_session_title("comp-tip", "Long chat #2")
        db.append_message("comp-tip", "user", "Continuing the kubernetes chat", timestamp=HOUR_AGO + 10)
        db.update_token_counts(
            "comp-tip", input_tokens=3000, output_tokens=1000, estimated_cost_usd=0.20, model="claude-y"
        )
        db.end_session("comp-tip", "user_exit")

        db.create_session("tg-parent", "telegram", model="gpt-x")
        db.set_session_title("tg-parent", "Weekly plan")
        db.append_message(
            "tg-parent",
            "user",
            [
                {"type": "text", "text": "Plan my week please"},
                {"type": "image_url", "image_url": {"url": "x"}},
            ],
            timestamp=HOUR_AGO,
        )
        db.append_message("tg-parent", "assistant", "Here is your weekly plan.", timestamp=HOUR_AGO + 1)
        db.update_token_counts(
            "tg-parent", input_tokens=200, output_tokens=100, estimated_cost_usd=0.01, model="gpt-x"
        )
        db.end_session("tg-parent", "user_exit")
        db.create_session(
            "tg-sub",
            "telegram",
            model="gpt-x",
            parent_session_id="tg-parent",
            model_config={"_delegate_from": "tg-parent"},
        )
        db.append_message("tg-sub", "user", "subagent task: research calendars", timestamp=HOUR_AGO + 2)
        db.end_session("tg-sub", "done")

        db.create_session("tg-solo", "telegram", model="gpt-x")
        db.end_session("tg-solo", "user_exit")

        db.create_session("cli-open", "cli", model="gpt-x")
        db.append_message("cli-open", "user", "still talking", timestamp=HOUR_AGO)

        db.create_session("old-one", "cli", model="gpt-x")
        db.append_message("old-one", "user", "an ancient docker question", timestamp=OLD + 5)
        db.end_session("old-one", "user_exit")
        # Backdating: the API stamps started_at/ended_at with the current time.
        db._execute_write(
            lambda c: c.execute(
                "UPDATE sessions SET started_at = ?, ended_at = ? WHERE id = 'old-one'", (OLD, OLD + 60)
            )
        )
    finally:
        db.close()


@pytest.fixture
def db_path(tmp_path):
    path = tmp_path / "state.db"
    build(path)
    return path


@pytest.fixture
def session_ids(db_path):
    with SessionDB(db_path, read_only=True) as db:
        return set(db.session_order(SessionFilter.every_session()).ids)


def one_store(doc: dict) -> dict:
    """The one store's report in a `delete`/`prune`/`stats` `--json` document (reports are keyed
    by profile, a single store being a profile list of one)."""
    (report,) = doc["profiles"].values()
    return report
