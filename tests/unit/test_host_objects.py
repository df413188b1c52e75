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


class LyingDuration(timedelta):
    """A duration whose comparisons say whatever suits it: never negative, never short."""

    def __le__(self, other: object) -> bool:
        return False

    def __lt__(self, other: object) -> bool:
        return False

    def __gt__(self, other: object) -> bool:
        return True


class LyingNumber(float):
    """A number whose comparisons always pass and whose conversion says NaN."""

    def __le__(self, other: object) -> bool:
        return True

    def __ge__(self, other: object) -> bool:
        return True

    def __lt__(self, other: object) -> bool:
        return False

    def __gt__(self, other: object) -> bool:
        return False

    def __float__(self) -> float:
        return float("nan")


class RaisingText(str):
    """Text whose own methods raise."""

    __slots__ = ()

    def strip(self, chars: str | None = None) -> str:
        raise RuntimeError(SECRET)

    def __eq__(self, other: object) -> bool:
        raise RuntimeError(SECRET)

    def __hash__(self) -> int:
        return str.__hash__(self)

    def __len__(self) -> int:
        raise RuntimeError(SECRET)


class RaisingIds(tuple[str, ...]):
    def __len__(self) -> int:
        raise RuntimeError(SECRET)


def test_durations_are_checked_by_what_they_hold_not_by_their_comparisons() -> None:
    day = timedelta(days=1)
    _refused(lambda: RetentionPolicy(LyingDuration(days=-5), day, day), "raw_ttl: must be positive")
    _refused(
        lambda: RetentionPolicy(day, LyingDuration(days=3), LyingDuration(days=2)),
        "recall_for: must be at least clear_for",
    )
    kept = RetentionPolicy(LyingDuration(days=1), LyingDuration(days=2), LyingDuration(days=3))
    assert [type(d) for d in (kept.raw_ttl, kept.clear_for, kept.recall_for)] == [timedelta] * 3
    assert (kept.raw_ttl, kept.clear_for, kept.recall_for) == (day, 2 * day, 3 * day)


def test_numbers_are_checked_by_what_they_hold_not_by_their_comparisons(tmp_path: Path) -> None:
    from trueheart_core import ClaimDraft, HashingEmbedder

    def claim(confidence: object) -> ClaimDraft:
        return ClaimDraft(
            "c",
            SCOPE,
            "user",
            "likes",
            "tea",
            ("e",),
            TrustLevel.OBSERVED,
            NOW,
            confidence=confidence,  # type: ignore[arg-type]
        )

    _refused(lambda: claim(LyingNumber(5.0)), "confidence: must be a number from 0 through 1")
    held = claim(LyingNumber(0.5)).confidence
    assert type(held) is float and held == 0.5
    _refused(
        lambda: SQLiteRepository(tmp_path / "a.db", busy_timeout=LyingNumber(1e9)),
        "busy_timeout: must be from 0 through 3600 seconds",
    )
    with SQLiteRepository(tmp_path / "b.db") as repository:
        _refused(
            lambda: TrueHeart(
                repository,
                embedder=HashingEmbedder(),
                minimum_semantic_score=LyingNumber(5.0),
            ),
            "minimum_semantic_score: must be from -1.0 through 1.0",
        )


def test_text_and_tuples_whose_own_methods_raise_are_read_as_they_hold(tmp_path: Path) -> None:
    ids = RaisingIds(("e",))
    memory = MemoryDraft("m", SCOPE, "body", ids, "note", TrustLevel.OBSERVED, NOW)
    assert memory.source_event_ids == ("e",) and type(memory.source_event_ids) is tuple
    _refused(
        lambda: MemoryDraft("m", SCOPE, "body", RaisingIds(()), "note", TrustLevel.OBSERVED, NOW),
        "source_event_ids: must be a non-empty tuple",
    )
    with TrueHeart(SQLiteRepository(tmp_path / "store.db")) as service:
        target = tmp_path / "copy.db"
        service.backup(RaisingText(str(target)))
        assert target.is_file()


@pytest.mark.parametrize("mapping", [ItemsRaise(a="c"), LookupRaises(), IterationRaises()])
def test_claim_ids_by_source_whose_own_methods_raise_are_refused(
    tmp_path: Path, mapping: Mapping[str, Any]
) -> None:
    from trueheart_core import CanonicalClaimExtractor

    source = SourceRef("s", "chat", NOW, TrustLevel.OBSERVED)
    draft = RawEventDraft("e", SCOPE, source, "body", RETENTION)
    with TrueHeart(SQLiteRepository(tmp_path / "store.db")) as service:
        _refused(
            lambda: service.ingest_extracted(
                draft, CanonicalClaimExtractor(), claim_ids_by_source=mapping
            ),
            "claim_ids_by_source: must be a readable mapping",
        )
        assert service.stats().events == 0
