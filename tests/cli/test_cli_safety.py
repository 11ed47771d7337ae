"""`hermes-tui sessions`: inert output, exact targets, one-line errors with documented exit codes,
private export files, CJK-aligned tables."""

from __future__ import annotations

import dataclasses
import io
import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from hermes_tui.cli import errors, listing, registry
from hermes_tui.exporting import to_markdown
from hermes_tui.safe_text import BIDI_CONTROLS, cell_width
from hermes_tui.state import LockTimeout, ReadOnlyError, SessionDB, StoreError
from tests.cli._cli import run

from .conftest import one_store

OSC52 = "\x1b]52;c;aGVsbG8=\x07"
CLEAR = "\x1b[2J"
OSC8 = "\x1b]8;;http://evil.example/\x1b\\click\x1b]8;;\x1b\\"
OSC0 = "\x1b]0;pwned\x07"
C1 = "\x9b31m"
BIDI = "\u202eevil"
PAYLOAD = OSC52 + CLEAR + OSC8 + OSC0 + C1 + BIDI + "\r"

# Anything a terminal could obey: C0 but tab/newline, DEL, C1, bidi controls.
UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f" + "".join(sorted(BIDI_CONTROLS)) + "]")


def assert_inert(text: str, where: str = "") -> None:
    m = UNSAFE.search(text)
    assert m is None, (
        f"{where}: raw {m.group(0)!r} at {m.start()}: {text[max(0, m.start() - 40) : m.start() + 40]!r}"
    )


def ids_in(path) -> set[str]:
    with SessionDB(path, read_only=True) as db:
        return set(db.session_order().ids)


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture(autouse=True)
def no_tty(monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))


# ---------------------------------------------------------------- inert output
TOOL_CALLS = [
    {
        "id": "c1",
        "type": "function",
        "function": {"name": "term" + OSC52 + "inal", "arguments": json.dumps({"cmd": "ls " + PAYLOAD})},
    }
]


@pytest.fixture
def hostile_db(tmp_path) -> Path:
    path = tmp_path / "hostile.db"
    db = SessionDB(path)
    try:
        db.create_session("evil-1", "cli" + C1, model="gpt" + OSC0, cwd="/tmp/" + CLEAR)
        db.set_session_title("evil-1", "Title " + OSC52 + BIDI)
        db.append_message("evil-1", "user", "zebra question " + PAYLOAD, timestamp=1_700_000_000)
        db.append_message(
            "evil-1",
            "assistant",
            "zebra answer " + OSC8,
            tool_calls=TOOL_CALLS,
            reasoning="think " + OSC0,
            timestamp=1_700_000_001,
        )
        db.append_message(
            "evil-1",
            "tool",
            "zebra tool out " + PAYLOAD,
            tool_name="tool" + CLEAR,
            tool_call_id="c1",
            timestamp=1_700_000_002,
        )
        db.update_token_counts(
            "evil-1", input_tokens=10, output_tokens=5, estimated_cost_usd=0.01, model="gpt" + OSC0
        )
        db.end_session("evil-1", "user_exit" + OSC52)
        db.create_session("evil-2", "telegram" + BIDI, model="m" + C1)
        db.set_session_title("evil-2", "second " + OSC8)
        db.append_message("evil-2", "user", "zebra again " + C1, timestamp=1_700_000_010)
        db.end_session("evil-2", "done")
        db._execute_write(
            lambda c: c.execute("UPDATE sessions SET started_at = 1700000000, ended_at = 1700000100")
        )
        # set_session_title sanitizes; another writer (or an old file) may not have
        db._execute_write(
            lambda c: c.execute(
                "UPDATE sessions SET title = ? WHERE id = 'evil-1'", ("Title " + OSC52 + BIDI,)
            )
        )
    finally:
        db.close()
    return path


