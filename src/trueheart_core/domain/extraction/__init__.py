"""Claim extraction: the extractor protocol, its DTOs, the built-in canonical grammar and
the span check every extraction passes before anything is stored (pure, no storage)."""

from trueheart_core.domain.extraction.canonical import (
    CANONICAL_CLAIM_MALFORMED,
    CanonicalClaimExtractor,
)
from trueheart_core.domain.extraction.model import (
    MAX_EXTRACTED_CLAIMS,
    MAX_VALUE_CHARS,
    ClaimExtraction,
    ClaimExtractor,
    ClaimProvenance,
    ExtractedClaim,
    ExtractionDiagnostic,
)
from trueheart_core.domain.extraction.spans import check_extraction

__all__ = [
    "CANONICAL_CLAIM_MALFORMED",
    "MAX_EXTRACTED_CLAIMS",
    "MAX_VALUE_CHARS",
    "CanonicalClaimExtractor",
    "ClaimExtraction",
    "ClaimExtractor",
    "ClaimProvenance",
    "ExtractedClaim",
    "ExtractionDiagnostic",
    "check_extraction",
]
