"""TrueHeart Core: governed long-term memory for AI agents.

Scoped source events with provenance, trust and retention; derived memories with
lineage; deterministic recall; seal, restore, forget and delete with tombstones;
body-free audit; and erasure that reaches the database file. No runtime dependencies,
no model calls, no network.
"""

from trueheart_core._version import package_version
from trueheart_core.adapters.sqlite import SQLiteRepository
from trueheart_core.claims import (
    ClaimConflict,
    ClaimDraft,
    ClaimQuery,
    ClaimRecord,
    ClaimSet,
    ClaimStatus,
    ClaimView,
    ExtractionRecord,
    ExtractionResult,
)
from trueheart_core.domain import (
    AuditRecord,
    EntityType,
    GovernanceAction,
    GovernanceCommand,
    GovernanceResult,
    IntegrityProblem,
    IntegrityReport,
    MemoryDraft,
    MemoryRecord,
    MemoryStatus,
    RawEventDraft,
    RawEventReceipt,
    RecallItem,
    RecallQuery,
    RetentionPolicy,
    Scope,
    SourceRef,
    TrustLevel,
)
from trueheart_core.errors import (
    EntityDeleted,
    EntityNotFound,
    IdempotencyConflict,
    InvalidTransition,
    RepositoryBusy,
    RepositoryCorruption,
    RepositoryReadOnly,
    ScopeMismatch,
    TrueHeartError,
    TrustEscalation,
    ValidationError,
)
from trueheart_core.extraction import (
    CanonicalClaimExtractor,
    ClaimExtraction,
    ClaimExtractor,
    ClaimProvenance,
    ExtractedClaim,
    ExtractionDiagnostic,
)
from trueheart_core.retrieval.capsule import TokenEstimator, Utf8BytesEstimator
from trueheart_core.retrieval.model import (
    CapsuleDecision,
    CapsuleItem,
    CapsuleTraceEntry,
    MemoryCapsule,
    MemoryPage,
    SearchQuery,
)
from trueheart_core.service import TrueHeart

__version__ = package_version()

__all__ = [
    "AuditRecord",
    "CanonicalClaimExtractor",
    "CapsuleDecision",
    "CapsuleItem",
    "CapsuleTraceEntry",
    "ClaimConflict",
    "ClaimDraft",
    "ClaimExtraction",
    "ClaimExtractor",
    "ClaimProvenance",
    "ClaimQuery",
    "ClaimRecord",
    "ClaimSet",
    "ClaimStatus",
    "ClaimView",
    "EntityDeleted",
    "EntityNotFound",
    "EntityType",
    "ExtractedClaim",
    "ExtractionDiagnostic",
    "ExtractionRecord",
    "ExtractionResult",
    "GovernanceAction",
    "GovernanceCommand",
    "GovernanceResult",
    "IdempotencyConflict",
    "IntegrityProblem",
    "IntegrityReport",
    "InvalidTransition",
    "MemoryCapsule",
    "MemoryDraft",
    "MemoryPage",
    "MemoryRecord",
    "MemoryStatus",
    "RawEventDraft",
    "RawEventReceipt",
    "RecallItem",
    "RecallQuery",
    "RepositoryBusy",
    "RepositoryCorruption",
    "RepositoryReadOnly",
    "RetentionPolicy",
    "SQLiteRepository",
    "Scope",
    "ScopeMismatch",
    "SearchQuery",
    "SourceRef",
    "TokenEstimator",
    "TrueHeart",
    "TrueHeartError",
    "TrustEscalation",
    "TrustLevel",
    "Utf8BytesEstimator",
    "ValidationError",
    "__version__",
]
