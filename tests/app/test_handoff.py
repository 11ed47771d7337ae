"""Back to work: resume in Hermes (R), copy (y …), pager (v), editor (E) — Pilot tests with fake
programs on PATH that record what they were given, and the pure helpers of `handoff.py`."""

from __future__ import annotations

import contextlib
import io
import os
import shlex
import shutil
import stat
import subprocess
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hermes_tui.app.handoff import (
    HERMES_PROFILE_NAME,
    Handoff,
    ResumeCommand,
    ResumeError,
    ResumeSettings,
    ResumeTarget,
    TemplateError,
    at_line,
    build_resume_command,
    clipboard_text,
    command_text,
    editor_argv,
    first_code_block,
    message_line,
    pager_argv,
    profile_for_store,
    resume_argv,
    resume_target,
    shell_word,
    shown_command,
    tool_calls_text,
)
from hermes_tui.app.screens.copy_menu import CopyMenu
from hermes_tui.app.screens.main import MainScreen
from hermes_tui.app.widgets.transcript_pane import Transcript
from hermes_tui.cli.browse import print_picked
from hermes_tui.exporting import content_text, to_markdown
from hermes_tui.safe_text import is_inert
from hermes_tui.state import SessionDB

from ._support import make_app, settle

CHAIN_ROOT_TITLE = "Postgres upgrade runbook"
CODE_TITLE = "Fix flaky CI on the payments service"


def session_facts(path: Path, title: str) -> tuple[str, str]:
    """``(id, compression tip)`` of the session called ``title``."""
    with SessionDB(path, read_only=True, migrate=False) as db:
        row = db.get_session_by_title(title)
        assert row is not None
        return str(row["id"]), str(db.get_compression_tip(row["id"]) or row["id"])


