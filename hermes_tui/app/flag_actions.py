"""Archive, unarchive, pin and unpin from the browser: Hermes' everyday verbs, on the selected
row or the list's selection, with the store's lineage rules (`SessionDB.set_session_flags`: the
whole compression chain, archiving clears `auto_archived`, pinning unhides except the Bot Chat).

Two keys, each shared by a verb and its reverse (`m` archive/unarchive, `b` pin/unpin): the
footer shows the one that applies to the row under the cursor (`ActionSpec.applies`; in the
archived view `m` unarchives), the palette offers all four. Each write runs in a thread worker;
a read-only store refuses up front, and a file without the column (0.19.0's has no pins) is
refused by the store with its reason, shown as the toast. `u` undoes the last change
(`undo.FlagChange`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hermes_tui.app.actions import ActionSpec, chosen_sessions, refuse_if_read_only, run_store_call
from hermes_tui.app.list_views import view_of
from hermes_tui.app.messages import SessionsChanged
from hermes_tui.app.screens.dialog_base import error_text, plural
from hermes_tui.app.undo import FlagChange, remember_flag_change
from hermes_tui.safe_text import inert
from hermes_tui.state import StoreError

if TYPE_CHECKING:
    from hermes_tui.app.screens.main import MainScreen
    from hermes_tui.state import SessionDB


@dataclass(frozen=True)
class Verb:
    """One flag verb: the flag it sets and to what, and how its messages read."""

    name: str
    flag: str
    value: bool
    past: str  # "Archived"
    state: str  # what a session already so is: "archived" / "not archived"


VERBS: dict[str, Verb] = {
    v.name: v
    for v in (
        Verb("archive", "archived", True, "Archived", "archived"),
        Verb("unarchive", "archived", False, "Unarchived", "not archived"),
        Verb("pin", "pinned", True, "Pinned", "pinned"),
        Verb("unpin", "pinned", False, "Unpinned", "not pinned"),
    )
}
#: The reverse of each verb (what `u` runs).
REVERSE = {"archive": "unarchive", "unarchive": "archive", "pin": "unpin", "unpin": "pin"}


# ---------------------------------------------------------------------- which verb a key does
def row_is(screen: MainScreen, flag: str) -> bool:
    """Whether the session the keys act on has `flag` set: every row of the archived view is
    archived; otherwise the cursor row's flag (a row not fetched yet reads as unset)."""
    if flag == "archived" and view_of(screen.filter) == "archived":
        return True
    row = screen.selected_row if screen.focused is screen.session_list else None
    if row is None:
        row = screen.current_row
    return bool(row and row.get(flag))


def applies(name: str) -> Any:
    """`ActionSpec.applies` of verb `name`: it sets the flag to what the row does not have."""
    verb = VERBS[name]
    return lambda screen: row_is(screen, verb.flag) != verb.value


# ---------------------------------------------------------------------- the write
def set_flag(screen: MainScreen, name: str) -> None:
    """Run verb `name` on the selection (else the selected session) in a worker."""
    verb = VERBS[name]
    if refuse_if_read_only(screen, verb.name):
        return
    db = screen.db
    chosen = chosen_sessions(screen, verb.name, verb.past)
    if db is None or chosen is None:
        return
    ids, from_selection = chosen
    app = screen.app
    archived_view = view_of(screen.filter) == "archived"

    def run() -> None:
        try:
            result = db.set_session_flags(ids, verb.flag, verb.value)
        except StoreError as exc:  # FeatureUnavailable, LockTimeout…: the store's own words
            app.call_from_thread(failed, str(exc))
            return
        except Exception as exc:
            app.call_from_thread(failed, error_text(exc))
            return
        app.call_from_thread(done, result)

    def failed(error: str) -> None:
        screen.notify(
            inert(error), title=f"Not {verb.past.lower()}", severity="warning", markup=False, timeout=8
        )

    def done(result: dict[str, Any]) -> None:
        if from_selection:
            screen.session_list.clear_selection()
        changed = tuple(sorted({r for e in result["sessions"] for r in e["changed"]}))
        unhidden = tuple(sorted({r for e in result["sessions"] for r in e["unhidden"]}))
        remember_flag_change(app, FlagChange(verb.flag, verb.value, changed, unhidden, db.db_path))
        if changed:
            screen.post_message(SessionsChanged(tuple(ids), keep_cursor=True))
        screen.notify(
            inert(flag_message(verb, result, archived_view)),
            title=verb.past,
            severity="information" if changed else "warning",
            markup=False,
            timeout=6,
        )

    screen.run_worker(
        run, thread=True, exit_on_error=False, group="flags", description=f"{verb.name} sessions"
    )


