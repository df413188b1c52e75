"""The row types the port exchanges: what was stored, in its primitive form.

Rows carry what was stored, unvalidated. Times are integer microseconds since the Unix
epoch (UTC), durations are decimal text of integer microseconds, metadata is canonical
JSON text, and ``digest`` is the row digest written with the row. Values read back may be
of any type if the store was tampered with; the service checks them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from trueheart_core.domain.frozen import direct_init

__all__ = [
    "AuditRow",
    "BodyRow",
    "ClaimPosition",
    "ClaimRow",
    "EdgeRow",
    "EventRow",
    "ExtractionRow",
    "MemoryRow",
    "Operation",
    "Period",
    "RecallCandidate",
    "ScopeKey",
    "SearchCandidate",
    "SearchDocRow",
    "SearchStatsRow",
    "SearchTermRow",
    "SpaceRow",
    "TombstoneRow",
    "VectorEntry",
    "VectorFacts",
    "VectorHit",
    "VectorRow",
    "VectorState",
]

ScopeKey = tuple[str, str, str]
"""A scope as stored: ``(tenant_id, owner_id, subject_id)``."""

Operation = Literal[
    "open",
    "ingest",
    "materialize",
    "recall",
    "govern",
    "expire",
    "audit",
    "verify",
    "search",
    "read",
    "index",
    "project",
    "erase",
    "stats",
    "rebuild",
    "compact",
    "export",
    "import",
]


@direct_init
@dataclass(frozen=True, slots=True)
class EventRow:
    """A body-free raw event receipt as stored. ``status`` is ``active`` or ``expired``."""

    scope: ScopeKey
    event_id: str
    source_id: str
    source_type: str
    source_occurred_at: int
    trust: int
    source_metadata: str
    content_hash: str
    ingested_at: int
    raw_expires_at: int
    clear_for: str
    recall_for: str
    status: str
    metadata: str
    digest: str
    has_body: bool = False


@direct_init
@dataclass(frozen=True, slots=True)
class BodyRow:
    """A raw event body, stored apart from its receipt so that expiry can remove it."""

    scope: ScopeKey
    event_id: str
    content: str
    digest: str


@direct_init
@dataclass(frozen=True, slots=True)
class MemoryRow:
    """A memory as stored, without its lineage edges."""

    scope: ScopeKey
    memory_id: str
    content: str
    dependency_fingerprint: str
    kind: str
    trust: int
    created_at: int
    clear_until: int
    recall_until: int
    status: str
    metadata: str
    digest: str


@direct_init
@dataclass(frozen=True, slots=True)
class EdgeRow:
    """One lineage edge with snapshots of its source's trust and retention."""

    scope: ScopeKey
    memory_id: str
    event_id: str
    trust: int
    clear_for: str
    recall_for: str
    digest: str


@direct_init
@dataclass(frozen=True, slots=True)
class TombstoneRow:
    """A body-free non-resurrection marker for a scoped ID (and fingerprint for memories)."""

    scope: ScopeKey
    entity_type: str
    entity_id: str
    fingerprint: str | None
    deleted_at: int
    reason: str
    digest: str


@direct_init
@dataclass(frozen=True, slots=True)
class AuditRow:
    """A body-free lifecycle record. ``seq`` is the write order, assigned on insert."""

    audit_id: str
    scope: ScopeKey
    action: str
    entity_type: str
    entity_id: str
    occurred_at: int
    reason: str
    metadata: str
    digest: str
    seq: int = 0


@direct_init
@dataclass(frozen=True, slots=True)
class RecallCandidate:
    """The index-only projection of a memory that recall ranks before loading rows."""

    memory_id: str
    created_at: int
    clear_until: int
    recall_until: int


@direct_init
@dataclass(frozen=True, slots=True)
class SearchDocRow:
    """A searchable memory as the search index holds it.

    ``length`` is its length in terms and ``terms`` its ``(term key, frequency)`` pairs
    sorted by key (empty when a read does not ask for them). The time, trust and kind
    columns copy the memory row's so that candidates can be filtered in the index.
    ``memory_id`` is ``None`` when read back for an entry whose memory row is missing.
    """

    scope: ScopeKey
    memory_id: str | None
    length: int
    created_at: int
    clear_until: int
    recall_until: int
    trust: int
    kind: str
    terms: tuple[tuple[int, int], ...] = ()


