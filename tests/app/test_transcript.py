"""The transcript's widgets: folds (click, Enter, space, `x`), the search hit, literal agent text."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from rich.console import Console, RenderableType
from rich.markdown import Markdown
from rich.style import Style
from rich.text import Text
from textual.app import App, ComposeResult
from textual.geometry import Region
from textual.widget import Widget

from hermes_tui.app.screens.main import MainScreen
from hermes_tui.app.styles import stylesheet_paths
from hermes_tui.app.widgets.transcript import (
    Fold,
    MarkedRender,
    MessageBlock,
    MessagePart,
    TranscriptData,
    TranscriptView,
    message_parts,
    message_view,
)
from hermes_tui.app.widgets.transcript_pane import Transcript
from hermes_tui.state import SessionDB

from ._support import make_app, settle
from .test_actions import open_on, sid_of

CI_SESSION = "Fix flaky CI on the payments service"


def widget_text(widget: Widget) -> str:
    """The lines a widget paints, as plain text (styles dropped, so spans do not split words)."""
    lines = widget.render_lines(Region(0, 0, widget.size.width, widget.size.height))
    return "\n".join(strip.text for strip in lines)


def transcript_text(transcript: TranscriptView) -> str:
    """Every mounted message part's lines, in order."""
    return "\n".join(widget_text(part) for part in transcript.query(MessagePart))


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


def parts_of(transcript: TranscriptView, message_id: int) -> list[MessagePart]:
    """The widgets of one message: its MessageBlock and the parts that follow it."""
    children = list(transcript.children)
    start = children.index(transcript.query_one(f"#msg-{message_id}", MessageBlock))
    parts: list[MessagePart] = [children[start]]  # type: ignore[list-item]
    for child in children[start + 1 :]:
        if isinstance(child, MessageBlock) or not isinstance(child, MessagePart):
            break
        parts.append(child)
    return parts


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


def test_parts_of_a_message_and_the_hit_does_not_mark_shared_text() -> None:
    """A plain message is one widget; the hit copies the prepared Text before highlighting."""
    plain = message_view({"id": 1, "role": "user", "content": "hello"})
    assert [type(p) for p in message_parts(plain)] == [MessageBlock]
    tool = message_view({"id": 2, "role": "tool", "content": "needle in output"})
    closed = message_parts(tool)
    assert [type(p) for p in closed] == [MessageBlock, Fold]
    assert isinstance(closed[1], Fold) and closed[1].collapsed
    hit = message_parts(tool, terms=("needle",), match=True)
    fold = hit[1]
    assert isinstance(fold, Fold) and not fold.collapsed  # the matched tool output is open
    assert fold.body.spans and not tool.prepared.output.spans  # type: ignore[union-attr]
    assert all(p.has_class("-match") for p in hit) and hit[-1].has_class("-end")
    assert not any(p.has_class("-end") for p in hit[:-1])


def test_the_hit_keeps_its_markdown_with_the_terms_marked() -> None:
    """A search or find hit used to be drawn as its Markdown source (``**``, backticks, fences)
    to mark the terms; it is drawn as Markdown, the terms marked in what is drawn."""
    source = "Use **logical replication** with `pg_dump`:\n\n```sql\nCREATE PUBLICATION pub;\n```\n"
    view = message_view({"id": 5, "role": "assistant", "content": source})
    block = message_parts(view, terms=("replication", "publication"), match=True)[0]
    assert isinstance(block, MessageBlock)
    plain = message_parts(view)[0]
    assert isinstance(plain, MessageBlock)
    assert block._memo is not None and plain._memo is not None
    drawn = drawn_text(block._memo.renderable)
    assert drawn.plain == drawn_text(plain._memo.renderable).plain  # drawn as the Markdown is
    assert "**" not in drawn.plain and "`" not in drawn.plain and "logical replication" in drawn.plain
    assert marked_pieces(drawn) == ["replication", "PUBLICATION"]
    assert not marked_pieces(drawn_text(plain._memo.renderable))  # the shared Markdown is unmarked
    assert "◆ match" in block._header.plain


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
    """A bare TranscriptView, fed hand-made messages."""

    CSS_PATH: ClassVar = stylesheet_paths()

    def compose(self) -> ComposeResult:
        yield TranscriptView(id="transcript")


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
        transcript = app.query_one(TranscriptView)
        data = TranscriptData(session_id="s", items=[message_view(r) for r in rows])
        await transcript.show(data, target_id=4, terms=("INST",))
        transcript.focus()
        await pilot.press("x")
        await pilot.pause()
        text = transcript_text(transcript)
        for prefix in ("user", "assistant", "reasoning", "output", "hit"):
            assert f"{prefix} [/INST] [bold]x[/bold] [link=evil]no[/link]" in text, prefix
        assert "→ [red]tool[/red]" in text
        assert "[b]t[/b]" in text
        assert '"[/INST] [bold]x[/bold]' in text
        hit = transcript.query_one("#msg-4", MessageBlock)
        assert hit.match and hit.has_class("-match")
        rendered = hit._renderable()
        body = rendered.renderables[1].renderable  # type: ignore[attr-defined]
        assert isinstance(body, MarkedRender)  # the hit keeps its Markdown, "INST" marked in it
        assert "INST" in marked_pieces(drawn_text(body))
