"""How the browser shares the CPU with the agents writing to the store (Linux; elsewhere no-ops).

Why: on a small machine an agent's append that falls due while the browser draws waits for it.
The live bench (`bench/live_app_bench.py`, 1M messages, a hermes-agent 0.19.0 writer at 20
appends/s, 2 cores) measured the writer's p99 at about 2× with the browser following than alone,
and found the cause in the scheduler, not in the database: pinning the browser to one CPU or
making it `SCHED_BATCH` changed nothing, while the browser at `SCHED_IDLE` left the writer as
fast as alone. Three levers, none needing privileges:

- `background_thread()`: the calling thread runs at `SCHED_IDLE` — it gets a CPU only when no
  other task wants one. For threads whose work nobody waits for at the keyboard (the live
  follower's polls and reads); a starved one delays what the screen follows, never a key. It
  cannot be undone without privileges (Linux treats `SCHED_IDLE` as nice 20), so never for a
  thread that is pooled or serves input.
- `short_slices()`: the calling thread (and every thread it starts later) asks EEVDF (Linux
  6.12+) for its shortest slice, 0.1 ms: a waking agent waits out at most that much of the
  browser's turn instead of 1.4 ms, and a waking browser (a key) preempts long-slice work
  sooner. Older kernels ignore the request.
- `yield_everything()`: `SCHED_IDLE` for the calling thread and every thread it starts later —
  the `--yield-cpu` choice for whoever wants the agents never slowed, and accepts that on a
  machine whose every core is busy the browser then waits for one to free up. A program started
  from an idle thread would be idle for good too (an agent the browser resumes, a pager, an
  editor), so it first keeps one thread at the old priority: `unyielded()` runs there.

Each returns whether the kernel took the request; a refusal is never an error.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import platform
import struct
import sys
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


_normal: ThreadPoolExecutor | None = None  # one thread kept at the priority before yielding


def yield_everything() -> bool:
    """`SCHED_IDLE` for the calling thread and the threads it starts from now on, after keeping
    one thread at the calling thread's priority for `unyielded()`."""
    global _normal
    if not _linux():
        return False
    if _normal is None:
        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hermes-normal-priority")
        pool.submit(int).result()  # its one thread exists now, started at the caller's priority
        _normal = pool
    return background_thread()


def yielded() -> bool:
    """Did `yield_everything()` run in this process?"""
    return _normal is not None


def unyielded(fn: Callable[P, R], /, *args: P.args, **kwargs: P.kwargs) -> R:
    """``fn(*args, **kwargs)`` on the thread kept at the priority before `yield_everything()`
    (inline when nothing yielded): for the programs the browser starts, which inherit the
    policy of the thread that starts them."""
    pool = _normal
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
