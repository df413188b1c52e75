"""examples/memory_writer.py: exact output, nothing left behind, and without the extra."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = REPO_ROOT / "examples" / "memory_writer.py"
OUTPUT = """\
turn-1: 1 memory, 1 claim written; dropped: not_in_span 1, quote_not_found 1
  memory 'I moved to Lisbon in May' from span 13-38
  claim read from 'My favourite colour is teal.'
turn-2: skipped already_stored; supersedes 1
  favourite colour is teal: superseded
  favourite colour is orange: current
turn-3: ProviderError: provider error: the writer model answered HTTP 500
in the scope: events 2, claims 2, other memories 1
"""
WITHOUT_EXTRA = "this example needs the writer extra: pip install 'trueheart-core[writer]'\n"


def _run(arguments: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    environment = {
        key: value
        for key, value in os.environ.items()
        if key not in {"PYTHONPATH", "PYTHONSTARTUP", "PYTHONWARNINGS"}
    }
    environment["PYTHONPATH"] = str(REPO_ROOT / "src")
    environment["PYTHONIOENCODING"] = "utf-8"
    return subprocess.run(
        [sys.executable, *arguments],
        cwd=cwd,
        env=environment,
        capture_output=True,
        encoding="utf-8",
        timeout=120,
        check=False,
    )


def test_the_example_prints_exactly_and_leaves_nothing_behind(tmp_path: Path) -> None:
    completed = _run([str(EXAMPLE)], tmp_path)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == OUTPUT
    assert completed.stderr == ""
    assert list(tmp_path.iterdir()) == []


def test_without_the_extra_the_example_says_so_and_exits_zero(tmp_path: Path) -> None:
    code = (
        "import runpy, sys\n"
        "sys.modules['openai'] = None\n"
        f"runpy.run_path({str(EXAMPLE)!r}, run_name='__main__')\n"
    )
    completed = _run(["-c", code], tmp_path)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == WITHOUT_EXTRA
    assert completed.stderr == ""
    assert list(tmp_path.iterdir()) == []


def test_the_example_removes_its_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = importlib.util.spec_from_file_location("examples.memory_writer", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main(temporary_root=tmp_path) == 0
    assert capsys.readouterr().out == OUTPUT
    assert list(tmp_path.iterdir()) == []
