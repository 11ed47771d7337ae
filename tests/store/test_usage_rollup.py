"""The day rollup behind `usage_report` (docs/store-api.md, "Usage", "Performance"): its answers
equal the direct per-row computation (`usage_reference`) and the one-statement answer, for random
usage written by our writer (`update_token_counts` at set times, rows ending on local midnights
included), random ranges between local midnights and not, every period and group, in a DST zone
and one whose midnight is skipped; a commit between two questions is seen; one rollup serves
every thread."""

from __future__ import annotations

import datetime as dt
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock
from zoneinfo import ZoneInfo

import apsw
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import hermes_tui.state.usage as usage_module
from hermes_tui.state import SessionDB
from hermes_tui.state.usage_time import resolve_tz
from tests.store.test_usage import Clock, at, session
from tests.store.usage_reference import assert_costliest, assert_matches, assert_same_report

ZONES = ["Europe/Berlin", "America/Havana"]
BY = ["day", "week", "month"]
GROUPS = [None, "model", "source", "provider", "task"]
#: Around Berlin's spring-forward night (2025-03-30) and Havana's (2025-03-09, at midnight).
DAY0 = dt.date(2025, 3, 2)

# A call: (day after DAY0, where in the day: 0 = exactly its local midnight), its tokens, model,
# source of its session, billing provider.
_CALL = st.tuples(
    st.integers(0, 45),
    st.sampled_from([0, 0, 1, 3599, 43_200, 86_399]) | st.integers(0, 86_399),
    st.integers(0, 5000),
    st.integers(0, 10_000),
    st.sampled_from(["anthropic/claude-sonnet-4", "openai/gpt-4.1"]),
    st.sampled_from(["openrouter", "anthropic"]),
)
_SESSION = st.tuples(
    st.lists(_CALL, min_size=1, max_size=4),
    st.sampled_from(["cli", "telegram"]),
    st.booleans(),  # absolute totals beyond the rows at the end (a residual)
    st.sampled_from([None, 0, 7200]),  # ended: never, at the last call, 2 hours later
)
_RANGE = st.tuples(
    st.integers(-3, 40),  # first day after DAY0
    st.integers(1, 50),  # days
    st.sampled_from([0, 0, 0, 5400]),  # seconds past the first day's midnight
    st.sampled_from([0, 0, 0, 600]),  # seconds past the last day's midnight
    st.sampled_from(BY),
    st.sampled_from(GROUPS),
)


@pytest.fixture
def clock() -> Clock:
    """The time the store stamps (`session()` sets `db.clock` to it)."""
    return Clock()


@pytest.fixture
def store(db_path: Path) -> Iterator[SessionDB]:
    with SessionDB(db_path) as db:
        yield db


def _local(day_offset: int, seconds: int, zone: ZoneInfo) -> float:
    day = DAY0 + dt.timedelta(days=day_offset)
    return dt.datetime(day.year, day.month, day.day, tzinfo=zone).timestamp() + seconds


