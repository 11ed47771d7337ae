"""The usage model (issue 37) on our own files: the attribution rule at midnight, across DST and
in two zones, weeks and months, ranges, residuals, estimated vs actual cost, the accounting
check, the budget, the costliest sessions — every figure checked against `usage_reference`."""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import apsw
import pytest

from hermes_tui.state import SessionDB
from tests.store.usage_reference import Clock, as_plain, assert_matches

BERLIN = ZoneInfo("Europe/Berlin")


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def store(db_path: Path) -> Iterator[SessionDB]:
    with SessionDB(db_path) as db:
        yield db


def at(y: int, mo: int, d: int, h: int = 0, mi: int = 0, tz: ZoneInfo = BERLIN) -> float:
    return dt.datetime(y, mo, d, h, mi, tzinfo=tz).timestamp()


def session(
    db: SessionDB,
    clock: Clock,
    sid: str,
    calls: list[tuple[float, dict[str, Any]]],
    *,
    source: str = "cli",
    model: str = "anthropic/claude-sonnet-4",
    end: float | None = None,
    reply: bool = True,
) -> None:
    """A session as the agent writes it: created at its first call, a reply, one
    `update_token_counts` per API call at its time, ended at `end`."""
    db.clock = clock.time
    clock.now = calls[0][0] if calls else (end or clock.now)
    db.create_session(sid, source, model=model)
    if reply:
        db.append_message(sid, "user", "hello", timestamp=clock.now)
        db.append_message(sid, "assistant", "hi", timestamp=clock.now + 1)
    for ts, kw in calls:
        clock.now = ts
        db.update_token_counts(sid, **{"model": model, "api_call_count": 1, **kw})
    if end is not None:
        clock.now = end
        db.end_session(sid, "user_exit")


# ---------------------------------------------------------------------- the attribution rule


def test_a_row_across_midnight_is_split_by_time_and_adds_up_exactly(store, clock, db_path) -> None:
    """23:00 → 01:00 (Berlin): half on each day; 101 tokens split 50 + 51, never 50.5 twice."""
    session(
        store,
        clock,
        "s1",
        [
            (at(2025, 1, 10, 23), {"input_tokens": 60, "output_tokens": 7, "estimated_cost_usd": 0.5}),
            (at(2025, 1, 11, 1), {"input_tokens": 41, "output_tokens": 0, "estimated_cost_usd": 0.5}),
        ],
    )
    rep = store.usage_report("day", "model", at(2025, 1, 10), at(2025, 1, 12), "Europe/Berlin")
    assert [p.label for p in rep.periods] == ["2025-01-10", "2025-01-11"]
    day1, day2 = rep.series("anthropic/claude-sonnet-4")
    assert (day1.input_tokens, day2.input_tokens) == (50, 51)
    assert (day1.output_tokens, day2.output_tokens) == (3, 4)
    assert (day1.api_calls, day2.api_calls) == (1, 1)
    assert day1.estimated_cost_usd == pytest.approx(0.5) and day2.estimated_cost_usd == pytest.approx(0.5)
    assert day1.sessions == day2.sessions == 1 == rep.total.sessions
    assert rep.total.input_tokens == 101 and rep.total.cost_usd == pytest.approx(1.0)
    assert_matches(rep, db_path)


def test_the_same_row_in_utc_falls_on_one_day(store, clock, db_path) -> None:
    """Berlin 23:00–01:00 in January is 22:00–00:00 UTC: the whole row on the 10th in UTC."""
    session(
        store,
        clock,
        "s1",
        [(at(2025, 1, 10, 23), {"input_tokens": 60}), (at(2025, 1, 11, 0, 59), {"input_tokens": 41})],
    )
    utc = store.usage_report("day", None, at(2025, 1, 10, tz=dt.UTC), at(2025, 1, 12, tz=dt.UTC), "UTC")
    berlin = store.usage_report("day", None, at(2025, 1, 10), at(2025, 1, 12), "Europe/Berlin")
    assert [f.input_tokens for f in utc.series()] == [101, 0]
    assert [f.input_tokens for f in berlin.series()] == [50, 51]
    assert utc.total.input_tokens == berlin.total.input_tokens == 101
    assert utc.tz == "UTC" and berlin.tz == "Europe/Berlin"
    assert_matches(utc, db_path)
    assert_matches(berlin, db_path)


