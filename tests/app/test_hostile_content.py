"""Hostile store content never drives the terminal and never breaks a view.

Message content, tool names and arguments, titles, reasoning, sources: whatever an agent read
may carry terminal escapes (OSC 52 sets the clipboard, OSC 8 makes links, CSI 2J clears the
screen, OSC 0 retitles the window), C1 controls and bidi overrides. Every view that shows store
text — the transcript, the lineage pane, the statistics screen, the session list, the render
helpers — must show them as visible pictures (``␛]52``), and every stored value (bytes, text
timestamps, ``1e300``, malformed JSON) must give a marker, never an exception.

The screen checks read what Textual would write to the terminal: the compositor's full update,
both as segments (no control or bidi character in any text segment) and as the raw output
(no escape sequence from the payloads).
"""

from __future__ import annotations

import io
import json
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rich.console import Console
from textual.app import App
from textual.widgets import Static

from hermes_tui.app import render as R
from hermes_tui.app.screens.main import MainScreen
from hermes_tui.app.screens.stats import StatsScreen, bar, load_stats
from hermes_tui.app.widgets.lineage import LineageTree, node_label
from hermes_tui.app.widgets.message_parts import divider_text
from hermes_tui.app.widgets.transcript_items import Divider, message_header, message_view
from hermes_tui.app.widgets.transcript_pane import Transcript
from hermes_tui.safe_text import BIDI_CONTROLS, is_inert
from hermes_tui.state import SessionDB
from tests.peer.oracle import Peer

from ._support import make_app, settle

PAYLOADS = [
    "\x1b]52;c;aGVsbG8=\x07",  # OSC 52: sets the clipboard
    "\x1b[2J",  # clears the screen
    "\x1b]8;;http://x\x1b\\",  # OSC 8 hyperlink
    "\x1b]0;t\x07",  # window title
    "\x9b",  # C1 CSI
    "\u202e",  # right-to-left override
]
PAYLOAD = "".join(PAYLOADS)
#: The payloads as JSON escapes: json.loads turns them into the raw characters, and
#: json.dumps(ensure_ascii=False) writes C1 and bidi controls back raw.
JSON_PAYLOAD = json.dumps({"cmd": PAYLOAD, "note": "\u009b\u202e"})
#: Markdown decodes character references: the inert source would come back as controls.
MARKDOWN_REFS = "refs &#x202E; &#13; &rlm; &#x9b; end"

#: What must never appear in a text segment: C0 (tab and newline included: a strip has
#: neither), DEL, C1 and every bidi control.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f" + "".join(sorted(BIDI_CONTROLS)) + "]")
#: What must never appear in the bytes written to the terminal (styling escapes do).
_RAW_SEQUENCES = ["\x1b]52", "\x1b[2J", "\x1b]0;", "\x1b]8;;http://x", "\x9b", "\u202e", "\x07"]

SqlFn = Callable[..., Any]
CallFn = Callable[..., Any]

ROOT = "hostile-root"
KID = "hostile-kid"


def write_hostile(call: CallFn, sql: SqlFn) -> None:
    """The payloads in every field a view shows, written through a store's own API; titles by
    raw SQL (`set_session_title` strips control characters, a hand edit does not)."""
    call("create_session", ROOT, "cli" + PAYLOAD, model="model" + PAYLOAD)
    call("create_session", KID, "cli", model="m", parent_session_id=ROOT)
    call(
        "append_message",
        ROOT,
        "user",
        content=f"hello {PAYLOAD} end\n\n# heading {PAYLOAD}\n\n{MARKDOWN_REFS}",
    )
    call(
        "append_message",
        ROOT,
        "assistant",
        content=f"reply {PAYLOAD}\n\n```\ncode {PAYLOAD}\n```",
        reasoning=f"thinking {PAYLOAD}",
        finish_reason="stop" + PAYLOAD,
        tool_calls=[
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "tool" + PAYLOAD, "arguments": JSON_PAYLOAD},
            },
            {"id": "c2", "type": "function", "function": {"name": "raw", "arguments": "args " + PAYLOAD}},
        ],
    )
    call("append_message", ROOT, "tool", content=JSON_PAYLOAD, tool_name="tool" + PAYLOAD, tool_call_id="c1")
    call("append_message", ROOT, "tool", content="plain " + PAYLOAD, tool_name="t2", tool_call_id="c2")
    call("append_message", ROOT, "system", content="system " + PAYLOAD)
    call("append_message", KID, "user", content="kid " + PAYLOAD)
    sql("UPDATE sessions SET title = ? WHERE id = ?", ("root title " + PAYLOAD, ROOT))
    sql("UPDATE sessions SET title = ? WHERE id = ?", ("kid title " + PAYLOAD, KID))