def test_every_command_output_is_inert(hostile_db, capsys, tmp_path, monkeypatch):
    db = hostile_db
    commands = [
        ["list"],
        ["list", "--json"],
        ["show", "evil-1"],
        ["show", "evil-1", "--json"],
        ["show", "evil-2"],
        ["search", "zebra"],
        ["search", "zebra", "--json"],
        ["stats"],
        ["stats", "--json"],
        ["export", "evil-1"],
        ["export", "--format", "json", "evil-1", "evil-2"],
        ["delete", "evil-1", "--dry-run"],
        ["delete", "evil-1", "--dry-run", "--json"],
        ["prune", "--older-than", "1d", "--dry-run"],
        ["prune", "--older-than", "1d", "--dry-run", "--json"],
        ["show", "no-such" + OSC52],
        ["rename", "evil-2", "dup" + OSC52 + "x" * 120],
    ]
    for argv in commands:
        _code, out, err = run(capsys, *argv, "--db", db)
        assert_inert(out, f"stdout of {argv}")
        assert_inert(err, f"stderr of {argv}")
    # the hostile strings reached the output (escaped or pictured), not dropped
    _c, out, _e = run(capsys, "show", "evil-1", "--db", db)
    assert "␛]52;c;aGVsbG8=␇" in out and "⟨U+202E⟩" in out and "⟨U+009B⟩" in out and "tool call term" in out
    # JSON stays exact once parsed: the payload survives as data
    _c, out, _e = run(capsys, "show", "evil-1", "--json", "--db", db)
    doc = json.loads(out)
    assert doc["session"]["title"] == "Title " + OSC52 + BIDI
    assert doc["messages"][0]["content"].startswith("zebra question " + OSC52)
    # prompt, rename and the real delete/prune
    monkeypatch.setattr(sys, "stdin", _Tty("n\n"))
    code, out, err = run(capsys, "delete", "evil-1", "--db", db)
    assert code == 4 and "evil-1" in err
    assert_inert(out + err, "delete prompt")
    code, out, err = run(capsys, "rename", "evil-2", "clean", "--db", db)
    assert code == 0
    assert_inert(out + err, "rename")
    code, out, err = run(capsys, "delete", "evil-1", "--yes", "--db", db)
    assert code == 0
    assert_inert(out + err, "delete")
    code, out, err = run(
        capsys, "prune", "--older-than", "1d", "--yes", "--export-before", tmp_path / "p.jsonl", "--db", db
    )
    assert code == 0 and ids_in(db) == set()
    assert_inert(out + err, "prune")
    assert_inert((tmp_path / "p.jsonl").read_text(), "prune export")


def test_export_files_are_inert(hostile_db, capsys, tmp_path):
    md = tmp_path / "one.md"
    assert run(capsys, "export", "evil-1", "--format", "md", "-o", md, "--db", hostile_db)[0] == 0
    body = md.read_text()
    assert_inert(body, "markdown")
    assert "zebra question ␛]52" in body and "⟨U+202E⟩" in body and '"cmd"' in body
    for fmt in ("json", "jsonl"):
        target = tmp_path / f"all.{fmt}"
        assert run(capsys, "export", "--format", fmt, "-o", target, "--db", hostile_db)[0] == 0
        text = target.read_text()
        assert_inert(text, fmt)
        docs = json.loads(text) if fmt == "json" else [json.loads(ln) for ln in text.splitlines()]
        titles = {d["id"]: d["title"] for d in docs}
        assert titles["evil-1"] == "Title " + OSC52 + BIDI  # escaped, not altered
    outdir = tmp_path / "md"
    assert (
        run(capsys, "export", "evil-1", "evil-2", "--format", "md", "-o", outdir, "--db", hostile_db)[0] == 0
    )
    for f in outdir.iterdir():
        assert_inert(f.read_text(), f.name)


