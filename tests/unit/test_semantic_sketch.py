"""Sketches of stored vectors, tested without a database: the stored form, the integer
dot products computed with wide integers, and the bound that every exact similarity
keeps to."""

from __future__ import annotations

import math
import random
from array import array

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trueheart_core.domain.semantic.embedders import HashingEmbedder
from trueheart_core.domain.semantic.sketch import (
    LEVELS,
    QuerySketch,
    estimates,
    query_sketch,
    sketch_of,
)
from trueheart_core.domain.semantic.vectors import checked_vector, pack, query_form, similarities


def _stored(vector: list[float]) -> bytes:
    return pack(checked_vector("embedder", vector, len(vector), False))


def _codes(sketch: bytes) -> list[int]:
    return [b - 128 for b in sketch]


def _check_bounds(vectors: list[list[float]], query: list[float]) -> list[float]:
    """Every exact similarity lies within its estimate's bound; returns the errors
    relative to the bounds."""
    blobs = [_stored(v) for v in vectors]
    form = query_form(checked_vector("embedder", query, len(query), False))
    exact = similarities(form, blobs)
    sketches = [sketch_of(blob) for blob in blobs]
    assert all(s is not None for s in sketches)
    joined = b"".join(s[0] for s in sketches if s is not None)
    scales = [s[1] for s in sketches if s is not None]
    errors = [s[2] for s in sketches if s is not None]
    estimate, bound = estimates(query_sketch(form[0]), joined, scales, errors)
    for e, a, b in zip(exact, estimate, bound, strict=True):
        assert a - b <= e <= a + b
    return [abs(e - a) / b if b else 0.0 for e, a, b in zip(exact, estimate, bound, strict=True)]


# --- the stored form -------------------------------------------------------------------------


def test_a_sketch_is_one_byte_per_component_with_its_scale_and_bound() -> None:
    rng = random.Random(1)
    blob = _stored([rng.gauss(0, 1) for _ in range(384)])
    found = sketch_of(blob)
    assert found is not None
    sketch, scale, error = found
    values = array("f")
    values.frombytes(blob)
    assert len(sketch) == 384
    assert scale == max(map(abs, values)) / LEVELS
    codes = _codes(sketch)
    assert max(map(abs, codes)) == LEVELS
    assert all(abs(c - x / scale) <= 0.5 + 1e-9 for c, x in zip(codes, values, strict=True))
    residual = math.sqrt(
        math.fsum((x - scale * c) ** 2 for x, c in zip(values, codes, strict=True))
    )
    assert residual <= error <= residual * (1 + 1e-9) + 1e-12
    assert sketch_of(blob) == found  # deterministic


def test_an_all_zero_vector_has_the_zero_sketch() -> None:
    assert sketch_of(bytes(16)) == (bytes([128]) * 4, 0.0, 0.0)
    assert sketch_of(b"") == (b"", 0.0, 0.0)


@pytest.mark.parametrize(
    "blob",
    [b"\x00\x00\x80", array("f", [1.0, math.nan]).tobytes(), array("f", [math.inf]).tobytes()],
    ids=["ragged", "nan", "inf"],
)
def test_a_malformed_vector_has_no_sketch(blob: bytes) -> None:
    assert sketch_of(blob) is None


def test_a_vector_that_is_not_bytes_has_no_sketch() -> None:
    assert sketch_of(bytearray(8)) is None  # type: ignore[arg-type]


# --- the query and the integer dot products ---------------------------------------------------


def test_the_field_width_follows_the_query_components() -> None:
    dense = query_sketch([1.0 / math.sqrt(384)] * 384)
    assert (dense.width, len(dense.columns), dense.dimensions) == (4, 384, 384)
    wide = query_sketch([1.0 / math.sqrt(4000)] * 4000)
    assert wide.width == 8
    sparse = query_sketch([0.0] * 100 + [1.0])
    assert sparse.columns[0][0] == 100 and len(sparse.columns) == 1
    assert query_sketch([0.0] * 8) == QuerySketch((), 0.0, 0.0, 0.0, 4, 8)


