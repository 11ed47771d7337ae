"""Hermes' list, differentially: our `session_order` + `list_rows` (what `sessions list` and the
browser show) and our `list_sessions_rich` against the writers' own `list_sessions_rich` on the
files they wrote: the v31 writer (schema v31) and hermes-agent 0.19.0 (schema v22).

Every combination of archived view, hidden sessions and source filter; the same ids (a
compression chain is listed once, as its tip, by both), in the same order where both order the
same way (`started` = the writers' default `started_at DESC`, `last_active` = their
`order_by_last_active=True`), and the same `unread` and `last_active` per row.
"""

from __future__ import annotations

import itertools
import json
import time
from pathlib import Path
from typing import Any

import pytest

from hermes_tui.cli import sessions
from hermes_tui.state import SessionDB, SessionFilter

from .oracle import V31, Peer, peer_python
from .scenario31 import build_v31_store, copy_store, upstream_list

pytestmark = pytest.mark.peer

VIEWS = ("exclude", "include", "only")
SOURCES = (None, "cli", "telegram")


@pytest.fixture(scope="module")
def v31_store(tmp_path_factory: pytest.TempPathFactory, peer31_venv_python: Path) -> Any:
    path = tmp_path_factory.mktemp("v31list") / "state.db"
    peer = Peer(path, python=peer31_venv_python, spec=V31)
    try:
        facts = build_v31_store(peer)
        yield path, peer, facts
    finally:
        peer.close()


def _upstream_kwargs(view: str, hidden: bool, source: str | None) -> dict[str, Any]:
    return {
        "source": source,
        "include_archived": view == "include",
        "archived_only": view == "only",
        "include_hidden": hidden,
    }


def _ours(db: SessionDB, view: str, hidden: bool, source: str | None, **kw: Any) -> SessionFilter:
    return SessionFilter(sources=(source,) if source else (), archived=view, include_hidden=hidden, **kw)


@pytest.mark.parametrize(("view", "hidden", "source"), list(itertools.product(VIEWS, (False, True), SOURCES)))
def test_list_equals_the_v31_writers(v31_store: Any, view: str, hidden: bool, source: str | None) -> None:
    path, peer, _facts = v31_store
    kw = _upstream_kwargs(view, hidden, source)
    theirs_started = upstream_list(peer, **kw)
    theirs_active = upstream_list(peer, order_by_last_active=True, **kw)
    with SessionDB(path, read_only=True, migrate=False) as db:
        flt = _ours(db, view, hidden, source)
        started = db.session_order(flt, order="started").ids
        active = db.session_order(flt, order="last_active").ids
        assert started == [r["id"] for r in theirs_started]
        assert active == [r["id"] for r in theirs_active]
        rows = {r["id"]: r for r in db.list_rows(active)}
        for theirs in theirs_active:
            mine = rows[theirs["id"]]
            assert mine["unread"] == theirs["unread"], theirs["id"]
            assert mine["last_active"] == theirs["last_active"], theirs["id"]
            assert mine.get("lineage_root_id") == theirs.get("_lineage_root_id"), theirs["id"]
            for flag in ("archived", "hidden", "pinned"):
                assert mine[flag] == theirs[flag], (theirs["id"], flag)
        # Our own upstream-compatible list_sessions_rich is the writer's too.
        for ordered in (False, True):
            ours = db.list_sessions_rich(limit=1000, order_by_last_active=ordered, **kw)
            expected = theirs_active if ordered else theirs_started
            assert [r["id"] for r in ours] == [r["id"] for r in expected]
            assert [r["unread"] for r in ours] == [r["unread"] for r in expected]
            assert [r["last_active"] for r in ours] == [r["last_active"] for r in expected]


def test_the_default_list_is_hermes_default(v31_store: Any) -> None:
    """`SessionFilter()` (the browser's and `sessions list`'s default) is `list_sessions_rich()`:
    no hidden, no archived, no sub-agent run, the chain once as its tip, branch and reset
    children (marked and legacy) listed."""
    path, peer, _facts = v31_store
    theirs = [r["id"] for r in upstream_list(peer)]
    with SessionDB(path, read_only=True, migrate=False) as db:
        ours = db.session_order(SessionFilter(), order="started").ids
    assert ours == theirs
    for kept in ("branch-1", "reset-child", "legacy-reset", "chain-a3", "pin"):
        assert kept in ours
    for dropped in ("hid", "arch", "auto-arch", "arch-hid", "pin-arch", "delegate-1", "subrun-1", "chain-a"):
        assert dropped not in ours


