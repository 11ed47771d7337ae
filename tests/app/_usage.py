"""A store with known usage for the Usage screen's tests: written through our store API with the
clock set per call (so every usage row lands on a known UTC day before the tests' fixed "now",
2025-06-01 12:10 UTC), several models and sources, a session with replies but no tokens, one
without a price, and a hostile model name."""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path
from typing import Any

import pytest

from hermes_tui.state import SessionDB
from tests.store.usage_reference import Clock

DAY = 86400.0
#: The tests' "now" (tests/app/_support.py FIXED_NOW): 2025-06-01 12:10 UTC.
NOW = dt.datetime(2025, 6, 1, 12, 10, tzinfo=dt.UTC).timestamp()
HOSTILE_MODEL = "evil\x1b]52;c;cHduZWQ=\x07model"
MODELS = ("anthropic/claude-sonnet-4", "openai/gpt-4.1", "google/gemini-2.5-pro")
SOURCES = ("cli", "telegram", "discord")


def day_at(days_ago: int, hour: int = 10) -> float:
    """`hour`:00 UTC, `days_ago` days before the fixed now's day."""
    today = dt.datetime(2025, 6, 1, tzinfo=dt.UTC)
    return (today - dt.timedelta(days=days_ago, hours=-hour)).timestamp()


def write_session(
    db: SessionDB,
    clock: Clock,
    sid: str,
    start: float,
    calls: list[dict[str, Any]],
    *,
    source: str = "cli",
    model: str = MODELS[0],
    title: str | None = None,
) -> None:
    db.clock = clock.time
    clock.now = start
    db.create_session(sid, source, model=model)
    db.append_message(sid, "user", "hello", timestamp=start)
    db.append_message(sid, "assistant", "hi", timestamp=start + 1)
    for n, kw in enumerate(calls):
        clock.now = start + 60 * n
        db.update_token_counts(sid, **{"model": model, "api_call_count": 1, **kw})
    if title:
        db.set_session_title(sid, title)
    clock.now = start + 60 * len(calls) + 60
    db.end_session(sid, "user_exit")


def build_usage_store(path: Path) -> None:
    """The store, every row stamped by its clock at the time the test gives."""
    clock = Clock(NOW)
    with SessionDB(path) as db:
        n = 0
        for days_ago in range(0, 120, 3):  # every third day over 4 months
            for k in range(2):
                model = MODELS[(days_ago // 3 + k) % len(MODELS)]
                source = SOURCES[(days_ago // 9 + 2 * k) % len(SOURCES)]
                cost = round(0.02 + (days_ago % 7) * 0.01 + k * 0.015, 4)
                calls = [
                    dict(
                        input_tokens=1000 + 37 * days_ago,
                        output_tokens=200 + k * 50,
                        cache_read_tokens=(2000 if k else 0) + 11 * days_ago,
                        estimated_cost_usd=cost,
                        cost_status="estimated",
                    )
                ]
                write_session(
                    db, clock, f"u{n:03d}", day_at(days_ago, 9 + k), calls, source=source, model=model,
                    title=f"Usage session {n:03d}",
                )  # fmt: skip
                n += 1
        write_session(
            db, clock, "big-one", day_at(2, 15),
            [dict(input_tokens=50000, output_tokens=9000, cache_read_tokens=120000,
                  estimated_cost_usd=1.2345, cost_status="estimated")],
            source="telegram", model=MODELS[1], title="The costliest session",
        )  # fmt: skip
        write_session(db, clock, "no-tokens-1", day_at(1, 11), [], title="Replies without usage")
        write_session(db, clock, "no-tokens-2", day_at(5, 11), [])
        write_session(
            db, clock, "unpriced-1", day_at(4, 12),
            [dict(input_tokens=900, output_tokens=90, cost_status="unknown", billing_provider="acme")],
            source="discord", model="acme/secret-1",
        )  # fmt: skip
        write_session(
            db, clock, "hostile", day_at(6, 8),
            [dict(input_tokens=10, output_tokens=1, estimated_cost_usd=0.001, cost_status="estimated")],
            model=HOSTILE_MODEL, title="evil\x1b[31m title",
        )  # fmt: skip


@pytest.fixture(scope="session")
def usage_master(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("usage") / "state.db"
    build_usage_store(path)
    return path


@pytest.fixture
def usage_db(usage_master: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private copy of the usage store; the local zone is UTC (days are UTC days)."""
    monkeypatch.setenv("TZ", "UTC")
    target = tmp_path / "usage" / "state.db"
    target.parent.mkdir()
    for suffix in ("", "-wal"):
        src = Path(str(usage_master) + suffix)
        if src.exists():
            shutil.copy(src, str(target) + suffix)
    return target
