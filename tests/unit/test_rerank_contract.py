"""The check of a reranker's answer (``checked_scores``), tested without a database."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Sequence

import pytest

from trueheart_core import RerankCandidate, Reranker, RerankResult
from trueheart_core.domain.semantic.rerank import checked_scores
from trueheart_core.errors import ValidationError

CANDIDATES = (
    RerankCandidate("mem-a", "fact", "first content", 1, None, 1),
    RerankCandidate("mem-b", "fact", "second content", None, 1, 2),
    RerankCandidate("mem-c", "claim", "third content", 2, 2, 3),
)

NOT_RESULTS = "reranker: must return a list or tuple of RerankResult"
UNKNOWN = "reranker: returned a score for an unknown candidate"
TWICE = "reranker: returned two scores for one candidate"
NOT_FINITE = "reranker: must return finite scores"


def _refused(message: str) -> str:
    return "^" + re.escape(message) + "$"


@pytest.mark.parametrize(
    "answer",
    [
        None,
        {"mem-a": 1.0},
        {RerankResult("mem-a", 1.0)},
        iter([RerankResult("mem-a", 1.0)]),
        RerankResult("mem-a", 1.0),
        "mem-a",
        b"",
        1.0,
    ],
    ids=["none", "dict", "set", "iterator", "bare-result", "str", "bytes", "float"],
)
def test_an_answer_that_is_not_a_list_or_tuple_is_refused(answer: object) -> None:
    with pytest.raises(ValidationError, match=_refused(NOT_RESULTS)):
        checked_scores(answer, CANDIDATES)


@pytest.mark.parametrize(
    "item",
    [("mem-a", 1.0), {"memory_id": "mem-a", "score": 1.0}, None, 1.0, CANDIDATES[0]],
    ids=["tuple", "dict", "none", "float", "candidate"],
)
def test_an_item_that_is_not_a_rerank_result_is_refused(item: object) -> None:
    with pytest.raises(ValidationError, match=_refused(NOT_RESULTS)):
        checked_scores([RerankResult("mem-b", 0.5), item], CANDIDATES)


@pytest.mark.parametrize("memory_id", ["mem-x", "", "MEM-A", None, 1, ("mem-a",)])
def test_a_score_for_an_unknown_candidate_is_refused(memory_id: object) -> None:
    with pytest.raises(ValidationError, match=_refused(UNKNOWN)):
        checked_scores([RerankResult(memory_id, 1.0)], CANDIDATES)  # type: ignore[arg-type]


def test_a_score_for_a_candidate_not_offered_this_time_is_refused() -> None:
    with pytest.raises(ValidationError, match=_refused(UNKNOWN)):
        checked_scores([RerankResult("mem-c", 1.0)], CANDIDATES[:2])


@pytest.mark.parametrize("second", [1.0, 2.0])
def test_two_scores_for_one_candidate_are_refused(second: float) -> None:
    answer = [RerankResult("mem-a", 1.0), RerankResult("mem-b", 0.0), RerankResult("mem-a", second)]
    with pytest.raises(ValidationError, match=_refused(TWICE)):
        checked_scores(answer, CANDIDATES)


@pytest.mark.parametrize(
    "score",
    [True, False, "1.0", None, b"1", complex(1, 0), math.nan, math.inf, -math.inf],
    ids=["true", "false", "str", "none", "bytes", "complex", "nan", "inf", "-inf"],
)
def test_a_score_that_is_not_a_finite_number_is_refused(score: object) -> None:
    with pytest.raises(ValidationError, match=_refused(NOT_FINITE)):
        checked_scores([RerankResult("mem-a", score)], CANDIDATES)  # type: ignore[arg-type]


def test_an_int_score_too_large_for_a_float_is_refused_with_validation_error() -> None:
    # Ints are accepted as scores, so one that no float can hold is not a finite score;
    # it must not escape as a raw OverflowError.
    try:
        checked_scores([RerankResult("mem-a", 10**400)], CANDIDATES)
    except ValidationError as error:
        assert str(error) == NOT_FINITE
    except OverflowError as error:  # pragma: no cover - the defect this test shows
        pytest.fail(f"checked_scores let a raw {type(error).__name__} escape")
    else:  # pragma: no cover
        pytest.fail("an int score too large for a float was accepted")


def test_a_refused_answer_names_no_content() -> None:
    with pytest.raises(ValidationError) as caught:
        checked_scores([RerankResult("first content", 1.0)], CANDIDATES)
    assert "first content" not in str(caught.value)


@pytest.mark.parametrize("container", [list, tuple])
def test_scores_for_all_candidates_are_returned_as_floats(
    container: type[Sequence[RerankResult]],
) -> None:
    answer = container(  # type: ignore[call-arg]
        [RerankResult("mem-c", 3), RerankResult("mem-a", -1.5), RerankResult("mem-b", 0)]
    )
    scores = checked_scores(answer, CANDIDATES)
    assert scores == {"mem-c": 3.0, "mem-a": -1.5, "mem-b": 0.0}
    assert all(type(value) is float for value in scores.values())


def test_a_subset_of_the_candidates_may_be_scored() -> None:
    assert checked_scores((RerankResult("mem-b", 0.25),), CANDIDATES) == {"mem-b": 0.25}


@pytest.mark.parametrize("answer", [[], ()])
def test_an_empty_answer_scores_nothing(answer: Sequence[RerankResult]) -> None:
    assert checked_scores(answer, CANDIDATES) == {}
    assert checked_scores(answer, ()) == {}


def test_extreme_finite_scores_are_kept() -> None:
    answer = [RerankResult("mem-a", 1.7e308), RerankResult("mem-b", -1.7e308)]
    assert checked_scores(answer, CANDIDATES) == {"mem-a": 1.7e308, "mem-b": -1.7e308}


def test_a_scripted_object_satisfies_the_reranker_protocol() -> None:
    class Constant:
        identity = "constant-v1"

        def rerank(
            self, query: str, candidates: Sequence[RerankCandidate]
        ) -> Sequence[RerankResult]:
            return [RerankResult(c.memory_id, 1.0) for c in candidates]

    assert isinstance(Constant(), Reranker)
    assert not isinstance(object(), Reranker)
    assert checked_scores(Constant().rerank("q", CANDIDATES), CANDIDATES) == {
        c.memory_id: 1.0 for c in CANDIDATES
    }


class _Unhashable(str):
    """An ID whose own hashing and comparison raise."""

    def __hash__(self) -> int:
        raise RuntimeError("hash of the host's ID")

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("comparison of the host's ID")


class _UnIterable(list[RerankResult]):
    """A list whose own iteration raises."""

    def __iter__(self) -> Iterator[RerankResult]:
        raise RuntimeError("iteration of the host's list")


def test_an_answer_is_read_as_its_plain_values_whatever_its_subclasses_redefine() -> None:
    answer = _UnIterable([RerankResult(_Unhashable("mem-b"), 2.5)])
    scores = checked_scores(answer, CANDIDATES)
    assert scores == {"mem-b": 2.5}
    (key,) = scores
    assert type(key) is str
