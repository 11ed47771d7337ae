"""Several stores' bookkeeping as pure functions (`controllers/federation.py`): no app."""

from __future__ import annotations

from types import SimpleNamespace

from hermes_tui.app.controllers.federation import (
    FAILURES_TOLD,
    failure_notes,
    keys_by_profile,
    merge_behind,
)


def test_keys_are_grouped_by_their_store() -> None:
    keys = [("a", "1"), ("b", "2"), ("a", "3"), ("gone", "4"), "lone-id"]
    assert keys_by_profile(keys, ["a", "b", "c"]) == {"a": ["1", "3"], "b": ["2"], "c": []}


def test_the_merge_is_behind_an_open_store_it_neither_covered_nor_waits_for() -> None:
    assert not merge_behind(["a", "b"], ["a", "b"], merged={"a"}, pending={"b"})
    assert merge_behind(["a", "b"], ["a", "b"], merged={"a"}, pending=set())
    assert not merge_behind(["a", "b"], ["a"], merged={"a"}, pending=set())  # b is not open
    assert not merge_behind(["a"], ["a", "b"], merged={"a"}, pending=set())  # b is filtered out


def test_failures_are_told_one_by_one_then_in_one_note() -> None:
    refs = [SimpleNamespace(profile=f"p{i}", badge=f"p{i}: missing\nstore") for i in range(FAILURES_TOLD + 2)]
    notes, told = failure_notes(refs[:1], set())
    assert notes == [("p0: missing store", "A store could not be opened")] and told == {"p0"}
    notes, told2 = failure_notes(refs, told)
    assert len(notes) == FAILURES_TOLD  # FAILURES_TOLD - 1 one by one, then one for the rest
    assert notes[-1] == ("2 more stores could not be opened: see the header.", "Stores could not be opened")
    assert told2 == {r.profile for r in refs[1:]}
    assert failure_notes(refs, told | told2) == ([], set())
