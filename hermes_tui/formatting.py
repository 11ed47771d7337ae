"""Presentation helpers shared by the browser and the CLI: numbers, costs and byte sizes.

One implementation of each, so a cost or a size reads the same in the session list, the stats
screen and every `hermes-tui sessions` table. Knows neither SQLite nor Textual (only Rich's
`filesize`, which Textual itself uses), so the store-free CLI paths can import it cheaply.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from rich.filesize import decimal

#: Shown where a stored count, cost or size is not a usable number.
INVALID_NUMBER = "?"


def is_missing(value: Any) -> bool:
    """None or blank text: a value that was never stored (shown blank, not as invalid)."""
    return value is None or (isinstance(value, str) and not value.strip())


def to_number(value: Any) -> float | None:
    """A finite float from a stored value, or None when it is missing or not a usable number.

    SQLite keeps whatever a writer stored (``'yesterday'``, ``X'00'``, ``1e300``, ``NaN``), so
    every count, cost and timestamp shown passes through here before any arithmetic.
    """
    if value is None or isinstance(value, (bytes, bytearray, memoryview)):
        return None
    try:
        number = float(value.strip() if isinstance(value, str) else value)
    except (TypeError, ValueError, OverflowError):
        return None
    return number if math.isfinite(number) else None


def row_cost(row: Mapping[str, Any]) -> Any:
    """A session's cost as shown: the provider's actual cost when reported, else the estimate
    (None when neither is stored). The same rule as the store's `COALESCE(actual, estimated)`."""
    cost = row.get("actual_cost_usd")
    return row.get("estimated_cost_usd") if is_missing(cost) else cost


def format_cost(value: Any, *, places: int = 2, blank_zero: bool = False) -> str:
    """THE cost formatter: ``$1,234.50`` (``places`` decimals), ``<$0.01`` for a cost too small
    to show, exponent form from $1e12, ``?`` for a stored value that is not a number. A missing
    cost reads as zero; ``blank_zero`` shows zero (and missing) as '' (a quiet list column)."""
    number = to_number(0 if is_missing(value) else value)
    if number is None:
        return INVALID_NUMBER
    if number == 0 and blank_zero:
        return ""
    if abs(number) >= 1e12:
        return f"${number:.2e}"
    smallest = 10.0**-places
    if 0 < number < smallest:
        return f"<${smallest:.{places}f}"
    return f"${number:,.{places}f}"


def format_size(n: Any) -> str:
    """THE byte-size formatter: Rich's decimal units (``1.5 MB``, ``512 bytes``); ``?`` when the
    stored value is not a number (a negative size is one)."""
    number = to_number(0 if is_missing(n) else n)
    if number is None or number < 0:
        return INVALID_NUMBER
    return decimal(int(number))


def plural(n: int, word: str, many: str | None = None) -> str:
    """THE count with its noun: ``1 session``, ``12 sessions``, ``1,234 batches``; ``many`` for an
    irregular plural (``plural(n, "entry", "entries")``). Every count a person reads goes through
    here, so no message says "1 sessions"."""
    return f"{n:,} {word}" if n == 1 else f"{n:,} {many or word + 's'}"
