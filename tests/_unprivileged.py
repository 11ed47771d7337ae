"""Python run as an unprivileged user, for the tests of what file permissions deny.

Root ignores permission bits, so as root such a test runs its probe as `nobody` (`setpriv`). The
probe must still import `hermes_tui`: when the checkout or its virtualenv sits in a folder
`nobody` cannot read (a clone in a 0700 directory, as CI may make), the probe runs the base
interpreter on a world-readable copy of the packages it imports, made once per test run.
Without `setpriv` no privilege drop can work: `needs_privilege_drop` skips, saying so.
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

NOBODY = 65534

#: For a test whose probe must run without root's privileges: skipped (with the reason) only
#: where no privilege drop can work.
needs_privilege_drop = pytest.mark.skipif(
    os.geteuid() == 0 and shutil.which("setpriv") is None,
    reason="running as root without setpriv: root ignores permission bits, so they cannot be tested",
)

#: What every probe imports (the copy holds these and whatever they import).
PROBE_IMPORTS = "import hermes_tui.state, hermes_tui.state.write_signal"

_FIND_PACKAGES = f"""
import json, sys
{PROBE_IMPORTS}
roots = (sys.base_prefix,)  # the interpreter's own library (a virtualenv's packages are not in it)
out = {{}}
for name, mod in list(sys.modules.items()):
    top = name.partition(".")[0]
    path = getattr(sys.modules.get(top), "__file__", None)
    if path and top not in out and not path.startswith(roots):
        out[top] = path
print(json.dumps(out))
"""


def _drop() -> list[str]:
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: root ignores permission bits, so they cannot be tested")
    return [setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]


@functools.cache
def _python() -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    """The interpreter (and extra environment) under which `nobody` can import the probe's
    packages: this one when it can, else the base interpreter over a readable copy."""
    check = subprocess.run(
        [*_drop(), sys.executable, "-c", PROBE_IMPORTS], capture_output=True, timeout=60, cwd="/"
    )
    if check.returncode == 0:
        return (sys.executable,), ()
    found = subprocess.run(
        [sys.executable, "-c", _FIND_PACKAGES], capture_output=True, text=True, timeout=60, check=True
    )
    copy = Path(tempfile.mkdtemp(prefix="hermes-tui-nobody-", dir="/tmp"))  # where nobody reaches
    atexit.register(shutil.rmtree, copy, ignore_errors=True)
    for top, path in json.loads(found.stdout).items():
        source = Path(path)
        if source.name.startswith("__init__."):
            shutil.copytree(source.parent, copy / top, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, copy / source.name)
    for root, _dirs, files in os.walk(copy):
        os.chmod(root, 0o755)
        for name in files:
            os.chmod(os.path.join(root, name), 0o644)
    base = getattr(sys, "_base_executable", sys.executable)
    return (base, "-s"), (("PYTHONPATH", str(copy)),)


def run_unprivileged(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run `python -c code args…` as `nobody` when root (as this user otherwise)."""
    if os.geteuid() != 0:
        return subprocess.run(
            [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=60, cwd="/"
        )
    python, extra = _python()
    env = {**os.environ, **dict(extra)}
    return subprocess.run(
        [*_drop(), *python, "-c", code, *args], capture_output=True, text=True, timeout=60, cwd="/", env=env
    )
