"""Remembered settings: theme, list order and filters, pane sizes and which panes are shown, and
whether the browser yields the CPU to agents (`[live] yield_cpu`, set in the file only).

One TOML file, ``$HERMES_TUI_CONFIG`` or ``--settings PATH`` when given, else
``platformdirs.user_config_dir("hermes-tui")/settings.toml`` (``~/.config/hermes-tui/`` on
Linux, ``$XDG_CONFIG_HOME`` respected). Reading never fails: a value that is missing, of the
wrong type or out of range takes its default, and every problem becomes one line of a warning.
A file with problems is left as it is until the user changes a setting; that first write keeps
the old file beside it as ``settings.toml.bad`` (and says so), so nothing the user wrote is lost
silently. Keys this version does not know are kept on every write (a newer version's file stays
whole). Writes are atomic (a ``0600`` temp file in the same folder, fsync, ``os.replace``) and
go through the real path of a symlinked file, so a dotfiles link stays a link.

No Textual here: the CLI's ``--reset-settings`` imports this without starting the app.
"""

from __future__ import annotations

import contextlib
import copy
import errno
import os
import stat
import tempfile
import threading
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import platformdirs
import tomli_w

from hermes_tui.safe_text import one_line

ENV_VAR = "HERMES_TUI_CONFIG"
FILE_NAME = "settings.toml"
#: The session list's orders (`SessionDB.session_order(order=...)`), in the order `o` cycles.
ORDERS = ("last_active", "started", "messages", "tokens", "cost")
#: The session list's views (`list_views.py`): Hermes' list, its archived view, with the hidden
#: sessions, everything.
VIEWS = ("default", "archived", "hidden", "all")
#: The panes that can be hidden (`Settings.show_<pane>`).
PANES = ("list", "lineage", "transcript")
LIST_WIDTH_MIN = 20
LIST_WIDTH_MAX = 80
LIST_WIDTH_STEP = 4
#: A settings file larger than this is not a settings file (read no further).
MAX_BYTES = 256 * 1024
#: Changes within this many seconds make one write (dragging `>` along writes once).
DEBOUNCE_S = 0.4


def _text(value: Any) -> bool:
    return isinstance(value, str) and len(value) <= 200


def _order(value: Any) -> bool:
    return value in ORDERS


def _view(value: Any) -> bool:
    return value in VIEWS


def _flag(value: Any) -> bool:
    return isinstance(value, bool)


def _width(value: Any) -> bool:
    return (
        isinstance(value, int)
        and not isinstance(value, bool)
        and (value == 0 or LIST_WIDTH_MIN <= value <= LIST_WIDTH_MAX)
    )


def _key(section: str, name: str, check: Callable[[Any], bool], what: str) -> Any:
    """Field metadata: where the key lives in the file and what a valid value is."""
    return {"toml": (section, name), "check": check, "what": what}


@dataclass(frozen=True)
class Settings:
    """Every remembered setting with its default (the app as it looks with no file)."""

    theme: str = field(default="textual-dark", metadata=_key("", "theme", _text, "a theme name"))
    order: str = field(
        default="last_active", metadata=_key("", "order", _order, "one of " + ", ".join(ORDERS))
    )
    source: str = field(
        default="", metadata=_key("filters", "source", _text, 'a source name ("" for any source)')
    )
    filter_text: str = field(default="", metadata=_key("filters", "text", _text, "a string"))
    active_now: bool = field(default=False, metadata=_key("filters", "active_now", _flag, "true or false"))
    view: str = field(
        default="default", metadata=_key("filters", "view", _view, "one of " + ", ".join(VIEWS))
    )
    #: The list pane's share of the width in percent; 0: automatic (the stylesheet's split, or
    #: on a wide terminal what the transcript does not need).
    list_width: int = field(
        default=0,
        metadata=_key(
            "panes",
            "list_width",
            _width,
            f"0 (automatic) or a whole percentage from {LIST_WIDTH_MIN} to {LIST_WIDTH_MAX}",
        ),
    )
    show_list: bool = field(default=True, metadata=_key("panes", "list", _flag, "true or false"))
    show_lineage: bool = field(default=True, metadata=_key("panes", "lineage", _flag, "true or false"))
    show_transcript: bool = field(default=True, metadata=_key("panes", "transcript", _flag, "true or false"))
    #: `--yield-cpu` for every run (cpu_share.py); set in the file only: the app cannot take back
    #: its priority once yielded, so nothing in it toggles this.
    yield_cpu: bool = field(default=False, metadata=_key("live", "yield_cpu", _flag, "true or false"))

    def with_pane(self, pane: str, shown: bool) -> Settings:
        """The same settings with ``pane`` (list, lineage, transcript) shown or hidden; at least
        one of the list and the transcript stays shown (hiding the last one is refused)."""
        if pane not in PANES:
            raise ValueError(f"unknown pane {pane!r}")
        changed: Settings = replace(self, **{f"show_{pane}": shown})  # type: ignore[arg-type]
        if not (changed.show_list or changed.show_transcript):
            return self
        return changed

    def resized(self, steps: int) -> Settings:
        """The list pane ``steps`` × 4 points wider (negative: narrower), kept in 20–80 %
        (from 52 % when the width is automatic)."""
        start = self.list_width or 52
        width = min(LIST_WIDTH_MAX, max(LIST_WIDTH_MIN, start + steps * LIST_WIDTH_STEP))
        return replace(self, list_width=width)