def _write(db: SessionDB, clk: Clock, sessions: list[Any], zone: ZoneInfo) -> None:
    for n, (calls, source, absolute, ended) in enumerate(sessions):
        timed = sorted((_local(d, s, zone), i, c, m, p) for d, s, i, c, m, p in calls)
        session(
            db,
            clk,
            f"s{n}",
            [
                (t, {"input_tokens": i, "estimated_cost_usd": c / 1e5, "billing_provider": p, "model": m})
                for t, i, c, m, p in timed
            ],
            source=source,
        )
        if absolute:
            db.update_token_counts(f"s{n}", input_tokens=sum(c[2] for c in calls) + 77, absolute=True)
        if ended is not None:
            clk.now = timed[-1][0] + ended
            db.end_session(f"s{n}", "user_exit")


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    sessions=st.lists(_SESSION, min_size=1, max_size=5),
    ranges=st.lists(_RANGE, min_size=1, max_size=5),
    tz=st.sampled_from(ZONES),
)
# a row ending exactly on a midnight: its session counts in the day it ends on (a zero part)
# unless the range starts there
@example(
    sessions=[
        (
            [
                (3, 43_200, 10, 10, "openai/gpt-4.1", "openrouter"),
                (5, 0, 20, 10, "openai/gpt-4.1", "openrouter"),
            ],
            "cli",
            False,
            None,
        )
    ],
    ranges=[
        (5, 3, 0, 0, "day", None),
        (4, 3, 0, 0, "day", "model"),
        (5, 40, 0, 0, "week", "source"),
        (4, 1, 0, 600, "day", None),
        (3, 2, 5400, 0, "day", "model"),
        (0, 2, 5400, 600, "month", None),
    ],
    tz="Europe/Berlin",
)
def test_the_rollup_answers_as_the_direct_sum(sessions: list[Any], ranges: list[Any], tz: str) -> None:
    zone = ZoneInfo(tz)
    clk = Clock()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "state.db"
        with SessionDB(path) as db:
            _write(db, clk, sessions, zone)
        with SessionDB(path, read_only=True) as db, mock.patch.object(usage_module, "_ROLLUP_MIN_DAYS", 0):
            for first, days, off0, off1, by, group in ranges:
                since = _local(first, off0, zone)
                until = _local(first + days, off1, zone)
                rep = db.usage_report(by, group, since, until, tz)
                if off0 == 0 and off1 == 0:  # between local midnights: the rollup's answer
                    assert db._usage_rollup is not None
                assert_matches(rep, path)
                with db._usage_lock():
                    direct = db._report_sql(
                        by, group, resolve_tz(tz), db._range(since, until, by, zone, None)
                    )
                assert_same_report(rep, direct)
            # open ends: from the first usage to the period holding now
            now = _local(60, 0, zone)
            for by in BY:
                whole = db.usage_report(by, "model", None, None, tz, now)
                assert_matches(whole, path)
            assert db._usage_rollup is not None


def test_a_write_between_two_questions_is_seen(store: SessionDB, clock: Clock, db_path: Path) -> None:
    """A commit by another connection (a new `data_version` on the usage connection) or by this
    store's own writer is in the next answer: the rollup brought up to date by the sessions
    that changed (`usage_sync`), not rebuilt."""
    session(store, clock, "a", [(at(2025, 3, 1, 10), {"input_tokens": 100})], end=at(2025, 3, 1, 12))
    q1 = ("day", "model", dt.date(2025, 1, 1), dt.date(2025, 6, 1), "Europe/Berlin")
    q2 = ("week", None, dt.date(2025, 2, 1), dt.date(2025, 5, 1), "Europe/Berlin")
    with SessionDB(db_path, read_only=True) as reader:
        assert reader.usage_report(*q1).total.input_tokens == 100
        built = reader._usage_rollup
        assert built is not None
        assert reader.usage_report(*q2).total.input_tokens == 100 and reader._usage_rollup is built
        session(
            store, clock, "b", [(at(2025, 4, 2, 23, 30), {"input_tokens": 50})], end=at(2025, 4, 3, 0, 30)
        )
        rep = reader.usage_report(*q2)  # right after the commit: the same rollup, up to date
        assert rep.total.input_tokens == 150 and reader._usage_rollup is built and built.sync is not None
        assert_matches(rep, db_path)
        rep = reader.usage_report(*q1)
        assert rep.total.input_tokens == 150 and reader._usage_rollup is built
        assert_matches(rep, db_path)
    # this store's own writes (another of its connections) are seen by its usage connection too
    assert store.usage_report(*q1).total.input_tokens == 150
    store.update_token_counts("a", input_tokens=7, api_call_count=1)
    rep = store.usage_report(*q1)
    assert rep.total.input_tokens == 157
    assert_matches(rep, db_path)


