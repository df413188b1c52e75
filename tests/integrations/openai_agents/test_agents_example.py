"""``examples/agents_sdk.py``: its exact output, nothing left behind, and one line and
exit status 0 where the SDK is missing."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = REPO_ROOT / "examples" / "agents_sdk.py"
OUTPUT = """\
run 1: I will remember that.
run 2: You said: Takes tea without sugar.
run 2's model input began with the 4 items of run 1: True
session history: 8 items, 18 audit records
erase_subject verified: True
after erasure: 0 history items, 0 memories
"""
MISSING = (
    "agents_sdk example skipped: the OpenAI Agents SDK is not installed "
    '(pip install "trueheart-core[openai-agents]")\n'
)


def _environment() -> dict[str, str]:
    environment = {
        key: value
        for key, value in os.environ.items()
        if key not in {"PYTHONPATH", "PYTHONSTARTUP", "PYTHONWARNINGS"}
    }
    environment["PYTHONPATH"] = str(REPO_ROOT / "src")
    environment["PYTHONIOENCODING"] = "utf-8"
    return environment


def test_the_example_prints_exactly_and_cleans_up(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = importlib.util.spec_from_file_location("examples.agents_sdk", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.main(temporary_root=tmp_path)
    captured = capsys.readouterr()
    assert captured.out == OUTPUT
    assert list(tmp_path.iterdir()) == []


def test_the_example_runs_as_a_script_from_another_directory(tmp_path: Path) -> None:
    completed = subprocess.run(
        [sys.executable, str(EXAMPLE)],
        cwd=tmp_path,
        env=_environment(),
        capture_output=True,
        encoding="utf-8",
        timeout=300,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == OUTPUT
    assert list(tmp_path.iterdir()) == []


def test_without_the_sdk_the_example_says_so_and_exits_0(tmp_path: Path) -> None:
    # ``sys.modules["agents"] = None`` makes ``import agents`` fail as if it were absent.
    code = (
        "import runpy, sys\n"
        "sys.modules['agents'] = None\n"
        f"runpy.run_path({str(EXAMPLE)!r}, run_name='__main__')\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env=_environment(),
        capture_output=True,
        encoding="utf-8",
        timeout=300,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == MISSING
    assert completed.stderr == ""
    assert list(tmp_path.iterdir()) == []
