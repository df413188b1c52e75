"""Vectors of the semantic projection: the embedder's answer check, the stored form and
cosine similarity, tested without a database."""

from __future__ import annotations

import math
import random
import struct
from array import array
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trueheart_core.domain.semantic.vectors import (
    NORM_TOLERANCE,
    checked_vector,
    pack,
    query_form,
    similarities,
    unpack,
)
from trueheart_core.errors import ValidationError

FIELD = "some_field"


def _refused(rule: str) -> str:
    return "^" + FIELD + ": " + rule + "$"


def _norm(vector: Sequence[float]) -> float:
    return math.sqrt(math.fsum(x * x for x in vector))


# --- checked_vector ------------------------------------------------------------------------


@pytest.mark.parametrize("normalized", [True, False])
@pytest.mark.parametrize("length", [0, 3, 5])
def test_a_vector_of_the_wrong_length_is_refused(normalized: bool, length: int) -> None:
    with pytest.raises(ValidationError, match=_refused("returned a vector of the wrong length")):
        checked_vector(FIELD, [0.5] * length, 4, normalized)


class _Miscounted(Sequence[float]):
    """A host's sequence whose ``len()`` says 4 whatever it holds."""

    def __init__(self, items: list[float]) -> None:
        self.items = items

    def __len__(self) -> int:
        return 4

    def __getitem__(self, index: int) -> float:  # type: ignore[override]
        return self.items[index]


class _Endless(Sequence[float]):
    """A host's sequence whose ``len()`` says 4 and whose items never end."""

    def __len__(self) -> int:
        return 4

    def __getitem__(self, index: int) -> float:  # type: ignore[override]
        return 0.5


@pytest.mark.parametrize("normalized", [True, False])
@pytest.mark.parametrize(
    "value",
    [_Miscounted([1.0, 0.0]), _Miscounted([0.5] * 5), _Endless()],
    ids=["fewer", "more", "endless"],
)
def test_the_numbers_a_sequence_yields_are_counted_not_its_len(
    value: Sequence[float], normalized: bool
) -> None:
    with pytest.raises(ValidationError, match=_refused("returned a vector of the wrong length")):
        checked_vector(FIELD, value, 4, normalized)


def test_a_sequence_that_yields_as_many_numbers_as_its_len_is_accepted() -> None:
    assert checked_vector(FIELD, _Miscounted([0.0, 1.0, 0.0, 0.0]), 4, True) == [
        0.0,
        1.0,
        0.0,
        0.0,
    ]


@pytest.mark.parametrize(
    "value",
    [
        "abcd",
        b"\x00\x00\x00\x00",
        None,
        42,
        1.0,
        {0: 1.0, 1: 0.0, 2: 0.0, 3: 0.0},
        {1.0, 0.0},
        (x for x in (1.0, 0.0, 0.0, 0.0)),
    ],
    ids=["str", "bytes", "none", "int", "float", "dict", "set", "generator"],
)
def test_a_value_that_is_not_a_sequence_of_numbers_is_refused(value: object) -> None:
    with pytest.raises(ValidationError, match=_refused("must return sequences of floats")):
        checked_vector(FIELD, value, 4, False)


@pytest.mark.parametrize(
    "component",
    ["1.0", b"1", None, True, False, [1.0], complex(1, 0)],
    ids=["str", "bytes", "none", "true", "false", "list", "complex"],
)
def test_a_component_that_is_not_a_number_is_refused(component: object) -> None:
    with pytest.raises(ValidationError, match=_refused("must return sequences of floats")):
        checked_vector(FIELD, [component, 0.0, 0.0], 3, False)


@pytest.mark.parametrize("normalized", [True, False])
@pytest.mark.parametrize("component", [math.nan, math.inf, -math.inf])
def test_a_non_finite_component_is_refused(normalized: bool, component: float) -> None:
    with pytest.raises(ValidationError, match=_refused("returned a non-finite component")):
        checked_vector(FIELD, [1.0, component, 0.0], 3, normalized)


def test_an_int_too_large_for_a_float_is_refused_with_validation_error() -> None:
    # An int is accepted as a number, so an int that no float can hold is a non-finite
    # component; it must not escape as a raw OverflowError.
    try:
        checked_vector(FIELD, [10**400, 0.0], 2, False)
    except ValidationError as error:
        assert str(error) == f"{FIELD}: returned a non-finite component"
    except OverflowError as error:  # pragma: no cover - the defect this test shows
        pytest.fail(f"checked_vector let a raw {type(error).__name__} escape")
    else:  # pragma: no cover
        pytest.fail("an int too large for a float was accepted")


@pytest.mark.parametrize("vector", [[2.0, 0.0], [0.5, 0.5], [1.0 + 2 * NORM_TOLERANCE, 0.0]])
def test_a_vector_claimed_normalised_that_is_not_is_refused(vector: list[float]) -> None:
    with pytest.raises(ValidationError, match=_refused("returned a vector that is not normalised")):
        checked_vector(FIELD, vector, 2, True)


