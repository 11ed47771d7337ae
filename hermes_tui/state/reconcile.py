"""Declarative column reconciliation: ADD every column `SCHEMA_SQL` declares that a table lacks.

The declared columns are read by executing `SCHEMA_SQL` in a scratch in-memory database and
asking `PRAGMA table_info`, so the DDL string stays the only place a column is declared.
"""

from __future__ import annotations

import functools

import apsw

from .schema import SCHEMA_SQL


@functools.cache
def declared_columns() -> dict[str, dict[str, str]]:
    """`{table: {column: type-expression}}` in declaration order."""
    mem = apsw.Connection(":memory:")
    try:
        mem.execute(SCHEMA_SQL)
        tables = [
            r[0]
            for r in mem.execute(
                "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%'"
            )
        ]
        out: dict[str, dict[str, str]] = {}
        for table in tables:
            cols: dict[str, str] = {}
            for _cid, name, typ, notnull, dflt, pk in mem.execute(f'PRAGMA table_info("{table}")'):
                expr = typ or ""
                if notnull and not pk:
                    expr += " NOT NULL"
                if dflt is not None:
                    expr += f" DEFAULT {dflt}"
                cols[name] = expr.strip()
            out[table] = cols
        return out
    finally:
        mem.close()


def live_columns(conn: apsw.Connection, table: str) -> list[str]:
    return [r[1] for r in conn.execute(f'PRAGMA table_info("{table}")')]


def missing_columns(conn: apsw.Connection) -> list[tuple[str, str, str]]:
    """(table, column, type-expression) for every declared column a live table lacks."""
    missing = []
    for table, cols in declared_columns().items():
        live = set(live_columns(conn, table))
        if not live:
            continue  # table absent: SCHEMA_SQL creates it whole
        for name, expr in cols.items():
            if name not in live:
                missing.append((table, name, expr))
    return missing


def add_missing_columns(conn: apsw.Connection) -> list[str]:
    added = []
    for table, name, expr in missing_columns(conn):
        try:
            conn.execute(f'ALTER TABLE "{table}" ADD COLUMN "{name}" {expr}')
            added.append(f"{table}.{name}")
        except apsw.SQLError as exc:
            if "duplicate column" not in str(exc).lower():
                raise
    return added
