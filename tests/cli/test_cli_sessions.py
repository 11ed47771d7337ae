"""`hermes-tui sessions ...` run in-process through `sessions.main`."""

from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hermes_tui import cli
from hermes_tui.state import SessionDB, SessionFilter
from tests.cli._cli import run

from .conftest import one_store


def ids_in(db_path) -> set[str]:
    with SessionDB(db_path, read_only=True) as db:
        return set(db.session_order(SessionFilter.every_session()).ids)


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture(autouse=True)
def no_tty(monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))


# ---------------------------------------------------------------- dispatch, usage, errors
def test_cli_dispatches_sessions(db_path, capsys):
    assert cli.main(["sessions", "list", "--db", str(db_path), "--json"]) == 0
    assert {r["id"] for r in json.loads(capsys.readouterr().out)["sessions"]} >= {"cli-docker", "tg-parent"}


def test_usage_error_exit_2(db_path, capsys):
    code, _out, err = run(capsys, "list", "--db", db_path, "--order", "bogus")
    assert code == 2 and "invalid choice" in err
    assert run(capsys, "frobnicate")[0] == 2
    assert run(capsys)[0] == 2
    assert run(capsys, "prune", "--db", db_path, "--older-than", "soon")[0] == 2


def test_help_exit_0(capsys):
    code, out, _ = run(capsys, "--help")
    assert code == 0 and "prune" in out


def test_unknown_id_exit_3(db_path, capsys):
    code, out, err = run(capsys, "show", "nope-nothing", "--db", db_path)
    assert code == 3 and err.startswith("error: ") and "nope-nothing" in err and out == ""
    assert run(capsys, "delete", "nope-nothing", "--db", db_path, "--yes")[0] == 3


def test_ambiguous_prefix_exit_7(db_path, capsys):
    code, _out, err = run(capsys, "show", "comp-", "--db", db_path)
    assert code == 7 and "ambiguous" in err


def test_missing_db_exit_3(tmp_path, capsys):
    missing = tmp_path / "none" / "state.db"
    for argv in (["list"], ["stats"], ["rename", "x", "y"], ["prune", "--dry-run"]):
        code, _out, err = run(capsys, *argv, "--db", missing)
        assert code == 3 and f"no database at {missing}" in err
    assert not missing.exists()


def test_default_db_from_hermes_home(db_path, capsys, monkeypatch):
    monkeypatch.setenv("HERMES_HOME", str(db_path.parent))
    code, out, _ = run(capsys, "list", "--json")
    doc = json.loads(out)
    assert code == 0 and len(doc["sessions"]) == 6  # Hermes' list: tg-sub and comp-root folded
    assert doc["counts"] == {"default": 6} and doc["errors"] == []  # the current profile's store


def test_globals_before_subcommand(db_path, capsys):
    code, out, _ = run(capsys, "--db", db_path, "--json", "list")
    assert code == 0 and isinstance(json.loads(out)["sessions"], list)


# ---------------------------------------------------------------- list
def test_list_table(db_path, capsys):
    code, out, _ = run(capsys, "list", "--db", db_path)
    assert code == 0
    assert "LAST ACTIVE" in out and "Docker fix" in out and "Weekly plan" in out
    assert "6 of 6 sessions" in out  # Hermes' list: the sub-agent run and the chain's root folded
    line = next(ln for ln in out.splitlines() if ln.startswith("cli-docker"))
    assert "gpt-x" in line and "1500" in line and "$0.0500" in line and "T" in line.split()[-1]


def test_list_json_filters_order_limit(db_path, capsys):
    code, out, _ = run(capsys, "list", "--db", db_path, "--json", "--source", "telegram")
    doc = json.loads(out)
    rows = doc["sessions"]
    assert code == 0 and {r["source"] for r in rows} == {"telegram"} and len(rows) == 2
    # One shape for one store or several: rows name the store, counts and errors are there.
    assert {r["profile"] for r in rows} == {str(db_path)} and doc["counts"] == {str(db_path): 2}
    assert doc["total"] == 2 and doc["errors"] == []
    _, out, _ = run(capsys, "list", "--db", db_path, "--json", "--order", "cost", "--limit", "2")
    rows = json.loads(out)["sessions"]
    # The chain is listed once, as its tip, ordered by the tip's own cost ($0.20).
    assert [r["id"] for r in rows] == ["comp-tip", "cli-docker"]
    _, out, _ = run(capsys, "list", "--db", db_path, "--json", "--before", "30d")
    assert [r["id"] for r in json.loads(out)["sessions"]] == ["old-one"]
    _, out, _ = run(capsys, "list", "--db", db_path, "--json", "--after", "1d", "--model", "claude-y")
    assert {r["id"] for r in json.loads(out)["sessions"]} == {"comp-tip"}
    _, out, _ = run(
        capsys, "list", "--db", db_path, "--json", "--after", "2000-01-01", "--before", "2001-01-01"
    )
    assert json.loads(out)["sessions"] == []