def test_a_vector_claimed_normalised_within_the_tolerance_is_rescaled() -> None:
    almost = [0.6 * (1 + NORM_TOLERANCE / 2), 0.8 * (1 + NORM_TOLERANCE / 2)]
    result = checked_vector(FIELD, almost, 2, True)
    assert result == pytest.approx([0.6, 0.8], abs=1e-15)
    assert _norm(result) == pytest.approx(1.0, abs=1e-15)


@pytest.mark.parametrize("normalized", [True, False])
@pytest.mark.parametrize("zeros", [[0.0, 0.0, 0.0], [0, 0, 0], [-0.0, 0.0, 0]])
def test_the_zero_vector_is_kept_as_zeros(normalized: bool, zeros: list[float]) -> None:
    result = checked_vector(FIELD, zeros, 3, normalized)
    assert result == [0.0, 0.0, 0.0]
    assert all(type(x) is float for x in result)


def test_normalisation_is_applied_when_the_embedder_does_not_claim_it() -> None:
    assert checked_vector(FIELD, [3, 4], 2, False) == [0.6, 0.8]
    assert checked_vector(FIELD, (0.0, -5.0), 2, False) == [0.0, -1.0]


@pytest.mark.parametrize(
    "value",
    [(0.6, 0.8), [0.6, 0.8], array("d", [0.6, 0.8]), array("f", [0.6, 0.8])],
    ids=["tuple", "list", "array-d", "array-f"],
)
def test_sequences_and_arrays_are_accepted(value: Sequence[float]) -> None:
    result = checked_vector(FIELD, value, 2, True)
    assert type(result) is list
    assert all(type(x) is float for x in result)
    assert result == pytest.approx([0.6, 0.8], abs=1e-7)


# Magnitudes whose squares are normal doubles (tiny and huge ones are tested apart).
_finite = st.one_of(
    st.just(0.0),
    st.floats(min_value=1e-6, max_value=1e6),
    st.floats(min_value=-1e6, max_value=-1e-6),
)


@settings(max_examples=300)
@given(st.lists(_finite, min_size=1, max_size=64))
def test_the_output_has_unit_length_or_is_all_zeros(vector: list[float]) -> None:
    result = checked_vector(FIELD, vector, len(vector), False)
    assert len(result) == len(vector)
    if all(x == 0.0 for x in result):
        assert _norm(vector) == 0.0
    else:
        assert _norm(result) == pytest.approx(1.0, abs=1e-12)
        # the direction is kept: every component keeps its sign
        assert all(
            (x > 0) == (y > 0) and (x < 0) == (y < 0) for x, y in zip(vector, result, strict=True)
        )


@pytest.mark.parametrize("tiny", [1e-161, 3e-160, 1e-170, 5e-324])
def test_tiny_components_are_normalised_to_unit_length(tiny: float) -> None:
    # Squares of components this small are subnormal or zero; the result must still have
    # unit length (its direction is the first axis), not the rounding error of the squares.
    result = checked_vector(FIELD, [tiny, 0.0], 2, False)
    assert result == pytest.approx([1.0, 0.0], abs=1e-12), (
        f"checked_vector returned {result!r} for [{tiny!r}, 0.0]: not of unit length"
    )


@pytest.mark.parametrize("huge", [1e155, 1e200, 1.7e308])
def test_huge_finite_components_are_normalised_not_called_non_finite(huge: float) -> None:
    # Every component is finite; only the sum of squares overflows.
    result = checked_vector(FIELD, [huge, huge], 2, False)
    assert result == pytest.approx([math.sqrt(0.5), math.sqrt(0.5)], abs=1e-12)


def test_huge_components_claimed_normalised_are_refused_as_not_normalised() -> None:
    with pytest.raises(ValidationError, match=_refused("returned a vector that is not normalised")):
        checked_vector(FIELD, [1e200, 1e200], 2, True)


# --- pack and unpack -----------------------------------------------------------------------


def test_pack_is_little_endian_float32() -> None:
    assert pack([1.0]) == b"\x00\x00\x80\x3f"
    assert pack([1.0, -2.0, 0.0]) == struct.pack("<3f", 1.0, -2.0, 0.0)
    assert pack([]) == b""


@settings(max_examples=200)
@given(
    st.lists(st.floats(width=32, allow_nan=False, allow_infinity=False), min_size=0, max_size=64)
)
def test_pack_and_unpack_round_trip_float32_values(values: list[float]) -> None:
    blob = pack(values)
    assert len(blob) == 4 * len(values)
    assert blob == struct.pack(f"<{len(values)}f", *values)
    unpacked = unpack(blob)
    assert isinstance(unpacked, array)
    assert unpacked.typecode == "f"
    assert list(unpacked) == values


def test_pack_rounds_doubles_to_float32() -> None:
    value = 0.1
    (single,) = struct.unpack("<f", struct.pack("<f", value))
    assert single != value
    assert list(unpack(pack([value]))) == [single]


# --- query_form ----------------------------------------------------------------------------


def test_query_form_holds_float32_values() -> None:
    values, _ = query_form([0.1, 0.2, 0.3])
    assert values == list(unpack(pack([0.1, 0.2, 0.3])))
    assert all(type(x) is float for x in values)


