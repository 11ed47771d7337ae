"""Three profiles' stores in a temporary `$HERMES_HOME` (plus broken ones) and a federated app
over them: shared by the Pilot tests (`test_profiles_ui.py`) and the snapshot tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hermes_tui.app.app import HermesApp
from hermes_tui.app.federated_prefetch import federate
from hermes_tui.app.stores import StoreChoice
from hermes_tui.state import SessionDB

from ._support import FIXED_NOW, make_app

T0 = FIXED_NOW - 86_400  # every message a day before the fixed clock

#: profile → [(session id, title, [(timestamp offset, text)])]
LAYOUT: dict[str, list[tuple[str, str, list[tuple[int, str]]]]] = {
    "default": [
        ("s-shared", "default shared alpha", [(10, "the kestrel report in default")]),
        ("d-2", "default two", [(40, "nothing special")]),
    ],
    "work": [
        ("s-shared", "work shared beta", [(30, "the kestrel report in work")]),
        ("w-2", "work two", [(20, "plain words")]),
        ("w-3", "work three", [(50, "kestrel once more, at work")]),
    ],
    "zeta": [
        ("z-1", "zeta one", [(5, "zeta says kestrel too")]),
    ],
}


def store_path(home: Path, profile: str) -> Path:
    return home / "state.db" if profile == "default" else home / "profiles" / profile / "state.db"


def build_home(home: Path, broken: bool = True) -> Path:
    """Three good stores, and (with `broken`) a text file, a folder and a missing store."""
    for profile, sessions in LAYOUT.items():
        path = store_path(home, profile)
        path.parent.mkdir(parents=True, exist_ok=True)
        with SessionDB(path) as db:
            for sid, title, messages in sessions:
                db.create_session(sid, "cli", model="test/model")
                for offset, text in messages:
                    db.append_message(sid, "user", text, timestamp=T0 + offset)
                db.set_session_title(sid, title)
    if broken:
        (home / "profiles" / "broken").mkdir(parents=True)
        (home / "profiles" / "broken" / "state.db").write_text("this is a text file, not SQLite\n")
        (home / "profiles" / "folder" / "state.db").mkdir(parents=True)
        (home / "profiles" / "fresh").mkdir(parents=True)
    return home


def federated_app(home: Path, choice: StoreChoice | None = None, **kw: Any) -> HermesApp:
    app = make_app(home / "state.db", **kw)
    federate(app, choice or StoreChoice(all_profiles=True, home=home))
    return app


def expected_order(home: Path) -> list[tuple[str, str]]:
    """Sorting the union: last activity descending, ties by profile then id descending."""
    rows: list[tuple[float, str, str]] = []
    for profile, sessions in LAYOUT.items():
        for sid, _title, messages in sessions:
            rows.append((max(T0 + o for o, _t in messages), profile, sid))
    rows.sort(key=lambda r: (-r[0], r[1], tuple(-ord(c) for c in r[2])))
    return [(p, s) for _ts, p, s in rows]