# ---------------------------------------------------------------- show
def test_show_plain_with_lineage(db_path, capsys):
    code, out, _ = run(capsys, "show", "comp-tip", "--db", db_path)
    assert code == 0
    assert "Lineage:" in out and "comp-root" in out and "[compression]" in out and "(this, tip)" in out
    assert "Continuing the kubernetes chat" in out


def test_show_by_prefix_title_and_all(db_path, capsys):
    code, out, _ = run(capsys, "show", "cli-dock", "--db", db_path)
    assert code == 0 and "id:" in out and "cli-docker" in out
    assert "tool call terminal" in out and "docker ps" in out and "rewound turn" not in out
    code, out, _ = run(capsys, "show", "Weekly plan", "--db", db_path)
    assert code == 0 and "tg-parent" in out and "Plan my week please" in out
    code, out, _ = run(capsys, "show", "cli-docker", "--all", "--db", db_path)
    assert "rewound turn" in out and "[inactive]" in out


def test_show_json(db_path, capsys):
    code, out, _ = run(capsys, "show", "cli-docker", "--db", db_path, "--json")
    doc = json.loads(out)
    assert code == 0 and set(doc) == {"profile", "session", "lineage", "messages", "errors"}
    assert doc["profile"] == str(db_path) and doc["errors"] == []
    assert doc["session"]["title"] == "Docker fix" and len(doc["messages"]) == 4
    assert doc["messages"][1]["tool_calls"][0]["function"]["name"] == "terminal"
    _, out, _ = run(capsys, "show", "cli-docker", "--db", db_path, "--json", "--all")
    assert len(json.loads(out)["messages"]) == 5
    _, out, _ = run(capsys, "show", "tg-sub", "--db", db_path, "--json")
    lin = json.loads(out)["lineage"]
    assert (
        lin["root"] == "tg-parent" and {n["id"]: n["edge_kind"] for n in lin["nodes"]}["tg-sub"] == "delegate"
    )


# ---------------------------------------------------------------- search
def test_search_plain(db_path, capsys):
    code, out, _ = run(capsys, "search", "docker", "--db", db_path)
    assert code == 0 and out.startswith("route: fts5")
    assert ">>>docker<<<" in out.lower() and "cli-docker" in out


def test_search_json_filters(db_path, capsys):
    code, out, _ = run(capsys, "search", "kubernetes", "--db", db_path, "--json", "--sort", "newest")
    doc = json.loads(out)
    assert code == 0 and doc["routes"] == {str(db_path): "fts5"} and doc["errors"] == []
    assert {r["profile"] for r in doc["results"]} == {str(db_path)}
    assert [r["session_id"] for r in doc["results"]][0] == "comp-tip"
    _, out, _ = run(
        capsys, "search", "docker", "--db", db_path, "--json", "--role", "assistant", "--role", "tool"
    )
    assert {r["role"] for r in json.loads(out)["results"]} <= {"assistant", "tool"}
    _, out, _ = run(capsys, "search", "plan", "--db", db_path, "--json", "--source", "cli")
    assert json.loads(out)["results"] == []
    _, out, _ = run(
        capsys, "search", "plan", "--db", db_path, "--json", "--source", "telegram", "--limit", "1"
    )
    assert len(json.loads(out)["results"]) == 1


# ---------------------------------------------------------------- rename
def _title(db_path, sid):
    with SessionDB(db_path, read_only=True) as db:
        return db.get_session_title(sid)


def test_rename_ok_multiword_and_clear(db_path, capsys):
    code, out, _ = run(capsys, "rename", "tg-solo", "My", "new", "title", "--db", db_path)
    assert code == 0 and "My new title" in out and _title(db_path, "tg-solo") == "My new title"
    code, out, _ = run(capsys, "rename", "tg-solo", "--clear", "--db", db_path)
    assert code == 0 and "Cleared" in out and _title(db_path, "tg-solo") is None


