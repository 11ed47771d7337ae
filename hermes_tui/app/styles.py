"""Locate the `.tcss` stylesheets from a source checkout or from an installed wheel.

`setup.py` ships the top-level `styles/` folder as the package `hermes_tui._styles`; a source
checkout (or editable install) has it next to the repository root instead.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

STYLESHEETS = ("base.tcss", "main.tcss", "dialogs.tcss")


def _checkout_dir() -> Path | None:
    """`<repo>/styles` when running from a source checkout, else None."""
    candidate = Path(__file__).resolve().parents[2] / "styles"
    return candidate if all((candidate / n).is_file() for n in STYLESHEETS) else None


def _package_dir() -> Path | None:
    """The installed `hermes_tui._styles` package folder, else None."""
    try:
        root = resources.files("hermes_tui._styles")
    except (ModuleNotFoundError, TypeError):
        return None
    # `_styles` has no __init__.py: a namespace package, whose root is a MultiplexedPath;
    # joining a name yields a real file path inside the installed folder.
    path = Path(str(root.joinpath(STYLESHEETS[0]))).parent
    return path if all((path / n).is_file() for n in STYLESHEETS) else None


def stylesheet_paths() -> list[Path]:
    """Absolute paths of every stylesheet, in load order; raises when none can be found."""
    folder = _checkout_dir() or _package_dir()
    if folder is None:
        raise FileNotFoundError("hermes-tui stylesheets not found (neither styles/ nor hermes_tui._styles)")
    return [folder / n for n in STYLESHEETS]
