"""Regenerate `screenshots/`: an SVG (and a PNG when cairosvg is installed) of each main state.

Built from a fresh demo database with a fixed clock and theme, so reruns are reproducible:
    .venv/bin/python scripts/screens.py            # every state
    .venv/bin/python scripts/screens.py 17 21      # the states whose names start so
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path

from textual.pilot import Pilot

from hermes_tui.app.app import HermesApp
from hermes_tui.demo import build_demo
from hermes_tui.state import SessionDB

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "screenshots"
BASE = 1748779200.0  # 2025-06-01 12:00 UTC
NOW = BASE + 600.0

Step = Callable[[Pilot[None], Path], Awaitable[None]]


async def settle(pilot: Pilot[None], rounds: int = 2) -> None:
    """Wait out debounces and workers."""
    for _ in range(rounds):
        await pilot.pause(0.15)
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()


def by_title(db_path: Path, title: str) -> str:
    with SessionDB(db_path, read_only=True, migrate=False) as db:
        row = db.get_session_by_title(title)
        assert row is not None, title
        return str(row["id"])


async def open_title(pilot: Pilot[None], db: Path, title: str, *keys: str) -> None:
    await settle(pilot)
    pilot.app.screen.open_session(by_title(db, title))  # type: ignore[attr-defined]
    await settle(pilot)
    if keys:
        await pilot.press(*keys)
        await settle(pilot)


async def s_list(pilot: Pilot[None], db: Path) -> None:
    await settle(pilot)


async def s_search(pilot: Pilot[None], db: Path) -> None:
    await settle(pilot)
    await pilot.press("slash", *"postgres")
    await settle(pilot)


async def s_hit(pilot: Pilot[None], db: Path) -> None:
    await s_search(pilot, db)
    await pilot.press("down", "down", "enter")
    await settle(pilot)


async def s_lineage(pilot: Pilot[None], db: Path) -> None:
    await open_title(pilot, db, "CI flakiness deep dive", "l")


async def s_chain(pilot: Pilot[None], db: Path) -> None:
    await open_title(pilot, db, "Postgres upgrade runbook #2", "c")


async def s_tools(pilot: Pilot[None], db: Path) -> None:
    await open_title(pilot, db, "Fix flaky CI on the payments service", "x")


async def s_help(pilot: Pilot[None], db: Path) -> None:
    await settle(pilot)
    await pilot.press("question_mark")
    await pilot.pause()


async def s_palette(pilot: Pilot[None], db: Path) -> None:
    await settle(pilot)
    await pilot.press("ctrl+p")
    await settle(pilot)


async def s_prune(pilot: Pilot[None], db: Path) -> None:
    """The default prune ("older than 90 days") on the demo's four-month timeline."""
    await settle(pilot)
    await pilot.press("P")
    await settle(pilot, rounds=3)


async def s_export(pilot: Pilot[None], db: Path) -> None:
    await open_title(pilot, db, "Nightly backup report")
    pilot.app.screen.session_list.focus()  # type: ignore[attr-defined]
    await pilot.press("e")
    await settle(pilot)


async def s_delete(pilot: Pilot[None], db: Path) -> None:
    """The delete confirmation (the sessions go to the trash)."""
    await open_title(pilot, db, "Nightly backup report")
    pilot.app.screen.session_list.focus()  # type: ignore[attr-defined]
    await pilot.press("D")
    await settle(pilot)


async def s_undo(pilot: Pilot[None], db: Path) -> None:
    """Confirm that delete; the entry is what the trash screen shows next."""
    await s_delete(pilot, db)
    await pilot.press("ctrl+d")
    await settle(pilot, rounds=3)


async def s_trash(pilot: Pilot[None], db: Path) -> None:
    await s_undo(pilot, db)
    await pilot.press("T")
    await settle(pilot, rounds=2)


async def s_copy(pilot: Pilot[None], db: Path) -> None:
    await open_title(pilot, db, "Fix flaky CI on the payments service")
    await pilot.press("y")
    await settle(pilot)


async def s_rename(pilot: Pilot[None], db: Path) -> None:
    await open_title(pilot, db, "Nightly backup report")
    pilot.app.screen.session_list.focus()  # type: ignore[attr-defined]
    await pilot.press("r")
    await settle(pilot)


async def s_stats(pilot: Pilot[None], db: Path) -> None:
    await settle(pilot)
    await pilot.press("S")
    await settle(pilot)


def v31(db: Path) -> None:
    """Reshape the demo copy as a file of today's Hermes (schema v31) with a session of each
    kind the browser marks (the test suite's fixture, `tests/app/_v31.py`)."""
    sys.path.insert(0, str(ROOT / "tests"))
    from app._v31 import reshape_v31  # type: ignore[import-not-found]

    reshape_v31(db)


