"""Discovery of every profile's store, and one status per failure mode (the others keep working)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import apsw
import pytest

from hermes_tui.state import SessionDB, SessionFilter
from hermes_tui.state.federation import open_stores
from hermes_tui.state.profiles import (
    StoreRef,
    StoreStatus,
    discover_stores,
    hermes_root,
    open_store,
    probe_store,
)


def make_store(path: Path, sessions: int = 1) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with SessionDB(path) as db:
        for i in range(sessions):
            db.create_session(f"{path.parent.name}-{i}", "cli")
            db.append_message(f"{path.parent.name}-{i}", "user", "hello there", timestamp=1000 + i)
    return path


def statuses(refs: list[StoreRef]) -> dict[str, StoreStatus]:
    return {r.profile: r.status for r in refs}


# ---------------------------------------------------------------------- layout
def test_default_profiles_and_extra_paths(tmp_path: Path) -> None:
    home = tmp_path / "hermes"
    make_store(home / "state.db")
    make_store(home / "profiles" / "work" / "state.db")
    make_store(home / "profiles" / "agent-2" / "state.db")
    (home / "profiles" / "fresh").mkdir()  # a profile that never ran: its store is missing
    (home / "profiles" / ".trash").mkdir()
    (home / "profiles" / "notes.txt").write_text("not a profile")
    extra = make_store(tmp_path / "elsewhere" / "state.db")
    refs = discover_stores([extra, tmp_path / "nope.db"], home=home)
    assert [(r.profile, r.origin) for r in refs] == [
        ("default", "default"),
        ("agent-2", "profile"),
        ("fresh", "profile"),
        ("work", "profile"),
        (str(extra), "path"),
        (str(tmp_path / "nope.db"), "path"),
    ]
    assert [r.current for r in refs] == [True, False, False, False, False, False]
    assert statuses(refs) == {
        "default": StoreStatus.OK,
        "agent-2": StoreStatus.OK,
        "fresh": StoreStatus.MISSING,
        "work": StoreStatus.OK,
        str(extra): StoreStatus.OK,
        str(tmp_path / "nope.db"): StoreStatus.MISSING,
    }
    assert refs[0].schema_version == 23 and refs[0].usable and not refs[2].usable
    assert "does not exist" in refs[2].reason


def test_the_same_file_is_listed_once(tmp_path: Path) -> None:
    home = tmp_path / "hermes"
    work = make_store(home / "profiles" / "work" / "state.db")
    link = tmp_path / "link.db"
    link.symlink_to(work)
    dotted = home / "profiles" / "work" / ".." / "work" / "state.db"
    refs = discover_stores([link, dotted, work, link], home=home)
    assert [r.profile for r in refs] == ["default", "work"]


def test_hermes_home_inside_profiles_is_the_current_profile(tmp_path: Path, monkeypatch) -> None:
    root = tmp_path / "hermes"
    make_store(root / "state.db")
    make_store(root / "profiles" / "work" / "state.db")
    monkeypatch.setenv("HERMES_HOME", str(root / "profiles" / "work"))
    assert hermes_root() == root
    refs = discover_stores(probe=False)
    assert [(r.profile, r.current) for r in refs] == [("default", False), ("work", True)]
    # A profile folder that does not exist yet is still the current store, listed first.
    monkeypatch.setenv("HERMES_HOME", str(root / "profiles" / "new"))
    refs = discover_stores(probe=False)
    assert [(r.profile, r.current, r.status) for r in refs] == [
        ("new", True, StoreStatus.MISSING),
        ("default", False, StoreStatus.OK),
        ("work", False, StoreStatus.OK),
    ]


def test_names_stay_unique(tmp_path: Path) -> None:
    home = tmp_path / "h"
    make_store(home / "profiles" / "default" / "state.db")
    refs = discover_stores(home=home, probe=False)
    assert [r.profile for r in refs] == ["default", "default #2"]
    with pytest.raises(ValueError):
        open_stores([StoreRef("a", refs[0].path), StoreRef("a", refs[1].path)])


# ---------------------------------------------------------------------- one status per failure mode
def _text_file(p: Path) -> Path:
    p.write_text("just some notes, not SQLite at all\n" * 10)
    return p


def _foreign(p: Path) -> Path:
    conn = apsw.Connection(str(p))
    conn.execute(
        "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT); INSERT INTO notes (body) VALUES ('x')"
    )
    conn.close()
    return p


def _newer(p: Path) -> Path:
    make_store(p)
    db = SessionDB(p)
    db._conn().execute("UPDATE schema_version SET version = 31")
    db.close()
    return p


@pytest.mark.parametrize(
    ("make", "status", "needle"),
    [
        (lambda p: p, StoreStatus.MISSING, "does not exist"),
        (lambda p: (p.symlink_to(p.parent / "gone.db"), p)[1], StoreStatus.MISSING, "which does not exist"),
        (lambda p: (p.mkdir(), p)[1], StoreStatus.UNREADABLE, "is a folder"),
        (lambda p: (os.mkfifo(p), p)[1], StoreStatus.UNREADABLE, "is a FIFO"),
        (_text_file, StoreStatus.NOT_A_DATABASE, "not an SQLite database"),
        (lambda p: (p.write_bytes(b""), p)[1], StoreStatus.NOT_HERMES, "empty"),
        (_foreign, StoreStatus.NOT_HERMES, "not a Hermes session store"),
        (_newer, StoreStatus.NEWER_SCHEMA, "v31 is newer"),
    ],
    ids=["missing", "dangling-link", "folder", "fifo", "text", "empty", "foreign", "newer"],
)
def test_each_failure_is_a_status_and_the_others_keep_working(tmp_path: Path, make, status, needle) -> None:
    good = make_store(tmp_path / "good" / "state.db", sessions=3)
    bad = make(tmp_path / "bad.db")
    before = sorted(os.listdir(tmp_path))
    probed = probe_store(StoreRef("bad", bad))
    assert probed.status == status and needle in probed.reason, probed
    assert probed.usable == (status == StoreStatus.NEWER_SCHEMA)
    with open_stores([StoreRef("bad", bad), StoreRef("good", good)]) as fed:
        assert fed.ref("bad").status == status
        assert fed.profiles == (["bad", "good"] if probed.usable else ["good"])
        assert len(fed.session_order()) == 3 + (1 if probed.usable else 0)
        assert fed.search("hello").page(0, 10)
    assert sorted(os.listdir(tmp_path)) == before  # browsing created nothing next to the bad file


_HOLD_LOCK = textwrap.dedent("""
    import sqlite3, sys
    conn = sqlite3.connect(sys.argv[1], isolation_level=None)
    conn.execute("PRAGMA journal_mode=DELETE")
    conn.execute("BEGIN EXCLUSIVE")
    print("locked", flush=True)
    sys.stdin.read()
    conn.execute("ROLLBACK")