def test_message_formatting_tolerates_bytes_and_huge_content():
    lines = listing.message_lines(
        {
            "id": 1,
            "role": b"user",
            "content": b"\xff\xfeabc\x1b[2J",
            "tool_calls": "not a list \x1b]0;x\x07",
            "timestamp": "garbage\x9b",
        }
    )
    text = "\n".join(lines)
    assert "[binary: " in text and "→ tool call" in text
    assert_inert(text)
    huge = "y" * (listing.SHOW_TEXT_LIMIT + 5000)
    lines = listing.message_lines({"id": 2, "role": "assistant", "content": huge})
    assert sum(len(ln) for ln in lines) < listing.SHOW_TEXT_LIMIT + 500
    assert "5,000 more characters" in lines[-1]
    full = listing.message_lines({"id": 2, "role": "assistant", "content": huge}, full=True)
    assert "y" * len(huge) in full[1]
    md_bytes = to_markdown({"id": "b", "messages": [{"role": "user", "content": b"caf\xc3\xa9 \x1b"}]})
    assert "café ␛" in md_bytes


# ---------------------------------------------------------------- CJK alignment
def test_table_columns_line_up_with_cjk(tmp_path, capsys):
    path = tmp_path / "cjk.db"
    titles = {"s-a": "修改服务端配置", "s-b": "plain title", "s-c": "混合 mixed 文字", "s-d": "長" * 60}
    with SessionDB(path) as db:
        for sid, title in titles.items():
            db.create_session(sid, "tgx", model="m")
            db.set_session_title(sid, title)
    code, out, _ = run(capsys, "list", "--db", path)
    assert code == 0
    rows = [ln for ln in out.splitlines() if ln.startswith("s-")]
    assert len(rows) == 4
    columns = {cell_width(ln[: ln.index("  tgx")]) for ln in rows}
    assert len(columns) == 1, rows  # SOURCE starts at the same terminal cell on every row
    long_row = next(ln for ln in rows if ln.startswith("s-d"))
    assert "…" in long_row and cell_width(long_row[: long_row.index("  tgx")]) <= 4 + 2 + 40


# ---------------------------------------------------------------- exact targets
@pytest.fixture
def proj_db(tmp_path) -> Path:
    """`proj` and an unrelated `proj #2` (different sources, no lineage)."""
    path = tmp_path / "proj.db"
    with SessionDB(path) as db:
        db.create_session("aaa-111", "cli")
        db.set_session_title("aaa-111", "proj")
        db.end_session("aaa-111", "user_exit")
        db.create_session("bbb-222", "telegram")
        db.set_session_title("bbb-222", "proj #2")
        db.end_session("bbb-222", "user_exit")
        db.create_session("bbb-333", "cli")
        db.end_session("bbb-333", "user_exit")
    return path


def test_delete_exact_title_not_its_numbered_neighbour(proj_db, capsys):
    code, out, _ = run(capsys, "delete", "--yes", "proj", "--db", proj_db)
    assert code == 0 and "aaa-111" in out
    assert ids_in(proj_db) == {"bbb-222", "bbb-333"}
    # "proj" no longer exists: the numbered one is a candidate, never a target
    code, out, err = run(capsys, "delete", "--yes", "proj", "--db", proj_db)
    assert code == 3 and out == "" and err.count("\n") == 1 and err.startswith("error: ")
    assert "bbb-222" in err and "proj #2" in err
    assert ids_in(proj_db) == {"bbb-222", "bbb-333"}


def test_rename_exact_title_not_its_numbered_neighbour(proj_db, capsys):
    code, _out, _err = run(capsys, "rename", "proj", "renamed", "--db", proj_db)
    assert code == 0
    with SessionDB(proj_db, read_only=True) as db:
        assert db.get_session_title("aaa-111") == "renamed" and db.get_session_title("bbb-222") == "proj #2"
    code, _out, err = run(capsys, "rename", "proj", "again", "--db", proj_db)
    assert code == 3 and "bbb-222" in err and "proj #2" in err