def test_a_write_the_rollup_does_not_follow_rebuilds_it(
    store: SessionDB, clock: Clock, db_path: Path
) -> None:
    """A write to a session the rollup does not follow (here it follows one: the latest), and a
    delete: the answer right after it is the statement's, the next one's a new rollup's; both
    equal the direct sums."""
    for n in range(3):
        t = at(2025, 3, 1 + n, 10)
        session(store, clock, f"s{n}", [(t, {"input_tokens": 100})], end=t + 3600)
    q = ("day", "model", dt.date(2025, 1, 1), dt.date(2025, 6, 1), "Europe/Berlin")
    with SessionDB(db_path, read_only=True) as reader, mock.patch.object(usage_module, "TRACK", 1):
        reader.usage_report(*q)
        built = reader._usage_rollup
        assert built is not None and built.sync is not None and len(built.sync.tracked) == 1
        assert built.sync.parts.keys() == built.sync.tracked.keys()  # (the parts of those alone)
        clock.now = at(2025, 3, 2, 11)
        store.update_token_counts("s1", input_tokens=5, api_call_count=1)  # (s2 is the one followed)
        rep = reader.usage_report(*q)
        assert rep.total.input_tokens == 305 and reader._usage_rollup is built and built.sync is None
        assert_matches(rep, db_path)
        rep = reader.usage_report(*q)
        rebuilt = reader._usage_rollup
        assert rep.total.input_tokens == 305 and rebuilt is not built and rebuilt is not None
        store.delete_session("s0")
        rep = reader.usage_report(*q)
        assert rep.total.input_tokens == 205 and rebuilt.sync is None
        assert_matches(rep, db_path)


@pytest.mark.parametrize("legacy", [True, False], ids=["no-usage-table", "usage-table"])
def test_an_old_session_resumed_is_followed_after_one_rebuild(
    store: SessionDB, clock: Clock, db_path: Path, legacy: bool
) -> None:
    """An agent resumes an old session (`hermes --resume`): its first commit is not followed
    (the rollup rebuilds), but the rebuilt rollup follows the sessions of the latest messages,
    so its next commits are caught up, not rebuilt each time (0.19.0's files have no usage rows
    to find it by)."""
    for n in range(3):
        t = at(2025, 3, 1 + n, 10)
        session(store, clock, f"s{n}", [(t, {"input_tokens": 100})], end=t + 3600)
    writer = store
    if legacy:
        store.close()
        conn = apsw.Connection(str(db_path))
        conn.execute("DROP TABLE session_model_usage")
        conn.close()
        writer = SessionDB(db_path, migrate=False)
        writer.clock = clock.time
    q = ("day", "model", dt.date(2025, 1, 1), dt.date(2025, 6, 1), "Europe/Berlin")

    def turn(tokens: int) -> None:
        clock.now += 60
        writer.append_message("s0", "user", "again", timestamp=clock.now)
        writer.update_token_counts("s0", input_tokens=tokens, api_call_count=1)

    with SessionDB(db_path, read_only=True) as reader, mock.patch.object(usage_module, "TRACK", 1):
        reader.usage_report(*q)
        clock.now = at(2025, 3, 5, 9)
        turn(5)
        reader.usage_report(*q)  # (not followed: the statement, then a rebuild)
        rep = reader.usage_report(*q)
        rebuilt = reader._usage_rollup
        assert rep.total.input_tokens == 305 and rebuilt is not None and rebuilt.sync is not None
        assert "s0" in rebuilt.sync.tracked.values()
        turn(7)
        rep = reader.usage_report(*q)
        assert rep.total.input_tokens == 312
        assert reader._usage_rollup is rebuilt and rebuilt.sync is not None  # caught up, not rebuilt
        assert_matches(rep, db_path)
    if legacy:
        writer.close()


def test_one_rollup_serves_every_thread(store: SessionDB, clock: Clock, db_path: Path) -> None:
    """The browser asks each question on a new worker thread: the rollup built on one is used on
    the next (one usage connection per store), and a commit in between is still seen."""
    session(store, clock, "a", [(at(2025, 3, 1, 10), {"input_tokens": 100})], end=at(2025, 3, 1, 12))
    builds: list[int] = []
    real = SessionDB._build_rollup

    def counting(self: SessionDB, *a: Any, **kw: Any) -> Any:
        builds.append(threading.get_ident())
        return real(self, *a, **kw)

    answers: list[int] = []
    with (
        SessionDB(db_path, read_only=True) as reader,
        mock.patch.object(SessionDB, "_build_rollup", counting),
    ):

        def ask(by: str) -> None:
            rep = reader.usage_report(by, "model", dt.date(2025, 1, 1), dt.date(2025, 6, 1), "UTC")
            answers.append(rep.total.input_tokens)

        for by in ("day", "week", "month"):
            t = threading.Thread(target=ask, args=(by,))
            t.start()
            t.join()
        assert answers == [100, 100, 100] and len(builds) == 1
        store.update_token_counts("a", input_tokens=1, api_call_count=1)
        t = threading.Thread(target=ask, args=("day",))
        t.start()
        t.join()
        assert answers[-1] == 101 and len(builds) == 1  # right after a commit: brought up to date
        t = threading.Thread(target=ask, args=("week",))
        t.start()
        t.join()
        assert answers[-1] == 101 and len(builds) == 1


