"""BM25 helpers and the total result order, tested without a database."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trueheart_core.domain.search import ranking


def test_bm25_parameters_are_the_documented_ones() -> None:
    assert ranking.BM25_K1 == 1.2
    assert ranking.BM25_B == 0.75


def test_a_correction_weighs_half_a_word() -> None:
    # A power of two: a correction's score is exactly half the word's, bit for bit.
    assert ranking.CORRECTION_WEIGHT == 0.5


@pytest.mark.parametrize(
    ("documents", "frequency", "expected"),
    [
        (10, 1, math.log(1 + 9.5 / 1.5)),
        (10, 10, math.log(1 + 0.5 / 10.5)),
        (1, 1, math.log(1 + 0.5 / 1.5)),
        (1000, 3, math.log(1 + 997.5 / 3.5)),
        (2, 1, math.log(2.0)),  # half of the documents: ln(1 + 1)
    ],
)
def test_idf_follows_the_formula(documents: int, frequency: int, expected: float) -> None:
    assert ranking.idf(documents, frequency) == pytest.approx(expected, rel=1e-15)
    assert type(ranking.idf(documents, frequency)) is float


@settings(max_examples=300)
@given(documents=st.integers(1, 10**9), data=st.data())
def test_idf_is_positive_and_falls_as_a_term_gets_common(
    documents: int, data: st.DataObject
) -> None:
    frequency = data.draw(st.integers(1, documents))
    value = ranking.idf(documents, frequency)
    assert value > 0.0
    assert math.isfinite(value)
    if frequency < documents:
        assert ranking.idf(documents, frequency + 1) < value


def test_idf_of_a_term_in_every_document_is_small_but_positive() -> None:
    assert 0.0 < ranking.idf(1_000_000, 1_000_000) < 1e-6


@pytest.mark.parametrize(
    ("documents", "total", "expected"),
    [
        (0, 0, 1.0),
        (0, 5, 1.0),
        (3, 0, 1.0),
        (-1, 10, 1.0),
        (4, -2, 1.0),
        (4, 10, 2.5),
        (1, 7, 7.0),
        (3, 1, 1 / 3),
    ],
)
def test_average_length(documents: int, total: int, expected: float) -> None:
    assert ranking.average_length(documents, total) == pytest.approx(expected)


@pytest.mark.parametrize(("limit", "window"), [(1, 2), (5, 10), (20, 40), (100, 200)])
def test_candidate_window_is_twice_the_limit(limit: int, window: int) -> None:
    assert ranking.candidate_window(limit) == window


def test_order_key_puts_higher_score_first_whatever_the_rest() -> None:
    better = ranking.order_key(2.0, 0.1, 0, "z")
    worse = ranking.order_key(1.0, 1.0, 10**15, "a")
    assert better < worse


def test_order_key_breaks_score_ties_by_clarity_then_newest_then_id() -> None:
    keys = [
        ranking.order_key(1.0, 0.5, 5, "a"),
        ranking.order_key(1.0, 1.0, 1, "z"),
        ranking.order_key(1.0, 0.5, 9, "b"),
        ranking.order_key(1.0, 0.5, 5, "B"),
    ]
    ordered = sorted(keys)
    assert ordered == [
        ranking.order_key(1.0, 1.0, 1, "z"),  # clearer
        ranking.order_key(1.0, 0.5, 9, "b"),  # newer
        ranking.order_key(1.0, 0.5, 5, "B"),  # "B" < "a" in code-point order
        ranking.order_key(1.0, 0.5, 5, "a"),
    ]


def test_order_key_compares_ids_by_code_point() -> None:
    ids = ["z", "é", "a", "Z", "東", "\U0001f600", "a-b", "a_b"]
    ordered = sorted(ids, key=lambda i: ranking.order_key(1.0, 1.0, 0, i))
    assert ordered == sorted(ids)
    assert ordered[:3] == ["Z", "a", "a-b"]


_candidates = st.tuples(
    st.sampled_from([0.5, 1.0, 1.5, 2.25]),
    st.sampled_from([0.0, 0.25, 1.0]),
    st.integers(-3, 3),
    st.text("aAbé東", min_size=1, max_size=2),
)


@settings(max_examples=300)
@given(st.lists(_candidates, max_size=12, unique_by=lambda c: c[3]))
def test_order_key_sorts_like_the_documented_lexicographic_order(
    candidates: list[tuple[float, float, int, str]],
) -> None:
    by_key = sorted(candidates, key=lambda c: ranking.order_key(*c))
    # The documented order as stable passes, least significant first.
    expected = sorted(candidates, key=lambda c: c[3])
    expected.sort(key=lambda c: c[2], reverse=True)
    expected.sort(key=lambda c: c[1], reverse=True)
    expected.sort(key=lambda c: c[0], reverse=True)
    assert by_key == expected
    # A total order: distinct IDs never compare equal.
    keys = [ranking.order_key(*c) for c in candidates]
    assert len(set(keys)) == len(keys)


def test_a_score_is_the_sum_rounded_once_whatever_the_order() -> None:
    parts = [0.1, 0.2, 0.3, 1e-17, 2.5]
    # Left to right, two orders of the same parts round apart; the score does not.
    assert (0.1 + 0.2) + 0.3 != 0.1 + (0.2 + 0.3)
    assert ranking.score(parts) == ranking.score(reversed(parts)) == math.fsum(parts)
    assert ranking.score([]) == 0.0


@pytest.mark.parametrize(
    ("scores", "window", "floor"),
    [
        ([3.0, 1.0, 2.0], 2, 2.0),
        ([3.0, 2.0, 2.0, 1.0], 2, 2.0),
        ([3.0, 1.0], 5, -math.inf),
        ([], 1, -math.inf),
        ([3.0, 1.0], 0, 3.0),
    ],
)
def test_the_window_floor_is_the_window_th_best_score(
    scores: list[float], window: int, floor: float
) -> None:
    assert ranking.window_floor(scores, window) == floor


def test_the_slack_of_a_rounded_cut_covers_any_summation_order() -> None:
    # A few hundred positive parts: any left-to-right order stays far inside the slack.
    parts = [1.0 / (n + 3) for n in range(400)]
    exact = math.fsum(parts)
    for order in (parts, sorted(parts), sorted(parts, reverse=True)):
        total = 0.0
        for part in order:
            total += part
        assert abs(total - exact) < exact * ranking.SUM_SLACK / 1000
