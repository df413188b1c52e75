"""Fixtures of the SQLite adapter tests.

These tests are white-box: they may read and edit the database file with ``sqlite3``.
Here ``repository`` (and so ``service``) is always a file store at ``db_path``, and the
conformance builders (``tests/conformance``) are importable.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from trueheart_core import SQLiteRepository

_CONFORMANCE = str(Path(__file__).resolve().parents[2] / "conformance")
if _CONFORMANCE not in sys.path:
    sys.path.insert(0, _CONFORMANCE)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    """A path for a file-backed store that does not exist yet."""
    return tmp_path / "store.db"


@pytest.fixture
def repository(db_path: Path) -> Iterator[SQLiteRepository]:
    """A file store at ``db_path``, closed after the test."""
    repo = SQLiteRepository(db_path)
    try:
        yield repo
    finally:
        repo.close()
