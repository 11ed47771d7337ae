"""The words of `hermes-tui` and `hermes-tui sessions` (issue 33's text nits): counts of one read
singular, a rename conflict names its holder once, a mistyped command gets the nearest one, and
a bare `sessions` prints its help."""

from __future__ import annotations

import io
import json
import sys

import pytest

from hermes_tui import cli, formatting
from hermes_tui.state import SessionDB
from tests.cli._cli import run


@pytest.fixture(autouse=True)
def no_tty(monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))


def test_plural_is_singular_for_one_only() -> None:
    assert formatting.plural(1, "session") == "1 session"
    assert formatting.plural(0, "session") == "0 sessions"
    assert formatting.plural(1234, "batch", "batches") == "1,234 batches"
    assert formatting.plural(1, "entry", "entries") == "1 entry"


def test_counts_of_one_read_singular(db_path, capsys) -> None:
    """Deleting the one old session: "1 session (1 message …)", "Deleted 1 of 1 session in 1
    batch." (it said "1 sessions … in 1 batches")."""
    code, out, err = run(capsys, "delete", "old-one", "-y", "--db", db_path)
    assert code == 0, err
    assert "1 session (1 message incl. cascades):" in out
    assert "Deleted 1 of 1 session in 1 batch." in out
    assert "1 sessions" not in out and "1 batches" not in out
    code, out, _ = run(capsys, "prune", "--title", "tg-solo", "--dry-run", "--db", db_path)
    assert code == 0 and "1 session, 0 messages would be deleted" in out
    code, out, _ = run(capsys, "list", "--limit", "1", "--source", "telegram", "--db", db_path)
    # Hermes' list: tg-sub (a delegate sub-agent) is folded into its parent.
    assert code == 0 and out.rstrip().endswith("1 of 2 sessions (1 more: raise --limit)")


def test_list_of_one_session_says_session(tmp_path, capsys) -> None:
    path = tmp_path / "one.db"
    with SessionDB(path) as db:
        db.create_session("only", "cli")
    code, out, _ = run(capsys, "list", "--db", path)
    assert code == 0 and out.rstrip().endswith("1 of 1 session")


def test_rename_conflict_names_the_holder_once(db_path, capsys) -> None:
    code, _out, err = run(capsys, "rename", "tg-solo", "Docker fix", "--db", db_path)
    assert code == 8
    assert err.count("cli-docker") == 1, err  # the store's message names it; then where it is from
    assert "(cli, started " in err


def test_a_mistyped_subcommand_gets_the_nearest(db_path, capsys) -> None:
    code, _out, err = run(capsys, "lsit")
    assert code == 2 and "did you mean 'list'?" in err
    code, _out, err = run(capsys, "trash", "lst", "--db", db_path)
    assert code == 2 and "did you mean 'list'?" in err
    code, _out, err = run(capsys, "export", "--format", "jsn", "--db", db_path)
    assert code == 2 and "did you mean 'json'?" in err
    code, out, _err = run(capsys, "--json", "sarch")
    assert code == 2 and "did you mean 'search'?" in json.loads(out)["error"]
    code, _out, err = run(capsys, "frobnicate")
    assert code == 2 and "did you mean" not in err  # nothing near: no guess


@pytest.mark.parametrize(("word", "near"), [("sesions", "sessions"), ("pikc", "pick")])
def test_a_mistyped_top_level_command_gets_the_nearest(word, near, capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main([word])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and f"unknown command {word!r}" in err and f"did you mean {near!r}?" in err


def test_bare_sessions_prints_its_help_and_exits_2(capsys) -> None:
    """Like argparse with a missing subcommand (exit 2), but the whole help: the commands listed."""
    code, out, err = run(capsys)
    assert code == 2 and out == ""
    assert err.startswith("usage: hermes-tui sessions") and "list       List sessions" in err
    assert "exit codes" in err
    code, out, err = run(capsys, "trash")
    assert code == 2 and out == "" and err.startswith("usage: hermes-tui sessions trash")
    assert "restore" in err and "empty" in err
    code, out, err = run(capsys, "--json")
    assert code == 2 and json.loads(out) == {
        "error": "a command is needed (see: hermes-tui sessions --help)",
        "kind": "usage",
    }
