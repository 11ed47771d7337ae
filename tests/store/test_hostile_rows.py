"""Every stored row is readable: hostile values written by raw SQL never break a read method.

A store is written by many hands: hermes-agent 0.19.0 (whose `append_message` accepts bytes),
older versions, hand edits, raw SQL. Whatever a column holds — bytes, TEXT that is not UTF-8,
a number where text belongs, text where a timestamp belongs, 1e300, malformed JSON — the read
methods the browser and the CLI call must return, never raise (an exception there used to make
the browser exit on every start). The rules checked here:

- text-ish values come back as `str` (or None); bytes and non-UTF-8 TEXT are decoded, with a
  `[binary: N bytes]` marker when they are not UTF-8 (`hermes_tui.safe_text.as_text`);
- timestamps used as dates (`started_at`, `ended_at`, `last_active`, message `timestamp`) are a
  number in [0, year 3000] or None ("unknown");
- malformed JSON fields are kept as the raw string.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import apsw
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hermes_tui.state import SessionDB, SessionFilter
from hermes_tui.state.listing import ORDERS
from hermes_tui.state.text import TS_MAX


class NonUtf8:
    """A value bound as bytes and stored as TEXT (`CAST(? AS TEXT)`): TEXT that is not UTF-8."""

    def __init__(self, raw: bytes) -> None:
        self.raw = raw

    def __repr__(self) -> str:
        return f"NonUtf8({self.raw!r})"


BAD_JSON = [
    "{bad",
    "[1,",
    "\x00json:{oops",
    "null",
    "123",
    '"str"',
    "[]",
    '{"_branched_from": 5}',
    '{"_delegate_from": "x"}',
    '{"_branched_from": {"a": [1]}}',
]
TEXTS = [
    "",
    "plain",
    "\x1b]52;c;SGVsbG8=\x07\x1b[2J",
    "\u202eevil",
    "a\r\nb\x00c",
    "日本語",
    "\x00json:[{bad",
    "\x00json:" + json.dumps([{"type": "text", "text": "multi"}]),
    "yesterday",
    "2025-01-01",
]
NUMBERS = [0, -5, 1e300, -1e300, float("inf"), float("-inf"), 2**63 - 1, -(2**63), 1.5, 1700000000]
BYTES = [b"", b"\xff\x00\xfe", b"ok bytes", "café".encode()]
NON_UTF8 = [NonUtf8(b"\xffA"), NonUtf8(b"abc\xc3"), NonUtf8(b"\x80" * 70)]

hostile = st.one_of(
    st.none(),
    st.sampled_from(TEXTS + BAD_JSON),
    st.sampled_from(NUMBERS),
    st.sampled_from(BYTES),
    st.sampled_from(NON_UTF8),
    st.text(max_size=20),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=True),
)
IDS = ["s1", "s2", "s3", "s4"]

SESSION_COLS_SKIP = {"id"}
MESSAGE_COLS_SKIP = {"id", "session_id"}


def raw_insert(conn: apsw.Connection, table: str, values: dict[str, Any]) -> bool:
    """INSERT `values` as they are (no affinity help from us); False when a constraint refuses."""
    exprs, params = [], []
    for v in values.values():
        if isinstance(v, NonUtf8):
            exprs.append("CAST(? AS TEXT)")
            params.append(v.raw)
        else:
            exprs.append("?")
            params.append(v)
    sql = f"INSERT INTO {table} ({', '.join(values)}) VALUES ({', '.join(exprs)})"
    try:
        conn.execute(sql, params)
    except apsw.ConstraintError:
        return False
    return True


def table_columns(conn: apsw.Connection, table: str) -> list[str]:
    return [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]


def write_hostile(path: Path, sessions: list[dict[str, Any]], messages: list[dict[str, Any]]) -> None:
    """Fresh v23 store, then raw rows: sessions with every column hostile, messages likewise.

    Written on the store's own APSW connection (its FTS triggers need the registered CJK
    tokenizer), but by plain INSERTs: no validation, no encoding of ours.
    """
    store = SessionDB(db_path=path)
    conn = store._conn()
    try:
        conn.execute("PRAGMA foreign_keys = OFF")
        scols = [c for c in table_columns(conn, "sessions") if c not in SESSION_COLS_SKIP]
        mcols = [c for c in table_columns(conn, "messages") if c not in MESSAGE_COLS_SKIP]
        with conn:
            for i, sid in enumerate(IDS):
                vals = sessions[i % len(sessions)]
                row = {"id": sid, **{c: vals.get(c) for c in scols if c in vals}}
                if not raw_insert(conn, "sessions", row):
                    # NOT NULL / CHECK refused a value: keep the hostile row, with a plain start.
                    row["started_at"] = 1700000000 + i
                    row = {k: v for k, v in row.items() if v is not None or k == "parent_session_id"}
                    if not raw_insert(conn, "sessions", row):
                        raw_insert(conn, "sessions", {"id": sid, "source": "cli", "started_at": 1700000000})
            for j, vals in enumerate(messages):
                row = {"session_id": IDS[j % len(IDS)], **{c: vals.get(c) for c in mcols if c in vals}}
                if not raw_insert(conn, "messages", row):
                    row = {k: v for k, v in row.items() if v is not None}
                    row.setdefault("timestamp", 1700000000 + j)
                    row.setdefault("role", "user")
                    if not raw_insert(conn, "messages", row):
                        raw_insert(conn, "messages", {**row, "timestamp": 1700000000 + j, "role": "user"})
    finally:
        store.close()


def check_ts(value: Any) -> None:
    assert value is None or (isinstance(value, (int, float)) and 0 <= value <= TS_MAX), value


def check_text(value: Any) -> None:
    assert value is None or isinstance(value, str), repr(value)


def read_everything(db: SessionDB) -> None:
    """Every read method the app and the CLI call; asserts only the contract's shapes."""
    ids: list[str] = []
    for order in ORDERS:
        for flt in (
            SessionFilter(),
            SessionFilter(include_children=False, text="a"),
            SessionFilter(started_after=0, started_before=2e9),
            SessionFilter(archived="only", pinned_first=True),
        ):
            ids = db.session_order(flt, order=order).ids
    ids = db.session_order(SessionFilter.every_session()).ids
    assert sorted(ids) == sorted(IDS)
    for row in db.list_rows(ids):
        for key in ("title", "preview", "source", "model", "end_reason", "edge_kind"):
            check_text(row[key])
        for key in ("started_at", "ended_at", "last_active"):
            check_ts(row[key])
    rows, _ = db.list_sessions_page(SessionFilter(), limit=3)
    for kw in (
        {},
        {"include_children": True},
        {"order_by_last_active": True, "search_query": "a-b", "id_query": "s"},
        {"compact_rows": True, "include_archived": True},
    ):
        for row in db.list_sessions_rich(**kw):
            check_text(row["preview"])
            check_ts(row["last_active"])
    for sid in ids:
        session = db.get_session(sid)
        assert session is not None
        for key in ("title", "source", "model", "system_prompt", "model_config"):
            check_text(session.get(key))
        check_ts(session["started_at"])
        check_ts(session["ended_at"])
        for msg in db.get_messages(sid):
            check_text(msg["role"])
            check_ts(msg["timestamp"])
            assert msg["content"] is None or isinstance(msg["content"], (str, list, dict, int, float))
        db.get_messages_as_conversation(sid, include_ancestors=True)
        db.list_recent_user_messages(sid)
        lineage = db.get_lineage(sid)
        for node in lineage["nodes"]:
            check_text(node["title"])
            check_ts(node["started_at"])
        db.get_compression_lineage(sid)
        db.get_compression_tip(sid)
        exported = db.export_session(sid)
        json.dumps(exported)  # the CLI writes it as JSON: no bytes may be left in it
        db.export_session_lineage(sid)
        db.get_session_title(sid)
        db.resolve_session_id(sid[:1])
    db.usage_by_model()
    db.usage_by_model_detailed()
    db.top_sessions()
    db.costliest_sessions()
    db.costliest_chains()
    db.sessions_by_source()
    db.totals()
    for day in db.activity_by_day() + db.activity_by_day(days=30, now=1.7e9):
        assert isinstance(day["day"], str)
    db.distinct_values("source")
    db.distinct_values("model")
    db.store_health()
    for sort in (None, "newest", "oldest"):
        db.search("a", sort=sort)
    db.plan_prune(older_than_days=0)
    db.plan_delete(ids)


