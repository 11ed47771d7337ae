"""A real terminal for end-to-end tests: the installed ``hermes-tui`` in a pty, read through pyte.

``pexpect`` gives the child a pseudo-terminal of a fixed size; every byte it writes is kept (so
tests can assert that escape sequences from stored content never reach the terminal) and fed to
a ``pyte`` screen, which is what the tests read. Nothing here parses escape sequences by hand.
Tests wait on conditions (text on the screen, process exit), never on fixed sleeps.
"""

from __future__ import annotations

import copy
import os
import re
import shutil
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import pexpect
import pyte

from tests._wait import WAIT_S

COLS, ROWS = 120, 40
#: How long a wait for the screen may take: the shared bound of a hang (`tests/_wait.py`).
DEFAULT_TIMEOUT = WAIT_S
#: A pause in the child's output this long ends a frame (see `Terminal.settle`).
QUIET_S = 0.06

#: Named keys as an xterm sends them (normal cursor mode; Textual decodes both forms).
KEYS: dict[str, bytes] = {
    "escape": b"\x1b",
    "enter": b"\r",
    "tab": b"\t",
    "shift+tab": b"\x1b[Z",
    "backspace": b"\x7f",
    "space": b" ",
    "up": b"\x1b[A",
    "down": b"\x1b[B",
    "right": b"\x1b[C",
    "left": b"\x1b[D",
    "home": b"\x1b[H",
    "end": b"\x1b[F",
    "pageup": b"\x1b[5~",
    "pagedown": b"\x1b[6~",
    "delete": b"\x1b[3~",
    "shift+up": b"\x1b[1;2A",
    "shift+down": b"\x1b[1;2B",
}


def key_bytes(name: str) -> bytes:
    """Bytes for a named key (``escape``, ``ctrl+p``, ``shift+tab``…) or a single character."""
    if name in KEYS:
        return KEYS[name]
    if name.startswith("ctrl+") and len(name) == 6 and name[5].isalpha():
        return bytes([ord(name[5].lower()) & 0x1F])
    if len(name) == 1:
        return name.encode()
    raise ValueError(f"unknown key name {name!r}")


def hermes_tui_script() -> Path | None:
    """The installed console script next to this interpreter (what CI installs), else on PATH."""
    here = Path(sys.executable).parent / "hermes-tui"
    if here.is_file() and os.access(here, os.X_OK):
        return here
    found = shutil.which("hermes-tui", path=str(Path(sys.executable).parent)) or shutil.which("hermes-tui")
    return Path(found) if found else None


