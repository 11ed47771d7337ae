"""A store written by hermes-agent 0.19.0 whose writer crashed: the last transactions are only in
its -wal (and the -shm beside it is what the dead process left)."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import apsw

from .oracle import Peer

SESSIONS = 4
PER_SESSION = 6


def crashed_peer_store(path: Path, python: Path) -> int:
    """Write `SESSIONS` sessions through 0.19.0 at `path`, then kill it; returns the message count."""
    peer = Peer(path, python=python)
    try:
        for s in range(SESSIONS):
            peer.call("create_session", f"peer-{s}", "cli", model="m")
            peer.call("set_session_title", f"peer-{s}", f"Crashed writer {s}")
            for i in range(PER_SESSION):
                peer.call("append_message", f"peer-{s}", "user", content=f"zeppelin 部署 note {s}.{i}")
    finally:
        peer.kill()
    wal = Path(f"{path}-wal")
    assert wal.stat().st_size > 0 and Path(f"{path}-shm").exists()
    # The point of the fixture: the database file alone lacks what only the -wal holds.
    c = apsw.Connection(f"file:{path}?immutable=1", flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
    try:
        in_file = c.execute("SELECT count(*) FROM messages").fetchall()[0][0]
    except apsw.SQLError:  # not even the tables are in the file yet
        in_file = 0
    finally:
        c.close()
    assert in_file < SESSIONS * PER_SESSION, in_file
    return SESSIONS * PER_SESSION


def copy_store(src: Path, folder: Path) -> Path:
    """The database with its -wal and -shm, as they are, in `folder`."""
    folder.mkdir(parents=True)
    for suffix in ("", "-wal", "-shm"):
        shutil.copy2(f"{src}{suffix}", folder / f"{src.name}{suffix}")
    return folder / src.name


def stamp(path: Path) -> tuple[int, int, str]:
    st = os.stat(path)
    return st.st_size, st.st_mtime_ns, hashlib.sha256(path.read_bytes()).hexdigest()


def db_and_wal(path: Path) -> dict[str, tuple[int, int, str]]:
    """The database file's and its -wal's size, mtime and content: what browsing must not change."""
    return {"db": stamp(path), "wal": stamp(Path(f"{path}-wal"))}