MODEL_CONFIGS = [
    None,
    "{}",
    "[]",
    "123",
    "null",
    '{"_branched_from": 5}',
    '{"_delegate_from": "x"}',
    "{bad",
    "",
]
row_values = st.dictionaries(
    st.sampled_from(
        [
            "title",
            "source",
            "model",
            "system_prompt",
            "started_at",
            "ended_at",
            "end_reason",
            "message_count",
            "tool_call_count",
            "input_tokens",
            "output_tokens",
            "estimated_cost_usd",
            "actual_cost_usd",
            "parent_session_id",
            "archived",
            "pinned",
            "cwd",
            "billing_provider",
            "user_id",
            "cache_read_tokens",
        ]
    ),
    st.one_of(hostile, st.sampled_from(IDS)),
    max_size=12,
).flatmap(lambda d: st.sampled_from(MODEL_CONFIGS).map(lambda mc: {**d, "model_config": mc}))
msg_values = st.dictionaries(
    st.sampled_from(
        [
            "role",
            "content",
            "tool_calls",
            "tool_name",
            "timestamp",
            "reasoning",
            "reasoning_content",
            "reasoning_details",
            "codex_reasoning_items",
            "display_metadata",
            "display_kind",
            "active",
            "api_content",
            "finish_reason",
            "token_count",
            "tool_call_id",
            "platform_message_id",
            "observed",
        ]
    ),
    hostile,
    max_size=10,
)


