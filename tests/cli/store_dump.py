"""Every row of every table of a store, read with plain sqlite3: what the command line
tests compare to show that a refused or declined command changed nothing."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any


def dump(path: Path) -> list[tuple[str, list[tuple[Any, ...]]]]:
    """``(table, sorted rows)`` for each table of the store at ``path``, by name."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return [
            (table, sorted(conn.execute(f"SELECT * FROM {table}").fetchall(), key=repr))
            for table in sorted(tables)
        ]
    finally:
        conn.close()
