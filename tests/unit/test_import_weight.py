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
