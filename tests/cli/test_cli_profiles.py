"""`hermes-tui sessions … --all / --profile NAME` over several profiles' stores.

Layout under a tmp `$HERMES_HOME`: the default store and `profiles/work` both built by
`conftest.build` (so every id exists twice: references need `PROFILE:ID`), `profiles/agent`
written by hermes-agent 0.19.0 through the peer, `profiles/empty` (a folder without a store:
missing) and `profiles/broken` (a file that is not a database)."""

from __future__ import annotations

import io
import json
import sys
import time
from pathlib import Path

import pytest

from hermes_tui.state import SessionDB
from tests.cli._cli import run
from tests.peer.oracle import Peer, peer_python_or_skip

from .conftest import build, one_store


@pytest.fixture(autouse=True)
def no_tty(monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    root = tmp_path / ".hermes"
    (root / "profiles" / "work").mkdir(parents=True)
    (root / "profiles" / "empty").mkdir()
    (root / "profiles" / "broken").mkdir()
    (root / "profiles" / "broken" / "state.db").write_bytes(b"this is no database " * 100)
    build(root / "state.db")
    build(root / "profiles" / "work" / "state.db")
    with SessionDB(root / "profiles" / "work" / "state.db") as db:
        db.create_session("work-only", "cli", model="gpt-x")
        db.set_session_title("work-only", "Quarterly report")
        db.append_message("work-only", "user", "the quarterly zebrafish report", timestamp=time.time())
        db.end_session("work-only", "user_exit")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("HERMES_HOME", str(root))
    return root


def ids(path: Path) -> set[str]:
    with SessionDB(path, read_only=True) as db:
        return set(db.session_order().ids)


def test_list_all_merges_with_profile_column_and_warns_per_broken_store(home, capsys) -> None:
    code, out, err = run(capsys, "list", "--all", "--limit", "0")
    assert code == 0, err
    assert out.splitlines()[0].split()[:2] == ["PROFILE", "ID"]
    assert "work-only" in out and " work " in out and "default" in out
    warnings = err.splitlines()
    assert sorted(w.split(":")[1].strip() for w in warnings) == ["broken", "empty"]
    assert all(w.startswith("warning: ") for w in warnings)
    assert "missing" in err and "not a database" in err
    code, out, err = run(capsys, "list", "--all", "--json", "--limit", "0")
    doc = json.loads(out)
    assert code == 0 and err == ""
    assert all(r["profile"] in ("default", "work") for r in doc["sessions"])
    assert {(r["profile"], r["id"]) for r in doc["sessions"]} == (
        {("default", i) for i in ids(home / "state.db")}
        | {("work", i) for i in ids(home / "profiles/work/state.db")}
    )
    # Hermes' list of each store (children folded: 6 of the default store's 8 sessions).
    counts = {"default": len(ids(home / "state.db")), "work": len(ids(home / "profiles/work/state.db"))}
    assert counts["default"] == 6
    assert doc["counts"] == counts and doc["total"] == sum(counts.values())
    assert {e["profile"]: e["status"] for e in doc["errors"]} == {
        "empty": "missing",
        "broken": "not a database",
    }


def test_profile_selects_stores_and_unknown_is_an_error(home, capsys) -> None:
    code, out, _ = run(capsys, "list", "--profile", "work", "--json", "--limit", "0")
    doc = json.loads(out)
    assert code == 0 and {r["profile"] for r in doc["sessions"]} == {"work"} and doc["errors"] == []
    code, out, _ = run(capsys, "list", "--profile", "work")
    assert code == 0 and "PROFILE" not in out.splitlines()[0]  # one store: no column
    code, _out, err = run(capsys, "list", "--profile", "nope")
    assert code == 3 and "no profile 'nope'" in err and "work" in err
    code, _out, err = run(capsys, "list", "--profile", "empty")
    assert code == 3 and "missing" in err
    code, _out, err = run(capsys, "list", "--all", "--db", home / "state.db")
    assert code == 2 and "--db" in err


def test_show_needs_profile_prefix_when_ids_repeat(home, capsys) -> None:
    code, _out, err = run(capsys, "show", "cli-docker", "--all-profiles")
    assert (
        code == 7 and "several profiles" in err and "default:cli-docker" in err and "work:cli-docker" in err
    )
    code, out, err = run(capsys, "show", "work:cli-docker", "--all-profiles", "--json")
    doc = json.loads(out)
    assert code == 0, err
    assert doc["profile"] == "work" and doc["session"]["id"] == "cli-docker"
    code, out, _ = run(capsys, "show", "Quarterly report", "--all-profiles")
    assert code == 0 and "profile:     work" in out and "work-only" in out
    code, _out, err = run(capsys, "show", "nothing-like-this", "--all-profiles")
    assert code == 3 and "no session is 'nothing-like-this'" in err


def test_search_all_carries_profile(home, capsys) -> None:
    code, out, _ = run(capsys, "search", "docker", "--all", "--json", "--sort", "newest")
    doc = json.loads(out)
    assert code == 0
    assert {h["profile"] for h in doc["results"]} == {"default", "work"}
    assert set(doc["routes"]) == {"default", "work"}
    code, out, _ = run(capsys, "search", "zebrafish", "--all")
    assert code == 0 and "work:work-only" in out and "default:" not in out


def test_stats_all_per_profile_and_total(home, capsys) -> None:
    code, out, _ = run(capsys, "stats", "--all", "--json")
    doc = json.loads(out)
    assert code == 0 and set(doc["profiles"]) == {"default", "work"}
    assert doc["total"]["sessions"] == 17 == sum(d["totals"]["sessions"] for d in doc["profiles"].values())
    code, out, _ = run(capsys, "stats", "--all")
    total = next(line for line in out.splitlines() if line.startswith("TOTAL"))
    assert total.split()[1] == "17" and "== work ==" in out and "== default ==" in out


def test_export_all_records_and_md_names_carry_profile(home, tmp_path, capsys) -> None:
    code, out, _ = run(capsys, "export", "--all", "--format", "jsonl")
    records = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and len(records) == 17 and {r["profile"] for r in records} == {"default", "work"}
    code, out, err = run(
        capsys,
        "export",
        "default:cli-docker",
        "work:cli-docker",
        "--all",
        "--format",
        "md",
        "-o",
        tmp_path / "md",
        "--json",
    )
    assert code == 0, err
    names = sorted(p.name for p in (tmp_path / "md").iterdir())
    assert len(names) == 3 and names[0].startswith("default-") and names[2].startswith("work-")
    manifest = [json.loads(x) for x in (tmp_path / "md" / "manifest.jsonl").read_text().splitlines()]
    assert [m["profile"] for m in manifest] == ["default", "work"]


def test_prune_all_previews_by_profile_and_trashes_each_store(home, capsys) -> None:
    code, out, _ = run(capsys, "prune", "--all", "--dry-run")
    assert code == 0 and "== default ==" in out and "== work ==" in out and "old-one" in out
    assert "old-one" in ids(home / "state.db")
    code, _out, err = run(capsys, "prune", "--all")
    assert code == 4 and "confirmation" in err
    code, out, err = run(capsys, "prune", "--all", "--yes", "--json")
    doc = json.loads(out)
    assert code == 0, err
    for name, path in (("default", home / "state.db"), ("work", home / "profiles/work/state.db")):
        assert doc["profiles"][name]["result"]["deleted"] == 1
        assert doc["profiles"][name]["trash_entry"]
        assert "old-one" not in ids(path) and "cli-docker" in ids(path)
        with SessionDB(path, read_only=True) as db:
            assert len(db.list_trash()) == 1  # each store's own trash


def test_delete_and_rename_take_one_profile_and_refuse_all(home, capsys) -> None:
    work = home / "profiles/work/state.db"
    code, _out, err = run(capsys, "delete", "cli-docker", "--all", "--yes")
    assert code == 2 and "--profile NAME, not --all" in err
    code, out, err = run(capsys, "rename", "work:cli-docker", "Docker at work", "--profile", "work", "--json")
    assert code == 0, err
    assert json.loads(out) == {
        "profile": "work",
        "id": "cli-docker",
        "title": "Docker at work",
        "transfer_from": None,
        "errors": [],
    }
    with SessionDB(home / "state.db", read_only=True) as db:
        assert db.get_session_title("cli-docker") == "Docker fix"  # the other store is untouched
    code, out, err = run(capsys, "delete", "tg-solo", "--profile", "work", "--yes", "--json")
    assert code == 0, err
    assert list(json.loads(out)["profiles"]) == ["work"]
    assert "tg-solo" not in ids(work) and "tg-solo" in ids(home / "state.db")


def test_all_stores_failing_is_an_error(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("HERMES_HOME", str(tmp_path / "nowhere"))
    code, _out, err = run(capsys, "list", "--all")
    assert code == 3 and "no store could be read" in err


def test_profile_written_by_hermes_agent_0_19_0(home, capsys) -> None:
    python = peer_python_or_skip()
    agent = home / "profiles" / "agent"
    agent.mkdir()
    with Peer(agent / "state.db", python=python) as peer:
        peer.call("create_session", "agent-1", "telegram", model="gpt-x")
        peer.call("append_message", "agent-1", "user", "agent side zebrafish question")
        peer.call("set_session_title", "agent-1", "From the agent")
        peer.call("end_session", "agent-1", "user_exit")
        code, out, err = run(capsys, "list", "--all", "--json", "--limit", "0")
        doc = json.loads(out)
        assert code == 0, err
        assert ("agent", "agent-1") in {(r["profile"], r["id"]) for r in doc["sessions"]}
        assert doc["counts"]["agent"] == 1
        code, out, _ = run(capsys, "search", "zebrafish", "--all", "--json")
        assert {(h["profile"], h["session_id"]) for h in json.loads(out)["results"]} == {
            ("agent", "agent-1"),
            ("work", "work-only"),
        }
        code, out, _ = run(capsys, "show", "From the agent", "--all-profiles", "--json")
        assert code == 0 and json.loads(out)["profile"] == "agent"


def test_many_profiles_without_a_store_are_one_warning_line(home, capsys) -> None:
    """Thousands of profile folders that never ran a session must not bury the output: past a
    few they are one line naming the first ones; the JSON still lists every one."""
    for i in range(40):
        (home / "profiles" / f"never-{i:02d}").mkdir()
    code, out, err = run(capsys, "list", "--all", "--limit", "0")
    assert code == 0 and "work-only" in out
    warnings = err.splitlines()
    assert len(warnings) == 2, warnings  # `broken`, then the summary
    assert warnings[0].startswith("warning: broken: not a database")
    assert warnings[1].startswith("warning: 41 profiles without a state.db (no sessions yet): ")
    assert warnings[1].endswith(" and 36 more")
    code, out, err = run(capsys, "list", "--all", "--json", "--limit", "0")
    doc = json.loads(out)
    assert code == 0 and err == ""
    assert sum(e["status"] == "missing" for e in doc["errors"]) == 41


def _shape(doc: dict) -> tuple[frozenset[str], frozenset[frozenset[str]]]:
    """A `--json` document's keys, and the keys of each of its per-store reports."""
    reports = doc.get("profiles", {}).values()
    return frozenset(doc), frozenset(frozenset(r) for r in reports)


def test_one_json_shape_for_one_store_or_several(home, tmp_path, capsys) -> None:
    """One implementation per verb: `--db` (one store), `--profile NAME` (one) and `--all`
    (several) give documents of the same keys, each with `errors`; records and per-store reports
    name the store by its profile (the default store's file given with --db is `default`)."""
    default = home / "state.db"
    selections = ((("--db", str(default)), ""), (("--profile", "default"), ""), (("--all",), "default:"))
    verbs = [
        ("list", "--limit", "0"),
        ("search", "docker"),
        ("stats",),
        ("prune", "--dry-run"),
        ("archive", "{p}tg-solo"),
        ("export", "{p}cli-docker", "-o", "{out}.jsonl"),
        ("show", "{p}cli-docker"),
    ]
    for verb in verbs:
        shapes = set()
        for n, (select, prefix) in enumerate(selections):
            if verb[0] == "show" and select == ("--all",):
                select = ("--all-profiles",)  # --all is show's inactive messages
            argv = [a.format(p=prefix, out=tmp_path / f"{verb[0]}-{n}") for a in verb]
            code, out, err = run(capsys, *argv, *select, "--json")
            assert code == 0, (argv, select, err)
            doc = json.loads(out)
            assert "errors" in doc, (argv, select)
            shapes.add(_shape(doc))
            for key in ("sessions", "results"):
                if isinstance(doc.get(key), list):
                    assert {r["profile"] for r in doc[key]} <= {"default", "work"} and doc[key], (
                        argv,
                        select,
                    )
            assert "default" in doc.get("profiles", {"default": None}), (argv, select)
            assert doc.get("profile", "default") == "default", (argv, select)
        assert len(shapes) == 1, (verb, shapes)
    code, out, _ = run(capsys, "search", "docker", "--db", default, "--json")
    assert json.loads(out)["routes"] == {"default": "fts5"}
    code, out, _ = run(capsys, "delete", "tg-solo", "--db", default, "--dry-run", "--json")
    assert code == 0 and list(json.loads(out)["profiles"]) == ["default"]
    code, out, _ = run(capsys, "rename", "tg-solo", "Named", "--db", default, "--json")
    assert code == 0 and json.loads(out)["profile"] == "default" and json.loads(out)["errors"] == []


def test_a_store_that_refuses_writes_is_one_warning_among_profiles(home, capsys) -> None:
    """A writing command over several stores leaves out the one whose file refuses writes (one
    `warning:` line, an `errors` item) and changes the others; alone, it is refused up front."""
    default, work = home / "state.db", home / "profiles" / "work" / "state.db"
    default.chmod(0o444)  # read-only: refused even as root (the store respects the mode bits)
    try:
        code, out, err = run(capsys, "prune", "--all", "--yes", "--json")
        doc = json.loads(out)
        assert code == 0, err
        assert list(doc["profiles"]) == ["work"] and one_store(doc)["result"]["deleted"] == 1
        problems = {e["profile"]: (e["status"], e["kind"]) for e in doc["errors"]}
        assert problems["default"] == ("read-only", "read_only")
        assert "old-one" in ids(default) and "old-one" not in ids(work)
        code, out, err = run(capsys, "pin", "--all", "work:cli-docker")
        assert code == 0 and "\nwarning: default: read-only — " in "\n" + err and "Pinned cli-docker" in out
        code, out, err = run(capsys, "delete", "cli-docker", "--yes", "--db", default)
        assert (
            code == 4
            and out == ""
            and err
            == f"error: {default} is read-only (its file or folder refuses writes); nothing was changed\n"
        )
        assert "cli-docker" in ids(default)
    finally:
        default.chmod(0o644)


def test_no_store_given_opens_hermes_sticky_profile(home, capsys) -> None:
    """`hermes profile use work` writes `<root>/active_profile`; `hermes` then opens work's store,
    and so do we when given no --db/--profile/--all (list, and a write: rename)."""
    code, out, _err = run(capsys, "list")
    assert code == 0 and "work-only" not in out
    (home / "active_profile").write_text("work\n", encoding="utf-8")
    code, out, _err = run(capsys, "list")
    assert code == 0 and "work-only" in out
    code, _out, _err = run(capsys, "rename", "work-only", "Renamed in work")
    assert code == 0
    with SessionDB(home / "profiles" / "work" / "state.db", read_only=True) as db:
        assert db.get_session("work-only")["title"] == "Renamed in work"
    code, out, _err = run(capsys, "--db", home / "state.db", "list")  # --db still wins
    assert code == 0 and "work-only" not in out
    (home / "active_profile").write_text("default\n", encoding="utf-8")
    code, out, _err = run(capsys, "list")
    assert code == 0 and "work-only" not in out


def test_db_given_by_another_name_is_named_as_its_profile(home, tmp_path, capsys) -> None:
    """`--db` naming a discovered store by another name (a link, `..`) is that profile's store,
    matched by discovery's own identity of a file (`same_file_key`)."""
    link = tmp_path / "work-link.db"
    link.symlink_to(home / "profiles" / "work" / "state.db")
    for given in (link, home / "profiles" / "work" / ".." / "work" / "state.db"):
        code, out, _err = run(capsys, "list", "--db", given, "--json", "--limit", "0")
        assert code == 0
        assert {r["profile"] for r in json.loads(out)["sessions"]} == {"work"}, given
