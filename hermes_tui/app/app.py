"""HermesApp: stylesheets, theme, app-level bindings and the command palette provider.

It also hands over to the shell: `resume_session` exits with a `Handoff` whose command
`hermes_tui.cli` runs once the terminal is restored, and in picker mode (`hermes-tui pick`)
Enter exits with the chosen session and Esc / ctrl+c exit with status 1 and no result.

Remembered settings (`settings.py`) are read in the constructor; `remember()` records what the
user changes (theme here, order/filters/panes from the main screen) and the writer saves it
shortly after in its own thread, and at exit.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, replace
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from textual import events
from textual.app import App
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.theme import Theme

from hermes_tui.app import cpu_share, textual_private
from hermes_tui.app.bindings import bindings_of, declared_bindings
from hermes_tui.app.commands import SessionCommands
from hermes_tui.app.gc_policy import POLL_S, IdleCollector
from hermes_tui.app.handoff import (
    Handoff,
    ResumeCommand,
    ResumeError,
    ResumeSettings,
    build_resume_command,
    command_text,
    program_available,
)
from hermes_tui.app.handoff_actions import compression_tip, register_handoff_actions
from hermes_tui.app.prefetch import OpenPrefetch
from hermes_tui.app.render import Clock, system_clock
from hermes_tui.app.screens.usage import usage_heard
from hermes_tui.app.session_actions import register_actions
from hermes_tui.app.settings import Settings, SettingsWriter
from hermes_tui.app.settings import load as load_settings
from hermes_tui.app.styles import stylesheet_paths
from hermes_tui.safe_text import one_line

if TYPE_CHECKING:
    from textual.screen import Screen

    from hermes_tui.app.federated_prefetch import FederatedPrefetch
    from hermes_tui.app.screens.main import MainScreen
    from hermes_tui.state import SessionDB

DEFAULT_THEME = Settings.theme
#: The stylesheets, typed as Textual's `CSS_PATH` is (a list of `Path` is not a list of
#: `str | PurePath` to mypy).
_CSS_PATHS: list[str | PurePath] = [*stylesheet_paths()]
#: Filter settings: read in picker mode too, never written from it (its --source is per run).
FILTER_SETTINGS = frozenset({"source", "filter_text", "active_now", "view"})

log = logging.getLogger(__name__)


class SettingsReport(Message):
    """A note or an error from the settings writer's thread, shown as a toast."""

    def __init__(self, severity: Literal["information", "warning", "error"], text: str) -> None:
        super().__init__()
        self.severity: Literal["information", "warning", "error"] = severity
        self.text = text


@dataclass(frozen=True)
class PickOptions:
    """`hermes-tui pick`: the search query to start with, a source filter, and what to print."""

    query: str = ""
    source: str | None = None
    output: Literal["id", "resume"] = "id"


#: Terminals with fewer rows are "short" (the `-short` class): 80×24 is the size to fit.
SHORT_ROWS = 30


