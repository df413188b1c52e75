"""Helpers of the MCP server tests, and the SDK names they use.

Every test module here imports this module first: without the MCP SDK it skips the
module (``pytest.importorskip``). When ``TRUEHEART_REQUIRE_MCP=1`` is set, ``conftest``
has already stopped the run instead, so the SDK cannot be skipped silently in CI.
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

import anyio
from mcp import Client, MCPError, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult

from trueheart_core import Scope, TrueHeart, TrustLevel
from trueheart_core.integrations.mcp_server import MemoryTools
from trueheart_core.integrations.mcp_server.server import build_server

__all__ = [
    "DEADLINE",
    "OTHER",
    "SCOPE",
    "SRC",
    "START",
    "CallToolResult",
    "Client",
    "Clock",
    "MCPError",
    "StdioServerParameters",
    "child_environment",
    "connector",
    "error_text",
    "run",
    "server_command",
    "stdio_client",
    "streamable_http_client",
    "structured",
]

SRC = Path(__file__).resolve().parents[3] / "src"
DEADLINE = 60.0
START = datetime(2026, 5, 4, 9, 0, tzinfo=UTC)
SCOPE = Scope("acme", "assistant", "user-1")
OTHER = Scope("acme", "assistant", "user-2")


class Clock:
    """A clock the tests move by hand."""

    def __init__(self, now: datetime = START) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def advance(self, delta: timedelta) -> None:
        self.now += delta


def run(body: Callable[[], Awaitable[None]]) -> None:
    """Run a test body under the deadline."""

    async def bounded() -> None:
        with anyio.fail_after(DEADLINE):
            await body()

    anyio.run(bounded)


def child_environment() -> dict[str, str]:
    """The environment of a server started as a child process: this checkout's sources
    first, no other Python settings."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTHON")}
    env["PYTHONPATH"] = str(SRC)
    return env


def server_command(*args: str) -> list[str]:
    """``trueheart mcp ARGS`` as this interpreter runs it."""
    return [sys.executable, "-m", "trueheart_core.cli", "mcp", *args]


def structured(result: CallToolResult) -> dict[str, Any]:
    """The structured result of a call that succeeded."""
    assert not result.is_error, result.content
    assert isinstance(result.structured_content, dict)
    return result.structured_content


def error_text(result: CallToolResult) -> str:
    """The text of a tool error."""
    assert result.is_error
    assert result.structured_content is None
    (block,) = result.content
    assert block.type == "text"
    text: str = block.text
    return text


Connect = Callable[..., Any]


def connector(service: TrueHeart, clock: Clock) -> Connect:
    """``connect(scope=SCOPE, *, over=None, mode="auto", max_trust=..., read_only=False)``:
    an async context manager yielding an SDK client of a server over ``service`` (or
    ``over``) bound to ``scope``, on ``clock``."""

    @asynccontextmanager
    async def connected(
        scope: Scope = SCOPE,
        *,
        over: TrueHeart | None = None,
        mode: str = "auto",
        max_trust: TrustLevel = TrustLevel.OBSERVED,
        read_only: bool = False,
    ) -> AsyncIterator[Client]:
        tools = MemoryTools(
            service if over is None else over,
            scope,
            read_only=read_only,
            max_trust=max_trust,
            clock=clock,
        )
        async with Client(build_server(tools), mode=mode) as client:
            yield client

    return connected
