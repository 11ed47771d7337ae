"""Command palette provider: jump to a session by title or id (prefix).

The palette's search runs on the event loop, so each lookup is handed to a thread worker and
awaited; SQL never runs on the loop. Errors are swallowed into "no hits" (a palette must
never crash the app).
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.markup import escape

from hermes_tui.app.render import one_line, session_label

if TYPE_CHECKING:
    from hermes_tui.app.screens.main import MainScreen

MAX_HITS = 20


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


class SessionCommands(Provider):
    """Jump to a session by title or id."""

    def _main(self) -> MainScreen | None:
        from hermes_tui.app.screens.main import MainScreen

        for screen in reversed(self.app.screen_stack):
            if isinstance(screen, MainScreen):
                return screen
        return None

    async def discover(self) -> Hits:
        """With an empty query: the sessions already cached at the top of the list."""
        main = self._main()
        if main is None:
            return
        sessions = main.session_list
        for index in range(min(sessions.total, 10)):
            row = sessions.row_at(index)
            if row:
                yield DiscoveryHit(
                    Text(f"Open: {session_label(row)[:70]}"),
                    partial(main.open_session, row["id"]),
                    help=escape(f"{row['id']} · {one_line(row.get('source'))}"),
                )

    async def search(self, query: str) -> Hits:
        main = self._main()
        query = query.strip()
        if main is None or main.db is None or len(query) < 2:
            return
        worker = main.run_worker(
            partial(find_sessions, main.db, query),
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
        matcher = self.matcher(query)
        for row in rows or []:
            label = session_label(row)
            text = f"{label} {row['id']}"
            score = matcher.match(text)
            if row["id"].startswith(query):
                score = max(score, 1.0)
            if score <= 0:
                score = 0.01  # the store matched a substring the fuzzy matcher did not
            display = Text(f"Open: {label[:70]}")
            yield Hit(
                score,
                display,
                partial(main.open_session, row["id"]),
                help=escape(
                    f"{row['id']} · {one_line(row.get('source'))} · {row.get('message_count') or 0} msgs"
                ),
            )
