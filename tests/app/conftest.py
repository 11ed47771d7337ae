"""Fixtures for the app tests (defined in `_support` so the snapshot tests share them)."""

from pathlib import Path

import pytest

from ._support import demo_db, demo_master, deterministic_env

__all__ = ["demo_db", "demo_master", "deterministic_env", "private_settings"]


@pytest.fixture(autouse=True)
def private_settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Every app test reads and writes its own settings file, never the user's ~/.config."""
    path = tmp_path / "config" / "hermes-tui" / "settings.toml"
    monkeypatch.setenv("HERMES_TUI_CONFIG", str(path))
    return path
