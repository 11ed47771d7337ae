"""How the browser shares the CPU with agents (cpu_share.py): what each lever sets, on which
thread, and that the app pulls them — its loop thread with the shortest slice by default; with
`--yield-cpu` everything idle but what reads the store and the programs it starts.

Each lever is tried in a thread of its own: `SCHED_IDLE` cannot be undone without privileges, and
the test process must keep its priority."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

from hermes_tui.app import cpu_share
from hermes_tui.cli.browse import build_parser

from .test_live import live_app, settle

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="scheduling policies are Linux's")
T = TypeVar("T")


def in_thread(fn: Callable[[], T]) -> T:
    """``fn()``'s result, run in a fresh thread (whatever it sets dies with the thread)."""
    out: list[Any] = []
    thread = threading.Thread(target=lambda: out.append(fn()))
    thread.start()
    thread.join(10)
    assert out, "the thread did not finish"
    return out[0]  # type: ignore[no-any-return]


@linux
def test_background_thread_sets_idle_policy_for_the_calling_thread_only() -> None:
    before = os.sched_getscheduler(0)
    assert in_thread(lambda: (cpu_share.background_thread(), os.sched_getscheduler(0))) == (
        True,
        os.SCHED_IDLE,
    )
    assert os.sched_getscheduler(0) == before


@linux
def test_a_thread_started_after_yield_everything_inherits_idle() -> None:
    def yielded_then_child() -> tuple[bool, int]:
        took = cpu_share.yield_everything()
        return took, in_thread(lambda: os.sched_getscheduler(0))

    assert in_thread(yielded_then_child) == (True, os.SCHED_IDLE)


def _supports_slices() -> bool:
    return bool(in_thread(cpu_share.short_slices))


@linux
def test_short_slices_sets_the_shortest_slice_inherited_and_keeps_nice() -> None:
    if not _supports_slices():
        pytest.skip("this kernel has no per-task EEVDF slice (Linux 6.12+)")
    three_ms = 3_000_000

    def niced_then_short() -> tuple[bool, int | None, int, int | None]:
        took = cpu_share.short_slices()
        return took, cpu_share.slice_ns(), os.getpriority(os.PRIO_PROCESS, 0), in_thread(cpu_share.slice_ns)

    def parent() -> tuple[tuple[bool, int | None, int, int | None], int | None]:
        assert cpu_share.set_slice(three_ms)
        os.setpriority(os.PRIO_PROCESS, 0, 5)  # this thread only (Linux); its children inherit it
        return in_thread(niced_then_short), cpu_share.slice_ns()

    (took, own, nice, child), parents = in_thread(parent)
    assert took and own == cpu_share.SHORTEST_SLICE_NS and child == cpu_share.SHORTEST_SLICE_NS
    assert nice == 5  # sched_setattr sets the nice value too: it must pass the thread's own
    assert parents == three_ms  # the thread that started it keeps its own


@linux
def test_short_slices_leaves_an_idle_thread_idle() -> None:
    def idle_then_short() -> tuple[bool, int]:
        cpu_share.background_thread()
        return cpu_share.short_slices(), os.sched_getscheduler(0)

    assert in_thread(idle_then_short) == (False, os.SCHED_IDLE)


def _policy_of(name: str) -> int | None:
    thread = next((t for t in threading.enumerate() if t.name == name), None)
    return None if thread is None or thread.native_id is None else os.sched_getscheduler(thread.native_id)


