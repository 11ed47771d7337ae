"""Handing a session back to work: the resume command, the pager, the editor, clipboard text.

Nothing here touches Textual widgets or the store: the actions (`handoff_actions.py`) fetch
what they need in workers and call these helpers, and `hermes_tui.cli` runs the resume command
after the app has restored the terminal.

The resume command is a template (``--resume-cmd`` or ``$HERMES_TUI_RESUME``; default
`DEFAULT_RESUME_TEMPLATE`) split with `shlex` *before* substitution, so a session id or profile
name can never add words or shell syntax: the result is an argv, run without a shell. Its
placeholders: ``{id}`` (the session to resume: a compressed chain's live tip), ``{profile}``
(the named profile, or empty), and two that stand alone as a word and expand to zero or more
words: ``{profile_args}`` (``-p NAME`` for a named profile's store, nothing for the default one)
and ``{tui}`` (``--tui`` when ``--resume-tui`` was given). Hermes finds any other store through
``HERMES_HOME`` (`resume_target`), set for the command.

Where the command is text for a shell (``pick --format resume``, the clipboard) every word is
quoted by `shell_word`, one quoting that bash, zsh, fish and sh all read back as the same word
(POSIX quoting is not enough: fish reads ``\'`` inside single quotes as an escape).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Literal

from hermes_tui.app import cpu_share
from hermes_tui.app.render import pretty_json
from hermes_tui.safe_text import one_line
from hermes_tui.state import current_store_path, hermes_root, sticky_profile, tool_call_fields

#: ``--resume=ID`` (one word): an id starting with ``-`` is never read as an option.
DEFAULT_RESUME_TEMPLATE = "hermes {profile_args} --resume={id} {tui}"
RESUME_ENV = "HERMES_TUI_RESUME"
#: Tried in order when $PAGER is unset or names no program (`less` without -R: the Markdown is
#: inert text, with no colours to pass through).
PAGER_FALLBACKS: tuple[str, ...] = ("less", "more")
EDITOR_FALLBACKS: tuple[str, ...] = ("vi", "nano")

_INLINE = re.compile(r"\{([A-Za-z_]*)\}")
_WORD_PLACEHOLDERS = frozenset({"{profile_args}", "{tui}"})
#: A profile name `hermes -p NAME` accepts (hermes_cli.main, 0.19.0); another name is not read
#: as a profile there, so such a store is named by ``HERMES_HOME`` instead.
HERMES_PROFILE_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}\Z")
#: Words every shell reads as themselves unquoted (no glob, tilde, brace, `=`-first or `#`).
_BARE_WORD = re.compile(r"[A-Za-z0-9_./:+,-][A-Za-z0-9_./:+,=-]*\Z")
_QUOTE_OR_BACKSLASH = re.compile(r"(['\\])")
_FENCE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})[^\n]*\n(.*?)^[ \t]{0,3}\1[`~]*[ \t]*$", re.M | re.S)


class ResumeError(ValueError):
    """The session cannot be resumed this way; the message says why, in the user's words."""


class TemplateError(ResumeError):
    """The resume template cannot be used (unbalanced quotes, unknown placeholder, no {id})."""


@dataclass(frozen=True)
class Handoff:
    """What the app returns to `hermes_tui.cli.main` when it exits to hand over.

    ``kind`` "resume": run ``argv`` with ``env`` added to the environment once the terminal is
    restored. "pick": print ``output`` (an id or a whole resume command) on stdout and exit 0.
    """

    kind: Literal["resume", "pick"]
    session_id: str
    argv: tuple[str, ...] = ()
    output: str = ""
    env: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class ResumeCommand:
    """A resume command: its words and the variables set for it (``HERMES_HOME``)."""

    argv: tuple[str, ...]
    env: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class ResumeTarget:
    """How Hermes is pointed at a store: ``-p NAME`` for a named profile's store, ``HERMES_HOME``
    for any other folder's ``state.db``, neither for the default store."""

    profile: str | None = None
    hermes_home: Path | None = None