@settings(
    max_examples=25,
    deadline=None,
    derandomize=True,
    report_multiple_bugs=False,
    suppress_health_check=list(HealthCheck),
)
@given(sessions=st.lists(row_values, min_size=1, max_size=4), messages=st.lists(msg_values, max_size=8))
def test_fuzz_hostile_rows_never_break_a_read(
    sessions: list[dict[str, Any]], messages: list[dict[str, Any]]
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "state.db"
        write_hostile(path, sessions, messages)
        db = SessionDB(db_path=path, migrate=False)
        try:
            read_everything(db)
        finally:
            db.close()


# ---------------------------------------------------------------- targeted regressions


@pytest.fixture
def raw(db_path: Path):
    """(path, write(sql, params)) on a fresh v23 store: raw SQL on the store's own connection."""

    def write(sql: str, params: tuple[Any, ...] = ()) -> None:
        store = SessionDB(db_path=db_path)
        try:
            store._conn().execute("PRAGMA foreign_keys = OFF")
            store._conn().execute(sql, params)
        finally:
            store.close()

    return db_path, write


def test_non_utf8_text_reads_as_marked_text(raw) -> None:
    """TEXT that is not UTF-8 (raw SQL) in titles, sources, roles and content: every read
    returns str with the `[binary: N bytes]` marker instead of raising UnicodeDecodeError."""
    path, write = raw
    write(
        "INSERT INTO sessions (id, source, model, title, started_at) "
        "VALUES ('s1', CAST(x'ff41' AS TEXT), CAST(x'fe' AS TEXT), CAST(x'ff7469746c65' AS TEXT), 1700000000)"
    )
    write("INSERT INTO sessions (id, source, started_at) VALUES ('s2', 'cli', 1700000001)")
    write(
        "INSERT INTO messages (session_id, role, content, timestamp) "
        "VALUES ('s2', 'user', CAST(x'ff41' AS TEXT), 1700000002)"
    )
    write(
        "INSERT INTO messages (session_id, role, content, timestamp) "
        "VALUES ('s1', CAST(x'ff' AS TEXT), 'hi', 1700000003)"
    )
    with SessionDB(db_path=path, migrate=False) as db:
        rows = {r["id"]: r for r in db.list_rows(db.session_order().ids)}
        assert rows["s1"]["title"].startswith("[binary: 6 bytes]")
        assert rows["s1"]["source"].startswith("[binary: 2 bytes]")
        assert rows["s2"]["preview"].startswith("[binary: 2 bytes]")
        assert db.get_session("s1")["model"].startswith("[binary: 1 bytes]")
        assert db.get_messages("s2")[0]["content"].startswith("[binary: 2 bytes]")
        assert db.get_messages("s1")[0]["role"].startswith("[binary: 1 bytes]")
        assert {r["id"] for r in db.list_sessions_rich(include_children=True)} == {"s1", "s2"}
        assert [n["title"] for n in db.get_lineage("s1")["nodes"]] == [rows["s1"]["title"]]
        assert any(str(v).startswith("[binary") for v, _n in db.distinct_values("source"))
        assert db.usage_by_model()[0]["model"].startswith("[binary")
        json.dumps(db.export_session("s2"))


def test_bytes_content_previews_and_exports_as_text(db: SessionDB) -> None:
    """0.19.0's append_message stores bytes as a BLOB: the preview is cut in SQL and decoded
    (a UTF-8 character cut at the edge is dropped, not turned into a binary marker)."""
    db.create_session("s1", "cli")
    db.create_session("s2", "cli")
    conn = db._conn()
    conn.execute(
        "INSERT INTO messages (session_id, role, content, timestamp) VALUES ('s1', 'user', ?, 1)",
        ("line one\nline two é".encode() + "é".encode() * 40,),
    )
    conn.execute(
        "INSERT INTO messages (session_id, role, content, timestamp) VALUES ('s2', 'user', ?, 1)",
        (b"\xff\xfe\x00raw",),
    )
    rows = {r["id"]: r for r in db.list_rows(["s1", "s2"])}
    assert rows["s1"]["preview"].startswith("line one line two é")
    assert "[binary" not in rows["s1"]["preview"] and isinstance(rows["s1"]["preview"], str)
    assert rows["s2"]["preview"].startswith("[binary: 6 bytes]")
    assert [r["preview"][:8] for r in db.list_sessions_rich() if r["id"] == "s1"] == ["line one"]
    assert db.get_messages("s1")[0]["content"].startswith("line one\nline two")
    assert json.loads(json.dumps(db.export_session("s2")))["messages"][0]["content"].startswith("[binary")


def test_unusable_timestamps_read_as_unknown(raw) -> None:
    """Text, negative and 1e300 dates: never a traceback, never first in the list, None in rows."""
    path, write = raw
    write("INSERT INTO sessions (id, source, started_at) VALUES ('good', 'cli', 1700000000)")
    write("INSERT INTO sessions (id, source, started_at) VALUES ('text', 'cli', 'yesterday')")
    write("INSERT INTO sessions (id, source, started_at, ended_at) VALUES ('huge', 'cli', 1e300, -5)")
    write(
        "INSERT INTO messages (session_id, role, content, timestamp) VALUES ('good', 'user', "
        "'a', '2025-01-01')"
    )
    write("INSERT INTO messages (session_id, role, content, timestamp) VALUES ('text', 'user', 'b', 'later')")
    write("INSERT INTO messages (session_id, role, content, timestamp) VALUES ('huge', 'user', 'c', 9e99)")
    with SessionDB(db_path=path, migrate=False) as db:
        assert db.session_order(order="last_active").ids[0] == "good"
        assert db.session_order(order="started").ids[0] == "good"
        rows = {r["id"]: r for r in db.list_rows(db.session_order().ids)}
        assert rows["good"]["last_active"] == 1700000000
        assert rows["text"]["started_at"] is None and rows["text"]["last_active"] is None
        assert rows["huge"]["started_at"] is None and rows["huge"]["ended_at"] is None
        assert db.get_session("text")["started_at"] is None
        assert [m["timestamp"] for m in db.get_messages("good")] == [None]
        assert db.activity_by_day() == [{"day": "2023-11-14", "sessions": 1, "messages": 0}]
        assert [r["id"] for r in db.list_sessions_rich(order_by_last_active=True)][0] == "good"


def test_sums_past_int64_do_not_overflow(raw) -> None:
    """SUM raises "integer overflow" past 2**63; the statistics screen must still open."""
    path, write = raw
    for sid in ("a", "b"):
        write(
            "INSERT INTO sessions (id, source, model, started_at, input_tokens, output_tokens, "
            "message_count) "
            f"VALUES ('{sid}', 'cli', 'm', 1700000000, {2**63 - 1}, 'lots', {2**63 - 1})"
        )
    with SessionDB(db_path=path, migrate=False) as db:
        assert db.usage_by_model()[0]["total_input"] >= 2**62
        assert db.totals()["sessions"] == 2
        assert db.sessions_by_source()[0]["messages"] >= 2**62
        assert db.top_sessions()[0]["total_tokens"] > 0
        assert db.session_order(order="tokens").ids == ["b", "a"]
        rows = db.list_rows(["a"])
        assert rows[0]["output_tokens"] is None and rows[0]["input_tokens"] == 2**63 - 1


def test_malformed_json_fields_are_kept_raw(db: SessionDB) -> None:
    """Malformed tool_calls / reasoning_details / `\\x00json:` content: the raw text is kept."""
    db.create_session("s1", "cli")
    conn = db._conn()
    conn.execute(
        "INSERT INTO messages (session_id, role, content, tool_calls, reasoning_details, timestamp) "
        "VALUES ('s1', 'assistant', ?, '{bad', '[1,', 1), ('s1', 'assistant', 'x', '{\"id\": 1}', ?, 2)",
        ("\x00json:{oops", "[" * 100_000),
    )
    msgs = db.get_messages("s1")
    assert msgs[0]["tool_calls"] == ["{bad"]
    assert msgs[0]["content"] == "\x00json:{oops"
    assert msgs[1]["tool_calls"] == [{"id": 1}]
    conv = db.get_messages_as_conversation("s1")
    assert conv[0]["reasoning_details"] == "[1,"
    assert conv[1]["reasoning_details"] == "[" * 100_000


def test_huge_content_preview_is_cut_in_sql(db: SessionDB) -> None:
    """A 10 MB first prompt: the list row's preview is 63 characters from SQLite, not 10 MB."""
    db.create_session("s1", "cli")
    db.append_message("s1", "user", "x" * 10_000_000)
    rows = (
        db._conn()
        .execute(
            "SELECT length(p) FROM (SELECT "
            + __import__("hermes_tui.state.preview", fromlist=["preview_sql"]).preview_sql(False)
            + " AS p FROM sessions s)"
        )
        .fetchall()
    )
    assert rows == [(63,)]
    assert db.list_rows(["s1"])[0]["preview"] == "x" * 60 + "..."


# ------------------------------------------------ shared SQL: edge kinds, core reads, search, prune
def test_malformed_model_config_lists(raw) -> None:
    path, write = raw
    write("INSERT INTO sessions (id, source, started_at, model_config) VALUES ('p', 'cli', 1, '')")
    write(
        "INSERT INTO sessions (id, source, started_at, model_config, parent_session_id) "
        "VALUES ('c', 'cli', 2, '{bad', 'p')"
    )
    with SessionDB(db_path=path, migrate=False) as db:
        assert db.list_rows(["c"])[0]["edge_kind"] == "other"
        assert len(db.session_order(SessionFilter(include_children=False))) == 1
        assert len(db.get_lineage("c")["nodes"]) == 2


def test_search_and_prune_survive_hostile_rows(raw) -> None:
    path, write = raw
    write(
        "INSERT INTO sessions (id, source, started_at, ended_at, title) "
        "VALUES ('s1', 'cli', 1, 2, CAST(x'ff41' AS TEXT))"
    )
    write(
        "INSERT INTO messages (session_id, role, content, timestamp) "
        "VALUES ('s1', 'user', CAST(x'6869ff20706c61696e' AS TEXT), 'yesterday')"
    )
    with SessionDB(db_path=path, migrate=False) as db:
        for sort in (None, "newest", "oldest"):
            db.search("plain", sort=sort)
        assert db.plan_prune(older_than_days=0)["ids"] == ["s1"]
        assert db.plan_delete(["s1"])["ids"] == ["s1"]
