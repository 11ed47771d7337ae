"""What the controllers see of the main screen and of each other, as small Protocols: a
controller never imports the screen (an import-linter contract), and calls a sibling through
the few methods named here rather than importing it (`farm-studio look` draws no circle).

Each controller's own `…Host` Protocol extends `ScreenHost` with the screen's values it reads
and sets; the main screen satisfies them all (checked by mypy where it builds its controllers).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from rich.text import Text

from hermes_tui.app.controllers.messages import OrderLoaded
from hermes_tui.app.widgets.session_list import SessionList

if TYPE_CHECKING:
    from hermes_tui.app.session_context import BrowserApp


class ScreenHost(Protocol):
    """The main screen's parts every controller uses."""

    @property
    def hermes(self) -> BrowserApp: ...

    @property
    def session_list(self) -> SessionList: ...


class Headers(Protocol):
    """The info line (`header.Header`)."""

    def show(self, text: Text) -> None: ...

    def update(self) -> None: ...


class Lists(Protocol):
    """The list's order and title (`list_order.ListOrder`)."""

    def title(self) -> None: ...

    async def loaded(self, message: OrderLoaded, keep_index: int | None = None) -> None: ...


class LiveOrders(Protocol):
    """The live order refresh (`live.LiveFollow`), of one store or several."""

    def refresh_order(self) -> None: ...


class Menus(Protocol):
    """The filter bar (`filter_bar.FilterBar`)."""

    def summary(self) -> str: ...

    def set_options(self, selector: str, values: list[str]) -> None: ...

    def restore_source(self, sources: list[str]) -> None: ...

    def remember(self) -> None: ...


class Keys(Protocol):
    """The footer's key checks (`key_checks.KeyChecks`)."""

    def refresh_action_keys(self) -> None: ...

    def tip_changed(self, shown: tuple[str | None, str | None]) -> None: ...
