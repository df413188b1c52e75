"""Importing either face loads no optional provider and no model framework."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"


@pytest.mark.parametrize("package", ["trueheart_core", "evicortex"])
def test_import_loads_no_provider(package: str) -> None:
    code = (
        f"import sys, {package}\n"
        "loaded = [m for m in ('torch', 'transformers', 'numpy', 'trueheart_core.providers',"
        " 'evicortex.providers') if m in sys.modules]\n"
        "print(','.join(loaded))\n"
    )
    environment = {**os.environ, "PYTHONPATH": str(SRC)}
    completed = subprocess.run(
        [sys.executable, "-c", code],
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == "\n"


@pytest.mark.parametrize(
    "code",
    [
        "import trueheart_core",
        "import trueheart_core.integrations.mcp_server",
        "from trueheart_core.cli import main; main(['--help'])",
        "from trueheart_core.cli import main; main(['mcp', '--help'])",
    ],
)
def test_the_mcp_sdk_is_imported_only_to_serve(code: str) -> None:
    """The MCP server's SDK (the ``mcp`` extra) is imported by ``trueheart mcp`` when it
    serves, never by the package, the integration's tools or the command line's help."""
    probe = (
        "import contextlib, io, sys\n"
        f"with contextlib.redirect_stdout(io.StringIO()):\n    {code}\n"
        "loaded = [m for m in ('mcp', 'anyio', 'uvicorn', 'starlette', 'pydantic',"
        " 'trueheart_core.integrations.mcp_server.server') if m in sys.modules]\n"
        "print(','.join(loaded))\n"
    )
    environment = {**os.environ, "PYTHONPATH": str(SRC)}
    completed = subprocess.run(
        [sys.executable, "-c", probe],
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == "\n"
