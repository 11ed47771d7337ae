"""Adding a key binding to one widget, screen or app instance at run time.

Textual's `BindingsMap.bind` appends to the per-key lists, and an instance's map is a shallow
copy of its class's: the lists are shared, so a binding bound on one instance leaked into every
later instance of the class whenever the key already had a class binding (the picker's Esc and
ctrl+c showed up in every app after it). This builds new lists instead.
"""

from __future__ import annotations

from dataclasses import replace

from textual.binding import Binding
from textual.dom import DOMNode


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
    for key in (k.strip() for k in keys.split(",")):
        binding = Binding(key, action, description, show=bool(description and show), priority=priority)
        old = table.get(key, [])
        table[key] = [binding, *old] if first else [*old, binding]


def set_shown(node: DOMNode, action: str, show: bool) -> bool:
    """Show or hide in the footer `node`'s own bindings of `action` (they keep working either
    way); new lists, as `add_binding` builds. True when something changed."""
    table = node._bindings.key_to_bindings
    changed = False
    for key, group in list(table.items()):
        if any(b.action == action and b.show != show for b in group):
            table[key] = [replace(b, show=show) if b.action == action else b for b in group]
            changed = True
    return changed