def write_ours(path: Path) -> None:
    db = SessionDB(path)
    try:
        write_hostile(lambda m, *a, **k: getattr(db, m)(*a, **k), lambda q, p=(): db._conn().execute(q, p))
    finally:
        db.close()


def screen_output(app: App[Any]) -> tuple[list[str], str, str]:
    """(text of every segment, raw terminal output, plain text) of the whole current screen."""
    console = Console(
        width=app.size.width,
        height=app.size.height,
        file=io.StringIO(),
        force_terminal=True,
        color_system="truecolor",
        record=True,
        legacy_windows=False,
    )
    update = app.screen._compositor.render_update(full=True)
    segments = [segment.text for line in update.strips for strip in line for segment in strip]
    raw = update.render_segments(console)
    console.print(update)
    return segments, raw, console.export_text(styles=False)


def assert_inert_screen(app: App[Any]) -> str:
    """No payload reaches the terminal from the current screen; returns its plain text."""
    segments, raw, plain = screen_output(app)
    bad = [s for s in segments if _UNSAFE.search(s)]
    assert not bad, bad[:5]
    for sequence in _RAW_SEQUENCES:
        assert sequence not in raw, sequence
    return plain


async def open_hostile(pilot: Any) -> MainScreen:
    await settle(pilot)
    main = pilot.app.screen
    assert isinstance(main, MainScreen)
    main.open_session(ROOT)
    await settle(pilot)
    transcript = main.query_one("#transcript", Transcript)
    transcript.focus()
    await pilot.press("x")  # every fold open: reasoning, tool calls, tool output
    await settle(pilot)
    assert transcript.message_count == 5
    assert transcript.folds_open and "▶" not in transcript.window_text()  # no fold left closed
    return main


async def check_every_view(path: Path) -> None:
    """Main screen (list, transcript with folds open, lineage), then the statistics screen."""
    app = make_app(path)
    async with app.run_test(size=(160, 60)) as pilot:
        main = await open_hostile(pilot)
        plain = assert_inert_screen(app)
        assert "␛]52;c;aGVsbG8=␇" in plain  # shown, not obeyed
        assert "⟨U+202E⟩" in plain and "⟨U+009B⟩" in plain
        transcript_text = main.query_one("#transcript", Transcript).window_text()
        flat = transcript_text.replace("\n", "")
        for shown in ("hello ␛]52", "thinking ␛]52", "→ tool␛]52", "system ␛]52", "refs ⟨U+202E⟩"):
            assert shown in flat, shown
        lineage = main.query_one("#lineage", LineageTree)
        labels = [node.label.plain for node in lineage.root.children]
        assert labels and "root title ␛]52" in labels[0]
        assert "kid title ␛]52" in labels[0] + "".join(
            n.label.plain for n in lineage.root.children[0].children
        )

        await pilot.press("escape")
        main.session_list.focus()
        await pilot.press("S")
        await settle(pilot)
        assert isinstance(app.screen, StatsScreen)
        plain = assert_inert_screen(app)
        assert "cli␛]52" in plain and "root title ␛]52" in plain


