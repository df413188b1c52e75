"""The digest of a semantic vector row."""

from __future__ import annotations

from trueheart_core.ports import (
    VectorRow,
)
from trueheart_core.service.records.codecs import (
    _digest,
)


def vector_digest(row: VectorRow, identity: str, dimensions: int, normalized: bool) -> str:
    """The digest of a vector row: its memory, space (by identity, dimensions and
    normalisation, so a row cannot move to another space unnoticed), content hash and
    vector bytes."""
    if not isinstance(row.vector, bytes):
        return ""
    return _digest(
        "vector",
        row.scope,
        row.memory_id,
        identity,
        dimensions,
        normalized,
        row.content_hash,
        row.vector.hex(),
    )