def fake_program(
    folder: Path, name: str, record: Path, *, stdin: bool = False, stat_file: bool = False
) -> Path:
    """A shell script recording its arguments one per line (and its stdin, or the mode and text of
    the file it was given) under ``record``."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = ["#!/bin/sh", f'printf "%s\\n" "$@" > "{record}.argv"']
    if stdin:
        lines.append(f'/bin/cat > "{record}.stdin"')
    if stat_file:
        lines += [
            "for last; do :; done",
            f'/usr/bin/stat -c %a "$last" > "{record}.mode"',
            f'/bin/cat "$last" > "{record}.text"',
            f'printf "%s" "$last" > "{record}.path"',
        ]
    script = folder / name
    script.write_text("\n".join(lines) + "\n")
    script.chmod(0o755)
    return script


def recorded_argv(record: Path) -> list[str]:
    return Path(f"{record}.argv").read_text().splitlines()


async def open_on(pilot, sid: str, focus_list: bool = True) -> MainScreen:  # type: ignore[no-untyped-def]
    await settle(pilot)
    main = pilot.app.screen
    assert isinstance(main, MainScreen)
    main.open_session(sid)
    await settle(pilot)
    if focus_list:
        main.session_list.focus()
    await pilot.pause()
    return main


def toasts(app) -> list[str]:  # type: ignore[no-untyped-def]
    return [str(n.message) for n in app._notifications]


# ---------------------------------------------------------------------- resume
async def test_resume_exits_with_the_tip_command(
    demo_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """R on a compressed root resumes its live tip; the command runs the real `hermes` on PATH.
    (Hermes' list shows the chain as its tip: the root is reached from the lineage, so the
    transcript, not the list, has the focus.)"""
    root, tip = session_facts(demo_db, CHAIN_ROOT_TITLE)
    assert root != tip
    record = tmp_path / "hermes-called"
    fake_program(tmp_path / "bin", "hermes", record)
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        main = await open_on(pilot, root, focus_list=False)
        assert main.selected_session_id == root and root not in main.session_list._ids
        await pilot.press("R")
        await settle(pilot)
    # the store is not $HERMES_HOME/state.db: Hermes is pointed at its folder
    home = (("HERMES_HOME", str(demo_db.parent)),)
    assert app.return_value == Handoff("resume", tip, ("hermes", f"--resume={tip}"), env=home)
    subprocess.run(app.return_value.argv, check=True, env={"PATH": str(tmp_path / "bin")})
    assert recorded_argv(record) == [f"--resume={tip}"]


async def test_resume_from_a_profile_store_passes_the_profile(
    demo_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = Path(os.environ["HERMES_HOME"]) / "profiles" / "work" / "state.db"
    store.parent.mkdir(parents=True)
    shutil.copy(demo_db, store)
    sid, tip = session_facts(store, CODE_TITLE)
    fake_program(tmp_path / "bin", "hermes", tmp_path / "rec")
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    app = make_app(store, resume=ResumeSettings(tui=True))
    async with app.run_test(size=(120, 40)) as pilot:
        await open_on(pilot, sid)
        await pilot.press("R")
        await settle(pilot)
    assert app.return_value is not None
    assert app.return_value.argv == ("hermes", "-p", "work", f"--resume={tip}", "--tui")
    assert app.return_value.env == ()


async def test_resume_without_hermes_shows_and_copies_the_command(
    demo_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, tip = session_facts(demo_db, CHAIN_ROOT_TITLE)
    (tmp_path / "empty").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_on(pilot, root, focus_list=False)  # the root: from the lineage (the list shows the tip)
        await pilot.press("R")
        await settle(pilot)
        assert app.is_running and isinstance(app.screen, MainScreen)
        command = f"env HERMES_HOME={demo_db.parent} hermes --resume={tip}"
        assert app.clipboard == command
        assert any(command in t and "not on PATH" in t for t in toasts(app))
    assert app.return_value is None


async def test_resume_template_from_the_environment(
    demo_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sid, tip = session_facts(demo_db, CODE_TITLE)
    fake_program(tmp_path / "bin", "agent", tmp_path / "rec")
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    monkeypatch.setenv("HERMES_TUI_RESUME", "agent chat --session={id} {profile_args}")
    app = make_app(demo_db, resume=ResumeSettings.from_env())
    async with app.run_test(size=(120, 40)) as pilot:
        await open_on(pilot, sid)
        await pilot.press("R")
        await settle(pilot)
    assert app.return_value is not None
    assert app.return_value.argv == ("agent", "chat", f"--session={tip}")


def test_resume_argv_is_never_reparsed_by_a_shell() -> None:
    """An id or profile with spaces, quotes or `;` stays one word; placeholders are validated."""
    odd = "a b';rm -rf ~ $(x)"
    argv = resume_argv(odd, profile="my profile", settings=ResumeSettings(tui=True))
    assert argv == ["hermes", "-p", "my profile", f"--resume={odd}", "--tui"]
    assert resume_argv("x", settings=ResumeSettings("h --resume '{id}'")) == ["h", "--resume", "x"]
    for bad in ("hermes --resume {nope}", "hermes --continue", "hermes 'unbalanced {id}", "{tui} {id}"):
        with pytest.raises(TemplateError):
            resume_argv("x", settings=ResumeSettings(bad))
    assert ResumeSettings.from_env(env={"HERMES_TUI_RESUME": "h {id}"}).template == "h {id}"
    assert ResumeSettings.from_env("x {id}", env={"HERMES_TUI_RESUME": "h {id}"}).template == "x {id}"


def test_profile_only_for_a_named_profile_store(tmp_path: Path) -> None:
    root = tmp_path / ".hermes"
    assert profile_for_store(root / "profiles" / "work" / "state.db", home=root) == "work"
    assert profile_for_store(root / "state.db", home=root) is None
    assert profile_for_store(tmp_path / "profiles" / "x" / "state.db", home=root) is None
    assert profile_for_store(root / "profiles" / "work" / "other.db", home=root) is None
    # $HERMES_HOME pointing at a profile's own folder still names the root above it.
    assert (
        profile_for_store(root / "profiles" / "work" / "state.db", home=root / "profiles" / "work") == "work"
    )


def test_resume_target_names_each_store_the_way_hermes_finds_it(tmp_path: Path) -> None:
    """The default store: nothing. A profile's store: `-p NAME` when Hermes accepts the name,
    else HERMES_HOME. Another folder's state.db: HERMES_HOME. Any other file: refused."""
    root = tmp_path / ".hermes"
    assert resume_target(root / "state.db", home=root) == ResumeTarget()
    assert resume_target(root / "profiles" / "work" / "state.db", home=root) == ResumeTarget("work")
    odd = root / "profiles" / "Work Stuff" / "state.db"
    assert resume_target(odd, home=root) == ResumeTarget(hermes_home=odd.parent)
    elsewhere = tmp_path / "elsewhere" / "state.db"
    assert resume_target(elsewhere, home=root) == ResumeTarget(hermes_home=elsewhere.parent)
    with pytest.raises(ResumeError, match="only a folder's state.db"):
        resume_target(tmp_path / "backup.db", home=root)
    # $HERMES_HOME (no `home`): its own state.db is the default store
    assert resume_target(Path(os.environ["HERMES_HOME"]) / "state.db") == ResumeTarget()
    command = build_resume_command("s-1", elsewhere, home=root)
    assert command == ResumeCommand(("hermes", "--resume=s-1"), (("HERMES_HOME", str(elsewhere.parent)),))
    assert command_text(command) == f"env HERMES_HOME={elsewhere.parent} hermes --resume=s-1"


