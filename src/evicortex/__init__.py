"""evicortex: the evicortex 0.3 API, backed by the governed TrueHeart engine.

``EviCortex.open(path)`` gives the compact evidence API of the evicortex guide; underneath,
every record is a governed TrueHeart event and memory, so purges leave tombstones and
audit, and erasure reaches the database file. ``EviCortex.engine`` is the TrueHeart
service of the same store. See ``docs/evicortex.md``.
"""

from evicortex._async import AsyncEviCortex
from evicortex._model import (
    CapsuleItem,
    ClaimInput,
    ClaimRecord,
    EmbeddingUpsertResult,
    MemoryCapsule,
    MemoryRecord,
    OmittedCandidate,
    SemanticIndexStatus,
    StoreStats,
)
from evicortex._store import EviCortex
from evicortex.errors import EmbedderMismatch, SemanticProjectionError
from trueheart_core import (
    CanonicalClaimExtractor,
    ClaimExtraction,
    ClaimExtractor,
    ClaimProvenance,
    Embedder,
    ExtractedClaim,
    ExtractionDiagnostic,
    ExtractionRecord,
    HashingEmbedder,
    IntegrityReport,
    RerankCandidate,
    Reranker,
    RerankResult,
)
from trueheart_core._version import package_version

__version__ = package_version()
"""The installed distribution's version: the same as ``trueheart_core.__version__``."""

__all__ = [
    "AsyncEviCortex",
    "CanonicalClaimExtractor",
    "CapsuleItem",
    "ClaimExtraction",
    "ClaimExtractor",
    "ClaimInput",
    "ClaimProvenance",
    "ClaimRecord",
    "Embedder",
    "EmbedderMismatch",
    "EmbeddingUpsertResult",
    "EviCortex",
    "ExtractedClaim",
    "ExtractionDiagnostic",
    "ExtractionRecord",
    "HashingEmbedder",
    "IntegrityReport",
    "MemoryCapsule",
    "MemoryRecord",
    "OmittedCandidate",
    "RerankCandidate",
    "RerankResult",
    "Reranker",
    "SemanticIndexStatus",
    "SemanticProjectionError",
    "StoreStats",
    "__version__",
]