def test_rename_clash_names_holder(db_path, capsys):
    code, _out, err = run(capsys, "rename", "tg-solo", "Docker", "fix", "--db", db_path)
    assert code == 8 and err.startswith("error: ") and "cli-docker" in err
    assert _title(db_path, "tg-solo") is None and _title(db_path, "cli-docker") == "Docker fix"


def test_rename_too_long(db_path, capsys):
    code, _out, err = run(capsys, "rename", "tg-solo", "x" * 101, "--db", db_path)
    assert code == 8 and "too long" in err.lower() and _title(db_path, "tg-solo") is None


def test_rename_read_only_refused(db_path, capsys):
    code, _out, err = run(capsys, "rename", "tg-solo", "T", "--db", db_path, "--read-only")
    assert code == 4 and "read-only" in err and _title(db_path, "tg-solo") is None


def test_rename_json(db_path, capsys):
    code, out, _ = run(capsys, "--json", "rename", "tg-solo", "Fresh", "--db", db_path)
    assert code == 0 and json.loads(out) == {
        "profile": str(db_path),
        "id": "tg-solo",
        "title": "Fresh",
        "transfer_from": None,
        "errors": [],
    }


# ---------------------------------------------------------------- prune
def test_prune_dry_run_deletes_nothing(db_path, capsys, session_ids):
    code, out, _ = run(capsys, "prune", "--source", "telegram", "--dry-run", "--db", db_path)
    assert code == 0 and "Dry run" in out and "tg-sub" in out and "tg-parent" in out
    assert ids_in(db_path) == session_ids
    code, out, _ = run(capsys, "prune", "--dry-run", "--json", "--older-than", "0", "--db", db_path)
    doc = json.loads(out)
    assert code == 0 and doc["dry_run"] is True and doc["exported"] is None and doc["errors"] == []
    assert set(doc["profiles"]) == {str(db_path)} and one_store(doc)["result"] is None
    reasons = {e["id"]: e["reason"] for e in one_store(doc)["plan"]["excluded"]}
    assert reasons["cli-open"] == "still open"
    assert ids_in(db_path) == session_ids


def test_bare_prune_is_90_days(db_path, capsys, session_ids):
    code, out, _ = run(capsys, "prune", "--dry-run", "--json", "--db", db_path)
    assert code == 0 and one_store(json.loads(out))["plan"]["ids"] == ["old-one"]
    code, out, _ = run(capsys, "prune", "--yes", "--db", db_path)
    assert code == 0 and "older than 90 days" in out and "Deleted 1 of 1" in out
    assert ids_in(db_path) == session_ids - {"old-one"}


def test_any_filter_drops_the_90_day_cutoff(db_path, capsys):
    _, out, _ = run(capsys, "prune", "--dry-run", "--json", "--end-reason", "user_exit", "--db", db_path)
    ids = set(one_store(json.loads(out))["plan"]["ids"])
    assert {"cli-docker", "comp-tip", "tg-parent", "tg-solo", "old-one"} == ids
    _, out, _ = run(
        capsys, "prune", "--dry-run", "--json", "--min-cost", "0.1", "--max-tokens", "6999", "--db", db_path
    )
    assert one_store(json.loads(out))["plan"]["ids"] == ["comp-tip"]
    _, out, _ = run(
        capsys,
        "prune",
        "--dry-run",
        "--json",
        "--title-contains",
        "chat",
        "--min-messages",
        "2",
        "--db",
        db_path,
    )
    assert one_store(json.loads(out))["plan"]["ids"] == ["comp-root"]
    _, out, _ = run(
        capsys, "prune", "--dry-run", "--json", "--newer-than", "1d", "--min-tool-calls", "1", "--db", db_path
    )
    assert one_store(json.loads(out))["plan"]["ids"] == ["cli-docker"]
    _, out, _ = run(capsys, "prune", "--dry-run", "--json", "--before", "2001-01-01", "--db", db_path)
    assert one_store(json.loads(out))["plan"]["ids"] == []