def test_resume_follows_hermes_sticky_profile(tmp_path: Path) -> None:
    """After `hermes profile use work` (`<root>/active_profile`), `hermes` with no `-p` opens
    work's store: resuming it needs nothing, resuming the root's store needs `-p default`."""
    root = tmp_path / ".hermes"
    (root / "profiles" / "work").mkdir(parents=True)
    (root / "active_profile").write_text("work\n", encoding="utf-8")
    assert resume_target(root / "profiles" / "work" / "state.db", home=root) == ResumeTarget()
    assert resume_target(root / "state.db", home=root) == ResumeTarget("default")
    assert resume_target(root / "profiles" / "home" / "state.db", home=root) == ResumeTarget("home")
    command = build_resume_command("s-1", root / "state.db", home=root)
    assert command == ResumeCommand(("hermes", "-p", "default", "--resume=s-1"))
    (root / "active_profile").write_text("default\n", encoding="utf-8")  # `hermes profile use default`
    assert resume_target(root / "state.db", home=root) == ResumeTarget()


def test_shell_word_keeps_plain_words_bare_and_quotes_the_rest() -> None:
    assert shell_word("--resume=20250101_120000_abcdef") == "--resume=20250101_120000_abcdef"
    assert shell_word("") == "''"
    assert shell_word("a b") == "'a b'"
    assert shell_word("=ls") == "'=ls'"  # zsh's `=cmd` expansion
    assert shell_word("x\\'$(touch p)'\\") == '\'x\'"\\\\""\'"\'$(touch p)\'"\'""\\\\"'
    for control in ("a\nb", "a\tb", "\x1b]52;c;x\x07", "\u202e", "\x9b"):
        with pytest.raises(ResumeError):
            shell_word(control)


#: Any text (controls, bidi, quotes, backslashes) as an id; a folder name as a profile.
ANY_ID = st.text(st.characters(blacklist_categories=("Cs",)), max_size=30)
ANY_NAME = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="/\x00"), min_size=1, max_size=20
).filter(lambda name: name not in {".", ".."})


@settings(max_examples=300, deadline=None)
@given(sid=ANY_ID, name=ANY_NAME)
def test_any_id_and_profile_name_resume_exactly_and_print_safely(sid: str, name: str) -> None:
    """Hostile ids and profile names: the command run (an argv, no shell) holds the exact id as
    one `--resume=ID` word and names the store exactly; a name `hermes -p` would not read is
    never a `-p` value. Its shell text is printable and reads back as the same words, or is
    refused; what a notice shows is always inert."""
    root = Path("/nonexistent/hermes-root")
    store = root / "profiles" / name / "state.db"
    command = build_resume_command(sid, store, home=root)
    words = list(command.argv)
    assert words.count(f"--resume={sid}") == 1 and words[-1] == f"--resume={sid}"
    if HERMES_PROFILE_NAME.match(name):
        assert words == ["hermes", "-p", name, f"--resume={sid}"] and command.env == ()
    else:
        assert words == ["hermes", f"--resume={sid}"]
        assert command.env == (("HERMES_HOME", str(store.parent)),)
    everything = ["env", *(f"{k}={v}" for k, v in command.env)] if command.env else []
    everything += words
    try:
        text = command_text(command)
    except ResumeError:
        assert not all(word.isprintable() for word in everything)
    else:
        assert text.isprintable() and shlex.split(text) == everything
    shown = shown_command(command)
    assert is_inert(shown) and "\n" not in shown


class _Out(io.StringIO):
    def __init__(self, tty: bool) -> None:
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


@settings(max_examples=200, deadline=None)
@given(sid=ANY_ID)
def test_picked_id_is_exact_to_a_pipe_and_never_raw_on_a_terminal(sid: str) -> None:
    pipe, err = _Out(tty=False), _Out(tty=False)
    with contextlib.redirect_stdout(pipe), contextlib.redirect_stderr(err):
        assert print_picked(sid) == 0
    assert pipe.getvalue() == sid + "\n" and err.getvalue() == ""
    tty, err = _Out(tty=True), _Out(tty=False)
    with contextlib.redirect_stdout(tty), contextlib.redirect_stderr(err):
        status = print_picked(sid)
    if sid.isprintable():
        assert status == 0 and tty.getvalue() == sid + "\n"
    else:
        assert status == 2 and tty.getvalue() == "" and is_inert(err.getvalue())


