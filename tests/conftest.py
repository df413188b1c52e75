"""Shared fixtures.

Contract tests take the ``repository`` fixture, which runs them once per adapter
configuration: a SQLite file in a temporary directory and an in-memory SQLite database.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from trueheart_core import SQLiteRepository, TrueHeart

NOW = datetime(2026, 8, 13, 12, 0, tzinfo=UTC)

ADAPTER_CONFIGURATIONS = ("sqlite-file", "sqlite-memory")


@pytest.fixture(params=ADAPTER_CONFIGURATIONS)
def repository(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SQLiteRepository]:
    """One repository per adapter configuration, closed after the test."""
    target = str(tmp_path / "store.db") if request.param == "sqlite-file" else ":memory:"
    repo = SQLiteRepository(target)
    try:
        yield repo
    finally:
        repo.close()


@pytest.fixture
def clock() -> Callable[[], datetime]:
    """A fixed service clock at 2026-08-13T12:00Z."""
    return lambda: NOW


@pytest.fixture
def service(repository: SQLiteRepository, clock: Callable[[], datetime]) -> TrueHeart:
    """A TrueHeart service over the parametrised repository with a fixed clock."""
    return TrueHeart(repository, clock=clock)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    """A path for a file-backed store that does not exist yet."""
    return tmp_path / "store.db"
