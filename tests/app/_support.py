"""Shared test support: deterministic environment, a seeded demo DB, and Pilot helpers."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from textual.app import App
from textual.pilot import Pilot
from textual.widgets import Input

from hermes_tui.app.app import HermesApp
from hermes_tui.app.debounce import any_pending
from hermes_tui.demo import build_demo
from tests._wait import POLL_S, WAIT_S, Deadline

#: Demo timeline base (2025-06-01 12:00 UTC) and the fixed "now" shown by every test.
DEMO_BASE = 1748779200.0
FIXED_NOW = DEMO_BASE + 600.0
THEME = "textual-dark"


def fixed_now() -> float:
    """The frozen clock injected into apps under test."""
    return FIXED_NOW


@pytest.fixture(autouse=True)
def deterministic_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """No colour/theme overrides, no blinking caret, and never the user's real ~/.hermes."""
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("TEXTUAL_THEME", raising=False)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("HERMES_HOME", str(home / ".hermes"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("HERMES_TUI_CONFIG", str(home / ".config" / "hermes-tui" / "settings.toml"))
    monkeypatch.setattr(Input, "_toggle_cursor", lambda self: None, raising=False)
    yield


@pytest.fixture(scope="session")
def demo_master(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo database, built once per run with the fixed base time."""
    path = tmp_path_factory.mktemp("demo") / "state.db"
    build_demo(path, base=DEMO_BASE)
    return path


@pytest.fixture
def demo_db(demo_master: Path, tmp_path: Path) -> Path:
    """A private copy of the demo database for one test."""
    target = tmp_path / "db" / "state.db"
    target.parent.mkdir()
    for suffix in ("", "-wal"):
        src = Path(str(demo_master) + suffix)
        if src.exists():
            shutil.copy(src, str(target) + suffix)
    return target


def make_app(path: Path, **kw: object) -> HermesApp:
    """An app with the fixed clock, theme and a path-independent header label."""
    kw.setdefault("now", fixed_now)
    kw.setdefault("theme", THEME)
    kw.setdefault("path_label", "state.db")
    return HermesApp(path, **kw)  # type: ignore[arg-type]


#: The live follower's worker group: it polls the store until the app exits, so never "done".
LIVE_GROUP = "live"


def busy_with(app: App[Any]) -> list[str]:
    """What `app` still has to do: debounced calls due, workers running (but the live
    follower's), messages queued on the app or any widget of its screens. Empty when quiet."""
    busy: list[str] = []
    if any_pending(app):
        busy.append("a debounced call is due")
    running = [w for w in app.workers if w.group != LIVE_GROUP and not w.is_finished]
    busy += [f"worker {w.group}/{w.description or w.name}: {w.state.name}" for w in running]
    pumps = [app, *(node for screen in app.screen_stack for node in screen.walk_children(with_self=True))]
    queued = sum(p.message_queue_size for p in pumps)
    if queued:
        busy.append(f"{queued} message(s) queued")
    return busy


async def settle(pilot: Pilot[Any], rounds: int = 2, timeout: float = WAIT_S) -> None:
    """Wait until the app is quiet (`busy_with` is empty) at `rounds` checks in a row, a pause
    apart: a worker's result message can start more work (a load after a debounce, a count
    after a search), so one quiet moment is not always the end. No fixed sleeps: a debounce is
    waited for as long as it is pending, and a failure says what was still busy."""
    app = pilot.app
    deadline = Deadline(timeout)
    quiet = 0
    while quiet < rounds:
        await pilot.pause()
        busy = busy_with(app)
        if not busy:
            quiet += 1
            continue
        quiet = 0
        deadline.check(f"the app was quiet ({'; '.join(busy)})")
        await pilot.pause(POLL_S)


def drawn_as_match(transcript: Any, message_id: int, term: str = "") -> bool:
    """Message ``message_id`` is drawn as the search hit (the widget transcript's `-match`): its
    "◆ match" header behind the match's border colour, and ``term`` (when given) marked: a piece
    of its own in a look the text around it does not have."""
    index = transcript.index_of(message_id)
    strips = None if index is None else transcript.item_strips(index)
    if not strips or "◆ match" not in strips[0].text:
        return False
    border = transcript.get_component_rich_style("lines--border-match").color
    if next(s.style for s in strips[0] if s.text.strip()).color != border:
        return False
    if not term:
        return True
    for strip in strips:
        pieces = list(strip)
        for k, seg in enumerate(pieces):
            if seg.text.lower() == term.lower() and any(
                o.style != seg.style for o in pieces[max(0, k - 1) : k + 2] if o is not seg and o.text.strip()
            ):
                return True
    return False


def any_match_drawn(transcript: Any) -> bool:
    """Some message in the transcript's window is drawn as the search hit."""
    return "◆ match" in transcript.window_text()


def transcript_rows(n: int, start: int = 1) -> list[dict[str, Any]]:
    """``n`` short messages: user, assistant with a tool call, tool output, in turn."""
    out: list[dict[str, Any]] = []
    for i in range(start, start + n):
        kind = i % 3
        if kind == 0:
            out.append({"id": i, "role": "user", "content": f"question {i}"})
        elif kind == 1:
            call = {"function": {"name": "terminal", "arguments": f'{{"cmd": "ls {i}"}}'}}
            out.append({"id": i, "role": "assistant", "content": f"answer {i}", "tool_calls": [call]})
        else:
            out.append({"id": i, "role": "tool", "tool_name": "terminal", "content": f"out {i}"})
    return out