def test_dst_days_are_23_and_25_hours_long_in_berlin(store, clock, db_path) -> None:
    """A row from Saturday 12:00 to Monday 12:00 across the spring-forward night holds 47 hours:
    12 + 23 + 12 of them on the three days; across the autumn night 49: 12 + 25 + 12."""
    session(
        store,
        clock,
        "spring",
        [(at(2025, 3, 29, 12), {"input_tokens": 0}), (at(2025, 3, 31, 12), {"input_tokens": 4700})],
    )
    session(
        store,
        clock,
        "autumn",
        [(at(2025, 10, 25, 12), {"input_tokens": 0}), (at(2025, 10, 27, 12), {"input_tokens": 4900})],
    )
    spring = store.usage_report("day", None, at(2025, 3, 29), at(2025, 4, 1), "Europe/Berlin")
    assert [round((p.hi - p.lo) / 3600) for p in spring.periods] == [24, 23, 24]
    assert [f.input_tokens for f in spring.series()] == [1200, 2300, 1200]
    autumn = store.usage_report("day", None, at(2025, 10, 25), at(2025, 10, 28), "Europe/Berlin")
    assert [round((p.hi - p.lo) / 3600) for p in autumn.periods] == [24, 25, 24]
    # 25/49 of 4,900 is 2,500 in exact arithmetic; in floats the cut before it truncates to
    # 1,199.99…: the parts still add up to the row exactly
    assert [f.input_tokens for f in autumn.series()] == [1200, 2499, 1201]
    # the same rows in New York (its DST changes fall on other dates): other splits, same sums
    ny = store.usage_report(
        "day",
        None,
        at(2025, 3, 28, tz=ZoneInfo("America/New_York")),
        at(2025, 4, 2, tz=ZoneInfo("America/New_York")),
        "America/New_York",
    )
    assert [f.input_tokens for f in ny.series()] == [0, 1700, 2400, 600, 0]
    for rep in (spring, autumn, ny):
        assert_matches(rep, db_path)


def test_weeks_start_on_monday_and_months_on_the_first(store, clock, db_path) -> None:
    """Sunday 2025-03-02 23:00 → Monday 01:00: split between ISO weeks 9 and 10; the rows of
    Feb 28 → Mar 1 between February and March."""
    session(
        store,
        clock,
        "wk",
        [(at(2025, 3, 2, 23), {"input_tokens": 0}), (at(2025, 3, 3, 1), {"input_tokens": 10})],
    )
    session(
        store,
        clock,
        "mo",
        [(at(2025, 2, 28, 18), {"input_tokens": 0}), (at(2025, 3, 1, 6), {"input_tokens": 12})],
    )
    weeks = store.usage_report("week", None, at(2025, 2, 24), at(2025, 3, 10), "Europe/Berlin")
    assert [p.label for p in weeks.periods] == ["2025-W09", "2025-W10"]
    assert [p.start for p in weeks.periods] == [dt.date(2025, 2, 24), dt.date(2025, 3, 3)]
    assert [f.input_tokens for f in weeks.series()] == [5 + 12, 5]
    months = store.usage_report("month", None, at(2025, 2, 1), at(2025, 4, 1), "Europe/Berlin")
    assert [p.label for p in months.periods] == ["2025-02", "2025-03"]
    assert [f.input_tokens for f in months.series()] == [6, 6 + 10]
    assert_matches(weeks, db_path)
    assert_matches(months, db_path)


