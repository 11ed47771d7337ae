"""The trash treats its own files as untrusted input.

A trash entry is two files in a folder beside the store; anything that can write there (a sync
tool, a backup restored over it, another program, a hand edit, a full disk) can leave them
malformed or forged. Each test here is an attack that worked before: SQL in a table name, one
malformed manifest breaking every listing, a forged `orphan` row re-parenting a live session, a
symlinked trash folder steering retention and `empty` into another folder, a disk-full write
leaving message text behind. Rules checked: a bad entry is listed as `damaged` with a reason and
changes nothing; the other entries still list, restore and empty; only links the entry's own
delete removed are put back; a trash folder that is a link is never followed.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st
from test_trash import build, table_dump

from hermes_tui.state import SessionDB, TrashError
from hermes_tui.state import trash as T


@pytest.fixture(autouse=True)
def private_data_home(tmp_path, monkeypatch):
    """The user data folder (fallback trash, the trash's link key) inside the test's folder."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    return tmp_path / "xdg-data"


@pytest.fixture
def tdb(db):
    db.trash_root = None
    return db


def full_dump(db: SessionDB) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table of the file (FTS shadow tables and sqlite_sequence included), with
    its rowid where it has one: a bad entry must leave all of it exactly as it was."""
    conn = db._conn()
    out: dict[str, list[tuple[Any, ...]]] = {}
    for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"):
        sql = conn.execute("SELECT sql FROM sqlite_master WHERE name = ?", (name,)).fetchall()[0][0] or ""
        if sql.upper().startswith("CREATE VIRTUAL"):
            continue  # its shadow tables are dumped
        cols = [r[1] for r in conn.execute(f'PRAGMA table_info("{name}")')]
        sel = ", ".join(
            f'typeof("{c}"), CASE typeof("{c}") WHEN \'text\' THEN CAST("{c}" AS BLOB) ELSE "{c}" END'
            for c in cols
        )
        try:
            rows = conn.execute(f'SELECT rowid, {sel} FROM "{name}"').fetchall()
        except Exception:  # noqa: BLE001 - WITHOUT ROWID tables
            rows = conn.execute(f'SELECT {sel} FROM "{name}"').fetchall()
        out[name] = sorted((tuple(repr(v) if isinstance(v, float) else v for v in r) for r in rows), key=repr)
    return out


def entry_path(db: SessionDB, entry_id: str) -> Path:
    return T.beside_root(db.db_path) / entry_id


def edit_manifest(path: Path, change: Callable[[dict[str, Any]], None]) -> None:
    man = path / "manifest.json"
    data = json.loads(man.read_text())
    change(data)
    man.write_text(json.dumps(data))


def sized(path: Path) -> None:
    """A careful forger: the manifest's `bytes` made to match the edited rows file."""
    edit_manifest(path, lambda m: m.update(bytes=(path / "rows.jsonl").stat().st_size))


def add_rows(path: Path, *records: dict[str, Any]) -> None:
    with open(path / "rows.jsonl", "a", encoding="utf-8") as fh:
        for rec in records:
            fh.write(json.dumps(rec) + "\n")
    sized(path)


def by_id(entries: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {e["id"]: e for e in entries}


# ---------------------------------------------------------------- SQL in names
def test_sql_in_a_cascade_table_name_never_runs(tdb):
    """A crafted `cascade_tables` name deleted a live message and retitled a live session."""
    build(tdb, 3)
    res = tdb.trash_sessions(["s0"])
    evil = (
        "x\"); DELETE FROM messages WHERE session_id = 's1'; "
        "UPDATE sessions SET title = 'pwned' WHERE id = 's2'; --"
    )
    edit_manifest(Path(res["trash_path"]), lambda m: m["cascade_tables"].update({evil: "session_id"}))
    before = full_dump(tdb)
    with pytest.raises(TrashError, match="damaged.*cascade table"):
        tdb.restore_trash(res["trash_entry"])
    assert full_dump(tdb) == before
    [entry] = tdb.list_trash()
    assert entry["status"] == "damaged" and "cascade table" in entry["reason"]


def test_sql_in_a_row_table_or_column_name_never_runs(tdb):
    build(tdb, 3)
    res = tdb.trash_sessions(["s0"])
    path = Path(res["trash_path"])
    add_rows(path, {"t": 'messages" ; DELETE FROM messages; --', "r": {"id": 999, "session_id": "s0"}})
    before = full_dump(tdb)
    with pytest.raises(TrashError, match="damaged"):
        tdb.restore_trash(res["trash_entry"])
    assert full_dump(tdb) == before
    rows = (path / "rows.jsonl").read_text().splitlines()[:-1]
    line = json.loads(rows[0])
    line["r"]['title") VALUES (1); DELETE FROM messages; --'] = "x"
    (path / "rows.jsonl").write_text("\n".join([json.dumps(line), *rows[1:]]) + "\n")
    sized(path)
    with pytest.raises(TrashError, match="damaged.*column"):
        tdb.restore_trash(res["trash_entry"])
    assert full_dump(tdb) == before


# ---------------------------------------------------------------- one malformed manifest
MALFORMED: dict[str, Callable[[dict[str, Any]], None]] = {
    "sessions not a list": lambda m: m.update(sessions=5),
    "a session not an object": lambda m: m.update(sessions=[1]),
    "counts not an object": lambda m: m.update(counts=[]),
    "created_at text": lambda m: m.update(created_at="yesterday"),
    "created_at huge": lambda m: m.update(created_at=1e308),
    "deleted_ids not ids": lambda m: m.update(deleted_ids=[{"id": 1}]),
    "status unknown": lambda m: m.update(status="\x1b[31mevil"),
    "what unknown": lambda m: m.update(what=["delete"]),
    "cascade_tables a list": lambda m: m.update(cascade_tables=["session_model_usage"]),
    "an unknown table": lambda m: m["cascade_tables"].update(no_such_table="session_id"),
    "a wrong column": lambda m: m["cascade_tables"].update(session_model_usage="model"),
    "missing sessions": lambda m: m.pop("sessions"),
    "missing deleted_ids": lambda m: m.pop("deleted_ids"),
    "format text": lambda m: m.update(format="1"),
    "another entry's id": lambda m: m.update(id="20200101T000000Z-abcdef"),
    "title a number": lambda m: m["sessions"][0].update(title=7),
}


@pytest.mark.parametrize("name", list(MALFORMED))
def test_a_malformed_manifest_is_reported_and_the_other_entries_still_work(tdb, name):
    """One malformed manifest made `list_trash`, every restore and `empty` fail."""
    build(tdb, 3)
    good = tdb.trash_sessions(["s0"])
    bad = tdb.trash_sessions(["s1"])
    edit_manifest(Path(bad["trash_path"]), MALFORMED[name])
    before = full_dump(tdb)
    entries = by_id(tdb.list_trash())
    assert entries[good["trash_entry"]]["status"] == "deleted"
    assert entries[bad["trash_entry"]]["status"] == "damaged" and entries[bad["trash_entry"]]["reason"]
    report = tdb.trash_report()
    assert [s["id"] for s in report["skipped"]] == [bad["trash_entry"]]
    with pytest.raises(TrashError, match="damaged"):
        tdb.trash_entry(bad["trash_entry"])
    with pytest.raises(TrashError, match="damaged"):
        tdb.restore_trash(bad["trash_entry"])
    assert full_dump(tdb) == before
    assert tdb.restore_trash(good["trash_entry"])["restored"] == 1
    later = tdb.trash_sessions(["s2"])  # its retention reads the damaged entry too
    assert later["trash_entry"] and later["deleted"] == 1
    out = tdb.empty_trash()
    assert set(out["removed"]) == {good["trash_entry"], bad["trash_entry"], later["trash_entry"]}
    assert tdb.list_trash() == []


@pytest.mark.parametrize(
    "content",
    [b"", b"{", b'{"format": 1, "sessions": [', b"\xff\xfe not utf-8", b"[]", b"null", b"NaN"],
)
def test_an_unreadable_manifest_is_damaged_not_an_error(tdb, content):
    build(tdb, 2)
    good = tdb.trash_sessions(["s0"])
    bad = tdb.trash_sessions(["s1"])
    (Path(bad["trash_path"]) / "manifest.json").write_bytes(content)
    entries = by_id(tdb.list_trash())
    assert entries[good["trash_entry"]]["status"] == "deleted"
    assert entries[bad["trash_entry"]]["status"] == "damaged"
    assert "manifest" in entries[bad["trash_entry"]]["reason"]


def test_bad_values_in_rows_are_reported_before_anything_is_written(tdb):
    build(tdb, 3)
    res = tdb.trash_sessions(["s0", "s1"])
    path = Path(res["trash_path"])
    original = (path / "rows.jsonl").read_text()
    lines = original.splitlines()
    last_message = max(i for i, ln in enumerate(lines) if json.loads(ln)["t"] == "messages")
    before = full_dump(tdb)
    for bad in (
        {"$b64": "***not base64***"},
        {"$what": 1},
        2**70,
        [1, 2],
        True,
        "\ud800",
    ):
        rec = json.loads(lines[last_message])
        rec["r"]["content"] = bad
        edited = [*lines[:last_message], json.dumps(rec), *lines[last_message + 1 :]]
        (path / "rows.jsonl").write_text("\n".join(edited) + "\n")
        sized(path)
        with pytest.raises(TrashError, match="damaged"):
            tdb.restore_trash(res["trash_entry"])
        assert full_dump(tdb) == before, bad
    (path / "rows.jsonl").write_text(original)
    sized(path)
    assert tdb.restore_trash(res["trash_entry"])["restored"] == 2


def test_a_rows_file_cut_short_or_grown_is_damaged(tdb):
    """A completed entry's manifest records the size of its rows file: a cut or an appended
    line (without the manifest edited to match) is found by the listing already."""
    build(tdb, 2)
    res = tdb.trash_sessions(["s0"])
    rows = Path(res["trash_path"]) / "rows.jsonl"
    data = rows.read_bytes()
    before = full_dump(tdb)
    for edited in (data[: len(data) // 2], data + b'{"t": "orphan"}\n'):
        rows.write_bytes(edited)
        [entry] = tdb.list_trash()
        assert entry["status"] == "damaged" and "cut short or edited" in entry["reason"]
        with pytest.raises(TrashError, match="damaged"):
            tdb.restore_trash(res["trash_entry"])
        assert full_dump(tdb) == before


# ---------------------------------------------------------------- forged links
def test_a_forged_orphan_row_does_not_reparent_an_unrelated_session(tdb):
    build(tdb, 3)
    res = tdb.trash_sessions(["s0"])
    add_rows(Path(res["trash_path"]), {"t": "orphan", "r": {"id": "s1", "parent_session_id": "s0"}})
    out = tdb.restore_trash(res["trash_entry"])
    assert out["restored"] == 1
    assert tdb.get_session("s1")["parent_session_id"] is None
    [note] = out["orphans"]
    assert note["id"] == "s1" and note["status"] == "kept" and "does not prove" in note["reason"]


def test_a_forged_session_row_does_not_reparent_a_live_session(tdb):
    """A sessions row for a live session the delete never took, listed as not deleted."""
    build(tdb, 3)
    res = tdb.trash_sessions(["s0"])
    path = Path(res["trash_path"])
    row = {"id": "s2", "source": "cli", "started_at": 1.0, "parent_session_id": "s0"}
    add_rows(path, {"t": "sessions", "r": row})
    edit_manifest(path, lambda m: m["sessions"].append({"id": "s2", "title": None}))
    out = tdb.restore_trash(res["trash_entry"])
    assert out["restored"] == 1
    assert tdb.get_session("s2")["parent_session_id"] is None


def test_a_copied_link_from_another_entry_does_not_verify(tdb):
    """A genuine orphan row moved into another entry names a link that entry never removed."""
    build(tdb, 3)
    tdb.create_session("kid", "cli", parent_session_id="s1")
    first = tdb.trash_sessions(["s1"])
    stolen = [
        ln for ln in (Path(first["trash_path"]) / "rows.jsonl").read_text().splitlines() if '"orphan"' in ln
    ]
    assert stolen
    second = tdb.trash_sessions(["s0"])
    tdb.restore_trash(first["trash_entry"])  # kid is a child of s1 again
    tdb._conn().execute("UPDATE sessions SET parent_session_id = NULL WHERE id = 'kid'")
    with open(Path(second["trash_path"]) / "rows.jsonl", "a") as fh:
        rec = json.loads(stolen[0])
        rec["r"]["parent_session_id"] = "s0"
        fh.write(json.dumps(rec) + "\n")
    sized(Path(second["trash_path"]))
    tdb.restore_trash(second["trash_entry"])
    assert tdb.get_session("kid")["parent_session_id"] is None


def test_the_links_a_delete_removed_are_restored(tdb):
    build(tdb, 2)
    tdb.create_session("kid", "cli", parent_session_id="s0")
    res = tdb.trash_sessions(["s0"])
    assert tdb.get_session("kid")["parent_session_id"] is None
    out = tdb.restore_trash(res["trash_entry"])
    assert out["orphans"] == [{"id": "kid", "parent_session_id": "s0", "status": "relinked"}]
    assert tdb.get_session("kid")["parent_session_id"] == "s0"


# ---------------------------------------------------------------- symlinks and special files
def _victim(tmp_path: Path) -> tuple[Path, list[Path]]:
    """A folder of someone else's that looks like a trash: entry-named folders with files."""
    victim = tmp_path / "victim"
    kept = []
    for name in ("20200101T000000Z-aaaaaa", "20200101T000000Z-bbbbbb"):
        folder = victim / "state.db" / name
        folder.mkdir(parents=True)
        (folder / "precious.txt").write_text("do not delete")
        kept.append(folder)
    (kept[1] / "manifest.json").write_text(json.dumps({"format": 1, "created_at": 0}))
    for folder in kept:
        os.utime(folder, (0, 0))
    return victim, kept


@pytest.mark.parametrize("level", ["trash folder", "store folder"])
def test_a_symlinked_trash_folder_is_never_followed(tdb, tmp_path, level):
    """`.hermes-tui-trash` (or its per-store folder) replaced by a link: retention and `empty`
    deleted folders in the link's target."""
    build(tdb, 2)
    victim, kept = _victim(tmp_path)
    top = tdb.db_path.parent / T.TRASH_DIR_NAME
    if level == "trash folder":
        top.symlink_to(victim)
    else:
        top.mkdir(mode=0o700)
        (top / tdb.db_path.name).symlink_to(victim / "state.db")
    assert tdb.list_trash() == []
    [problem] = tdb.trash_report()["skipped"]
    assert problem["id"] is None and "is a link, not a folder: never followed" in problem["reason"]
    assert tdb.empty_trash()["removed"] == []
    tdb.trash_max_bytes = 1
    res = tdb.trash_sessions(["s0"])  # written elsewhere; its retention must not reach the victim
    assert victim not in Path(res["trash_path"]).parents
    tdb.apply_trash_retention()
    tdb.empty_trash()
    for folder in kept:
        assert (folder / "precious.txt").read_text() == "do not delete"


def test_an_entry_folder_that_is_a_link_is_never_followed(tdb, tmp_path):
    build(tdb, 2)
    tdb.trash_sessions(["s0"])
    victim, kept = _victim(tmp_path)
    root = T.beside_root(tdb.db_path)
    (root / "20200101T000000Z-cccccc").symlink_to(kept[1])
    entries = by_id(tdb.list_trash())
    assert entries["20200101T000000Z-cccccc"]["status"] == "damaged"
    assert "is a link, not a folder: never followed" in entries["20200101T000000Z-cccccc"]["reason"]
    tdb.empty_trash()
    assert (kept[1] / "precious.txt").exists() and not (root / "20200101T000000Z-cccccc").exists()


def test_entry_files_that_are_links_or_fifos_are_not_read(tdb, tmp_path):
    """A manifest that is a link is not followed; one that is a FIFO does not hang the listing."""
    build(tdb, 3)
    linked = tdb.trash_sessions(["s0"])
    fifo = tdb.trash_sessions(["s1"])
    elsewhere = tmp_path / "elsewhere.json"
    shutil.copy(Path(linked["trash_path"]) / "manifest.json", elsewhere)
    (Path(linked["trash_path"]) / "manifest.json").unlink()
    (Path(linked["trash_path"]) / "manifest.json").symlink_to(elsewhere)
    (Path(fifo["trash_path"]) / "manifest.json").unlink()
    os.mkfifo(Path(fifo["trash_path"]) / "manifest.json")
    got: list[Any] = []
    worker = threading.Thread(target=lambda: got.append(tdb.list_trash()), daemon=True)
    worker.start()
    worker.join(60)
    if worker.is_alive():  # unblock the reader so the test run can end, then fail
        fd = os.open(Path(fifo["trash_path"]) / "manifest.json", os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)
        worker.join(10)
        pytest.fail("list_trash blocked on a FIFO")
    entries = by_id(got[0])
    assert entries[linked["trash_entry"]]["status"] == "damaged"
    assert "manifest.json is a link, not a file" in entries[linked["trash_entry"]]["reason"]
    assert entries[fifo["trash_entry"]]["status"] == "damaged"
    assert "not a regular file" in entries[fifo["trash_entry"]]["reason"]


# ---------------------------------------------------------------- disk full
def _no_trace_of(root: Path, needle: bytes) -> None:
    for p in root.rglob("*"):
        if p.is_file():
            assert needle not in p.read_bytes(), p


def test_disk_full_while_the_entry_is_written_leaves_no_entry(tdb, monkeypatch):
    """ENOSPC at the rows file's write: the half-written entry (message text) is removed, nothing
    is deleted, and the error says the disk is full."""
    build(tdb, 2)
    before = table_dump(tdb)
    real_fdopen = os.fdopen

    class Full:
        def __init__(self, fh: Any) -> None:
            self.fh = fh
            self.written = 0

        def write(self, text: str) -> int:
            self.written += len(text)
            if self.written > 400:
                raise OSError(errno.ENOSPC, "No space left on device")
            return self.fh.write(text)

        def __getattr__(self, name: str) -> Any:
            return getattr(self.fh, name)

        def __enter__(self) -> Full:
            return self

        def __exit__(self, *exc: object) -> None:
            self.fh.close()

    def fdopen(fd: int, *a: Any, **kw: Any) -> Any:
        return Full(real_fdopen(fd, *a, **kw))

    monkeypatch.setattr(T.os, "fdopen", fdopen)
    with pytest.raises(Exception) as caught:
        tdb.trash_sessions(["s0", "s1"])
    monkeypatch.setattr(T.os, "fdopen", real_fdopen)
    assert "disk" in str(caught.value).lower() or "space" in str(caught.value).lower()
    assert table_dump(tdb) == before
    root = T.beside_root(tdb.db_path)
    assert not any(root.iterdir()), list(root.iterdir())
    _no_trace_of(root, b"zebra")
    assert tdb.list_trash() == []


def test_disk_full_at_the_final_manifest_still_returns_the_entry(tdb, monkeypatch):
    """The rows are gone once the delete ran: a full disk when the manifest is marked `deleted`
    leaves the entry `interrupted` (it restores what went) and the caller still gets its id."""
    from hermes_tui.state import trash_files

    build(tdb, 2)
    before = table_dump(tdb)

    def full(self: Any, name: str, text: str) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(trash_files.TrashDir, "replace", full)
    res = tdb.trash_sessions(["s0", "s1"])
    monkeypatch.undo()
    assert res["deleted_ids"] == ["s0", "s1"] and res["trash_entry"]
    [entry] = tdb.list_trash()
    assert entry["id"] == res["trash_entry"] and entry["status"] == "interrupted"
    assert tdb.restore_trash(res["trash_entry"])["restored"] == 2
    assert table_dump(tdb) == before


def test_nothing_to_delete_leaves_no_guard_behind(tdb):
    build(tdb, 1)
    assert tdb.trash_sessions(["nope"])["trash_entry"] is None
    assert not tdb._tuples("SELECT name FROM sqlite_temp_master WHERE name LIKE 'hermes_trash%'")


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("mount"), reason="mounting a tmpfs needs root")
def test_a_really_full_filesystem_leaves_no_entry(tdb, tmp_path):
    """The same on a real 64 KB tmpfs the entry does not fit in."""
    small = tmp_path / "small"
    small.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(small)]).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        for i in range(20):
            tdb.create_session(f"big{i}", "cli")
            tdb.append_message(f"big{i}", "user", f"zebra secret {i} " + "x" * 8000)
        before = table_dump(tdb)
        tdb.trash_root = small / "trash"
        with pytest.raises(Exception) as caught:
            tdb.trash_sessions([f"big{i}" for i in range(20)])
        assert "disk" in str(caught.value).lower() or "space" in str(caught.value).lower()
        assert table_dump(tdb) == before
        assert not any((small / "trash").iterdir())
        _no_trace_of(small, b"zebra secret")
        assert tdb.list_trash() == []
    finally:
        subprocess.run(["umount", str(small)], check=True)


# ---------------------------------------------------------------- property: hostile trash files
# A store with s0..s3, a child `kid` of s1 (the delete of s1 orphans it) and an unrelated `live`
# session; per example: `good` = the trash entry of s0, `bad` = the entry of s1, then one hostile
# change to `bad`'s files. Whatever the change, no exception but `TrashError` leaves the API
# (and the CLI exits 0 or 1, never with an internal error); an entry reported damaged or
# incomplete changes nothing (a dump of every table before and after); an entry that still
# restores changes no row that existed (only its own rows come back, `kid` may get its genuine
# parent back); `good` lists, restores identical rows, and `empty` removes everything.
HOSTILE_VALUES = [
    None,
    "x",
    "",
    -1,
    2**70,
    1e308,
    True,
    [],
    [1],
    {},
    {"a": 1},
    "'; DROP TABLE sessions; --",
    'x" ; DELETE FROM messages; --',
    "\x1b]52;c;eA==\x07",
    "\ud800",
    "20200101T000000Z-abcdef",
]
SQL_NAMES = [
    "messages",
    "sessions",
    "orphan",
    "reset",
    "no_such_table",
    'session_model_usage" ; DELETE FROM messages; --',
    "x\"); UPDATE sessions SET title = 'pwned'; --",
    "sqlite_master",
    "state_meta",
]
MANIFEST_KEYS = [
    "format",
    "id",
    "created_at",
    "what",
    "status",
    "sessions",
    "counts",
    "bytes",
    "cascade_tables",
    "deleted_ids",
    "requested_ids",
    "restored_ids",
    "completed_at",
    "store",
]
#: Keys without which a manifest is not one hermes-tui wrote.
REQUIRED_KEYS = {
    "format",
    "id",
    "created_at",
    "what",
    "status",
    "sessions",
    "counts",
    "bytes",
    "cascade_tables",
    "deleted_ids",
}
SET_KEYS = [*MANIFEST_KEYS, "sessions[0].id", "sessions[0].title", "counts.messages"]
BAD_ROW_VALUES = [2**70, -(2**70), True, [1], {"$x": 1}, {"$b64": "***"}, {"$float": "many"}, "\ud800"]


def _size_fix(entry: Path) -> None:
    man = entry / "manifest.json"
    try:
        data = json.loads(man.read_text())
        data["bytes"] = (entry / "rows.jsonl").stat().st_size
        man.write_text(json.dumps(data))
    except (OSError, ValueError, TypeError):
        pass


def _rows(entry: Path) -> list[str]:
    return (entry / "rows.jsonl").read_text().splitlines()


def _write_rows(entry: Path, lines: list[str], forger: bool) -> None:
    (entry / "rows.jsonl").write_text("".join(ln + "\n" for ln in lines))
    if forger:
        _size_fix(entry)


def _set_path(data: dict[str, Any], key: str, value: Any) -> None:
    if key == "sessions[0].id":
        data["sessions"][0]["id"] = value
    elif key == "sessions[0].title":
        data["sessions"][0]["title"] = value
    elif key == "counts.messages":
        data["counts"]["messages"] = value
    else:
        data[key] = value


@st.composite
def mutations(draw: Any) -> tuple[str, bool, Callable[[Path, Path], None]]:
    """(label, must be reported, change(bad entry, good entry))."""
    kind = draw(
        st.sampled_from(
            [
                "set",
                "drop",
                "cut manifest",
                "random manifest",
                "extra table",
                "garbage line",
                "row table",
                "row column",
                "row value",
                "cut rows",
                "forged orphan",
                "forged session",
                "entry link",
                "file link",
                "no rows",
                "no manifest",
            ]
        )
    )
    forger = draw(st.booleans())  # a careful forger keeps the manifest's size right
    if kind == "set":
        key = draw(st.sampled_from(SET_KEYS))
        value = draw(st.sampled_from(HOSTILE_VALUES))

        def change(bad: Path, good: Path) -> None:
            edit_manifest(bad, lambda m: _set_path(m, key, value))

        return f"set {key}={value!r}", False, change
    if kind == "drop":
        key = draw(st.sampled_from(MANIFEST_KEYS))
        return (
            f"drop {key}",
            key in REQUIRED_KEYS,
            lambda bad, good: edit_manifest(bad, lambda m: m.pop(key, None)),
        )
    if kind == "cut manifest":
        frac = draw(st.floats(0, 0.999))

        def cut(bad: Path, good: Path) -> None:
            data = (bad / "manifest.json").read_bytes()
            (bad / "manifest.json").write_bytes(data[: int(len(data) * frac)])

        return f"cut manifest at {frac:.3f}", True, cut
    if kind == "random manifest":
        blob = draw(st.binary(max_size=200))
        return f"manifest = {blob!r}", True, lambda bad, good: (bad / "manifest.json").write_bytes(blob)
    if kind == "extra table":
        name = draw(st.one_of(st.sampled_from(SQL_NAMES), st.text(max_size=30)))
        col = draw(st.sampled_from(["session_id", "id", 'x"; --']))
        assume((name, col) != ("session_model_usage", "session_id"))
        return (
            f"cascade table {name!r}",
            True,
            lambda bad, good: edit_manifest(bad, lambda m: m["cascade_tables"].update({name: col})),
        )
    if kind == "garbage line":
        garbage = draw(st.text(max_size=60).filter(lambda t: "\n" not in t and "\r" not in t))
        where = draw(st.integers(0, 20))

        def garble(bad: Path, good: Path) -> None:
            lines = _rows(bad)
            lines[where % len(lines)] = garbage
            _write_rows(bad, lines, forger)

        return f"line {where} = {garbage!r}", True, garble
    if kind in ("row table", "row column", "row value"):
        where = draw(st.integers(0, 20))
        name = draw(st.sampled_from(SQL_NAMES))
        value = draw(st.sampled_from(BAD_ROW_VALUES))

        def edit_row(bad: Path, good: Path) -> None:
            lines = _rows(bad)
            i = where % len(lines)
            rec = json.loads(lines[i])
            if kind == "row table":
                if name == rec["t"]:
                    rec["t"] = "no_such_table"
                else:
                    rec["t"] = name
                    rec.pop("ids", None)
            elif kind == "row column":
                rec["r"][name + "_not_a_column"] = 1
            else:
                rec["r"][sorted(rec["r"])[0]] = value
            lines[i] = json.dumps(rec)
            _write_rows(bad, lines, forger)

        return f"{kind} line {where} ({name!r}, {value!r})", True, edit_row
    if kind == "cut rows":
        frac = draw(st.floats(0, 0.999))

        def cut_rows(bad: Path, good: Path) -> None:
            data = (bad / "rows.jsonl").read_bytes()
            (bad / "rows.jsonl").write_bytes(data[: int(len(data) * frac)])
            if forger:
                _size_fix(bad)

        return f"cut rows at {frac:.3f}", not forger, cut_rows
    if kind == "forged orphan":
        child = draw(st.sampled_from(["live", "s2", "kid", "s3"]))
        tag = draw(st.one_of(st.none(), st.text(alphabet="0123456789abcdef", min_size=64, max_size=64)))

        def forge_orphan(bad: Path, good: Path) -> None:
            rec: dict[str, Any] = {"t": "orphan", "r": {"id": child, "parent_session_id": "s1"}}
            if tag is not None:
                rec["k"] = tag
            _write_rows(bad, [*_rows(bad), json.dumps(rec)], forger)

        return f"forged orphan {child}", not forger, forge_orphan
    if kind == "forged session":
        victim = draw(st.sampled_from(["live", "s2", "s3"]))

        def forge_session(bad: Path, good: Path) -> None:
            row = {"id": victim, "source": "cli", "started_at": 1.0, "parent_session_id": "s1"}
            _write_rows(bad, [*_rows(bad), json.dumps({"t": "sessions", "r": row})], forger)
            edit_manifest(bad, lambda m: m["sessions"].append({"id": victim, "title": None}))

        return f"forged session {victim}", not forger, forge_session
    if kind == "entry link":

        def entry_link(bad: Path, good: Path) -> None:
            shutil.rmtree(bad)
            bad.symlink_to(good)

        return "entry folder is a link to another entry", True, entry_link
    if kind == "file link":
        name = draw(st.sampled_from(["manifest.json", "rows.jsonl"]))

        def file_link(bad: Path, good: Path) -> None:
            (bad / name).unlink()
            (bad / name).symlink_to(good / name)

        return f"{name} is a link", True, file_link
    if kind == "no rows":
        return "rows.jsonl missing", True, lambda bad, good: (bad / "rows.jsonl").unlink()
    return "manifest.json missing", True, lambda bad, good: (bad / "manifest.json").unlink()


def _keyed(db: SessionDB) -> dict[tuple[str, Any], tuple[Any, ...]]:
    """Every row of the three data tables, by its key."""
    conn = db._conn()
    out: dict[tuple[str, Any], tuple[Any, ...]] = {}
    for sid, *rest in conn.execute("SELECT id, * FROM sessions"):
        out[("sessions", sid)] = tuple(rest)
    for mid, *rest in conn.execute("SELECT id, * FROM messages"):
        out[("messages", mid)] = tuple(rest)
    for row in conn.execute("SELECT * FROM session_model_usage"):
        out[("usage", row[:2])] = tuple(row)
    return out


def _cli(db_path: Path, *argv: str) -> tuple[int, str]:
    import contextlib
    import io

    from hermes_tui.cli import sessions

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = sessions.main([*argv, "--db", str(db_path)])
    assert code in (0, 1), (argv, code, out.getvalue(), err.getvalue())
    assert "internal error" not in out.getvalue() + err.getvalue(), (argv, out.getvalue(), err.getvalue())
    return code, out.getvalue()


@pytest.fixture(scope="module")
def hostile_template(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("hostile-trash") / "state.db"
    db = SessionDB(path)
    try:
        build(db, 4)
        db.create_session("kid", "cli", parent_session_id="s1")
        db.append_message("kid", "user", "the kid's own words")
        db.create_session("live", "cli")
        db.append_message("live", "user", "a live session nobody deletes")
    finally:
        db.close()
    return path


@settings(
    max_examples=100,
    deadline=None,
    derandomize=True,
    report_multiple_bugs=False,
    suppress_health_check=list(HealthCheck),
)
@given(mutation=mutations(), via_cli=st.booleans())
def test_fuzz_hostile_trash_files_never_break_the_trash(
    hostile_template: Path, mutation: tuple[str, bool, Callable[[Path, Path], None]], via_cli: bool
) -> None:
    label, must_report, change = mutation
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "state.db"
        shutil.copy(hostile_template, path)
        db = SessionDB(path, migrate=False)
        try:
            s0_rows = {
                k: v
                for k, v in _keyed(db).items()
                if k == ("sessions", "s0")
                or (k[0] == "messages" and v[1] == "s0")
                or (k[0] == "usage" and k[1][0] == "s0")
            }
            assert len(s0_rows) == 5
            good = db.trash_sessions(["s0"])
            bad = db.trash_sessions(["s1"])
            good_path, bad_path = Path(good["trash_path"]), Path(bad["trash_path"])
            change(bad_path, good_path)

            report = db.trash_report()
            entries = by_id(report["entries"])
            assert entries[good["trash_entry"]]["status"] == "deleted", label
            listed = entries[bad["trash_entry"]]
            skipped = {s["id"]: s["reason"] for s in report["skipped"]}
            assert (listed["status"] == "damaged") == (bad["trash_entry"] in skipped), label
            if listed["status"] == "damaged":
                assert listed["reason"] and skipped[bad["trash_entry"]] == listed["reason"]
            code, out = _cli(path, "trash", "list", "--json")
            assert code == 0 and bad["trash_entry"] in out
            _cli(path, "trash", "show", bad["trash_entry"], "--json")
            with contextlib.suppress(TrashError):
                db.trash_entry(bad["trash_entry"])

            before_all = full_dump(db)
            before = _keyed(db)
            if via_cli:
                code, out = _cli(path, "trash", "restore", bad["trash_entry"], "--json")
                refused = code == 1
                reason = json.loads(out).get("error") if refused else None
            else:
                try:
                    db.restore_trash(bad["trash_entry"])
                    refused, reason = False, None
                except TrashError as exc:
                    refused, reason = True, str(exc)
            event("refused" if refused else "restored")
            if refused or listed["status"] in ("damaged", "incomplete"):
                assert refused and reason, label
                assert "damaged" in reason or "incomplete" in reason, (label, reason)
                assert full_dump(db) == before_all, label
            else:
                assert not must_report, f"{label}: restored, not reported"
                after = _keyed(db)
                for key, row in before.items():
                    if key == ("sessions", "kid") and after[key] != row:  # its genuine parent back
                        assert db.get_session("kid")["parent_session_id"] == "s1", label
                        assert sum(a != b for a, b in zip(row, after[key], strict=True)) == 1, label
                        continue
                    assert after.get(key) == row, (label, key)
                for sid in ("live", "s2", "s3"):
                    assert db.get_session(sid)["parent_session_id"] is None, (label, sid)

            out_good = db.restore_trash(good["trash_entry"])
            assert out_good["restored"] == 1 and out_good["conflicts"] == 0, label
            back = _keyed(db)
            assert {k: back.get(k) for k in s0_rows} == s0_rows, label
            code, out = _cli(path, "trash", "empty", "--yes", "--json")
            assert code == 0 and set(json.loads(out)["removed"]) >= {good["trash_entry"], bad["trash_entry"]}
            assert db.list_trash() == [] and not good_path.exists()
        finally:
            db.close()