# ---------------------------------------------------------------------- copy
async def press_copy(pilot, key: str) -> None:  # type: ignore[no-untyped-def]
    await pilot.press("y")
    await settle(pilot)
    assert isinstance(pilot.app.screen, CopyMenu)
    await pilot.press(key)
    await settle(pilot)
    assert isinstance(pilot.app.screen, MainScreen)


async def test_copy_id_resume_command_and_transcript(demo_db: Path) -> None:
    root, tip = session_facts(demo_db, CHAIN_ROOT_TITLE)
    with SessionDB(demo_db, read_only=True, migrate=False) as db:
        exported = db.export_session(root)
    assert exported is not None
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_on(pilot, root, focus_list=False)  # the root: from the lineage (the list shows the tip)
        await press_copy(pilot, "i")
        assert app.clipboard == root
        assert any(f"{len(root)} characters" in t for t in toasts(app))
        await press_copy(pilot, "r")
        assert app.clipboard == f"env HERMES_HOME={demo_db.parent} hermes --resume={tip}"
        await press_copy(pilot, "t")
        assert app.clipboard == to_markdown(exported)
        assert any(f"the transcript as Markdown: {len(app.clipboard):,} characters" in t for t in toasts(app))
        await pilot.press("y", "escape")
        await settle(pilot)
        assert isinstance(app.screen, MainScreen) and app.clipboard == to_markdown(exported)


async def test_copy_message_and_code_block_of_the_focused_message(demo_db: Path) -> None:
    """On a search hit, m copies the hit message's stored text and c its first code block; at the
    top of the transcript (the user's question, no code) c says there is no code block."""
    sid, _tip = session_facts(demo_db, CODE_TITLE)
    with SessionDB(demo_db, read_only=True, migrate=False) as db:
        rows = db.get_messages(sid, include_inactive=True)
    assistant = next(r for r in rows if r["role"] == "assistant" and "```" in content_text(r["content"]))
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        main = await open_on(pilot, sid, focus_list=False)
        transcript = main.query_one("#transcript", Transcript)
        transcript.focus()
        transcript.scroll_home(animate=False)
        await settle(pilot)
        await press_copy(pilot, "c")  # the first message in view: the user's question
        assert app.clipboard is None or "```" not in app.clipboard
        assert any("has no code block" in t for t in toasts(app))
        main.open_session(sid, int(assistant["id"]))  # as a search hit does: the hit is in view
        await settle(pilot)
        assert main.focused is transcript and transcript.target_id == assistant["id"]
        await press_copy(pilot, "m")
        assert app.clipboard == content_text(assistant["content"])
        await press_copy(pilot, "c")
        assert app.clipboard == (
            'rows = db.execute(\n    "SELECT * FROM refunds WHERE order_id = ? ORDER BY id", (order_id,)\n)'
        )
        # A focused fold (the first assistant turn's reasoning) names its own message: that one
        # made only a tool call, so m copies the call (its name and arguments).
        first_turn = next(r for r in rows if r["role"] == "assistant")
        assert not content_text(first_turn["content"])
        transcript.scroll_home(animate=False)
        await settle(pilot)
        await pilot.press("tab")  # from the top: the first fold takes the focus
        await settle(pilot)
        assert transcript.focused_fold is not None
        await press_copy(pilot, "m")
        assert app.clipboard == tool_calls_text(first_turn["tool_calls"])
        assert any(f"Copied the tool calls of message {first_turn['id']}" in t for t in toasts(app))


def test_clipboard_text_and_code_blocks() -> None:
    assert clipboard_text("a\x00b\x1b[31mc") == "ab\x1b[31mc"  # NULs out; OSC 52 is base64
    assert first_code_block("x\n```sh\nls -l\n```\n```py\n2\n```") == "ls -l"
    assert first_code_block("~~~\na\n~~~") == "a"
    assert first_code_block("no `code` here") is None


