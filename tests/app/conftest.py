"""Fixtures for the app tests (defined in `_support` so the snapshot tests share them)."""

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.peer.oracle import Peer, peer_python_or_skip

from ._support import demo_db, demo_master, deterministic_env

__all__ = ["demo_db", "demo_master", "deterministic_env", "private_settings"]


@pytest.fixture(autouse=True)
def private_settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Every app test reads and writes its own settings file, never the user's ~/.config."""
    path = tmp_path / "config" / "hermes-tui" / "settings.toml"
    monkeypatch.setenv("HERMES_TUI_CONFIG", str(path))
    return path


@pytest.fixture
def peer_db(tmp_path: Path) -> Iterator[Peer]:
    """The real hermes-agent 0.19.0 on ``tmp_path/peer.db`` (skipped when its venv cannot be built,
    unless HERMES_TUI_REQUIRE_PEER is set)."""
    python = peer_python_or_skip()
    peer = Peer(tmp_path / "peer.db", python=python)
    try:
        yield peer
    finally:
        peer.close()
