"""The transcript's message cursor: the current message is drawn (`-current` on its widgets)
and `[` / `]` move it. Every message action (copy `m`/`c`, the pager, the editor, fork `B`) acts
on that message (`TranscriptView.current_message`).

A mixin of `TranscriptView` (kept apart so the view stays one readable file): it reads the
view's window (`items`, `start`, `end`, `_item_runs`, `_on_screen`) and grows it at an edge.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from textual.widget import Widget

from hermes_tui.app.widgets.transcript_items import MessageView

if TYPE_CHECKING:
    from collections.abc import Sequence


class MessageCursor:
    """`current_id` and its highlight; `TranscriptView` provides the window it reads."""

    if TYPE_CHECKING:
        items: Sequence[Any]
        start: int
        end: int
        _current_id: int | None
        _marked: list[Widget]

        def _item_runs(self) -> list[list[Widget]]: ...
        def _on_screen(self) -> list[MessageView]: ...
        def current_message(self) -> MessageView | None: ...
        async def _edge_grow(self, where: str) -> None: ...
        def call_after_refresh(self, callback: Any, *args: Any, **kwargs: Any) -> bool: ...
        def call_later(self, callback: Any, *args: Any, **kwargs: Any) -> bool: ...
        def scroll_to_widget(self, widget: Widget, *args: Any, **kwargs: Any) -> bool: ...

    @property
    def current_id(self) -> int | None:
        return self._current_id

    @current_id.setter
    def current_id(self, value: int | None) -> None:
        if value != self._current_id:
            self._current_id = value
            self.call_after_refresh(self.mark_current)

    def mark_current(self) -> None:
        """Highlight the current message (the message cursor every message action and `B` use):
        its widgets get `-current`, the previous one's lose it."""
        # Read-only: `current_message()` would move `current_id` to the top message while a jump
        # (End, a find match) is still scrolling to its own, and lose it.
        # What `current_message()` names, without moving `current_id`: the current message
        # while it is on screen, else the top one (a jump's scroll marks again when it lands).
        shown = self._on_screen() if self.items else []
        target = next((m for m in shown if m.id == self._current_id), shown[0] if shown else None)
        wanted: list[Widget] = []
        for k, run in enumerate(self._item_runs()):
            if (
                target is not None
                and self.start + k < len(self.items)
                and self.items[self.start + k] is target
            ):
                wanted = run
                break
        if wanted == self._marked:
            return
        for widget in self._marked:
            widget.remove_class("-current")
        for widget in wanted:
            widget.add_class("-current")
        self._marked = wanted

    def action_message_step(self, step: int) -> None:
        """`[` / `]`: the cursor to the previous / next message, scrolled into view (the window
        grows at its edge when the next message is not mounted yet)."""
        current = self.current_message()
        if current is None:
            return
        messages = [i for i in self.items if isinstance(i, MessageView) and not i.fold]
        if current not in messages:
            return
        index = messages.index(current) + step
        if not 0 <= index < len(messages):
            return
        target = messages[index]
        self.current_id = target.id
        at = self.items.index(target)
        if not self.start <= at < self.end:
            self.call_later(self._edge_grow, "after" if at >= self.end else "before")
            self.call_after_refresh(self._scroll_to_current)
            return
        self._scroll_to_current()

    def _scroll_to_current(self) -> None:
        for k, run in enumerate(self._item_runs()):
            if self.start + k < len(self.items) and self.items[self.start + k] is not None:
                item = self.items[self.start + k]
                if isinstance(item, MessageView) and item.id == self._current_id and run:
                    self.scroll_to_widget(run[0], animate=False, top=False)
                    break
        self.mark_current()