@dataclass
class Loaded:
    """What `load` read: the settings, one line per problem, and the document to write back.

    ``document`` is the parsed file (unknown keys included) that `save` updates; ``damaged``
    says the file must be kept as ``.bad`` before the first write (it had values we replace).
    """

    path: Path
    settings: Settings = field(default_factory=Settings)
    problems: list[str] = field(default_factory=list)
    document: dict[str, Any] = field(default_factory=dict)
    damaged: bool = False

    @property
    def warning(self) -> str:
        """The problems as one line for a toast ("" when there are none)."""
        if not self.problems:
            return ""
        text = f"Settings {self.path}: " + "; ".join(self.problems) + " (defaults used, file left as it is)"
        return one_line(text, 400)


def default_path() -> Path:
    """``$HERMES_TUI_CONFIG`` when set, else the platform's config folder."""
    env = os.environ.get(ENV_VAR, "").strip()
    if env:
        return Path(env).expanduser()
    return Path(platformdirs.user_config_dir("hermes-tui", appauthor=False)) / FILE_NAME


def backup_path(path: Path) -> Path:
    """Where a damaged file is kept on the first write: ``settings.toml.bad``."""
    return path.with_name(path.name + ".bad")


class _NotRegular(OSError):
    """The settings path is a folder, a FIFO, a device or a socket: never read nor replaced."""


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a file"