""")


def test_a_store_locked_by_another_process(tmp_path: Path) -> None:
    """stdlib sqlite3 in a subprocess (never in this process) holds an exclusive lock."""
    locked = make_store(tmp_path / "locked" / "state.db")
    good = make_store(tmp_path / "good" / "state.db")
    proc = subprocess.Popen(
        [sys.executable, "-c", _HOLD_LOCK, str(locked)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
        probed = probe_store(StoreRef("locked", locked))
        assert probed.status == StoreStatus.LOCKED and "locked" in probed.reason
        with open_stores([StoreRef("locked", locked), StoreRef("good", good)], read_only=True) as fed:
            assert fed.ref("locked").status == StoreStatus.LOCKED
            assert fed.profiles == ["good"] and len(fed.session_order()) == 1
    finally:
        proc.communicate("", timeout=30)
    assert probe_store(StoreRef("locked", locked)).status == StoreStatus.OK  # released: fine again


def test_a_read_only_file_is_opened_read_only_and_refuses_writes_alone(tmp_path: Path) -> None:
    ro = make_store(tmp_path / "ro" / "state.db")
    rw = make_store(tmp_path / "rw" / "state.db")
    ro.chmod(0o444)  # mode bits are respected even by root
    try:
        ref, db = open_store(StoreRef("ro", ro))
        assert db is not None and ref.status == StoreStatus.OK and ref.read_only
        assert "read-only" in ref.reason
        db.close()
        with open_stores([StoreRef("ro", ro), StoreRef("rw", rw)]) as fed:
            assert fed.ref("ro").read_only and not fed.ref("rw").read_only
            with pytest.raises(Exception, match="read-only"):
                fed.call("ro", SessionDB.set_session_title, "ro-0", "new title")
            assert fed.call("rw", SessionDB.set_session_title, "rw-0", "new title")
            assert fed.session_order(SessionFilter(text="new title")).all_pairs() == [("rw", "rw-0")]
    finally:
        ro.chmod(0o644)


def test_probe_leaves_the_file_as_found(tmp_path: Path) -> None:
    foreign = _foreign(tmp_path / "foreign.db")
    before = (foreign.stat().st_size, foreign.stat().st_mtime_ns, sorted(os.listdir(tmp_path)))
    assert probe_store(StoreRef("x", foreign)).status == StoreStatus.NOT_HERMES
    assert (foreign.stat().st_size, foreign.stat().st_mtime_ns, sorted(os.listdir(tmp_path))) == before


def test_current_store_follows_hermes_sticky_profile(tmp_path: Path, monkeypatch) -> None:
    """`hermes profile use NAME` (`<root>/active_profile`) chooses the store `hermes` opens with
    no `-p`, unless `$HERMES_HOME` is a profile's own folder; a name Hermes refuses never leads
    outside `profiles/`."""
    from hermes_tui.state import current_store_path, sticky_profile

    root = tmp_path / ".hermes"
    root.mkdir()
    monkeypatch.setenv("HERMES_HOME", str(root))
    assert sticky_profile() is None and current_store_path() == root / "state.db"
    for text, name in (("work\n", "work"), ("\ufeffWork \n", "work"), ("default", None), ("", None)):
        (root / "active_profile").write_text(text, encoding="utf-8")
        assert sticky_profile() == name
        assert current_store_path() == (root / "profiles" / name / "state.db" if name else root / "state.db")
    for hostile in ("../../etc", "a/b", "-x", "x" * 65, "work\x00"):
        (root / "active_profile").write_text(hostile, encoding="utf-8")
        assert sticky_profile() is None and current_store_path() == root / "state.db"
    (root / "active_profile").write_bytes(b"\xff\xfe")
    assert sticky_profile() is None
    (root / "active_profile").write_text("work", encoding="utf-8")
    monkeypatch.setenv("HERMES_HOME", str(root / "profiles" / "home"))  # Hermes trusts it as is
    assert sticky_profile() is None and current_store_path() == root / "profiles" / "home" / "state.db"
    assert sticky_profile(root) == "work"
    assert current_store_path(root) == root / "profiles" / "work" / "state.db"
