"""One cost formatter and one size formatter: the session list, the stats screen, the CLI
tables and the Markdown export read a cost or a size the same way."""

from __future__ import annotations

from typing import Any

import pytest

from hermes_tui import exporting
from hermes_tui.app import render
from hermes_tui.app.screens import stats
from hermes_tui.cli import output, trash
from hermes_tui.formatting import INVALID_NUMBER, format_cost, format_size, row_cost


@pytest.mark.parametrize(
    ("value", "cents", "fine"),
    [
        (None, "$0.00", "$0.0000"),
        (0, "$0.00", "$0.0000"),
        (1234.5, "$1,234.50", "$1,234.5000"),
        (0.05, "$0.05", "$0.0500"),
        (0.004, "<$0.01", "$0.0040"),
        (0.00001, "<$0.01", "<$0.0001"),
        (1e300, "$1.00e+300", "$1.00e+300"),
        ("garbage", INVALID_NUMBER, INVALID_NUMBER),
        (b"\x00", INVALID_NUMBER, INVALID_NUMBER),
        (float("nan"), INVALID_NUMBER, INVALID_NUMBER),
    ],
)
def test_every_cost_cell_is_the_one_formatter(value: Any, cents: str, fine: str) -> None:
    assert format_cost(value) == cents
    assert stats._cost(value) == cents  # the stats screen
    assert render.usd(value) == cents
    assert output.fmt_cost(value) == fine  # CLI tables: same rules, 1/100 cent
    list_cell = render.format_cost({"estimated_cost_usd": value})
    assert list_cell == ("" if cents == "$0.00" else cents)  # the list leaves zero blank


def test_shown_cost_is_actual_else_estimate() -> None:
    assert row_cost({"actual_cost_usd": 2, "estimated_cost_usd": 9}) == 2
    assert row_cost({"actual_cost_usd": None, "estimated_cost_usd": 9}) == 9
    assert row_cost({"actual_cost_usd": "  ", "estimated_cost_usd": 9}) == 9
    assert row_cost({}) is None
    md = exporting.to_markdown(
        {"id": "s", "actual_cost_usd": None, "estimated_cost_usd": 0.25, "messages": []}
    )
    assert "\ncost_usd: 0.25\n" in md
    assert render.format_cost({"actual_cost_usd": 2, "estimated_cost_usd": 9}) == "$2.00"


@pytest.mark.parametrize(
    ("n", "shown"),
    [
        (0, "0 bytes"),
        (None, "0 bytes"),
        (1, "1 byte"),
        (1500, "1.5 kB"),
        (524_288_000, "524.3 MB"),
        (3.7e9, "3.7 GB"),
        ("x", INVALID_NUMBER),
        (-5, INVALID_NUMBER),
    ],
)
def test_every_size_is_the_one_formatter(n: Any, shown: str) -> None:
    assert format_size(n) == shown
    assert stats._size(n) == shown
    assert render.format_size is format_size
    assert not hasattr(trash, "_size")  # the CLI's trash listings call format_size