def test_prune_yes_deletes_exactly_planned(db_path, capsys, session_ids):
    _, out, _ = run(capsys, "prune", "--source", "telegram", "--dry-run", "--json", "--db", db_path)
    plan = one_store(json.loads(out))["plan"]
    reviewed = set(plan["ids"]) | set(plan["cascade_ids"])
    assert plan["cascade_ids"] == [] or "tg-sub" in reviewed
    code, out, _ = run(capsys, "prune", "--source", "telegram", "--yes", "--json", "--db", db_path)
    doc = one_store(json.loads(out))
    assert code == 0
    assert set(doc["result"]["deleted_ids"]) == reviewed == {"tg-parent", "tg-sub", "tg-solo"}
    assert ids_in(db_path) == session_ids - reviewed


def test_prune_without_tty_refuses(db_path, capsys, session_ids):
    code, _out, err = run(capsys, "prune", "--source", "telegram", "--db", db_path)
    assert code == 4 and "--yes" in err and "terminal" in err
    assert ids_in(db_path) == session_ids


def test_prune_tty_confirmation(db_path, capsys, session_ids, monkeypatch):
    monkeypatch.setattr(sys, "stdin", _Tty("n\n"))
    code, out, err = run(capsys, "prune", "--source", "telegram", "--db", db_path)
    assert code == 4 and "Delete 3 sessions (" in err and "tg-parent “Weekly plan”" in err and "[y/N]" in err
    assert "nothing was deleted" in err
    assert ids_in(db_path) == session_ids
    monkeypatch.setattr(sys, "stdin", _Tty("y\n"))
    code, out, _ = run(capsys, "prune", "--source", "telegram", "--db", db_path)
    assert code == 0 and ids_in(db_path) == session_ids - {"tg-parent", "tg-sub", "tg-solo"}


def test_prune_read_only_refuses(db_path, capsys, session_ids):
    code, _out, err = run(capsys, "prune", "--source", "telegram", "--yes", "--read-only", "--db", db_path)
    assert code == 4 and "read-only" in err
    assert ids_in(db_path) == session_ids


def test_prune_export_before(db_path, capsys, tmp_path, session_ids):
    dump = tmp_path / "pruned.jsonl"
    code, _out, _ = run(
        capsys, "prune", "--source", "telegram", "--yes", "--export-before", dump, "--db", db_path
    )
    assert code == 0
    exported = [json.loads(ln) for ln in dump.read_text().splitlines()]
    assert {e["id"] for e in exported} == {"tg-parent", "tg-sub", "tg-solo"}
    assert any(e["messages"] for e in exported)
    # second run: the file exists → refused before anything is deleted
    code, _out, err = run(
        capsys, "prune", "--yes", "--min-messages", "0", "--export-before", dump, "--db", db_path
    )
    assert code == 4 and "overwrite" in err
    assert ids_in(db_path) == session_ids - {"tg-parent", "tg-sub", "tg-solo"}


# ---------------------------------------------------------------- delete
def test_delete_dry_run_and_cascade(db_path, capsys, session_ids):
    code, out, _ = run(capsys, "delete", "tg-parent", "--dry-run", "--db", db_path)
    assert code == 0 and "tg-sub" in out and "Dry run" in out and ids_in(db_path) == session_ids
    code, out, _ = run(capsys, "delete", "tg-parent", "--yes", "--json", "--db", db_path)
    doc = one_store(json.loads(out))
    assert code == 0 and doc["plan"]["cascade_ids"] == ["tg-sub"]
    assert set(doc["result"]["deleted_ids"]) == {"tg-parent", "tg-sub"}
    assert ids_in(db_path) == session_ids - {"tg-parent", "tg-sub"}


def test_delete_orphans_compression_child(db_path, capsys, session_ids):
    code, out, _ = run(capsys, "delete", "comp-root", "--yes", "--db", db_path)
    assert code == 0 and "orphaned" in out and "comp-tip" in out
    assert ids_in(db_path) == session_ids - {"comp-root"}
    with SessionDB(db_path, read_only=True) as db:
        assert db.get_session("comp-tip")["parent_session_id"] is None


def test_delete_refusals(db_path, capsys, session_ids):
    code, _o, err = run(capsys, "delete", "tg-solo", "--db", db_path)
    assert code == 4 and "--yes" in err
    code, _o, err = run(capsys, "delete", "tg-solo", "--yes", "--read-only", "--db", db_path)
    assert code == 4 and "read-only" in err
    assert ids_in(db_path) == session_ids


