"""Opening a store (or several) and its first order: what the open workers read and tell.

The functions run in the main screen's thread workers and return (or yield) the messages the
worker posts (`controllers/messages.py`); none touches a widget, so each is tested with a
store file and no app. `StoreOpening` does the one-store open for the main screen (the
several-stores open is `federation.Federation`'s).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

from rich.text import Text
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Select, Static

from hermes_tui.app.controllers.host import Headers, Menus, ScreenHost
from hermes_tui.app.controllers.messages import (
    Missing,
    ModelsRead,
    Opened,
    OpenFailed,
    StoresOpened,
)
from hermes_tui.app.controllers.search_source import OneStore
from hermes_tui.app.controllers.workers import run_thread
from hermes_tui.app.prefetch import OpenPrefetch, filter_values, open_store
from hermes_tui.app.stores import BrowserStores, StoreChoice, open_chosen
from hermes_tui.app.widgets.search import SearchPane
from hermes_tui.safe_text import inert, one_line
from hermes_tui.state import SessionDB, SessionFilter, StoreError

if TYPE_CHECKING:
    pass


def open_one(path: Path, read_only: bool, prefetch: OpenPrefetch | None) -> Message:
    """Open without migrating (never change the file's structure) and read capabilities; the
    open prefetch's store when it opened this file while Textual started."""
    if not path.exists():
        return Missing(path)
    pre = prefetch.take(path, read_only) if prefetch is not None else None
    if pre is not None:
        return Opened(pre.db, pre.caps, pre.sources, [], prefetched=pre)
    try:
        db, caps, sources = open_store(path, read_only)
    except StoreError as exc:  # the store's own words: what the file is
        return OpenFailed(path, str(exc))
    except Exception as exc:
        return OpenFailed(path, f"{type(exc).__name__}: {exc}")
    return Opened(db, caps, sources, [])


def open_several(app: Any, choice: StoreChoice, read_only: bool, path: Path) -> Message:
    """The stores open on a bounded pool (a failure is that store's badge); this waits for the
    first ones, the others join as they answer (`StoresArrived`). The stores the open prefetch
    opened while Textual started are taken, if it is this choice."""
    try:
        stores, sources, models = open_chosen(app, choice, read_only)
    except Exception as exc:
        return OpenFailed(path, f"{type(exc).__name__}: {exc}")
    return StoresOpened(stores, sources, models)


def model_choices(db: SessionDB) -> list[str] | None:
    """The model filter's choices (None when the store cannot say; the list reports its
    errors). The model list scans every session row of a 0.19.0 file: off the first-paint path."""
    try:
        return filter_values(db)
    except Exception:  # noqa: BLE001 - the menu stays empty
        return None


def prepare_search(db: SessionDB) -> None:
    """The first search's one-time scan (seconds at 10M messages), so the first keystroke does
    not wait for it; a search meets the same error and reports it."""
    with contextlib.suppress(Exception):
        db.prepare_search()


def notice_text(what: str, safety: str) -> Text:
    """The message that replaces the panes when nothing could be opened: what the file is, that
    nothing was changed, and how to go on (the demo, another --db)."""
    text = Text()
    text.append(inert(what) + "\n\n", style="bold")
    text.append(safety + "\n\n")
    text.append("Press d to open the demo database (built once and cached), or start hermes-tui ")
    text.append("with --db PATH to a Hermes state.db. q quits.")
    return text


class Follows(Protocol):
    """The live follow of the store that opened (`live.LiveFollow`, not imported: it imports
    `federation`, which imports this module)."""

    def start(self, stores: OneStore) -> None: ...

    def stop(self) -> None: ...


class OpeningHost(ScreenHost, Protocol):
    """What `StoreOpening` reads and sets of the main screen (besides Textual's own methods)."""

    state: str
    caps: dict[str, Any]
    db: SessionDB | None
    filter: SessionFilter
    order: str
    active_only: bool

    @property
    def live(self) -> Follows: ...

    @property
    def one_store(self) -> OneStore: ...

    @property
    def scope(self) -> BrowserStores | OneStore: ...

    def reload_order(self, keep: Any = None, *, first_paint: bool = False) -> None: ...

    @property
    def header(self) -> Headers: ...

    @property
    def filter_bar(self) -> Menus: ...


class StoreOpening:
    """The main screen opening one store: the open worker, wiring the panes to the store that
    opened, its first order and filter menus, the notice when nothing could be opened, and the
    demo. Its workers run on the screen (groups "open", "order", "values", "demo")."""

    def __init__(self, host: OpeningHost) -> None:
        self.host = host
        self.screen = cast("Screen[Any]", host)

    def open(self, path: Path) -> None:
        """Open ``path`` in a worker; the panes show progress meanwhile."""
        host = self.host
        host.state = "opening"
        host.header.show(Text(f"hermes-tui · opening {host.hermes.display_path(path)}…"))
        read_only, prefetch = host.hermes.read_only, host.hermes.prefetch
        self._run(
            partial(self._post, lambda: open_one(path, read_only, prefetch)), "open", "open the database"
        )

    def _run(self, work: Callable[[], None], group: str, description: str, exclusive: bool = True) -> None:
        run_thread(self.screen, work, group, description, exclusive=exclusive)

    def _post(self, read: Callable[[], Message]) -> None:
        self.screen.post_message(read())

    def opened(self, message: Opened) -> None:
        """The store opened: the list, search and menus read it; its first order comes."""
        host, screen = self.host, self.screen
        host.live.stop()  # before its store closes under it
        old, host.db = host.db, message.db
        if old is not None and old is not message.db:
            old.close()
        host.caps = message.caps
        host.state = "ready"
        host.hermes.db = message.db
        screen.remove_class("-missing", "-failed")
        host.header.update()
        sessions = host.session_list
        sessions.row_source = message.db.list_rows
        db, now = message.db, host.hermes.now
        sessions.status_source = lambda ids: db.live_status(ids, now())
        sessions.empty_text = "No sessions in this database."
        one = host.one_store
        host.live.start(one)  # a federation of one
        search = screen.query_one("#search", SearchPane)
        search.set_sources(message.sources)
        search.index_progress = db.cjk_index_progress
        search.connect(one.searcher(), one.titles, one.counter())
        host.filter_bar.set_options("#filter-source", message.sources)
        host.filter_bar.set_options("#filter-model", message.models)
        host.filter_bar.restore_source(message.sources)
        one.first_paint(message.prefetched)  # from the head of its order (or the prefetch's)
        host.reload_order(first_paint=True)
        self._run(
            partial(self._values_worker, one, db),
            "values",
            "read the model filter's choices",
            exclusive=False,
        )

    def _values_worker(self, one: OneStore, db: SessionDB) -> None:
        """The model menu's choices, then the first search's one-time scan (`prepare_search`)."""
        models = model_choices(db)
        if models is None:
            return
        self.screen.post_message(ModelsRead(one, models))
        prepare_search(db)

    def models_read(self, message: ModelsRead) -> None:
        host, screen = self.host, self.screen
        if message.scope is not host.scope:
            return  # another store (or several) opened meanwhile
        select = screen.query_one("#filter-model", Select)
        picked = select.value
        with screen.prevent(Select.Changed):
            host.filter_bar.set_options("#filter-model", message.models)
            if isinstance(picked, str) and picked in message.models:
                select.value = picked

    def missing(self, message: Missing) -> None:
        shown = self.host.hermes.display_path(message.path)
        self.show_notice(
            "missing",
            f"{shown} · not found",
            f"There is no session database at {shown}.",
            "Nothing was created: hermes-tui never makes a database it was asked to open.",
        )
        self.screen.notify(f"No session database at {shown}. Press d for the demo.", severity="warning")

    def failed(self, message: OpenFailed) -> None:
        shown = self.host.hermes.display_path(message.path)
        error = message.error.replace(str(message.path), shown)
        self.show_notice(
            "failed",
            f"{shown} · cannot open",
            f"hermes-tui cannot browse {shown}:\n{error}",
            "Nothing was changed: the file was only read, never written.",
        )

    def show_notice(self, state: str, header: str, what: str, safety: str) -> None:
        """Replace the panes with one clear message: what the file is, that nothing was changed,
        and how to go on (the demo, another --db). No error toast: the message is the screen."""
        host, screen = self.host, self.screen
        host.state = state
        screen.remove_class("-searching")
        screen.add_class(f"-{state}")
        host.session_list.loading = False
        host.session_list.empty_text = "No database is open."
        host.session_list.set_order([])
        host.header.show(Text(f"hermes-tui · {one_line(header)}", no_wrap=True, overflow="ellipsis"))
        notice = screen.query_one("#notice", Static)
        notice.update(notice_text(what, safety))
        notice.border_title = "No database open"
        screen.refresh_bindings()

    def open_demo(self) -> None:
        """Build (once) and open the demo database; only offered when nothing is open."""
        host = self.host
        if host.state not in {"missing", "failed"}:
            return
        self.screen.remove_class("-missing", "-failed")
        host.header.show(Text("hermes-tui · building the demo database…"))
        host.session_list.loading = True
        self._run(self._demo_worker, "demo", "build the demo database")

    def _demo_worker(self) -> None:
        """The demo is written through the store API into the cache folder, never ~/.hermes."""
        from hermes_tui.demo import ensure_demo_db

        try:
            path = ensure_demo_db()
        except Exception as exc:
            self.screen.post_message(OpenFailed(Path("demo"), f"{type(exc).__name__}: {exc}"))
            return
        self.screen.app.call_from_thread(self._switch_to, path)

    def _switch_to(self, path: Path) -> None:
        self.host.hermes.db_path = path
        self.open(path)