def test_a_range_takes_its_share_of_a_row_it_cuts(store, clock, db_path) -> None:
    """A range from 12:00 takes the later half of a row from 08:00 to 16:00, and the figures of
    any set of consecutive ranges add up to the whole."""
    session(
        store,
        clock,
        "s",
        [(at(2025, 5, 1, 8), {"input_tokens": 0}), (at(2025, 5, 1, 16), {"input_tokens": 1001})],
    )
    afternoon = store.usage_report("day", None, at(2025, 5, 1, 12), at(2025, 5, 2), "Europe/Berlin")
    morning = store.usage_report("day", None, at(2025, 5, 1), at(2025, 5, 1, 12), "Europe/Berlin")
    assert afternoon.periods[0].lo == at(2025, 5, 1, 12)
    assert (morning.total.input_tokens, afternoon.total.input_tokens) == (500, 501)
    assert_matches(afternoon, db_path)
    assert_matches(morning, db_path)


# ---------------------------------------------------------------------- what counts


def _mixed_store(db: SessionDB, clock: Clock, path: Path, seed: int = 7) -> None:
    """Sessions over two months around the spring DST change: several models, sources, calls
    spanning days, an actual cost, a residual (`absolute=True` totals), usage rows the session's
    counters do not hold (auxiliary calls), a session without usage rows."""
    import random

    rng = random.Random(seed)
    models = ["anthropic/claude-sonnet-4", "openai/gpt-4.1", "qwen/qwen3-coder"]
    t = at(2025, 3, 10, 9)
    for i in range(40):
        calls = []
        ts = t + rng.randrange(0, 40 * 86400)
        for _ in range(rng.randrange(1, 5)):
            ts += rng.choice([60, 3600, 5 * 3600, 30 * 3600])
            calls.append(
                (
                    ts,
                    {
                        "input_tokens": rng.randrange(0, 5000),
                        "output_tokens": rng.randrange(0, 900),
                        "cache_read_tokens": rng.randrange(0, 9000),
                        "cache_write_tokens": rng.randrange(0, 300),
                        "reasoning_tokens": rng.randrange(0, 200),
                        "estimated_cost_usd": rng.randrange(0, 10_000) / 1e5,
                        "model": rng.choice(models),
                        "cost_status": "estimated",
                    },
                )
            )
        end = ts + 600 if i % 3 else None
        session(db, clock, f"m{i:02d}", calls, source=rng.choice(["cli", "telegram", "discord"]), end=end)
    # an actual (billed) cost on one call
    clock.now = at(2025, 3, 20, 10)
    db.update_token_counts(
        "m01", input_tokens=10, actual_cost_usd=0.42, api_call_count=1, cost_status="actual"
    )
    # absolute totals (the gateway's path) hold more than the rows: a residual
    session(db, clock, "gw", [(at(2025, 3, 29, 22), {"input_tokens": 100, "estimated_cost_usd": 0.01})])
    clock.now = at(2025, 3, 30, 8)
    db.update_token_counts(
        "gw", input_tokens=900, output_tokens=50, estimated_cost_usd=0.2, api_call_count=4, absolute=True
    )
    db.end_session("gw", "done")
    # no usage rows at all (written before the table existed): all of it a residual
    session(db, clock, "old", [], end=at(2025, 3, 30, 23))
    conn = apsw.Connection(str(path))
    conn.execute(
        "UPDATE sessions SET input_tokens = 777, output_tokens = 77, estimated_cost_usd = 0.07, "
        "started_at = ? WHERE id = 'old'",
        (at(2025, 3, 30, 20),),
    )
    # an auxiliary call's row (title generation): not in the session's counters
    conn.execute(
        "INSERT INTO session_model_usage (session_id, model, billing_provider, task, api_call_count, "
        "input_tokens, output_tokens, estimated_cost_usd, first_seen, last_seen) "
        "VALUES ('m02', 'google/gemini-2.5-flash', 'openrouter', 'title_generation', "
        "1, 600, 12, 0.0002, ?, ?)",
        (at(2025, 3, 30, 1, 30), at(2025, 3, 30, 3, 30)),
    )
    conn.close()


