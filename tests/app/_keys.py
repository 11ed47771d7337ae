"""What the user is shown of the keys, in every state that changes them: the help screen's
rows, the command palette's actions with their keys, and the footer of each pane at several
widths and filters, the trash screen and its dialogs, the picker. `tests/app/keys_golden.json`
holds the survey as it was before the bindings moved to class `BINDINGS` (regenerate, only on
purpose, by running its test with ``HERMES_TUI_WRITE_KEYS=1``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from textual.actions import parse

from hermes_tui.app.app import HermesApp, PickOptions
from hermes_tui.app.commands import SessionCommands
from hermes_tui.app.screens.help import binding_rows

from ._support import make_app, settle

GOLDEN = Path(__file__).with_name("keys_golden.json")


def footer(app: HermesApp) -> list[list[str]]:
    """The footer's keys as shown: [key, description] in order."""
    return [[k, a.binding.description] for k, a in app.screen.active_bindings.items() if a.binding.show]


def action_name(action: str) -> str:
    """The action a binding runs, without its arguments (a footer key shown only when it fits,
    ``fit('screen.active_now')``, runs ``screen.active_now``)."""
    namespace, name, params = parse(action)
    if name == "fit" and not namespace and params:
        return action_name(str(params[0]))
    return f"{namespace}.{name}" if namespace else name


def working(app: HermesApp) -> list[list[str]]:
    """Every key that does something now, shown or not, and what: [key, action]."""
    return sorted(
        [k, action_name(a.binding.action)] for k, a in app.screen.active_bindings.items() if a.enabled
    )


async def survey(db: Path) -> dict[str, Any]:
    """The keys shown and working in each state (see the module's docstring)."""
    out: dict[str, Any] = {}
    app = make_app(db)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        main = app.screen
        for width in (160, 110, 100, 80):
            await pilot.resize_terminal(width, 40)
            await settle(pilot)
            for pane in ("s", "t", "l"):
                await pilot.press(pane)
                await settle(pilot)
                out[f"footer {pane} {width}"] = footer(app)
                out[f"working {pane} {width}"] = working(app)
        await pilot.press("s", "A")  # another view: A (the way back) shows at any width
        await settle(pilot)
        out["footer archived 80"] = footer(app)
        await pilot.press("A", "slash")
        await settle(pilot)
        out["footer search"] = footer(app)
        out["working search"] = working(app)
        await pilot.press("escape")
        await settle(pilot)
        commands = SessionCommands(main.app.screen, None)  # type: ignore[arg-type]
        out["palette"] = [[str(label), keys] for label, keys, _h, _r in commands.palette_actions(main)]  # type: ignore[arg-type]
        await pilot.press("question_mark")
        await settle(pilot)
        out["help"] = [list(row) for row in binding_rows(app.screen.sections)]  # type: ignore[attr-defined]
        await pilot.press("escape", "T")
        await settle(pilot)
        out["working trash"] = working(app)
        out["footer trash"] = footer(app)
    picker = make_app(db, pick=PickOptions(query=""))
    async with picker.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        out["working picker"] = working(picker)
        pushed: list[Any] = []  # the help screen's sections (? in the picker's box is typed)
        picker.push_screen = lambda screen, *a, **k: pushed.append(screen)  # type: ignore[method-assign,assignment,return-value]
        picker.action_help()
        out["help picker app"] = [list(r) for r in binding_rows(pushed[0].sections) if r[0] == "app"]
    return out


def write_golden(found: dict[str, Any]) -> None:
    """One state a line (diffs read as what changed where)."""
    lines = (f"{json.dumps(k)}: {json.dumps(v, ensure_ascii=False)}" for k, v in found.items())
    GOLDEN.write_text("{\n" + ",\n".join(lines) + "\n}\n", encoding="utf-8")
