"""Toggles whose state reads without colour (the dialogs' checkboxes and radio buttons)."""

from __future__ import annotations

from typing import ClassVar

from textual.content import Content
from textual.widgets import Checkbox, RadioButton


class MarkedCheckbox(Checkbox):
    """A checkbox whose state reads without colour: ``[x]`` ticked, ``[ ]`` not.

    Textual's toggle draws the same "X" either way and tells the states apart by colour only.
    """

    MARKS: ClassVar[tuple[str, str]] = ("[ ]", "[x]")

    @property
    def _button(self) -> Content:
        return Content.assemble((self.MARKS[bool(self.value)], self.get_visual_style("toggle--button")))


class MarkedRadioButton(RadioButton):
    """A radio button whose state reads without colour: ``(•)`` chosen, ``( )`` not."""

    MARKS: ClassVar[tuple[str, str]] = ("( )", "(•)")

    @property
    def _button(self) -> Content:
        return Content.assemble((self.MARKS[bool(self.value)], self.get_visual_style("toggle--button")))
