"""A record assembled from values that passed its checks equals the one its constructor
builds, and behaves like it (equality, pickling, replace); the values must be
given whole."""

from __future__ import annotations

import dataclasses
import pickle
from datetime import UTC, datetime, timedelta

import pytest

from trueheart_core import MemoryRecord, MemoryStatus, Scope, TrustLevel
from trueheart_core.domain.model import assembled

CREATED = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
VALUES = (
    "mem-1",
    Scope("tenant", "owner", "subject"),
    "a body",
    ("evt-1", "evt-2"),
    "f" * 64,
    "fact",
    TrustLevel.OBSERVED,
    CREATED,
    CREATED + timedelta(days=1),
    CREATED + timedelta(days=2),
    MemoryStatus.ACTIVE,
    {"tags": ["a", "b"], "n": 1},
)


def test_an_assembled_record_is_the_record_its_constructor_builds() -> None:
    checked = MemoryRecord(*VALUES)
    # The metadata as the constructor froze it, as a draft hands it over.
    values = (*VALUES[:-1], checked.metadata)
    built = assembled(MemoryRecord, *values)
    assert type(built) is MemoryRecord
    assert built == checked
    assert pickle.loads(pickle.dumps(built)) == checked
    assert dataclasses.replace(built, status=MemoryStatus.SEALED) == dataclasses.replace(
        checked, status=MemoryStatus.SEALED
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        built.content = "other"  # type: ignore[misc]


def test_every_value_must_be_given() -> None:
    with pytest.raises(TypeError):
        assembled(MemoryRecord, *VALUES[:-1])
    with pytest.raises(TypeError):
        assembled(MemoryRecord, *VALUES, "one too many")