def terminal_env(home: Path, hermes_home: Path | None = None) -> dict[str, str]:
    """A clean environment: fixed TERM and locale, HOME/XDG_CACHE_HOME/HERMES_HOME in ``home``."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("TEXTUAL", "HERMES", "XDG_", "COLUMNS", "LINES", "NO_COLOR", "FORCE_COLOR"))
    }
    env.update(
        TERM="xterm-256color",
        COLORTERM="truecolor",
        LANG="C.UTF-8",
        LC_ALL="C.UTF-8",
        HOME=str(home),
        XDG_CACHE_HOME=str(home / ".cache"),
        HERMES_HOME=str(hermes_home or home / ".hermes"),
    )
    return env


class AltScreen(pyte.Screen):
    """A pyte screen with xterm's alternate screen (private mode 1049), which pyte ignores:
    entering it saves the main screen and the cursor and clears, leaving restores both, as a
    terminal does. Without it a full-screen program's last frame stayed on the emulated screen
    after it left, over what the shell drew before and after it."""

    ALT_SCREEN = 1049

    def __init__(self, columns: int, lines: int) -> None:
        super().__init__(columns, lines)
        self.saved_main: tuple[dict[int, dict[int, pyte.screens.Char]], pyte.screens.Cursor] | None = None

    def set_mode(self, *modes: int, **kwargs: object) -> None:
        if kwargs.get("private") and self.ALT_SCREEN in modes and self.saved_main is None:
            rows = {y: dict(row) for y, row in self.buffer.items()}
            self.saved_main = (rows, copy.copy(self.cursor))
            self.erase_in_display(2)
        super().set_mode(*modes, **kwargs)

    def reset_mode(self, *modes: int, **kwargs: object) -> None:
        super().reset_mode(*modes, **kwargs)
        if kwargs.get("private") and self.ALT_SCREEN in modes and self.saved_main is not None:
            rows, cursor = self.saved_main
            self.saved_main = None
            self.buffer.clear()
            for y, row in rows.items():
                if y < self.lines:
                    self.buffer[y].update({x: c for x, c in row.items() if x < self.columns})
            self.cursor = cursor
            self.ensure_hbounds()
            self.ensure_vbounds()
            self.dirty.update(range(self.lines))


class Terminal:
    """One child process in a ``cols`` x ``rows`` pty, its screen emulated by pyte."""

    def __init__(
        self,
        argv: Sequence[str],
        env: Mapping[str, str],
        *,
        cols: int = COLS,
        rows: int = ROWS,
        cwd: str | os.PathLike[str] | None = None,
        echo: bool = False,
    ) -> None:
        """``echo``: the pty starts with echo on (a shell's line editor echoes only then)."""
        self.cols, self.rows = cols, rows
        self.screen = AltScreen(cols, rows)
        self.stream = pyte.ByteStream(self.screen)
        self.raw = bytearray()
        self.child = pexpect.spawn(
            str(argv[0]),
            [str(a) for a in argv[1:]],
            env=dict(env),
            dimensions=(rows, cols),
            cwd=None if cwd is None else str(cwd),
            encoding=None,
            echo=echo,
        )
        self.exitstatus: int | None = None

    # ------------------------------------------------------------------ reading
    def _read(self, timeout: float) -> bytes | None:
        """What the child wrote within ``timeout`` (b"" if nothing), fed to the screen; None at exit."""
        try:
            data = self.child.read_nonblocking(65536, timeout=timeout)
        except pexpect.TIMEOUT:
            return b""
        except pexpect.EOF:
            return None
        self.raw += data
        self.stream.feed(data)
        return data

    def pump(self, timeout: float = 0.05) -> bool:
        """Read output for up to ``timeout`` into the screen; False once the child has exited."""
        return self._read(timeout) is not None

    def settle(self, quiet: float = QUIET_S, limit: float = 2.0) -> None:
        """Read until the child has written nothing for ``quiet`` seconds (a frame is complete).

        Textual writes a frame in several chunks and pyte shows whatever arrived, so a screen read
        right after a condition matched could see half a frame; the cursor blink keeps quiet gaps
        short but present.
        """
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            data = self._read(quiet)
            if not data:
                return

    def wait_until(
        self, predicate: Callable[[], bool], timeout: float = DEFAULT_TIMEOUT, what: str = "condition"
    ) -> None:
        """Pump output until ``predicate()`` holds on a complete frame; on timeout fail with the screen."""
        deadline = time.monotonic() + timeout
        alive = True
        while True:
            if predicate():
                self.settle()
                if predicate():
                    return
            if time.monotonic() > deadline or not alive:
                break
            alive = self.pump(0.05)
        state = "running" if alive else f"exited ({self.child.exitstatus}, signal {self.child.signalstatus})"
        raise AssertionError(
            f"timed out after {timeout:.0f} s waiting for {what}; child {state}; "
            f"screen:\n{self.screen_text()}"
        )

    def wait_for(self, text: str | re.Pattern[str], timeout: float = DEFAULT_TIMEOUT) -> None:
        """Wait until ``text`` (a string or a compiled regex) is on the screen."""
        self.wait_until(lambda: self.has(text), timeout, what=repr(text))

    def wait_gone(self, text: str | re.Pattern[str], timeout: float = DEFAULT_TIMEOUT) -> None:
        """Wait until ``text`` is no longer on the screen."""
        self.wait_until(lambda: not self.has(text), timeout, what=f"{text!r} to disappear")

    def has(self, text: str | re.Pattern[str]) -> bool:
        """Whether ``text`` is on the screen now (regexes search the whole screen text)."""
        screen = self.screen_text()
        return bool(text.search(screen)) if isinstance(text, re.Pattern) else text in screen

    def screen_lines(self) -> list[str]:
        """The screen's rows, trailing blanks stripped."""
        return [line.rstrip() for line in self.screen.display]

    def screen_text(self) -> str:
        """The whole screen as text, one row per line."""
        return "\n".join(self.screen_lines())

    def fingerprint(self) -> int:
        """A hash of every cell with its colours and attributes: changes with focus moves too."""
        return hash(
            tuple(
                tuple(row[x] for x in range(self.cols))
                for row in (self.screen.buffer[y] for y in range(self.rows))
            )
        )

    def find(self, text: str, *, last: bool = False) -> tuple[int, int] | None:
        """(row, column) of the first (or last) occurrence of ``text`` on the screen."""
        rows = list(enumerate(self.screen.display))
        for y, line in reversed(rows) if last else rows:
            x = line.rfind(text) if last else line.find(text)
            if x >= 0:
                return y, x
        return None

    def box(self, inside: str) -> tuple[int, int, int, int]:
        """(top, bottom, left, right) border cells of the ``╭…╯`` box around ``inside``'s first occurrence."""
        where = self.find(inside)
        if where is None:
            raise AssertionError(f"{inside!r} is not on the screen:\n{self.screen_text()}")
        y0, x = where
        rows = self.screen.display
        left = rows[y0].rfind("│", 0, x)
        right = rows[y0].find("│", x + len(inside))
        if left < 0 or right < 0:
            raise AssertionError(f"{inside!r} is not inside a box:\n{self.screen_text()}")
        top = y0
        while top > 0 and rows[top][left] not in "╭┌":
            top -= 1
        bottom = y0
        while bottom < self.rows - 1 and rows[bottom][left] not in "╰└":
            bottom += 1
        return top, bottom, left, right

    def box_text(self, inside: str) -> str:
        """The text inside the bordered box that contains ``inside`` (a dialog, without the panes
        around it that the whole screen would also show)."""
        top, bottom, left, right = self.box(inside)
        rows = self.screen.display
        return "\n".join(rows[y][left + 1 : right].rstrip() for y in range(top + 1, bottom))

    def chars(self, y: int, x: int, n: int) -> list[pyte.screens.Char]:
        """The pyte cells (character plus attributes) of row ``y`` from column ``x``."""
        row = self.screen.buffer[y]
        return [row[i] for i in range(x, min(x + n, self.cols))]

    # ------------------------------------------------------------------ writing
    def press(self, *keys: str) -> None:
        """Send named keys (``escape``, ``enter``, ``ctrl+p``, ``r``…), one after another."""
        for key in keys:
            self.child.send(key_bytes(key))
            self.pump(0.01)

    def type(self, text: str) -> None:
        """Type literal text."""
        self.child.send(text.encode())
        self.pump(0.01)

    def click(self, y: int, x: int) -> None:
        """A left click at a 0-based cell, as an SGR (1006) mouse report, press then release."""
        self.child.send(f"\x1b[<0;{x + 1};{y + 1}M".encode())
        self.child.send(f"\x1b[<0;{x + 1};{y + 1}m".encode())
        self.pump(0.01)

    def click_text(self, text: str, *, box: str | None = None) -> None:
        """Click the middle of the lowest ``text`` on the screen, or inside the box around ``box``
        (a dialog's buttons are its lowest row; the footer would otherwise come first)."""
        top, bottom, left, right = self.box(box) if box is not None else (-1, self.rows, -1, self.cols)
        rows = self.screen.display
        for y in range(bottom - 1, top, -1):
            x = rows[y].find(text, left + 1, right)
            if x >= 0:
                self.click(y, x + len(text) // 2)
                return
        raise AssertionError(f"{text!r} is not on the screen (box {box!r}):\n{self.screen_text()}")

    def search(self, query: str) -> None:
        """Open the browser's search (``/``), wait for its box, type ``query`` and see it echoed."""
        self.press("/")
        self.wait_for("search messages…")  # the placeholder: the box is shown and focused
        self.type(query)
        self.wait_for(re.compile(rf"▊\s+{re.escape(query)}"))  # echoed in the box itself

    def escape_until(self, text: str | re.Pattern[str], presses: int = 3) -> None:
        """Press Esc, one at a time (each waits for the screen to change), until ``text`` shows.

        Two Esc bytes sent back to back could be read as one alt+escape, hence the wait.
        """
        for _ in range(presses):
            if self.has(text):
                return
            before = self.fingerprint()
            self.press("escape")
            self.wait_until(lambda b=before: self.fingerprint() != b, what="Esc to change the screen")
        self.wait_for(text)

    def resize(self, rows: int, cols: int) -> None:
        """Resize the pty (the child's foreground process group gets SIGWINCH) and the screen."""
        self.rows, self.cols = rows, cols
        self.screen.resize(rows, cols)
        self.child.setwinsize(rows, cols)

    # ------------------------------------------------------------------ ending
    def wait_exit(self, timeout: float = DEFAULT_TIMEOUT) -> int:
        """Read until the child exits; its exit status (or -signal)."""
        deadline = time.monotonic() + timeout
        while self.pump(0.1):
            if time.monotonic() > deadline:
                raise AssertionError(f"the child did not exit in {timeout:.0f} s:\n{self.screen_text()}")
        self.child.close()
        status = self.child.exitstatus
        self.exitstatus = status if status is not None else -(self.child.signalstatus or 0)
        return self.exitstatus

    def close(self) -> None:
        """End the child if it still runs (tests normally quit it with ``q``)."""
        if self.child.isalive():
            self.child.terminate(force=True)
        self.child.close(force=True)
