"""Back-to-work actions on the main screen: resume in Hermes (R), copy (y …), pager (v), editor (E).

`register_handoff_actions()` (called by the app next to `register_actions()`) registers one
`ActionSpec` each, so they are bound on the main screen, listed in help and offered by the
palette. Every store read runs in a thread worker; the event loop only builds commands, copies
and runs the pager or editor with the app suspended (`App.suspend`, Textual's way to hand the
terminal to a child program and take it back).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any

from textual.app import SuspendNotSupported

from hermes_tui.app import actions
from hermes_tui.app.actions import ActionSpec, need_session
from hermes_tui.app.handoff import (
    ResumeError,
    at_line,
    clipboard_text,
    count_label,
    editor_argv,
    first_code_block,
    message_line,
    pager_argv,
    run_editor,
    run_pager,
    tool_calls_text,
)
from hermes_tui.app.screens.copy_menu import CopyMenu
from hermes_tui.app.screens.dialog_base import error_text
from hermes_tui.app.widgets.transcript_items import call_list
from hermes_tui.app.widgets.transcript_pane import Transcript
from hermes_tui.exporting import markdown_filename, to_markdown
from hermes_tui.safe_text import one_line
from hermes_tui.state import content_text

if TYPE_CHECKING:
    from hermes_tui.app.screens.main import MainScreen
    from hermes_tui.app.widgets.transcript_items import MessageView
    from hermes_tui.state import SessionDB


def _in_worker(
    screen: MainScreen, what: str, fetch: Callable[[SessionDB], Any], done: Callable[[Any], None]
) -> None:
    """Run ``fetch(db)`` in a thread worker, then ``done(result)`` on the loop; errors are toasts."""
    db = screen.db
    app = screen.app
    if db is None:
        return

    def work() -> None:
        try:
            result = fetch(db)
        except Exception as exc:
            app.call_from_thread(
                app.notify,
                one_line(error_text(exc), 300),  # store errors may quote an id
                title=f"Could not {what}",
                severity="error",
                markup=False,
            )
            return
        app.call_from_thread(done, result)

    app.run_worker(work, thread=True, group="handoff", exit_on_error=False, description=what)


def compression_tip(db: SessionDB, session_id: str) -> str:
    """The live tip of ``session_id``'s compression chain (itself when it is not compressed)."""
    return db.get_compression_tip(session_id) or session_id


# ---------------------------------------------------------------------- resume
def resume(screen: MainScreen) -> None:
    """Leave the browser and resume the session (its live tip) in Hermes."""
    sid = need_session(screen)
    if sid is None:
        return
    app = screen.hermes
    _in_worker(screen, "resume", lambda db: compression_tip(db, sid), app.resume_session)


# ---------------------------------------------------------------------- the current message
def current_message(screen: MainScreen) -> MessageView | None:
    """The transcript message the user is on: the transcript's one current message (a find or
    search hit, a focused fold, Home/End, else the first message on screen)."""
    return screen.query_one("#transcript", Transcript).current_message()


def message_copy(db: SessionDB, view: MessageView) -> tuple[str, bool]:
    """``(text, from_calls)``: the stored content of one message (raw, as the agent wrote it),
    or, when it has none, its tool calls' names and arguments (`tool_calls_text`)."""
    for row in db.get_messages(view.session_id, include_inactive=True):
        if row.get("id") == view.id:
            text = content_text(row.get("content"))
            calls = call_list(row.get("tool_calls"))
            if not text.strip() and calls:
                return tool_calls_text(calls), True
            return text, False
    raise LookupError(f"message {view.id} is no longer in session {view.session_id}")


def _session_markdown(db: SessionDB, session_id: str, message_id: int | None = None) -> tuple[str, str, int]:
    """``(markdown, filename, line)`` of a session, through `exporting` (already inert); ``line``
    is where message ``message_id``'s heading is in it (1 when none is given or found)."""
    exported = db.export_session(session_id, display=True)  # what a person sees, as the transcript
    if not exported:
        raise LookupError(f"session {session_id} not found")
    markdown = to_markdown(exported)
    ids = [m.get("id") for m in exported.get("messages") or [] if m.get("display_kind") != "hidden"]
    line = message_line(markdown, ids.index(message_id) + 1) if message_id in ids else 1
    return markdown, markdown_filename(exported), line


# ---------------------------------------------------------------------- copy
def copy(screen: MainScreen) -> None:
    """`y`, then what: i id · r resume command · m message · c code block · t transcript."""

    def chosen(key: str | None) -> None:
        if key is not None:
            copy_choice(screen, key)

    screen.app.push_screen(CopyMenu(), chosen)


def _copied(screen: MainScreen, what: str, text: str) -> None:
    text = clipboard_text(text)
    screen.app.copy_to_clipboard(text)
    screen.notify(f"Copied {what}: {count_label(text)}", title="Copied", timeout=3, markup=False)