def test_archived_view_lists_hidden_archived_sessions_too(v31_store: Any) -> None:
    path, peer, _facts = v31_store
    theirs = [r["id"] for r in upstream_list(peer, archived_only=True)]
    with SessionDB(path, read_only=True, migrate=False) as db:
        ours = db.session_order(SessionFilter(archived="only"), order="started").ids
        assert set(ours) == {"arch", "auto-arch", "arch-hid", "pin-arch"}
    assert ours == theirs


def test_pinned_first_is_the_order_with_the_pins_moved_up(v31_store: Any) -> None:
    path, peer, _facts = v31_store
    theirs = [r["id"] for r in upstream_list(peer, include_archived=True, order_by_last_active=True)]
    pinned = {r["id"] for r in upstream_list(peer, include_archived=True) if r["pinned"]}
    assert pinned == {"pin", "pin-arch"}
    with SessionDB(path, read_only=True, migrate=False) as db:
        got = db.session_order(SessionFilter(archived="include", pinned_first=True), with_keys=True)
        plain = db.session_order(SessionFilter(archived="include"), with_keys=True)
    assert got.pinned == 2
    assert got.ids == [i for i in theirs if i in pinned] + [i for i in theirs if i not in pinned]
    assert dict(zip(got.ids, got.keys or [], strict=True)) == dict(
        zip(plain.ids, plain.keys or [], strict=True)
    )


@pytest.mark.parametrize(("hidden", "source"), list(itertools.product((False, True), SOURCES)))
def test_pinned_first_is_the_sidebars_list_archived_pins_included(
    v31_store: Any, hidden: bool, source: str | None
) -> None:
    """The browser's default list (pinned first) is what Hermes' sidebar lists:
    `list_sessions_rich(order_by_last_active=True, include_pinned=True)`, where a pin is an
    explicit keep, so a pinned archived session is listed; the pins first, then the order."""
    path, peer, _facts = v31_store
    kw = _upstream_kwargs("exclude", hidden, source)
    theirs = upstream_list(peer, order_by_last_active=True, include_pinned=True, **kw)
    pins = [r["id"] for r in theirs if r["pinned"]]
    rest = [r["id"] for r in theirs if not r["pinned"]]
    everything = {**kw, "include_archived": True}
    active = [r["id"] for r in upstream_list(peer, order_by_last_active=True, **everything)]
    with SessionDB(path, read_only=True, migrate=False) as db:
        got = db.session_order(_ours(db, "exclude", hidden, source, pinned_first=True), with_keys=True)
        plain = db.session_order(_ours(db, "exclude", hidden, source), order="last_active").ids
    assert got.ids == [i for i in active if i in pins] + rest
    assert got.pinned == len(pins)
    if source in (None, "cli") and not hidden:
        assert "pin-arch" in got.ids and "pin-arch" not in plain
    assert [i for i in got.ids if i not in pins] == [i for i in plain if i not in pins]


def test_freshest_activity_and_its_description(v31_store: Any) -> None:
    """`last_active` is the freshest of `last_activity_at` and the newest message, inside the
    epoch window; `last_activity_description` is what the session is doing."""
    path, peer, facts = v31_store
    base = facts["base"]
    theirs = {r["id"]: r for r in upstream_list(peer)}
    with SessionDB(path, read_only=True, migrate=False) as db:
        rows = {r["id"]: r for r in db.list_rows(["busy", "stale-activity", "far-activity", "empty"])}
    assert rows["busy"]["last_active"] == pytest.approx(base + 3000) == theirs["busy"]["last_active"]
    assert rows["busy"]["last_activity_description"] == "running the test suite"
    assert rows["stale-activity"]["last_active"] == pytest.approx(base + 1310)
    assert rows["far-activity"]["last_active"] == pytest.approx(base + 1320)  # 5e9 is out of the window
    assert rows["empty"]["last_active"] == rows["empty"]["started_at"] == theirs["empty"]["last_active"]