async def s_v31_marks(pilot: Pilot[None], db: Path) -> None:
    """Pinned first, the unread dot, a working session saying what it is doing, a reset child."""
    await settle(pilot)
    pilot.app.screen.open_session("v31-busy")  # type: ignore[attr-defined]
    await settle(pilot)
    pilot.app.screen.session_list.focus()  # type: ignore[attr-defined]
    await settle(pilot)


async def s_v31_archived(pilot: Pilot[None], db: Path) -> None:
    await settle(pilot)
    await pilot.press("A")
    await settle(pilot)


async def s_find(pilot: Pilot[None], db: Path) -> None:
    await open_title(pilot, db, "Fix flaky CI on the payments service", "ctrl+f", *"passed")
    await settle(pilot)


STATES: list[tuple[str, Step, tuple[int, int]]] = [
    ("01-session-list", s_list, (120, 40)),
    ("02-search", s_search, (120, 40)),
    ("03-search-hit", s_hit, (120, 40)),
    ("04-lineage", s_lineage, (120, 40)),
    ("05-chain-reader", s_chain, (120, 40)),
    ("06-tool-calls", s_tools, (120, 40)),
    ("07-help", s_help, (120, 40)),
    ("08-narrow-80x24", s_list, (80, 24)),
    ("09-command-palette", s_palette, (120, 40)),
    ("10-prune-preview", s_prune, (120, 40)),
    ("11-export-dialog", s_export, (120, 40)),
    ("12-delete-to-trash", s_delete, (120, 40)),
    ("13-trash", s_trash, (120, 40)),
    ("14-copy-menu", s_copy, (120, 40)),
    ("15-find-in-transcript", s_find, (120, 40)),
    # Every dialog at 80×24, the smallest size they fit with their keys in sight.
    ("17-prune-80x24", s_prune, (80, 24)),
    ("18-delete-80x24", s_delete, (80, 24)),
    ("19-export-80x24", s_export, (80, 24)),
    ("20-rename-80x24", s_rename, (80, 24)),
    ("21-trash-80x24", s_trash, (80, 24)),
    ("22-stats-80x24", s_stats, (80, 24)),
    ("23-help-80x24", s_help, (80, 24)),
    ("24-copy-menu-80x24", s_copy, (80, 24)),
    ("25-v31-marks", s_v31_marks, (120, 40)),
    ("26-v31-archived-view", s_v31_archived, (120, 40)),
    ("27-v31-marks-80x24", s_v31_marks, (80, 24)),
    ("28-v31-archived-view-80x24", s_v31_archived, (80, 24)),
]
#: States shown on a file of today's Hermes: the demo copy is reshaped before the app opens it.
PREPARE: dict[str, Callable[[Path], None]] = {
    name: v31 for name, _step, _size in STATES if name[3:].startswith("v31-")
}


def to_png(svg: Path) -> Path | None:
    """PNG via cairosvg with a monospaced font substituted (see house style); None if absent."""
    try:
        import cairosvg  # type: ignore[import-not-found]
    except ImportError:
        return None
    data = svg.read_text().replace(
        "font-family: Fira Code, monospace;", "font-family: DejaVu Sans Mono, monospace;"
    )
    png = svg.with_suffix(".png")
    cairosvg.svg2png(bytestring=data.encode(), write_to=str(png))
    return png


def fresh_copy(master: Path, name: str) -> Path:
    """A private copy of the demo database for one state (the delete and trash states write)."""
    folder = master.parent / name
    folder.mkdir()
    for suffix in ("", "-wal"):
        source = Path(f"{master}{suffix}")
        if source.exists():
            shutil.copy(source, folder / f"state.db{suffix}")
    return folder / "state.db"


async def shoot(master: Path, only: tuple[str, ...] = ()) -> list[Path]:
    made: list[Path] = []
    for name, step, size in STATES:
        if only and not name.startswith(only):
            continue
        db = fresh_copy(master, name)
        if name in PREPARE:
            PREPARE[name](db)
        # Each state its own settings: a view or filter one state picks must not carry over.
        os.environ["HERMES_TUI_CONFIG"] = str(db.parent / "settings.toml")
        app = HermesApp(db, now=lambda: NOW, theme="textual-dark", path_label="state.db")
        async with app.run_test(size=size) as pilot:
            await step(pilot, db)
            svg = OUT / f"{name}.svg"
            svg.write_text(app.export_screenshot(title=f"hermes-tui — {name[3:].replace('-', ' ')}"))
            made.append(svg)
            png = to_png(svg)
            if png:
                made.append(png)
    return made


def main() -> int:
    OUT.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        # Never the user's own settings: a key press here must not change (or read) them.
        os.environ["HERMES_TUI_CONFIG"] = str(Path(tmp) / "settings.toml")
        db = build_demo(Path(tmp) / "state.db", base=BASE)
        for path in asyncio.run(shoot(db, tuple(sys.argv[1:]))):
            print(path.relative_to(ROOT))
    return 0


if __name__ == "__main__":
    sys.exit(main())
