"""How the browser shares the CPU with the agents writing to the store (Linux; elsewhere no-ops).

Why: on a small machine an agent's append that falls due while the browser draws waits for it.
The live bench (`bench/live_app_bench.py`, 1M messages, a hermes-agent 0.19.0 writer at 20
appends/s, 2 cores) measured the writer's p99 at about 2× with the browser following than alone,
and found the cause in the scheduler, not in the database: pinning the browser to one CPU or
making it `SCHED_BATCH` changed nothing, while the browser at `SCHED_IDLE` left the writer as
fast as alone. The levers, none needing privileges; by default the app uses none of them:

- `short_slices()`: the calling thread (and every thread it starts later) asks EEVDF (Linux
  6.12+) for its shortest slice, 0.1 ms: a waking agent waits out at most that much of the
  browser's turn instead of 1.4 ms. Not asked for by the app since issue 36 (the writer's tail
  it bought is no target a user sees; the live bench still tries it, phases `K`/`L`).
- `yield_everything()` (`--yield-cpu`): `SCHED_IDLE` for the calling thread (the event loop,
  which draws) and every thread it starts later: it gets a CPU only when no other task wants
  one, which the agents then never wait for; on a machine whose every core is busy the browser
  waits for one to free up. Linux lets no unprivileged thread leave `SCHED_IDLE`, so two kinds
  of work first get threads kept at the old priority:
  - reads of the store (`reader_pool()`, the loop's default executor, and `start_thread()` for
    the live followers): a starved reader holds its snapshot and so holds back the writers'
    checkpoints — the bench saw the `-wal` reach 27–55 MB against 5 with every core busy;
  - programs the browser starts (`unyielded()`: an agent it resumes, a pager, an editor), which
    would inherit `SCHED_IDLE` for good.
- `background_thread()`: the calling thread alone at `SCHED_IDLE` (what the two above build on).

Each returns whether the kernel took the request; a refusal is never an error.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import platform
import struct
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")

# sched_setattr / sched_getattr system call numbers; unknown machines skip the slice request.
_SYSCALLS = {
    "x86_64": (314, 315),
    "amd64": (314, 315),
    "aarch64": (274, 275),
    "arm64": (274, 275),
    "riscv64": (274, 275),
    "ppc64le": (355, 356),
    "s390x": (345, 346),
}
_ATTR = struct.Struct("IIQiIQQQII")  # struct sched_attr, SCHED_ATTR_SIZE_VER1 (56 bytes)
SHORTEST_SLICE_NS = 100_000  # EEVDF clamps a requested slice to 0.1–100 ms


def _linux() -> bool:
    return sys.platform.startswith("linux") and hasattr(os, "sched_setscheduler")


def background_thread() -> bool:
    """Run the calling thread at `SCHED_IDLE` (for good: see the module's docstring)."""
    if not _linux():
        return False
    try:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))  # 0: the calling thread
    except (OSError, AttributeError):
        return False
    return True


_launcher: ThreadPoolExecutor | None = None  # one thread kept at the priority before yielding


def _started_pool(n: int, name: str) -> ThreadPoolExecutor:
    """A pool whose ``n`` threads all exist now, started by (and so at the priority of) the
    calling thread; a pool starts its threads lazily, from whichever thread submits."""
    pool = ThreadPoolExecutor(max_workers=n, thread_name_prefix=name)
    started = threading.Barrier(n + 1)
    for _ in range(n):
        pool.submit(started.wait)
    started.wait()
    return pool


def yield_everything() -> bool:
    """`SCHED_IDLE` for the calling thread and the threads it starts from now on, after keeping
    one thread at its priority, which starts what must not be idle (`reader_pool`,
    `start_thread`, `unyielded`)."""
    global _launcher
    if not _linux():
        return False
    if _launcher is None:
        _launcher = _started_pool(1, "hermes-launcher")
    return background_thread()


def yielded() -> bool:
    """Did `yield_everything()` run in this process?"""
    return _launcher is not None


def reader_pool() -> ThreadPoolExecutor | None:
    """A new pool for the store's reads, its threads at the priority before yielding (None when
    nothing yielded): the app makes it the event loop's default executor, which runs its thread
    workers and is shut down with the loop."""
    if _launcher is None:
        return None
    return unyielded(_started_pool, min(32, (os.cpu_count() or 1) + 4), "hermes-reader")  # asyncio's size


def start_thread(thread: threading.Thread) -> None:
    """Start ``thread`` (one that reads the store) at the priority before yielding."""
    unyielded(thread.start)


def unyielded(fn: Callable[P, R], /, *args: P.args, **kwargs: P.kwargs) -> R:
    """``fn(*args, **kwargs)`` on the thread kept at the priority before `yield_everything()`
    (inline when nothing yielded): for the programs the browser starts, which inherit the
    policy of the thread that starts them."""
    pool = _launcher
    if pool is None:
        return fn(*args, **kwargs)
    return pool.submit(fn, *args, **kwargs).result()


def _libc() -> ctypes.CDLL | None:
    with contextlib.suppress(OSError):
        return ctypes.CDLL(None, use_errno=True)
    return None


def short_slices() -> bool:
    """Ask for EEVDF's shortest slice for the calling thread (inherited by threads it starts)."""
    return set_slice(SHORTEST_SLICE_NS)


def set_slice(ns: int) -> bool:
    """Ask EEVDF for a slice of ``ns`` for the calling thread, keeping its policy and nice value
    (`sched_setattr` sets both); False where the kernel has no per-task slice or refuses."""
    numbers = _SYSCALLS.get(platform.machine().lower())
    libc = _libc() if _linux() else None
    if numbers is None or libc is None:
        return False
    policy = os.sched_getscheduler(0)
    if policy not in (os.SCHED_OTHER, os.SCHED_BATCH):  # idle or real-time: leave it be
        return False
    nice = os.getpriority(os.PRIO_PROCESS, 0)  # the calling thread's, on Linux
    attr = _ATTR.pack(_ATTR.size, policy, 0, nice, 0, ns, 0, 0, 0, 0)
    if libc.syscall(numbers[0], 0, ctypes.c_char_p(attr), 0) != 0:
        return False
    return slice_ns() == ns


def slice_ns() -> int | None:
    """The calling thread's EEVDF slice in nanoseconds (None where it cannot be read)."""
    numbers = _SYSCALLS.get(platform.machine().lower())
    libc = _libc() if _linux() else None
    if numbers is None or libc is None:
        return None
    buf = ctypes.create_string_buffer(_ATTR.size)
    if libc.syscall(numbers[1], 0, buf, _ATTR.size, 0) != 0:
        return None
    return int(_ATTR.unpack(buf.raw)[5])