def test_a_store_without_dated_usage_and_short_ranges_answer_by_one_statement(
    store: SessionDB, clock: Clock, db_path: Path
) -> None:
    assert (
        store.usage_report("day", None, dt.date(2025, 1, 1), dt.date(2025, 6, 1), "UTC").total.sessions == 0
    )
    assert store._usage_rollup is None
    session(store, clock, "a", [(at(2025, 3, 1, 10), {"input_tokens": 100})])
    short = store.usage_report("day", None, dt.date(2025, 3, 1), dt.date(2025, 3, 31), "UTC")
    assert short.total.input_tokens == 100 and store._usage_rollup is None


def test_a_date_far_off_keeps_the_rollup_small(store: SessionDB, clock: Clock, db_path: Path) -> None:
    """A usage row stamped in the year 2900 (a clock's error): the rollup holds at most 30 years
    up to a year past now; a range inside them is its answer, one reaching the far date is the
    statement's, and both equal the direct sums."""
    session(store, clock, "a", [(at(2025, 3, 1, 10), {"input_tokens": 100})], end=at(2025, 3, 1, 12))
    session(store, clock, "far", [(at(2900, 1, 1, 10), {"input_tokens": 7})])
    now = at(2025, 6, 1)
    with SessionDB(db_path, read_only=True) as reader:
        rep = reader.usage_report("week", "model", dt.date(2025, 1, 1), dt.date(2025, 6, 1), "UTC", now)
        roll = reader._usage_rollup
        assert roll is not None and len(roll.days) < 11_000 and rep.total.input_tokens == 100
        assert_matches(rep, db_path)
        far = reader.usage_report("month", None, dt.date(2899, 11, 1), dt.date(2900, 3, 1), "UTC", now)
        assert far.total.input_tokens == 7 and reader._usage_rollup is roll
        assert_matches(far, db_path)


# The costliest sessions: calls whose costs are binary fractions (n/1024 USD: sums exact in any
# order, so equal costs tie in the store and the reference alike) and often the same (ties,
# broken by tokens, then id).
_TIED_CALL = st.tuples(
    st.integers(0, 45),
    st.sampled_from([0, 1, 43_200, 86_399]) | st.integers(0, 86_399),
    st.sampled_from([0, 100, 100, 250]) | st.integers(0, 5000),
    st.sampled_from([0, 256, 256, 512]) | st.integers(0, 4096),
    st.sampled_from(["anthropic/claude-sonnet-4", "openai/gpt-4.1"]),
    st.sampled_from(["openrouter", "anthropic"]),
)
_TIED_SESSION = st.tuples(
    st.lists(_TIED_CALL, min_size=1, max_size=3),
    st.sampled_from(["cli", "telegram"]),
    st.booleans(),
    st.sampled_from([None, 0, 7200]),
)
_PAGE = st.tuples(st.sampled_from([1, 3, 10, 50]), st.sampled_from([0, 0, 1, 4]))


