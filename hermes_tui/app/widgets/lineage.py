"""LineageTree: ancestors and descendants of a session, each edge labelled with its kind.

Built from `SessionDB.get_lineage(id)` (one recursive query in a worker). Labels are `Text`
objects, never markup strings, because titles are user/agent text, and every stored string in
them is one-lined through `hermes_tui.safe_text`; counts and times are read tolerantly (a text
``started_at`` or token count shows a marker, it does not break the tree).
"""

from __future__ import annotations

from typing import Any, ClassVar

from rich.text import Text
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from hermes_tui.app.render import (
    EDGE_LABELS,
    EDGE_MARKS,
    INVALID_NUMBER,
    human_count,
    one_line,
    plain_count,
    to_number,
)

MAX_NODES = 2000


def node_label(node: dict[str, Any]) -> Text:
    """``[c] ★ title ◀ · 12 msgs · 3.4k tok · compression continuation · live tip`` (a fork:
    ``[b] title · … · branch · cut at #42``).

    The tip star and the selected-node arrow come first so a narrow pane still shows them.
    """
    text = Text(no_wrap=True, overflow="ellipsis")
    kind = one_line(node.get("edge_kind"), 40)
    if kind:
        text.append(f"[{EDGE_MARKS.get(kind, '?')}] ", style="bold")
    if node.get("is_tip"):
        text.append("★ ", style="bold")
    title = one_line(node.get("title")) or one_line(node.get("id", ""))
    text.append(title, style="bold" if node.get("is_self") else "")
    if node.get("is_self"):
        text.append(" ◀", style="bold")
    text.append(
        f" · {plain_count(node.get('message_count'))} msgs · {tokens_label(node)} tok",
        style="dim",
    )
    if kind:
        text.append(f" · {EDGE_LABELS.get(kind, kind)}", style="italic dim")
    cut = node.get("cut_at")
    if type(cut) is int:  # a fork made here or by `sessions fork`: where its parent was cut
        text.append(f" · cut at #{cut}", style="italic dim")
    if node.get("is_tip"):
        text.append(" · live tip", style="bold")
    return text


def tokens_label(node: dict[str, Any]) -> str:
    """Input plus output tokens (``12.3k``); ``?`` when a stored count is not a number."""
    total = 0.0
    for key in ("input_tokens", "output_tokens"):
        value = node.get(key)
        if value is None:
            continue
        number = to_number(value)
        if number is None:
            return INVALID_NUMBER
        total += number
    return human_count(total)


def _sort_key(node: dict[str, Any]) -> tuple[float, str]:
    """Siblings oldest first; a start time that is not a number sorts first, ids break ties
    (never a comparison between a float and a str)."""
    return (to_number(node.get("started_at")) or 0.0, str(node.get("id")))


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
        self._node_of: dict[str, TreeNode[dict[str, Any]]] = {}

    #: What a live append changes in a session's node label (a lineage re-read is only asked for
    #: when a child or an end appears).
    LIVE_FIELDS = ("message_count", "input_tokens", "output_tokens", "title")

    def update_session(self, row: dict[str, Any]) -> None:
        """Refresh one node's counts and title from a fresh session row: only its line repaints."""
        node = self._node_of.get(str(row.get("id")))
        if node is None or node.data is None:
            return
        data = node.data
        if all(data.get(k) == row.get(k) for k in self.LIVE_FIELDS):
            return
        data.update({k: row.get(k) for k in self.LIVE_FIELDS})
        node.set_label(node_label(data))

    def show_lineage(self, lineage: dict[str, Any] | None) -> None:
        """Rebuild the tree from a `get_lineage` dict and put the cursor on the selected node."""
        self.clear()
        self._node_of = {}
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
            kids.sort(key=_sort_key)
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
            self._node_of[n["id"]] = tree_node
            if n.get("is_self"):
                self_node = tree_node
            for kid in reversed(kids):
                order.append((tree_node, kid))
        if self_node is not None:
            self.call_after_refresh(self._focus_node, self_node)

    @property
    def live_tip(self) -> str | None:
        """Where the selected session's compression chain continues now (its newest compression
        descendant), when that is another session: `L` jumps there. None when it is the tip."""
        lineage = self.lineage or {}
        nodes = list(lineage.get("nodes", []))
        current = next((n["id"] for n in nodes if n.get("is_self")), None)
        if current is None:
            return None
        seen = {current}
        while True:
            kids = [
                n
                for n in nodes
                if n.get("parent_session_id") == current
                and n.get("edge_kind") == "compression"
                and n["id"] not in seen
            ]
            if not kids:
                break
            current = max(kids, key=_sort_key)["id"]
            seen.add(current)
        return current if len(seen) > 1 else None

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
