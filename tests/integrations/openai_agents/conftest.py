"""Fixtures of the OpenAI Agents SDK integration tests.

Every test module here needs the SDK (``agents``, the ``openai-agents`` extra). A
missing SDK skips the modules, unless ``TRUEHEART_REQUIRE_AGENTS=1`` is set, as in the
CI step that installs the extra: there it fails them. The check runs before a module is
imported, so the modules import the SDK at their top.

No test calls a model service: the model is scripted (``agents_scripted.py``) and the
SDK's tracing is off.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agents_support import Clock

from trueheart_core import SQLiteRepository, TrueHeart

REQUIRE_VARIABLE = "TRUEHEART_REQUIRE_AGENTS"


def require_agents() -> None:
    """Skip when ``agents`` cannot be imported, or fail when ``TRUEHEART_REQUIRE_AGENTS``
    is ``1``."""
    if os.environ.get(REQUIRE_VARIABLE) == "1":
        try:
            importlib.import_module("agents")
        except ImportError:
            pytest.fail(
                f"agents is required ({REQUIRE_VARIABLE}=1) but cannot be imported",
                pytrace=False,
            )
    else:
        pytest.importorskip("agents")


class _ModuleNeedingAgents(pytest.Module):
    """A test module that is collected only once the SDK check has passed."""

    def collect(self) -> Any:
        require_agents()
        return super().collect()


def pytest_pycollect_makemodule(module_path: Path, parent: pytest.Collector) -> pytest.Module:
    return _ModuleNeedingAgents.from_parent(parent, path=module_path)


@pytest.fixture(autouse=True)
def _no_tracing() -> Iterator[None]:
    agents = importlib.import_module("agents")
    agents.set_tracing_disabled(True)
    yield


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    return tmp_path / "memory.db"


@pytest.fixture
def repository(store_path: Path) -> Iterator[SQLiteRepository]:
    with SQLiteRepository(store_path) as repo:
        yield repo


@pytest.fixture
def memory(repository: SQLiteRepository, clock: Clock) -> TrueHeart:
    """A service over ``repository`` (closed with it) on the shared clock."""
    return TrueHeart(repository, clock=clock)
