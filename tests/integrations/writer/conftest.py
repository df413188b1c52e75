"""Fixtures of the memory writer tests: a chat-completions stub on a loopback port.

Every test here takes the autouse ``writer_extra`` fixture: without the ``openai``
package it is skipped, unless ``TRUEHEART_REQUIRE_WRITER=1`` is set, as in the CI step
that installs the ``writer`` extra: there a missing package fails it. The stub itself is
in ``writer_stub.py``.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
from writer_stub import NOW, Stub, serve

from trueheart_core import SQLiteRepository, TrueHeart
from trueheart_core.integrations.writer import ChatSettings

REQUIRE_VARIABLE = "TRUEHEART_REQUIRE_WRITER"


def require(name: str) -> ModuleType:
    """Import ``name``; skip the test when it is missing, or fail it when the environment
    variable ``TRUEHEART_REQUIRE_WRITER`` is ``1``."""
    if os.environ.get(REQUIRE_VARIABLE) == "1":
        try:
            module: ModuleType = importlib.import_module(name)
            return module
        except ImportError:
            pytest.fail(f"{name} is required ({REQUIRE_VARIABLE}=1) but cannot be imported")
    found: ModuleType = pytest.importorskip(name)
    return found


@pytest.fixture(autouse=True)
def writer_extra() -> ModuleType:
    """The ``openai`` package, which every test here needs (skip or fail without it)."""
    return require("openai")


@pytest.fixture
def stub() -> Iterator[Stub]:
    """A chat-completions stub on 127.0.0.1, on a port the system chose."""
    with serve() as running:
        yield running


@pytest.fixture
def settings(stub: Stub) -> ChatSettings:
    """Settings for the stub: a dummy key, a short timeout and no client retries."""
    return ChatSettings(
        model="stub-model", base_url=stub.url, api_key="dummy", timeout=0.5, max_retries=0
    )


@pytest.fixture
def service(tmp_path: Path) -> Iterator[TrueHeart]:
    """A service over a fresh SQLite store, with a fixed clock."""
    with TrueHeart(SQLiteRepository(tmp_path / "store.db"), clock=lambda: NOW) as memory:
        yield memory
