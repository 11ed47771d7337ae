"""Fixtures for the end-to-end tests: the installed ``hermes-tui`` in a real pty, databases
written by the real hermes-agent 0.19.0 (the peer), and the real clock.

Every test here is marked ``e2e`` (``pytest -m e2e`` selects them, ``-m "not e2e"`` skips them).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from peer.oracle import Peer, peer_python_or_skip

try:  # dev extras; without them the e2e tests skip instead of failing to collect
    from .terminal import Terminal, hermes_tui_script, terminal_env
except ImportError as exc:  # pragma: no cover - only without pexpect/pyte
    _MISSING = str(exc)
else:
    _MISSING = ""

DAY = 86400.0


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "e2e: drives the installed hermes-tui in a pseudo-terminal")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.e2e)
            item.add_marker(pytest.mark.peer)


@pytest.fixture(scope="session")
def hermes_tui_bin() -> Path:
    """The installed console script; skip (clearly) when the package is not installed."""
    if _MISSING:
        pytest.skip(f"pexpect/pyte are not installed (pip install -e '.[dev]'): {_MISSING}")
    script = hermes_tui_script()
    if script is None:
        pytest.skip("the hermes-tui console script is not installed next to this Python (pip install -e .)")
    return script


@pytest.fixture(scope="session")
def peer_proc() -> Iterator[Peer]:
    """One peer process for the whole e2e run; each test opens its own databases in it."""
    python = peer_python_or_skip()
    peer = Peer(None, python=python)
    yield peer
    peer.close()


@dataclass
class PeerDB:
    """One hermes-agent 0.19.0 ``SessionDB`` on a file, opened in the shared peer process."""

    peer: Peer
    path: Path
    handle: int | None = None

    def open(self) -> PeerDB:
        if self.handle is None:
            self.handle = self.peer.open_db(self.path)
        return self

    def call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """``SessionDB.<method>(...)`` in the peer (opens the file if it is closed)."""
        self.open()
        assert self.handle is not None
        return self.peer.call_on(self.handle, method, *args, **kwargs)

    def sql(self, statement: str, params: list[Any] | tuple[Any, ...] = (), *, write: bool = False) -> Any:
        """Raw SQL on the peer's own connection (in the peer process: no APSW there).

        Writes go through the peer's ``_execute_write`` (its BEGIN IMMEDIATE and retries), so
        back-dating rows is done the way the owner itself writes.
        """
        self.open()
        code = (
            "import json\n"
            f"db = dbs[{self.handle}]\n"
            f"stmt, params = json.loads({json.dumps(json.dumps([statement, list(params)]))})\n"
            + (
                "result = db._execute_write(lambda conn: conn.execute(stmt, params).rowcount)\n"
                if write
                else (
                    "with db._lock:\n    result = [list(r) for r in db._conn.execute(stmt, "
                    "params).fetchall()]\n"
                )
            )
        )
        return self.peer.exec(code)

    def close(self) -> None:
        """Close it (upstream's TRUNCATE checkpoint): the file is then the peer's final bytes."""
        if self.handle is not None:
            self.peer.close_db(self.handle)
            self.handle = None


@dataclass
class SessionSpec:
    """A session to write through the peer: messages are (role, content); ``age_days`` back-dates it."""

    id: str
    title: str | None = None
    messages: list[tuple[str, str]] = field(default_factory=list)
    source: str = "cli"
    model: str = "test-model"
    ended: bool = True
    age_days: float | None = None
    #: message timestamps start here (seconds before now) and advance by one second per message
    offset_s: float | None = None


def write_sessions(db: PeerDB, specs: list[SessionSpec]) -> None:
    """Create, fill, title and end each session with 0.19.0's own API, then back-date ``age_days``.

    Upstream stamps rows with ``time.time()``; only the age is set afterwards with raw SQL in the
    peer (0.19.0 has no API to write a past ``started_at``).
    """
    import time

    now = time.time()
    for spec in specs:
        db.call("create_session", spec.id, spec.source, model=spec.model)
        base = None
        if spec.age_days is not None:
            base = now - spec.age_days * DAY
        elif spec.offset_s is not None:
            base = now - spec.offset_s
        for i, (role, content) in enumerate(spec.messages):
            ts = None if base is None else base + 1 + i
            db.call("append_message", spec.id, role, content=content, timestamp=ts)
        if spec.title is not None:
            assert db.call("set_session_title", spec.id, spec.title)
        if spec.ended:
            db.call("end_session", spec.id, "user_exit")
        if base is not None:
            end = base + 2 + len(spec.messages)
            db.sql(
                "UPDATE sessions SET started_at = ?, ended_at = CASE WHEN ended_at IS NULL THEN NULL "
                "ELSE ? END WHERE id = ?",
                [base, end, spec.id],
                write=True,
            )


@pytest.fixture
def db_path(home: Path) -> Path:
    """Where the app's default store would be: ``$HERMES_HOME/state.db`` (shown as ``~/.hermes/…``)."""
    path = home / ".hermes" / "state.db"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture
def peer_db(peer_proc: Peer, db_path: Path) -> Iterator[Callable[..., PeerDB]]:
    """``peer_db(path=db_path)`` -> an open `PeerDB`; all are closed after the test."""
    opened: list[PeerDB] = []

    def make(path: Path | None = None) -> PeerDB:
        db = PeerDB(peer_proc, path or db_path).open()
        opened.append(db)
        return db

    yield make
    for db in opened:
        try:
            db.close()
        except Exception:  # a failed test may have left the peer mid-way; keep the others going
            pass


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """HOME (and so the cache and HERMES_HOME) of the app under test, inside tmp_path."""
    path = tmp_path / "home"
    (path / ".cache").mkdir(parents=True)
    return path


@pytest.fixture
def term(hermes_tui_bin: Path, home: Path, tmp_path: Path) -> Iterator[Callable[..., Terminal]]:
    """``term(*args)`` -> `Terminal` running ``hermes-tui *args``; every one is ended after the test."""
    started: list[Terminal] = []

    def spawn(*args: str | os.PathLike[str]) -> Terminal:
        t = Terminal([str(hermes_tui_bin), *map(str, args)], terminal_env(home), cwd=tmp_path)
        started.append(t)
        return t

    yield spawn
    for t in started:
        t.close()
