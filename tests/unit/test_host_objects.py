"""Host objects that misbehave where the API takes a mapping or a path: whatever their
own methods raise, or however they compare, the call refuses them with a body-free
``ValidationError`` that chains nothing of theirs."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from trueheart_core import (
    MemoryDraft,
    RawEventDraft,
    RetentionPolicy,
    Scope,
    SourceRef,
    SQLiteRepository,
    TrueHeart,
    TrustLevel,
    ValidationError,
)
from trueheart_core.providers import local_transformers_artifact_sha256

SECRET = "host-secret-5d1e"
NOW = datetime(2026, 1, 1, tzinfo=UTC)
SCOPE = Scope("t", "o", "s")
RETENTION = RetentionPolicy(timedelta(days=1), timedelta(days=2), timedelta(days=3))


class ItemsRaise(dict[str, Any]):
    def items(self) -> Any:
        raise RuntimeError(SECRET)


class LookupRaises(Mapping[str, Any]):
    def __getitem__(self, key: str) -> Any:
        raise KeyError(SECRET)

    def __iter__(self) -> Iterator[str]:
        return iter(["a"])

    def __len__(self) -> int:
        return 1


class IterationRaises(Mapping[str, Any]):
    def __getitem__(self, key: str) -> Any:
        return 1

    def __iter__(self) -> Iterator[str]:
        raise LookupError(SECRET)

    def __len__(self) -> int:
        return 1


class ByIdentity(str):
    """A key that equals only itself: the same text as another key, but not equal."""

    __slots__ = ()

    def __hash__(self) -> int:
        return 7

    def __eq__(self, other: object) -> bool:
        return self is other


class PathRaises(os.PathLike[str]):
    def __fspath__(self) -> str:
        raise RuntimeError(SECRET)


def _metadata_owners(metadata: object) -> list[Any]:
    """Every DTO constructor that takes metadata, called with ``metadata``."""
    source = SourceRef("s", "chat", NOW, TrustLevel.OBSERVED)
    return [
        lambda: SourceRef("s", "chat", NOW, TrustLevel.OBSERVED, metadata),
        lambda: RawEventDraft("e", SCOPE, source, "body", RETENTION, metadata),
        lambda: MemoryDraft("m", SCOPE, "body", ("e",), "note", TrustLevel.OBSERVED, NOW, metadata),
    ]


def _refused(call: Any, message: str) -> None:
    with pytest.raises(ValidationError) as caught:
        call()
    assert str(caught.value) == message
    assert caught.value.__context__ is None and caught.value.__cause__ is None
    assert SECRET not in repr(caught.value)


@pytest.mark.parametrize("metadata", [ItemsRaise(a=1), LookupRaises(), IterationRaises()])
def test_a_mapping_whose_own_methods_raise_is_refused(metadata: Mapping[str, Any]) -> None:
    for call in _metadata_owners(metadata):
        _refused(call, "metadata: must be a readable JSON object")


def test_two_keys_of_one_text_are_refused_rather_than_one_dropped() -> None:
    metadata = {ByIdentity("a"): 1, "a": 2}
    assert len(metadata) == 2
    for call in _metadata_owners(metadata):
        _refused(call, "metadata: must not repeat a key")
    nested = {"outer": {ByIdentity("k"): 1, ByIdentity("k"): 2}}
    for call in _metadata_owners(nested):
        _refused(call, "metadata: must not repeat a key")


def test_a_path_whose_fspath_raises_is_refused(tmp_path: Path) -> None:
    _refused(lambda: SQLiteRepository(PathRaises()), "path: must be a str or os.PathLike")
    with TrueHeart(SQLiteRepository(tmp_path / "store.db")) as service:
        _refused(lambda: service.backup(PathRaises()), "path: must be a str or os.PathLike")
    _refused(
        lambda: local_transformers_artifact_sha256(PathRaises()), "path: must be a directory path"
    )
