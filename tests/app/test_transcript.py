"""The transcript: folds (click, Enter, space, `x`), the search hit, literal agent text."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from rich.console import Console, RenderableType
from rich.markdown import Markdown
from rich.style import Style
from rich.text import Text
from textual.app import App, ComposeResult
from textual.geometry import Region
from textual.pilot import Pilot
from textual.strip import Strip
from textual.widget import Widget

from hermes_tui.app.screens.main import MainScreen
from hermes_tui.app.styles import stylesheet_paths
from hermes_tui.app.widgets.transcript_items import TranscriptData, message_view
from hermes_tui.app.widgets.transcript_pane import Transcript
from hermes_tui.state import SessionDB

from ._support import drawn_as_match, make_app, settle
from .test_actions import open_on, sid_of

CI_SESSION = "Fix flaky CI on the payments service"


def widget_text(widget: Widget) -> str:
    """The lines a widget paints, as plain text (styles dropped, so spans do not split words)."""
    lines = widget.render_lines(Region(0, 0, widget.size.width, widget.size.height))
    return "\n".join(strip.text for strip in lines)


def drawn_text(renderable: RenderableType, width: int = 100) -> Text:
    """What a renderable draws at ``width``, as a Text whose spans keep each piece's style."""
    console = Console(width=width, color_system="truecolor", force_terminal=True)
    text = Text()
    for line in console.render_lines(renderable, console.options, pad=False):
        for segment in line:
            text.append(segment.text, segment.style)
        text.append("\n")
    return text


def marked_pieces(text: Text) -> list[str]:
    """The pieces of ``text`` drawn in the search highlight (reverse video)."""
    pieces = []
    for span in text.spans:
        style = span.style if isinstance(span.style, Style) else Style.parse(span.style)
        if style.reverse:
            pieces.append(text.plain[span.start : span.end])
    return pieces


def strips_text(strips: list[Strip]) -> Text:
    """Drawn lines as a Text whose spans keep each piece's style (the border and padding cells
    of a message left out)."""
    text = Text()
    for strip in strips:
        for segment in strip.crop(2, strip.cell_length):
            text.append(segment.text, segment.style)
        text.append("\n")
    return text


async def shown(pilot: Pilot[None], rows: list[dict[str, Any]], **kw: Any) -> Transcript:
    transcript = pilot.app.query_one(Transcript)
    await transcript.show(TranscriptData(session_id="s", items=[message_view(r) for r in rows]), **kw)
    await pilot.pause()
    return transcript


def drawn_message(transcript: Transcript, message_id: int) -> list[Strip]:
    index = transcript.index_of(message_id)
    strips = None if index is None else transcript.item_strips(index)
    assert strips is not None
    return strips


def test_message_view_prepares_renderables_off_the_loop() -> None:
    """The worker builds the Markdown and highlighted Text; `compose` on the loop does not."""
    view = message_view(
        {
            "id": 7,
            "role": "assistant",
            "content": "**bold** and `code`",
            "tool_calls": [{"function": {"name": "terminal", "arguments": '{"command": "ls"}'}}],
            "reasoning": "think [/INST]",
        }
    )
    assert view.prepared is not None
    assert isinstance(view.prepared.body, Markdown)
    assert [name for name, _ in view.prepared.calls] == ["terminal"]
    assert view.prepared.reasoning is not None and view.prepared.reasoning.plain == "think [/INST]"
    tool = message_view({"id": 8, "role": "tool", "content": '{"ok": true}'})
    assert tool.prepared is not None and tool.prepared.body is None
    assert tool.prepared.output is not None and '"ok": true' in tool.prepared.output.plain


