"""The runnable examples: exact output, nothing left behind, importable and runnable."""

from __future__ import annotations

import importlib
import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = REPO_ROOT / "examples"
BASIC_OUTPUT = "1 governed memory recalled at clarity 1.00\n"


def load_example(name: str) -> ModuleType:
    """Import ``examples/<name>.py`` by file path, without touching ``sys.path``."""
    path = EXAMPLES / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"examples.{name}", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_basic_example_prints_exactly_and_cleans_up(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    load_example("basic_memory").main(temporary_root=tmp_path)
    captured = capsys.readouterr()
    assert captured.out == BASIC_OUTPUT
    assert captured.err == ""
    assert list(tmp_path.iterdir()) == []


def test_examples_import_as_a_package_from_the_repository_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.syspath_prepend(str(REPO_ROOT))
    try:
        basic = importlib.import_module("examples.basic_memory")
        governance = importlib.import_module("examples.governance")
    finally:
        for name in ("examples.governance", "examples.basic_memory", "examples"):
            sys.modules.pop(name, None)
    assert Path(str(basic.__file__)).resolve() == EXAMPLES / "basic_memory.py"
    basic.main(temporary_root=tmp_path)
    assert capsys.readouterr().out == BASIC_OUTPUT
    governance.main(temporary_root=tmp_path)
    assert "integrity ok: True" in capsys.readouterr().out.splitlines()
    assert list(tmp_path.iterdir()) == []


def test_basic_example_runs_as_a_script_from_another_directory(tmp_path: Path) -> None:
    environment = {
        key: value
        for key, value in os.environ.items()
        if key not in {"PYTHONPATH", "PYTHONSTARTUP", "PYTHONWARNINGS"}
    }
    environment["PYTHONPATH"] = str(REPO_ROOT / "src")
    completed = subprocess.run(
        [sys.executable, str(EXAMPLES / "basic_memory.py")],
        cwd=tmp_path,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert completed.returncode == 0
    assert completed.stdout == BASIC_OUTPUT
    assert completed.stderr == ""
    assert list(tmp_path.iterdir()) == []


def test_governance_example_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    load_example("governance").main(temporary_root=tmp_path)
    captured = capsys.readouterr()
    assert captured.err == ""
    lines = captured.out.splitlines()
    for expected in (
        "recalled: memory-1, memory-2, memory-3",
        "after seal of memory-2: memory-1, memory-3",
        "after restore of memory-2: memory-1, memory-2, memory-3",
        "after forget of memory-2: memory-1, memory-3",
        "re-materialising memory-2: EntityDeleted: entity deleted: memory-2",
        "delete of event-1 affected: event-1, memory-1, memory-3",
        "after delete of event-1: (none)",
        "raw bodies expired: 1",
        "event-2 replay content_available: False",
        "integrity ok: True",
    ):
        assert expected in lines
    audit = lines[lines.index("audit, newest first:") + 1 :]
    assert audit == [
        "  expire raw_event event-2",
        "  delete raw_event event-1",
        "  forget memory memory-2",
        "  restore memory memory-2",
        "  seal memory memory-2",
        "  materialize memory memory-3",
        "  materialize memory memory-2",
        "  materialize memory memory-1",
        "  ingest raw_event event-2",
        "  ingest raw_event event-1",
    ]
    assert list(tmp_path.iterdir()) == []


def test_governance_example_is_deterministic(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    example = load_example("governance")
    example.main(temporary_root=tmp_path)
    first = capsys.readouterr().out
    example.main(temporary_root=tmp_path)
    assert capsys.readouterr().out == first
