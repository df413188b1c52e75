"""Fixtures of the MCP server tests.

The tests need the MCP SDK (the ``mcp`` extra). Without it, each module skips itself
when it imports ``mcp_support`` (``pytest.importorskip("mcp")``), unless
``TRUEHEART_REQUIRE_MCP=1`` is set, as in the CI step that installs the extra: then a
missing SDK stops the run here, as an error.

In-process tests talk to the server through the SDK's own client (``mcp.Client`` given
the server object). Every test body is a coroutine run with ``anyio.run`` under a
deadline (``mcp_support.run``), so a stuck server fails the test instead of hanging it.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from trueheart_core import SQLiteRepository, TrueHeart

REQUIRE_VARIABLE = "TRUEHEART_REQUIRE_MCP"


def require(name: str) -> None:
    """With ``TRUEHEART_REQUIRE_MCP=1``, stop the run unless ``name`` imports."""
    if os.environ.get(REQUIRE_VARIABLE) != "1":
        return
    try:
        importlib.import_module(name)
    except ImportError:
        raise pytest.UsageError(
            f"{name} is required ({REQUIRE_VARIABLE}=1) but cannot be imported"
        ) from None


require("mcp")


@pytest.fixture
def clock() -> Any:
    from mcp_support import Clock

    return Clock()


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return tmp_path / "memory.db"


@pytest.fixture
def repository(store: Path) -> SQLiteRepository:
    """The repository of ``store`` (closed by ``service``)."""
    return SQLiteRepository(store)


@pytest.fixture
def service(repository: SQLiteRepository, clock: Any) -> Iterator[TrueHeart]:
    """The writing service over ``repository``, on the test clock."""
    with TrueHeart(repository, clock=clock) as opened:
        yield opened


@pytest.fixture
def connect(service: TrueHeart, clock: Any) -> Any:
    """See ``mcp_support.connector``."""
    from mcp_support import connector

    return connector(service, clock)
