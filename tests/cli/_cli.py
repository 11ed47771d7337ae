"""What the CLI tests share: running `hermes-tui sessions …` in-process."""

from __future__ import annotations

from typing import Any

from hermes_tui.cli import sessions


def run(capsys: Any, *argv: Any) -> tuple[int, str, str]:
    """`sessions.main(argv)` (each argument as text): its exit code, stdout and stderr."""
    code = sessions.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err
