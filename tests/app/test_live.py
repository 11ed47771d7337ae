"""Live follow: the browser follows commits made by other processes, with the real
clock. Writers are real subprocesses — our store driven over JSON lines, and the real
hermes-agent 0.19.0 (`tests/peer/oracle.py`). Every wait polls a condition with a timeout.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Static

from hermes_tui.app.live_follow import LiveUpdate
from hermes_tui.app.screens.main import MainScreen
from hermes_tui.app.stores_follow import follow_one
from hermes_tui.app.widgets.lineage import LineageTree
from hermes_tui.app.widgets.search import SearchPane
from hermes_tui.app.widgets.session_list import SessionList, live_label
from hermes_tui.app.widgets.transcript_pane import Transcript
from hermes_tui.state import SessionDB
from tests._wait import WAIT_S, pilot_until, wait_until
from tests.peer.oracle import Peer

from ._support import make_app, settle
from .test_transcript import widget_text

WRITER = r"""
import json, sys
from hermes_tui.state import SessionDB
db = SessionDB(sys.argv[1], migrate=False)
for line in sys.stdin:
    method, args, kwargs = json.loads(line)
    try:
        result = getattr(db, method)(*args, **kwargs)
        value = result if isinstance(result, (int, str, bool, type(None))) else None
        print(json.dumps({"ok": value}), flush=True)
    except Exception as exc:
        print(json.dumps({"error": f"{type(exc).__name__}: {exc}"}), flush=True)
