"""LineageTree: ancestors and descendants of a session, each edge labelled with its kind.

Built from `SessionDB.get_lineage(id)` (one recursive query in a worker). Labels are `Text`
objects, never markup strings, because titles are user/agent text.
"""

from __future__ import annotations

from typing import Any, ClassVar

from rich.text import Text
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from hermes_tui.app.render import EDGE_LABELS, EDGE_MARKS, human_count, one_line

MAX_NODES = 2000


def node_label(node: dict[str, Any]) -> Text:
    """``[c] ★ title ◀ · 12 msgs · 3.4k tok · compression continuation · live tip``.

    The tip star and the selected-node arrow come first so a narrow pane still shows them.
    """
    text = Text(no_wrap=True, overflow="ellipsis")
    kind = node.get("edge_kind")
    if kind:
        text.append(f"[{EDGE_MARKS.get(kind, '?')}] ", style="bold")
    if node.get("is_tip"):
        text.append("★ ", style="bold")
    title = one_line(node.get("title")) or str(node.get("id", ""))
    text.append(title, style="bold" if node.get("is_self") else "")
    if node.get("is_self"):
        text.append(" ◀", style="bold")
    tokens = (node.get("input_tokens") or 0) + (node.get("output_tokens") or 0)
    text.append(f" · {node.get('message_count') or 0} msgs · {human_count(tokens)} tok", style="dim")
    if kind:
        text.append(f" · {EDGE_LABELS.get(kind, kind)}", style="italic dim")
    if node.get("is_tip"):
        text.append(" · live tip", style="bold")
    return text


class LineageTree(Tree[dict[str, Any]]):
    """The lineage of the selected session; Enter jumps to a node's session."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "jump", "Open session", show=False),
    ]

    class Jump(Message):
        """Open the session of the node under the cursor."""

        def __init__(self, session_id: str) -> None:
            super().__init__()
            self.session_id = session_id

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:  # noqa: A002
        super().__init__(Text("lineage"), id=id, classes=classes)
        self.show_root = False
        self.auto_expand = False
        self.guide_depth = 3
        self.lineage: dict[str, Any] | None = None

    def show_lineage(self, lineage: dict[str, Any] | None) -> None:
        """Rebuild the tree from a `get_lineage` dict and put the cursor on the selected node."""
        self.clear()
        self.lineage = lineage
        if not lineage or not lineage.get("nodes"):
            return
        nodes = list(lineage["nodes"])[:MAX_NODES]
        by_parent: dict[str | None, list[dict[str, Any]]] = {}
        ids = {n["id"] for n in nodes}
        for n in nodes:
            parent = n.get("parent_session_id")
            by_parent.setdefault(parent if parent in ids else None, []).append(n)
        for kids in by_parent.values():
            kids.sort(key=lambda n: (n.get("started_at") or 0, n["id"]))
        self_node: TreeNode[dict[str, Any]] | None = None
        stack: list[tuple[TreeNode[dict[str, Any]], dict[str, Any]]] = []
        for top in by_parent.get(None, []):
            stack.append((self.root, top))
        seen: set[str] = set()
        # iterative DFS (chains can be hundreds deep; recursion would be a risk)
        order: list[tuple[TreeNode[dict[str, Any]], dict[str, Any]]] = list(reversed(stack))
        while order:
            parent_node, n = order.pop()
            if n["id"] in seen:
                continue
            seen.add(n["id"])
            kids = by_parent.get(n["id"], [])
            tree_node = parent_node.add(node_label(n), data=n, expand=True, allow_expand=bool(kids))
            if n.get("is_self"):
                self_node = tree_node
            for kid in reversed(kids):
                order.append((tree_node, kid))
        if self_node is not None:
            self.call_after_refresh(self._focus_node, self_node)

    def _focus_node(self, node: TreeNode[dict[str, Any]]) -> None:
        self.move_cursor(node, animate=False)

    @property
    def cursor_session_id(self) -> str | None:
        """Session id of the node under the cursor."""
        node = self.cursor_node
        return node.data["id"] if node is not None and node.data else None

    def action_jump(self) -> None:
        session_id = self.cursor_session_id
        if session_id:
            self.post_message(self.Jump(session_id))
