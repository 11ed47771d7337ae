"""Session references: the one resolver every `hermes-tui sessions` command uses.

A reference is an exact id, a unique id prefix or an exact title; nothing fuzzy. `show` also
resolves a title the way `hermes --resume` does (the newest session of the numbered family "T",
"T #2", …). Ids are unique only within a store: across several open stores a reference may be
written `PROFILE:ID` (`PROFILE:TITLE`, `PROFILE:PREFIX`), and an explicit `PROFILE:` wins over
the same text read as a plain reference; a plain reference that matches in several stores is
ambiguous. With one store open the errors are that store's own (they list the near matches).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hermes_tui.cli.errors import CliError, UsageError
from hermes_tui.cli.output import ident
from hermes_tui.cli.stores import Stores
from hermes_tui.state import ProfileError, SessionDB, SessionFilter, StoreError

CANDIDATES_SHOWN = 8


@dataclass(frozen=True)
class Target:
    """A resolved session reference and how it was matched (for the `show` note)."""

    id: str
    title: str | None
    how: str  # "id" | "prefix" | "title" | "family"


def _listing(rows: Sequence[dict[str, Any]]) -> str:
    return "; ".join(ident(r) for r in rows)


def _near(db: SessionDB, ref: str) -> list[dict[str, Any]]:
    """Sessions whose id or title contains `ref` (the hint of a reference that matches none)."""
    ids = db.session_order(SessionFilter.every_session(text=ref)).ids
    rows = db.list_rows(list(ids[:CANDIDATES_SHOWN])) if ids else []
    if len(ids) > CANDIDATES_SHOWN:
        rows.append({"id": f"… and {len(ids) - CANDIDATES_SHOWN} more", "title": None})
    return rows


def resolve_in(db: SessionDB, ref: str, *, family: bool = False) -> Target:
    """The session `ref` names in one store: an exact id, else the one session whose id starts
    with `ref` or whose title is `ref` (on the store's thread).

    With sessions "proj" and "proj #2", `proj` is "proj". Several matches (an id prefix shared by
    several ids, or a prefix of one and the title of another) are ambiguous. With `family`
    (show), a title also resolves like `hermes --resume`: the newest of the numbered family.
    """
    if not ref or not ref.strip():
        raise UsageError("empty session reference")
    row = db.get_session(ref)
    if row is not None:
        return Target(ref, row.get("title"), "id")
    prefixed = [i for i in db.session_order(SessionFilter.every_session(text=ref)).ids if i.startswith(ref)]
    titled = db.get_session_by_title(ref)
    family_id = db.resolve_session_by_title(ref) if family else None
    if family_id and titled is not None and family_id == titled["id"]:
        family_id = None
    found: dict[str, str] = {}
    for sid in prefixed:
        found.setdefault(sid, "prefix")
    if titled is not None:
        found[titled["id"]] = "title"
    if family_id:  # the family's newest replaces the exact title
        found = {k: v for k, v in found.items() if v == "prefix"}
        found.setdefault(family_id, "family")
    if len(found) == 1:
        ((sid, how),) = found.items()
        row = titled if titled is not None and titled["id"] == sid else db.get_session(sid)
        return Target(sid, (row or {}).get("title"), how)
    if found:
        rows = db.list_rows(list(found)[:CANDIDATES_SHOWN])
        raise CliError(
            f"{ref!r} is ambiguous: it matches {len(found)} sessions: {_listing(rows)}"
            + (" …" if len(found) > CANDIDATES_SHOWN else ""),
            "ambiguous",
        )
    near = _near(db, ref)
    hint = f"; sessions whose id or title contains it: {_listing(near)}" if near else ""
    raise CliError(
        f"no session is {ref!r} (not an id, a unique id prefix, or an exact title){hint}", "not_found"
    )


def _readings(profiles: Sequence[str], ref: str) -> list[tuple[str, str, bool]]:
    """(profile, reference, explicit) readings of `ref`: the plain reference in every store, and
    `PROFILE:REST` in that profile's store when `ref` starts with a profile's name and a colon."""
    readings = [(p, ref, False) for p in profiles]
    for p in profiles:
        if ref.startswith(p + ":") and ref[len(p) + 1 :].strip():
            readings.append((p, ref[len(p) + 1 :], True))
    return readings


def resolve(stores: Stores, ref: str, *, family: bool = False) -> tuple[str, Target]:
    """`(profile, target)`: the one session `ref` names in the open stores."""
    if not ref or not ref.strip():
        raise UsageError("empty session reference")
    found: dict[tuple[str, str], tuple[Target, bool]] = {}
    failures: list[ProfileError] = []
    own: CliError | None = None  # the one store's own answer to the plain reference
    for profile, reading, explicit in _readings(stores.profiles, ref):
        try:
            target = stores.call(profile, resolve_in, reading, family=family)
        except CliError as exc:
            if exc.kind == "ambiguous" and stores.several:
                raise CliError(f"in profile {profile}: {exc}", "ambiguous") from None
            if exc.kind == "ambiguous":
                raise
            own = own or (None if explicit else exc)
            continue
        except StoreError as exc:
            if not stores.several:
                raise
            failures.append(ProfileError.of(profile, exc))
            continue
        key = (profile, target.id)
        found[key] = (target, explicit or found.get(key, (target, False))[1])
    stores.failed(failures)
    if any(explicit for _t, explicit in found.values()):
        found = {k: v for k, v in found.items() if v[1]}
    if len(found) == 1:
        (((profile, _sid), (target, _e)),) = found.items()
        return profile, target
    if not found:
        if own is not None and not stores.several:
            raise own
        raise CliError(
            f"no session is {ref!r} in profiles {', '.join(stores.profiles)} (not an id, a unique id"
            " prefix, or an exact title; PROFILE:ID picks a profile)",
            "not_found",
        )
    shown = "; ".join(
        f"{p}:{ident({'id': t.id, 'title': t.title})}" for (p, _i), (t, _e) in list(found.items())[:8]
    )
    raise CliError(
        f"{ref!r} is ambiguous: it matches sessions in several profiles: {shown} (write PROFILE:ID)",
        "ambiguous",
    )


def resolve_all(stores: Stores, refs: Sequence[str]) -> dict[str, dict[str, Target]]:
    """Every reference resolved before anything is written (one bad reference changes nothing):
    the targets by profile, each session once, in the order given."""
    by_store: dict[str, dict[str, Target]] = {}
    for ref in refs:
        profile, target = resolve(stores, ref)
        by_store.setdefault(profile, {}).setdefault(target.id, target)
    return by_store
