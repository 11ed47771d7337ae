"""SessionList against in-memory data of 100k rows: paging, bounded cache, keys, placeholders."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from textual.app import App, ComposeResult

from hermes_tui.app.widgets.session_list import MAX_PAGES, PAGE_SIZE, SessionList, layout_columns

from ._support import settle

N = 100_000
NOW = 1_750_000_000.0


def fake_row(i: int) -> dict[str, Any]:
    return {
        "id": f"s{i:06d}",
        "title": f"[/INST] session {i}" if i % 2 else None,
        "preview": f"prompt {i}",
        "source": "cli",
        "model": "openai/gpt-5",
        "message_count": i % 50,
        "input_tokens": i,
        "output_tokens": 10,
        "estimated_cost_usd": 0.5,
        "actual_cost_usd": None,
        "last_active": NOW - i * 60,
        "started_at": NOW - i * 60,
        "edge_kind": "compression" if i % 7 == 0 else None,
        "child_count": 0,
        "archived": 0,
    }


class ListApp(App[None]):
    def __init__(self) -> None:
        super().__init__()
        self.fetched: list[int] = []
        self.ids = [f"s{i:06d}" for i in range(N)]

    def rows(self, ids: Sequence[str]) -> list[dict[str, Any]]:
        self.fetched.append(len(ids))
        return [fake_row(int(i[1:])) for i in ids]

    def compose(self) -> ComposeResult:
        yield SessionList(self.rows, now=lambda: NOW, id="sessions")

    def on_mount(self) -> None:
        self.query_one(SessionList).set_order(self.ids)


async def test_virtual_list_at_100k_fetches_only_pages() -> None:
    app = ListApp()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        sl = app.query_one(SessionList)
        assert sl.total == N
        assert sum(app.fetched) <= 3 * PAGE_SIZE  # the visible page (and neighbours), not 100k rows
        assert sl.selected_row is not None and sl.selected_row["id"] == "s000000"
        await pilot.press("end")
        await settle(pilot)
        assert sl.cursor == N - 1 and sl.selected_row is not None and sl.selected_row["id"] == f"s{N - 1:06d}"
        for _ in range(40):
            await pilot.press("pageup")
        await settle(pilot)
        assert sl.cursor == N - 1 - 40 * (sl.size.height - 1)
        assert len(sl._pages) <= MAX_PAGES
        assert sum(app.fetched) < 40 * PAGE_SIZE
        await pilot.press("home", "up")
        assert sl.cursor == 0


async def test_rows_render_literal_markup_and_placeholders() -> None:
    app = ListApp()
    async with app.run_test(size=(100, 30)) as pilot:
        sl = app.query_one(SessionList)
        await settle(pilot)
        line = "".join(seg.text for seg in sl.render_line(2))  # y=1 is index 0, y=2 index 1
        assert "[/INST] session 1" in line
        sl.invalidate()
        placeholder = "".join(seg.text for seg in sl.render_line(1))
        assert "…" in placeholder
        await settle(pilot)
        assert "prompt 0" in "".join(seg.text for seg in sl.render_line(1))


async def test_empty_list_and_highlight_messages() -> None:
    seen: list[Any] = []
    app = ListApp()
    async with app.run_test(size=(100, 30), message_hook=seen.append) as pilot:
        sl = app.query_one(SessionList)
        await settle(pilot)
        await pilot.press("down", "enter")
        await settle(pilot)
        assert any(isinstance(m, SessionList.Selected) and m.session_id == "s000001" for m in seen)
        sl.set_order([])
        await pilot.pause()
        assert sl.selected_id is None
        assert "No sessions" in "".join(seg.text for seg in sl.render_line(2))


def test_columns_fit_every_width() -> None:
    for width in (30, 40, 60, 80, 120, 200):
        cols = layout_columns(width)
        assert sum(w for _c, w in cols) + len(cols) - 1 <= max(width, 8 + 1 + 2 + 10 + 3)
    assert [c.key for c, _ in layout_columns(120)] == [
        "sel",
        "mark",
        "title",
        "source",
        "model",
        "msgs",
        "tokens",
        "cost",
        "live",
        "time",
    ]
    assert "model" not in [c.key for c, _ in layout_columns(60)]


def test_marks_are_checked_per_key_against_a_merged_list() -> None:
    """Reordering with marks must not iterate a merged list (that merges every store's whole
    order on the event loop): each mark is looked up instead; a plain list is scanned once."""
    from collections.abc import Sequence as Seq

    from hermes_tui.app.widgets.session_list import still_listed

    class Merged(Seq[tuple[str, str]]):
        def __init__(self, keys: list[tuple[str, str]]) -> None:
            self.keys = keys
            self.lookups = 0

        def __len__(self) -> int:
            return len(self.keys)

        def __getitem__(self, i: Any) -> Any:
            raise AssertionError("read by position")

        def __iter__(self) -> Any:
            raise AssertionError("iterated")

        def __contains__(self, key: object) -> bool:
            self.lookups += 1
            return key in self.keys

    merged = Merged([("work", "a"), ("home", "b"), ("home", "c")])
    marks = {("work", "a"), ("home", "gone")}
    assert still_listed(marks, merged) == {("work", "a")}
    assert merged.lookups == 2
    assert still_listed({"x", "y"}, ["y", "z"]) == {"y"}


async def test_a_reload_under_the_loading_cover_keeps_the_view() -> None:
    """Under the loading cover Textual gives the list no size. A reload then (the one after a
    delete, when its order took longer than a frame) scrolled as if the list were one row high:
    the view jumped by a row. The scroll to the cursor waits for the real size."""
    app = ListApp()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        sl = app.query_one(SessionList)
        height = sl.scrollable_content_region.height - 1
        ids = app.ids[:40]
        sl.set_order(ids)
        sl.cursor = height - 3  # near the bottom of the first screen
        await settle(pilot)
        assert int(sl.scroll_offset.y) == 0

        async def reload(keep: str) -> None:
            sl.loading = True
            await settle(pilot)
            assert sl.scrollable_content_region.height == 0  # what the cover does (the premise)
            sl.set_order([i for i in ids if i != ids[0]] if keep == ids[height - 2] else ids, keep=keep)
            sl.loading = False
            await settle(pilot)

        await reload(ids[height - 2])  # the first row went (a delete): the cursor's session moved up
        assert sl.selected_id == ids[height - 2]
        assert int(sl.scroll_offset.y) == 0
        await reload(ids[39])  # a kept session below the screen: scrolled to, once sized
        top = int(sl.scroll_offset.y)
        assert sl.selected_id == ids[39]
        assert top <= sl.cursor < top + height


class StyledListApp(ListApp):
    CSS = """
    SessionList > .session-list--untitled { color: #a0a0a0; }
    SessionList > .session-list--mark { color: #ffaa00; }
    SessionList > .session-list--working { color: #00cc00; }
    SessionList > .session-list--unread { color: #3399ff; }
    SessionList > .session-list--pinned { color: #ff5500; }
    """

    def rows(self, ids: Sequence[str]) -> list[dict[str, Any]]:
        rows = super().rows(ids)
        for row in rows:
            if row["id"] == "s000001":
                row.update(unread=True, pinned=1)
        return rows


def _segment_style(sl: SessionList, y: int, text: str) -> Any:
    """The style of the first segment of line `y` holding `text`."""
    return next(seg.style for seg in sl.render_line(y) if text in seg.text)


async def test_cell_styles_are_drawn() -> None:
    """A cell's own style reaches the screen: `Text.render` drops the style of a text without
    spans, so the untitled, mark and live styles never showed (regression)."""
    app = StyledListApp()
    async with app.run_test(size=(100, 30)) as pilot:
        sl = app.query_one(SessionList)
        await settle(pilot)
        sl.set_live({"s000000": {"state": "working", "idle_s": 5.0}})
        await pilot.pause()
        color = {
            name: sl.get_component_rich_style(f"session-list--{name}").color
            for name in ("untitled", "mark", "working", "unread", "pinned")
        }
        assert _segment_style(sl, 1, "prompt 0").color == color["untitled"]  # s000000: untitled
        assert _segment_style(sl, 1, "c").color == color["mark"]  # a compression continuation
        assert _segment_style(sl, 1, "● working").color == color["working"]
        assert _segment_style(sl, 2, "●").color == color["unread"]  # s000001: unread, pinned
        assert _segment_style(sl, 2, "*").color == color["pinned"]
        assert "●* [/INST] session 1" in "".join(seg.text for seg in sl.render_line(2))