async def test_parts_of_a_message_and_the_hit_does_not_mark_shared_text() -> None:
    """A plain message is its header and body; a tool output is a closed fold; the hit opens it
    and marks the term in a copy of the prepared Text (the record's own is not marked)."""
    tool = message_view({"id": 2, "role": "tool", "content": "needle in output"})
    app = _TranscriptApp()
    async with app.run_test(size=(110, 30)) as pilot:
        transcript = await shown(pilot, [{"id": 1, "role": "user", "content": "hello"}])
        assert [line.strip() for line in (transcript.item_text(0) or "").split("\n")][1:] == ["▎ hello", ""]
        await transcript.show(TranscriptData(session_id="s", items=[tool]))
        await pilot.pause()
        assert (
            "▶ result (1 lines)" in transcript.window_text()
            and "needle in output" not in transcript.window_text()
        )
        await transcript.show(TranscriptData(session_id="s", items=[tool]), target_id=2, terms=("needle",))
        await pilot.pause()
        drawn = transcript.window_text()
        assert "◆ match" in drawn and "▼ result (1 lines)" in drawn and "needle in output" in drawn  # open
        assert "needle" in marked_pieces(strips_text(drawn_message(transcript, 2)))
        assert not tool.prepared.output.spans  # type: ignore[union-attr]


async def test_the_hit_keeps_its_markdown_with_the_terms_marked() -> None:
    """A search or find hit used to be drawn as its Markdown source (``**``, backticks, fences)
    to mark the terms; it is drawn as Markdown, the terms marked in what is drawn."""
    source = "Use **logical replication** with `pg_dump`:\n\n```sql\nCREATE PUBLICATION pub;\n```\n"
    row = {"id": 5, "role": "assistant", "content": source}
    app = _TranscriptApp()
    async with app.run_test(size=(110, 30)) as pilot:
        transcript = await shown(pilot, [row])
        plain = strips_text(drawn_message(transcript, 5)[1:])  # (its body: the header apart)
        await shown(pilot, [row], target_id=5, terms=("replication", "publication"))
        strips = drawn_message(transcript, 5)
        drawn = strips_text(strips[1:])
        assert drawn.plain == plain.plain  # drawn as the Markdown is
        assert "**" not in drawn.plain and "`" not in drawn.plain and "logical replication" in drawn.plain
        assert marked_pieces(drawn) == ["replication", "PUBLICATION"]
        assert not marked_pieces(plain)  # the shared Markdown is unmarked
        assert "◆ match" in strips[0].text


def _title_at(transcript: Transcript, mark: str) -> tuple[int, int]:
    """The first fold title drawn with ``mark`` (▶ closed, ▼ open): its click offset in the view
    (border and padding included) and its line."""
    for line, text in enumerate(transcript.window_text().split("\n")):
        if mark in text:
            return 2 + text.index(mark), line
    raise AssertionError(f"no {mark} fold title drawn")


async def test_fold_toggles_on_click_enter_and_space(demo_db: Path) -> None:
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        main = await open_on(pilot, sid_of(demo_db, CI_SESSION))
        transcript = main.query_one("#transcript", Transcript)
        assert transcript.scroll_y == 0
        x, line = _title_at(transcript, "▶")
        height = transcript.virtual_size.height

        def title() -> str:
            return transcript.window_text().split("\n")[line]

        await pilot.click(transcript, offset=(x, line + 1))  # (+1: the border row)
        await pilot.pause()
        assert "▼" in title()
        assert transcript.virtual_size.height > height  # title + body
        assert transcript.focused_fold is not None  # the fold has the focus (a focused Fold)
        await pilot.click(transcript, offset=(x, line + 2))  # in the open body: no toggle
        await pilot.pause()
        assert "▼" in title()
        await pilot.press("enter")
        await pilot.pause()
        assert "▶" in title() and transcript.virtual_size.height == height
        await pilot.press("space")
        await pilot.pause()
        assert "▼" in title()
        await pilot.click(transcript, offset=(x, line + 1))  # the title of an open fold closes it
        await pilot.pause()
        assert "▶" in title() and transcript.virtual_size.height == height
        assert isinstance(app.screen, MainScreen)