@dataclass(frozen=True)
class ResumeSettings:
    """How to build the resume command: the template and whether Hermes should open its TUI."""

    template: str = DEFAULT_RESUME_TEMPLATE
    tui: bool = False

    @classmethod
    def from_env(
        cls, template: str | None = None, tui: bool = False, env: Mapping[str, str] | None = None
    ) -> ResumeSettings:
        """An explicit template first, then ``$HERMES_TUI_RESUME``, then the default."""
        env = os.environ if env is None else env
        chosen = template or env.get(RESUME_ENV, "").strip() or DEFAULT_RESUME_TEMPLATE
        return cls(template=chosen, tui=tui)


def profile_for_store(db_path: Path, home: str | os.PathLike[str] | None = None) -> str | None:
    """The named profile whose store ``db_path`` is (``<root>/profiles/<name>/state.db``), else None.

    `hermes -p NAME` looks the profile up under the same root, so only that layout counts: the
    default store and a file anywhere else resume without ``-p``.
    """
    try:
        path = Path(db_path).expanduser().resolve()
        profiles = (hermes_root(home) / "profiles").resolve()
    except (OSError, RuntimeError):
        return None
    if path.name != "state.db" or path.parent.parent != profiles:
        return None
    return path.parent.name


def resume_target(store: Path, home: str | os.PathLike[str] | None = None) -> ResumeTarget:
    """How a resumed Hermes finds ``store``: nothing for the store it opens by default
    (`current_store_path`: the sticky profile's, else ``$HERMES_HOME/state.db``, or ``home``'s),
    ``-p NAME`` for a profile's store whose name Hermes accepts, ``-p default`` for the root's
    store while a sticky profile is set (without it Hermes opens the sticky profile), else
    ``HERMES_HOME`` set to the store's folder (Hermes opens ``$HERMES_HOME/state.db``). Raises
    `ResumeError` for a file not named ``state.db``: no setting makes Hermes open it, and another
    store's session of the same id must not be resumed in its place."""
    path = Path(store).expanduser()
    default = current_store_path(home)
    root_store = hermes_root(home) / "state.db"
    try:
        resolved, default_resolved, root_resolved = path.resolve(), default.resolve(), root_store.resolve()
    except (OSError, RuntimeError):
        resolved, default_resolved, root_resolved = path.absolute(), default.absolute(), root_store.absolute()
    if resolved == default_resolved:
        return ResumeTarget()
    if resolved == root_resolved and sticky_profile(hermes_root(home)) is not None:
        return ResumeTarget(profile="default")
    profile = profile_for_store(path, home)
    if profile is not None and HERMES_PROFILE_NAME.match(profile):
        return ResumeTarget(profile=profile)
    if path.name != "state.db":
        raise ResumeError(
            f"Hermes opens only a folder's state.db, so it cannot resume a session of "
            f"{one_line(path.name, 60)}; copy the session id instead"
        )
    return ResumeTarget(hermes_home=resolved.parent)


def validate_template(template: str) -> list[str]:
    """The template's words; raises `TemplateError` when it cannot produce a command."""
    try:
        words = shlex.split(template)
    except ValueError as exc:
        raise TemplateError(f"resume template {template!r}: {exc}") from None
    if not words or words[0] in _WORD_PLACEHOLDERS:
        raise TemplateError(f"resume template {template!r} names no program")
    found = False
    for word in words:
        if word in _WORD_PLACEHOLDERS:
            continue
        for name in _INLINE.findall(word):
            if name not in {"id", "profile"}:
                raise TemplateError(
                    f"resume template {template!r}: unknown placeholder {{{name}}} "
                    "(use {id}, {profile}, {profile_args}, {tui})"
                )
            found = found or name == "id"
    if not found:
        raise TemplateError(f"resume template {template!r} has no {{id}}")
    return words


def resume_argv(
    session_id: str, *, profile: str | None = None, settings: ResumeSettings = ResumeSettings()
) -> list[str]:
    """The command that resumes ``session_id``, as an argv (never passed through a shell)."""
    argv: list[str] = []
    values = {"id": session_id, "profile": profile or ""}
    for word in validate_template(settings.template):
        if word == "{profile_args}":
            argv += ["-p", profile] if profile else []
        elif word == "{tui}":
            argv += ["--tui"] if settings.tui else []
        else:
            argv.append(_INLINE.sub(lambda m: values[m.group(1)], word))
    return argv


