"""An `optimize_fts_storage()` killed mid-way: search misses nothing meanwhile, and it resumes."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

import apsw
import pytest

from hermes_tui.state import SessionDB
from hermes_tui.state import fts_schema as F
from hermes_tui.state.cjk import install_cjk_tokenizer
from tests._wait import wait_until

N_MESSAGES = 2600  # six 500-id chunks

# Runs `optimize_fts_storage()` and SIGKILLs itself inside chunk KILL_AT + 1, before its commit.
KILLER = textwrap.dedent("""
    import os, signal, sys
    from hermes_tui.state import SessionDB

    db = SessionDB(db_path=sys.argv[1])
    kill_at, chunks = int(sys.argv[2]), [0]
    real = db._execute_write

    def write(fn):
        if getattr(fn, "__name__", "") == "chunk":
            chunks[0] += 1
            if chunks[0] > kill_at:
                def die(conn):
                    fn(conn)
                    os.kill(os.getpid(), signal.SIGKILL)
                return real(die)
        return real(fn)

    db._execute_write = write
    db.optimize_fts_storage(pause_factor=0)
    print("not killed")
""")


def _legacy_store(path) -> None:
    """A store with hermes-agent 0.19.0's inline FTS layout (its DDL, verbatim) and schema v22."""
    with SessionDB(db_path=path) as db:
        for s in range(13):
            db.create_session(f"s{s}", "cli" if s % 2 else "telegram")
            db.append_messages(
                f"s{s}",
                [
                    {
                        "role": "user" if i % 2 else "assistant",
                        "content": f"uniq{s * 200 + i}x common words here",
                        "timestamp": 1_700_000_000 + s * 200 + i,
                    }
                    for i in range(N_MESSAGES // 13)
                ],
            )
    conn = apsw.Connection(str(path))
    install_cjk_tokenizer(conn)
    with conn:
        for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'").fetchall():
            conn.execute(f'DROP TRIGGER "{name}"')
        for view in ("messages_fts_trigram_src", "messages_fts_cjk_src"):
            conn.execute(f"DROP VIEW IF EXISTS {view}")
        for table in ("messages_fts", "messages_fts_trigram", "messages_fts_cjk"):
            conn.execute(f"DROP TABLE IF EXISTS {table}")
        conn.execute("DELETE FROM state_meta WHERE key LIKE 'fts%'")
        conn.execute(F.LEGACY_BASE_SQL)
        conn.execute(F.LEGACY_TRIGRAM_SQL)
        for table in ("messages_fts", "messages_fts_trigram"):
            conn.execute(f"INSERT INTO {table}(rowid, content) {F.LEGACY_CONCAT_SELECT}")
        conn.execute("UPDATE schema_version SET version = 22")
    conn.close()


def _killed_conversion(path, kill_at: int) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", KILLER, str(path), str(kill_at)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == -9, proc.stdout + proc.stderr


def _every_message_found(db: SessionDB) -> None:
    ids = [r[0] for r in db._tuples("SELECT id FROM messages ORDER BY id")]
    assert len(ids) == N_MESSAGES - N_MESSAGES % 13
    for sort in ("newest", "oldest", None):
        found: set[int] = set()
        offset = 0
        while True:
            page = db.search("common", sort=sort, limit=500, offset=offset, context=False).results
            found |= {r["id"] for r in page}
            if len(page) < 500:
                break
            offset += 500
        assert found == set(ids), (sort, len(found))
    assert db.search_count("common", cap=100_000) == (len(ids), True)
    for mid, content in db._tuples("SELECT id, content FROM messages WHERE id % 97 = 0"):
        word = content.split()[0]
        assert [r["id"] for r in db.search(word).results] == [mid], word
        assert db.search_count(word) == (1, True)


@pytest.mark.parametrize("kill_at", [0, 2])
def test_a_killed_conversion_misses_nothing_and_resumes_on_the_next_writable_open(db_path, kill_at):
    _legacy_store(db_path)
    with SessionDB(db_path=db_path, migrate=False) as db:
        assert db.layout.kind == "legacy"
    _killed_conversion(db_path, kill_at)

    # The browser (migrate=False) does not resume: search reads the unconverted ids with LIKE.
    with SessionDB(db_path=db_path, migrate=False) as db:
        assert db.layout.kind == "v23" and db.conversion_pending()
        gap = db._unindexed_range()
        assert gap == (kill_at * 500, N_MESSAGES - N_MESSAGES % 13)
        indexed = db._scalar("SELECT COUNT(*) FROM messages_fts_docsize")
        assert indexed == kill_at * 500  # most messages are not in the index yet...
        _every_message_found(db)  # ...and search still finds every one
        time.sleep(0.3)
        assert db.conversion_pending() and db.store_health()["fts_conversion_pending"]

    # A writable migrate=True open finishes it in the background (the upkeep thread).
    with SessionDB(db_path=db_path) as db:
        wait_until(lambda: not db.conversion_pending(), "the upkeep thread finished the conversion")
        assert db._unindexed_range() is None and not db.layout.trash_tables
        assert db.get_meta(F.FTS_STORAGE_VERSION_KEY) == "1"
        assert db._scalar("SELECT COUNT(*) FROM messages_fts_docsize") == N_MESSAGES - N_MESSAGES % 13
        _every_message_found(db)


def test_writes_during_the_gap_are_found_and_counted_once(db_path):
    _legacy_store(db_path)
    _killed_conversion(db_path, 1)
    with SessionDB(db_path=db_path, migrate=False) as db:
        db.append_message("s1", "user", "fresh common words")  # above the gate: in the index
        n, exact = db.search_count("common", cap=100_000)
        assert exact and n == N_MESSAGES - N_MESSAGES % 13 + 1
        assert db.search("fresh", sort="newest").results[0]["snippet"]


def test_no_reader_sees_the_conversion_finished_before_its_version_is_settled(db_path):
    """The last old table goes in the same transaction that records the converted storage:
    a reader polling `conversion_pending()` then reading the meta never sees them disagree."""
    _legacy_store(db_path)
    seen: list[tuple[bool, str | None]] = []
    with SessionDB(db_path=db_path) as db, SessionDB(db_path=db_path, migrate=False) as reader:
        real = db._execute_write

        def write(fn):
            out = real(fn)
            reader.refresh_structure()
            seen.append((reader.conversion_pending(), reader.get_meta(F.FTS_STORAGE_VERSION_KEY)))
            return out

        db._execute_write = write
        assert db.optimize_fts_storage(pause_factor=0)["ok"]
    finished = [meta for pending, meta in seen if not pending]
    assert finished and all(meta == "1" for meta in finished), seen