def test_prune_title_is_exact(proj_db, capsys):
    code, out, _ = run(capsys, "prune", "--title", "proj", "--dry-run", "--json", "--db", proj_db)
    assert code == 0 and one_store(json.loads(out))["plan"]["ids"] == ["aaa-111"]
    code, out, _ = run(capsys, "prune", "--title-contains", "proj", "--dry-run", "--json", "--db", proj_db)
    assert code == 0 and set(one_store(json.loads(out))["plan"]["ids"]) == {"aaa-111", "bbb-222"}
    code, _out, err = run(capsys, "prune", "--title", "pro", "--yes", "--db", proj_db)
    assert code == 3 and "aaa-111" in err and ids_in(proj_db) == {"aaa-111", "bbb-222", "bbb-333"}
    code, out, _ = run(capsys, "prune", "--title", "aaa", "--yes", "--json", "--db", proj_db)
    assert code == 0 and one_store(json.loads(out))["result"]["deleted_ids"] == ["aaa-111"]
    assert ids_in(proj_db) == {"bbb-222", "bbb-333"}


def test_ambiguous_prefix_lists_candidates(proj_db, capsys):
    code, out, err = run(capsys, "delete", "--yes", "bbb", "--db", proj_db)
    assert code == 7 and out == "" and "bbb-222" in err and "bbb-333" in err and "proj #2" in err
    code, out, _ = run(capsys, "delete", "--yes", "bbb", "--json", "--db", proj_db)
    assert code == 7 and json.loads(out)["kind"] == "ambiguous"
    assert ids_in(proj_db) == {"aaa-111", "bbb-222", "bbb-333"}


def test_title_of_one_and_id_prefix_of_another_is_ambiguous(proj_db, capsys):
    with SessionDB(proj_db) as db:
        db.set_session_title("bbb-333", "aaa")
    code, _out, err = run(capsys, "rename", "aaa", "x", "--db", proj_db)
    assert code == 7 and "aaa-111" in err and "bbb-333" in err


