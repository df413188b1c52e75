"""Sketches: a small integer copy of each stored vector, from which many similarities
are estimated at once, each with an error bound that the exact similarity provably
respects (pure).

A stored vector ``v`` (float32, see :mod:`trueheart_core.domain.semantic.vectors`) is
sketched as ``v = s * q + r``: ``s`` is its largest absolute component divided by 127,
``q`` its components divided by ``s`` and rounded to the nearest integer (-127 through
127), and ``r`` what the rounding left over. The sketch keeps ``q`` (one byte per
component, ``q + 128``), ``s`` and an upper bound ``e`` of the Euclidean norm of ``r``;
an all-zero vector has the sketch of ``q = 0`` with ``s = e = 0``.

A query ``u`` is quantised the same way, but finely: ``u = t * p + r_u`` with integer
multipliers ``p`` chosen so that the sums below fit in fixed-width fields. Then, exactly,

    v . u = s * t * (q . p)  +  s * (q . r_u)  +  r . u

so the estimate ``s * t * (q . p)`` differs from the exact dot product by at most
``s * 128 * |r_u|_1 + e * |u|_2`` (whatever its bytes hold, ``|q_i| <= 128``).
:func:`estimates` returns, for every sketch, the estimate and that bound, widened for
the rounding of the floating-point arithmetic that computes them (and for the rounding
of the exact similarity itself), so that ``|exact - estimate| <= bound`` holds for the
similarity that ``similarities`` computes from the same stored vector.

The integer dot products ``q . p`` of a whole chunk of sketches are computed with Python
integers as wide SIMD registers: for each query component, the sketch bytes of that
component of every vector (non-negative: ``q + 128``) are laid out one per
fixed-width field of one integer, which is multiplied by the component's multiplier and
added to an accumulator; the fields never carry into each other, so at the end each
field holds one vector's sum. Positive and negative multipliers have accumulators of
their own, so no field ever borrows. Query components that quantise to zero cost
nothing, which makes a sparse query cheap.
"""

from __future__ import annotations

import math
import operator
import sys
from array import array
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["LEVELS", "QuerySketch", "estimates", "query_sketch", "sketch_of"]

LEVELS = 127
"""The largest absolute value of a sketch component."""

_LITTLE = sys.byteorder == "little"
_BYTE_SPAN = 255  # a sketch byte offset by 128 is 0 through 255
_OFFSET = 128
_MAX_MULTIPLIER = 2**30 - 1  # one CPython digit: the fastest multiplication
_NARROW_MULTIPLIER = 2**14  # below this, 4-byte fields would quantise the query coarsely
_WIDEN = 1.0 + 2.0**-40  # covers the rounding of every floating-point step (< 2**-50 each)
_TINY = 2.0**-40
_U32 = next(code for code in "IL" if array(code).itemsize == 4)
# A signed byte b as the non-negative byte b + 128.
_TO_OFFSET = bytes((b + _OFFSET) & 0xFF for b in range(256))


def sketch_of(blob: bytes) -> tuple[bytes, float, float] | None:
    """The sketch of a stored vector (little-endian float32 components): the sketch bytes
    (``q + 128``, one per component), the scale ``s`` and the residual bound ``e``. ``None``
    when ``blob`` is not a whole number of float32 components or holds a non-finite one
    (such a vector is scored exactly, and fails its checks)."""
    if type(blob) is not bytes or len(blob) % 4:
        return None
    values = array("f")
    values.frombytes(blob)
    if not _LITTLE:  # pragma: no cover - big-endian hosts
        values.byteswap()
    floats = values.tolist()
    if not all(map(math.isfinite, floats)):
        return None
    largest = max(map(abs, floats), default=0.0)
    if largest == 0.0:
        return bytes([_OFFSET]) * len(floats), 0.0, 0.0
    scale = largest / LEVELS
    codes = list(map(round, map((LEVELS / largest).__mul__, floats)))
    residual = list(map(operator.sub, floats, map(scale.__mul__, codes)))
    error = math.sqrt(math.fsum(map(operator.mul, residual, residual)))
    # The computed residuals differ from the exact ones by at most one rounding of
    # ``scale * c`` each (below 2**-53 * largest): widened for that and for the sum.
    error = (error + len(floats) * largest * 2.0**-50) * _WIDEN
    return array("b", codes).tobytes().translate(_TO_OFFSET), scale, error