async def test_x_opens_and_closes_every_fold_in_the_window(demo_db: Path) -> None:
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        main = await open_on(pilot, sid_of(demo_db, CI_SESSION))
        transcript = main.query_one("#transcript", Transcript)
        text = transcript.window_text()
        assert text.count("▶") >= 4 and "▼" not in text
        transcript.focus()
        await pilot.press("x")
        await pilot.pause()
        text = transcript.window_text()
        assert "▶" not in text and text.count("▼") >= 4
        assert "▼ reasoning" in text and "Five failures share one test" in text
        await pilot.press("x")
        await pilot.pause()
        text = transcript.window_text()
        assert text.count("▶") >= 4 and "▼" not in text
        assert "Five failures share one test" not in text


async def test_matched_tool_output_is_open_and_highlighted(demo_db: Path) -> None:
    sid = sid_of(demo_db, CI_SESSION)
    with SessionDB(demo_db, read_only=True, migrate=False) as db:
        tool = next(m for m in db.get_messages(sid) if m["role"] == "tool" and "50 passed" in m["content"])
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        main = app.screen
        assert isinstance(main, MainScreen)
        main.load_session(sid, int(tool["id"]), ("passed",), focus=True)  # what opening a hit does
        await settle(pilot)
        transcript = main.query_one("#transcript", Transcript)
        index = transcript.index_of(int(tool["id"]))
        assert index is not None
        drawn = transcript.item_text(index) or ""
        assert "◆ match" in drawn
        assert "▼ result (1 lines)" in drawn and "50 passed in 98.7s" in drawn  # its fold open
        assert drawn.count("▼") == transcript.window_text().count("▼") == 1  # every other closed
        # Drawn as the match, the term marked: the header's border in the match's colour, and
        # "passed" a piece of its own in the output (the widget view's -match and body span).
        match = transcript.get_component_rich_style("lines--border-match").color
        shown = [transcript.render_line(y) for y in range(transcript.scrollable_content_region.height)]
        header = next(line for line in shown if "◆ match" in line.text)
        assert next(seg.style for seg in header if seg.text.strip()).color == match  # type: ignore[union-attr]
        output = next(line for line in shown if "50 passed in 98.7s" in line.text)
        plain = next(seg.style for seg in output if "98.7s" in seg.text)
        assert any(seg.text == "passed" and seg.style != plain for seg in output)


class _TranscriptApp(App[None]):
    """A bare transcript, fed hand-made messages."""

    CSS_PATH: ClassVar = stylesheet_paths()

    def compose(self) -> ComposeResult:
        yield Transcript(id="transcript")


MARKUP = "[/INST] [bold]x[/bold] [link=evil]no[/link]"


async def test_markup_like_agent_text_renders_literally_everywhere() -> None:
    """Bodies, hit bodies, fold titles and fold bodies: brackets are data, never markup."""
    rows = [
        {"id": 1, "role": "user", "content": f"user {MARKUP}"},
        {
            "id": 2,
            "role": "assistant",
            "content": f"assistant {MARKUP}",
            "reasoning": f"reasoning {MARKUP}",
            "tool_calls": [{"function": {"name": "[red]tool[/red]", "arguments": f'{{"a": "{MARKUP}"}}'}}],
        },
        {"id": 3, "role": "tool", "tool_name": "[b]t[/b]", "content": f"output {MARKUP}"},
        {"id": 4, "role": "assistant", "content": f"hit {MARKUP}"},
    ]
    app = _TranscriptApp()
    async with app.run_test(size=(110, 60)) as pilot:
        transcript = app.query_one(Transcript)
        data = TranscriptData(session_id="s", items=[message_view(r) for r in rows])
        await transcript.show(data, target_id=4, terms=("INST",))
        transcript.focus()
        await pilot.press("x")
        await pilot.pause()
        text = transcript.window_text()
        for prefix in ("user", "assistant", "reasoning", "output", "hit"):
            assert f"{prefix} [/INST] [bold]x[/bold] [link=evil]no[/link]" in text, prefix
        assert "→ [red]tool[/red]" in text
        assert "[b]t[/b]" in text
        assert '"[/INST] [bold]x[/bold]' in text
        assert drawn_as_match(transcript, 4)
        assert "INST" in marked_pieces(strips_text(drawn_message(transcript, 4)))  # marked in it
