"""Key bindings, every one declared in a class's `BINDINGS`, read without Textual's private map.

Textual merges a class's `BINDINGS` with its bases' when the class is made (a subclass's
bindings of a key replace its bases'), and has no public per-instance binding. So what varies
is a class: `with_keys(cls, bindings)` makes (once) a subclass whose ``bindings`` come before
or after its base's bindings of the same keys; Textual runs the first binding of a key whose
`check_action` allows it, so the others stay as fallbacks. The main screen binds the session
actions (registered at run time, `actions.ACTIONS`) and its panes' footer keys so.

A footer key is hidden with `check_action` returning False and shown again by
`refresh_bindings()` (False also disables it: a key that must keep working has a second,
hidden binding after it). `FitsFooter` does that for the keys that show only on a wide enough
terminal.

Readers (the help screen, the command palette) use `declared_bindings` and `bindings_of`: the
class `BINDINGS` merged as Textual merges them; `tests/app/test_bindings_public.py` checks the
reading against what a running app dispatches.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any, TypeVar

from textual.actions import parse
from textual.app import App
from textual.binding import Binding
from textual.dom import DOMNode

N = TypeVar("N", bound=DOMNode)

#: The subclasses `with_keys` made, by (class, bindings, first).
_made: dict[tuple[type, tuple[Binding, ...], bool], type] = {}


def declared_bindings(cls: type[DOMNode]) -> dict[str, list[Binding]]:
    """``cls``'s bindings by key from the `BINDINGS` of it and its bases, in Textual's merge order
    (keys in the order the most basic class first binds them; a class's bindings of a key
    replace those of its bases)."""
    keys: dict[str, list[Binding]] = {}
    for base in reversed(cls.__mro__):
        if not (isinstance(base, type) and issubclass(base, DOMNode)):
            continue
        own: dict[str, list[Binding]] = {}
        for binding in Binding.make_bindings(base.__dict__.get("BINDINGS", [])):
            own.setdefault(binding.key, []).append(binding)
        keys.update(own)
    return keys


def bindings_by_key(node: DOMNode) -> dict[str, list[Binding]]:
    """``node``'s bindings by key: its class's (and on an app, the palette's key that
    `App.__init__` adds when nothing binds the palette)."""
    table = declared_bindings(type(node))
    if isinstance(node, App) and node.ENABLE_COMMAND_PALETTE:
        actions = {b.action for group in table.values() for b in group}
        if not actions & {"command_palette", "app.command_palette"}:
            palette = Binding(
                node.COMMAND_PALETTE_BINDING,
                "command_palette",
                "palette",
                show=False,
                key_display=node.COMMAND_PALETTE_DISPLAY,
                priority=True,
                tooltip="Open the command palette",
            )
            table.setdefault(palette.key, []).append(palette)
    return table


def bindings_of(node: DOMNode) -> list[Binding]:
    """Every binding of ``node`` (its own, not its ancestors'), in the order Textual keeps them."""
    return [b for group in bindings_by_key(node).values() for b in group]


def with_keys(cls: type[N], bindings: Sequence[Binding], *, first: bool = True) -> type[N]:
    """A subclass of ``cls`` (same name) with ``bindings`` (comma-separated keys allowed) ahead
    of ``cls``'s own bindings of their keys (``first``), or after them. Made once per class and
    bindings: every app and screen of the same keys shares it."""
    split = tuple(Binding.make_bindings(bindings))
    made = _made.get((cls, split, first))
    if made is None:
        base = declared_bindings(cls)
        own: dict[str, list[Binding]] = {}
        for binding in split:
            own.setdefault(binding.key, []).append(binding)
        listed = [
            b
            for key, group in own.items()
            for b in ((*group, *base.get(key, [])) if first else (*base.get(key, []), *group))
        ]
        made = type(
            cls.__name__, (cls,), {"BINDINGS": listed, "__module__": cls.__module__, "__doc__": cls.__doc__}
        )
        _made[(cls, split, first)] = made
    return made


def fitted(binding: Binding) -> list[Binding]:
    """``binding`` as a footer key shown only when it fits (`FitsFooter`): the shown binding runs
    it through ``fit(...)``, and a hidden one after it keeps the key working when it does not."""
    shown = replace(binding, action=f"fit({binding.action!r})", show=True)
    return [shown, replace(binding, show=False)]


class FitsFooter:
    """A pane (mixed in before its widget class) whose footer keys bound with `fitted` show only
    when `fits` says so (the main screen's `Panes.fit_footer` sets it); the key's own check (on
    its namespace: the pane, its screen or the app) still decides as well."""

    fits: dict[str, bool] = {}  # noqa: RUF012 - replaced per instance, never mutated

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "fit" and parameters:
            inner = str(parameters[0])
            if not self.fits.get(inner, True):
                return False
            target, name, params = self._target(inner)
            return target.check_action(name, params)
        checked: bool | None = super().check_action(action, parameters)  # type: ignore[misc]
        return checked

    def _target(self, action: str) -> tuple[Any, str, tuple[object, ...]]:
        """The node ``action`` runs on, as Textual resolves it: ``screen.…`` on the app's current
        screen (a dialog's, while one is open over this pane's), ``app.…``/``focused.…`` on
        those, else this pane."""
        namespace, name, params = parse(action)
        node: Any = self
        target = getattr(node.app, namespace, None) if namespace in {"app", "screen", "focused"} else node
        return (node if target is None else target), name, params

    async def action_fit(self, action: str) -> None:
        """Run the fitted key's own action (``screen.…``, ``app.…`` or the pane's)."""
        node: Any = self
        await node.run_action(action)
