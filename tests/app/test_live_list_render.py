"""Live reorders of a 100k-session list cost the event loop only what changed on screen (issue #18):
rows that merely moved, or were fetched again unchanged, are drawn from the line cache; a row's
fresh data is drawn; the selected row keeps its screen line; the loop never scans the whole order
to find the selected session; the screen's header is laid out again only when a count changed."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from textual.app import App, ComposeResult

from hermes_tui.app.controllers.messages import LiveOrder
from hermes_tui.app.screens.main import MainScreen
from hermes_tui.app.stores import OrderResult
from hermes_tui.app.widgets.session_list import PAGE_SIZE, SessionList

from ._support import make_app, settle

N = 100_000
NOW = 1_750_000_000.0
SIZE = (120, 40)


class LiveListApp(App[None]):
    """A SessionList over 100k in-memory sessions whose message counts a test can change."""

    def __init__(self) -> None:
        super().__init__()
        self.ids = [f"s{i:06d}" for i in range(N)]
        self.extra: dict[str, int] = {}  # messages appended "by a writer", per session
        self.highlighted: list[str | None] = []  # SessionList.Highlighted, as posted
        self.clock = NOW

    def row(self, sid: str) -> dict[str, Any]:
        i = int(sid[1:])
        return {
            "id": sid,
            "title": f"session {i}",
            "source": "cli",
            "model": "openai/gpt-5",
            "message_count": 3 + self.extra.get(sid, 0),
            "input_tokens": i,
            "output_tokens": 10,
            "estimated_cost_usd": 0.5,
            "actual_cost_usd": None,
            "last_active": NOW - i * 60,
            "started_at": NOW - i * 60,
            "edge_kind": None,
            "child_count": 0,
            "archived": 0,
        }

    def rows(self, ids: Sequence[str]) -> list[dict[str, Any]]:
        return [self.row(i) for i in ids]

    def compose(self) -> ComposeResult:
        yield SessionList(self.rows, now=lambda: self.clock, id="sessions")

    def on_mount(self) -> None:
        self.query_one(SessionList).set_order(list(self.ids))

    def on_session_list_highlighted(self, message: SessionList.Highlighted) -> None:
        self.highlighted.append(message.session_id)


def one_store_order(ids: list[str], store_total: int) -> OrderResult:
    """A live order of one store as its worker posts it."""
    return OrderResult(list(ids), None, {}, {}, len(ids), extra={"store_total": store_total})  # type: ignore[arg-type]


def live_key(main: MainScreen) -> tuple[Any, ...]:
    """What a live order answers: the list's filter, order, profiles and "active now"."""
    return (main.filter, main.order, main.profile_filter, main.active_only)


def drawn(sl: SessionList, index: int) -> str:
    """The text list row ``index`` is drawn with (it must be on screen)."""
    return "".join(seg.text for seg in sl.render_line(index - int(sl.scroll_offset.y) + 1))