# ---------------------------------------------------------------- export
def test_export_jsonl_stdout_default(db_path, capsys):
    code, out, _ = run(capsys, "export", "cli-docker", "tg-parent", "--db", db_path)
    lines = [json.loads(ln) for ln in out.splitlines()]
    assert code == 0 and [x["id"] for x in lines] == ["cli-docker", "tg-parent"]
    assert lines[0]["messages"][0]["content"].startswith("How do I fix")


def test_export_json_file_and_overwrite(db_path, capsys, tmp_path):
    target = tmp_path / "out.json"
    code, out, _ = run(
        capsys, "export", "--format", "json", "--source", "telegram", "-o", target, "--db", db_path
    )
    assert code == 0 and target.exists()
    assert {s["id"] for s in json.loads(target.read_text())} == {"tg-parent", "tg-sub", "tg-solo"}
    before = target.read_text()
    code, _out, err = run(capsys, "export", "--format", "json", "cli-docker", "-o", target, "--db", db_path)
    assert code == 4 and "overwrite" in err and target.read_text() == before
    code, _out, _ = run(
        capsys, "export", "--format", "json", "cli-docker", "-o", target, "--force", "--db", db_path
    )
    assert code == 0 and [s["id"] for s in json.loads(target.read_text())] == ["cli-docker"]


def test_export_jsonl_file_and_lineage(db_path, capsys, tmp_path):
    target = tmp_path / "out.jsonl"
    code, out, _ = run(capsys, "export", "comp-tip", "--lineage", "-o", target, "--db", db_path, "--json")
    assert code == 0 and json.loads(out)["sessions"] == 1
    (item,) = [json.loads(ln) for ln in target.read_text().splitlines()]
    assert item["lineage_session_ids"] == ["comp-root", "comp-tip"] and len(item["messages"]) == 3
    code, _o, err = run(capsys, "export", "comp-tip", "-o", target, "--db", db_path)
    assert code == 4 and "overwrite" in err


def test_export_unknown_id_writes_nothing(db_path, capsys, tmp_path):
    target = tmp_path / "x.jsonl"
    code, _o, _e = run(capsys, "export", "cli-docker", "missing-id", "-o", target, "--db", db_path)
    assert code == 3 and not target.exists()


def test_export_markdown_dir_and_manifest(db_path, capsys, tmp_path):
    outdir = tmp_path / "md"
    code, out, _ = run(
        capsys,
        "export",
        "--format",
        "md",
        "cli-docker",
        "tg-parent",
        "comp-tip",
        "--lineage",
        "-o",
        outdir,
        "--db",
        db_path,
    )
    assert code == 0
    manifest = [json.loads(ln) for ln in (outdir / "manifest.jsonl").read_text().splitlines()]
    assert [m["id"] for m in manifest] == ["cli-docker", "tg-parent", "comp-tip"]
    for m in manifest:
        body = (outdir / m["file"]).read_bytes()
        assert hashlib.sha256(body).hexdigest() == m["sha256"] and len(body) == m["bytes"]
    docker = (outdir / "cli-docker.md").read_text()
    assert docker.startswith('---\nid: "cli-docker"\ntitle: "Docker fix"')
    assert "```json" in docker and '"cmd": "docker ps"' in docker
    assert "<details>" in docker and "The user wants docker help." in docker
    assert "Plan my week please" in (outdir / "tg-parent.md").read_text()
    assert "comp-root" in (outdir / "comp-tip.md").read_text()
    code, _o, err = run(capsys, "export", "--format", "md", "cli-docker", "-o", outdir, "--db", db_path)
    assert code == 4 and "overwrite" in err
    code, _o, _e = run(
        capsys, "export", "--format", "md", "cli-docker", "-o", outdir, "--force", "--db", db_path
    )
    assert code == 0
    assert [json.loads(ln)["id"] for ln in (outdir / "manifest.jsonl").read_text().splitlines()] == [
        "cli-docker"
    ]


def test_export_md_needs_directory(db_path, capsys):
    code, _o, err = run(capsys, "export", "--format", "md", "cli-docker", "--db", db_path)
    assert code == 2 and "directory" in err.lower()


