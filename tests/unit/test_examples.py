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
SEARCH_OUTPUT = """\
search: 'Which ryokan in Kyoto should I book for the blossoms?', budget 40 tokens, limit 5
matched 3, considered 3, omitted by score 0
items:
  #1 score 2.173 clarity 1.00 tokens 21 mem-lodging: In Kyoto, wants a traditional ryokan \
rather than a big hotel. [sources: turn-2, turn-3]
  #2 score 1.332 clarity 1.00 tokens 19 mem-trip: Plans a trip to Japan in April for the \
cherry blossoms. [sources: turn-1]
trace:
  #1 mem-lodging included tokens 21 remaining 40
  #2 mem-trip included tokens 19 remaining 19
  #3 mem-diet budget tokens 20 remaining 0
used 40 of 40 tokens (utf8-bytes/3, 2 of at most 5 items)
search: '京都で泊まる旅館' -> terms 京都 都で で泊 泊ま まる る旅 旅館
matched 1, considered 1, omitted by score 0
items:
  #1 score 4.765 clarity 1.00 tokens 16 mem-quiet-ja: 京都では静かな旅館に泊まりたい。 \
[sources: turn-6]
trace:
  #1 mem-quiet-ja included tokens 16 remaining 512
used 16 of 512 tokens (utf8-bytes/3, 1 of at most 20 items)
"""
SEARCH_LAST_LINE = "used 16 of 512 tokens (utf8-bytes/3, 1 of at most 20 items)"
CLAIMS_OUTPUT = """\
trueheart.canonical-claim/1 read 2 claims from settings-april:
  claim-8ee71e990cdafd81952ecf95f205190f = user:ada prefers_theme dark [span 38-142]
  claim-e7a8531bf5bf9fe3379b78ede4891f52 = user:ada prefers_language English [span 143-220]
settings-may: 1 claim, diagnostics: canonical_claim_malformed
  claim-8542b55e4fa5c4098a5d711f5d598cc1 supersedes claim-8ee71e990cdafd81952ecf95f205190f
In April, about June (known at 2026-04-25, as of 2026-06-15):
  user:ada prefers_theme dark: current
In June, about June (known at 2026-06-15, as of 2026-06-15):
  user:ada prefers_theme dark: superseded by claim-8542b55e4fa5c4098a5d711f5d598cc1
  user:ada prefers_theme light: current
In June, about late April (known at 2026-06-15, as of 2026-04-25):
  user:ada prefers_theme dark: superseded by claim-8542b55e4fa5c4098a5d711f5d598cc1
  user:ada prefers_theme light: not_yet_valid
current theme: light
Language in June (known at 2026-06-15, as of 2026-06-15):
  user:ada prefers_language English: current
  user:ada prefers_language French: current
  conflict: claim-crm-language, claim-e7a8531bf5bf9fe3379b78ede4891f52
delete of crm-import affected: claim-crm-language, crm-import
replaying the imported claim: EntityDeleted: entity deleted: claim-crm-language
language after the delete: English (current); conflicts: 0
"""
CLAIMS_LAST_LINE = "language after the delete: English (current); conflicts: 0"
SEMANTIC_OUTPUT = """\
search 'brief answers over coffee': lexical alone finds 0
matched 2 (semantic 2 of 3 scanned, evidence-v1)
  #1 mem-style included score 0.8165: semantic #1 (0.816) +0.8165
  #2 mem-drink included score 0.5774: semantic #2 (0.577) +0.5774
SemanticProjectionError: semantic projection failed: the embedder failed: mem-coffee \
(committed: True)
status: 3 of 4 indexed, missing mem-coffee
  repaired 1 of 1
after sync: complete True
after forget of mem-style: 3 vectors, complete True
matched 2 (semantic 2 of 3 scanned, evidence-v1)
  #1 mem-drink included score 0.5774: semantic #1 (0.577) +0.5774
  #2 mem-coffee included score 0.5349: lexical #1 (0.981) +0.0185, semantic #2 (0.516) +0.5164
"""


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
        search = importlib.import_module("examples.search")
        claims = importlib.import_module("examples.claims")
    finally:
        for name in (
            "examples.claims",
            "examples.search",
            "examples.governance",
            "examples.basic_memory",
            "examples",
        ):
            sys.modules.pop(name, None)
    assert Path(str(basic.__file__)).resolve() == EXAMPLES / "basic_memory.py"
    basic.main(temporary_root=tmp_path)
    assert capsys.readouterr().out == BASIC_OUTPUT
    governance.main(temporary_root=tmp_path)
    assert "integrity ok: True" in capsys.readouterr().out.splitlines()
    search.main(temporary_root=tmp_path)
    assert capsys.readouterr().out.splitlines()[-1] == SEARCH_LAST_LINE
    claims.main(temporary_root=tmp_path)
    assert capsys.readouterr().out.splitlines()[-1] == CLAIMS_LAST_LINE
    assert list(tmp_path.iterdir()) == []


