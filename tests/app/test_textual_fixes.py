"""The strip-cycle fix: same results as Textual's methods, and no strip that only a full
collection can free."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.strip import Strip

from hermes_tui.app import textual_fixes
from hermes_tui.app.widgets.transcript import MessagePart


@pytest.fixture(autouse=True)
def _installed() -> None:
    textual_fixes.install()


@pytest.fixture
def no_gc() -> Iterator[None]:
    """Only reference counting frees anything while the test runs."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _alive(marker: str) -> bool:
    return any(
        isinstance(o, Strip) and any(seg.text == marker for seg in o._segments) for o in gc.get_objects()
    )


def test_a_strip_divided_and_crop_extended_to_its_own_length_is_freed_at_once(no_gc: None) -> None:
    marker = "a-line-only-this-test-paints"
    strip = Strip([Segment(marker)])
    assert strip.divide([strip.cell_length]) == [strip]
    assert strip.crop_extend(0, strip.cell_length, None) is strip
    del strip
    assert not _alive(marker)


def test_textual_alone_keeps_such_a_strip_until_a_full_collection(no_gc: None) -> None:
    """The cycle the fix removes is real (if Textual stops caching ``self``, drop the fix)."""
    marker = "a-line-textual-keeps"
    strip = Strip([Segment(marker)])
    textual_fixes._divide(strip, [strip.cell_length])
    del strip
    assert _alive(marker)
    gc.collect()
    assert not _alive(marker)


segments = st.lists(
    st.tuples(st.text(alphabet="ab 漢字", min_size=1, max_size=6), st.sampled_from([None, Style(bold=True)])),
    min_size=1,
    max_size=5,
)


@given(segments, st.lists(st.integers(0, 40), max_size=4), st.integers(-2, 40), st.integers(0, 40))
def test_results_match_textuals(
    parts: list[tuple[str, Style | None]], cuts: list[int], start: int, end: int
) -> None:
    def make() -> Strip:
        return Strip([Segment(text, style) for text, style in parts])

    ours, theirs = make(), make()
    sorted_cuts = sorted(set(cuts)) + [ours.cell_length]
    assert [list(s) for s in ours.divide(sorted_cuts)] == [
        list(s) for s in textual_fixes._divide(theirs, sorted_cuts)
    ]
    style = Style(italic=True)
    assert list(ours.crop_extend(start, end, style)) == list(
        textual_fixes._crop_extend(theirs, start, end, style)
    )
    assert (
        ours.crop_extend(start, end, style).cell_length
        == textual_fixes._crop_extend(theirs, start, end, style).cell_length
    )


def test_install_is_idempotent() -> None:
    textual_fixes.install()
    textual_fixes.install()
    assert Strip.divide is textual_fixes._divide_no_self_cycle
    assert Strip.crop_extend is textual_fixes._crop_extend_no_self_cycle


async def test_a_message_part_lets_go_of_its_lines_when_unmounted() -> None:
    """A dropped part is a cycle until a full collection; its rendered lines must not wait."""
    from textual.app import App, ComposeResult
    from textual.containers import VerticalScroll

    part = MessagePart(Text("one line\n" * 30), classes="message")

    class Host(App[None]):
        def compose(self) -> ComposeResult:
            yield VerticalScroll(part)

    async with Host().run_test(size=(60, 20)) as pilot:
        await pilot.pause()
        assert part._visual_cache and part._memo is not None and part._memo._segments
        assert part._styles_cache._cache
        await part.remove()
        await pilot.pause()
        assert part._visual_cache == {}
        assert part._memo._segments == {}
        assert not part._styles_cache._cache
