"""Fixtures of the evicortex face tests.

``memory`` is an open store, once on a SQLite file and once in memory; ``store_path`` is a
file path for the tests that reopen a store or read its bytes; ``open_store`` opens more
stores that are closed after the test.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from evicortex import EviCortex

STORE_CONFIGURATIONS = ("file", "memory")


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    """A store file that does not exist yet."""
    return tmp_path / "evicortex.db"


@pytest.fixture
def open_store() -> Iterator[Callable[..., EviCortex]]:
    """``EviCortex.open`` that closes every store it opened when the test ends."""
    opened: list[EviCortex] = []

    def open_(*args: Any, **kwargs: Any) -> EviCortex:
        store = EviCortex.open(*args, **kwargs)
        opened.append(store)
        return store

    yield open_
    for store in opened:
        store.close()


@pytest.fixture(params=STORE_CONFIGURATIONS)
def memory(
    request: pytest.FixtureRequest, store_path: Path, open_store: Callable[..., EviCortex]
) -> EviCortex:
    """An open store without providers: on a file, then in memory."""
    return open_store(str(store_path) if request.param == "file" else ":memory:")
