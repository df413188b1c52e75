"""Vectors: checking what an embedder returned, storing it, and cosine similarity (pure).

Every stored vector is scaled to unit length and packed as little-endian IEEE 754
single-precision floats (``dimensions * 4`` bytes), so cosine similarity is a dot
product. An all-zero vector (a text the embedder saw nothing in) stays all zeros and is
similar to nothing.
"""

from __future__ import annotations

import itertools
import math
import numbers
import operator
import sys
from array import array
from collections.abc import Sequence

from trueheart_core.errors import ValidationError

__all__ = [
    "NORM_TOLERANCE",
    "as_listed",
    "checked_vector",
    "pack",
    "query_form",
    "similarities",
    "unpack",
]

NORM_TOLERANCE = 1e-3
"""How far from 1 the length of a vector may be when its embedder says it is normalised."""

_LITTLE = sys.byteorder == "little"
_SPARSE_SHARE = 4  # a query with at most 1/4 of its components non-zero is scored sparsely


def as_listed(value: object) -> object:
    """``value``, or what its ``tolist()`` gives when it is no sequence but has one (a
    numpy array or a torch tensor, which embedders often return): the values it holds,
    as plain Python lists and numbers. What the host's code raises passes unchanged."""
    if isinstance(value, Sequence | array):
        return value
    tolist = getattr(value, "tolist", None)
    return tolist() if callable(tolist) else value


def checked_vector(field: str, value: object, dimensions: int, normalized: bool) -> list[float]:
    """``value`` as a unit-length list of floats, after checking the embedder's contract:
    a sequence of exactly ``dimensions`` finite numbers (or what ``tolist()`` gives, see
    :func:`as_listed`), of unit length (or all zeros) when the embedder says it
    normalises. Raises ``ValidationError`` naming ``field``; what the host's code raises
    while its answer is read (its ``tolist()``, items, or a number's ``__float__``)
    passes unchanged, for the caller to report as the embedder's failure."""
    value = as_listed(value)
    if isinstance(value, str | bytes | bytearray) or not isinstance(value, Sequence | array):
        raise ValidationError(field, "must return sequences of floats")
    if (
        type(value) is list
        and len(value) == dimensions
        and not set(map(type, value)) - {float}
        and all(map(math.isfinite, value))
    ):
        # The common answer, a list of finite floats, is checked at C speed.
        return _unit(field, value, normalized)
    # A host's sequence may iterate over fewer (or more, even endlessly many) items than
    # its len() says: what counts is what it yields, read up to one past ``dimensions``.
    floats: list[float] = []
    for x in itertools.islice(value, dimensions + 1):
        # Any real number (numpy's float32, say, which is not a float): what counts is
        # the float it converts to.
        if isinstance(x, bool) or not isinstance(x, numbers.Real):
            raise ValidationError(field, "must return sequences of floats")
        try:
            number = float(x)
        except OverflowError:
            raise ValidationError(field, "returned a non-finite component") from None
        if not math.isfinite(number):
            raise ValidationError(field, "returned a non-finite component")
        floats.append(number)
    if len(floats) != dimensions:
        raise ValidationError(field, "returned a vector of the wrong length")
    return _unit(field, floats, normalized)


def _unit(field: str, floats: list[float], normalized: bool) -> list[float]:
    """Finite ``floats`` scaled to unit length (all zeros stay zeros)."""
    # Scaling by the largest component first keeps the squares of very small or very
    # large (finite) components from underflowing or overflowing.
    scale = max((abs(x) for x in floats), default=0.0)
    if scale == 0.0:
        return floats
    scaled = [x / scale for x in floats]
    norm = math.sqrt(math.fsum(x * x for x in scaled))
    if normalized and abs(norm * scale - 1.0) > NORM_TOLERANCE:
        raise ValidationError(field, "returned a vector that is not normalised")
    return [x / norm for x in scaled]


def pack(vector: Sequence[float]) -> bytes:
    """The stored form of a checked vector: little-endian float32."""
    packed = array("f", vector)
    if not _LITTLE:  # pragma: no cover - big-endian hosts
        packed.byteswap()
    return packed.tobytes()


def unpack(blob: bytes) -> array[float]:
    """The floats of a stored vector."""
    values = array("f")
    values.frombytes(blob)
    if not _LITTLE:  # pragma: no cover - big-endian hosts
        values.byteswap()
    return values


def query_form(vector: Sequence[float]) -> tuple[list[float], list[tuple[int, float]] | None]:
    """A checked query vector as it is scored: its float32 values (what the documents
    are stored as, so that a document compared with itself scores its stored norm), and
    its non-zero components when they are few enough to score sparsely."""
    values = list(unpack(pack(vector)))
    nonzero = [(i, x) for i, x in enumerate(values) if x != 0.0]
    sparse = nonzero if len(nonzero) * _SPARSE_SHARE <= len(values) else None
    return values, sparse


def similarities(
    query: tuple[list[float], list[tuple[int, float]] | None], blobs: Sequence[bytes]
) -> list[float]:
    """The cosine similarity of the query with each stored vector, in order.

    Both sides have unit length, so this is the dot product, summed with ``math.fsum``
    (exactly rounded, so independent of the order of the terms). Components where the
    query is zero add nothing; a sparse query therefore reads only its own non-zero
    positions and gets the same result. A stored vector of the wrong size (or type)
    scores ``nan``, which the caller treats as corruption.
    """
    values, sparse = query
    dims = len(values)
    size = 4 * dims
    fsum = math.fsum
    if set(map(type, blobs)) - {bytes} or set(map(len, blobs)) - {size}:
        return [
            similarities(query, [blob])[0]
            if type(blob) is bytes and len(blob) == size
            else math.nan
            for blob in blobs
        ]
    if not blobs or not dims:
        return [0.0] * len(blobs)
    if sparse is not None and _LITTLE:
        # One column per non-zero query component, across all the vectors at once.
        joined = memoryview(b"".join(blobs)).cast("f")
        columns = [[x * weight for x in joined[i::dims].tolist()] for i, weight in sparse]
        if not columns:
            return [0.0] * len(blobs)
        return [fsum(products) for products in zip(*columns, strict=True)]
    stored = unpack(b"".join(blobs))
    mul = operator.mul
    return [
        fsum(map(mul, values, stored[start : start + dims]))
        for start in range(0, len(stored), dims)
    ]