def _write_tied(db: SessionDB, clk: Clock, sessions: list[Any], zone: ZoneInfo) -> None:
    """`_write` with costs of n/1024 USD."""
    for n, (calls, source, absolute, ended) in enumerate(sessions):
        timed = sorted((_local(d, s, zone), i, c, m, p) for d, s, i, c, m, p in calls)
        session(
            db,
            clk,
            f"s{n:02d}",
            [
                (t, {"input_tokens": i, "estimated_cost_usd": c / 1024, "billing_provider": p, "model": m})
                for t, i, c, m, p in timed
            ],
            source=source,
        )
        if absolute:
            db.update_token_counts(f"s{n:02d}", input_tokens=sum(c[2] for c in calls) + 77, absolute=True)
        if ended is not None:
            clk.now = timed[-1][0] + ended
            db.end_session(f"s{n:02d}", "user_exit")


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    sessions=st.lists(_TIED_SESSION, min_size=1, max_size=12),
    ranges=st.lists(st.tuples(_RANGE, _PAGE), min_size=1, max_size=5),
    tz=st.sampled_from(ZONES),
)
# two sessions of the same cost (the later id has more tokens: it comes first), one ending
# exactly on a midnight (listed, at zero, in a range holding only that day unless it starts
# there), an offset past the ties
@example(
    sessions=[
        ([(3, 43_200, 10, 512, "openai/gpt-4.1", "openrouter")], "cli", False, None),
        ([(3, 50_000, 20, 512, "openai/gpt-4.1", "openrouter")], "cli", False, None),
        (
            [
                (4, 43_200, 5, 256, "openai/gpt-4.1", "openrouter"),
                (6, 0, 5, 256, "openai/gpt-4.1", "anthropic"),
            ],
            "telegram",
            False,
            None,
        ),
    ],
    ranges=[
        ((3, 2, 0, 0, "day", None), (1, 0)),
        ((3, 2, 0, 0, "day", None), (3, 1)),
        ((6, 3, 0, 0, "day", None), (10, 0)),
        ((5, 3, 0, 0, "day", None), (10, 0)),
        ((2, 40, 5400, 600, "day", None), (2, 1)),
    ],
    tz="Europe/Berlin",
)
def test_the_costliest_sessions_answer_as_the_statement(
    sessions: list[Any], ranges: list[Any], tz: str
) -> None:
    """`usage_sessions` with the day rollup kept (a report built it) equals the statement over
    the range — the same sessions in the same order with the same figures, to the last bit —
    and the direct per-session sums, for ranges between local midnights and not, any page."""
    zone = ZoneInfo(tz)
    clk = Clock()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "state.db"
        with SessionDB(path) as db:
            _write_tied(db, clk, sessions, zone)
        with SessionDB(path, read_only=True) as db, mock.patch.object(usage_module, "_ROLLUP_MIN_DAYS", 0):
            for (first, days, off0, off1, _by, _group), (limit, offset) in ranges:
                since = _local(first, off0, zone)
                until = _local(first + days, off1, zone)
                db.usage_report("day", None, _local(-5, 0, zone), _local(60, 0, zone), tz)
                roll = db._usage_rollup
                assert roll is not None
                found = db.usage_sessions(since, until, tz, limit, offset)
                assert db._usage_rollup is roll  # (asking builds nothing)
                with db._usage_lock():
                    rng = db._range(since, until, "day", zone, None)
                    direct = db._sessions_sql(rng, limit, offset)
                assert found == direct
                assert_costliest(found, path, since, until, tz, offset)


def test_the_costliest_sessions_of_a_long_range_read_only_their_candidates(
    store: SessionDB, clock: Clock, db_path: Path
) -> None:
    """With the day rollup kept, the costliest sessions of 60 days read the usage of the
    candidates the rollup ranks first (here the 3 asked: their costs differ), not every usage
    row of the range, also right after a commit (the rollup brought up to date)."""
    for n in range(40):
        day = dt.date(2025, 3, 1) + dt.timedelta(days=n)
        t = at(day.year, day.month, day.day, 10)
        session(store, clock, f"s{n:02d}", [(t, {"input_tokens": 100 + n, "estimated_cost_usd": n / 1024})])
    asked: list[Any] = []
    real = SessionDB._pieces_sql

    def spy(self: SessionDB, group: Any, rng: Any, **kw: Any) -> Any:
        asked.append((group, rng.since, rng.until, kw.get("only")))
        return real(self, group, rng, **kw)

    since, until = dt.date(2025, 3, 1), dt.date(2025, 4, 30)
    with SessionDB(db_path, read_only=True) as reader:
        reader.usage_report("day", "model", since, until, "Europe/Berlin")  # builds the rollup
        with mock.patch.object(SessionDB, "_pieces_sql", spy):
            top = reader.usage_sessions(since, until, "Europe/Berlin", limit=3)
        assert [s.session_id for s in top] == ["s39", "s38", "s37"]
        assert [s.figures.input_tokens for s in top] == [139, 138, 137]
        rowids = {sid: rid for rid, sid in store._conn().execute("SELECT rowid, id FROM sessions").fetchall()}
        assert [(g, only and sorted(only)) for g, _a, _b, only in asked] == [
            ("session", sorted(rowids[s] for s in ("s37", "s38", "s39")))
        ]
        store.update_token_counts("s00", input_tokens=1, estimated_cost_usd=1.0, api_call_count=1)
        asked.clear()
        with mock.patch.object(SessionDB, "_pieces_sql", spy):
            top = reader.usage_sessions(since, until, "Europe/Berlin", limit=3)
        assert [s.session_id for s in top] == ["s00", "s39", "s38"]
        assert [(g, only and sorted(only)) for g, _a, _b, only in asked] == [
            ("key", [rowids["s00"]]),  # (the changed session's part in the rollup)
            ("session", sorted(rowids[s] for s in ("s00", "s38", "s39"))),
        ]


