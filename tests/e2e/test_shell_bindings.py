"""The shell bindings of docs/cli.md (bash, zsh, fish), exactly as documented, in the real shells in a
pty, on stores written by hermes-agent 0.19.0 with hostile session ids and profile names.

Each case: the binding opens `hermes-tui pick --format resume`, the session is picked, the
binding puts the resume command on the command line, Enter runs it. Nothing in an id or a
profile name may run as shell code (no marker file appears), and the `hermes` stub on PATH gets
exactly `--resume=<id>` (with `-p NAME` or `HERMES_HOME` naming the session's store). The
binding text is read from docs/cli.md, so the documentation is what is tested.

zsh and fish are installed by `.ci/run` when missing (as root); without them these tests skip
and say so.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests._wait import WAIT_S

from .conftest import PeerDB, SessionSpec, write_sessions
from .terminal import Terminal, terminal_env

README = Path(__file__).resolve().parents[2] / "README.md"
CLI_DOC = Path(__file__).resolve().parents[2] / "docs" / "cli.md"
#: Wide enough that the longest command (HERMES_HOME of a profile under tmp_path) is one line.
COLS, ROWS = 300, 40
PROMPT = "$ "
#: The store's session ids and profile names quote a `touch` of a marker file in the shell's
#: working folder: any such file means a shell ran part of an id or a name as code.
MARK = "pwned"


def _bindings(doc: Path, heading: str) -> dict[str, str]:
    """The ```bash / ```zsh / ```fish blocks of `doc`'s "Picker and resume" section."""
    text = doc.read_text(encoding="utf-8")
    section = text[text.index(heading) + 1 :]
    section = section[: section.index("\n## ")]
    blocks = dict(re.findall(r"```(bash|zsh|fish)\n(.*?)```", section, re.S))
    assert set(blocks) == {"bash", "zsh", "fish"}, f"{doc.name}'s bindings changed: {sorted(blocks)}"
    return blocks


def documented_bindings() -> dict[str, str]:
    """The bindings as docs/cli.md and the README give them: the same text in both."""
    in_docs = _bindings(CLI_DOC, "\n## Picker and resume\n")
    assert _bindings(README, "\n## Picker and resume\n") == in_docs, "README and docs/cli.md differ"
    return in_docs


@dataclass(frozen=True)
class Case:
    """A session to pick: its store (``None``: the default one, else a profile's folder name),
    its id, the word only its message holds, and the `-p` Hermes must get (if any)."""

    profile: str | None
    sid: str
    word: str
    p_flag: str | None = None


CASES = (
    Case(None, "x\\'$(touch pwned-fish)'\\", "avocado"),  # fish reads \' inside '…' as a quote
    Case(None, "';touch pwned-posix;'", "broccoli"),
    Case(None, '-`touch pwned-tick`"$(touch pwned-dq)"\\', "carrot"),  # starts with a dash
    Case(None, "!! !$ $HOME ~ * {a,b} #x ^y =z %1", "daikon"),
    Case("work", "w\\'$(touch pwned-work)'\\", "eggplant", p_flag="work"),
    Case("p'$(touch pwned-profile)'\\", "20250101_120000_abcdef", "fennel"),
)


def _shell_argv(shell: str) -> list[str]:
    """The shell, interactive, without any rc file, with a plain prompt."""
    return {
        "bash": ["bash", "--norc", "--noprofile", "-i"],
        "zsh": ["zsh", "-f", "-i"],
        "fish": ["fish", "--no-config", "-i", "-C", f"function fish_prompt; printf '%s' '{PROMPT}'; end"],
    }[shell]


def _write_stores(peer_db: Callable[..., PeerDB], root: Path) -> None:
    by_store: dict[str | None, list[SessionSpec]] = {}
    for i, case in enumerate(CASES):
        spec = SessionSpec(case.sid, None, [("user", f"{case.word} talk")], offset_s=600 - i)
        by_store.setdefault(case.profile, []).append(spec)
    for profile, specs in by_store.items():
        path = root / "state.db" if profile is None else root / "profiles" / profile / "state.db"
        path.parent.mkdir(parents=True, exist_ok=True)
        db = peer_db(path)
        write_sessions(db, specs)
        db.close()


def _bin(folder: Path, hermes_tui: Path) -> Path:
    """`hermes`: a stub recording its arguments (NUL-separated) and HERMES_HOME;
    `hermes-tui`: the installed one, with `--all` after the subcommand so every profile's
    store is offered (the binding's own text stays as documented)."""
    folder.mkdir()
    stub = folder / "hermes"
    stub.write_text(
        "#!/bin/sh\n"
        f'printf "%s" "${{HERMES_HOME-<unset>}}" > "{folder}/home.rec"\n'
        f'printf "%s\\0" "$@" > "{folder}/argv.rec"\n'
    )
    wrapper = folder / "hermes-tui"
    wrapper.write_text(f'#!/bin/sh\nsub=$1; shift\nexec "{hermes_tui}" "$sub" --all "$@"\n')
    for script in (stub, wrapper):
        script.chmod(0o755)
    return folder


def _ready(t: Terminal, n: int) -> None:
    """Type an echo whose output differs from its echoed text, and wait for the output."""
    t.type(f"echo RE''ADY{n}\r")
    t.wait_for(re.compile(rf"^READY{n}$", re.M))


def _wait_file(t: Terminal, path: Path, timeout: float = WAIT_S) -> None:
    t.wait_until(path.exists, timeout, what=f"{path.name} to appear")


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_documented_binding_never_runs_an_id_or_profile_name(
    shell: str,
    peer_db: Callable[..., PeerDB],
    hermes_tui_bin: Path,
    home: Path,
    tmp_path: Path,
) -> None:
    if shutil.which(shell) is None:
        pytest.skip(f"{shell} is not installed (.ci/run installs zsh and fish when run as root)")
    binding = documented_bindings()[shell]
    root = home / ".hermes"
    _write_stores(peer_db, root)
    bin_dir = _bin(tmp_path / "bin", hermes_tui_bin)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    env = terminal_env(home, root)
    env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"
    env["PS1"] = PROMPT
    t = Terminal(_shell_argv(shell), env, cols=COLS, rows=ROWS, cwd=cwd, echo=True)
    try:
        for line in binding.splitlines():
            t.type(line + "\r")
        _ready(t, 0)
        for n, case in enumerate(CASES, start=1):
            for rec in bin_dir.glob("*.rec"):
                rec.unlink()
            if shell == "bash":  # the bash binding starts the picker with the line as its query
                t.type(case.word)
                t.press("ctrl+g")
            else:
                t.press("ctrl+g")
                t.wait_for("search messages…")
                t.type(case.word)
            t.wait_for(re.compile(r"\b1 hit\b"))
            t.press("enter")
            t.wait_for(re.compile(r"^\$ .*hermes .*--resume", re.M))  # on the command line
            assert "search messages" not in t.screen_text()  # the picker's screen is gone
            t.press("enter")
            _wait_file(t, bin_dir / "argv.rec")
            assert not list(tmp_path.rglob(f"{MARK}*")), (case, t.screen_text())
            argv = (bin_dir / "argv.rec").read_bytes().decode().split("\0")[:-1]
            expected = (["-p", case.p_flag] if case.p_flag else []) + [f"--resume={case.sid}"]
            assert argv == expected, (case, t.screen_text())
            folder = root if case.profile is None or case.p_flag else root / "profiles" / case.profile
            assert (bin_dir / "home.rec").read_text() == str(folder), case
            _ready(t, n)
    finally:
        t.close()
    assert not list(tmp_path.rglob(f"{MARK}*"))


def test_shell_word_round_trips_through_every_shell(tmp_path: Path) -> None:
    """The property behind the bindings: every printable word `shell_word` quotes is read back
    exactly by bash (interactive too: history expansion), zsh (also with rc_quotes and
    extended_glob), fish and sh, and runs nothing."""
    import random
    import subprocess

    from hermes_tui.app.handoff import shell_word

    shells = [
        ["bash", "-c"],
        ["bash", "-ic"],
        ["zsh", "-f", "-c"],
        ["zsh", "-f", "-o", "rcquotes", "-o", "extendedglob", "-c"],
        ["fish", "--no-config", "-c"],
        ["sh", "-c"],
    ]
    missing = sorted({s[0] for s in shells if shutil.which(s[0]) is None})
    if missing:
        pytest.skip(f"not installed: {', '.join(missing)} (.ci/run installs zsh and fish when run as root)")
    rng = random.Random(52)
    alphabet = [chr(c) for c in range(32, 127)] + list("é日本語🙂")
    words = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 16))) for _ in range(500)]
    words += [case.sid for case in CASES] + [case.profile or "" for case in CASES]
    words += ["'", "\\", "\\'", "''", "!!", "!$", "$'x'", "^x", "#x", "=ls", "~root", "{a,b}", "*", "--"]
    words += [f"{w}$(touch {MARK}-{i})" for i, w in enumerate(("x\\'", "'", '"', "`"))]
    line = "printf '%s\\0' " + " ".join(shell_word(w) for w in words)
    for shell in shells:
        done = subprocess.run(
            [*shell, line],
            capture_output=True,
            cwd=tmp_path,
            env={"PATH": os.environ["PATH"], "HOME": str(tmp_path), "TERM": "dumb"},
            timeout=60,
            check=False,
        )
        got = done.stdout.decode("utf-8").split("\0")[:-1]
        assert got == words, (shell, [(w, g) for w, g in zip(words, got, strict=False) if w != g][:5])
    assert not list(tmp_path.glob(f"{MARK}*"))