@pytest.mark.parametrize("tz", ["Europe/Berlin", "UTC", "Asia/Tokyo"])
@pytest.mark.parametrize("by", ["day", "week", "month"])
@pytest.mark.parametrize("group", [None, "model", "source", "provider", "task"])
def test_every_figure_equals_the_direct_sum(store, clock, db_path, by, group, tz) -> None:
    _mixed_store(store, clock, db_path)
    zone = ZoneInfo(tz)
    rep = store.usage_report(
        by, group, dt.datetime(2025, 3, 1, tzinfo=zone), dt.datetime(2025, 5, 1, tzinfo=zone), tz
    )
    assert rep.total.input_tokens > 0 and len(rep.periods) > 1
    assert_matches(rep, db_path)
    # and open ends reach the first and the last usage: the whole of it
    whole = store.usage_report(by, group, None, None, tz, now=at(2025, 6, 1))
    wide = store.usage_report(by, group, dt.date(2025, 1, 1), dt.date(2025, 7, 1), tz)
    assert whole.periods[-1].hi > at(2025, 6, 1) and whole.periods[0].start >= dt.date(2025, 3, 1)
    assert as_plain(whole.total) == pytest.approx(as_plain(wide.total), rel=1e-12)
    assert_matches(whole, db_path)


def test_residuals_and_auxiliary_rows_are_counted_once(store, clock, db_path) -> None:
    _mixed_store(store, clock, db_path)
    rep = store.usage_report("day", "task", dt.date(2025, 3, 1), dt.date(2025, 6, 1), "Europe/Berlin")
    conn = apsw.Connection(str(db_path))
    rows_in = conn.execute("SELECT TOTAL(input_tokens) FROM session_model_usage").fetchall()[0][0]
    (own_gw,) = conn.execute("SELECT input_tokens FROM sessions WHERE id = 'gw'").fetchall()[0]
    (rows_gw,) = conn.execute(
        "SELECT TOTAL(input_tokens) FROM session_model_usage WHERE session_id = 'gw'"
    ).fetchall()[0]
    conn.close()
    assert own_gw == 900 and rows_gw == 100  # absolute=True set the counters, recorded no row
    assert rep.total.input_tokens == rows_in + (900 - 100) + 777
    assert rep.groups["title_generation"].input_tokens == 600
    assert_matches(rep, db_path)


def test_a_file_without_the_usage_table_counts_the_sessions(tmp_path, clock) -> None:
    """A file from before `session_model_usage` (schema < v20), browsed: the counters alone."""
    path = tmp_path / "old.db"
    with SessionDB(path) as db:
        session(
            db,
            clock,
            "a",
            [(at(2025, 4, 1, 10), {"input_tokens": 300, "estimated_cost_usd": 0.3})],
            end=at(2025, 4, 2, 10),
        )
    conn = apsw.Connection(str(path))
    conn.execute("DROP TABLE session_model_usage")
    conn.close()
    with SessionDB(path, migrate=False) as db:
        assert not db.has_column("session_model_usage", "session_id")
        rep = db.usage_report("day", "model", dt.date(2025, 4, 1), dt.date(2025, 4, 3), "Europe/Berlin")
        assert [f.input_tokens for f in rep.series("anthropic/claude-sonnet-4")] == [175, 125]  # 14 h + 10 h
        assert_matches(rep, path)
        assert db.usage_check().counts["no_tokens"] == 0


# ---------------------------------------------------------------------- cost labels