def flag_message(verb: Verb, result: dict[str, Any], archived_view: bool = False) -> str:
    """The toast after a flag write: ``Archived 2 sessions — u to undo · A shows the archive``;
    the sessions of their compression chains, the sessions a pin made visible, the Bot Chat that
    stays hidden, ids that no longer exist. Counts and ids only (ids made inert by the caller)."""
    entries = result["sessions"]
    found = [e for e in entries if e["found"]]
    missing = [e["id"] for e in entries if not e["found"]]
    acted = [e for e in found if e["changed"]]
    if not acted:
        text = f"Nothing changed: {'it was' if len(found) == 1 else 'they were'} already {verb.state}."
        if not found:
            text = "Nothing changed: the session no longer exists."
    else:
        text = f"{verb.past} {plural(len(acted), 'session')}"
        if result["changed"] > len(acted):  # Hermes flags a whole compression chain
            chains = "its compression chain" if len(acted) == 1 else "their compression chains"
            text += f" with {chains} ({plural(result['changed'], 'session')} in all)"
        text += " — u to undo"
        if verb.name == "archive" and not archived_view:
            text += " · A shows the archive"
        text += "."
    unhidden = sum(len(e["unhidden"]) for e in found)
    if unhidden:
        text += f" Pinning made {plural(unhidden, 'hidden session')} visible."
    if any(e["bot_chat"] for e in found):
        text += " The Bot Chat stays hidden (Bot Mode reaches it through its bot)."
    if missing and found:
        gone = "no longer exists" if len(missing) == 1 else "no longer exist"
        text += f" {plural(len(missing), 'session')} {gone}: {', '.join(missing[:3])}."
    return text


# ---------------------------------------------------------------------- undo
def undo_flag_change(screen: MainScreen, db: SessionDB, change: FlagChange, done: Any) -> None:
    """`u` for a flag change: the reverse verb on the sessions it changed, then hide again the
    ones a pin made visible (worker); `done(error)` on the event loop afterwards."""
    done_verb = next(v for v in VERBS.values() if (v.flag, v.value) == (change.flag, change.value))
    reverse = VERBS[REVERSE[done_verb.name]]

    def run() -> dict[str, Any]:
        result = db.set_session_flags(list(change.changed), change.flag, not change.value)
        if change.unhidden:
            db.set_session_flags(list(change.unhidden), "hidden", True)
        return result

    def finished(result: dict[str, Any] | None, error: str | None) -> None:
        if result is not None:
            screen.post_message(SessionsChanged(change.changed, keep_cursor=True))
            rows = plural(result["changed"], "session")
            hidden = f", {plural(len(change.unhidden), 'session')} hidden again" if change.unhidden else ""
            screen.notify(f"Undone: {reverse.past.lower()} {rows}{hidden}.", title="Undone", markup=False)
        done(error)

    run_store_call(screen, run, finished, "undo", f"undo: {reverse.name}")


# ---------------------------------------------------------------------- the registry
def verb_spec(name: str, key: str, description: str, palette: str, help_text: str) -> ActionSpec:
    """The action of verb `name`: the key runs `set_flag` with it and applies where the row's flag
    is not already what the verb sets (each verb's handler and `applies` name the same verb)."""
    return ActionSpec(
        name,
        key,
        description,
        lambda screen: set_flag(screen, name),
        palette=palette,
        help=help_text,
        applies=applies(name),
    )


FLAG_SPECS: tuple[ActionSpec, ...] = (
    verb_spec(
        "archive",
        "m",
        "Archive",
        "Archive the selected session(s)",
        "out of Hermes' list, with their compression chains; A shows the archive, u undoes",
    ),
    verb_spec(
        "unarchive",
        "m",
        "Unarchive",
        "Unarchive the selected session(s)",
        "back into Hermes' list (m in the archived view)",
    ),
    verb_spec(
        "pin",
        "b",
        "Pin",
        "Pin the selected session(s)",
        "first in the list and never pruned; unhides them; u undoes",
    ),
    verb_spec("unpin", "b", "Unpin", "Unpin the selected session(s)", "back to their place in the order"),
)