def build_resume_command(
    session_id: str,
    store: Path,
    *,
    home: str | os.PathLike[str] | None = None,
    settings: ResumeSettings = ResumeSettings(),
) -> ResumeCommand:
    """The command that resumes ``session_id`` of ``store`` (`resume_target` says how Hermes is
    pointed there); `ResumeError` when it cannot be built."""
    target = resume_target(store, home)
    argv = resume_argv(session_id, profile=target.profile, settings=settings)
    env = (("HERMES_HOME", str(target.hermes_home)),) if target.hermes_home is not None else ()
    return ResumeCommand(tuple(argv), env)


def shell_word(word: str) -> str:
    """``word`` quoted so that bash, zsh (any options), fish and sh all read it back exactly:
    bare when it holds only characters no shell expands, else single-quoted runs with each ``'``
    written ``"'"`` and each backslash ``"\\"`` (inside double quotes both mean themselves in
    all four; fish alone reads backslashes inside single quotes). `ResumeError` for a word with
    a control, bidi or other invisible character: a shell's line editor would draw it raw."""
    if not word.isprintable():
        raise ResumeError(
            f"{one_line(word, 60)!r} holds control or invisible characters, which are never put "
            "on a shell's command line"
        )
    if _BARE_WORD.match(word):
        return word
    parts = []
    for part in _QUOTE_OR_BACKSLASH.split(word):
        if part == "'":
            parts.append('"\'"')
        elif part == "\\":
            parts.append('"\\\\"')
        elif part:
            parts.append(f"'{part}'")
    return "".join(parts) or "''"


def command_text(command: ResumeCommand | Sequence[str]) -> str:
    """The command as one line every documented shell (bash, zsh, fish, sh) runs unchanged:
    variables through ``env NAME=VALUE``, each word quoted by `shell_word` (`ResumeError` for a
    word that no quoting makes safe to show)."""
    return " ".join(shell_word(w) for w in _words(command))


def _words(command: ResumeCommand | Sequence[str]) -> list[str]:
    if not isinstance(command, ResumeCommand):
        return list(command)
    return [*(["env"] if command.env else []), *(f"{k}={v}" for k, v in command.env), *command.argv]


def shown_command(command: ResumeCommand | Sequence[str]) -> str:
    """The command for a message on a terminal: `command_text`, or when a word cannot be
    quoted, the words made inert (for reading, not for running)."""
    try:
        return command_text(command)
    except ResumeError:
        return one_line(shlex.join(_words(command)))


def program_available(argv: Sequence[str], env: Mapping[str, str] | None = None) -> bool:
    """Whether ``argv[0]`` resolves to an executable (on ``$PATH`` or as a path)."""
    path = (os.environ if env is None else env).get("PATH")
    return bool(argv) and shutil.which(argv[0], path=path) is not None


def _program(candidates: Sequence[str], env: Mapping[str, str]) -> list[str] | None:
    for candidate in candidates:
        try:
            argv = shlex.split(candidate)
        except ValueError:
            continue
        if argv and program_available(argv, env):
            return argv
    return None


def pager_argv(env: Mapping[str, str] | None = None) -> list[str] | None:
    """``$PAGER`` (split like a shell would), else `less`, else `more`; None when none exists."""
    env = os.environ if env is None else env
    configured = env.get("PAGER", "").strip()
    return _program(([configured] if configured else []) + list(PAGER_FALLBACKS), env)


def editor_argv(env: Mapping[str, str] | None = None) -> list[str] | None:
    """``$VISUAL``, else ``$EDITOR``, else `vi`, else `nano`; None when none exists."""
    env = os.environ if env is None else env
    configured = [v.strip() for v in (env.get("VISUAL", ""), env.get("EDITOR", "")) if v.strip()]
    return _program(configured + list(EDITOR_FALLBACKS), env)


#: Pagers and editors that take ``+LINE`` to start at that line (a file's, or stdin's for less).
STARTS_AT_LINE = frozenset({"less", "vi", "vim", "nvim", "view", "nano", "emacs"})


def at_line(argv: Sequence[str], line: int) -> list[str]:
    """``argv`` opening at ``line`` (1-based) when its program takes ``+LINE``; else as it is."""
    if line > 1 and argv and Path(argv[0]).name in STARTS_AT_LINE:
        return [*argv, f"+{line}"]
    return list(argv)


