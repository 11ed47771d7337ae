"""The delete and prune toasts: one wording (`dialog_base.trashed_message`), counts only."""

from __future__ import annotations

from hermes_tui.app.screens.delete import deleted_message
from hermes_tui.app.screens.prune import pruned_message


def _result(deleted: int, requested: int, *, cancelled: bool = False, skipped: int = 0) -> dict[str, object]:
    return {
        "deleted": deleted,
        "requested": requested,
        "cancelled": cancelled,
        "skipped": skipped,
        "trash_entry": "t1",
    }


def test_a_complete_delete_or_prune_says_how_many_and_u() -> None:
    assert deleted_message(_result(1, 1)) == "Deleted 1 session — u to undo."
    assert pruned_message(_result(1_200, 1_200)) == "Pruned 1,200 sessions — u to undo."


def test_a_cancelled_or_partial_one_says_how_many_of_how_many() -> None:
    assert deleted_message(_result(3, 1_500, cancelled=True)) == (
        "Delete cancelled: 3 of 1,500 sessions deleted, 1,497 kept — u to undo."
    )
    assert pruned_message(_result(1_000, 1_002, skipped=2)) == (
        "Prune done: 1,000 of 1,002 sessions deleted, 2 kept (reopened since the preview) — u to undo."
    )
    without_entry = {**_result(0, 2, cancelled=True), "trash_entry": None}
    assert pruned_message(without_entry) == "Prune cancelled: 0 of 2 sessions deleted, 2 kept."
    one = {**_result(0, 1, cancelled=True), "trash_entry": None}
    assert deleted_message(one) == "Delete cancelled: 0 of 1 session deleted, 1 kept."


def test_sessions_hermes_is_working_in_are_kept_with_the_reason() -> None:
    """A session under a live turn lease is kept (`write_guards`): the toast says so apart from
    the sessions that changed since the preview."""
    busy = {**_result(1, 3, skipped=2), "guarded_ids": ["s2"]}
    assert pruned_message(busy) == (
        "Prune done: 1 of 3 sessions deleted, 1 kept (reopened since the preview); 1 kept: Hermes is "
        "working in it right now (a turn or a compression is running); try again when it is idle — u to undo."
    )
    only = {**_result(0, 1, skipped=1), "guarded_ids": ["s1"], "trash_entry": None}
    assert deleted_message(only) == (
        "Delete done: 0 of 1 session deleted; 1 kept: Hermes is working in it right now (a turn or a "
        "compression is running); try again when it is idle."
    )


def test_an_error_quoting_store_text_reaches_the_screen_inert() -> None:
    """An exception's message may quote a title or id from the store: escape sequences, other
    controls and bidi overrides are shown, never obeyed, on one line."""
    from hermes_tui.app.screens.dialog_base import error_text
    from hermes_tui.safe_text import is_inert
    from hermes_tui.state import TitleError

    text = error_text(TitleError("title 'evil\x1b]52;c;cHduZWQ=\x07\u202e' is\nheld by s-1"))
    assert is_inert(text) and "\n" not in text and "\x1b" not in text
    assert text.startswith("TitleError: title 'evil") and "held by s-1" in text
