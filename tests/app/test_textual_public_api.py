"""The app uses Textual's public API (issue 36): no leading-underscore name of Textual is read,
written or overridden, except Textual's per-instance binding map in `hermes_tui/app/bindings.py`
(Textual has no public way to bind a key on one instance) and the GC tuning in
`hermes_tui/app/textual_private.py` (one `install()`, `HERMES_TUI_TEXTUAL_TUNING=0` turns it off;
its own contract test is `test_textual_private.py`). The binding map is a contract, checked
here so a Textual release that renames it fails this file loudly, and Textual is pinned exactly.
"""

from __future__ import annotations

import ast
import importlib
import importlib.metadata
import inspect
import pkgutil
import re
from pathlib import Path

import textual

import hermes_tui
import hermes_tui.app

ROOT = Path(hermes_tui.__file__).resolve().parent
TEXTUAL = Path(textual.__file__).resolve().parent
#: The modules allowed a private Textual name, and the names each may use: the per-instance
#: binding map, and the GC tuning (`textual_private.py`, one `install()`).
CONTRACT: dict[str, set[str]] = {"bindings.py": {"_bindings"}, "textual_private.py": set()}
#: Attributes Textual's metaclass and `abc` put on every subclass (not overrides of ours).
CLASS_MACHINERY = {
    "_abc_impl",
    "_computes",
    "_css_type_name",
    "_css_type_names",
    "_decorated_handlers",
    "_default_virtual_size",
    "_inherit_bindings",
    "_inherit_component_classes",
    "_inherit_css",
    "_merged_bindings",
    "_reactives",
}


def _textual_private_names() -> set[str]:
    names: set[str] = set()
    for path in TEXTUAL.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        names |= set(re.findall(r"self\.(_[a-z]\w*)\s*[:=]", text))
        names |= set(re.findall(r"def (_[a-z]\w*)\(", text))
    return names


def _our_private_names(trees: dict[Path, ast.Module]) -> set[str]:
    """Private names our own code defines (attributes it sets, functions and methods)."""
    names: set[str] = set()
    for tree in trees.values():
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(node.name)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                names.add(node.attr)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
    return names


def test_no_private_textual_name_is_read_or_written_outside_the_contract() -> None:
    trees = {p: ast.parse(p.read_text(encoding="utf-8")) for p in ROOT.rglob("*.py")}
    textual_only = _textual_private_names() - _our_private_names(trees)
    found = []
    for path, tree in trees.items():
        allowed = CONTRACT.get(path.name, set()) if path.parent.name == "app" else set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr in textual_only and node.attr not in allowed:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} .{node.attr}")
            if not isinstance(node, ast.ImportFrom):
                continue
            module = node.module or ""
            if module.startswith("textual.") and any(part.startswith("_") for part in module.split(".")):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} from {module}")
    assert found == []


def test_no_private_textual_method_is_overridden() -> None:
    found = []
    for info in pkgutil.walk_packages(hermes_tui.app.__path__, "hermes_tui.app."):
        module = importlib.import_module(info.name)
        for _name, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ != module.__name__:
                continue
            for attr in vars(cls):
                if not attr.startswith("_") or attr.startswith("__") or attr in CLASS_MACHINERY:
                    continue
                base = next(
                    (b for b in cls.__mro__[1:] if b.__module__.startswith("textual") and attr in vars(b)),
                    None,
                )
                if base is not None:
                    found.append(
                        f"{cls.__module__}.{cls.__name__}.{attr} ({base.__module__}.{base.__name__})"
                    )
    assert found == []


def test_textual_is_pinned_exactly_while_a_private_name_is_used() -> None:
    pyproject = (ROOT.parent / "pyproject.toml").read_text(encoding="utf-8")
    pins = re.findall(r'"textual==([0-9.]+)"', pyproject)
    assert pins == [importlib.metadata.version("textual")]
