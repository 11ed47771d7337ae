"""What a trash entry's files may hold: the checks that make them safe to act on.

The files are untrusted input (see `trash_files`): a manifest must match its schema, every table
and column name must be one of the live database's own (a name from a file never reaches SQL),
every value must be one SQLite can store. A file that fails is `DamagedEntry` with a reason the
browser and the CLI show; the other entries are unaffected. Values are exact JSON: floats
round-trip through `repr`, bytes are `{"$b64": ...}`, TEXT that is not UTF-8 `{"$text_b64": ...}`,
non-finite floats `{"$float": "inf"}`.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from .errors import StoreError
from .text import TS_MAX

FORMAT = 1
ORPHANS = "orphan"
#: The shared table whose rows a delete may remove without owning them (today's Hermes keeps each
#: system prompt once, by hash; a delete drops the ones no session references any more).
PROMPTS = "system_prompts"
MANIFEST_MAX_BYTES = 64 * 1024 * 1024
STATUSES = ("pending", "deleted", "restored", "partly-restored")
INT64 = (-(2**63), 2**63 - 1)


class TrashError(StoreError):
    """A trash entry cannot be written, read or restored."""


class TrashEntryNotFound(TrashError):
    """No trash entry with that id for this store."""


class DamagedEntry(TrashError):
    """A trash entry whose files are not what hermes-tui writes: never restored, listed with
    `reason`, removable by emptying the trash."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def ident(name: str) -> str:
    """`name` as an SQL identifier (quotes doubled). Names come from the live schema only."""
    return '"' + name.replace('"', '""') + '"'


def shown(value: Any, width: int = 40) -> str:
    """A value from a file, for a reason: `repr` (escapes control and bidi characters), cut."""
    text = repr(value)
    return text if len(text) <= width else text[: width - 1] + "…"


# ---------------------------------------------------------------- values
class RawText(bytes):
    """A TEXT value that is not valid UTF-8 (another writer's bytes): kept byte for byte and
    restored as TEXT (`CAST(? AS TEXT)`), not as a BLOB."""


def encode_value(value: Any) -> Any:
    """An SQLite value as exact JSON (bytes, raw text and non-finite floats tagged)."""
    if isinstance(value, RawText):
        return {"$text_b64": base64.b64encode(value).decode("ascii")}
    if isinstance(value, bytes):
        return {"$b64": base64.b64encode(value).decode("ascii")}
    if isinstance(value, float) and not math.isfinite(value):
        return {"$float": repr(value)}
    return value


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate from a `\ud800` escape
        return False
    return True


def decode_value(value: Any) -> Any:
    """The inverse of `encode_value`; anything it never writes is `DamagedEntry`."""
    if value is None or isinstance(value, float):
        return value
    if isinstance(value, bool):
        raise DamagedEntry(f"{shown(value)} is not a stored value")
    if isinstance(value, int):
        if not INT64[0] <= value <= INT64[1]:
            raise DamagedEntry(f"{shown(value)} does not fit a 64-bit integer")
        return value
    if isinstance(value, str):
        if not _utf8(value):
            raise DamagedEntry(f"{shown(value)} is not valid text")
        return value
    if isinstance(value, dict) and len(value) == 1:
        ((tag, raw),) = value.items()
        if isinstance(raw, str) and tag in ("$b64", "$text_b64"):
            try:
                data = base64.b64decode(raw.encode("ascii"), validate=True)
            except (UnicodeEncodeError, binascii.Error, ValueError):
                raise DamagedEntry(f"{shown(raw)} is not base64") from None
            return RawText(data) if tag == "$text_b64" else data
        if isinstance(raw, str) and tag == "$float":
            try:
                return float(raw)
            except ValueError:
                raise DamagedEntry(f"{shown(raw)} is not a number") from None
    raise DamagedEntry(f"{shown(value)} is not a stored value")


def line(obj: dict[str, Any]) -> str:
    return json.dumps(obj, allow_nan=False, separators=(",", ":")) + "\n"


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse_json(text: str) -> Any:
    """Strict JSON (no NaN/Infinity); nesting too deep for the parser is a ValueError too."""
    try:
        return json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        raise ValueError("nested too deeply") from None


# ---------------------------------------------------------------- the manifest
def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _text(v: Any) -> bool:
    return isinstance(v, str) and _utf8(v)


def _ids(v: Any) -> bool:
    return isinstance(v, list) and all(_text(i) and i for i in v)


