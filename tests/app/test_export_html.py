"""The export dialog offers HTML: chosen with the keys, it writes one safe page (0600) of the
session; with "all sessions in the list" it says HTML is one page per session and writes nothing."""

from __future__ import annotations

import stat
from html.parser import HTMLParser
from pathlib import Path

from textual.widgets import Input, RadioButton, Static

from hermes_tui.app.screens.export import HTML_ONE_PAGE, ExportDialog
from hermes_tui.app.screens.main import MainScreen

from ._support import make_app, settle
from .test_actions import open_on, plain, sid_of


class Tags(HTMLParser):
    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


async def test_export_dialog_writes_html_chosen_with_the_keys(demo_db: Path) -> None:
    sid = sid_of(demo_db, "Nightly backup report")
    target = Path.home() / "page.html"
    app = make_app(demo_db, read_only=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_on(pilot, sid)
        await pilot.press("e")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, ExportDialog)
        formats = [b.name for b in dialog.query("#export-format RadioButton").results(RadioButton)]
        assert formats == ["json", "jsonl", "md", "html"]
        dialog.query_one("#export-format").focus()
        await pilot.press("down", "down", "down", "enter")
        await pilot.pause()
        assert dialog.fmt == "html"
        path = dialog.query_one("#export-path", Input)
        assert path.value == f"~/{sid}.html"
        path.value = str(target)
        await pilot.press("ctrl+s")
        await settle(pilot, rounds=3)
        assert isinstance(app.screen, MainScreen)
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    html = target.read_text()
    page = Tags(html)
    names = [t for t, _a in page.tags]
    assert html.startswith("<!DOCTYPE html>") and "script" not in names
    assert any(
        (a.get("http-equiv") or "").lower() == "content-security-policy" for t, a in page.tags if t == "meta"
    )
    assert "Nightly backup report" in "".join(page.text)
    assert not any(k.startswith("on") for _t, a in page.tags for k in a)


async def test_export_dialog_html_of_many_sessions_is_refused(demo_db: Path) -> None:
    target = Path.home() / "all.html"
    app = make_app(demo_db, read_only=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("e")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, ExportDialog)
        dialog.query_one("#export-scope").focus()
        await pilot.press("down", "down", "enter")
        dialog.query_one("#export-format").focus()
        await pilot.press("down", "down", "down", "enter")
        await pilot.pause()
        assert (dialog.scope, dialog.fmt) == ("filter", "html")
        dialog.query_one("#export-path", Input).value = str(target)
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert isinstance(app.screen, ExportDialog)
        assert HTML_ONE_PAGE in plain(dialog.query_one("#status", Static))
    assert not target.exists()


async def test_export_dialog_redacts_the_html_page_when_asked(demo_db: Path) -> None:
    """The page for sharing: "redact" (offered for html only) hides what `sessions export
    --redact` hides; here a home path and an e-mail address the session's text holds."""
    from hermes_tui.app.widgets.marked import MarkedCheckbox
    from hermes_tui.state import SessionDB

    sid = sid_of(demo_db, "Nightly backup report")
    secret = "see /home/alice/notes/plan.txt or mail ops@example.com"
    with SessionDB(demo_db) as db:
        db.append_message(sid, "user", secret, timestamp=1748779300.0)
    targets = [Path.home() / "plain.html", Path.home() / "redacted.html"]
    app = make_app(demo_db)
    async with app.run_test(size=(120, 40)) as pilot:
        for target, redact in zip(targets, (False, True), strict=True):
            await open_on(pilot, sid)
            await pilot.press("e")
            await settle(pilot)
            dialog = app.screen
            assert isinstance(dialog, ExportDialog)
            box = dialog.query_one("#export-redact", MarkedCheckbox)
            assert box.disabled  # json first: a copy of the store is never redacted
            dialog.query_one("#export-format").focus()
            await pilot.press("down", "down", "down", "enter")
            await pilot.pause()
            assert not box.disabled
            if redact:
                box.focus()
                await pilot.press("space")
                assert box.value
            dialog.query_one("#export-path", Input).value = str(target)
            await pilot.press("ctrl+s")
            await settle(pilot, rounds=3)
            assert isinstance(app.screen, MainScreen)
    plain_text = "".join(Tags(targets[0].read_text()).text)
    redacted = "".join(Tags(targets[1].read_text()).text)
    assert "/home/alice" in plain_text and "ops@example.com" in plain_text
    assert "alice" not in redacted and "ops@example.com" not in redacted
    assert "Nightly backup report" in redacted and "notes/plan.txt" in redacted