Period = tuple[int | None, int | None]
"""A period of a search, in microseconds since the epoch: ``(start, end)``, inclusive
start and exclusive end, ``None`` where it is open. A memory is in it when its
``created_at`` is; a memory of the claim kind that has a claim row, when the claim's
validity ``[valid_from, valid_to)`` (a ``None`` bound is open) overlaps it."""


@direct_init
@dataclass(frozen=True, slots=True)
class SearchCandidate:
    """A matching memory with its relevance score, read from the search index."""

    memory_id: str
    score: float
    created_at: int
    clear_until: int
    recall_until: int


@direct_init
@dataclass(frozen=True, slots=True)
class SearchTermRow:
    """A term's stored document frequency next to the postings actually held for it,
    and how many other rows of its scope hold the same term key before this one
    (``duplicates``; 0 when the index is sound)."""

    scope: ScopeKey
    term: int
    df: int
    postings: int
    duplicates: int = 0


@direct_init
@dataclass(frozen=True, slots=True)
class SearchStatsRow:
    """A scope's stored search statistics next to the ones recomputed from its entries."""

    scope: ScopeKey
    docs: int
    length: int
    actual_docs: int
    actual_length: int


ClaimPosition = tuple[str, str, int, str]
"""Where a claim stands in answer order: ``(subject, predicate, created_at, claim_id)``,
``created_at`` (its memory's) in integer microseconds."""


@direct_init
@dataclass(frozen=True, slots=True)
class ClaimRow:
    """A claim's structured fields as stored, next to its memory row (same ID and scope).
    Valid times are integer microseconds or ``None``."""

    scope: ScopeKey
    claim_id: str
    subject: str
    predicate: str
    value: str
    valid_from: int | None
    valid_to: int | None
    confidence: float
    authority: str
    supersedes: str | None
    digest: str


@direct_init
@dataclass(frozen=True, slots=True)
class ExtractionRow:
    """The body-free record of one extraction: the extractor's identity and canonical
    JSON of the claim IDs, their spans and the diagnostics."""

    scope: ScopeKey
    event_id: str
    extractor: str
    claim_ids: str
    spans: str
    diagnostics: str
    digest: str


@direct_init
@dataclass(frozen=True, slots=True)
class SpaceRow:
    """A registered vector space: the identity, dimensions and normalisation of the
    embedder that made its vectors. The one with the highest ``space_id`` is current."""

    space_id: int
    identity: str
    dimensions: int
    normalized: bool


@direct_init
@dataclass(frozen=True, slots=True)
class VectorRow:
    """One memory's vector as stored: its space, the SHA-256 of the content it was
    computed from, the packed vector (see :mod:`trueheart_core.domain.semantic.vectors`),
    the row digest, and the vector's sketch (see
    :mod:`trueheart_core.domain.semantic.sketch`): its bytes, scale and residual bound,
    all three ``None`` for a vector stored before sketches existed. The sketch is
    derived from the vector and not covered by the digest."""

    scope: ScopeKey
    memory_id: str
    space_id: int
    content_hash: str
    vector: bytes
    digest: str
    sketch: bytes | None = None
    sketch_scale: float | None = None
    sketch_error: float | None = None


@direct_init
@dataclass(frozen=True, slots=True)
class VectorState:
    """An active memory and the vector it has, if any (for status and repair)."""

    memory_id: str
    kind: str
    content: str
    space_id: int | None
    content_hash: str | None


VectorHit = tuple[int, object, object, object]
"""A vector read by the semantic scan: ``(handle, sketch, sketch_scale, sketch_error)``
as stored (``None`` for a vector without a sketch; anything if the store was tampered
with). The handle names the vector row within the unit of work (see
``VectorStore.facts``). A plain tuple: a scan reads every eligible vector of the scope."""

VectorFacts = tuple[int, str, int, int, int, bytes]
"""``(handle, memory_id, created_at, clear_until, recall_until, vector)`` of a scanned
vector: what an exact comparison and the tie-breaks need."""

VectorEntry = tuple[int, bytes, int, int, int, int, str]
"""One vector of a scope as ``VectorStore.load`` reads it: ``(handle, vector, active,
created_at, recall_until, trust, kind)``, as stored."""
