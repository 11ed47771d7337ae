"""The main screen's controllers decide without a running app: each decision is a pure function
of what the screen shows (`list_order`, `filter_bar`, `search_nav`, `session_view`, `shown`,
`key_checks`). No App is started here."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from hermes_tui.app.controllers.filter_bar import active_note, next_order, toggled_view
from hermes_tui.app.controllers.key_checks import key_allowed
from hermes_tui.app.controllers.list_order import order_step, order_subtitle
from hermes_tui.app.controllers.search_nav import back_step, slash_target, step_target
from hermes_tui.app.controllers.session_view import highlight_opens
from hermes_tui.app.controllers.shown import deleted_words, tip_subtitle
from hermes_tui.app.list_views import DEFAULT_FILTER, view_of, with_view
from hermes_tui.app.settings import ORDERS


def test_an_order_is_a_head_then_its_whole_order_or_a_new_one() -> None:
    assert order_step(provisional=True, handover=False) == "head"
    assert order_step(provisional=False, handover=True) == "handover"
    assert order_step(provisional=False, handover=False) == "set"


def test_the_list_names_only_an_order_other_than_the_default() -> None:
    assert order_subtitle("last_active") == ""
    assert order_subtitle("message_count") == "by message count"


def test_archived_toggles_with_hermes_list_and_says_where_it_went() -> None:
    view, note = toggled_view(DEFAULT_FILTER)
    assert view == "archived" and "Archived" in note
    back, note = toggled_view(with_view(DEFAULT_FILTER, "archived"))
    assert back == "default" and note.startswith("Hermes' list")
    assert view_of(with_view(DEFAULT_FILTER, back)) == "default"


def test_the_order_key_goes_round_every_order() -> None:
    order, seen = ORDERS[0], []
    for _ in ORDERS:
        order, note = next_order(order)
        seen.append(order)
        assert note == f"Ordered by {order.replace('_', ' ')}"
    assert seen[-1] == ORDERS[0] and sorted(seen) == sorted(ORDERS)


def test_active_now_says_what_it_keeps() -> None:
    assert "last 10 minutes" in active_note(True)
    assert active_note(False) == "Active-now filter off"


def test_slash_finds_in_a_focused_transcript_and_searches_elsewhere() -> None:
    assert slash_target("ready", transcript_open=True, in_transcript=True) == "find"
    assert slash_target("ready", transcript_open=True, in_transcript=False) == "search"
    assert slash_target("ready", transcript_open=False, in_transcript=True) == "search"
    assert slash_target("opening", transcript_open=False, in_transcript=False) == "search"
    assert slash_target("missing", transcript_open=False, in_transcript=False) is None


def test_n_steps_the_find_first_then_the_search_hits() -> None:
    assert step_target(finding_here=True, searching=True, hits=True) == "find"
    assert step_target(finding_here=False, searching=True, hits=True) == "search"
    assert step_target(finding_here=False, searching=True, hits=False) == "none"
    assert step_target(finding_here=False, searching=False, hits=True) == "none"


@pytest.mark.parametrize(
    ("in_filters", "reading_hit", "searching", "zoomed", "step"),
    [
        (True, True, True, True, "filters"),  # the filter bar closes first
        (False, True, True, True, "results"),  # a hit's transcript: back to the results
        (False, True, False, False, "list"),  # a hit read after the search closed
        (False, False, True, True, "search"),  # the search closes before the zoom
        (False, False, False, True, "zoom"),
        (False, False, False, False, "list"),
    ],
)
def test_escape_goes_back_one_step(
    in_filters: bool, reading_hit: bool, searching: bool, zoomed: bool, step: str
) -> None:
    assert back_step(in_filters, reading_hit, searching, zoomed) == step


def test_a_highlighted_row_opens_unless_wanted_already_or_the_chains_row() -> None:
    assert highlight_opens(("s1", None), ("s0", None), chain_row=False)
    assert not highlight_opens(("s1", None), ("s1", None), chain_row=False)
    assert highlight_opens(("s1", "work"), ("s1", "home"), chain_row=False)  # another store's
    assert not highlight_opens((None, None), ("s0", None), chain_row=False)
    assert not highlight_opens(("tip", None), ("s0", None), chain_row=True)


def test_a_deleted_session_says_who_deleted_it() -> None:
    assert deleted_words("s1", elsewhere=True) == (
        "Session s1 was deleted elsewhere (by another program).",
        "deleted elsewhere",
    )
    assert deleted_words("s1", elsewhere=False) == ("Session s1 was deleted (u undoes).", "deleted")
    assert tip_subtitle("s9") == "L: live tip" and tip_subtitle(None) == ""


@dataclass
class Facts:
    typing: bool = False
    opened: str = "ready"
    filtered: bool = False
    hits: bool = False
    live_tip: bool = False
    apply: dict[str, bool] = field(default_factory=dict)

    def applies(self, name: str) -> bool | None:
        return self.apply.get(name, True)


def test_keys_that_cannot_apply_are_hidden_and_do_nothing() -> None:
    assert key_allowed("search", (), Facts()) and not key_allowed("search", (), Facts(typing=True))
    assert not key_allowed("open_demo", (), Facts()) and key_allowed("open_demo", (), Facts(opened="missing"))
    assert key_allowed("open_demo", (), Facts(opened="failed"))
    assert not key_allowed("clear_filters", (), Facts()) and key_allowed(
        "clear_filters", (), Facts(filtered=True)
    )
    for action in ("next_hit", "prev_hit"):
        assert not key_allowed(action, (), Facts()) and key_allowed(action, (), Facts(hits=True))
    assert not key_allowed("live_tip", (), Facts()) and key_allowed("live_tip", (), Facts(live_tip=True))
    archived = Facts(apply={"archive": False, "unarchive": True})
    assert not key_allowed("run_action", ("archive",), archived)
    assert key_allowed("run_action", ("unarchive",), archived)
    assert key_allowed("run_action", (), archived)  # no action named: nothing to check
    assert key_allowed("zoom", (), Facts(typing=True, opened="missing"))  # the others always apply
