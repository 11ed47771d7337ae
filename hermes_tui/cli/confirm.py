"""The one question `hermes-tui sessions` asks before it deletes, empties or repairs: go ahead?"""

from __future__ import annotations

import sys

from hermes_tui.cli.errors import CliError
from hermes_tui.safe_text import inert


def confirm(yes: bool, question: str, verb: str = "delete") -> bool:
    """True to go ahead. `yes` (--yes) skips the question; without a terminal it is refused
    (exit 4), never taken as a yes."""
    if yes:
        return True
    stdin = sys.stdin
    if stdin is None or not stdin.isatty():
        raise CliError(
            f"refusing to {verb} without confirmation: stdin is not a terminal (pass --yes)", "refused"
        )
    sys.stderr.write(f"{inert(question, newlines=False)} [y/N] ")
    sys.stderr.flush()
    answer = stdin.readline().strip().lower()
    return answer in ("y", "yes")
