"""hermes-tui: the Hermes Agent session store (`hermes_tui.state`) and a Textual browser over it."""

__version__ = "0.1.0"