class HermesApp(App[Handoff]):
    """Browser over one `state.db`; never changes the file's structure, browsing never writes."""

    CSS_PATH: ClassVar = _CSS_PATHS
    TITLE = "hermes-tui"
    COMMANDS = App.COMMANDS | {SessionCommands}
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("question_mark", "help", "Help"),
        Binding("q", "quit", "Quit"),
        # Its own action, so the search pane's block on `quit` (a typed letter) never blocks it.
        Binding("ctrl+q", "force_quit", "Quit", show=False, priority=True),
        # The command palette's, as `App.__init__` would add it (ahead of the picker's keys).
        Binding(
            App.COMMAND_PALETTE_BINDING,
            "command_palette",
            "palette",
            show=False,
            key_display=App.COMMAND_PALETTE_DISPLAY,
            priority=True,
            tooltip="Open the command palette",
        ),
        # The picker's (`hermes-tui pick`): priority, checked before the panes' own Enter/Esc, and
        # off (`check_action`) unless picking at the main screen's top level (dialogs, the
        # transcript and the filters keep theirs). ctrl+c keeps Textual's own binding after it.
        Binding("enter", "pick_choose", "Pick", show=False, priority=True),
        Binding("escape", "pick_cancel", "Cancel", show=False, priority=True),
        *declared_bindings(App).get("ctrl+c", []),
        Binding("ctrl+c", "pick_cancel", "Cancel", show=False, priority=True),
    ]

    def __init__(
        self,
        db_path: Path,
        *,
        read_only: bool = False,
        now: Clock = system_clock,
        theme: str | None = None,
        path_label: str | None = None,
        resume: ResumeSettings | None = None,
        pick: PickOptions | None = None,
        settings_path: Path | None = None,
        prefetch: bool = True,
        yield_cpu: bool = False,
    ) -> None:
        """``theme`` None: the remembered one. ``settings_path`` None: `settings.default_path()`
        (``$HERMES_TUI_CONFIG`` or the platform's config folder). ``prefetch`` False: the caller
        opens other stores (`federated_prefetch.federate`), so ordering this one ahead would only compete.
        ``yield_cpu``: the drawing at `SCHED_IDLE`, the store's reads kept at normal priority
        (`--yield-cpu`, or the settings' `[live] yield_cpu`; cpu_share.py)."""
        super().__init__()
        # Remembered settings: read once, never fails; written only on a change.
        loaded = load_settings(settings_path)
        self.yield_cpu = yield_cpu or loaded.settings.yield_cpu
        self.settings_warning = loaded.warning
        self.settings_writer = SettingsWriter(loaded, report=self._settings_report)
        if textual_private.wanted():  # fewer full collections while following (textual_private.py)
            try:
                textual_private.install()
            except textual_private.TextualChanged as error:
                log.warning("%s", error)
        register_actions()  # before the main screen binds every registered action's key
        register_handoff_actions()
        self.resume_settings = resume or ResumeSettings()
        self.pick = pick
        self.db_path = Path(db_path)
        self.read_only = read_only
        self.now = now
        self.theme_name = theme or loaded.settings.theme
        self._theme_remembered = theme is None
        self.path_label = path_label
        self.db: SessionDB | None = None
        self.collector = IdleCollector()
        # Open and order the store while Textual starts (see prefetch.py); a stat, no SQL here.
        self.prefetch: OpenPrefetch | None = None
        self.stores_prefetch: FederatedPrefetch | None = None
        if prefetch and self.db_path.is_file():
            from hermes_tui.app.widgets.session_list import PAGE_SIZE

            self.prefetch = OpenPrefetch(self.db_path, read_only, PAGE_SIZE)

    def on_resize(self, event: events.Resize) -> None:
        """``-short`` on a terminal under `SHORT_ROWS` rows: the dialogs drop their margins and
        draw one-line buttons there, so each fits with its keys in sight (styles/dialogs.tcss)."""
        self.set_class(event.size.height < SHORT_ROWS, "-short")

    def get_default_screen(self) -> Screen[None]:
        from hermes_tui.app.screens.main import main_screen

        return main_screen()

    def on_load(self) -> None:
        """With `--yield-cpu` only (cpu_share.py): the loop thread at `SCHED_IDLE`, set before the
        driver and the workers start their threads, which inherit it; the thread workers (the
        store's reads) run on the threads it kept at normal priority. By default the app leaves
        its scheduling as it found it."""
        if not self.yield_cpu or not cpu_share.yield_everything():
            return
        readers = cpu_share.reader_pool()
        if readers is not None:
            asyncio.get_running_loop().set_default_executor(readers)

    def on_mount(self) -> None:
        # Set in code so TEXTUAL_THEME in the environment cannot change what tests see.
        self.theme = self.theme_name if self.theme_name in self.available_themes else DEFAULT_THEME
        warnings = [self.settings_warning] if self.settings_warning else []
        if self._theme_remembered and self.theme != self.theme_name:
            warnings.append(
                f"Remembered theme {one_line(self.theme_name, 40)!r} is unknown; using {self.theme}."
            )
        for text in warnings:
            log.warning("%s", text)
            self.notify(text, title="Settings", severity="warning", timeout=10, markup=False)
        # Subscribed after the first assignment: only a theme the user picks is remembered.
        self.theme_changed_signal.subscribe(self, self._theme_changed)
        # Full collections wait for quiet input (gc_policy.py); start once startup's objects exist.
        self.set_timer(1.0, self.collector.start)
        self.set_interval(POLL_S, self.collector.poll)

    def on_ready(self) -> None:
        """Picker mode starts in the search box with the query typed in."""
        if self.pick is None:
            return
        from textual.widgets import Input

        from hermes_tui.app.screens.main import MainScreen

        screen = self.screen
        if isinstance(screen, MainScreen):
            self._search_titles_too(screen)
            screen.action_search()
            if self.pick.query:
                field = screen.query_one("#search-input", Input)
                field.value = self.pick.query
                field.cursor_position = len(field.value)

    def _search_titles_too(self, main: MainScreen) -> None:
        """Picker mode's search lists the sessions whose title matches first (picker_search.py);
        a store connected before this ran is connected again, wrapped."""
        from hermes_tui.app.picker_search import store_finder, with_titles
        from hermes_tui.app.widgets.search import SearchPane

        search = main.query_one("#search", SearchPane)
        finder = store_finder(main)
        search.wrap = lambda searcher, counter: with_titles(searcher, counter, finder)
        if search.searcher is not None and search.titles is not None:
            search.connect(search.searcher, search.titles, search.counter)

    def on_main_screen_opened(self, message: object) -> None:
        """Picker mode's ``--source``: once the store is open (the main screen has filled both
        source menus), restrict the list and the search to it."""
        self._apply_pick_source()

    def on_main_screen_stores_opened(self, message: object) -> None:
        """The same once several profiles' stores are open (`pick --all`, `--profile`)."""
        self._apply_pick_source()

    def on_main_screen_store_live(self, message: Any) -> None:
        """The main screen's live follower saw a write in a store, the one or a profile's (its
        message bubbles up from the main screen): a Usage screen on the stack follows it
        (`usage_heard`)."""
        usage_heard(self, message.update)

    def _apply_pick_source(self) -> None:
        """Select picker mode's ``--source`` in the list's and the search's source menus."""
        from textual.widgets import Select
        from textual.widgets.select import InvalidSelectValueError

        from hermes_tui.app.screens.main import MainScreen

        source = self.pick.source if self.pick is not None else None
        screen = self.screen
        if not source or not isinstance(screen, MainScreen):
            return
        for selector in ("#filter-source", "#search-source"):
            try:
                screen.query_one(selector, Select).value = source
            except InvalidSelectValueError:  # not among the store's sources
                self.notify(f"No session has the source {source!r}.", severity="warning", markup=False)
                return

    def on_unmount(self) -> None:
        self.collector.stop()
        self.settings_writer.close()
        ahead = self.stores_prefetch  # stores opened ahead (`federated_prefetch.federate`) and never taken
        if ahead is not None:
            self.stores_prefetch = None
            ahead.discard()

    # ------------------------------------------------------------------ remembered settings
    @property
    def settings(self) -> Settings:
        """The settings as they are now (what the user changed included)."""
        return self.settings_writer.current

    def remember(self, **changes: Any) -> None:
        """Record settings the user changed; written shortly after, in another thread, and only
        when they differ from the file. Picker mode keeps its filters to itself."""
        if self.pick is not None:
            changes = {k: v for k, v in changes.items() if k not in FILTER_SETTINGS}
        if changes:
            self.settings_writer.update(replace(self.settings, **changes))

    def _theme_changed(self, theme: Theme) -> None:
        self.remember(theme=theme.name)

    def _settings_report(self, severity: str, text: str) -> None:
        """From the writer's thread (or the exiting app): a toast, posted thread-safely; the log
        keeps it when the app has gone."""
        log.warning("%s", text)
        self.post_message(SettingsReport("error" if severity == "error" else "warning", text))

    def on_settings_report(self, message: SettingsReport) -> None:
        self.notify(one_line(message.text, 300), title="Settings", severity=message.severity, markup=False)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """The app's single-letter keys (`q`, `?`) are off while the search pane is shown: a
        letter typed there is part of a query (Esc closes search first). ctrl+q still quits."""
        if action == "pick_cancel":
            return self._pick_top_level()
        if action == "pick_choose":
            return self._pick_top_level() and self._picked() is not None
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
        from hermes_tui.app.widgets.transcript_pane import Transcript

        if isinstance(self.screen, HelpScreen):
            return
        main = next((s for s in self.screen_stack if isinstance(s, MainScreen)), None)
        sections: list[tuple[str, list[Binding]]] = [
            (
                "app",
                [b for b in bindings_of(self) if self.pick is not None or not b.action.startswith("pick_")],
            ),
            ("main", bindings_of(main) if main else []),
            ("session list", [b for b in SessionList.BINDINGS if isinstance(b, Binding)]),
            ("transcript", [b for b in Transcript.BINDINGS if isinstance(b, Binding)]),
            ("lineage", [b for b in LineageTree.BINDINGS if isinstance(b, Binding)]),
            (
                "palette",
                [
                    Binding(
                        "ctrl+p",
                        "command_palette",
                        "Command palette: every action with its key, jump to a session, theme…",
                    )
                ],
            ),
        ]
        self.push_screen(HelpScreen(sections))

    async def action_force_quit(self) -> None:
        await self.action_quit()

    def _close_store(self) -> None:
        if self.prefetch is not None:
            self.prefetch.discard()
        if self.db is not None:
            self.db.close()

    async def action_quit(self) -> None:
        self._close_store()
        self.exit(return_code=1 if self.pick is not None else 0)

    # ------------------------------------------------------------------ handing over
    def resume_command(self, session_id: str) -> ResumeCommand:
        """The resume command for ``session_id`` (already the tip) of the store the user is
        looking at; `ResumeError` if there is none (an unusable template, a store Hermes cannot
        open)."""
        return build_resume_command(session_id, self._store_path(), settings=self.resume_settings)

    def _store_path(self) -> Path:
        """The file of the store the user is looking at: with several profiles open, the
        selected row's store, so the resume command names that row's profile."""
        from hermes_tui.app.screens.main import MainScreen

        main = next((s for s in self.screen_stack if isinstance(s, MainScreen)), None)
        db = main.db if main is not None else None
        return db.db_path if db is not None else self.db_path

    def resume_command_text(self, session_id: str) -> str:
        """The resume command as one line every documented shell runs as it is (`ResumeError`
        when it cannot be written so)."""
        return command_text(self.resume_command(session_id))

    def resume_session(self, session_id: str) -> None:
        """Exit to run Hermes on ``session_id`` (a chain's tip), without a shell (any id is one
        exact word); when the program is not on PATH, show the command and copy it instead
        (nothing is run)."""
        try:
            command = self.resume_command(session_id)
        except ResumeError as exc:
            self.notify(one_line(str(exc), 300), title="Resume", severity="error", markup=False)
            return
        if not program_available(command.argv):
            program = one_line(command.argv[0], 60)
            try:
                text = command_text(command)
            except ResumeError as exc:
                self.notify(
                    f"{program} is not on PATH, and the command cannot be copied as shell text: "
                    f"{one_line(str(exc), 200)}",
                    title="Resume",
                    severity="warning",
                    timeout=12,
                    markup=False,
                )
                return
            self.copy_to_clipboard(text)
            self.notify(
                f"{program} is not on PATH. Copied the command to the clipboard:\n{text}",
                title="Resume",
                severity="warning",
                timeout=12,
                markup=False,
            )
            return
        self.hand_off(Handoff("resume", session_id, command.argv, env=command.env))

    def hand_off(self, result: Handoff) -> None:
        """Close the store and exit with ``result`` for `hermes_tui.cli.main` to act on."""
        self._close_store()
        self.exit(result)

    # ------------------------------------------------------------------ picker mode
    def _pick_top_level(self) -> bool:
        """Picker keys apply on the main screen itself: the search box or results, or the list
        (not in a dialog, the filters, the transcript or lineage, where Enter/Esc keep theirs)."""
        from hermes_tui.app.screens.main import MainScreen
        from hermes_tui.app.widgets.search import SearchPane
        from hermes_tui.app.widgets.session_list import SessionList

        screen = self.screen
        if self.pick is None or not isinstance(screen, MainScreen) or screen.has_class("-filters"):
            return False
        focused = screen.focused
        if focused is None or isinstance(focused, SessionList):
            return True
        return any(isinstance(node, SearchPane) for node in focused.ancestors)

    def _picked(self) -> tuple[str, str | None] | None:
        """The session Enter picks, as ``(id, profile)``: the highlighted hit (the first when the
        caret is in the box) while searching, else the list row under the cursor. ``profile``
        names the session's store over several profiles (ids repeat across stores), else None."""
        from hermes_tui.app.screens.main import MainScreen
        from hermes_tui.app.widgets.search import SearchPane
        from hermes_tui.app.widgets.session_list import SessionList

        screen = self.screen
        if not isinstance(screen, MainScreen):
            return None
        focused = screen.focused
        if isinstance(focused, SessionList):
            sid = focused.selected_id
            return (sid, focused.selected_profile) if sid is not None else None
        if focused is not None and screen.has_class("-searching"):
            search = screen.query_one("#search", SearchPane)
            if not search.hits:
                return None
            index = search.highlighted if search.highlighted is not None else 0
            hit = search.hits[min(index, len(search.hits) - 1)]
            if hit.get("session_id") is None:
                return None
            profile = hit.get("profile")
            return str(hit["session_id"]), str(profile) if profile is not None else None
        return None

    def _picked_store(self, profile: str | None) -> SessionDB | None:
        """The store the picked session is in: its profile's over several stores, else the one
        (`MainScreen.db_for`: one store is a federation of one)."""
        from hermes_tui.app.screens.main import MainScreen

        main = next((s for s in self.screen_stack if isinstance(s, MainScreen)), None)
        return main.db_for(profile) if main is not None else self.db

    def action_pick_choose(self) -> None:
        """Enter in picker mode: exit with the chosen id (or its resume command, naming the
        profile of the store the session is in)."""
        picked = self._picked()
        if picked is None or self.pick is None:
            return
        sid, profile = picked
        db = self._picked_store(profile)
        if db is None:
            return
        if self.pick.output == "id":
            self.hand_off(Handoff("pick", sid, output=sid))
            return

        def work() -> None:
            try:
                tip = compression_tip(db, sid)
            except Exception as exc:
                self.call_from_thread(
                    self.notify,
                    one_line(str(exc), 300),
                    title="Could not pick",
                    severity="error",
                    markup=False,
                )
                return
            self.call_from_thread(self._picked_resume, sid, tip, db.db_path)

        self.run_worker(work, thread=True, group="pick", exit_on_error=False, description="pick")

    def _picked_resume(self, sid: str, tip: str, store: Path) -> None:
        """The resume command of the picked session's tip, with ``-p`` for the profile whose
        store ``store`` is (not the selected row's: a search hit may be in another store), as
        text every documented shell runs as it is; a session that cannot be resumed so is
        refused with a notice, and the picker stays."""
        choice = getattr(self, "store_choice", None)
        home = getattr(choice, "home", None)
        try:
            command = build_resume_command(tip, store, home=home, settings=self.resume_settings)
            text = command_text(command)
        except ResumeError as exc:
            self.notify(
                f"{one_line(str(exc), 300)} (--format id prints the id exactly)",
                title="Cannot pick",
                severity="error",
                markup=False,
            )
            return
        self.hand_off(Handoff("pick", sid, command.argv, output=text, env=command.env))

    async def action_pick_cancel(self) -> None:
        """Esc / ctrl+c in picker mode: nothing chosen, exit status 1."""
        self._close_store()
        self.exit(return_code=1)