def test_browsing_writes_nothing(v31_store: Any) -> None:
    """Listing and opening sessions does not mark them read (nor touch the file at all)."""
    path, peer, _facts = v31_store
    before = path.read_bytes()
    with SessionDB(path, read_only=True, migrate=False) as db:
        ids = db.session_order(SessionFilter.every_session()).ids
        db.list_rows(ids)
        for sid in ids:
            db.get_session(sid)
            db.get_messages(sid)
    assert path.read_bytes() == before
    assert {r["id"]: r["unread"] for r in upstream_list(peer)}["unread-1"] is True


# ---------------------------------------------------------------------- the CLI
def run(capsys: Any, *argv: Any) -> tuple[int, str, str]:
    code = sessions.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    ("flags", "upstream"),
    [
        ((), {}),
        (("--archived",), {"archived_only": True}),
        (("--include-hidden",), {"include_hidden": True}),
        (("--archived", "--include-hidden"), {"archived_only": True, "include_hidden": True}),
        (("--source", "telegram", "--include-hidden"), {"source": "telegram", "include_hidden": True}),
    ],
)
def test_cli_list_json_is_hermes_list(
    v31_store: Any, capsys: Any, flags: tuple[str, ...], upstream: dict
) -> None:
    path, peer, _facts = v31_store
    theirs = upstream_list(peer, order_by_last_active=True, **upstream)
    code, out, err = run(capsys, "list", "--db", path, "--json", "--limit", "0", *flags)
    assert code == 0, err
    rows = json.loads(out)["sessions"]
    assert [r["id"] for r in rows] == [r["id"] for r in theirs]
    for mine, their in zip(rows, theirs, strict=True):
        for key in ("archived", "hidden", "pinned", "unread", "last_active", "last_activity_description"):
            assert mine[key] == their[key], (their["id"], key)


def test_cli_list_text_marks_pinned_and_unread(v31_store: Any, capsys: Any) -> None:
    path, _peer, _facts = v31_store
    code, out, _ = run(capsys, "list", "--db", path, "--limit", "0")
    assert code == 0
    lines = {
        ln.split()[1] if ln[:1] in "*●" else ln.split()[0]: ln for ln in out.splitlines()[2:] if ln.strip()
    }
    assert lines["pin"].startswith("*  pin ")
    assert lines["unread-1"].startswith("●  unread-1 ") and lines["unread-0"].startswith("●  unread-0 ")
    assert lines["read-1"].startswith("   read-1 ")
    assert "* pinned  ● unread  a archived  h hidden" in out
    assert "hid" not in lines and "arch" not in lines
    code, out, _ = run(capsys, "list", "--db", path, "--archived", "--limit", "0")
    rows = [ln.split() for ln in out.splitlines()[2:6]]
    assert {r[1]: r[0] for r in rows} == {"pin-arch": "*a", "arch-hid": "ah", "auto-arch": "a", "arch": "a"}


def test_cli_show_prints_flags_activity_and_what_the_list_shows(v31_store: Any, capsys: Any) -> None:
    path, peer, _facts = v31_store
    code, out, _ = run(capsys, "show", "busy", "--db", path)
    assert code == 0 and "activity:    running the test suite" in out and "last active:" in out
    code, out, _ = run(capsys, "show", "pin-arch", "--db", path)
    assert "flags:       pinned, archived" in out
    code, out, _ = run(capsys, "show", "unread-1", "--db", path, "--json")
    session = json.loads(out)["session"]
    theirs = {r["id"]: r for r in upstream_list(peer)}["unread-1"]
    assert session["unread"] is True and session["last_active"] == theirs["last_active"]
    # A hidden, archived session is still found and shown by its id.
    code, out, _ = run(capsys, "show", "arch-hid", "--db", path)
    assert code == 0 and "flags:       archived, hidden" in out


