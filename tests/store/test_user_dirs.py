"""One cache folder and one data folder, from `platformdirs`, in the same place as before."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from hermes_tui import demo
from hermes_tui.state import user_cache_dir, user_data_dir
from hermes_tui.state.paths import earlier_user_data_dirs
from hermes_tui.state.side_index import side_index_path

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the XDG layout is Linux's")


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    return tmp_path


@pytest.mark.parametrize("xdg", [None, "abs", "~/tilde", "relative/x"])
def test_the_demo_and_the_side_index_share_the_one_cache_folder(
    home: Path, monkeypatch: pytest.MonkeyPatch, xdg: str | None
) -> None:
    if xdg is not None:
        monkeypatch.setenv("XDG_CACHE_HOME", str(home / "c") if xdg == "abs" else xdg)
    root = user_cache_dir()
    assert root.is_absolute()
    assert demo.cache_dir() == root
    assert demo.demo_path().parent == root
    assert side_index_path(home / "state.db").parent == root / "cjk-side"


@linux
def test_linux_locations_are_the_ones_used_before(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert user_cache_dir() == home / ".cache" / "hermes-tui"
    assert user_data_dir() == home / ".local" / "share" / "hermes-tui"
    assert earlier_user_data_dirs() == []
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / "xc"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / "xd"))
    assert user_cache_dir() == home / "xc" / "hermes-tui"
    assert user_data_dir() == home / "xd" / "hermes-tui"
    assert earlier_user_data_dirs() == []


@linux
def test_a_data_folder_an_earlier_version_used_is_still_named(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`~` in `$XDG_DATA_HOME` was expanded before; XDG (and platformdirs) ignore a relative
    value, so the folder moved: the earlier one is reported so the trash can still read it."""
    monkeypatch.setenv("XDG_DATA_HOME", "~/mydata")
    assert user_data_dir() == home / ".local" / "share" / "hermes-tui"
    assert earlier_user_data_dirs() == [home / "mydata" / "hermes-tui"]
