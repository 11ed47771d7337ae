"""Key bindings: a node's bindings as declared and as added at run time, read without Textual's
private binding map.

Textual's `BindingsMap.bind` appends to the per-key lists, and an instance's map is a shallow
copy of its class's: the lists are shared, so a binding bound on one instance leaked into every
later instance of the class whenever the key already had a class binding (the picker's Esc and
ctrl+c showed up in every app after it). `add_binding` builds new lists instead.

Readers (the help screen, the command palette, the footer's priority check) use
`declared_bindings` and `bindings_of`: the class `BINDINGS` merged as Textual merges them (a
subclass's bindings of a key replace its bases'), then every `add_binding`/`set_shown` on the
node replayed from this module's own log. The two writers are the only code here that touches
Textual's per-instance map (`DOMNode._bindings`: Textual has no public per-instance binding);
`tests/app/test_bindings_public.py` checks the replay against it.
"""

from __future__ import annotations

from dataclasses import replace
from weakref import WeakKeyDictionary

from textual.app import App
from textual.binding import Binding
from textual.dom import DOMNode

#: What `add_binding`/`set_shown` did to each node, in order: ("add", key, binding, first) or
#: ("show", action, show).
_log: WeakKeyDictionary[DOMNode, list[tuple[object, ...]]] = WeakKeyDictionary()


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


def _replay(table: dict[str, list[Binding]], entry: tuple[object, ...]) -> bool:
    """Apply one logged change to ``table``; True when it changed something."""
    if entry[0] == "add":
        _, key, binding, first = entry
        assert isinstance(key, str) and isinstance(binding, Binding)
        old = table.get(key, [])
        table[key] = [binding, *old] if first else [*old, binding]
        return True
    _, action, show = entry
    changed = False
    for key, group in list(table.items()):
        if any(b.action == action and b.show != show for b in group):
            table[key] = [replace(b, show=bool(show)) if b.action == action else b for b in group]
            changed = True
    return changed


def bindings_by_key(node: DOMNode) -> dict[str, list[Binding]]:
    """``node``'s bindings by key: its class's, with what this module added or re-shown on it
    (and on an app, the palette's key that `App.__init__` adds when nothing binds the palette)."""
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
    for entry in _log.get(node, []):
        _replay(table, entry)
    return table


def bindings_of(node: DOMNode) -> list[Binding]:
    """Every binding of ``node`` (its own, not its ancestors'), in the order Textual keeps them."""
    return [b for group in bindings_by_key(node).values() for b in group]


def add_binding(
    node: DOMNode,
    keys: str,
    action: str,
    description: str = "",
    *,
    show: bool = True,
    priority: bool = False,
    first: bool = False,
) -> None:
    """Bind `keys` (comma-separated) on `node` only; `first` puts it ahead of the node's other
    bindings for that key (the one that runs and shows)."""
    table = node._bindings.key_to_bindings
    log = _log.setdefault(node, [])
    for key in (k.strip() for k in keys.split(",")):
        binding = Binding(key, action, description, show=bool(description and show), priority=priority)
        entry = ("add", key, binding, first)
        log.append(entry)
        _replay(table, entry)


def set_shown(node: DOMNode, action: str, show: bool) -> bool:
    """Show or hide in the footer `node`'s own bindings of `action` (they keep working either
    way); new lists, as `add_binding` builds. True when something changed."""
    entry = ("show", action, show)
    changed = _replay(node._bindings.key_to_bindings, entry)
    if changed:  # (logged only then: the footer re-fits on every resize)
        _log.setdefault(node, []).append(entry)
    return changed
