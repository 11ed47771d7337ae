"""Build hook: the packages (found, not listed), the stylesheets, and the `cjk_unicode61` FTS5
tokenizer as a loadable SQLite extension.

It is compiled as an ordinary setuptools extension so `pip install` builds it with the
machine's C compiler; it is *loaded* by APSW (`Connection.load_extension`), never imported.
`optional=True`: a machine without a compiler still installs, and the store then registers
the pure-Python twin of the tokenizer instead.
"""

import sys
from pathlib import Path

from setuptools import Extension, find_packages, setup

HERE = Path(__file__).parent
SRC = Path("hermes_tui") / "state" / "cjk" / "fts5_cjk.c"

ext_modules = []
if (HERE / SRC).exists():
    ext_modules.append(
        Extension(
            "hermes_tui.state.cjk._fts5_cjk",
            sources=[str(SRC)],
            include_dirs=[str(Path("hermes_tui") / "state" / "cjk" / "include")],
            # SQLite dlclose()s an extension when the loading connection closes, but APSW
            # tokenizer objects may outlive it and then call into unmapped code: never unload.
            extra_link_args=["-Wl,-z,nodelete"] if sys.platform.startswith("linux") else [],
            optional=True,
        )
    )

setup(
    ext_modules=ext_modules,
    # Every package under hermes_tui/ is found (a hand list broke the wheel the day a package was
    # added); the stylesheets in styles/ ship as the package hermes_tui._styles.
    packages=[*find_packages(include=["hermes_tui", "hermes_tui.*"]), "hermes_tui._styles"],
    package_dir={"hermes_tui._styles": "styles"},
    package_data={"hermes_tui._styles": ["*.tcss"]},
)