def test_the_costliest_sessions_of_a_file_without_the_usage_table(tmp_path: Path, clock: Clock) -> None:
    """A file from before `session_model_usage`: the sessions' counters alone, from the rollup
    as from the statement, a session across midnight and one ending exactly on it included."""
    path = tmp_path / "old.db"
    with SessionDB(path) as db:
        for n, (start, end) in enumerate(
            [
                (at(2025, 4, 1, 10), at(2025, 4, 2, 10)),
                (at(2025, 4, 3, 22), at(2025, 4, 4)),
                (at(2025, 4, 5, 9), at(2025, 4, 5, 11)),
            ]
        ):
            cost = (n % 2 + 1) / 8
            session(
                db, clock, f"s{n}", [(start, {"input_tokens": 300 + n, "estimated_cost_usd": cost})], end=end
            )
    conn = apsw.Connection(str(path))
    conn.execute("DROP TABLE session_model_usage")
    conn.close()
    zone = ZoneInfo("Europe/Berlin")
    with SessionDB(path, migrate=False) as db:
        rep = db.usage_report("day", None, dt.date(2025, 3, 1), dt.date(2025, 5, 1), "Europe/Berlin")
        assert db._usage_rollup is not None and rep.total.sessions == 3, rep.total
        for since, until, limit, offset in [
            (dt.date(2025, 3, 1), dt.date(2025, 5, 1), 10, 0),
            (dt.date(2025, 4, 2), dt.date(2025, 4, 6), 2, 1),
            (dt.date(2025, 4, 4), dt.date(2025, 4, 6), 10, 0),  # (s1 ends where it starts: not in it)
            (dt.date(2025, 4, 2), dt.date(2025, 4, 4), 10, 0),
            (at(2025, 4, 1, 20), at(2025, 4, 5, 10), 2, 0),
        ]:
            found = db.usage_sessions(since, until, "Europe/Berlin", limit, offset)
            with db._usage_lock():
                direct = db._sessions_sql(db._range(since, until, "day", zone, None), limit, offset)
            assert found == direct and found
            if since == dt.date(2025, 4, 4):
                assert [f.session_id for f in found] == ["s2"]
            lo, hi = (v if isinstance(v, float) else at(v.year, v.month, v.day) for v in (since, until))
            assert_costliest(found, path, lo, hi, "Europe/Berlin", offset)


# ---------------------------------------------------------------------- following commits
# A write between two questions, as an agent makes them (each advances the clock up to two
# days, so sessions run across midnights): (kind, session, seconds later, tokens, cost in
# 1/1024 USD, model, provider). Kinds: an API call (a model switch when the model differs),
# a new session, absolute totals beyond the rows (a residual), the end, a message, a delete.
_WRITE = st.tuples(
    st.sampled_from(["call", "call", "call", "new", "absolute", "end", "message", "delete"]),
    st.integers(0, 20),
    st.sampled_from([0, 60, 3600, 86_400]) | st.integers(0, 2 * 86_400),
    st.integers(0, 5000),
    st.integers(0, 4096),
    st.sampled_from(["anthropic/claude-sonnet-4", "openai/gpt-4.1"]),
    st.sampled_from(["openrouter", "anthropic"]),
)
_ASK = st.tuples(
    st.integers(-3, 50),  # first day after DAY0
    st.integers(1, 60),  # days
    st.sampled_from([0, 0, 0, 5400]),  # seconds past the first day's midnight
    st.sampled_from(BY),
    st.sampled_from(GROUPS),
    _PAGE,
)