def test_confirmation_names_id_and_title(proj_db, capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", _Tty("n\n"))
    code, _out, err = run(capsys, "delete", "proj", "--db", proj_db)
    assert "Delete session aaa-111 “proj”? [y/N]" in err
    assert code == 4 and "nothing was deleted" in err and ids_in(proj_db) == {"aaa-111", "bbb-222", "bbb-333"}


def test_show_says_which_session_a_family_title_chose(proj_db, capsys):
    code, out, err = run(capsys, "show", "proj", "--db", proj_db)
    assert code == 0 and "bbb-222" in out
    assert (
        err.startswith("note: showing bbb-222 “proj #2”")
        and "newest session of the 'proj' title family" in err
    )
    code, out, err = run(capsys, "show", "aaa-111", "--json", "--db", proj_db)
    assert code == 0 and err == "" and json.loads(out)["session"]["id"] == "aaa-111"
    code, out, err = run(capsys, "show", "aaa", "--db", proj_db)
    assert code == 0 and "only session whose id starts with 'aaa'" in err


# ---------------------------------------------------------------- rename: no silent clear
def test_rename_needs_title_or_clear(proj_db, capsys):
    for argv in (["rename", "aaa-111"], ["rename", "aaa-111", ""], ["rename", "aaa-111", "x", "--clear"]):
        code, out, err = run(capsys, *argv, "--db", proj_db)
        assert code == 2 and out == "" and err.startswith("error: ") and err.count("\n") == 1, argv
    with SessionDB(proj_db, read_only=True) as db:
        assert db.get_session_title("aaa-111") == "proj"
    code, out, _ = run(capsys, "rename", "aaa-111", "--clear", "--db", proj_db)
    assert code == 0 and "Cleared" in out
    with SessionDB(proj_db, read_only=True) as db:
        assert db.get_session_title("aaa-111") is None


# ---------------------------------------------------------------- errors and exit codes
def _make_foreign_sqlite(path: Path) -> None:
    # stdlib sqlite3 only in a subprocess (never with APSW on one file in one process)
    subprocess.run(
        [
            sys.executable,
            "-c",
            "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]);"
            " c.execute('create table notes(x)'); c.execute('insert into notes values (1)'); c.commit()",
            str(path),
        ],
        check=True,
    )


def _snapshot(path: Path) -> tuple:
    st = path.stat()
    return st.st_size, st.st_mtime_ns, path.read_bytes(), sorted(p.name for p in path.parent.iterdir())


@pytest.mark.parametrize("kind", ["empty", "text", "foreign"])
def test_not_a_store_untouched_one_line(tmp_path, capsys, kind):
    path = tmp_path / "x.db"
    if kind == "empty":
        path.write_bytes(b"")
    elif kind == "text":
        path.write_text("just some notes\n")
    else:
        _make_foreign_sqlite(path)
    before = _snapshot(path)
    for argv in (
        ["list"],
        ["show", "a"],
        ["stats"],
        ["rename", "a", "b"],
        ["delete", "a", "--yes"],
        ["prune", "--yes", "--older-than", "0"],
    ):
        code, out, err = run(capsys, *argv, "--db", path)
        assert code == 6 and out == "" and err.startswith("error: ") and err.count("\n") == 1, (argv, err)
        code, out, err = run(capsys, *argv, "--db", path, "--json")
        assert code == 6 and err == "" and json.loads(out)["kind"] == "not_a_database", argv
    assert _snapshot(path) == before  # size, mtime, bytes, and no -wal/-shm next to it


def test_directory_and_missing(tmp_path, capsys):
    code, _out, err = run(capsys, "list", "--db", tmp_path)
    assert code == 6 and err.count("\n") == 1 and "directory" in err
    missing = tmp_path / "nope" / "state.db"
    code, out, err = run(capsys, "delete", "x", "--yes", "--db", missing, "--json")
    assert (
        code == 3
        and err == ""
        and json.loads(out) == {"error": f"no database at {missing}", "kind": "not_found"}
    )
    assert not missing.parent.exists()


def test_usage_errors_are_one_line_or_json(proj_db, capsys):
    code, out, err = run(capsys, "list", "--order", "bogus", "--db", proj_db)
    assert (
        code == 2
        and out == ""
        and err.count("\n") == 1
        and err.startswith("error: ")
        and "invalid choice" in err
    )
    code, out, err = run(capsys, "list", "--order", "bogus", "--json", "--db", proj_db)
    assert code == 2 and err == "" and json.loads(out)["kind"] == "usage"


def test_help_documents_exit_codes(capsys):
    code, out, _ = run(capsys, "--help")
    assert code == 0
    for kind, exit_code in errors.EXIT_CODES.items():
        assert kind in out and re.search(rf"^  {exit_code}\s", out, re.M), kind


@pytest.mark.parametrize(
    ("exc", "kind", "code"),
    [
        (StoreError("database or disk is full"), "disk_full", 1),
        (StoreError("something odd"), "error", 1),
        (LockTimeout("write lock held by another process"), "locked", 5),
        (ReadOnlyError("attempt to write a readonly database"), "read_only", 4),
        (OSError(28, "No space left on device"), "disk_full", 1),
        (RuntimeError("boom"), "internal", 1),
    ],
)
def test_store_and_unexpected_errors(proj_db, capsys, monkeypatch, exc, kind, code):
    def fail(self, *a, **k):
        raise exc

    monkeypatch.setattr(SessionDB, "set_session_title", fail)
    got, out, err = run(capsys, "rename", "aaa-111", "new", "--db", proj_db)
    assert got == code and out == "" and err.count("\n") == 1 and err.startswith("error: ")
    assert "Traceback" not in err
    got, out, err = run(capsys, "rename", "aaa-111", "new", "--db", proj_db, "--json")
    assert got == code and err == "" and json.loads(out)["kind"] == kind


@pytest.mark.parametrize(
    ("exc", "kind", "message"),
    [
        (StoreError("database or disk is full"), "disk_full", "database or disk is full"),
        (LockTimeout("read lock held by another process"), "locked", "read lock held by another process"),
        (OSError(28, "No space left on device"), "disk_full", "No space left on device"),
        (RuntimeError("boom"), "internal", "internal error: RuntimeError: boom"),
    ],
)
@pytest.mark.parametrize(
    ("argv", "method"),
    [
        (("list",), "session_order"),
        (("search", "zebra"), "search"),
        (("export", "--format", "json"), "session_order"),
    ],
)
def test_one_store_failing_in_a_merged_read_is_the_commands_error(
    proj_db, capsys, monkeypatch, argv, method, exc, kind, message
):
    """Reads that go through the merged order or the federated search record a store's failure;
    with one store open it is the command's error, reported as if raised (kind, message, code)."""

    def fail(self, *a, **k):
        raise exc

    monkeypatch.setattr(SessionDB, method, fail)
    code, out, err = run(capsys, *argv, "--db", proj_db)
    assert code == errors.EXIT_CODES[kind] and out == "" and err == f"error: {message}\n", (argv, err)
    code, out, err = run(capsys, *argv, "--db", proj_db, "--json")
    assert (
        code == errors.EXIT_CODES[kind] and err == "" and json.loads(out) == {"error": message, "kind": kind}
    )


def test_debug_env_shows_traceback_of_internal_errors(proj_db, capsys, monkeypatch):
    failing = dataclasses.replace(registry.BY_NAME["list"], run=lambda stores, args: 1 / 0)
    monkeypatch.setitem(registry.BY_NAME, "list", failing)
    code, _out, err = run(capsys, "list", "--db", proj_db)
    assert code == 1 and err == "error: internal error: ZeroDivisionError: division by zero\n"
    monkeypatch.setenv("HERMES_TUI_DEBUG", "1")
    code, _out, err = run(capsys, "list", "--db", proj_db)
    assert code == 1 and "Traceback" in err and err.rstrip().endswith("division by zero")


def test_read_only_flag_refuses_writes(proj_db, capsys):
    code, out, err = run(capsys, "delete", "aaa-111", "--yes", "--read-only", "--db", proj_db, "--json")
    assert code == 4 and err == "" and json.loads(out)["kind"] == "read_only"
    assert ids_in(proj_db) == {"aaa-111", "bbb-222", "bbb-333"}


# ---------------------------------------------------------------- export files
def _mode(p: Path) -> int:
    return stat.S_IMODE(p.stat().st_mode)


def test_export_md_single_file_and_private_modes(proj_db, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    old = os.umask(0o022)  # the usual umask: files would be 0644 without the explicit modes
    try:
        _export_md_checks(proj_db, capsys, tmp_path)
    finally:
        os.umask(old)


def _export_md_checks(proj_db, capsys, tmp_path):
    code, out, _ = run(capsys, "export", "aaa-111", "--format", "md", "-o", "notes.md", "--db", proj_db)
    assert code == 0 and (tmp_path / "notes.md").is_file() and _mode(tmp_path / "notes.md") == 0o600
    assert (tmp_path / "notes.md").read_text().startswith('---\nid: "aaa-111"')
    code, _out, err = run(capsys, "export", "aaa-111", "--format", "md", "-o", "notes.md", "--db", proj_db)
    assert code == 4 and "overwrite" in err
    # several sessions: a directory (missing parents too), 0700, files 0600
    deep = tmp_path / "a" / "b"
    code, _out, _err = run(
        capsys, "export", "aaa-111", "bbb-222", "--format", "md", "-o", deep, "--db", proj_db
    )
    assert code == 0
    assert _mode(tmp_path / "a") == 0o700 and _mode(deep) == 0o700
    assert {p.name for p in deep.iterdir()} == {"aaa-111.md", "bbb-222.md", "manifest.jsonl"}
    assert all(_mode(p) == 0o600 for p in deep.iterdir())
    # one session into an existing directory: a file in it
    code, _out, _err = run(
        capsys, "export", "bbb-333", "--format", "md", "-o", deep, "--db", proj_db, "--force"
    )
    assert code == 0 and (deep / "bbb-333.md").is_file()
    for fmt in ("json", "jsonl"):
        target = tmp_path / "new" / f"x.{fmt}"
        assert run(capsys, "export", "--format", fmt, "-o", target, "--db", proj_db)[0] == 0
        assert _mode(target) == 0o600 and _mode(target.parent) == 0o700
