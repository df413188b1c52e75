"""TrueHeart Core: governed long-term memory for AI agents.

Scoped source events with provenance, trust and retention; derived memories with
lineage; deterministic recall; seal, restore, forget and delete with tombstones;
body-free audit; and erasure that reaches the database file. No runtime dependencies,
no model calls, no network.
"""

from typing import TYPE_CHECKING

from trueheart_core._version import package_version
from trueheart_core.adapters.sqlite import SQLiteRepository
from trueheart_core.domain.claims import (
    ClaimConflict,
    ClaimDraft,
    ClaimQuery,
    ClaimRecord,
    ClaimSet,
    ClaimStatus,
    ClaimView,
    ExtractionRecord,
    ExtractionResult,
    IngestResult,
)
from trueheart_core.domain.extraction import (
    CanonicalClaimExtractor,
    ClaimExtraction,
    ClaimExtractor,
    ClaimProvenance,
    ExtractedClaim,
    ExtractionDiagnostic,
)
from trueheart_core.domain.model import (
    ArtifactClass,
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
from trueheart_core.domain.operations import (
    ArtifactCounts,
    BackupReport,
    ErasureReceipt,
    IndexRebuildReport,
    StoreStats,
)
from trueheart_core.domain.portable import ExportReceipt, ImportReceipt
from trueheart_core.domain.search.capsule import TokenEstimator, Utf8BytesEstimator
from trueheart_core.domain.search.model import (
    CapsuleDecision,
    CapsuleItem,
    CapsuleTraceEntry,
    MemoryCapsule,
    MemoryPage,
    RankSignal,
    SearchQuery,
    SemanticTrace,
    SignalSource,
    TimeOrder,
    TimeTrace,
)
from trueheart_core.domain.semantic import (
    Embedder,
    HashingEmbedder,
    RerankCandidate,
    Reranker,
    RerankResult,
)
from trueheart_core.domain.semantic.model import SemanticStatus
from trueheart_core.errors import (
    EmbedderMismatch,
    EntityDeleted,
    EntityNotFound,
    IdempotencyConflict,
    ImportRefused,
    InvalidTransition,
    ProviderError,
    RepositoryBusy,
    RepositoryConflict,
    RepositoryCorruption,
    RepositoryFull,
    RepositoryReadOnly,
    RepositoryUnavailable,
    ScopeMismatch,
    SemanticProjectionError,
    TrueHeartError,
    TrustEscalation,
    ValidationError,
)
from trueheart_core.service.asynchronous import AsyncTrueHeart
from trueheart_core.service.trueheart import TrueHeart

__version__ = package_version()

__all__ = [
    "ArtifactClass",
    "ArtifactCounts",
    "AsyncTrueHeart",
    "AuditRecord",
    "BackupReport",
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
    "Embedder",
    "EmbedderMismatch",
    "EntityDeleted",
    "EntityNotFound",
    "EntityType",
    "ErasureReceipt",
    "ExportReceipt",
    "ExtractedClaim",
    "ExtractionDiagnostic",
    "ExtractionRecord",
    "ExtractionResult",
    "GovernanceAction",
    "GovernanceCommand",
    "GovernanceResult",
    "HashingEmbedder",
    "IdempotencyConflict",
    "ImportReceipt",
    "ImportRefused",
    "IndexRebuildReport",
    "IngestResult",
    "IntegrityProblem",
    "IntegrityReport",
    "InvalidTransition",
    "MemoryCapsule",
    "MemoryDraft",
    "MemoryPage",
    "MemoryRecord",
    "MemoryStatus",
    "PostgresRepository",
    "ProviderError",
    "RankSignal",
    "RawEventDraft",
    "RawEventReceipt",
    "RecallItem",
    "RecallQuery",
    "RepositoryBusy",
    "RepositoryConflict",
    "RepositoryCorruption",
    "RepositoryFull",
    "RepositoryReadOnly",
    "RepositoryUnavailable",
    "RerankCandidate",
    "RerankResult",
    "Reranker",
    "RetentionPolicy",
    "SQLiteRepository",
    "Scope",
    "ScopeMismatch",
    "SearchQuery",
    "SemanticProjectionError",
    "SemanticStatus",
    "SemanticTrace",
    "SignalSource",
    "SourceRef",
    "StoreStats",
    "TimeOrder",
    "TimeTrace",
    "TokenEstimator",
    "TrueHeart",
    "TrueHeartError",
    "TrustEscalation",
    "TrustLevel",
    "Utf8BytesEstimator",
    "ValidationError",
    "__version__",
]

if TYPE_CHECKING:
    from trueheart_core.adapters.postgres import PostgresRepository


def __getattr__(name: str) -> object:
    """``PostgresRepository`` is imported on first use, so that ``import trueheart_core``
    loads no third-party module (it needs the ``postgres`` extra: psycopg). Without the
    extra the name still resolves (``from trueheart_core import *``, ``hasattr`` and
    ``getattr`` work), to a class whose construction raises ``ImportError`` naming the
    extra."""
    if name == "PostgresRepository":
        try:
            from trueheart_core.adapters.postgres import (  # noqa: PLC0415 (lazy on purpose)
                PostgresRepository,
            )
        except ModuleNotFoundError as missing:
            if missing.name not in ("psycopg", "psycopg_pool"):
                raise
            return _WithoutTheExtra
        return PostgresRepository
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class _WithoutTheExtra:
    """``PostgresRepository`` when the ``postgres`` extra is not installed."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        raise ImportError(
            "PostgresRepository needs the postgres extra: pip install 'trueheart-core[postgres]'"
        )


_WithoutTheExtra.__name__ = _WithoutTheExtra.__qualname__ = "PostgresRepository"