def copy_choice(screen: MainScreen, key: str) -> None:
    """Copy what ``key`` names (see `CopyMenu`)."""
    app = screen.hermes
    if key in {"m", "c"}:
        view = current_message(screen)
        if view is None:
            screen.notify("No message is shown: open a session first.", severity="warning")
            return

        def message_done(found: tuple[str, bool]) -> None:
            text, from_calls = found
            if not text:
                screen.notify(f"Message {view.id} has no text.", severity="warning")
            elif key == "m":
                what = f"the tool calls of message {view.id}" if from_calls else f"message {view.id}"
                _copied(screen, what, text)
            else:
                block = None if from_calls else first_code_block(text)
                if block is None:
                    screen.notify(f"Message {view.id} has no code block.", severity="warning")
                else:
                    _copied(screen, f"the code block of message {view.id}", block)

        _in_worker(screen, "copy the message", lambda db: message_copy(db, view), message_done)
        return
    sid = need_session(screen)
    if sid is None:
        return
    if key == "i":
        _copied(screen, f"the session id {one_line(sid, 40)}", sid)
    elif key == "r":

        def resume_done(tip: str) -> None:
            try:
                command = app.resume_command_text(tip)
            except ResumeError as exc:
                screen.notify(one_line(str(exc), 300), title="Cannot copy", severity="error", markup=False)
                return
            _copied(screen, "the resume command", command)

        _in_worker(screen, "copy the resume command", lambda db: compression_tip(db, sid), resume_done)
    elif key == "t":
        _in_worker(
            screen,
            "copy the transcript",
            lambda db: _session_markdown(db, sid)[0],
            lambda md: _copied(screen, "the transcript as Markdown", md),
        )


# ---------------------------------------------------------------------- pager and editor
def _run_suspended(screen: MainScreen, run: Callable[[], int]) -> int:
    """Run a terminal program with the app suspended (restored afterwards). Where Textual cannot
    suspend (headless tests, a pipe) there is nothing to hand over, so it simply runs."""
    with ExitStack() as stack:
        try:
            stack.enter_context(screen.app.suspend())
        except SuspendNotSupported:
            pass
        return run()


def _show_outside(
    screen: MainScreen,
    argv: list[str] | None,
    missing: str,
    what: str,
    program: str,
    run: Callable[[list[str], str, str], int],
) -> None:
    """The target session as Markdown handed to a terminal program: ``run(argv, markdown,
    filename)`` with the app suspended, once a worker has read it. ``missing`` is the warning
    when no such program is found (``argv`` None). A program that takes ``+LINE`` opens at the
    current message when it is in that session."""
    sid = need_session(screen)
    if sid is None:
        return
    if argv is None:
        screen.notify(missing, severity="warning")
        return
    found = argv
    view = current_message(screen)
    message_id = view.id if view is not None and view.session_id == sid else None

    def done(result: tuple[str, str, int]) -> None:
        markdown, filename, line = result
        try:
            _run_suspended(screen, lambda: run(at_line(found, line), markdown, filename))
        except OSError as exc:
            screen.notify(
                one_line(error_text(exc), 300),
                title=f"Could not run the {program}",
                severity="error",
                markup=False,
            )

    _in_worker(screen, what, lambda db: _session_markdown(db, sid, message_id), done)


def pager(screen: MainScreen) -> None:
    """`v`: the session as Markdown in ``$PAGER`` (else less, else more)."""
    _show_outside(
        screen,
        pager_argv(),
        "No pager found: set $PAGER (less and more are not installed).",
        "show the session",
        "pager",
        lambda argv, markdown, _name: run_pager(argv, markdown),
    )


def editor(screen: MainScreen) -> None:
    """`E`: a read-only temporary copy of the session as Markdown in ``$VISUAL``/``$EDITOR``."""
    _show_outside(
        screen,
        editor_argv(),
        "No editor found: set $EDITOR (vi and nano are not installed).",
        "open the session",
        "editor",
        run_editor,
    )


SPECS: tuple[ActionSpec, ...] = (
    ActionSpec(
        "resume",
        "R",
        "Resume",
        resume,
        show=False,
        palette="Resume the selected session in Hermes",
        help="leaves the browser and runs hermes --resume on the chain's live tip",
    ),
    ActionSpec(
        "copy",
        "y",
        "Copy",
        copy,
        show=False,
        palette="Copy to the clipboard…",
        help="then i id · r resume command · m message · c code block · t transcript (Markdown)",
    ),
    ActionSpec(
        "pager",
        "v",
        "Pager",
        pager,
        show=False,
        palette="Read the session in the pager",
        help="the session as Markdown in $PAGER (less opens at the current message)",
    ),
    ActionSpec(
        "editor",
        "E",
        "Editor",
        editor,
        show=False,
        palette="Open the session in the editor",
        help="a read-only temporary Markdown copy in $EDITOR at the current message, removed afterwards",
    ),
)


def register_handoff_actions() -> None:
    """Register resume/copy/pager/editor (idempotent: a spec replaces its namesake)."""
    actions.register_all(SPECS)
