"""Reading the files of a PostgreSQL store for what erasure must have removed.

White-box helpers of the PostgreSQL adapter tests: the files of every relation of one
schema (each table, its indexes, its TOAST table and the TOAST table's index) are found
with ``pg_relation_filepath`` under the cluster's data directory, after a ``CHECKPOINT``
has written every dirty buffer; a needle found in a file is located by page and by the
region of the page it lies in, so that a test can tell a live row from the unallocated
space that pruning leaves behind. Also: the write-ahead log, and the database's
statistics catalog (``pg_statistic``, where ``ANALYZE`` keeps sample values).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PAGE = 8192
"""The server's block size (the default build; checked by :func:`relation_files`)."""

_RELATIONS = """
SELECT c.relname, pg_relation_filepath(c.oid) FROM pg_class c
 WHERE c.relnamespace = %(ns)s::regnamespace AND c.relkind IN ('r', 'i')
UNION ALL
SELECT c.relname || ' (TOAST)', pg_relation_filepath(t.oid) FROM pg_class c
  JOIN pg_class t ON t.oid = c.reltoastrelid
 WHERE c.relnamespace = %(ns)s::regnamespace AND c.relkind = 'r'
UNION ALL
SELECT c.relname || ' (TOAST index)', pg_relation_filepath(i.indexrelid) FROM pg_class c
  JOIN pg_index i ON i.indrelid = c.reltoastrelid
 WHERE c.relnamespace = %(ns)s::regnamespace AND c.relkind = 'r'
"""


@dataclass(frozen=True)
class Place:
    """Where a needle lies: the relation, the block, the offset in the block, and the
    region of the page (``free`` between the line pointers and the tuples, which no
    live row uses; ``tuples`` where tuples are stored; ``header``)."""

    relation: str
    block: int
    offset: int
    region: str


def checkpoint(conn: Any) -> None:
    """Write every dirty buffer to the relation files (the reads below see the pages)."""
    conn.execute("CHECKPOINT")


def relation_files(conn: Any, data_directory: Path, schema: str) -> dict[str, list[Path]]:
    """The files of every relation of ``schema``: the main fork and its 1 GB segments."""
    (block_size,) = conn.execute("SHOW block_size").fetchone()
    assert int(block_size) == PAGE
    found: dict[str, list[Path]] = {}
    for name, relative in conn.execute(_RELATIONS, {"ns": schema}).fetchall():
        found[name] = _segments(data_directory / relative)
    return found


def _segments(base: Path) -> list[Path]:
    """A relation's main fork: its first file and the 1 GB segments after it."""
    pattern = re.compile(re.escape(base.name) + r"(\.\d+)?")
    found = [p for p in base.parent.glob(base.name + "*") if pattern.fullmatch(p.name)]
    return sorted(found, key=lambda p: (len(p.name), p.name))


def _region(page: bytes, offset: int) -> str:
    lower = int.from_bytes(page[12:14], "little")
    upper = int.from_bytes(page[14:16], "little")
    if offset < 24:
        return "header"
    if lower <= offset < upper:
        return "free"
    return "tuples"


def locate(files: dict[str, list[Path]], needles: Iterable[bytes]) -> dict[bytes, list[Place]]:
    """Every occurrence of each needle in the files, by relation, page and region; a
    needle found nowhere is left out."""
    wanted = list(needles)
    found: dict[bytes, list[Place]] = {}
    for relation, paths in files.items():
        data = b"".join(p.read_bytes() for p in paths)
        for needle in wanted:
            start = data.find(needle)
            while start >= 0:
                block, offset = divmod(start, PAGE)
                page = data[block * PAGE : (block + 1) * PAGE]
                found.setdefault(needle, []).append(
                    Place(relation, block, offset, _region(page, offset))
                )
                start = data.find(needle, start + 1)
    return found


def catalog_file(conn: Any, data_directory: Path, catalog: str) -> list[Path]:
    """The files of one catalog table of the current database (``pg_statistic``)."""
    (relative,) = conn.execute("SELECT pg_relation_filepath(%s::regclass)", (catalog,)).fetchone()
    return _segments(data_directory / relative)


def wal_files(data_directory: Path) -> list[Path]:
    """The segments of the write-ahead log (current and recycled)."""
    return sorted(
        p for p in (data_directory / "pg_wal").iterdir() if re.fullmatch(r"[0-9A-F]{24}", p.name)
    )


def present(paths: Iterable[Path], needles: Iterable[bytes]) -> set[bytes]:
    """The needles that occur in any of the files."""
    wanted = set(needles)
    found: set[bytes] = set()
    for path in paths:
        data = path.read_bytes()
        found |= {n for n in wanted - found if n in data}
    return found
