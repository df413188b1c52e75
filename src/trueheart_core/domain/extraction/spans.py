"""The check every extraction passes before anything derived from it is stored.

An extractor is code the host plugs in, possibly a model, so its output is not trusted:
each claim must point at a real span of the body that actually contains what the claim
says. Messages are fixed and never include the body.
"""

from __future__ import annotations

from trueheart_core.domain import validation as v
from trueheart_core.domain.extraction.model import (
    MAX_EXTRACTED_CLAIMS,
    ClaimExtraction,
    ClaimProvenance,
    ExtractedClaim,
    ExtractionDiagnostic,
)
from trueheart_core.errors import ValidationError

__all__ = ["check_extraction"]


def check_extraction(content: str, extraction: object) -> ClaimExtraction:
    """Return ``extraction`` if it is a faithful reading of ``content``: unchanged when
    it and every part of it are of the classes themselves, otherwise as a copy made of
    those classes, each field read once (see :func:`plain_extraction`).

    It must be a :class:`ClaimExtraction` of at most ``MAX_EXTRACTED_CLAIMS`` claims;
    every claim's span must lie within ``content`` and its text must contain the
    claim's subject, predicate and value, each as a substring; every diagnostic span
    must lie within ``content``. Positions index the Python string (code points).

    :raises ValidationError: ``"extraction: ..."`` naming the first rule broken.
    """
    if not isinstance(content, str):
        raise ValidationError("content", "must be a string")
    if not isinstance(extraction, ClaimExtraction):
        raise ValidationError("extraction", "must be a ClaimExtraction")
    extraction = plain_extraction(extraction)
    if len(extraction.claims) > MAX_EXTRACTED_CLAIMS:
        raise ValidationError("extraction", f"must hold at most {MAX_EXTRACTED_CLAIMS} claims")
    size = len(content)
    for claim in extraction.claims:
        span = claim.provenance
        if span.end > size:
            raise ValidationError("extraction", "claim span must lie within the content")
        passage = content[span.start : span.end]
        if not (claim.subject in passage and claim.predicate in passage and claim.value in passage):
            raise ValidationError(
                "extraction", "claim span must contain its subject, predicate and value"
            )
    for diagnostic in extraction.diagnostics:
        if diagnostic.end is not None and diagnostic.end > size:
            raise ValidationError("extraction", "diagnostic span must lie within the content")
    return extraction


def plain_extraction(extraction: ClaimExtraction) -> ClaimExtraction:
    """``extraction`` itself when it and every part of it are of the classes themselves
    (whose fields are then plain values), otherwise a copy made of those classes.

    A subclass is the host's code: its attributes could answer differently on each
    read, so a copy holds what each field gave when read once, and what was checked is
    what is stored. What a read raises propagates (the caller treats it as the
    extractor failing); a part of the wrong class is ``ValidationError``.
    """
    if type(extraction) is ClaimExtraction and _plain_parts(extraction):
        return extraction
    claims, diagnostics = extraction.claims, extraction.diagnostics
    if not isinstance(claims, tuple) or not isinstance(diagnostics, tuple):
        raise ValidationError("extraction", "must be a ClaimExtraction")
    return ClaimExtraction(
        tuple([_plain_claim(claim) for claim in v.items(claims)]),
        tuple([_plain_diagnostic(diagnostic) for diagnostic in v.items(diagnostics)]),
    )


def _plain_parts(extraction: ClaimExtraction) -> bool:
    """Whether every part of a ``ClaimExtraction`` of the class itself is of its class."""
    return (
        type(extraction.claims) is tuple
        and type(extraction.diagnostics) is tuple
        and all(
            type(claim) is ExtractedClaim and type(claim.provenance) is ClaimProvenance
            for claim in extraction.claims
        )
        and all(type(diagnostic) is ExtractionDiagnostic for diagnostic in extraction.diagnostics)
    )


def _plain_claim(claim: object) -> ExtractedClaim:
    if not isinstance(claim, ExtractedClaim):
        raise ValidationError("claims", "must be a tuple of ExtractedClaim")
    span = claim.provenance
    if not isinstance(span, ClaimProvenance):
        raise ValidationError("provenance", "must be a ClaimProvenance")
    return ExtractedClaim(
        claim.subject,
        claim.predicate,
        claim.value,
        ClaimProvenance(span.start, span.end),
        claim.valid_from,
        claim.valid_to,
        claim.confidence,
        claim.authority,
        claim.supersedes_source,
    )


def _plain_diagnostic(diagnostic: object) -> ExtractionDiagnostic:
    if not isinstance(diagnostic, ExtractionDiagnostic):
        raise ValidationError("diagnostics", "must be a tuple of ExtractionDiagnostic")
    return ExtractionDiagnostic(diagnostic.code, diagnostic.start, diagnostic.end)
