"""The substring scan newest first stops at the newest matches instead of reading every message.

It walks back by id and stops once no smaller id can hold a newer message (the message index's
block maxima); messages are not stored in time order (imports, clock changes), so the results
must be exactly those of sorting every match."""

from __future__ import annotations

import random

import pytest

from hermes_tui.state import SessionDB


def _expected(db: SessionDB, needle: str, limit: int, offset: int) -> list[int]:
    rows = db._tuples(
        "SELECT m.id FROM messages m WHERE m.content LIKE ? AND m.active = 1 "
        "ORDER BY m.timestamp DESC, m.id DESC LIMIT ? OFFSET ?",
        (f"%{needle}%", limit, offset),
    )
    return [r[0] for r in rows]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_newest_first_scan_is_the_sorted_matches(db_path, monkeypatch, seed):
    rnd = random.Random(seed)
    with SessionDB(db_path=db_path) as db:
        monkeypatch.setattr(type(db), "_side_reach", lambda self: None)  # the scan, not the index
        db.create_session("s", "cli")
        base = 1_700_000_000.0
        for i in range(1500):
            ts = base + i
            if rnd.random() < 0.05:  # out of order: far older or newer than its id says
                ts = base + rnd.uniform(-5_000, 5_000)
            text = "本 " if rnd.random() < 0.4 else "other "
            db.append_message("s", "user", f"{text}{i}", timestamp=ts)
        for limit, offset in [(1, 0), (20, 0), (20, 40), (50, 300), (7, 590)]:
            out = db.search("本", limit=limit, offset=offset, sort="newest", context=False)
            assert out.route == "like_scan"
            assert [r["id"] for r in out.results] == _expected(db, "本", limit, offset), (limit, offset)
