"""Shared test support: deterministic environment, a seeded demo DB, and Pilot helpers."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import Input

from hermes_tui.app.app import HermesApp
from hermes_tui.demo import build_demo

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


async def settle(pilot: Pilot[None], rounds: int = 2) -> None:
    """Let debounce timers fire (≤ 0.12 s) and every worker and its follow-up message finish."""
    for _ in range(rounds):
        await pilot.pause(0.13)
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
