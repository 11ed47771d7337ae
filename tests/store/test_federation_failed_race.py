"""`Federation.failed` never names a store that is opening right then: it read the open stores
before taking the lock and the stores still to answer after it, so a store that opened in
between was in neither and was told "could not be opened" (an extra notification in the
300-store browser test under load)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from hermes_tui.state import SessionDB
from hermes_tui.state.federation import open_stores
from hermes_tui.state.profiles import discover_stores


class AnswerOnEnter(threading.Condition):
    """The federation's lock, which lets ``answer`` run (an opener finishing a store) the moment
    a reader takes it: the interleaving two threads meet by chance under load."""

    def __init__(self, answer: Any) -> None:
        super().__init__()
        self.answer = answer

    def __enter__(self) -> bool:
        entered = super().__enter__()
        answer, self.answer = self.answer, None
        if answer is not None:
            answer()
        return entered


def test_a_store_opening_meanwhile_is_not_failed(tmp_path: Path) -> None:
    home = tmp_path / "hermes"
    (home / "profiles" / "work").mkdir(parents=True)
    SessionDB(home / "state.db").close()
    SessionDB(home / "profiles" / "work" / "state.db").close()
    fed = open_stores(discover_stores(home=home, probe=False))
    try:
        assert fed.profiles == ["default", "work"] and fed.failed == []
        db = fed.dbs["work"]
        fed.dbs = {p: d for p, d in fed.dbs.items() if p != "work"}  # "work" still opening
        fed._unanswered = {"work"}

        def opened() -> None:  # as `_open_next` does, under the lock
            fed.dbs = {**fed.dbs, "work": db}
            fed._unanswered.discard("work")

        fed._lock = AnswerOnEnter(opened)
        assert fed.failed == []
    finally:
        fed.close()
