"""CLI: option parsing, default path resolution, demo caching, `sessions` hand-off."""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes_tui import cli
from hermes_tui.app.app import HermesApp
from hermes_tui.cli import browse


def test_default_path_follows_hermes_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HERMES_HOME", str(tmp_path / "hh"))
    assert browse.current_store_path() == tmp_path / "hh" / "state.db"
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("HERMES_HOME", "  ")
    assert browse.current_store_path() == tmp_path / ".hermes" / "state.db"


def test_parser_options() -> None:
    args = browse.build_parser().parse_args(["--db", "x.db", "--read-only", "--theme", "nord"])
    assert args.db == Path("x.db") and args.read_only and args.theme == "nord" and not args.demo


def test_sessions_subcommand_dispatch(monkeypatch: pytest.MonkeyPatch) -> None:
    from hermes_tui.cli import sessions

    seen: list[list[str]] = []
    monkeypatch.setattr(sessions, "main", lambda argv: seen.append(list(argv)) or 3)
    assert cli.main(["sessions", "list", "--json"]) == 3
    assert seen == [["list", "--json"]]


def test_main_builds_app_for_missing_db(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    ran: list[HermesApp] = []
    monkeypatch.setattr(HermesApp, "run", lambda self: ran.append(self))
    assert cli.main(["--read-only"]) == 0
    assert ran and ran[0].db_path == Path.home() / ".hermes" / "state.db" and ran[0].read_only
    assert "No session database" in capsys.readouterr().err
    assert not (Path.home() / ".hermes").exists()


def test_unknown_theme(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(HermesApp, "run", lambda self: None)
    assert cli.main(["--theme", "no-such-theme"]) == 2


def test_demo_is_built_once_and_cached(monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[HermesApp] = []
    monkeypatch.setattr(HermesApp, "run", lambda self: ran.append(self))
    assert cli.main(["--demo"]) == 0
    path = ran[0].db_path
    assert path.exists() and ".cache" in str(path)
    stamp = path.stat().st_mtime_ns
    assert cli.main(["--demo"]) == 0
    assert ran[1].db_path == path and path.stat().st_mtime_ns == stamp