@settings(max_examples=200, deadline=None)
@given(
    rows=st.lists(st.lists(st.integers(0, 255), min_size=7, max_size=7), min_size=1, max_size=40),
    query=st.lists(
        st.one_of(st.just(0.0), st.floats(-1.0, 1.0, allow_nan=False, width=32)),
        min_size=7,
        max_size=7,
    ),
)
def test_the_integer_dot_products_are_exact(rows: list[list[int]], query: list[float]) -> None:
    sketch = query_sketch(query)
    multipliers = dict(sketch.columns)
    expected = [sum((b - 128) * multipliers.get(i, 0) for i, b in enumerate(row)) for row in rows]
    joined = b"".join(bytes(row) for row in rows)
    # the estimate is scale * t * dot: with scale 1 and t divided out, the dot itself
    estimate, _ = estimates(sketch, joined, [1.0] * len(rows), [0.0] * len(rows))
    assert [round(a / sketch.scale) if sketch.scale else 0 for a in estimate] == expected


def test_the_integer_dot_products_of_wide_fields_are_exact() -> None:
    rng = random.Random(3)
    query = [rng.uniform(-1, 1) for _ in range(3000)]
    sketch = query_sketch(query)
    assert sketch.width == 8
    rows = [bytes(rng.randrange(256) for _ in range(3000)) for _ in range(5)]
    rows.append(bytes([255]) * 3000)
    rows.append(bytes([0]) * 3000)
    multipliers = dict(sketch.columns)
    expected = [sum((b - 128) * multipliers.get(i, 0) for i, b in enumerate(row)) for row in rows]
    estimate, _ = estimates(sketch, b"".join(rows), [1.0] * len(rows), [0.0] * len(rows))
    assert [round(a / sketch.scale) for a in estimate] == expected


def test_sketches_of_the_wrong_size_are_refused() -> None:
    with pytest.raises(ValueError, match="wrong size"):
        estimates(query_sketch([0.5, 0.5]), b"\x80\x80\x80", [1.0, 1.0], [0.0, 0.0])


# --- the bound ---------------------------------------------------------------------------------


@pytest.mark.parametrize("dimensions", [1, 2, 16, 384, 1500])
def test_random_unit_vectors_keep_to_their_bounds(dimensions: int) -> None:
    rng = random.Random(dimensions)
    vectors = [[rng.gauss(0, 1) for _ in range(dimensions)] for _ in range(60)]
    for _ in range(3):
        ratios = _check_bounds(vectors, [rng.gauss(0, 1) for _ in range(dimensions)])
        assert max(ratios) < 1.0


def test_bounds_hold_at_the_extremes() -> None:
    rng = random.Random(5)
    dims = 32
    vectors = [
        [0.0] * dims,
        [1.0] + [0.0] * (dims - 1),
        [1.0] + [1e-30] * (dims - 1),
        [1e-30] * dims,
        [(-1.0) ** i for i in range(dims)],
        [rng.choice((-1.0, 1.0)) * 10 ** rng.uniform(-20, 0) for _ in range(dims)],
        [0.5 + 1e-7 * i for i in range(dims)],
    ]
    queries = [
        [1.0] + [0.0] * (dims - 1),
        [0.0] * dims,
        [1e-30] + [1.0] * (dims - 1),
        [rng.choice((-1.0, 1.0)) * 10 ** rng.uniform(-20, 0) for _ in range(dims)],
        *vectors[1:],
    ]
    for query in queries:
        _check_bounds(vectors, query)


def test_a_sparse_query_of_the_hashing_embedder_keeps_to_its_bounds() -> None:
    model = HashingEmbedder(256)
    texts = [f"note {i} about tea and coffee number {i % 7}" for i in range(50)] + ["", "tea"]
    vectors = [list(v) for v in model.embed_documents(texts)]
    for text in ("tea", "coffee note", "number 3", "absent"):
        query = list(model.embed_query(text))
        assert len(query_sketch(query_form(query)[0]).columns) <= 3
        _check_bounds(vectors, query)


def test_a_vector_compared_with_itself_is_within_its_bound_of_its_norm() -> None:
    rng = random.Random(9)
    vector = [rng.gauss(0, 1) for _ in range(384)]
    _check_bounds([vector, vector], vector)


_components = st.floats(-1.0, 1.0, allow_nan=False, allow_subnormal=True)


@settings(max_examples=300, deadline=None)
@given(
    vectors=st.lists(st.lists(_components, min_size=5, max_size=5), min_size=1, max_size=12),
    query=st.lists(_components, min_size=5, max_size=5),
)
def test_every_exact_similarity_keeps_to_its_bound(
    vectors: list[list[float]], query: list[float]
) -> None:
    _check_bounds(vectors, query)