def _run_script(name: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    environment = {
        key: value
        for key, value in os.environ.items()
        if key not in {"PYTHONPATH", "PYTHONSTARTUP", "PYTHONWARNINGS"}
    }
    environment["PYTHONPATH"] = str(REPO_ROOT / "src")
    environment["PYTHONIOENCODING"] = "utf-8"
    return subprocess.run(
        [sys.executable, str(EXAMPLES / f"{name}.py")],
        cwd=cwd,
        env=environment,
        capture_output=True,
        encoding="utf-8",
        timeout=120,
        check=False,
    )


def test_basic_example_runs_as_a_script_from_another_directory(tmp_path: Path) -> None:
    completed = _run_script("basic_memory", tmp_path)
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


def test_search_example_prints_exactly_and_cleans_up(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    load_example("search").main(temporary_root=tmp_path)
    captured = capsys.readouterr()
    assert captured.out == SEARCH_OUTPUT
    assert captured.out.splitlines()[-1] == SEARCH_LAST_LINE
    assert captured.err == ""
    assert list(tmp_path.iterdir()) == []


def test_search_example_shows_a_budget_decision_and_lineage(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    load_example("search").main(temporary_root=tmp_path)
    lines = capsys.readouterr().out.splitlines()
    trace = [line.split() for line in lines if line.startswith("  #") and "remaining" in line]
    assert [entry[2] for entry in trace].count("budget") == 1
    assert any(line.endswith("[sources: turn-2, turn-3]") for line in lines)
    used = [line for line in lines if line.startswith("used ")]
    assert used == [
        "used 40 of 40 tokens (utf8-bytes/3, 2 of at most 5 items)",
        SEARCH_LAST_LINE,
    ]


def test_search_example_runs_as_a_script_from_another_directory(tmp_path: Path) -> None:
    completed = _run_script("search", tmp_path)
    assert completed.returncode == 0
    assert completed.stdout == SEARCH_OUTPUT
    assert completed.stderr == ""
    assert list(tmp_path.iterdir()) == []


def test_claims_example_prints_exactly_and_cleans_up(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    load_example("claims").main(temporary_root=tmp_path)
    captured = capsys.readouterr()
    assert captured.out == CLAIMS_OUTPUT
    assert captured.out.splitlines()[-1] == CLAIMS_LAST_LINE
    assert captured.err == ""
    assert list(tmp_path.iterdir()) == []


def test_claims_example_shows_supersession_a_conflict_and_the_cascade(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    load_example("claims").main(temporary_root=tmp_path)
    lines = capsys.readouterr().out.splitlines()
    believed = lines.index("In April, about June (known at 2026-04-25, as of 2026-06-15):")
    assert lines[believed + 1] == "  user:ada prefers_theme dark: current"
    known = lines.index("In June, about June (known at 2026-06-15, as of 2026-06-15):")
    assert lines[known + 1].startswith("  user:ada prefers_theme dark: superseded by claim-")
    assert lines[known + 2] == "  user:ada prefers_theme light: current"
    conflicts = [line for line in lines if line.startswith("  conflict: ")]
    assert len(conflicts) == 1 and "claim-crm-language" in conflicts[0]
    assert "delete of crm-import affected: claim-crm-language, crm-import" in lines


def test_claims_example_runs_as_a_script_from_another_directory(tmp_path: Path) -> None:
    completed = _run_script("claims", tmp_path)
    assert completed.returncode == 0
    assert completed.stdout == CLAIMS_OUTPUT
    assert completed.stderr == ""
    assert list(tmp_path.iterdir()) == []


def test_semantic_example_prints_exactly_and_cleans_up(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    load_example("semantic").main(temporary_root=tmp_path)
    captured = capsys.readouterr()
    assert captured.out == SEMANTIC_OUTPUT
    assert captured.err == ""
    assert list(tmp_path.iterdir()) == []


def test_semantic_example_runs_as_a_script_from_another_directory(tmp_path: Path) -> None:
    completed = _run_script("semantic", tmp_path)
    assert completed.returncode == 0
    assert completed.stdout == SEMANTIC_OUTPUT
    assert completed.stderr == ""
    assert list(tmp_path.iterdir()) == []


ASYNC_OUTPUT = """\
10 memories recalled
search: mem-1: Drinks green tea in the morning.
closed
"""


def test_async_example_prints_exactly_and_cleans_up(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    load_example("async_memory").main(temporary_root=tmp_path)
    captured = capsys.readouterr()
    assert captured.out == ASYNC_OUTPUT
    assert captured.err == ""
    assert list(tmp_path.iterdir()) == []


def test_async_example_runs_as_a_script_from_another_directory(tmp_path: Path) -> None:
    completed = _run_script("async_memory", tmp_path)
    assert completed.returncode == 0
    assert completed.stdout == ASYNC_OUTPUT
    assert completed.stderr == ""
    assert list(tmp_path.iterdir()) == []