# ---------------------------------------------------------------------- pager and editor
async def test_pager_gets_the_session_markdown(
    demo_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sid, _tip = session_facts(demo_db, CODE_TITLE)
    with SessionDB(demo_db, read_only=True, migrate=False) as db:
        exported = db.export_session(sid)
    assert exported is not None
    record = tmp_path / "pager"
    fake_program(tmp_path / "bin", "mypager", record, stdin=True)
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    monkeypatch.setenv("PAGER", "mypager --flag")
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_on(pilot, sid)
        await pilot.press("v")
        await settle(pilot)
        assert app.is_running
    assert recorded_argv(record) == ["--flag"]
    assert Path(f"{record}.stdin").read_text() == to_markdown(exported)


async def test_editor_gets_a_private_read_only_copy_removed_afterwards(
    demo_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sid, _tip = session_facts(demo_db, CODE_TITLE)
    with SessionDB(demo_db, read_only=True, migrate=False) as db:
        exported = db.export_session(sid)
    assert exported is not None
    record = tmp_path / "editor"
    fake_program(tmp_path / "bin", "myeditor", record, stat_file=True)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}")
    monkeypatch.setenv("VISUAL", "myeditor -R")
    monkeypatch.setenv("EDITOR", "not-there")
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_on(pilot, sid)
        await pilot.press("E")
        await settle(pilot)
    argv = recorded_argv(record)
    assert argv[0] == "-R" and len(argv) == 2 and argv[1].endswith(".md")
    assert Path(f"{record}.mode").read_text().strip() == "400"
    assert Path(f"{record}.text").read_text() == to_markdown(exported)
    assert not Path(argv[1]).exists() and not Path(argv[1]).parent.exists()


async def test_no_pager_or_editor_is_a_clear_toast(
    demo_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sid, _tip = session_facts(demo_db, CODE_TITLE)
    (tmp_path / "empty").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setenv("PAGER", "less")
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.delenv("EDITOR", raising=False)
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_on(pilot, sid)
        await pilot.press("v", "E")
        await settle(pilot)
        assert any("No pager found" in t for t in toasts(app))
        assert any("No editor found" in t for t in toasts(app))


async def test_pager_and_editor_open_at_the_current_message(
    demo_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`v` and `E` on the message the reader is on (here: the one ctrl+f landed on) start the
    pager and the editor at its heading when they take ``+LINE`` (less, vi, nano…); a pager that
    does not is run as configured."""
    sid, _tip = session_facts(demo_db, CODE_TITLE)
    with SessionDB(demo_db, read_only=True, migrate=False) as db:
        exported = db.export_session(sid)
    assert exported is not None
    markdown = to_markdown(exported)
    numbers = {m["id"]: n for n, m in enumerate(exported["messages"], 1)}
    fake_program(tmp_path / "bin", "less", tmp_path / "less", stdin=True)
    fake_program(tmp_path / "bin", "vim", tmp_path / "vim", stat_file=True)
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    monkeypatch.setenv("PAGER", "less -R")
    monkeypatch.setenv("VISUAL", "vim")
    app = make_app(demo_db, now=time.time)
    async with app.run_test(size=(120, 40)) as pilot:
        main = await open_on(pilot, sid, focus_list=False)
        transcript = main.query_one("#transcript", Transcript)
        transcript.focus()
        await pilot.press("ctrl+f", *"50 passed")
        await settle(pilot)
        await pilot.press("escape")
        await settle(pilot)
        hit = transcript.current_message()
        assert hit is not None and numbers[hit.id] > 1
        await pilot.press("v")
        await settle(pilot)
        await pilot.press("E")
        await settle(pilot)
    line = message_line(markdown, numbers[hit.id])
    assert markdown.splitlines()[line - 1].startswith(f"## {numbers[hit.id]}. tool")
    assert recorded_argv(tmp_path / "less") == ["-R", f"+{line}"]
    assert Path(f"{tmp_path / 'less'}.stdin").read_text() == markdown
    argv = recorded_argv(tmp_path / "vim")
    assert argv[0] == f"+{line}" and argv[1].endswith(".md")


def test_at_line_only_for_programs_that_take_it() -> None:
    assert at_line(["less", "-R"], 12) == ["less", "-R", "+12"]
    assert at_line(["/usr/bin/nvim"], 3) == ["/usr/bin/nvim", "+3"]
    assert at_line(["bat", "--paging=always"], 12) == ["bat", "--paging=always"]
    assert at_line(["less"], 1) == ["less"]
    assert message_line("# T\n\n## 1. user — x\n\nhi\n\n## 2. assistant — y\n", 2) == 7
    assert message_line("# T\n", 5) == 1


def test_program_fallbacks(tmp_path: Path) -> None:
    for name in ("less", "nano"):
        fake_program(tmp_path, name, tmp_path / name)
    env = {"PATH": str(tmp_path), "PAGER": "gone -x", "EDITOR": ""}
    assert pager_argv(env) == ["less"]
    assert editor_argv(env) == ["nano"]
    assert pager_argv({"PATH": str(tmp_path), "PAGER": "less -S"}) == ["less", "-S"]
    assert os.stat(tmp_path / "less").st_mode & stat.S_IXUSR
