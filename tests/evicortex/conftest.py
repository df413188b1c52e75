"""Fixtures of the evicortex face tests.

``memory`` is an open store, once on a SQLite file, once in memory and once on the
PostgreSQL test server (opened by its URL, in a schema of its own); ``store_path`` is a
file path for the tests that reopen a store or read its bytes; ``open_store`` opens more
stores that are closed after the test.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import postgres_configuration
from evicortex import EviCortex

STORE_CONFIGURATIONS = ("file", "memory", "postgres")
_schemas = itertools.count(1)


def server_url() -> str:
    """A URL of the PostgreSQL test server naming a schema no other store uses (skipped,
    or failed under ``TRUEHEART_REQUIRE_POSTGRES=1``, where there is no server)."""
    url = postgres_configuration.database_url()
    joint = "&" if "?" in url else "?"
    return f"{url}{joint}schema=ev_{os.getpid()}_{next(_schemas)}"


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
    """An open store without providers: on a file, in memory, then on the server."""
    if request.param == "postgres":
        return open_store(server_url())
    return open_store(str(store_path) if request.param == "file" else ":memory:")
