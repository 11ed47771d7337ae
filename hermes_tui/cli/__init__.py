"""The command line: `hermes-tui` (the browser, `pick`) and `hermes-tui sessions …`.

`browse.py` is the `hermes-tui` command (the browser and the picker), and hands `sessions` to
`sessions.py`, which runs the commands listed in `registry.py` (one module per command group).
"""

from hermes_tui.cli.browse import main

__all__ = ["main"]
