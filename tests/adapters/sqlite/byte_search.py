"""Searching the bytes of a store's files for what erasure must have removed.

Shared by the SQLite erasure tests: the database file, its write-ahead log and journal are
read as bytes (``sqlite_builders.store_bytes``), and a needle that is found can be
located in the main file by page, b-tree page type and region, for the message of a
failing test.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

from sqlite_builders import store_bytes

from trueheart_core.domain.search.tokenize import term_key

__all__ = ["key_bytes", "leftovers", "locate", "page_size", "present", "store_bytes"]

_MANY = 64


def key_bytes(term: str) -> bytes:
    """A term's 64-bit key as SQLite stores an 8-byte integer: big-endian two's
    complement."""
    return term_key(term).to_bytes(8, "big", signed=True)


def page_size(data: bytes) -> int:
    """The page size written in a database file's header."""
    size = int.from_bytes(data[16:18], "big")
    return 65536 if size == 1 else size


def locate(path: Path, needle: bytes) -> list[str]:
    """Where ``needle`` occurs in the main file: page, b-tree page type, and region."""
    data = path.read_bytes()
    size = page_size(data)
    places = []
    start = data.find(needle)
    while start >= 0:
        page, offset = divmod(start, size)
        header = page * size + (100 if page == 0 else 0)
        kind = data[header]
        cells = int.from_bytes(data[header + 3 : header + 5], "big")
        pointers_end = header - page * size + (12 if kind in (0x02, 0x05) else 8) + 2 * cells
        content_start = int.from_bytes(data[header + 5 : header + 7], "big")
        region = "unallocated" if pointers_end <= offset < content_start else "cells"
        places.append(f"page {page + 1} type {kind:#04x} offset {offset} ({region})")
        start = data.find(needle, start + 1)
    return places


def present(data: bytes, needles: Iterable[bytes]) -> set[bytes]:
    """The needles that occur in ``data``. Many needles of one length are compared with
    every window of that length in one pass, instead of one search each."""
    by_length: defaultdict[int, set[bytes]] = defaultdict(set)
    for needle in needles:
        by_length[len(needle)].add(needle)
    found: set[bytes] = set()
    for length, group in by_length.items():
        if len(group) < _MANY:
            found |= {needle for needle in group if needle in data}
        else:
            found |= group & {data[i : i + length] for i in range(len(data) - length + 1)}
    return found


def leftovers(path: Path, needles: Iterable[bytes]) -> dict[bytes, list[str]]:
    """Every needle still present in the file, its WAL or its journal, with where it
    is in the main file (an empty list when it is only in the WAL or journal)."""
    return {needle: locate(path, needle) for needle in present(store_bytes(path), needles)}
