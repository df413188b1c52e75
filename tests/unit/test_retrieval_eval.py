"""The retrieval evaluation (benchmarks/retrieval_eval.py): its generated set is
deterministic and every answer exists where it should, and a quick run with the hashing
embedder returns no forgotten or other-scope memory and sane metrics."""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = REPO_ROOT / "benchmarks"


@pytest.fixture(scope="module")
def evaluation() -> Iterator[ModuleType]:
    """``benchmarks/retrieval_eval.py`` imported by file path. It imports its sibling
    ``harness`` by name, as when it runs as a script, so the folder is on the path
    while the module is in use; both leave ``sys.modules`` afterwards."""
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(BENCHMARKS))
        spec = importlib.util.spec_from_file_location(
            "benchmarks_retrieval_eval", BENCHMARKS / "retrieval_eval.py"
        )
        assert spec is not None
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # its dataclasses look their module up there
        try:
            spec.loader.exec_module(module)
            yield module
        finally:
            sys.modules.pop(spec.name, None)
            sys.modules.pop("harness", None)


@pytest.fixture(scope="module")
def evalset(evaluation: ModuleType) -> Any:
    return evaluation.generate()


def test_two_generations_are_equal(evaluation: ModuleType, evalset: Any) -> None:
    again = evaluation.generate()
    assert again == evalset
    assert [m.text for m in again.memories] == [m.text for m in evalset.memories]
    assert [q.text for q in again.questions] == [q.text for q in evalset.questions]


def test_every_answer_exists_in_its_scope(evaluation: ModuleType, evalset: Any) -> None:
    for question in evalset.questions:
        assert question.answer in evalset.memory_ids(question.answer_scope), question
        if question.kind == "cross_scope":
            assert question.answer_scope != question.scope
            assert question.answer not in evalset.memory_ids(question.scope)
        else:
            assert question.answer_scope == question.scope
        if question.kind == "forgotten":
            assert question.answer in evalset.forgotten
        else:
            assert question.answer not in evalset.forgotten


def test_the_set_has_what_the_design_says(evaluation: ModuleType, evalset: Any) -> None:
    scopes = len(evaluation.SCOPES)
    assert scopes >= 4
    assert {q.kind for q in evalset.questions} == set(evaluation.KINDS)
    assert {m.lang for m in evalset.memories} == {"en", "zh", "ja"}
    for scope in range(scopes):
        assert len(evalset.memory_ids(scope)) >= 200
    start, as_of = evaluation.WINDOW_START, evaluation.AS_OF
    assert as_of - start <= timedelta(days=549)  # 18 months
    assert all(start <= m.created_at < as_of for m in evalset.memories)
    texts = {m.memory_id: m.text for m in evalset.memories}
    for question in evalset.questions:
        words = evaluation.content_words(question.text)
        memory = evaluation.content_words(texts[question.answer])
        if question.kind == "paraphrase":
            assert not words & memory, question
        elif question.kind in ("keyword", "near_miss"):
            assert len(words & memory) >= 2, question


def test_a_quick_run_has_no_governance_violation_and_sane_metrics(
    evaluation: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = tmp_path / "retrieval.json"
    assert evaluation.main(["--quick", "--no-dense", "--json", str(report)]) == 0
    out = capsys.readouterr().out
    assert "dense embedder: skipped (--no-dense)" in out
    assert "governance violations: 0" in out
    payload = json.loads(report.read_text(encoding="utf-8"))
    assert payload["governance_violations"] == 0
    assert [(r["mode"], r["embedder"]) for r in payload["results"]] == [
        ("lexical", None),
        ("semantic", "hashing"),
        ("hybrid", "hashing"),
    ]
    questions = payload["set"]["questions"]
    for result in payload["results"]:
        assert result["governance"] == {
            "capsules": questions,
            "forgotten_returned": 0,
            "other_scope_returned": 0,
        }
        for kind, metrics in result["kinds"].items():
            assert metrics["questions"] > 0, kind
            values = [metrics[f"recall_at_{k}"] for k in (1, 5, 10)] + [metrics["mrr"]]
            assert all(0.0 <= value <= 1.0 for value in values), (kind, metrics)
            assert values[0] <= values[1] <= values[2], (kind, metrics)
            assert values[0] <= values[3], (kind, metrics)  # rank 1 counts fully in MRR
    lexical = payload["results"][0]["kinds"]
    assert lexical["keyword"]["recall_at_10"] > 0.9  # the shared words are found
