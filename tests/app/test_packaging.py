"""Stylesheets found from a checkout; the wheel installed as pipx would runs; the store imports
without Textual."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

from hermes_tui.app.styles import STYLESHEETS, stylesheet_paths
from hermes_tui.state import SessionDB

ROOT = Path(__file__).resolve().parents[2]


def test_stylesheets_exist_and_use_theme_variables_only() -> None:
    paths = stylesheet_paths()
    assert [p.name for p in paths] == list(STYLESHEETS)
    for p in paths:
        css = p.read_text()
        assert not re.search(r"#[0-9a-fA-F]{3,8}\b(?![\w-])", re.sub(r"#[a-z][\w-]*", "", css)), p
        assert "$" in css


def test_app_css_path_is_the_stylesheet_list() -> None:
    from hermes_tui.app.app import HermesApp

    assert [Path(p) for p in HermesApp.CSS_PATH] == stylesheet_paths()
    assert all(Path(p).is_file() for p in HermesApp.CSS_PATH)


def test_state_imports_without_textual() -> None:
    code = (
        "import sys, hermes_tui.state; assert 'textual' not in sys.modules, 'textual imported'; print('ok')"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def _wheel(tmp_path: Path) -> Path:
    """The wheel of this checkout, built as pip builds it for pipx or `uv tool install` (an
    isolated build environment; the C extension compiled from its source)."""
    wheel_dir = tmp_path / "wheel"
    src = tmp_path / "src"  # build from a copy: no build/ or egg-info litter in the shared checkout
    shutil.copytree(
        ROOT,
        src,
        ignore=shutil.ignore_patterns(
            ".venv", ".git", "bench", "tests", "screenshots", "build", "*.egg-info", "__pycache__", "*.so"
        ),
    )
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(src), "--no-deps", "-w", str(wheel_dir), "-q"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert build.returncode == 0, build.stderr[-2000:]
    return next(wheel_dir.glob("hermes_tui-*.whl"))


@pytest.mark.slow
def test_wheel_installs_and_runs_as_pipx_would(tmp_path: Path) -> None:
    """Every module of the checkout is in the wheel (packages are found, not listed: a package
    missing from a hand list broke the installed command), and the wheel installed with its
    dependencies into a fresh virtualenv, no editable install, runs: `--help`, `sessions list`
    on a store, and the stylesheets load from the installed package."""
    wheel = _wheel(tmp_path)
    shipped = set(zipfile.ZipFile(wheel).namelist())
    modules = {p.relative_to(ROOT).as_posix() for p in (ROOT / "hermes_tui").rglob("*.py")}
    assert modules - shipped == set()
    assert {f"hermes_tui/_styles/{name}" for name in STYLESHEETS} <= shipped
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False, system_site_packages=False).create(env_dir)
    py, bin_dir = env_dir / "bin" / "python", env_dir / "bin"
    # This test's pip installs into the new environment: the wheel and its dependencies, from
    # the index (as pipx does), nothing from this virtualenv.
    install = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(py), "install", "-q", str(wheel)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert install.returncode == 0, install.stderr[-2000:]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["HOME"] = str(tmp_path)  # no store or settings of the machine's user

    def run(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(argv, capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)

    helped = run(str(bin_dir / "hermes-tui"), "--help")
    assert helped.returncode == 0 and "Browse a Hermes Agent session store" in helped.stdout, helped.stderr
    store = tmp_path / "state.db"
    with SessionDB(store) as db:
        db.create_session("packaged-1", "cli", model="gpt-x")
        db.set_session_title("packaged-1", "From the wheel")
        db.append_message("packaged-1", "user", "installed as pipx would")
    listed = run(str(bin_dir / "hermes-tui"), "sessions", "list", "--db", str(store), "--json")
    assert listed.returncode == 0, listed.stderr
    assert [(r["id"], r["title"]) for r in json.loads(listed.stdout)["sessions"]] == [
        ("packaged-1", "From the wheel")
    ]
    code = (
        "import pathlib, hermes_tui.app.styles as s, hermes_tui.app.app as a, hermes_tui.cli as c; "
        "paths = s.stylesheet_paths(); "
        "assert all(p.is_file() for p in paths) and 'site-packages' in c.__file__; "
        "assert [pathlib.Path(p) for p in a.HermesApp.CSS_PATH] == paths; "
        "print(paths[0].parent.name, 'site-packages' in str(paths[0]))"
    )
    styles = run(str(py), "-c", code)
    assert styles.returncode == 0, styles.stderr[-2000:]
    assert styles.stdout.split() == ["_styles", "True"]