def test_actual_and_estimated_costs_are_kept_apart_and_labelled(store, clock, db_path) -> None:
    session(
        store,
        clock,
        "est",
        [(at(2025, 4, 1, 10), {"input_tokens": 10, "estimated_cost_usd": 0.25, "cost_status": "estimated"})],
    )
    session(
        store,
        clock,
        "act",
        [
            (
                at(2025, 4, 2, 10),
                {
                    "input_tokens": 10,
                    "estimated_cost_usd": 0.30,
                    "actual_cost_usd": 0.40,
                    "cost_status": "actual",
                },
            )
        ],
        model="openai/gpt-4.1",
    )
    session(
        store,
        clock,
        "free",
        [(at(2025, 4, 3, 10), {"input_tokens": 10, "cost_status": "included"})],
        model="x/free",
    )
    rep = store.usage_report("day", "model", dt.date(2025, 4, 1), dt.date(2025, 4, 4), "Europe/Berlin")
    est = rep.groups["anthropic/claude-sonnet-4"]
    act = rep.groups["openai/gpt-4.1"]
    assert (est.estimated_cost_usd, est.actual_cost_usd, est.cost_basis) == (0.25, 0.0, "estimated")
    assert (act.estimated_cost_usd, act.actual_cost_usd, act.cost_basis) == (0.0, 0.40, "actual")
    assert act.cost_usd == 0.40  # the actual cost, not the estimate beside it
    assert rep.groups["x/free"].cost_basis == "none"
    assert rep.total.cost_basis == "mixed" and rep.total.cost_usd == pytest.approx(0.65)
    assert [f.cost_basis for f in rep.series()] == ["estimated", "actual", "none"]
    d = rep.as_dict()
    assert d["total"]["cost_basis"] == "mixed" and d["groups"]["openai/gpt-4.1"]["actual_cost_usd"] == 0.40
    assert_matches(rep, db_path)


# ---------------------------------------------------------------------- the accounting check


def test_the_accounting_check_counts_lists_and_explains(store, clock, db_path) -> None:
    t = at(2025, 4, 1, 10)
    session(
        store, clock, "ok", [(t, {"input_tokens": 10, "estimated_cost_usd": 0.1, "cost_status": "estimated"})]
    )
    for i in range(3):  # replies, no tokens (the provider sent no usage)
        session(store, clock, f"gap{i}", [], reply=True, end=t + 60 * i)
    session(store, clock, "unanswered", [], reply=False, end=t)  # no reply: nothing to account
    store.append_message("unanswered", "user", "anyone?", timestamp=t)
    session(
        store, clock, "nopr", [(t, {"input_tokens": 10, "cost_status": "unknown"})], model="acme/secret-1"
    )
    session(
        store, clock, "incl", [(t, {"input_tokens": 10, "cost_status": "included"})], model="openai/codex"
    )
    session(store, clock, "bare", [(t, {"input_tokens": 10})], model="local/llama")  # no cost, no status
    check = store.usage_check()
    assert check.counts == {"no_tokens": 3, "unpriced": 1, "uncosted": 1, "included": 1}
    assert set(check.explanations) == {*check.counts, "models"} and all(check.explanations.values())
    assert "hermes-agent #12023" in check.explanations["no_tokens"]
    assert [(m.model, m.sessions, m.tokens) for m in check.models] == [
        ("acme/secret-1", 1, 10),
        ("local/llama", 1, 10),
    ]
    assert store.usage_check_sessions("no_tokens") == ["gap2", "gap1", "gap0"]  # newest first
    pages = [store.usage_check_sessions("no_tokens", offset=o, limit=2) for o in (0, 2)]
    assert pages == [["gap2", "gap1"], ["gap0"]]
    assert store.usage_check_sessions("unpriced") == ["nopr"]
    assert store.usage_check_sessions("uncosted") == ["bare"]
    # a range that ends before those sessions sees none of them
    assert sum(store.usage_check(None, t - 3600).counts.values()) == 0
    with pytest.raises(ValueError):
        store.usage_check_sessions("nonsense")


# ---------------------------------------------------------------------- budget, costliest


