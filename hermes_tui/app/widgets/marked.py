"""Toggles whose state reads without colour (the dialogs' checkboxes and radio buttons).

Drawn through `render` (public): the mark, then the label as Textual pads and styles it. Our
toggles keep the button first (Textual's default), and the mark is as wide as Textual's button
(3 cells), so Textual's own width and height stay right.
"""

from __future__ import annotations

from typing import ClassVar

from textual.content import Content
from textual.widgets import Checkbox, RadioButton


def _marked(toggle: Checkbox | RadioButton, marks: tuple[str, str]) -> Content:
    """``marks[value]`` in the button's style, then the label (as `ToggleButton.render` lays it)."""
    button = Content.assemble((marks[bool(toggle.value)], toggle.get_visual_style("toggle--button")))
    label = toggle.label.pad(1, 1).stylize_before(toggle.get_visual_style("toggle--label"))
    return Content.assemble(button, label)


class MarkedCheckbox(Checkbox):
    """A checkbox whose state reads without colour: ``[x]`` ticked, ``[ ]`` not.

    Textual's toggle draws the same "X" either way and tells the states apart by colour only.
    """

    MARKS: ClassVar[tuple[str, str]] = ("[ ]", "[x]")

    def render(self) -> Content:
        return _marked(self, self.MARKS)


class MarkedRadioButton(RadioButton):
    """A radio button whose state reads without colour: ``(•)`` chosen, ``( )`` not."""

    MARKS: ClassVar[tuple[str, str]] = ("( )", "(•)")

    def render(self) -> Content:
        return _marked(self, self.MARKS)
