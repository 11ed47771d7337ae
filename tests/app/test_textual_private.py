"""The Textual tuning (`hermes_tui/app/textual_private.py`): installed by the app unless
`HERMES_TUI_TEXTUAL_TUNING=0`, the same results as Textual's methods, and a contract that fails
loudly when a Textual release no longer has what it relies on."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip

from hermes_tui.app import textual_private

from ._support import make_app


@pytest.fixture(autouse=True)
def _restored() -> Iterator[None]:
    """Every test leaves Textual's own methods in place (the tuning is process-wide)."""
    yield
    textual_private.uninstall()


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
    return any(isinstance(o, Strip) and any(seg.text == marker for seg in o) for o in gc.get_objects())


def test_this_textual_has_everything_the_tuning_relies_on() -> None:
    """The contract: when a Textual release renames one of these, this fails (and `install()`
    refuses) instead of the tuning silently doing nothing or breaking the screen."""
    assert textual_private.missing() == []


def test_install_refuses_loudly_when_textual_lacks_a_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(textual_private, "REQUIRED", ((Strip, "divide_renamed"),))
    with pytest.raises(textual_private.TextualChanged, match="Strip.divide_renamed"):
        textual_private.install()
    assert Strip.divide is textual_private._divide


def test_the_app_installs_the_tuning_unless_turned_off(
    demo_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(textual_private.ENV, "0")
    make_app(demo_db)
    assert not textual_private.installed()
    assert Strip.divide is textual_private._divide
    monkeypatch.delenv(textual_private.ENV)
    make_app(demo_db)
    assert textual_private.installed()
    assert Strip.divide is textual_private._divide_no_self_cycle


def test_an_app_on_a_textual_without_the_names_runs_untuned(
    demo_db: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.delenv(textual_private.ENV, raising=False)
    monkeypatch.setattr(textual_private, "REQUIRED", ((Strip, "divide_renamed"),))
    make_app(demo_db)
    assert not textual_private.installed()
    assert "Strip.divide_renamed" in caplog.text


def test_a_strip_cut_to_its_own_length_is_freed_at_once_when_installed(no_gc: None) -> None:
    textual_private.install()
    marker = "a-line-only-this-test-paints"
    strip = Strip([Segment(marker)])
    assert strip.divide([strip.cell_length]) == [strip]
    assert strip.crop_extend(0, strip.cell_length, None) is strip
    del strip
    assert not _alive(marker)


def test_textual_alone_keeps_such_a_strip_until_a_full_collection(no_gc: None) -> None:
    """The cycle the tuning removes is real (if Textual stops caching ``self``, drop the tuning)."""
    marker = "a-line-textual-keeps"
    strip = Strip([Segment(marker)])
    strip.divide([strip.cell_length])
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
    textual_private.install()

    def make() -> Strip:
        return Strip([Segment(text, style) for text, style in parts])

    ours, theirs = make(), make()
    sorted_cuts = sorted(set(cuts)) + [ours.cell_length]
    assert [list(s) for s in ours.divide(sorted_cuts)] == [
        list(s) for s in textual_private._divide(theirs, sorted_cuts)
    ]
    style = Style(italic=True)
    mine, textuals = (
        ours.crop_extend(start, end, style),
        textual_private._crop_extend(theirs, start, end, style),
    )
    assert list(mine) == list(textuals)
    assert mine.cell_length == textuals.cell_length
