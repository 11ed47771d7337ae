"""The session list's views and its default filter: what a `SessionFilter` the browser uses says
beyond the filter bar's source, model, time and text.

Today's Hermes (schema v24+) keeps archived and hidden sessions out of its list; its archived view
lists only the archived ones (hidden ones too). The browser offers the same views (`A`, and the
view menu of the filter bar) plus one with the hidden sessions and one with everything; on files
without those columns each view lists what the default does (the store filters nothing it has no
column for). Pinned sessions come first in the default order (`last_active`), as in Hermes'
desktop; the other orders are explicit sorts and keep their own order.
"""

from __future__ import annotations

from dataclasses import replace

from hermes_tui.app.settings import VIEWS
from hermes_tui.state import SessionFilter

#: `SessionFilter` fields of each view: (archived, include_hidden).
_VIEW_FIELDS: dict[str, tuple[str, bool]] = {
    "default": ("exclude", False),
    "archived": ("only", False),
    "hidden": ("exclude", True),
    "all": ("include", True),
}
assert tuple(_VIEW_FIELDS) == VIEWS

#: The view menu's choices (the default view is its blank prompt, `VIEW_PROMPT`).
VIEW_CHOICES: tuple[tuple[str, str], ...] = (
    ("archived", "archived"),
    ("show hidden", "hidden"),
    ("all: archived, hidden", "all"),
)
VIEW_PROMPT = "view"  # blank: Hermes' list (a short word: the filter bar is one line)

#: The list's border title for each view ("Sessions 31", "Archived 3").
VIEW_TITLES = {
    "default": "Sessions",
    "archived": "Archived",
    "hidden": "Sessions + hidden",
    "all": "All sessions",
}
#: What the header counts in each view ("31 sessions", "3 archived sessions").
VIEW_NOUNS = {
    "default": "session",
    "archived": "archived session",
    "hidden": "session",
    "all": "session",
}

#: The order pinned sessions come first in.
PINNED_ORDER = "last_active"


def pinned_first(order: str) -> bool:
    """Whether `order` lists pinned sessions first."""
    return order == PINNED_ORDER


def view_of(flt: SessionFilter) -> str:
    """The view `flt` shows (an unknown combination reads as "all")."""
    fields = (flt.archived, flt.include_hidden)
    return next((name for name, f in _VIEW_FIELDS.items() if f == fields), "all")


def with_view(flt: SessionFilter, view: str) -> SessionFilter:
    """`flt` showing `view` (the other filters kept)."""
    archived, hidden = _VIEW_FIELDS.get(view, _VIEW_FIELDS["default"])
    return replace(flt, archived=archived, include_hidden=hidden)


def with_order(flt: SessionFilter, order: str) -> SessionFilter:
    """`flt` for the list in `order` (pinned first in the default order)."""
    return replace(flt, pinned_first=pinned_first(order))


def view_base(flt: SessionFilter) -> SessionFilter:
    """The view of `flt` with no other filter: what "3 of 31" counts the 31 of (pinned first
    kept: it also lists archived pins)."""
    return with_view(SessionFilter(pinned_first=flt.pinned_first), view_of(flt))


def narrowed(flt: SessionFilter) -> bool:
    """Some filter of the bar narrows the view (the view itself and the order are not one)."""
    return flt != view_base(flt)


#: The list as the browser opens with no remembered filter: Hermes' list, pinned first, last
#: active first (what the open prefetch orders while Textual starts).
DEFAULT_FILTER = with_order(SessionFilter(), PINNED_ORDER)