async def test_hostile_strings_never_reach_the_terminal(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    write_ours(path)
    await check_every_view(path)


@pytest.mark.peer
async def test_hostile_strings_written_by_hermes_agent_0_19_0(peer_db: Peer) -> None:
    """The same payloads written by the real hermes-agent 0.19.0 (its own `append_message`,
    legacy FTS layout), plus the odd values it accepts: bytes content, a 1e300 timestamp,
    a text token count."""
    peer = peer_db
    assert peer.db_path is not None
    path = peer.db_path

    def sql(query: str, params: tuple[Any, ...] = ()) -> None:
        peer.exec(
            "import sqlite3\nc = sqlite3.connect(db_path)\n"
            f"c.execute({query!r}, {params!r})\nc.commit()\nc.close()"
        )

    write_hostile(peer.call, sql)
    peer.call(
        "append_message",
        KID,
        "assistant",
        content=b"\xff\x00\xfe bytes",
        timestamp=1e300,
        token_count="many",
        tool_name=b"\xff",
    )
    peer.close()
    await check_every_view(path)
    app = make_app(path)
    async with app.run_test(size=(160, 60)) as pilot:
        await settle(pilot)
        main = pilot.app.screen
        assert isinstance(main, MainScreen)
        main.open_session(KID)
        await settle(pilot)
        plain = assert_inert_screen(app)
        assert "[binary: " in plain and "kid ␛]52" in plain


# ------------------------------------------------------------------ hostile ids: resume, copy, pick
HOSTILE_ID = "id " + PAYLOAD


def write_hostile_id(path: Path) -> None:
    db = SessionDB(path)
    try:
        db.create_session(HOSTILE_ID, "cli")
        db.append_message(HOSTILE_ID, "user", "a session whose id is hostile")
    finally:
        db.close()


async def _on_hostile_id(pilot: Any) -> MainScreen:
    await settle(pilot)
    main = pilot.app.screen
    assert isinstance(main, MainScreen)
    main.open_session(HOSTILE_ID)
    await settle(pilot)
    main.session_list.focus()
    await pilot.pause()
    assert main.session_list.selected_id == HOSTILE_ID
    return main


async def test_hostile_ids_through_resume_and_copy_stay_inert(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """R without `hermes` on PATH: the notice is inert and nothing is copied (no shell line holds
    the id safely); `y i` copies the exact id, `y r` refuses; every screen stays inert. With a
    `hermes` on PATH, R hands over the exact id as one `--resume=` word."""
    path = tmp_path / "state.db"
    write_hostile_id(path)
    (tmp_path / "empty").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    app = make_app(path)
    async with app.run_test(size=(160, 60), notifications=True) as pilot:  # toasts drawn
        await _on_hostile_id(pilot)
        await pilot.press("R")
        await settle(pilot)
        assert app.is_running and app.clipboard == ""
        plain = assert_inert_screen(app)
        assert "not on PATH" in plain and "cannot be copied" in plain
        from .test_handoff import press_copy

        for key in ("i", "r"):
            await press_copy(pilot, key)
            assert app.clipboard == HOSTILE_ID  # `r` left the id's copy in place
            assert_inert_screen(app)
        assert "Cannot copy" in assert_inert_screen(app)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "hermes").write_text("#!/bin/sh\n")
    (bin_dir / "hermes").chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    app = make_app(path)
    async with app.run_test(size=(160, 60)) as pilot:
        await _on_hostile_id(pilot)
        await pilot.press("R")
        await settle(pilot)
    assert app.return_value is not None
    assert app.return_value.argv == ("hermes", f"--resume={HOSTILE_ID}")


async def test_hostile_ids_through_the_picker_stay_inert(tmp_path: Path) -> None:
    """`pick`: the id format hands over the exact id (browse.print_picked decides what reaches a
    terminal); the resume format refuses with an inert notice and the picker stays."""
    from hermes_tui.app.app import PickOptions

    path = tmp_path / "state.db"
    write_hostile_id(path)
    for output in ("id", "resume"):
        app = make_app(path, pick=PickOptions(query="hostile", output=output))  # type: ignore[arg-type]
        async with app.run_test(size=(160, 60), notifications=True) as pilot:
            await settle(pilot, rounds=3)
            await pilot.press("enter")
            await settle(pilot)
            if output == "resume":
                assert app.is_running
                assert "Cannot pick" in assert_inert_screen(app)
                await pilot.press("escape")
                await settle(pilot)
        expected = None if output == "resume" else HOSTILE_ID
        assert (app.return_value.output if app.return_value else None) == expected, output


# ------------------------------------------------------------------ every view survives every row

ODD_ROW = {
    "id": 9,
    "session_id": b"\xffsid",
    "role": b"\xff",
    "content": b"\xff\x00\xfe",
    "timestamp": "yesterday",
    "tool_calls": "{bad",
    "reasoning_details": "[bad",
    "token_count": "many",
    "finish_reason": 5,
    "tool_name": {"a": 1},
    "reasoning": b"\x1b[2J",
}


def test_message_view_shows_markers_for_odd_values() -> None:
    view = message_view(ODD_ROW)
    assert view.text.startswith("[binary: 3 bytes]") and "␀" in view.text
    assert view.role.startswith("[binary: 1 bytes]")
    header = message_header(view).plain
    assert R.INVALID_DATE in header and "? tok" in header
    assert [name for name, _ in view.tool_calls] == ["tool_calls (not valid JSON)"]
    assert view.tool_calls[0][1] == "{bad"
    assert view.reasoning == "␛[2J"
    for shown in (view.text, view.role, view.reasoning, header, *(a for c in view.tool_calls for a in c)):
        assert is_inert(shown)
    # shapes the decoder can hand over: a JSON scalar, a dict, a list of non-dicts
    for calls, names in (
        (5, ["tool_calls (int, not a list)"]),
        ({"name": "x"}, ["x"]),
        (["s", 7], ["tool call"] * 2),
    ):
        assert [n for n, _ in message_view({"role": "assistant", "tool_calls": calls}).tool_calls] == names
    assert "1e+300" not in message_header(message_view({"role": "user", "timestamp": 1e300})).plain
    assert R.INVALID_DATE in message_header(message_view({"role": "user", "timestamp": 1e300})).plain


def test_markdown_character_references_stay_inert() -> None:
    """`&#x202E;` in a Markdown body is decoded by the parser; the parsed tokens are made inert."""
    view = message_view({"id": 1, "role": "assistant", "content": MARKDOWN_REFS + " [l](http://x/&#x202E;)"})
    assert view.prepared is not None
    console = Console(
        width=80, file=io.StringIO(), force_terminal=True, color_system="truecolor", record=True
    )
    console.print(view.prepared.body)
    out = console.export_text(styles=False)
    assert "⟨U+202E⟩" in out and "⟨U+200F⟩" in out and "␍" in out
    assert not _UNSAFE.search(out.replace("\n", ""))


def test_divider_and_lineage_labels_are_inert() -> None:
    text = divider_text(
        Divider(session_id=PAYLOAD, index=1, count=2, title="", edge_kind=PAYLOAD, message_count="x")
    ).plain
    assert is_inert(text) and "␛]52" in text and "? msgs" in text
    label = node_label(
        {
            "id": PAYLOAD,
            "title": None,
            "edge_kind": "\u202e",
            "message_count": "lots",
            "input_tokens": "x",
            "output_tokens": 5,
            "is_tip": True,
            "is_self": True,
        }
    ).plain
    assert is_inert(label) and "␛]52" in label and "? msgs · ? tok" in label


async def test_lineage_with_text_start_times_and_counts(tmp_path: Path) -> None:
    """Siblings whose started_at mix numbers and text sort without comparing a float to a str."""
    tree = LineageTree()
    app: App[None] = App()
    async with app.run_test() as pilot:
        await app.mount(tree)
        nodes = [
            {"id": "root", "parent_session_id": None, "started_at": 1.0, "is_self": True},
            {"id": "a", "parent_session_id": "root", "started_at": "yesterday", "input_tokens": b"\x00"},
            {"id": "b", "parent_session_id": "root", "started_at": 5.0, "message_count": 1e300},
            {"id": "c", "parent_session_id": "root", "started_at": None},
        ]
        tree.show_lineage({"root": "root", "nodes": nodes})
        await pilot.pause()
        kids = [n.data["id"] for n in tree.root.children[0].children]
        assert kids == ["a", "c", "b"]
        assert "? tok" in tree.root.children[0].children[0].label.plain


async def test_browser_starts_and_every_view_survives_odd_rows(tmp_path: Path) -> None:
    """Text, 1e300 and BLOB timestamps, NULL titles, BLOB content and roles, malformed JSON: the
    list, the transcript, the lineage and the statistics screen all show, none raises (a text
    timestamp used to make the browser exit with a traceback on every start)."""
    path = tmp_path / "state.db"
    db = SessionDB(path)
    try:
        db.create_session("odd", "cli")
        db.create_session("odd-kid", "cli", parent_session_id="odd")
        db.append_message("odd", "user", content="first")
        conn = db._conn()
        conn.execute("UPDATE sessions SET started_at = 'yesterday', title = NULL WHERE id = 'odd'")
        conn.execute("UPDATE sessions SET started_at = 1e300, input_tokens = 'many' WHERE id = 'odd-kid'")
        for values in (
            "('odd', X'ff', X'ff00fe', 'yesterday', '{bad', '[bad', NULL)",
            "('odd', 'user', X'68656c6c6f', X'00', '5', NULL, 'lots')",
            "('odd', 'assistant', 'abc', 1e300, '\"str\"', NULL, NULL)",
            "('odd', 'assistant', 'def', -1e300, '{\"a\": 1}', NULL, 3)",
        ):
            conn.execute(
                "INSERT INTO messages(session_id, role, content, timestamp, tool_calls, reasoning_details, "
                f"token_count) VALUES {values}"
            )
    finally:
        db.close()
    app = make_app(path)
    async with app.run_test(size=(140, 45)) as pilot:
        await settle(pilot)
        main = app.screen
        assert isinstance(main, MainScreen)
        assert len(main.session_list._ids or []) == 1  # Hermes' list: odd-kid is a sub-agent run
        plain = assert_inert_screen(app)
        main.open_session("odd")
        await settle(pilot)
        transcript = main.query_one("#transcript", Transcript)
        assert transcript.message_count == 5
        plain = assert_inert_screen(app)
        assert "[binary: 3 bytes]" in plain
        main.session_list.focus()
        await pilot.press("S")
        await settle(pilot)
        assert isinstance(app.screen, StatsScreen)
        usage = app.screen.query_one("#stats-usage", Static)
        assert "loading" not in str(usage.render())
        assert_inert_screen(app)


def test_stats_sections_fail_one_at_a_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A query that raises leaves its section empty with the error; the others are still read."""
    db = SessionDB(tmp_path / "state.db")
    try:
        db.create_session("s", "cli")

        def broken(*args: Any, **kwargs: Any) -> Any:
            raise TypeError("'<' not supported between instances of 'NoneType' and 'str'")

        monkeypatch.setattr(db, "activity_by_day", broken)
        data = load_stats(db, 1_700_000_000.0)
    finally:
        db.close()
    assert data["activity"] is None and "TypeError" in data["errors"]["activity"]
    assert data["by_source"] and data["by_source"][0]["source"] == "cli"
    assert isinstance(data["health"], dict)


async def test_stats_screen_shows_odd_section_values(tmp_path: Path) -> None:
    """The screen's formatting survives any value a section could hold (text counts, NaN, huge)."""
    path = tmp_path / "state.db"
    SessionDB(path).close()
    app = make_app(path)
    async with app.run_test(size=(140, 45)) as pilot:
        await settle(pilot)
        main = app.screen
        assert isinstance(main, MainScreen) and main.db is not None
        screen = StatsScreen(main, main.db)
        await app.push_screen(screen)
        await settle(pilot)
        odd: dict[str, Any] = {
            "by_source": [
                {"source": PAYLOAD, "sessions": "x", "messages": 1e300, "tokens": b"\x00", "cost": "free"}
            ],
            "by_model": [
                {
                    "model": None,
                    "session_count": None,
                    "total_input": math.nan,
                    "total_output": -1,
                    "total_cost": 1e300,
                }
            ],
            "sessions": [{"id": PAYLOAD, "title": None, "total_tokens": "t", "cost": math.inf}],
            "chains": None,
            "activity": [
                {"day": PAYLOAD, "messages": "m", "sessions": None},
                {"day": None, "messages": 1e300},
            ],
            "health": {
                "schema_version": PAYLOAD,
                "index_rows": {PAYLOAD: "n"},
                "file_size": "big",
                "wal_size": 1e300,
                "messages": "lots",
                "other_writers": 3,
            },
            "errors": {"chains": "TypeError: boom"},
        }
        screen._show(odd)
        await pilot.pause()
        plain = assert_inert_screen(app)
        assert "␛]52" in plain and "chains: not available (TypeError: boom)" in plain


def test_helpers_give_markers_for_values_that_are_not_times_or_numbers() -> None:
    """The session list called `relative_time` on a BLOB/text `last_active` and the browser exited
    with a traceback on every start; 1e300 overflowed `time.gmtime`."""
    now = 1_700_000_000.0
    for bad in ("yesterday", b"\x00", 1e300, -1e300, math.nan, math.inf, [1], {"a": 1}):
        assert R.relative_time(bad, now) == R.INVALID_AGE
        assert R.clock_time(bad) == R.INVALID_DATE
    assert R.relative_time(None, now) == "—" and R.clock_time(None) == ""
    assert R.relative_time(" 1699999990 ", now) == "10s ago"  # numeric text still reads
    assert (
        R.human_count("many") == "?" and R.human_count(1e300) == "1.0e+300" and R.human_count(math.nan) == "?"
    )
    assert R.format_cost({"actual_cost_usd": "free"}) == "?"
    assert R.format_cost({"actual_cost_usd": None, "estimated_cost_usd": 1e300}) == "$1.00e+300"
    assert R.content_text(b"\xff\x1b") == "[binary: 2 bytes] \ufffd␛"
    assert R.tool_call_parts({"function": {"name": ["x"], "arguments": '{"a": "\\u009b"}'}}) == (
        '[ "x" ]',
        '{\n  "a": "⟨U+009B⟩"\n}',
    )


# ------------------------------------------------------------------ property tests over the helpers

anything = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.floats(allow_nan=True, allow_infinity=True),
        st.text(),
        st.binary(max_size=20),
        st.sampled_from(["yesterday", "1e300", "nan", " 12 ", "", PAYLOAD, "\x00json:[bad"]),
    ),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=anything, other=anything)