def _apply(db: SessionDB, clk: Clock, live: list[str], made: list[int], w: Any) -> bool:
    """Write `w` on `db` at the clock's next time; True if it deleted a session."""
    kind, n, later, tokens, cost, model, provider = w
    clk.now += later
    db.clock = clk.time
    usage = {"input_tokens": tokens, "estimated_cost_usd": cost / 1024, "model": model}
    if kind == "new" or not live:
        made[0] += 1
        sid = f"n{made[0]:03d}"
        db.create_session(sid, "telegram" if n % 2 else "cli", model=model)
        db.update_token_counts(sid, api_call_count=1, billing_provider=provider, **usage)
        live.append(sid)
        return False
    sid = live[n % len(live)]
    if kind == "call":
        db.update_token_counts(sid, api_call_count=1, billing_provider=provider, **usage)
    elif kind == "absolute":
        row = db._conn().execute("SELECT input_tokens FROM sessions WHERE id = ?", (sid,)).fetchall()
        db.update_token_counts(sid, input_tokens=int(row[0][0] or 0) + tokens + 1, absolute=True)
    elif kind == "end":
        db.end_session(sid, "user_exit")
    elif kind == "message":
        db.append_message(sid, "assistant", "more", timestamp=clk.now)
    else:
        db.delete_session(sid)
        live.remove(sid)
        return True
    return False


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    sessions=st.lists(_TIED_SESSION, min_size=1, max_size=6),
    steps=st.lists(st.tuples(_WRITE, _ASK), min_size=1, max_size=8),
    tz=st.sampled_from(ZONES),
    legacy=st.booleans(),
)
def test_the_rollup_follows_writes_as_the_direct_sum(
    sessions: list[Any], steps: list[Any], tz: str, legacy: bool
) -> None:
    """Random writes (calls on a session across midnights, model switches, new sessions,
    absolute totals, ends, messages, deletes) between questions: each answer right after a
    write equals the direct per-row sums and the statement (reports and the costliest
    sessions), and it comes from the rollup brought up to date, not from a new build, unless a
    session was deleted (a delete is not followed: the rollup is rebuilt). `legacy`: a file
    without `session_model_usage` (the sessions' counters alone)."""
    zone = ZoneInfo(tz)
    clk = Clock()
    builds: list[int] = []
    real = SessionDB._build_rollup

    def counting(self: SessionDB, *a: Any, **kw: Any) -> Any:
        builds.append(1)
        return real(self, *a, **kw)

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "state.db"
        with SessionDB(path) as db:
            _write_tied(db, clk, sessions, zone)
        if legacy:
            conn = apsw.Connection(str(path))
            conn.execute("DROP TABLE session_model_usage")
            conn.close()
        with (
            SessionDB(path, migrate=False) as db,
            SessionDB(path, read_only=True) as reader,
            mock.patch.object(usage_module, "_ROLLUP_MIN_DAYS", 0),
            mock.patch.object(SessionDB, "_build_rollup", counting),
        ):
            live = [f"s{n:02d}" for n in range(len(sessions))]
            made = [0]
            clk.now = _local(10, 0, zone)
            reader.usage_report("day", None, _local(-5, 0, zone), _local(60, 0, zone), tz)
            assert len(builds) == 1
            deleted = False
            for w, (first, days, off0, by, group, (limit, offset)) in steps:
                deleted = _apply(db, clk, live, made, w) or deleted
                since, until = _local(first, off0, zone), _local(first + days, 0, zone)
                rep = reader.usage_report(by, group, since, until, tz)
                assert_matches(rep, path)
                with reader._usage_lock():
                    rng = reader._range(since, until, by, zone, None)
                    assert_same_report(rep, reader._report_sql(by, group, zone, rng))
                found = reader.usage_sessions(since, until, tz, limit, offset)
                with reader._usage_lock():
                    direct = reader._sessions_sql(
                        reader._range(since, until, "day", zone, None), limit, offset
                    )
                assert found == direct
                assert_costliest(found, path, since, until, tz, offset)
                if not deleted:  # every answer since the build from the rollup kept up to date
                    assert len(builds) == 1 and reader._usage_rollup is not None
                    assert reader._usage_rollup.sync is not None