@linux
async def test_the_app_leaves_scheduling_alone_by_default_and_its_follower_stays_normal(
    demo_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []
    monkeypatch.setattr(cpu_share, "short_slices", lambda: calls.append("short") or True)
    monkeypatch.setattr(cpu_share, "yield_everything", lambda: calls.append("yield") or True)
    app = live_app(demo_db)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        assert _policy_of("hermes-live-follow") == os.SCHED_OTHER  # a reader is never idle
    assert calls == []  # EEVDF slices and SCHED_IDLE are opt-in (issue 36): neither by default


YIELDING_APP = """
import asyncio, json, os, sys, threading
from pathlib import Path
from hermes_tui.app.app import HermesApp

async def main():
    app = HermesApp(Path(sys.argv[1]), read_only=True, yield_cpu=True)
    async with app.run_test(size=(100, 30)) as pilot:
        for _ in range(400):  # until the follower runs and a thread worker has read the store
            await pilot.pause(0.05)
            names = {t.name for t in threading.enumerate()}
            if "hermes-live-follow" in names and app.screen.session_list.total:
                break
        print(json.dumps({t.name: os.sched_getscheduler(t.native_id) for t in threading.enumerate()}))

asyncio.run(main())
"""


@linux
def test_a_yielding_app_draws_idle_but_reads_the_store_at_normal_priority(
    demo_db: Path, tmp_path: Path
) -> None:
    """`--yield-cpu`: the loop thread (drawing) at SCHED_IDLE; the thread workers (the loop's
    default executor) and the live follower on threads kept at normal priority, since a starved
    reader holds back the writers' checkpoints (the bench: a 27-55 MB -wal against 5)."""
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "HERMES_TUI_CONFIG": str(tmp_path / "settings.toml")}
    done = subprocess.run(
        [sys.executable, "-c", YIELDING_APP, str(demo_db)],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    policies = json.loads(done.stdout.strip().splitlines()[-1])
    assert policies["MainThread"] == os.SCHED_IDLE
    assert policies["hermes-live-follow"] == os.SCHED_OTHER
    assert policies["hermes-launcher_0"] == os.SCHED_OTHER
    readers = {name: p for name, p in policies.items() if name.startswith("hermes-reader")}
    assert readers and set(readers.values()) == {os.SCHED_OTHER}
    # Every other thread too: the thread workers ran on the kept readers, not on threads the
    # idle loop would have started for its own default executor.
    assert {name: p for name, p in policies.items() if p != os.SCHED_OTHER} == {"MainThread": os.SCHED_IDLE}


@linux
def test_after_yielding_what_reads_the_store_starts_at_the_old_priority(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(cpu_share, "_launcher", None)  # this process has not yielded; undone after

    def yielded_then_start() -> tuple[int, int, int, int]:
        assert cpu_share.yield_everything()
        pool = cpu_share.reader_pool()
        assert pool is not None
        try:
            in_pool = pool.submit(os.sched_getscheduler, 0).result()
        finally:
            pool.shutdown()
        seen: list[int] = []
        kept = threading.Thread(target=lambda: seen.append(os.sched_getscheduler(0)))
        cpu_share.start_thread(kept)
        kept.join(10)
        direct = in_thread(lambda: os.sched_getscheduler(0))
        return in_pool, seen[0], direct, os.sched_getscheduler(0)

    try:
        assert in_thread(yielded_then_start) == (os.SCHED_OTHER, os.SCHED_OTHER, os.SCHED_IDLE, os.SCHED_IDLE)
    finally:
        launcher = cpu_share._launcher
        if launcher is not None:
            launcher.shutdown()
        monkeypatch.setattr(cpu_share, "_launcher", None)
    assert cpu_share.reader_pool() is None  # nothing yielded: the loop keeps its own executor


def test_yield_cpu_flag_reaches_the_app(monkeypatch: pytest.MonkeyPatch) -> None:
    from hermes_tui import cli
    from hermes_tui.app.app import HermesApp

    ran: list[HermesApp] = []
    monkeypatch.setattr(HermesApp, "run", lambda self: ran.append(self))
    assert cli.main(["--demo", "--yield-cpu"]) == 0
    assert cli.main(["--demo"]) == 0
    assert [app.yield_cpu for app in ran] == [True, False]
    assert build_parser().parse_args(["--yield-cpu"]).yield_cpu is True


PRINT_POLICY = "import os; print(os.sched_getscheduler(0))"


@linux
def test_programs_started_after_yielding_run_at_the_old_priority(monkeypatch: pytest.MonkeyPatch) -> None:
    """A pager, an editor or a resumed agent inherits the policy of the thread that starts it."""
    monkeypatch.setattr(cpu_share, "_launcher", None)  # this process has not yielded; undone after

    def yielded_then_spawn() -> tuple[str, str, int]:
        assert cpu_share.yield_everything()
        run = [sys.executable, "-c", PRINT_POLICY]
        direct = subprocess.run(run, capture_output=True, text=True, check=True).stdout.strip()
        kept = cpu_share.unyielded(subprocess.run, run, capture_output=True, text=True, check=True)
        return direct, kept.stdout.strip(), cpu_share.unyielded(os.sched_getscheduler, 0)

    try:
        direct, kept, thread_policy = in_thread(yielded_then_spawn)
        assert cpu_share.yielded()
    finally:
        pool = cpu_share._launcher
        if pool is not None:
            pool.shutdown()
    assert (direct, kept) == (str(os.SCHED_IDLE), str(os.SCHED_OTHER))
    assert thread_policy == os.SCHED_OTHER


RESUME = """
import sys
from hermes_tui.cli import browse
from hermes_tui.app import cpu_share
getattr(cpu_share, sys.argv[1])()
sys.exit(browse.run_resume((sys.executable, "-c", "import os, sys; sys.exit(40 + os.sched_getscheduler(0))")))
"""


@linux
@pytest.mark.parametrize(
    ("how", "status"), [("yield_everything", 40), ("background_thread", 40 + getattr(os, "SCHED_IDLE", 5))]
)
def test_a_session_resumed_from_a_yielded_browser_runs_at_normal_priority(how: str, status: int) -> None:
    """`--yield-cpu` keeps a thread to start the agent from; a process made idle without it (the
    exec path) would hand the agent `SCHED_IDLE` for good."""
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", RESUME, how], cwd=root, check=False, timeout=60)
    assert done.returncode == status


def test_the_settings_file_can_ask_for_yield_cpu(demo_db: Path, private_settings: Path) -> None:
    from hermes_tui.app.app import HermesApp

    private_settings.parent.mkdir(parents=True, exist_ok=True)
    assert HermesApp(demo_db).yield_cpu is False
    private_settings.write_text("[live]\nyield_cpu = true\n")
    assert HermesApp(demo_db).yield_cpu is True
    private_settings.write_text('[live]\nyield_cpu = "yes"\n')
    app = HermesApp(demo_db)
    assert app.yield_cpu is False and "live.yield_cpu" in app.settings_warning