def count_row_strips(sl: SessionList) -> list[str]:
    """Record the id of every row rendered from scratch (`_row_strip`) from now on."""
    calls: list[str] = []
    original = sl._row_strip

    def counting(row: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        calls.append(row["id"])
        return original(row, *args, **kwargs)

    sl._row_strip = counting  # type: ignore[method-assign]
    return calls


async def test_live_reorder_redraws_only_the_rows_that_changed() -> None:
    app = LiveListApp()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        sl = app.query_one(SessionList)
        sl.cursor = 20
        await settle(pilot)
        chosen = sl.selected_id
        calls = count_row_strips(sl)

        # A writer appends to the session on row 5: it becomes the most recent, row 0.
        moved = app.ids.pop(5)
        app.ids.insert(0, moved)
        app.extra[moved] = 1
        sl.update_order(list(app.ids))
        await settle(pilot)
        await pilot.pause()
        assert calls == [moved]  # every other visible row only moved (or not even that)
        assert "   4 " in drawn(sl, 0) and "session 5" in drawn(sl, 0)  # its fresh count is drawn
        assert sl.selected_id == chosen and sl.cursor == 20 and int(sl.scroll_offset.y) == 0

        # A brand-new session on top: one row drawn; the selection moves down a line with its row.
        calls.clear()
        app.ids.insert(0, "s999999")
        sl.update_order(list(app.ids))
        await settle(pilot)
        await pilot.pause()
        assert calls == ["s999999"]
        assert sl.selected_id == chosen and sl.cursor == 21 and int(sl.scroll_offset.y) == 0


async def test_a_row_that_stays_put_shows_its_fresh_data() -> None:
    """The rows on screen are fetched again after a reorder: a changed count must be drawn even
    though the row kept its place (the cache compares the row's data, not the list's version)."""
    app = LiveListApp()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        sl = app.query_one(SessionList)
        assert "   3 " in drawn(sl, 2)
        for n in (1, 2):
            app.extra["s000002"] = n
            sl.update_order(list(app.ids))
            await settle(pilot)
            assert sl.row_at(2) is not None and sl.row_at(2)["message_count"] == 3 + n  # type: ignore[index]
            assert f"   {3 + n} " in drawn(sl, 2)


def count_drawn_lines(sl: SessionList, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Record the screen line of every line the list draws from now on (0 is the header)."""
    lines: list[int] = []
    render_line = sl.render_line

    def counting(y: int) -> Any:
        lines.append(y)
        return render_line(y)

    monkeypatch.setattr(sl, "render_line", counting)
    return lines


async def test_a_live_change_repaints_only_the_lines_that_show_something_else(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Not just cheap rows: the lines that did not change are not drawn (nor composited) again."""
    app = LiveListApp()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        sl = app.query_one(SessionList)
        sl.cursor = 20
        await settle(pilot)
        moved = app.ids.pop(5)
        app.ids.insert(0, moved)
        sl.update_order(list(app.ids))  # the first live change of the minute repaints every line
        await settle(pilot)
        lines = count_drawn_lines(sl, monkeypatch)

        moved = app.ids.pop(7)  # row 7 becomes row 0 with a new message: rows 0-7 shift down by one
        app.ids.insert(0, moved)
        app.extra[moved] = 1
        sl.update_order(list(app.ids))
        await settle(pilot)
        await pilot.pause()
        assert set(lines) == set(range(1, 9))  # screen lines 1-8 (rows 0-7); not the header, not 9-38
        assert "   4 " in drawn(sl, 0) and "session 7" in drawn(sl, 0)

        lines.clear()  # a live status for row 3 only: that line alone
        sl.set_live({app.ids[3]: {"state": "working"}})
        await pilot.pause()
        await pilot.pause()
        assert set(lines) == {4} and "working" in drawn(sl, 3)

        # Statuses fetched again with a page carry `idle_s` to the second: the same label draws
        # nothing (it redrew every row on screen with each page fetched while an agent wrote).
        idle = {k: {"state": "idle", "idle_s": 125.0} for k in app.ids[10:20]}
        sl.set_live(idle)
        await pilot.pause()
        await pilot.pause()
        lines.clear()
        sl.set_live({k: {**v, "idle_s": v["idle_s"] + 7} for k, v in idle.items()})
        await pilot.pause()
        await pilot.pause()
        assert lines == [] and sl.live[app.ids[10]]["idle_s"] == 132.0
        sl.set_live({app.ids[11]: {"state": "idle", "idle_s": 185.0}})  # 2m -> 3m: that line alone
        await pilot.pause()
        await pilot.pause()
        assert set(lines) == {12} and "idle 3m" in drawn(sl, 11)

        lines.clear()  # a minute later the relative times move on: the next change repaints all
        app.clock += 60
        app.ids.insert(0, app.ids.pop(9))
        sl.update_order(list(app.ids))
        await settle(pilot)
        await pilot.pause()
        assert set(range(0, SIZE[1] - 2)) <= set(lines)


class CountingIndex(list[str]):
    """An order that records the bounds of every `index` lookup."""

    lookups: list[tuple[int, int]]

    def index(self, value: Any, start: Any = 0, stop: Any = None) -> int:  # type: ignore[override]
        stop = len(self) if stop is None else min(stop, len(self))
        self.lookups.append((start, stop))
        return super().index(value, start, stop)


def counting_order(ids: list[str]) -> CountingIndex:
    order = CountingIndex(ids)
    order.lookups = []
    return order


async def test_scrolled_far_down_the_selected_row_keeps_its_line_without_scanning_the_order() -> None:
    app = LiveListApp()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        sl = app.query_one(SessionList)
        sl.cursor = 60_000
        await settle(pilot)
        chosen, top = sl.selected_id, int(sl.scroll_offset.y)
        line = sl.cursor - top
        assert top > 0

        app.ids[0:0] = ["n1", "n2", "n3"]  # three new sessions above
        order = counting_order(app.ids)
        sl.update_order(order)
        assert sl.selected_id == chosen and sl.cursor == 60_003
        assert int(sl.scroll_offset.y) == top + 3 and sl.cursor - int(sl.scroll_offset.y) == line
        # found near where it was: the loop never walked 60k ids
        assert order.lookups and all(
            stop - start <= 2 * SessionList.NEAR_ROWS + 1 for start, stop in order.lookups
        )
        await settle(pilot)

        # Moved far (a different sort, say): still found, and still on its screen line.
        app.ids.remove(chosen)  # type: ignore[arg-type]
        app.ids.insert(90_000, chosen)  # type: ignore[arg-type]
        sl.update_order(counting_order(app.ids))
        assert sl.selected_id == chosen and sl.cursor == 90_000
        assert sl.cursor - int(sl.scroll_offset.y) == line
        await settle(pilot)
        assert chosen is not None and f"session {int(chosen[1:])}" in drawn(sl, 90_000)


async def test_a_frame_reads_the_widget_style_once_not_per_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each line used to read `rich_style` and the content region (a walk up the DOM, ~60 µs)."""
    app = LiveListApp()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        sl = app.query_one(SessionList)
        reads: list[int] = []
        original = SessionList.rich_style

        def counting(self: SessionList) -> Any:
            reads.append(1)
            return original.fget(self)  # type: ignore[attr-defined]

        monkeypatch.setattr(SessionList, "rich_style", property(counting))
        lines: list[int] = []
        render_line = sl.render_line

        def count_lines(y: int) -> Any:
            lines.append(y)
            return render_line(y)

        monkeypatch.setattr(sl, "render_line", count_lines)
        sl.refresh()
        await pilot.pause()
        await pilot.pause()
        assert len(lines) >= SIZE[1] - 2  # the whole list was drawn ...
        assert len(reads) <= 2  # ... with one style read per frame


async def test_live_order_lays_the_header_out_only_when_a_count_changes(demo_db: Path) -> None:
    app = make_app(demo_db)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        main = pilot.app.screen
        assert isinstance(main, MainScreen)
        sl = main.session_list
        infos: list[Any] = []
        original = main.header.show
        main.header.show = lambda text: (infos.append(text), original(text))  # type: ignore[method-assign,func-returns-value]
        ids = list(sl._ids)
        total = main.store_total or len(ids)
        title = str(sl.border_title)

        reordered = [ids[3], *ids[:3], *ids[4:]]  # a session became the most recent: same counts
        main._live_order(LiveOrder(one_store_order(reordered, total), live_key(main)))
        assert list(sl._ids) == reordered and infos == [] and str(sl.border_title) == title

        gone = reordered[:-1]  # one session deleted elsewhere: the counts change
        main._live_order(LiveOrder(one_store_order(gone, total - 1), live_key(main)))
        assert len(infos) == 1 and f"{len(gone):,} sessions" in str(infos[0])
        assert str(sl.border_title).startswith(f"Sessions {len(gone):,}")
        await settle(pilot)


async def test_the_header_set_again_unchanged_is_not_repainted(
    demo_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A repaint of the header line widens a frame's update to the whole screen (the box around
    every change), and live changes set the same header several times a second."""
    from textual.widgets import Static

    app = make_app(demo_db)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        main = pilot.app.screen
        assert isinstance(main, MainScreen)
        info = main.query_one("#info", Static)
        updates: list[Any] = []
        original = Static.update

        def counting(self: Static, *args: Any, **kwargs: Any) -> None:
            if self is info:
                updates.append(args)
            original(self, *args, **kwargs)

        monkeypatch.setattr(Static, "update", counting)
        main.header.update()
        main.header.update()
        assert updates == []
        main.store_total = None
        main.session_list._ids = main.session_list._ids[:-1]  # the count changes: repainted once
        main.header.update()
        main.header.update()
        assert len(updates) == 1


async def test_a_burst_of_live_reorders_fetches_the_rows_on_screen_once() -> None:
    """Eight agents writing change the order ~10 times a second: the rows on screen are fetched
    again once per `ROW_REFRESH_S`, not once per change, and the last counts still show."""
    app = LiveListApp()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        sl = app.query_one(SessionList)
        fetched: list[int] = []
        rows = sl.row_source
        assert rows is not None
        sl.row_source = lambda ids: (fetched.append(len(ids)), rows(ids))[1]
        app.highlighted.clear()
        for n in range(1, 11):
            app.extra["s000004"] = n
            sl.update_order(list(app.ids))
        await settle(pilot)
        assert 1 <= len(fetched) <= 2  # the visible page(s), once
        assert "   13 " in drawn(sl, 4)
        # A refresh of rows on screen does not announce the cursor's row again: that reopened
        # its session, which a delete may just have removed ("session not found").
        assert app.highlighted == []


async def test_rows_fetched_before_a_live_reorder_show_if_their_page_still_holds_them() -> None:
    app = LiveListApp()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        sl = app.query_one(SessionList)
        sl.row_source = None  # no fetch of its own: only the rows posted below can show
        app.extra["s000001"] = 5
        fetched = app.rows(list(app.ids[:PAGE_SIZE]))
        before = sl._generation
        sl.update_order(list(app.ids))  # a live reorder meanwhile, every row in its place
        sl.post_message(SessionList.PageLoaded(before, 0, fetched))
        await pilot.pause()
        await pilot.pause()
        assert sl.row_at(1)["message_count"] == 8  # type: ignore[index]

        moved = app.ids.pop(3)  # a reorder that moves rows of the page: the fetched rows wait
        app.ids.insert(0, moved)
        before = sl._generation
        sl.update_order(list(app.ids))
        sl._pages.clear()
        sl.post_message(
            SessionList.PageLoaded(before, 0, app.rows(fetched_ids := [r["id"] for r in fetched]))
        )
        await pilot.pause()
        await pilot.pause()
        assert fetched_ids != list(app.ids[:PAGE_SIZE]) and sl.row_at(1) is None

        stale = [{**r, "title": "STALE"} for r in app.rows(list(app.ids[:PAGE_SIZE]))]
        before = sl._generation
        sl.invalidate()  # a write by the browser itself: rows fetched before it never show
        sl.post_message(SessionList.PageLoaded(before, 0, stale))
        await pilot.pause()
        await pilot.pause()
        assert sl.row_at(1) is None


async def test_a_live_reorder_with_the_changed_rows_reads_no_page_again() -> None:
    """Following a writer, the live order brings the rows of the sessions it moved (the others
    kept their data): the moved row shows its fresh count at its new place, the rows on screen
    are not fetched again, and only the lines that show something else are drawn."""
    app = LiveListApp()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        sl = app.query_one(SessionList)
        fetched: list[int] = []
        rows = sl.row_source
        assert rows is not None
        sl.row_source = lambda ids: (fetched.append(len(ids)), rows(ids))[1]
        for n in range(1, 11):  # the writer's session becomes the newest, message after message
            app.extra["s000007"] = n
            if n == 1:
                app.ids.remove("s000007")
                app.ids.insert(0, "s000007")
            sl.update_order(list(app.ids), {"s000007": app.row("s000007")})
            await pilot.pause()
        await settle(pilot)
        assert fetched == []  # no page read again
        assert sl.key_at(0) == "s000007" and "   13 " in drawn(sl, 0)
        assert sl.row_at(1) is not None and sl.row_at(1)["id"] == "s000000"  # type: ignore[index]


async def test_a_live_reorder_without_the_changed_rows_reads_the_rows_on_screen_again() -> None:
    """A whole order read again (any row may have changed: a deletion, a reset, every
    `FULL_EVERY_S`) comes without rows: the rows on screen are fetched again."""
    app = LiveListApp()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        sl = app.query_one(SessionList)
        fetched: list[int] = []
        rows = sl.row_source
        assert rows is not None
        sl.row_source = lambda ids: (fetched.append(len(ids)), rows(ids))[1]
        app.extra["s000002"] = 4  # e.g. a token total the follower cannot see
        sl.update_order(list(app.ids))
        await settle(pilot)
        assert fetched and "    7 " in drawn(sl, 2)