"""


class Writer:
    """Our store in another process: each call is one committed write there."""

    def __init__(self, path: Path) -> None:
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
        self.proc = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            bufsize=1,
            env=env,
        )

    def call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps([method, args, kwargs]) + "\n")
        self.proc.stdin.flush()
        reply = json.loads(self.proc.stdout.readline())
        assert "error" not in reply, reply
        return reply["ok"]

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=10)


@pytest.fixture
def writer(demo_db: Path) -> Iterator[Writer]:
    w = Writer(demo_db)
    yield w
    w.close()


def screen_of(pilot: Pilot[None]) -> MainScreen:
    screen = pilot.app.screen
    assert isinstance(screen, MainScreen)
    return screen


def line_text(sl: SessionList, index: int) -> str:
    """The drawn text of list row ``index`` (it must be on screen)."""
    y = index - int(sl.scroll_offset.y) + 1
    return "".join(seg.text for seg in sl.render_line(y))


def live_app(path: Path) -> Any:
    return make_app(path, now=time.time)


async def open_live(pilot: Pilot[None], sid: str) -> MainScreen:
    """Wait for ``sid`` to reach the list, open it, wait for its transcript."""
    main = screen_of(pilot)
    await pilot_until(pilot, lambda: sid in main.session_list._ids, f"{sid} in the list")
    main.open_session(sid)
    await pilot_until(pilot, lambda: main.current_session == sid, f"{sid} open")
    await settle(pilot)
    return main


@contextlib.asynccontextmanager
async def following_tail(path: Path) -> AsyncIterator[tuple[Any, Pilot[None], MainScreen, Writer]]:
    """The app on ``path`` with session "tail" open (one user message), and the writer in
    another process that wrote it (closed on exit)."""
    writer = Writer(path)
    try:
        writer.call("create_session", "tail", "cli")
        writer.call("append_message", "tail", "user", content="first line")
        app = live_app(path)
        async with app.run_test(size=(120, 30)) as pilot:
            yield app, pilot, await open_live(pilot, "tail"), writer
    finally:
        writer.close()


def transcript_text(main: MainScreen) -> str:
    """What the transcript paints (messages and notes), as plain text."""
    return main.query_one("#transcript", Transcript).window_text()


# ------------------------------------------------------------------ the list


async def test_new_session_appears_in_place_and_the_selection_stays(demo_db: Path, writer: Writer) -> None:
    app = live_app(demo_db)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        main = screen_of(pilot)
        sl = main.session_list
        total = sl.total
        await pilot.press("down", "down")
        await settle(pilot)
        chosen = sl.selected_id
        assert chosen is not None and sl.cursor == 2
        writer.call("create_session", "live-new-1", "cli", model="m")
        writer.call("append_message", "live-new-1", "user", content="hello from elsewhere")
        await pilot_until(pilot, lambda: "live-new-1" in sl._ids, "the new session in the list")
        # newest activity first: it is row 0; the selected session is still selected, one row down
        assert list(sl._ids).index("live-new-1") == 0
        assert sl.selected_id == chosen and sl.cursor == 3
        assert int(sl.scroll_offset.y) == 0  # at the top the view stays at the top
        assert main.current_session == chosen  # no reload of the open transcript
        await pilot_until(pilot, lambda: "hello from" in line_text(sl, 0), "the new row drawn")
        assert sl.total == total + 1 and str(sl.border_title).startswith(f"Sessions {total + 1:,}")

        # scrolled down: the selected row keeps its screen line (the offset grows by the rows above)
        await pilot.press("end")
        await settle(pilot)
        top, cursor = int(sl.scroll_offset.y), sl.cursor
        assert top > 0
        chosen = sl.selected_id
        writer.call("create_session", "live-new-2", "cli")
        await pilot_until(pilot, lambda: "live-new-2" in sl._ids, "the second new session")
        assert sl.selected_id == chosen
        assert sl.cursor == cursor + 1 and int(sl.scroll_offset.y) == top + 1


async def test_deleted_elsewhere_disappears_marks_and_open_transcript_say_so(
    demo_db: Path, writer: Writer
) -> None:
    writer.call("create_session", "doomed", "cli")
    writer.call("append_message", "doomed", "user", content="soon gone")
    writer.call("create_session", "survivor", "cli")
    app = live_app(demo_db)
    async with app.run_test(size=(120, 30)) as pilot:
        main = await open_live(pilot, "doomed")
        sl = main.session_list
        sl.set_selection({"doomed", "survivor"})
        assert "soon gone" in transcript_text(main)
        writer.call("delete_session", "doomed")
        await pilot_until(pilot, lambda: "doomed" not in sl._ids, "the deleted row gone")
        assert sl.selection == {"survivor"}
        await pilot_until(pilot, lambda: "deleted elsewhere" in transcript_text(main), "the deletion note")
        assert main.current_session is None
        assert not pilot.app._notifications or all(n.severity != "error" for n in pilot.app._notifications)


async def test_live_status_column_and_active_now_filter(demo_db: Path, writer: Writer) -> None:
    app = live_app(demo_db)
    async with app.run_test(size=(140, 30)) as pilot:
        await settle(pilot)
        main = screen_of(pilot)
        sl = main.session_list
        writer.call("create_session", "busy", "cli")
        writer.call("append_message", "busy", "user", content="do the thing")
        await pilot_until(pilot, lambda: (sl.live.get("busy") or {}).get("state") == "working", "working")
        index = list(sl._ids).index("busy")
        await pilot_until(pilot, lambda: "● working" in line_text(sl, index), "the working mark drawn")
        writer.call("append_message", "busy", "assistant", content="done")
        await pilot_until(pilot, lambda: (sl.live.get("busy") or {}).get("state") == "waiting", "waiting")
        await pilot_until(pilot, lambda: "◐ waiting" in line_text(sl, list(sl._ids).index("busy")), "◐")
        # "active now": only sessions with recent activity (the demo's are months old)
        await pilot.press("a")
        await pilot_until(pilot, lambda: list(sl._ids) == ["busy"], "the active-now filter")
        assert "active now" in str(sl.border_title)
        writer.call("create_session", "busy2", "cli")
        await pilot_until(pilot, lambda: list(sl._ids) == ["busy2", "busy"], "a new active session")
        await pilot.press("F")
        await pilot_until(pilot, lambda: sl.total > 2, "the filter cleared")


def test_live_labels() -> None:
    assert live_label({"state": "working", "idle_s": 1}) == "● working"
    assert live_label({"state": "waiting", "idle_s": 1}) == "◐ waiting"
    assert live_label({"state": "idle", "idle_s": 725}) == "idle 12m"
    assert live_label({"state": "idle", "idle_s": 3 * 3600}) == "idle 3h"
    assert live_label({"state": "ended", "idle_s": 5}) == ""
    assert live_label(None) == ""


# ------------------------------------------------------------------ the transcript


async def test_transcript_follows_at_the_bottom_and_marks_new_messages_when_scrolled_up(
    demo_db: Path, writer: Writer
) -> None:
    writer.call("create_session", "tail", "cli")
    for i in range(10):
        writer.call(
            "append_message",
            "tail",
            "user" if i % 2 == 0 else "assistant",
            content=f"line {i}\n" + "filler\n" * 6,
        )
    app = live_app(demo_db)
    async with app.run_test(size=(120, 30)) as pilot:
        main = await open_live(pilot, "tail")
        transcript = main.query_one("#transcript", Transcript)
        await pilot.press("G")
        await pilot_until(
            pilot, lambda: transcript.at_bottom and transcript.end == len(transcript.items), "at the bottom"
        )
        writer.call("append_message", "tail", "user", content="fresh one")
        await pilot_until(pilot, lambda: "fresh one" in transcript_text(main), "the appended message")
        await pilot_until(pilot, lambda: transcript.at_bottom, "following")
        assert transcript.new_below == 0
        # scrolled up: the view stays, a marker counts what arrived, G jumps there
        transcript.scroll_home(animate=False)
        await pilot.pause()
        top = transcript.scroll_y
        writer.call("append_message", "tail", "assistant", content="fresh two")
        writer.call("append_message", "tail", "tool", content="tool output late", tool_call_id="c1")
        await pilot_until(pilot, lambda: transcript.new_below == 2, "the new-below count")
        assert transcript.scroll_y == top
        assert "2 new ↓ G" in str(transcript.border_subtitle)
        await pilot.press("G")
        await pilot_until(pilot, lambda: transcript.new_below == 0 and transcript.at_bottom, "jumped")
        last = transcript.items[-1]
        assert getattr(last, "role", None) == "tool" and "tool output late" in getattr(last, "text", "")
        assert f"tool  #{last.id}" in transcript_text(main)  # type: ignore[union-attr]
        assert "new ↓" not in str(transcript.border_subtitle)


async def test_a_short_session_opened_then_written_past_the_view_keeps_following(demo_db: Path) -> None:
    """The session is opened while it fits the view (no scrollbar yet); an agent then writes
    one message at a time: the message that first overflows the view must scroll it to the end,
    and every one after (in a real terminal it stopped there: "N new ↓", the view at the top)."""
    async with following_tail(demo_db) as (_app, pilot, main, writer):
        transcript = main.query_one("#transcript", Transcript)
        assert transcript.max_scroll_y == 0
        for i in range(14):
            await pilot.pause(0.5)  # (an agent's pace: the follower cools between its commits)
            writer.call("append_message", "tail", "assistant", content=f"step {i}: done")
            await pilot_until(pilot, lambda i=i: f"step {i}: done" in transcript_text(main), f"step {i}")
            await pilot_until(pilot, lambda: transcript.at_bottom, f"following at step {i}")
            assert transcript.new_below == 0, i
        assert transcript.max_scroll_y > 0


# ------------------------------------------------------------------ search


async def test_search_results_refresh_newest_first_and_say_changed_otherwise(
    demo_db: Path, writer: Writer
) -> None:
    writer.call("create_session", "finder", "cli")
    writer.call("append_message", "finder", "user", content="zebrafish one")
    app = live_app(demo_db)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        main = screen_of(pilot)
        search = main.query_one("#search", SearchPane)
        await pilot.press("slash", *"zebrafish")
        await pilot_until(pilot, lambda: len(search.hits) == 1, "the first hit")
        writer.call("append_message", "finder", "assistant", content="zebrafish two")
        await pilot_until(pilot, lambda: len(search.hits) == 2, "the refreshed hits")
        assert "two" in str(search.hits[0].get("snippet")) and not search.stale
        # best match cannot refresh cheaply: it says so, and ctrl+r refreshes
        await pilot.press("down", "o")
        await pilot_until(pilot, lambda: search.shown is not None and search.shown.sort == "rank", "rank")
        writer.call("append_message", "finder", "user", content="zebrafish three")
        await pilot_until(pilot, lambda: search.stale, "the stale mark")
        status = widget_text(search.query_one("#search-status", Static))
        assert "results changed — ctrl+r" in status
        await pilot.press("ctrl+r")
        await pilot_until(pilot, lambda: len(search.hits) == 3 and not search.stale, "ctrl+r refresh")


# ------------------------------------------------------------------ hermes-agent 0.19.0 writing


@pytest.mark.peer
async def test_compression_mid_follow_by_hermes_agent_shows_in_lineage_and_l_jumps(peer_db: Peer) -> None:
    peer = peer_db
    peer.call("create_session", "chain-a", "cli", model="m")
    peer.call("append_message", "chain-a", "user", content="before compression")
    assert peer.db_path is not None
    app = live_app(peer.db_path)
    async with app.run_test(size=(140, 40)) as pilot:
        main = await open_live(pilot, "chain-a")
        lineage = main.query_one("#lineage", LineageTree)
        peer.call("append_message", "chain-a", "assistant", content="answer before")
        await pilot_until(pilot, lambda: "answer before" in transcript_text(main), "peer message followed")
        # upstream's compression: end the parent, then create the child with parent_session_id
        peer.call("end_session", "chain-a", "compression")
        peer.call("create_session", "chain-b", "cli", model="m", parent_session_id="chain-a")
        peer.call("append_message", "chain-b", "user", content="after compression")
        await pilot_until(pilot, lambda: lineage.live_tip == "chain-b", "the child in the lineage")
        title = widget_text(main.query_one("#transcript-title", Static))
        assert "continued in chain-b — L" in title
        assert any(n["id"] == "chain-b" for n in (lineage.lineage or {}).get("nodes", []))
        await pilot.press("L")
        await pilot_until(pilot, lambda: main.current_session == "chain-b", "L opened the tip")
        await pilot_until(pilot, lambda: "after compression" in transcript_text(main), "the tip shown")
        peer.call("append_message", "chain-b", "assistant", content="still going")
        await pilot_until(pilot, lambda: "still going" in transcript_text(main), "following the tip")


@pytest.mark.peer
async def test_the_open_sessions_lineage_node_keeps_its_count_while_following(peer_db: Peer) -> None:
    """Found in tmux: the list and the title said 40 messages, the lineage node still 30."""
    peer = peer_db
    peer.call("create_session", "count-a", "cli", model="m")
    peer.call("append_message", "count-a", "user", content="first")
    assert peer.db_path is not None
    app = live_app(peer.db_path)
    async with app.run_test(size=(140, 40)) as pilot:
        main = await open_live(pilot, "count-a")
        lineage = main.query_one("#lineage", LineageTree)

        def self_label() -> str:
            node = next(n for n in lineage._node_of.values() if n.data and n.data.get("is_self"))
            return str(node.label)

        assert " 1 msgs" in self_label()
        for i in range(3):
            peer.call("append_message", "count-a", "assistant", content=f"reply {i}")
        await pilot_until(pilot, lambda: "reply 2" in transcript_text(main), "the replies followed")
        await pilot_until(pilot, lambda: " 4 msgs" in self_label(), "the node's count")
        peer.call("set_session_title", "count-a", "Renamed meanwhile")
        peer.call("append_message", "count-a", "user", content="after the rename")
        await pilot_until(pilot, lambda: "Renamed meanwhile" in self_label(), "the node's title")


# ------------------------------------------------------------------ the follower itself


def test_follower_holds_no_read_transaction_and_slows_down_when_idle(demo_db: Path) -> None:
    """Between polls the follower's connection is outside any transaction (a writer's TRUNCATE
    checkpoint gets through), and after a quiet spell it polls at the slow rate."""
    reports: list[LiveUpdate] = []
    with SessionDB(demo_db, migrate=False) as db:
        following = follow_one(db, reports.append, fast_s=0.02, slow_s=0.5, idle_input_s=0.2, hot_for_s=0.1)
        follower = following.follower(None)  # the store's rhythm
        assert follower is not None
        thread = threading.Thread(target=following.run)
        thread.start()
        try:
            w = Writer(demo_db)
            try:
                w.call("create_session", "probe", "cli")
                wait_until(lambda: any(r.changes.new_sessions for r in reports), "the new session reported")
                assert [s["id"] for r in reports for s in r.changes.new_sessions] == ["probe"]
                # past idle_input_s without a change or a key: the slow rate (that its loop then
                # waits that long is test_live_follow_rate's, on an injected clock)
                wait_until(lambda: follower.interval == 0.5, "the slow rate once quiet")
                follower.touch()
                assert follower.interval == 0.02
                # a TRUNCATE checkpoint by another process is not blocked: no reader pins the WAL
                out = subprocess.run(
                    [
                        sys.executable,
                        "-c",
                        "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); "
                        "print(c.execute('PRAGMA wal_checkpoint(TRUNCATE)').fetchone()[0])",
                        str(demo_db),
                    ],
                    capture_output=True,
                    text=True,
                    timeout=30,
                    check=True,
                )
                assert out.stdout.strip() == "0", out
            finally:
                w.close()
        finally:
            following.stop()
            thread.join(WAIT_S)
        assert not thread.is_alive()
