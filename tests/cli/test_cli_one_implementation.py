"""Pieces of `hermes-tui sessions` that several commands share (issue #16): one implementation each,
so the commands cannot drift apart."""

from __future__ import annotations

import argparse
import io
import re
import sys
import time
from typing import Any

import pytest

from hermes_tui.cli import errors, housekeeping, listing, output, parser, sessions


def run(capsys: pytest.CaptureFixture[str], *argv: Any) -> tuple[int, str, str]:
    code = sessions.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(autouse=True)
def no_tty(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))


def test_prune_and_delete_list_a_delegate_child_the_same_way(db_path, capsys) -> None:
    """`prune` and `delete` both show the subagent that goes with a parent, in one format."""
    line = "  + tg-sub  (child of tg-parent, 1 msgs)"
    code, out, _ = run(capsys, "delete", "tg-parent", "--dry-run", "--db", db_path)
    assert code == 0 and line in out.splitlines()
    code, out, _ = run(capsys, "prune", "--title", "tg-parent", "--dry-run", "--db", db_path)
    assert code == 0 and line in out.splitlines()


def _prune_args(*argv: str) -> argparse.Namespace:
    return sessions.build_parser().parse_args(["prune", *argv])


def test_every_prune_range_option_becomes_its_store_filter() -> None:
    """Each `--min-X`/`--max-X` option is declared and read from one list; all eight reach the store."""
    args = _prune_args(
        "--min-messages", "1",
        "--max-messages", "2",
        "--min-tokens", "3",
        "--max-tokens", "4",
        "--min-cost", "0.5",
        "--max-cost", "6.5",
        "--min-tool-calls", "7",
        "--max-tool-calls", "8",
    )  # fmt: skip
    _older, _source, filters, any_filter = housekeeping.prune_filters(args)
    assert any_filter
    assert filters == {
        "min_messages": 1,
        "max_messages": 2,
        "min_tokens": 3,
        "max_tokens": 4,
        "min_cost": 0.5,
        "max_cost": 6.5,
        "min_tool_calls": 7,
        "max_tool_calls": 8,
    }
    assert housekeeping.prune_filters(_prune_args())[2] == {}


@pytest.mark.parametrize(
    ("parse", "text", "error"),
    [
        (parser.non_negative_int, "-5", "must be 0 or more, not -5"),
        (parser.non_negative_float, "-1.5", "must be 0 or more, not -1.5"),
        (parser.non_negative_int, "1.5", "invalid number '1.5'"),
        (parser.non_negative_float, "lots", "invalid number 'lots'"),
    ],
)
def test_non_negative_numbers_refuse_the_same_way(parse: Any, text: str, error: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match=error):
        parse(text)


def test_non_negative_numbers_keep_their_type() -> None:
    assert parser.non_negative_int("0") == 0 and type(parser.non_negative_int("7")) is int
    assert type(parser.non_negative_float("7")) is float


def test_stats_sections_print_title_then_table(capsys: pytest.CaptureFixture[str]) -> None:
    output.titled_table(
        "By thing:",
        ("NAME", "N"),
        [{"name": "a", "n": 1}, {"name": "bbb", "n": 22}],
        lambda r: (r["name"], r["n"]),
        right=(1,),
        limits={0: 40},
    )
    assert capsys.readouterr().out == "\nBy thing:\nNAME   N\n----  --\na      1\nbbb   22\n"


def test_prune_time_bounds_take_the_stricter_of_duration_and_date() -> None:
    args = _prune_args(
        "--older-than", "1d", "--before", "2001-01-01", "--newer-than", "3d", "--after", "2000-01-01"
    )
    filters = housekeeping.prune_filters(args)[2]
    assert filters["started_before"] == parser.parse_when("2001-01-01")  # earlier than a day ago
    assert abs(filters["started_after"] - (time.time() - 3 * 86400)) < 60  # later than 2000
    filters = housekeeping.prune_filters(_prune_args("--older-than", "1d"))[2]
    assert set(filters) == {"started_before"}
    filters = housekeeping.prune_filters(_prune_args("--after", "2000-01-01"))[2]
    assert filters == {"started_after": parser.parse_when("2000-01-01")}


def test_search_hits_print_one_way_for_one_store_and_several(db_path, capsys) -> None:
    code, out, _ = run(capsys, "search", "docker", "--db", db_path)
    lines = out.splitlines()
    assert code == 0 and lines[0].startswith("route: ") and lines[1] == ""
    assert re.fullmatch(r"#\d+  [\w-]+  \w+  \S+  \[\w+\]", lines[2]) and lines[3].startswith("  ")
    hit = {
        "id": 7,
        "session_id": "s",
        "role": "user",
        "timestamp": None,
        "source": "cli",
        "snippet": "a\nb",
    }
    listing.print_hit(hit, "work:s")
    assert capsys.readouterr().out == "\n#7  work:s  user  -  [cli]\n  a b\n"


def test_writes_under_read_only_are_refused_with_one_message(db_path, capsys) -> None:
    for argv in (("rename", "cli-docker", "x"), ("repair",)):
        code, _out, err = run(capsys, *argv, "--read-only", "--db", db_path)
        assert code == errors.EXIT_CODES["read_only"], (argv, err)
        assert f"'{argv[0]}' writes to the database, but --read-only was given; nothing was changed" in err
