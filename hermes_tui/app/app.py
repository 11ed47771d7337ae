"""HermesApp: stylesheets, theme, app-level bindings and the command palette provider."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from textual import events
from textual.app import App
from textual.binding import Binding, BindingType

from hermes_tui.app.commands import SessionCommands
from hermes_tui.app.gc_policy import POLL_S, IdleCollector
from hermes_tui.app.prefetch import OpenPrefetch
from hermes_tui.app.render import Clock, system_clock
from hermes_tui.app.session_actions import register_actions
from hermes_tui.app.styles import stylesheet_paths

if TYPE_CHECKING:
    from textual.screen import Screen

    from hermes_tui.state import SessionDB

DEFAULT_THEME = "textual-dark"


class HermesApp(App[None]):
    """Browser over one `state.db`; never changes the file's structure, browsing never writes."""

    CSS_PATH: ClassVar = stylesheet_paths()
    TITLE = "hermes-tui"
    COMMANDS = App.COMMANDS | {SessionCommands}
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("question_mark", "help", "Help"),
        Binding("q", "quit", "Quit"),
        # Its own action, so the search pane's block on `quit` (a typed letter) never blocks it.
        Binding("ctrl+q", "force_quit", "Quit", show=False, priority=True),
    ]

    def __init__(
        self,
        db_path: Path,
        *,
        read_only: bool = False,
        now: Clock = system_clock,
        theme: str = DEFAULT_THEME,
        path_label: str | None = None,
    ) -> None:
        super().__init__()
        register_actions()  # before the main screen binds every registered action's key
        self.db_path = Path(db_path)
        self.read_only = read_only
        self.now = now
        self.theme_name = theme
        self.path_label = path_label
        self.db: SessionDB | None = None
        self.collector = IdleCollector()
        # Open and order the store while Textual starts (see prefetch.py); a stat, no SQL here.
        self.prefetch: OpenPrefetch | None = None
        if self.db_path.is_file():
            from hermes_tui.app.widgets.session_list import PAGE_SIZE

            self.prefetch = OpenPrefetch(self.db_path, read_only, PAGE_SIZE)

    def get_default_screen(self) -> Screen[None]:
        from hermes_tui.app.screens.main import MainScreen

        return MainScreen()

    def on_mount(self) -> None:
        # Set in code so TEXTUAL_THEME in the environment cannot change what tests see.
        self.theme = self.theme_name if self.theme_name in self.available_themes else DEFAULT_THEME
        # Full collections wait for quiet input (gc_policy.py); start once startup's objects exist.
        self.set_timer(1.0, self.collector.start)
        self.set_interval(POLL_S, self.collector.poll)

    def on_unmount(self) -> None:
        self.collector.stop()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """The app's single-letter keys (`q`, `?`) are off while the search pane is shown: a
        letter typed there is part of a query (Esc closes search first). ctrl+q still quits."""
        return not (action in {"quit", "help"} and self.screen.has_class("-searching"))

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, (events.Key, events.MouseDown, events.MouseScrollDown, events.MouseScrollUp)):
            self.collector.touch()
        await super().on_event(event)

    def display_path(self, path: Path) -> str:
        """How the header names a file: the fixed label (tests), else ~-relative."""
        if self.path_label is not None:
            return self.path_label if path == self.db_path else path.name
        try:
            return "~/" + str(path.resolve().relative_to(Path.home().resolve()))
        except ValueError:
            return str(path)

    def action_help(self) -> None:
        from hermes_tui.app.screens.help import HelpScreen
        from hermes_tui.app.screens.main import MainScreen
        from hermes_tui.app.widgets.lineage import LineageTree
        from hermes_tui.app.widgets.session_list import SessionList
        from hermes_tui.app.widgets.transcript import TranscriptView

        if isinstance(self.screen, HelpScreen):
            return
        main = next((s for s in self.screen_stack if isinstance(s, MainScreen)), None)
        screen_bindings = list(main._bindings.key_to_bindings.values()) if main else []
        sections = [
            ("app", [b for b in self._bindings.key_to_bindings.values() for b in b]),
            ("main", [b for group in screen_bindings for b in group]),
            ("session list", [b for b in SessionList.BINDINGS if isinstance(b, Binding)]),
            ("transcript", [b for b in TranscriptView.BINDINGS if isinstance(b, Binding)]),
            ("lineage", [b for b in LineageTree.BINDINGS if isinstance(b, Binding)]),
            ("palette", [Binding("ctrl+p", "command_palette", "Command palette: every action with its key, jump to a session, theme…")]),
        ]
        self.push_screen(HelpScreen(sections))

    async def action_force_quit(self) -> None:
        await self.action_quit()

    async def action_quit(self) -> None:
        if self.prefetch is not None:
            self.prefetch.discard()
        if self.db is not None:
            self.db.close()
        self.exit()
