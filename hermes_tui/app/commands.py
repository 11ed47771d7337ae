"""Command palette provider: every action of the browser with its key, and jump to a session.

Actions come from the live binding maps and the action registry (`hermes_tui.app.actions`),
so a key shown here is the key that is bound; choosing one runs it on the main screen exactly
as the key would (after the palette has closed, so dialogs open over the main screen).

The session lookup runs on the event loop, so each lookup is handed to a thread worker and
awaited; SQL never runs on the loop. Errors are swallowed into "no hits" (a palette must
never crash the app). Over several profiles the lookup asks every store the list shows (each on
its own thread) and a hit opens the session in its own store: ids repeat across stores.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual.binding import Binding
from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.content import Content
from textual.markup import escape

from hermes_tui.app import actions
from hermes_tui.app.bindings import bindings_of
from hermes_tui.app.controllers.search_source import order_source
from hermes_tui.app.render import one_line, session_label
from hermes_tui.app.screens.help import key_label

if TYPE_CHECKING:
    from hermes_tui.app.controllers.search_source import Scope
    from hermes_tui.app.screens.main import MainScreen

MAX_HITS = 20


@dataclass(frozen=True)
class PaletteAction:
    """One palette entry: ``action`` runs on the main screen (or the app when ``on_app``)."""

    label: str
    action: str
    help: str
    on_app: bool = False


#: The main screen's and app's own actions, in the palette's order (the registered session
#: actions — rename, delete, prune, export, statistics — are listed before these).
BUILTIN: tuple[PaletteAction, ...] = (
    PaletteAction("Search messages", "search", "full-text search; n/N step through the hits"),
    PaletteAction(
        "Find in the transcript",
        "find",
        "ctrl+f, or / in the transcript; n/N or Enter/shift+Enter step, Esc closes",
    ),
    PaletteAction("Filters: source, model, date, title", "filters", "narrow the session list"),
    PaletteAction(
        "Archived sessions ↔ Hermes' list",
        "toggle_archived",
        "Hermes' archived view (remembered); the filter bar's view menu also shows hidden sessions",
    ),
    PaletteAction(
        "Change the order of the list", "cycle_order", "last active, started, messages, tokens, cost"
    ),
    PaletteAction("Zoom the focused pane", "zoom", "the list then shows every column; again to undo"),
    PaletteAction("Chain reader on/off", "chain", "read a compression chain as one transcript"),
    PaletteAction("Show or hide rewound messages", "toggle_inactive", "rewound and compaction-archived rows"),
    PaletteAction("Reload from the database", "reload", "re-read the list and the open transcript"),
    PaletteAction("Show or hide the session list", "toggle_pane('list')", "remembered across restarts"),
    PaletteAction("Show or hide the lineage", "toggle_pane('lineage')", "remembered across restarts"),
    PaletteAction("Show or hide the transcript", "toggle_pane('transcript')", "remembered across restarts"),
    PaletteAction("Wider session list", "resize_list(1)", "4 points a step; remembered"),
    PaletteAction("Narrower session list", "resize_list(-1)", "4 points a step; remembered"),
    PaletteAction("Session list at its automatic width", "resize_list(0)", "undo < and >"),
    PaletteAction("Help: every key", "help", "all keys, the list marks and the search routes", on_app=True),
    PaletteAction("Change the theme", "change_theme", "pick a colour theme", on_app=True),
)


def find_sessions(db: Any, query: str) -> list[dict[str, Any]]:
    """Sessions whose title or id contains ``query``, plus an exact/prefix id match (worker)."""
    from hermes_tui.state import SessionFilter

    ids: list[str] = []
    exact = db.resolve_session_id(query)
    if exact:
        ids.append(exact)
    order = db.session_order(SessionFilter(text=query))
    for sid in list(order.ids[: MAX_HITS * 2]):
        if sid not in ids:
            ids.append(sid)
    return db.list_rows(ids[: MAX_HITS * 2]) if ids else []


def find_sessions_across(
    scope: Scope, query: str, profiles: Sequence[str] | None = None
) -> list[dict[str, Any]]:
    """`find_sessions` on every store of ``profiles`` (None: every open store; one store: it) in
    parallel, each row tagged with its ``profile`` (worker; one store's is None). The stores'
    lists are interleaved, so every store's best matches (an exact id first) make the cut; a
    store of several that fails adds nothing."""
    per_store = [
        [{**row, "profile": p} for row in rows or []]
        for p, rows in scope.each(find_sessions, profiles, query)
    ]
    merged: list[dict[str, Any]] = []
    for rank in range(max((len(rows) for rows in per_store), default=0)):
        merged += [rows[rank] for rows in per_store if rank < len(rows)]
    return merged[: MAX_HITS * 2]


def _lookup(main: MainScreen, query: str) -> Any:
    """The session lookup for ``main``'s stores, as a callable for a thread worker (None: none
    open). Over several profiles: the stores the list shows (the profile filter of `p`)."""
    scope = main.scope
    if order_source(scope) is None:
        return None
    return partial(find_sessions_across, scope, query, main.profile_filter)


def _hit_help(row: dict[str, Any], federated: bool) -> str:
    """``[profile · ]id · source · N msgs``, every part made inert."""
    parts = [one_line(row.get("profile"), 24)] if federated else []
    parts += [one_line(row.get("id")), one_line(row.get("source")), f"{row.get('message_count') or 0} msgs"]
    return escape(" · ".join(parts))


def bound_keys(bindings: Iterable[Binding], action: str) -> str:
    """How the keys bound to ``action`` read (``r``, ``ctrl+r``, ``/``), or "" when unbound."""
    keys: list[str] = []
    for binding in bindings:
        if binding.action == action:
            for key in key_label(binding.key).split(", "):
                if key not in keys:
                    keys.append(key)
    return ", ".join(keys)


class SessionCommands(Provider):
    """Every action with its key, and jump to a session by title or id."""

    def _main(self) -> MainScreen | None:
        from hermes_tui.app.screens.main import MainScreen

        for screen in reversed(self.app.screen_stack):
            if isinstance(screen, MainScreen):
                return screen
        return None

    # ------------------------------------------------------------------ actions
    def palette_actions(self, main: MainScreen) -> list[tuple[str, str, str, Any]]:
        """(label, keys, help, callback) for every action, keys read from the live bindings."""
        screen_bindings = bindings_of(main)
        app_bindings = bindings_of(self.app)
        entries: list[tuple[str, str, str, Any]] = []
        for spec in actions.ACTIONS:
            keys = bound_keys(screen_bindings, f"run_action({spec.name!r})") or key_label(spec.key)
            run = partial(main.action_run_action, spec.name)
            entries.append((spec.palette or spec.description, keys, spec.help, run))
        for item in BUILTIN:
            target = self.app if item.on_app else main
            keys = bound_keys(app_bindings if item.on_app else screen_bindings, item.action)
            entries.append((item.label, keys, item.help, partial(target.run_action, item.action)))
        return entries

    @staticmethod
    def _display(label: Content | str, keys: str) -> Content:
        """The label, then its key in brackets: ``Delete the selected session(s)  [D]``."""
        shown = label if isinstance(label, Content) else Content(label)
        return Content.assemble(shown, "  ", (f"[{keys}]" if keys else "[palette only]", "bold"))

    async def discover(self) -> Hits:
        """With an empty query: every action, then the sessions cached at the top of the list."""
        main = self._main()
        if main is None:
            return
        for label, keys, help_text, callback in self.palette_actions(main):
            yield DiscoveryHit(self._display(label, keys), callback, text=label, help=escape(help_text))
        sessions = main.session_list
        for index in range(min(sessions.total, 10)):
            row = sessions.row_at(index)
            if row:
                label = f"Open: {session_label(row)[:70]}"
                where = f"{one_line(row.get('profile'), 24)} · " if row.get("profile") else ""
                yield DiscoveryHit(
                    Text(label),
                    partial(main.open_session, row["id"], profile=row.get("profile")),
                    text=label,
                    help=escape(f"{where}{one_line(row['id'])} · {one_line(row.get('source'))}"),
                )

    async def search(self, query: str) -> Hits:
        main = self._main()
        query = query.strip()
        if main is None:
            return
        matcher = self.matcher(query)
        for label, keys, help_text, callback in self.palette_actions(main):
            score = matcher.match(label)
            if score > 0:
                yield Hit(
                    score,
                    self._display(matcher.highlight(label), keys),
                    callback,
                    text=label,
                    help=escape(help_text),
                )
        lookup = _lookup(main, query) if len(query) >= 2 else None
        if lookup is None:
            return
        federated = main.scope.shows_profile
        worker = main.run_worker(
            lookup,
            thread=True,
            exit_on_error=False,
            group="palette",
            description="palette session lookup",
            exclusive=True,
        )
        try:
            rows = await worker.wait()
        except Exception:
            return
        for row in rows or []:
            label = session_label(row)
            text = f"{label} {row['id']}"
            score = matcher.match(text)
            if row["id"].startswith(query):
                score = max(score, 1.0)
            if score <= 0:
                score = 0.01  # the store matched a substring the fuzzy matcher did not
            # Over several stores the same title (or id) can be in two of them: say whose it is.
            shown = f"Open: {label[:70]}" + (f" · {one_line(row.get('profile'), 24)}" if federated else "")
            yield Hit(
                score,
                Text(shown),
                partial(main.open_session, row["id"], profile=row.get("profile")),
                text=shown,
                help=_hit_help(row, federated),
            )
