"""Stylesheets found from a checkout and from an installed wheel; the store imports without Textual."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from hermes_tui.app.styles import STYLESHEETS, stylesheet_paths

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


@pytest.mark.slow
def test_wheel_ships_stylesheets(tmp_path: Path) -> None:
    wheel_dir = tmp_path / "wheel"
    src = tmp_path / "src"  # build from a copy: no build/ or egg-info litter in the shared checkout
    shutil.copytree(
        ROOT,
        src,
        ignore=shutil.ignore_patterns(
            ".venv", ".git", "bench", "tests", "screenshots", "build", "*.egg-info", "__pycache__"
        ),
    )
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(src), "--no-deps", "-w", str(wheel_dir), "-q"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert build.returncode == 0, build.stderr[-2000:]
    wheel = next(wheel_dir.glob("hermes_tui-*.whl"))
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True, system_site_packages=False).create(env_dir)
    py = env_dir / "bin" / "python"
    # textual/rich/apsw come from this test venv's site-packages via a .pth file
    site = next(p for p in sys.path if p.endswith("site-packages") and Path(p, "textual").exists())
    target_site = next((env_dir / "lib").glob("python*/site-packages"))
    (target_site / "_test_deps.pth").write_text(site + "\n")
    install = subprocess.run(
        [str(py), "-m", "pip", "install", "--no-deps", "-q", str(wheel)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert install.returncode == 0, install.stderr[-2000:]
    code = (
        "import hermes_tui.app.styles as s, hermes_tui.app.app as a; "
        "paths = s.stylesheet_paths(); "
        "assert all(p.is_file() for p in paths); "
        "assert 'site-packages' in str(paths[0]), paths; "
        "print(paths[0].parent.name)"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run(
        [str(py), "-c", code], capture_output=True, text=True, cwd=tmp_path, env=env, check=False
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "_styles"