def test_render_helpers_accept_any_value(value: Any, other: Any) -> None:
    now = 1_700_000_000.0
    shown = [
        R.relative_time(value, now),
        R.clock_time(value),
        R.human_count(value),
        R.format_cost({"actual_cost_usd": value, "estimated_cost_usd": other}),
        R.format_cost(value),
        R.usd(value),
        R.content_text(value),
        *R.tool_call_parts(value),
        *R.tool_call_parts({"function": {"name": value, "arguments": other}}),
        R.one_line(value, 30),
        R.snippet_text(R.one_line(value)).plain,
        bar(value, other, 50),
    ]
    if isinstance(value, dict):
        shown.append(R.session_label(value))
    for text in shown:
        assert isinstance(text, str) and is_inert(text), (value, text)
    assert R.relative_time(value, now) != "" and len(R.clock_time(value)) <= 19
    assert isinstance(R.pretty_json(value), str) and isinstance(R.truncate_text(value)[0], str)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    row=st.dictionaries(
        st.sampled_from(
            [
                "id",
                "role",
                "content",
                "timestamp",
                "tool_calls",
                "tool_name",
                "tool_call_id",
                "token_count",
                "finish_reason",
                "reasoning",
                "reasoning_content",
                "active",
                "session_id",
            ]
        ),
        anything,
    )
)
def test_message_view_and_labels_accept_any_row(row: dict[str, Any]) -> None:
    view = message_view(row)
    texts = [
        view.text,
        view.role,
        view.reasoning,
        view.session_id,
        view.tool_name or "",
        view.finish_reason or "",
        message_header(view).plain,
        *(part for call in view.tool_calls for part in call),
    ]
    for text in texts:
        assert is_inert(text), (row, text)
    node = {
        "id": row.get("id"),
        "title": row.get("content"),
        "edge_kind": row.get("role"),
        "message_count": row.get("token_count"),
        "input_tokens": row.get("timestamp"),
        "is_tip": True,
    }
    assert is_inert(node_label(node).plain)