def test_budget_month_to_date_and_pace(store, clock, db_path) -> None:
    now = at(2025, 4, 11)  # ten days into a 30-day April (Berlin)
    session(store, clock, "march", [(at(2025, 3, 31, 12), {"input_tokens": 1, "estimated_cost_usd": 5.0})])
    session(store, clock, "april", [(at(2025, 4, 5, 12), {"input_tokens": 1, "estimated_cost_usd": 20.0})])
    b = store.usage_budget(50.0, tz="Europe/Berlin", now=now)
    assert b.month == "2025-04" and b.since == at(2025, 4, 1) and b.until == now
    assert b.spent.cost_usd == pytest.approx(20.0) and b.month_to_date.cost_usd == pytest.approx(20.0)
    assert b.days_elapsed == pytest.approx(10.0) and b.days_in_month == pytest.approx(30.0)
    assert b.pace_usd == pytest.approx(60.0) and b.pace_over and not b.over and b.over_by_usd == 0
    over = store.usage_budget(10.0, tz="Europe/Berlin", now=now)
    assert over.over and over.over_by_usd == pytest.approx(10.0) and over.spent.cost_basis == "estimated"
    span = store.usage_budget(10.0, since=dt.date(2025, 3, 1), tz="Europe/Berlin", now=now)
    assert span.spent.cost_usd == pytest.approx(25.0) and span.month_to_date.cost_usd == pytest.approx(20.0)
    assert span.as_dict()["over_by_usd"] == pytest.approx(15.0)


def test_the_costliest_sessions_of_a_range(store, clock, db_path) -> None:
    session(store, clock, "a", [(at(2025, 4, 1, 10), {"input_tokens": 5, "estimated_cost_usd": 1.0})])
    session(store, clock, "b", [(at(2025, 4, 1, 11), {"input_tokens": 5, "estimated_cost_usd": 3.0})])
    # c: 4 USD spread over two days, half of it inside the range
    session(
        store,
        clock,
        "c",
        [
            (at(2025, 4, 1, 12), {"estimated_cost_usd": 0.0}),
            (at(2025, 4, 3, 12), {"estimated_cost_usd": 4.0}),
        ],
    )
    top = store.usage_sessions(dt.date(2025, 4, 1), at(2025, 4, 2, 12), "Europe/Berlin")
    assert [(s.session_id, round(s.figures.cost_usd, 6)) for s in top] == [("b", 3.0), ("c", 2.0), ("a", 1.0)]
    assert top[0].source == "cli" and top[0].model == "anthropic/claude-sonnet-4" and top[0].profile is None
    assert [
        s.session_id
        for s in store.usage_sessions(dt.date(2025, 4, 1), at(2025, 4, 2, 12), "Europe/Berlin", 1, 1)
    ] == ["c"]


# ---------------------------------------------------------------------- safety


def test_browsing_usage_writes_nothing(store, clock, db_path) -> None:
    _mixed_store(store, clock, db_path)
    store.close()
    before = (db_path.stat().st_size, db_path.stat().st_mtime_ns, sorted(os.listdir(db_path.parent)))
    for kw in ({"read_only": True}, {"migrate": False}):
        with SessionDB(db_path, **kw) as db:
            db.usage_report("day", "model", None, None, "Europe/Berlin")
            db.usage_sessions(tz="UTC")
            db.usage_check()
            db.usage_check_sessions("no_tokens")
            db.usage_budget(1.0, tz="UTC")
    assert (db_path.stat().st_size, db_path.stat().st_mtime_ns, sorted(os.listdir(db_path.parent))) == before


def test_hostile_values_never_raise(store, clock, db_path) -> None:
    session(store, clock, "h", [(at(2025, 4, 1, 10), {"input_tokens": 10, "estimated_cost_usd": 0.1})])
    conn = apsw.Connection(str(db_path))
    conn.execute("UPDATE session_model_usage SET first_seen = 'soon', last_seen = -5, output_tokens = 'many'")
    conn.execute("UPDATE sessions SET cache_read_tokens = x'00ff', ended_at = 1e300")
    conn.close()
    rep = store.usage_report("day", "model", dt.date(2025, 3, 1), dt.date(2025, 5, 1), "UTC")
    assert rep.total.input_tokens == 10  # the row falls back to the session's start
    store.usage_check()
    store.usage_sessions(tz="UTC")