# ---------------------------------------------------------------- stats
def test_stats_json_keys(db_path, capsys):
    code, out, _ = run(capsys, "stats", "--db", db_path, "--json")
    doc = json.loads(out)
    assert code == 0 and set(doc) == {"profiles", "total", "errors"} and doc["errors"] == []
    assert doc["total"] == doc["profiles"][str(db_path)]["totals"]
    doc = one_store(doc)
    assert set(doc) == {
        "totals",
        "sessions_by_source",
        "usage_by_model",
        "costliest_sessions",
        "costliest_chains",
        "activity_by_day",
        "store_health",
    }
    assert doc["totals"]["sessions"] == 8
    assert {r["source"] for r in doc["sessions_by_source"]} == {"cli", "telegram"}
    assert doc["costliest_sessions"][0]["id"] == "comp-root"
    assert doc["costliest_chains"][0]["root_id"] == "comp-root"
    assert doc["store_health"]["schema_version"] == 23


def test_stats_plain(db_path, capsys):
    code, out, _ = run(capsys, "stats", "--db", db_path)
    assert code == 0
    for part in (
        "By source:",
        "By model:",
        "Costliest sessions:",
        "Costliest chains",
        "Activity",
        "█",
        "Store health:",
    ):
        assert part in out


def test_read_commands_do_not_write(db_path, capsys):
    before = os.stat(db_path).st_mtime_ns, db_path.read_bytes()
    for argv in (["list"], ["show", "cli-docker"], ["search", "docker"], ["stats"], ["export", "cli-docker"]):
        assert run(capsys, *argv, "--db", db_path)[0] == 0
    assert (os.stat(db_path).st_mtime_ns, db_path.read_bytes()) == before


# ---------------------------------------------------------------- console script
def test_console_script_end_to_end(db_path):
    script = Path(sys.executable).parent / "hermes-tui"
    if not script.exists():
        script = Path(__file__).resolve().parents[2] / ".venv" / "bin" / "hermes-tui"
    if not script.exists():
        pytest.skip("hermes-tui console script is not installed")
    proc = subprocess.run(
        [str(script), "sessions", "list", "--json", "--db", str(db_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    with SessionDB(db_path, read_only=True) as db:
        listed = set(db.session_order(SessionFilter()).ids)
    assert {r["id"] for r in json.loads(proc.stdout)["sessions"]} == listed
    proc = subprocess.run(
        [str(script), "sessions", "show", "nope", "--db", str(db_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 3 and proc.stderr.startswith("error: ") and proc.stderr.count("\n") == 1


def test_prune_cascade_is_reported_then_deleted(db_path, capsys, session_ids):
    code, out, _ = run(capsys, "prune", "--title-contains", "weekly", "--dry-run", "--db", db_path)
    assert code == 0 and "Delegate subagent sessions that go with them (1)" in out and "+ tg-sub" in out
    code, out, _ = run(capsys, "prune", "--title", "Weekly plan", "--yes", "--json", "--db", db_path)
    doc = one_store(json.loads(out))
    assert doc["plan"]["ids"] == ["tg-parent"] and doc["plan"]["cascade_ids"] == ["tg-sub"]
    assert set(doc["result"]["deleted_ids"]) == {"tg-parent", "tg-sub"}
    assert ids_in(db_path) == session_ids - {"tg-parent", "tg-sub"}


def test_prune_keeps_recently_active_and_open(db_path, capsys, session_ids):
    with SessionDB(db_path) as db:
        db.append_message("tg-solo", "user", "just now")
    code, out, _ = run(capsys, "prune", "--source", "telegram", "--dry-run", "--json", "--db", db_path)
    reasons = {e["id"]: e["reason"] for e in one_store(json.loads(out))["plan"]["excluded"]}
    assert "tg-solo" in reasons and "active" in reasons["tg-solo"]
    code, _o, _e = run(capsys, "prune", "--source", "cli", "--yes", "--db", db_path)
    assert code == 0 and "cli-open" in ids_in(db_path)


def test_delete_removes_only_what_it_showed(db_path, capsys, session_ids):
    # A delegate marker on a row without parent_session_id: get_descendants cannot see it, so the
    # preview does not list it, so the delete must not take it.
    with SessionDB(db_path) as db:
        db.create_session("marker-only", "cli", model_config={"_delegate_from": "cli-docker"})
    code, out, _ = run(capsys, "delete", "cli-docker", "--yes", "--json", "--db", db_path)
    doc = one_store(json.loads(out))
    assert code == 0 and doc["result"]["deleted_ids"] == ["cli-docker"]
    assert ids_in(db_path) == (session_ids | {"marker-only"}) - {"cli-docker"}