def message_line(markdown: str, number: int) -> int:
    """The line (1-based) of message ``number``'s heading (``## 3. assistant — …``) in a
    session's Markdown (`hermes_tui.exporting.to_markdown`); 1 when it is not there."""
    heading = f"## {number}. "
    for n, line in enumerate(markdown.splitlines(), 1):
        if line.startswith(heading):
            return n
    return 1


def clipboard_text(text: str) -> str:
    """Store text as it goes to the clipboard: unchanged but for NULs (OSC 52 is base64, so
    escape bytes cannot reach the terminal, but a NUL cuts the paste short in most programs)."""
    return text.replace("\x00", "")


def first_code_block(text: str) -> str | None:
    """The body of the first fenced code block (``` or ~~~) in Markdown ``text``, or None."""
    match = _FENCE.search(text)
    return match.group(2).rstrip("\n") if match else None


def tool_calls_text(calls: Sequence[Any]) -> str:
    """A message's tool calls as text to paste: each call's name on a line, then its arguments
    (JSON indented, as the transcript's folds show them), a blank line between two calls. Raw,
    as the agent wrote them, like a copied message (the clipboard is not a terminal)."""
    blocks = []
    for call in calls:
        name, args = tool_call_fields(call)
        title = name if isinstance(name, str) and name else pretty_json(name) if name else "tool call"
        shown = pretty_json(args) if args is not None and args != "" else ""
        blocks.append(f"{title}\n{shown}" if shown else title)
    return "\n\n".join(blocks)


def count_label(text: str) -> str:
    """ "1,234 characters" (the toast after a copy)."""
    n = len(text)
    return f"{n:,} character" + ("" if n == 1 else "s")


def _terminal_out() -> IO[str] | None:
    """Where a pager or editor should write: the terminal. In `pick` stdout is a pipe read by
    the shell, so a child writing there would end up in the picked value; stderr is the UI's
    terminal then (Textual's driver draws on it)."""
    if sys.stdout is not None and sys.stdout.isatty():
        return None
    err = sys.__stderr__
    return err if err is not None and err.isatty() else None


def run_pager(argv: Sequence[str], text: str) -> int:
    """Show ``text`` in the pager (on its stdin); returns the pager's exit status."""
    out = _terminal_out()
    data = text.encode("utf-8", "replace")
    done = cpu_share.unyielded(subprocess.run, list(argv), input=data, stdout=out, check=False)
    return done.returncode


def run_editor(argv: Sequence[str], text: str, filename: str) -> int:
    """Open a read-only private copy of ``text`` (0400 in a 0700 folder) in the editor, and
    remove it afterwards whatever the editor did (an editor may chmod and save: nothing is
    read back, and the file goes either way)."""
    folder = Path(tempfile.mkdtemp(prefix="hermes-tui-"))
    path = folder / (Path(filename).name or "session.md")
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8", errors="replace") as handle:
            handle.write(text)
        os.chmod(path, 0o400)
        out = _terminal_out()
        return cpu_share.unyielded(subprocess.run, [*argv, str(path)], stdout=out, check=False).returncode
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@contextmanager
def picker_terminal() -> Iterator[None]:
    """For `pick`: while the UI runs, every standard stream that is not a terminal (stdout is
    the shell's pipe; ``… | hermes-tui pick 2>log``) is ``/dev/tty`` instead, as fzf does.
    Textual reads keys from stdin, draws on stderr and asks stdout for the size
    (`shutil.get_terminal_size`), so with the pipe there it drew 80×24 inside a larger terminal;
    with the terminal there it fills it and follows its resizes. Afterwards stdout is the pipe
    again, for the result alone. Does nothing without a controlling terminal."""
    try:
        tty = os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY)
    except OSError:
        yield
        return
    saved: int | None = None
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
        for fd in (0, 1, 2):
            if os.isatty(fd):
                continue
            if fd == 1:
                try:
                    saved = os.dup(1)
                except OSError:  # stdout closed: the result has nowhere to go anyway
                    pass
            os.dup2(tty, fd)
    finally:
        os.close(tty)
    try:
        yield
    finally:
        if saved is not None:
            if sys.stdout is not None:
                sys.stdout.flush()  # what was written meanwhile went to the terminal
            os.dup2(saved, 1)
            os.close(saved)
