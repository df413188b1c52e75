"""The DTOs of the evicortex face: frozen, slotted, body-free where they are diagnostics."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from evicortex._mapping import optional_moment
from evicortex.errors import ValidationError
from trueheart_core import RankSignal, SemanticTrace
from trueheart_core import StoreStats as EngineStats
from trueheart_core.domain.reprs import body_free_repr
from trueheart_core.domain.validation import plain, real

__all__ = [
    "CapsuleItem",
    "ClaimInput",
    "ClaimRecord",
    "EmbeddingUpsertResult",
    "MemoryCapsule",
    "MemoryRecord",
    "OmittedCandidate",
    "SemanticIndexStatus",
    "StoreStats",
]


def _text(field: str, value: object) -> str:
    """``value`` as a plain, non-blank ``str`` (a subclass's own methods are never
    asked)."""
    if not isinstance(value, str) or not (value := plain(value)).strip():
        raise ValidationError(field, "must be a non-blank string")
    return value


@dataclass(frozen=True, slots=True, repr=False)
class ClaimInput:
    """A claim to store with a ``remember`` call.

    ``confidence`` is from 0 through 1; ``valid_to`` must be later than ``valid_from``
    when both are given (datetimes with a timezone, or ISO 8601 strings with an offset
    or ``Z``; normalised to UTC). ``supersedes`` names an earlier claim of the same
    namespace, which stays stored and becomes superseded.
    """

    subject: str
    predicate: str
    value: str
    valid_from: datetime | str | None = None
    valid_to: datetime | str | None = None
    confidence: float = 1.0
    authority: str = "application"
    supersedes: str | None = None

    __repr__ = body_free_repr("subject", "predicate", "value")

    def __post_init__(self) -> None:
        object.__setattr__(self, "subject", _text("subject", self.subject))
        object.__setattr__(self, "predicate", _text("predicate", self.predicate))
        object.__setattr__(self, "value", _text("value", self.value))
        start = optional_moment("valid_from", self.valid_from)
        end = optional_moment("valid_to", self.valid_to)
        object.__setattr__(self, "valid_from", start)
        object.__setattr__(self, "valid_to", end)
        if start is not None and end is not None and end <= start:
            raise ValidationError("valid_to", "must be later than valid_from")
        confidence = real(self.confidence)  # the number it holds, never its own methods
        if confidence is None or not 0.0 <= confidence <= 1.0:  # also refuses NaN
            raise ValidationError("confidence", "must be from 0 through 1")
        object.__setattr__(self, "confidence", float(confidence))
        object.__setattr__(self, "authority", _text("authority", self.authority))
        if self.supersedes is not None:
            object.__setattr__(self, "supersedes", _text("supersedes", self.supersedes))


@dataclass(frozen=True, slots=True, repr=False)
class ClaimRecord:
    """A stored claim, with its status now (``current``, ``superseded``,
    ``not_yet_valid`` or ``ended``) and the claims that supersede it. ``memory_id`` is
    the evidence it was derived from."""

    id: str
    namespace: str
    memory_id: str
    subject: str
    predicate: str
    value: str
    valid_from: datetime | None
    valid_to: datetime | None
    confidence: float
    authority: str
    supersedes: str | None
    status: str
    superseded_by: tuple[str, ...] = ()

    __repr__ = body_free_repr("subject", "predicate", "value")


@dataclass(frozen=True, slots=True, repr=False)
class MemoryRecord:
    """A stored piece of evidence: its exact content and provenance, and its claims."""

    id: str
    namespace: str
    content: str
    kind: str
    source: str
    occurred_at: datetime
    recorded_at: datetime
    metadata: Mapping[str, Any]
    idempotency_key: str | None
    content_hash: str
    claims: tuple[ClaimRecord, ...] = ()

    __repr__ = body_free_repr("content")


@dataclass(frozen=True, slots=True, repr=False)
class CapsuleItem:
    """One whole memory in a capsule: evidence (``claim`` is ``None``; ``memory_id`` is
    its own ID) or a claim (``memory_id`` is its evidence). ``score`` orders the items;
    ``tokens`` is its cost under the capsule's estimator; ``signals`` says what each
    ranking contributed in a hybrid recall."""

    id: str
    kind: str
    content: str
    score: float
    rank: int
    tokens: int
    memory_id: str
    claim: ClaimRecord | None = None
    signals: tuple[RankSignal, ...] = ()

    __repr__ = body_free_repr("content")


@dataclass(frozen=True, slots=True)
class OmittedCandidate:
    """A candidate considered but left out: ``"budget"`` (its cost exceeded what was
    left) or ``"limit"`` (``limit`` items were already in)."""

    id: str
    rank: int
    tokens: int
    reason: str


@dataclass(frozen=True, slots=True, repr=False)
class MemoryCapsule:
    """The answer to ``recall``: whole memories, best first, within ``budget_tokens``.

    ``used_tokens`` never exceeds ``budget_tokens`` and there are at most ``limit``
    items. ``matched`` counts the eligible memories that matched the query;
    ``omitted`` lists the considered candidates left out, with the reason;
    ``diagnostics`` holds body-free codes (for example ``semantic_scan_capped``);
    ``semantic`` describes the semantic scan of a hybrid recall (``None`` otherwise).
    """

    namespace: str
    query: str
    as_of: datetime
    items: tuple[CapsuleItem, ...]
    budget_tokens: int
    used_tokens: int
    limit: int
    estimator: str
    matched: int
    omitted: tuple[OmittedCandidate, ...]
    diagnostics: tuple[str, ...]
    semantic: SemanticTrace | None

    __repr__ = body_free_repr("query")

    @property
    def omitted_by_score(self) -> int:
        """Matches ranked below the considered candidates."""
        return self.matched - len(self.items) - len(self.omitted)


@dataclass(frozen=True, slots=True)
class SemanticIndexStatus:
    """How far a namespace's evidence and claims are projected into the vector space."""

    namespace: str
    registered: bool
    memory_missing_ids: tuple[str, ...]
    memory_stale_ids: tuple[str, ...]
    claim_missing_ids: tuple[str, ...]
    claim_stale_ids: tuple[str, ...]

    @property
    def missing_count(self) -> int:
        return len(self.memory_missing_ids) + len(self.claim_missing_ids)

    @property
    def stale_count(self) -> int:
        return len(self.memory_stale_ids) + len(self.claim_stale_ids)

    @property
    def complete(self) -> bool:
        return self.registered and self.missing_count == 0 and self.stale_count == 0


@dataclass(frozen=True, slots=True)
class EmbeddingUpsertResult:
    """What ``index_semantic`` did for one record: vectors written (the evidence and its
    claims that lacked a current one) and skipped (already current)."""

    memory_id: str
    embedded: int
    skipped: int


@dataclass(frozen=True, slots=True)
class StoreStats:
    """Counts of the store (or of one namespace): evidence records, claims, namespaces
    holding anything, vectors; ``engine`` holds the engine's full statistics."""

    memories: int
    claims: int
    namespaces: int
    vectors: int
    engine: EngineStats