def test_cli_list_all_profiles_applies_the_same_filter(
    v31_store: Any, capsys: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, peer, _facts = v31_store
    root = tmp_path / ".hermes"
    (root / "profiles" / "work").mkdir(parents=True)
    copy_store(path, root / "state.db")
    copy_store(path, root / "profiles" / "work" / "state.db")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("HERMES_HOME", str(root))
    archived = [r["id"] for r in upstream_list(peer, archived_only=True)]
    code, out, err = run(capsys, "list", "--all", "--archived", "--json", "--limit", "0")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["counts"] == {"default": len(archived), "work": len(archived)}
    assert sorted((r["profile"], r["id"]) for r in doc["sessions"]) == sorted(
        (p, i) for p in ("default", "work") for i in archived
    )
    code, out, _ = run(capsys, "list", "--profile", "work", "--include-hidden", "--json", "--limit", "0")
    hidden = [r["id"] for r in upstream_list(peer, include_hidden=True, order_by_last_active=True)]
    assert [r["id"] for r in json.loads(out)["sessions"]] == hidden


# ---------------------------------------------------------------------- 0.19.0's files (v22)
@pytest.fixture(scope="module")
def v22_store(tmp_path_factory: pytest.TempPathFactory) -> Any:
    path = tmp_path_factory.mktemp("v22list") / "state.db"
    peer = Peer(path, python=peer_python())
    base = time.time() - 40_000
    try:
        p = peer.call
        order = ["r-cli", "r-tg", "chain", "chain2", "br", "sub", "dlg", "rp", "rc", "arch", "empty"]
        p("create_session", "r-cli", "cli")
        p("append_message", "r-cli", "user", "hello", timestamp=base + 100)
        p("create_session", "r-tg", "telegram")
        p("append_message", "r-tg", "user", "hello tg", timestamp=base + 200)
        p("create_session", "chain", "cli")
        p("append_message", "chain", "user", "start", timestamp=base + 300)
        p("end_session", "chain", "compression")
        p("create_session", "chain2", "cli", parent_session_id="chain")
        p("append_message", "chain2", "user", "continued", timestamp=base + 900)
        p("create_session", "br", "cli", parent_session_id="r-cli", model_config={"_branched_from": "r-cli"})
        p("create_session", "sub", "cli", parent_session_id="r-cli")
        p("create_session", "dlg", "cli", parent_session_id="r-cli", model_config={"_delegate_from": "r-cli"})
        # A child on its parent's session_key after a reset: 0.19.0 knows no reset children.
        p("create_session", "rp", "telegram", session_key="tg:1")
        p("end_session", "rp", "session_reset")
        p("create_session", "rc", "telegram", session_key="tg:1", parent_session_id="rp")
        p("append_message", "rc", "user", "after reset", timestamp=base + 950)
        p("create_session", "arch", "cli")
        p("set_session_archived", "arch", True)
        p("create_session", "empty", "telegram")
        rows = [(base + 10 * i + 5, sid) for i, sid in enumerate(order)]  # no tie with a message
        peer.exec(
            "import sqlite3\n"
            "c = sqlite3.connect(db_path)\n"
            f"c.executemany('UPDATE sessions SET started_at = ? WHERE id = ?', {rows!r})\n"
            "c.commit(); c.close(); result = None"
        )
        yield path, peer
    finally:
        peer.close()


@pytest.mark.parametrize(("view", "source"), list(itertools.product(VIEWS, SOURCES)))
def test_list_equals_0_19_0s_on_its_file(v22_store: Any, view: str, source: str | None) -> None:
    path, peer = v22_store
    kw = {"source": source, "include_archived": view == "include", "archived_only": view == "only"}
    theirs_started = peer.call("list_sessions_rich", limit=1000, **kw)
    theirs_active = peer.call("list_sessions_rich", limit=1000, order_by_last_active=True, **kw)
    with SessionDB(path, read_only=True, migrate=False) as db:
        assert db.capabilities()["schema_version"] == 22
        for hidden in (False, True):  # no `hidden` column: nothing to hide
            flt = SessionFilter(sources=(source,) if source else (), archived=view, include_hidden=hidden)
            assert db.session_order(flt, order="started").ids == [r["id"] for r in theirs_started]
            assert db.session_order(flt).ids == [r["id"] for r in theirs_active]
        rows = {r["id"]: r for r in db.list_rows([r["id"] for r in theirs_active])}
        for theirs in theirs_active:
            assert rows[theirs["id"]]["last_active"] == theirs["last_active"]
            assert rows[theirs["id"]]["unread"] is False and rows[theirs["id"]]["pinned"] == 0
        ours = db.list_sessions_rich(limit=1000, order_by_last_active=True, **kw)
        assert [r["id"] for r in ours] == [r["id"] for r in theirs_active]
        if view == "exclude" and source is None:
            listed = [r["id"] for r in theirs_started]
            assert "rc" not in listed and "chain2" in listed and "br" in listed  # 0.19.0's rules
            assert db.edge_kind("rc") == "other"  # no reset kind on a 0.19.0 file