@dataclass(frozen=True, slots=True)
class QuerySketch:
    """A query vector quantised for :func:`estimates`.

    ``columns`` holds ``(component, multiplier)`` for every component whose multiplier
    is not zero; ``scale`` is ``t``; ``norm`` bounds ``|u|_2`` and ``spread`` bounds
    ``128 * |r_u|_1`` from above; ``width`` is the field width in bytes; ``dimensions``
    the length of the vector."""

    columns: tuple[tuple[int, int], ...]
    scale: float
    norm: float
    spread: float
    width: int
    dimensions: int


def query_sketch(values: Sequence[float]) -> QuerySketch:
    """The quantised form of a query's (float32) values."""
    dimensions = len(values)
    active = sum(1 for x in values if x != 0.0)
    width = 4
    limit = min(_MAX_MULTIPLIER, (2 ** (8 * width) - 1) // max(1, active * _BYTE_SPAN))
    if limit < _NARROW_MULTIPLIER:
        width = 8
        limit = min(_MAX_MULTIPLIER, (2 ** (8 * width) - 1) // max(1, active * _BYTE_SPAN))
    largest = max(map(abs, values), default=0.0)
    norm = math.sqrt(math.fsum(x * x for x in values)) * _WIDEN
    if largest == 0.0:
        return QuerySketch((), 0.0, norm, 0.0, width, dimensions)
    scale = largest / limit
    inverse = limit / largest
    columns = []
    leftover = []
    for index, x in enumerate(values):
        multiplier = max(-limit, min(limit, round(x * inverse)))
        leftover.append(abs(x - scale * multiplier))
        if multiplier:
            columns.append((index, multiplier))
    spread = (_OFFSET * math.fsum(leftover) + dimensions * largest * 2.0**-50) * _WIDEN
    return QuerySketch(tuple(columns), scale, norm, spread, width, dimensions)


def estimates(
    query: QuerySketch, sketches: bytes, scales: Sequence[float], errors: Sequence[float]
) -> tuple[list[float], list[float]]:
    """For each of ``len(scales)`` sketches (``sketches`` holds their bytes joined, each
    ``query.dimensions`` long) with their scales and residual bounds: the estimated
    similarity with the query and the bound of its error (see the module docstring).
    Scales and bounds must be finite and non-negative."""
    count = len(scales)
    dots = _dots(query, sketches, count)
    factor = query.scale
    estimate = [s * factor * d for s, d in zip(scales, dots, strict=True)]
    norm, spread = query.norm, query.spread
    bound = [
        (e * norm + s * spread + abs(a) * _TINY) * _WIDEN
        for e, s, a in zip(errors, scales, estimate, strict=True)
    ]
    return estimate, bound


def _dots(query: QuerySketch, sketches: bytes, count: int) -> list[int]:
    """The integer dot products ``q . p`` of ``count`` joined sketches."""
    dimensions = query.dimensions
    if len(sketches) != count * dimensions:
        raise ValueError("sketches of the wrong size")
    if not count or not query.columns:
        return [0] * count
    width = query.width
    fields = bytearray(count * width)
    positive = negative = 0
    offset_sum = 0
    from_bytes = int.from_bytes
    for index, multiplier in query.columns:
        fields[0::width] = sketches[index::dimensions]
        column = from_bytes(fields, "little")
        if multiplier > 0:
            positive += column * multiplier
        else:
            negative += column * -multiplier
        offset_sum += multiplier
    plus = _fields(positive, count, width)
    minus = _fields(negative, count, width)
    correction = _OFFSET * offset_sum
    return [a - b - correction for a, b in zip(plus, minus, strict=True)]


def _fields(accumulator: int, count: int, width: int) -> list[int]:
    """The ``count`` unsigned little-endian fields of ``width`` bytes of an integer."""
    values = array(_U32 if width == 4 else "Q")
    values.frombytes(accumulator.to_bytes(count * width, "little"))
    if not _LITTLE:  # pragma: no cover - big-endian hosts
        values.byteswap()
    return values.tolist()
