"""Pages one insert writes, by where the row lands in its b-tree: plain SQLite, no library
code.

Why the SQLite store puts a write's audit row and pending search row at the end of the
file (``write_buffer``) rather than straight into tables clustered by scope: an insert
into the middle of a b-tree (after one scope's last row, before the next scope's first)
often finds its leaf full, and SQLite then rebalances the leaf with its neighbours,
writing several pages; an insert at the end of a rowid table fills the last leaf and
starts a new one. Each case builds a table of two scopes of 3,000 rows on ``/dev/shm``
in WAL mode, then commits 1,000 single-row inserts and counts the WAL frames each one
appends (``mxFrame`` of the WAL index header in the ``-shm`` file).

    .venv/bin/python benchmarks/append_pages.py
"""

from __future__ import annotations

import os
import sqlite3
import tempfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path

ROWS = 3_000
INSERTS = 1_000

Insert = Callable[[sqlite3.Connection, int], None]


def _frames(shm: int) -> int:
    header = os.pread(shm, 20, 0)
    return int.from_bytes(header[16:20], "little") if len(header) == 20 else 0


def _clustered(size: int, scope: int) -> tuple[str, Insert, Insert]:
    """A ``WITHOUT ROWID`` table keyed by ``(scope, n)``; new rows go to ``scope``."""

    def fill(conn: sqlite3.Connection, n: int) -> None:
        for s in (1, 2):
            conn.execute("INSERT INTO t VALUES (?, ?, ?)", (s, n, os.urandom(size)))

    def insert(conn: sqlite3.Connection, n: int) -> None:
        conn.execute("INSERT INTO t VALUES (?, ?, ?)", (scope, ROWS + n, os.urandom(size)))

    schema = "CREATE TABLE t (scope INTEGER, n INTEGER, pad BLOB, PRIMARY KEY (scope, n)) "
    return schema + "WITHOUT ROWID", fill, insert


def _rowid_end(size: int) -> tuple[str, Insert, Insert]:
    """A rowid table; new rows get the next row ID, at its end."""

    def fill(conn: sqlite3.Connection, n: int) -> None:
        for _ in (1, 2):
            insert(conn, n)

    def insert(conn: sqlite3.Connection, n: int) -> None:
        conn.execute("INSERT INTO t (pad) VALUES (?)", (os.urandom(size),))

    return "CREATE TABLE t (id INTEGER PRIMARY KEY, pad BLOB)", fill, insert


def measure(root: Path, name: str, case: tuple[str, Insert, Insert]) -> tuple[float, float]:
    """Mean pages per insert, and the share of inserts that wrote four pages or more."""
    schema, fill, insert = case
    path = root / f"{name}.db"
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute(schema)
        conn.execute("BEGIN")
        for n in range(ROWS):
            fill(conn, n)
        conn.execute("COMMIT")
        shm = os.open(f"{path}-shm", os.O_RDONLY)
        try:
            pages: Counter[int] = Counter()
            for n in range(INSERTS):
                before = _frames(shm)
                insert(conn, n)
                after = _frames(shm)
                pages[after - before if after >= before else after] += 1
        finally:
            os.close(shm)
    finally:
        conn.close()
    total = sum(k * v for k, v in pages.items())
    return total / INSERTS, sum(v for k, v in pages.items() if k >= 4) / INSERTS


def main() -> None:
    cases = {
        "150-byte rows, middle of a WITHOUT ROWID table": _clustered(150, 1),
        "60-byte rows, middle of a WITHOUT ROWID table": _clustered(60, 1),
        "20-byte rows, middle of a WITHOUT ROWID table": _clustered(20, 1),
        "150-byte rows, end of a WITHOUT ROWID table": _clustered(150, 2),
        "150-byte rows, end of a rowid table": _rowid_end(150),
    }
    with tempfile.TemporaryDirectory(dir="/dev/shm" if Path("/dev/shm").is_dir() else None) as d:
        print(f"{'case':<50} {'pages per insert':>16} {'4 pages or more':>16}")
        for k, (name, case) in enumerate(cases.items()):
            mean, heavy = measure(Path(d), f"case{k}", case)
            print(f"{name:<50} {mean:>16.2f} {heavy:>15.0%}")


if __name__ == "__main__":
    main()
