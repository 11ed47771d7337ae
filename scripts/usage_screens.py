"""Regenerate `screenshots/29-31` (the Usage screen) on a store written by hermes-agent 0.19.0.

The peer (tests/peer/oracle.py, its cached virtualenv) writes ~75 days of sessions with known
usage, each call at a set time before the fixed "now" (2025-06-01 12:10 UTC, as
scripts/screens.py), a seeded mix of models and sources, replies without usage and an unpriced
route; the app then opens it with that clock in UTC:
    .venv/bin/python scripts/usage_screens.py
"""

from __future__ import annotations

import asyncio
import os
import random
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "scripts")]

from screens import NOW, OUT, settle  # noqa: E402

from hermes_tui.app.app import HermesApp  # noqa: E402

DAY = 86400.0
MODELS = (
    ("anthropic/claude-sonnet-4", "anthropic", 3e-6),
    ("openai/gpt-4.1", "openai", 2e-6),
    ("google/gemini-2.5-pro", "openrouter", 1.25e-6),
    ("deepseek/deepseek-v3", "openrouter", 0.3e-6),
)
SOURCES = ("cli", "telegram", "discord", "cron")
STATES = (
    ("29-usage", (120, 40), ()),
    ("30-usage-80x24", (80, 24), ("g",)),
    ("31-usage-check-80x24", (80, 24), ("c",)),
)


def write_store(path: Path) -> None:
    """The store, through hermes-agent 0.19.0's own API with its clock set per call."""
    from tests.peer.oracle import Peer, peer_python
    from tests.peer.test_usage_peer import Writer

    peer = Peer(path, python=peer_python())
    w = Writer(peer)
    rnd = random.Random(7)
    n = 0
    for day in range(75, -1, -1):
        for _k in range(rnd.randint(0, 3)):
            t0 = NOW - day * DAY - rnd.randint(600, 30000)
            model, provider, rate = rnd.choice(MODELS)
            sid = f"s{n:03d}"
            n += 1
            w.at(t0).call("create_session", sid, rnd.choice(SOURCES), model=model)
            w.call("append_message", sid, "user", f"task {n}", timestamp=t0)
            w.call("append_message", sid, "assistant", "done", timestamp=t0 + 30)
            verb = rnd.choice(["Fix", "Plan", "Review", "Explain"])
            w.call(
                "set_session_title",
                sid,
                f"{verb} {rnd.choice(['CI', 'deploy', 'schema', 'billing', 'search'])} #{n}",
            )
            for c in range(rnd.randint(1, 6)):
                inp, out, cache = rnd.randint(800, 9000), rnd.randint(100, 2000), rnd.randint(0, 40000)
                w.turn(
                    sid, t0 + 60 * c, input_tokens=inp, output_tokens=out, cache_read_tokens=cache,
                    estimated_cost_usd=round((inp + 4 * out) * rate + cache * rate / 10, 6),
                    cost_status="estimated", cost_source="official_docs_snapshot", model=model,
                    billing_provider=provider,
                )  # fmt: skip
            w.at(t0 + 600).call("end_session", sid, "user_exit")
    for i, day in enumerate((3, 9)):  # replies without usage (hermes-agent #12023)
        t0 = NOW - day * DAY
        w.at(t0).call("create_session", f"nt{i}", "telegram", model="minimax/m1")
        w.call("append_message", f"nt{i}", "assistant", "hi", timestamp=t0)
    t0 = NOW - 5 * DAY
    w.at(t0).call("create_session", "unpriced", "discord", model="acme/secret-1")
    w.call("append_message", "unpriced", "assistant", "...", timestamp=t0)
    w.turn(
        "unpriced", t0, input_tokens=900, output_tokens=90, cost_status="unknown",
        model="acme/secret-1", billing_provider="acme",
    )  # fmt: skip
    peer.close()


async def shoot(db: Path) -> None:
    for name, size, keys in STATES:
        app = HermesApp(db, now=lambda: NOW, theme="textual-dark", path_label="state.db")
        async with app.run_test(size=size) as pilot:
            await settle(pilot)
            await pilot.press("U")
            await settle(pilot)
            for key in keys:
                await pilot.press(key)
                await settle(pilot)
            svg = OUT / f"{name}.svg"
            title = f"hermes-tui — {name[3:].replace('-', ' ')} (a hermes-agent 0.19.0 store)"
            svg.write_text(app.export_screenshot(title=title))
            print(svg)


def main() -> None:
    os.environ["TZ"] = "UTC"
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "state.db"
        os.environ["HERMES_TUI_CONFIG"] = str(Path(tmp) / "settings.toml")
        write_store(db)
        asyncio.run(shoot(db))


if __name__ == "__main__":
    main()