def parse_manifest(raw: bytes, entry_id: str, cascade: Mapping[str, str]) -> dict[str, Any]:
    """The manifest of `entry_id` checked against its schema and against `cascade` (the live
    tables whose rows go with a session: table -> column). Returns its known keys only."""
    try:
        data = parse_json(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise DamagedEntry("manifest.json is not UTF-8 text") from None
    except ValueError:
        raise DamagedEntry("manifest.json is not valid JSON (cut short or edited)") from None
    if not isinstance(data, dict):
        raise DamagedEntry("manifest.json is not a JSON object")

    def bad(key: str, what: str) -> DamagedEntry:
        return DamagedEntry(f"manifest.json: {key} {what}, not {shown(data.get(key))}")

    if data.get("format") != FORMAT or isinstance(data.get("format"), bool):
        raise bad("format", f"must be {FORMAT}")
    if data.get("id") != entry_id:
        raise bad("id", f"must be the folder's name {entry_id}")
    created: Any = data.get("created_at")
    if not _number(created) or not 0 <= created <= TS_MAX:
        raise bad("created_at", "must be a time")
    if data.get("what") not in ("delete", "prune"):
        raise bad("what", "must be delete or prune")
    if data.get("status") not in STATUSES:
        raise bad("status", "must be one of " + ", ".join(STATUSES))
    sessions = data.get("sessions")
    if not isinstance(sessions, list) or not all(
        isinstance(s, dict)
        and _text(s.get("id"))
        and s["id"]
        and (s.get("title") is None or _text(s["title"]))
        for s in sessions
    ):
        raise bad("sessions", "must be a list of {id, title}")
    ids = [s["id"] for s in sessions]
    if len(set(ids)) != len(ids):
        raise DamagedEntry("manifest.json: sessions names a session twice")
    counts = data.get("counts")
    if not isinstance(counts, dict) or not all(
        _text(k) and isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= INT64[1]
        for k, v in counts.items()
    ):
        raise bad("counts", "must map tables to row counts")
    size = data.get("bytes")
    if not isinstance(size, int) or isinstance(size, bool) or not 0 <= size <= INT64[1]:
        raise bad("bytes", "must be a size")
    tables = data.get("cascade_tables")
    if not isinstance(tables, dict):
        raise bad("cascade_tables", "must map tables to columns")
    for table, column in tables.items():
        if cascade.get(table) != column:
            raise DamagedEntry(
                f"manifest.json: cascade table {shown(table)} ({shown(column)}) is not a table of this "
                "store whose rows go with a session"
            )
    deleted = data.get("deleted_ids", ...)
    if deleted is ... or (deleted is not None and not (_ids(deleted) and set(deleted) <= set(ids))):
        raise bad("deleted_ids", "must be null or ids of its sessions")
    out: dict[str, Any] = {
        "format": FORMAT,
        "id": entry_id,
        "created_at": created,
        "what": data["what"],
        "store": data.get("store") if _text(data.get("store")) else None,
        "store_name": data.get("store_name") if _text(data.get("store_name")) else None,
        "status": data["status"],
        "sessions": [{"id": s["id"], "title": s.get("title")} for s in sessions],
        "counts": dict(counts),
        "bytes": size,
        "cascade_tables": dict(tables),
        "requested_ids": data.get("requested_ids") if _ids(data.get("requested_ids")) else [],
        "deleted_ids": deleted,
    }
    for key in ("completed_at", "restored_at"):
        if key in data:
            if not _number(data[key]) or not 0 <= data[key] <= TS_MAX:
                raise bad(key, "must be a time")
            out[key] = data[key]
    if "restored_ids" in data:
        if not _ids(data["restored_ids"]):
            raise bad("restored_ids", "must be a list of ids")
        out["restored_ids"] = data["restored_ids"]
    if isinstance(data.get("restore_results"), list):
        out["restore_results"] = data["restore_results"]
    return out


# ---------------------------------------------------------------- the rows
class Snapshot:
    """The rows of an entry (later snapshots of a session replace earlier ones). `linked`: the
    sessions whose parent link carries a valid tag; `unproven`: orphan rows without one."""

    def __init__(self) -> None:
        self.sessions: dict[str, dict[str, Any]] = {}
        self.messages: dict[str, list[dict[str, Any]]] = {}
        self.children: dict[str, dict[str, list[dict[str, Any]]]] = {}  # table -> sid -> rows
        self.orphans: dict[str, dict[str, Any]] = {}  # child id -> {"id", "parent_session_id"}
        self.prompts: dict[str, dict[str, Any]] = {}  # hash -> system_prompts row (shared: no reset)
        self.linked: set[str] = set()
        self.unproven: dict[str, dict[str, Any]] = {}

    def reset(self, ids: Sequence[str]) -> None:
        drop = set(ids)
        for sid in drop:
            self.sessions.pop(sid, None)
            self.messages.pop(sid, None)
            self.linked.discard(sid)
            for rows in self.children.values():
                rows.pop(sid, None)
        self.orphans = {k: v for k, v in self.orphans.items() if v["parent_session_id"] not in drop}
        self.unproven = {k: v for k, v in self.unproven.items() if v["parent_session_id"] not in drop}


#: Columns a row of each table must have, and the type each must be.
_REQUIRED: dict[str, tuple[tuple[str, type], ...]] = {
    "sessions": (("id", str),),
    "messages": (("id", int), ("session_id", str)),
    ORPHANS: (("id", str), ("parent_session_id", str)),
    PROMPTS: (("hash", str),),
}


def read_rows(
    lines: Iterable[str],
    cascade: Mapping[str, str],
    columns: Callable[[str], frozenset[str]],
    proven: Callable[[Any, Any, Any], bool],
    sessions: frozenset[str],
) -> Snapshot:
    """The rows of `rows.jsonl`, every line checked: tables are `sessions`, `messages`, the
    entry's cascade tables (`cascade`, already checked live), `orphan` or `system_prompts` (the
    prompts the delete removed; shared, so owned by no session); columns are live ones
    (`columns(table)`); values decode; every row belongs to one of the manifest's `sessions`.
    `proven(child, parent, tag)` checks a link's tag."""
    snap = Snapshot()
    for n, raw in enumerate(lines, 1):
        if not raw.endswith("\n"):
            break  # a torn last line: written after the fsync that preceded any delete
        try:
            snap_line(snap, parse_json(raw), cascade, columns, proven, sessions)
        except ValueError:
            raise DamagedEntry(f"rows.jsonl line {n} is not valid JSON") from None
        except DamagedEntry as exc:
            raise DamagedEntry(f"rows.jsonl line {n}: {exc.reason}") from None
    return snap


def snap_line(
    snap: Snapshot,
    rec: Any,
    cascade: Mapping[str, str],
    columns: Callable[[str], frozenset[str]],
    proven: Callable[[Any, Any, Any], bool],
    sessions: frozenset[str],
) -> None:
    if not isinstance(rec, dict) or not isinstance(rec.get("t"), str):
        raise DamagedEntry("not a {t, r} record")
    table = rec["t"]
    if table == "reset":
        if not _ids(rec.get("ids")) or not sessions.issuperset(rec["ids"]):
            raise DamagedEntry("a reset without its ids, or of sessions the manifest does not list")
        snap.reset(rec["ids"])
        return
    if table not in ("sessions", "messages", ORPHANS, PROMPTS) and table not in cascade:
        raise DamagedEntry(f"table {shown(table)} is not one this entry holds")
    fk = cascade.get(table)
    if "fk" in rec and (fk is None or rec["fk"] != fk):
        raise DamagedEntry(f"column {shown(rec['fk'])} does not link {shown(table)} to its session")
    raw_row = rec.get("r")
    if not isinstance(raw_row, dict):
        raise DamagedEntry("a record without its row")
    live = frozenset(("id", "parent_session_id")) if table == ORPHANS else columns(table)
    row: dict[str, Any] = {}
    for col, value in raw_row.items():
        if col not in live:
            raise DamagedEntry(f"column {shown(col)} is not a column of table {table}")
        row[col] = decode_value(value)
    for col, kind in _REQUIRED.get(table, ((fk or "", str),)):
        if not isinstance(row.get(col), kind) or isinstance(row.get(col), bool):
            raise DamagedEntry(f"a {table} row without a valid {col}")
    if table == PROMPTS:  # shared by sessions: no owner to check
        snap.prompts[row["hash"]] = row
        return
    owner = {"sessions": "id", "messages": "session_id", ORPHANS: "parent_session_id"}.get(table, fk or "")
    if row[owner] not in sessions:
        raise DamagedEntry(f"a {table} row of session {shown(row[owner])}, which the manifest does not list")
    if table == "sessions":
        sid = row["id"]
        snap.sessions[sid] = row
        snap.linked.discard(sid)
        parent = row.get("parent_session_id")
        if parent is not None and proven(raw_row["id"], raw_row["parent_session_id"], rec.get("k")):
            snap.linked.add(sid)
    elif table == "messages":
        snap.messages.setdefault(row["session_id"], []).append(row)
    elif table == ORPHANS:
        if proven(raw_row["id"], raw_row["parent_session_id"], rec.get("k")):
            snap.orphans[row["id"]] = row
            snap.unproven.pop(row["id"], None)
        elif row["id"] not in snap.orphans:
            snap.unproven[row["id"]] = row
    else:
        assert fk is not None
        snap.children.setdefault(table, {}).setdefault(row[fk], []).append(row)