def _read_regular(path: Path) -> bytes:
    """At most `MAX_BYTES + 1` bytes of `path` if it is a regular file (a symlink to one is).

    Opened non-blocking and checked on the open descriptor before any read: a plain `open()` of
    a FIFO waits for a writer forever (start-up hung on a blank screen), and a device reads
    without end. `_NotRegular` for anything but a regular file."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise _NotRegular(_kind(mode))
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=False) as fh:
            return fh.read(MAX_BYTES + 1)
    finally:
        os.close(fd)


def load(path: Path | None = None) -> Loaded:
    """Read the settings file; never raises. No file → defaults and no problems."""
    path = default_path() if path is None else path
    loaded = Loaded(path)
    try:
        raw = _read_regular(path)
    except FileNotFoundError:
        return loaded
    except _NotRegular as exc:
        loaded.problems.append(f"not a regular file ({exc}), not read")
        return loaded  # not `damaged`: nothing may ever be written over it (see `save`)
    except OSError as exc:
        loaded.problems.append(f"cannot read it ({exc.strerror or type(exc).__name__})")
        loaded.damaged = True
        return loaded
    if len(raw) > MAX_BYTES:
        loaded.problems.append(f"larger than {MAX_BYTES // 1024} KiB, not read")
        loaded.damaged = True
        return loaded
    try:
        document = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        loaded.problems.append("not UTF-8 text")
        loaded.damaged = True
        return loaded
    except tomllib.TOMLDecodeError as exc:
        loaded.problems.append(f"not valid TOML ({exc})")
        loaded.damaged = True
        return loaded
    loaded.document = document
    values: dict[str, Any] = {}
    known: dict[str, set[str]] = {}
    for f in fields(Settings):
        section, name = f.metadata["toml"]
        known.setdefault(section, set()).add(name)
    for section in known:
        if section and not isinstance(document.get(section, {}), dict):
            loaded.problems.append(f"{section} is not a table")
            loaded.damaged = True
    for f in fields(Settings):
        section, name = f.metadata["toml"]
        table: Any = document if not section else document.get(section, {})
        label = f"{section}.{name}" if section else name
        if not isinstance(table, dict):
            continue
        if name not in table:
            continue
        if f.metadata["check"](table[name]):
            values[f.name] = table[name]
        else:
            loaded.problems.append(f"{label} = {_shown(table[name])} is not {f.metadata['what']}")
            loaded.damaged = True
    for key, value in document.items():
        if key in known[""]:
            continue
        if key in known and isinstance(value, dict):
            loaded.problems.extend(f"unknown key {key}.{k} ignored" for k in value if k not in known[key])
        elif key not in known:
            loaded.problems.append(f"unknown key {key} ignored")
    loaded.settings = Settings(**values)
    return loaded


def _shown(value: Any) -> str:
    """A bad value in a warning: its TOML-ish text, inert and cut short."""
    return one_line(repr(value) if not isinstance(value, bool) else str(value).lower(), 30)


def to_document(settings: Settings, base: dict[str, Any] | None = None) -> dict[str, Any]:
    """``base`` (the file as read, unknown keys and all) with every setting written into it."""
    document = copy.deepcopy(base) if base else {}
    for f in fields(Settings):
        section, name = f.metadata["toml"]
        if section:
            table = document.get(section)
            if not isinstance(table, dict):
                table = document[section] = {}
        else:
            table = document
        table[name] = getattr(settings, f.name)
    # Top-level values before tables, as TOML requires and people expect.
    return dict(sorted(document.items(), key=lambda kv: isinstance(kv[1], dict)))


def _write_atomic(target: Path, data: bytes) -> None:
    """``data`` into ``target`` via a 0600 temp file in the same folder, fsync, os.replace."""
    target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o600)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def save(
    path: Path, settings: Settings, base: dict[str, Any] | None = None, *, keep_old: bool = False
) -> str:
    """Write ``settings`` (over ``base``'s unknown keys); returns a note for the user, or "".

    ``keep_old``: the file there had problems, so it is first copied to ``settings.toml.bad``.
    Raises `OSError` when the file cannot be written.
    """
    target = path.resolve() if path.is_symlink() else path
    with contextlib.suppress(FileNotFoundError):
        mode = target.stat().st_mode
        if not stat.S_ISREG(mode):  # a FIFO or a device belongs to someone else: never replaced
            raise _NotRegular(errno.EEXIST, f"{target} is {_kind(mode)}, not a settings file")
    note = ""
    if keep_old and target.is_file():
        _write_atomic(backup_path(target), target.read_bytes())
        note = f"the previous {target.name} had problems; it was kept as {backup_path(target).name}"
    _write_atomic(target, tomli_w.dumps(to_document(settings, base)).encode("utf-8"))
    return note


class ResetRefused(Exception):
    """`reset` deleted nothing: the path is not a settings file, or it could not be removed."""


def reset(path: Path | None = None) -> str:
    """Delete the settings file (for ``--reset-settings``); returns what was done, in words.

    Only a regular file (or a symlink, which goes and leaves its target) is deleted; anything
    else, or a failure, raises `ResetRefused` with one line to print, nothing deleted."""
    path = default_path() if path is None else path
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return f"No settings file at {path}; nothing to reset."
    except OSError as exc:
        raise ResetRefused(f"cannot reset {path}: {exc.strerror or exc}") from None
    if not (stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
        raise ResetRefused(f"{path} is {_kind(mode)}, not a settings file: nothing was deleted")
    try:
        path.unlink()
    except FileNotFoundError:
        return f"No settings file at {path}; nothing to reset."
    except OSError as exc:
        raise ResetRefused(f"cannot delete {path}: {exc.strerror or exc}") from None
    return f"Deleted {path}; hermes-tui starts with its default settings."


class SettingsWriter:
    """Debounced, off-the-event-loop writes of the settings the user changed.

    `update` is called on the event loop and only records the newest settings and (re)starts a
    timer thread; the write runs in that thread. Settings equal to what is on disk (or what was
    read) are never written, so browsing alone writes nothing. ``report(severity, text)`` is
    called from the writing thread with a note or an error (the app posts it as a toast).
    """

    def __init__(
        self, loaded: Loaded, report: Callable[[str, str], None] | None = None, delay: float = DEBOUNCE_S
    ) -> None:
        self.path = loaded.path
        self.current = loaded.settings
        self._saved = loaded.settings
        self._document = loaded.document
        self._keep_old = loaded.damaged
        self._report = report or (lambda severity, text: None)
        self._delay = delay
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None
        self.writes = 0

    def update(self, settings: Settings) -> None:
        """Remember ``settings``; written ``delay`` seconds after the last change."""
        with self._lock:
            self.current = settings
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            if settings == self._saved:
                return
            self._timer = threading.Timer(self._delay, self.flush)
            self._timer.daemon = True
            self._timer.name = "hermes-settings-write"
            self._timer.start()

    def flush(self) -> None:
        """Write now if something changed (the timer's thread, or `close`)."""
        with self._lock:
            self._timer = None
            settings = self.current
            if settings == self._saved:
                return
            try:
                note = save(self.path, settings, self._document, keep_old=self._keep_old)
            except OSError as exc:
                self._saved = settings  # one error per change, not one per keystroke after it
                self._report("error", f"Could not save settings to {self.path}: {exc.strerror or exc}")
                return
            self._saved = settings
            self._document = to_document(settings, self._document)
            self._keep_old = False
            self.writes += 1
        if note:
            self._report("warning", f"Settings saved; {note}.")

    def close(self) -> None:
        """Write what is pending now (the app is exiting)."""
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
        self.flush()