def test_bad_arguments_are_clear_errors(store) -> None:
    with pytest.raises(ValueError, match="time zone"):
        store.usage_report(tz="Mars/Olympus")
    with pytest.raises(ValueError, match="period"):
        store.usage_report("fortnight", tz="UTC")
    with pytest.raises(ValueError, match="group"):
        store.usage_report("day", "colour", tz="UTC")


def test_a_commit_anywhere_is_seen_by_the_next_answer(store, clock, db_path) -> None:
    """The sessions with a residual are remembered until a commit: another program's (a new
    `data_version`) or this connection's own (`total_changes`)."""
    session(store, clock, "g", [(at(2025, 4, 1, 10), {"input_tokens": 100})], end=at(2025, 4, 1, 12))
    span = (dt.date(2025, 4, 1), dt.date(2025, 4, 2), "UTC")
    with SessionDB(db_path, read_only=True) as reader:
        assert reader.usage_report("day", None, *span).total.input_tokens == 100
        clock.now = at(2025, 4, 1, 11)
        # written through another connection
        store.update_token_counts("g", input_tokens=250, api_call_count=1, absolute=True)
        assert reader.usage_report("day", None, *span).total.input_tokens == 250
    store.update_token_counts("g", input_tokens=400, api_call_count=1, absolute=True)  # this one
    assert store.usage_report("day", None, *span).total.input_tokens == 400
    store.update_token_counts("g", input_tokens=500, api_call_count=1, absolute=True)
    assert store.usage_report("day", None, *span).total.input_tokens == 500


def test_a_zone_whose_midnight_is_skipped(store, clock, db_path) -> None:
    """Havana springs forward at midnight (2025-03-09 00:00 → 01:00): that day starts at 01:00
    and lasts 23 hours; a row across it still adds up exactly."""
    havana = ZoneInfo("America/Havana")
    session(
        store,
        clock,
        "h",
        [
            (at(2025, 3, 8, 12, tz=havana), {"input_tokens": 0}),
            (at(2025, 3, 10, 12, tz=havana), {"input_tokens": 4700}),
        ],
    )
    rep = store.usage_report("day", None, dt.date(2025, 3, 8), dt.date(2025, 3, 11), "America/Havana")
    assert [round((p.hi - p.lo) / 3600) for p in rep.periods] == [24, 23, 24]
    assert dt.datetime.fromtimestamp(rep.periods[1].lo, havana).hour == 1
    assert [f.input_tokens for f in rep.series()] == [1200, 2300, 1200]
    assert_matches(rep, db_path)


def test_thousands_of_periods(store, clock, db_path) -> None:
    """Twenty years by day: 7,000+ periods (the period search stays ~13 CASEs deep)."""
    session(store, clock, "old", [(at(2005, 6, 1, 12), {"input_tokens": 5})])
    session(store, clock, "new", [(at(2025, 6, 1, 12), {"input_tokens": 7})])
    rep = store.usage_report("day", "model", None, None, "Europe/Berlin", now=at(2025, 6, 2))
    assert len(rep.periods) > 7000 and rep.total.input_tokens == 12
    assert [f.input_tokens for f in rep.series() if f.input_tokens] == [5, 7]
    assert_matches(rep, db_path)


def test_the_last_n_days_are_whole_local_days() -> None:
    from hermes_tui.state import last_days_start

    now = at(2025, 3, 31, 9)  # the day after Berlin's spring-forward night
    assert last_days_start(1, "Europe/Berlin", now) == at(2025, 3, 31)
    assert last_days_start(2, "Europe/Berlin", now) == at(2025, 3, 30)
    assert last_days_start(30, "Europe/Berlin", now) == at(2025, 3, 2)
    assert last_days_start(7, "UTC", now) == at(2025, 3, 25, tz=dt.UTC)
