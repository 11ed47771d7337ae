"""The header and the list title as pure functions (`controllers/header.py`): no app."""

from __future__ import annotations

from types import SimpleNamespace

from hermes_tui.app.controllers.header import count_words, list_title
from hermes_tui.app.header_text import (
    HEADER_PROFILES,
    TOOLTIP_BADGES,
    left_cut,
    store_header,
    stores_header,
)
from hermes_tui.safe_text import cell_width


def test_left_cut_keeps_the_end_of_a_path() -> None:
    assert left_cut("~/.hermes/state.db", 40) == "~/.hermes/state.db"
    cut = left_cut("/very/long/path/to/hermes/state.db", 12)
    assert cut.startswith("…") and cut.endswith("state.db") and cell_width(cut) <= 12


def test_count_words() -> None:
    assert count_words(False, False, 5, "session", False, None) == ""
    assert count_words(True, True, 5, "session", False, None) == "counting sessions…"
    assert count_words(True, False, 1, "session", False, 9) == "1 session"
    assert count_words(True, False, 3, "session", True, 34) == "3 of 34 sessions (filtered)"
    assert count_words(True, False, 3, "session", True, None) == "3 sessions"


def test_store_header_drops_details_before_the_path() -> None:
    caps = {"read_only": True, "schema_version": 11, "fts_layout": "trigram\n"}
    wide = store_header(120, caps, "~/.hermes/state.db", "12 sessions").plain
    assert wide == "hermes-tui · ~/.hermes/state.db · schema v11 · fts trigram · read-only · 12 sessions"
    narrow = store_header(50, caps, "~/.hermes/profiles/work/state.db", "12 sessions").plain
    assert "schema" not in narrow and narrow.endswith("read-only · 12 sessions")
    assert "state.db" in narrow


def test_stores_header_counts_profiles_and_badges_failures() -> None:
    failed = [SimpleNamespace(profile="bad", status="locked", badge="bad: locked\n(details)")]
    text, tooltip = stores_header(True, {"work": 3, "home": 1}, lambda p: p == "home", 2, failed)
    assert text.plain == "hermes-tui · work 3 · home 1 (read-only) · opening 2 more… · ⚠ bad: locked"
    assert tooltip == "bad: locked (details)"
    assert stores_header(False, {"work": 3}, lambda p: False, 0, [])[0].plain == "hermes-tui"


def test_stores_header_sums_many_profiles_and_counts_failures_by_kind() -> None:
    counts = {f"p{i}": i for i in range(HEADER_PROFILES + 1)}
    failed = [SimpleNamespace(profile=f"f{i}", status="missing", badge=f"f{i}") for i in range(30)]
    text, tooltip = stores_header(True, counts, lambda p: False, 0, failed)
    assert (
        text.plain == f"hermes-tui · {len(counts)} profiles · {sum(counts.values())} sessions · ⚠ 30 missing"
    )
    assert tooltip is not None and tooltip.endswith(f"… and {30 - TOOLTIP_BADGES} more")


def test_list_title() -> None:
    assert list_title("Sessions", 12, False, True, "", None, 0) == "Sessions 12"
    assert list_title("Sessions", 12, True, True, "", None, 0) == "Sessions ≥ 12"
    filtered = list_title("Sessions", 3, False, True, "source=cli", 34, 2)
    assert filtered == "3 of 34 · filter: source=cli · 2 selected"
    assert list_title("Archived", 1, False, False, "title~x", None, 0) == "Archived 1 · filter: title~x"