@pytest.mark.parametrize(
    ("nonzero", "dims", "sparse"),
    [(0, 8, True), (1, 8, True), (2, 8, True), (3, 8, False), (8, 8, False), (1, 4, True)],
)
def test_query_form_scores_sparsely_at_most_a_quarter_non_zero(
    nonzero: int, dims: int, sparse: bool
) -> None:
    vector = [0.0] * dims
    for index in range(nonzero):
        vector[dims - 1 - index] = 0.5
    values, components = query_form(vector)
    assert values == vector
    if sparse:
        assert components == [(i, x) for i, x in enumerate(vector) if x != 0.0]
    else:
        assert components is None


def test_query_form_counts_components_that_vanish_in_float32_as_zero() -> None:
    # 1e-50 is not zero as a double but is zero as a float32.
    values, components = query_form([1.0, 1e-50, 1e-50, 1e-50])
    assert values == [1.0, 0.0, 0.0, 0.0]
    assert components == [(0, 1.0)]


# --- similarities --------------------------------------------------------------------------


def _sparse_vector(draw: st.DrawFn, dims: int) -> list[float]:
    share = draw(st.floats(min_value=0.0, max_value=1.0))
    return [
        draw(st.floats(min_value=-1.0, max_value=1.0, allow_nan=False))
        if draw(st.floats(min_value=0.0, max_value=1.0)) < share
        else 0.0
        for _ in range(dims)
    ]


@st.composite
def _query_and_blobs(draw: st.DrawFn) -> tuple[list[float], list[bytes]]:
    dims = draw(st.integers(1, 64))
    query = checked_vector("q", _sparse_vector(draw, dims), dims, False)
    count = draw(st.integers(0, 6))
    blobs = [
        pack(checked_vector("d", _sparse_vector(draw, dims), dims, False)) for _ in range(count)
    ]
    return query, blobs


@settings(max_examples=300)
@given(_query_and_blobs())
def test_sparse_and_dense_scoring_give_identical_results(
    case: tuple[list[float], list[bytes]],
) -> None:
    query, blobs = case
    values, sparse = query_form(query)
    nonzero = [(i, x) for i, x in enumerate(values) if x != 0.0]
    dense_scores = similarities((values, None), blobs)
    sparse_scores = similarities((values, nonzero), blobs)
    assert sparse_scores == dense_scores
    assert similarities((values, sparse), blobs) == dense_scores
    for blob, score in zip(blobs, dense_scores, strict=True):
        expected = math.fsum(x * y for x, y in zip(values, unpack(blob), strict=True))
        assert score == expected
        assert -1.0 - 1e-6 <= score <= 1.0 + 1e-6


@settings(max_examples=200)
@given(st.lists(_finite, min_size=1, max_size=64).filter(any))
def test_a_vector_is_similar_to_itself(vector: list[float]) -> None:
    checked = checked_vector("v", vector, len(vector), False)
    (score,) = similarities(query_form(checked), [pack(checked)])
    assert score == pytest.approx(1.0, abs=1e-6)


@pytest.mark.parametrize("sparse", [True, False])
def test_a_stored_vector_of_the_wrong_size_scores_nan(sparse: bool) -> None:
    query = [1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    values, components = query_form(query)
    assert components is not None
    form = (values, components if sparse else None)
    good = pack(query)
    scores = similarities(form, [pack(query[:4]), good, good + b"\x00" * 4, b"", good[:-1]])
    assert len(scores) == 5
    assert math.isnan(scores[0])
    assert scores[1] == 1.0
    assert all(math.isnan(score) for score in scores[2:])


def test_the_zero_vector_is_similar_to_nothing() -> None:
    zero = checked_vector("q", [0.0, 0.0, 0.0, 0.0], 4, True)
    assert similarities(query_form(zero), [pack([0.5, 0.5, 0.5, 0.5]), pack(zero)]) == [0.0, 0.0]


def test_no_stored_vectors_give_no_scores() -> None:
    assert similarities(query_form([1.0, 0.0]), []) == []


@settings(max_examples=200)
@given(st.integers(2, 64), st.randoms(use_true_random=False))
def test_similarity_does_not_depend_on_the_order_of_the_components(
    dims: int, rng: random.Random
) -> None:
    # A magnitude spread of many orders makes a naive left-to-right sum order-dependent;
    # math.fsum is exactly rounded, so permuting both vectors alike changes nothing.
    query = [rng.uniform(-1.0, 1.0) * 10.0 ** rng.randint(-12, 0) for _ in range(dims)]
    stored = [rng.uniform(-1.0, 1.0) * 10.0 ** rng.randint(-12, 0) for _ in range(dims)]
    query = checked_vector("q", query, dims, False)
    stored = checked_vector("d", stored, dims, False)
    order = list(range(dims))
    rng.shuffle(order)
    (score,) = similarities(query_form(query), [pack(stored)])
    (permuted,) = similarities(
        query_form([query[i] for i in order]), [pack([stored[i] for i in order])]
    )
    assert permuted == score
