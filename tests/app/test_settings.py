"""Remembered settings: the file's round trip, damaged files, when it is written,
`--reset-settings` / `--settings`, and the app starting from what was remembered."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from textual.widgets import Checkbox, Input

from hermes_tui import cli
from hermes_tui.app import settings as st
from hermes_tui.app.app import HermesApp
from hermes_tui.app.screens.main import MainScreen

from ._support import make_app, settle


def remembered(**changes: object) -> st.Settings:
    return st.Settings(**changes)  # type: ignore[arg-type]


def test_round_trip_is_private_and_keeps_unknown_keys(tmp_path: Path) -> None:
    path = tmp_path / "cfg" / "settings.toml"
    path.parent.mkdir()
    path.write_text('future = "kept"\n[panes]\nsplitter = "kept too"\n')
    loaded = st.load(path)
    assert loaded.settings == st.Settings() and not loaded.damaged
    assert "unknown key future ignored" in loaded.warning
    wanted = remembered(
        theme="nord",
        order="tokens",
        source="cli",
        filter_text="deploy",
        active_now=True,
        list_width=64,
        show_list=False,
        show_lineage=False,
    )
    assert st.save(path, wanted, loaded.document) == ""
    again = st.load(path)
    assert again.settings == wanted
    assert again.document["future"] == "kept" and again.document["panes"]["splitter"] == "kept too"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert sorted(p.name for p in path.parent.iterdir()) == ["settings.toml"]  # no temp file left


def test_missing_file_is_defaults_without_warning(tmp_path: Path) -> None:
    loaded = st.load(tmp_path / "nothing.toml")
    assert loaded.settings == st.Settings() and loaded.warning == "" and not loaded.damaged


@pytest.mark.parametrize(
    "content",
    [b"theme = [unclosed", b"\xff\xfe not utf-8", b"panes = 3\n", b"x" * (st.MAX_BYTES + 10)],
    ids=["bad-toml", "not-utf8", "section-not-table", "too-large"],
)
def test_unreadable_file_gives_defaults_and_one_line(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "settings.toml"
    path.write_bytes(content)
    loaded = st.load(path)
    assert loaded.settings == st.Settings()
    assert loaded.damaged and loaded.warning.startswith("Settings ") and "\n" not in loaded.warning
    assert path.read_bytes() == content


def test_ill_typed_keys_take_defaults_others_kept(tmp_path: Path) -> None:
    path = tmp_path / "settings.toml"
    path.write_text(
        'theme = 7\norder = "alphabetical"\n[filters]\nsource = "cli"\nactive_now = "yes"\n'
        "[panes]\nlist_width = 95\nlist = false\ntranscript = 1\n"
    )
    loaded = st.load(path)
    assert loaded.settings == remembered(source="cli", show_list=False)
    for bad in ("theme = 7", "order = 'alphabetical'", "filters.active_now", "panes.list_width = 95"):
        assert bad in loaded.warning
    assert "panes.transcript = 1" in loaded.warning
    assert loaded.damaged


def test_hostile_key_is_inert_in_the_warning(tmp_path: Path) -> None:
    path = tmp_path / "settings.toml"
    path.write_text('"\\u001b]52;c;evil\\u0007" = 1\ntheme = "\\u001b[31m"\n')
    warning = st.load(path).warning
    assert "\x1b" not in warning and "\x07" not in warning


def test_first_write_over_a_damaged_file_keeps_it_as_bad(tmp_path: Path) -> None:
    path = tmp_path / "settings.toml"
    path.write_text('order = "nope"\nmine = 1\n')
    reports: list[tuple[str, str]] = []
    writer = st.SettingsWriter(st.load(path), report=lambda sev, text: reports.append((sev, text)), delay=0)
    writer.update(remembered(order="cost"))
    writer.close()
    assert st.backup_path(path).read_text() == 'order = "nope"\nmine = 1\n'
    again = st.load(path)
    assert again.settings.order == "cost" and again.document["mine"] == 1 and not again.damaged
    assert reports and reports[0][0] == "warning" and "settings.toml.bad" in reports[0][1]


def test_write_goes_through_a_symlink(tmp_path: Path) -> None:
    real = tmp_path / "dotfiles" / "hermes.toml"
    real.parent.mkdir()
    real.write_text('order = "started"\n')
    link = tmp_path / "settings.toml"
    link.symlink_to(real)
    st.save(link, remembered(order="cost"))
    assert link.is_symlink() and st.load(real).settings.order == "cost"


def test_writer_debounces_writes_in_another_thread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "settings.toml"
    threads: list[str] = []
    real_save = st.save

    def spy(*args: object, **kw: object) -> str:
        threads.append(threading.current_thread().name)
        return real_save(*args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(st, "save", spy)
    writer = st.SettingsWriter(st.load(path), delay=0.2)
    for width in (56, 60, 64):
        writer.update(remembered(list_width=width))
    writer.update(remembered())  # back to what the file says: nothing to write
    assert not path.exists()
    writer.update(remembered(list_width=40))
    for _ in range(50):
        if path.exists():
            break
        threading.Event().wait(0.05)
    writer.close()
    assert threads == ["hermes-settings-write"] and st.load(path).settings.list_width == 40


def test_write_error_is_reported_not_raised(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    reports: list[tuple[str, str]] = []
    writer = st.SettingsWriter(
        st.load(blocker / "settings.toml"), report=lambda sev, text: reports.append((sev, text)), delay=0
    )
    writer.update(remembered(order="cost"))
    writer.close()
    assert reports and reports[0][0] == "error" and "Could not save settings" in reports[0][1]


def test_default_path_follows_env_and_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HERMES_TUI_CONFIG", str(tmp_path / "elsewhere.toml"))
    assert st.default_path() == tmp_path / "elsewhere.toml"
    monkeypatch.delenv("HERMES_TUI_CONFIG")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert st.default_path() == tmp_path / "xdg" / "hermes-tui" / "settings.toml"


def test_reset_settings_deletes_the_file(private_settings: Path, capsys: pytest.CaptureFixture[str]) -> None:
    st.save(private_settings, remembered(order="cost"))
    assert cli.main(["--reset-settings"]) == 0
    assert not private_settings.exists()
    assert f"Deleted {private_settings}" in capsys.readouterr().out
    assert cli.main(["--reset-settings"]) == 0
    assert "nothing to reset" in capsys.readouterr().out


def test_settings_flag_points_elsewhere(
    tmp_path: Path,
    private_settings: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    other = tmp_path / "other.toml"
    st.save(other, remembered(theme="nord"))
    st.save(private_settings, remembered(theme="gruvbox"))
    ran: list[HermesApp] = []
    monkeypatch.setattr(HermesApp, "run", lambda self: ran.append(self))
    assert cli.main(["--settings", str(other)]) == 0
    assert ran[0].settings_writer.path == other and ran[0].theme_name == "nord"
    assert cli.main(["--theme", "dracula"]) == 0  # the flag wins for this run, remembered stays
    assert ran[1].theme_name == "dracula" and ran[1].settings.theme == "gruvbox"
    assert cli.main(["--reset-settings", "--settings", str(other)]) == 0
    assert not other.exists() and private_settings.exists()


async def test_app_starts_from_remembered_settings(demo_db: Path, private_settings: Path) -> None:
    st.save(
        private_settings,
        remembered(
            theme="nord", order="messages", source="telegram", filter_text="postgres", active_now=False
        ),
    )
    app = make_app(demo_db, theme=None)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, MainScreen)
        assert app.theme == "nord" and screen.order == "messages"
        assert screen.filter.sources == ("telegram",) and screen.filter.text == "postgres"
        assert screen.query_one("#filter-text", Input).value == "postgres"
        assert screen.query_one("#filter-source").value == "telegram"  # type: ignore[attr-defined]
        assert "source=telegram" in str(screen.session_list.border_title)
        assert "title~postgres" in str(screen.session_list.border_title)
        rows = [screen.session_list.row_at(i) for i in range(screen.session_list.total)]
        # Hermes' list: the runbook's compression chain (3 sessions) is listed once, as its tip.
        assert len(rows) == 4 and all(r and r["source"] == "telegram" for r in rows)
    assert app.settings_writer.writes == 0  # nothing changed: nothing written


async def test_active_now_is_restored(demo_db: Path, private_settings: Path) -> None:
    st.save(private_settings, remembered(active_now=True))
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, MainScreen)
        assert screen.active_only and screen.query_one("#filter-active", Checkbox).value
        assert "active now" in str(screen.session_list.border_title)


async def test_browsing_writes_nothing(demo_db: Path, private_settings: Path) -> None:
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("down", "down", "enter")
        await settle(pilot)
        await pilot.press("escape", "slash", *"postgres")
        await settle(pilot)
        await pilot.press("escape")
        await settle(pilot)
        await pilot.press("ctrl+r")  # reload: the list re-runs its order, equal to the settings
        await settle(pilot)
    assert not private_settings.exists()
    assert app.settings_writer.writes == 0


async def test_corrupt_file_warns_is_left_alone_then_kept_on_change(
    demo_db: Path, private_settings: Path
) -> None:
    private_settings.parent.mkdir(parents=True)
    private_settings.write_bytes(b"order = [broken\n")
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        toasts = [n.message for n in app._notifications]
        assert any("not valid TOML" in t for t in toasts), toasts
        await pilot.press("down", "enter")
        await settle(pilot)
        app.settings_writer.flush()
        assert private_settings.read_bytes() == b"order = [broken\n"
        await pilot.press("o")  # the user changes a setting: now it is written
        await settle(pilot)
        app.settings_writer.flush()
        await settle(pilot)
        assert st.load(private_settings).settings.order == "started"
        assert st.backup_path(private_settings).read_bytes() == b"order = [broken\n"
        assert any("settings.toml.bad" in n.message for n in app._notifications)


async def test_order_filter_and_theme_changes_are_remembered(demo_db: Path, private_settings: Path) -> None:
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("o", "o", "a")
        await settle(pilot)
        app.theme = "gruvbox"
        await settle(pilot)
    saved = st.load(private_settings).settings
    assert saved == remembered(theme="gruvbox", order="messages", active_now=True)
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("F")  # clear the filters: remembered too
        await settle(pilot)
    assert st.load(private_settings).settings.active_now is False


async def test_unknown_remembered_theme_warns(demo_db: Path, private_settings: Path) -> None:
    st.save(private_settings, remembered(theme="no-such-theme"))
    app = make_app(demo_db, theme=None)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert app.theme == "textual-dark"
        assert any("no-such-theme" in n.message for n in app._notifications)
    assert st.load(private_settings).settings.theme == "no-such-theme"  # not overwritten


async def test_picker_does_not_remember_its_source(demo_db: Path, private_settings: Path) -> None:
    from hermes_tui.app.app import PickOptions

    app = make_app(demo_db, pick=PickOptions(source="cli"))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, MainScreen) and screen.filter.sources == ("cli",)
    assert not private_settings.exists()


# ---------------------------------------------------------------- not a regular file (issue 33, 15)
LOAD_A_FIFO = """
import sys
from pathlib import Path
from hermes_tui.app import settings
print(settings.load(Path(sys.argv[1])).warning, flush=True)
"""


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")
def test_a_fifo_settings_path_is_refused_without_blocking(tmp_path: Path) -> None:
    """A plain open() of a FIFO waits for a writer forever (start-up hung on a blank screen): the
    load runs in a child with a timeout, so a regression fails here instead of hanging the suite."""
    fifo = tmp_path / "settings.toml"
    os.mkfifo(fifo)
    try:
        done = subprocess.run(
            [sys.executable, "-c", LOAD_A_FIFO, str(fifo)], capture_output=True, text=True, timeout=60
        )
    except subprocess.TimeoutExpired:
        pytest.fail("loading settings from a FIFO blocked")
    assert done.returncode == 0, done.stderr
    warning = done.stdout.strip()
    assert warning == (
        f"Settings {fifo}: not a regular file (a FIFO), not read (defaults used, file left as it is)"
    )
    with pytest.raises(OSError, match="is a FIFO, not a settings file"):
        st.save(fifo, remembered(order="cost"))  # and nothing is ever written over it
    assert stat.S_ISFIFO(fifo.stat().st_mode)


def test_a_folder_settings_path_gives_defaults_and_one_line(tmp_path: Path) -> None:
    loaded = st.load(tmp_path)
    assert loaded.settings == st.Settings() and not loaded.damaged
    assert loaded.warning.endswith(
        "not a regular file (a folder), not read (defaults used, file left as it is)"
    )


def test_reset_settings_on_a_folder_is_one_line_and_deletes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "settings.toml"
    folder.mkdir()
    (folder / "keep").write_text("mine")
    assert cli.main(["--reset-settings", "--settings", str(folder)]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err == f"hermes-tui: {folder} is a folder, not a settings file: nothing was deleted\n"
    assert (folder / "keep").read_text() == "mine"
