"""The check every extraction passes before anything derived from it is stored.

An extractor is code the host plugs in, possibly a model, so its output is not trusted:
each claim must point at a real span of the body that actually contains what the claim
says. Messages are fixed and never include the body.
"""

from __future__ import annotations

from trueheart_core.domain.extraction.model import MAX_EXTRACTED_CLAIMS, ClaimExtraction
from trueheart_core.errors import ValidationError

__all__ = ["check_extraction"]


def check_extraction(content: str, extraction: object) -> ClaimExtraction:
    """Return ``extraction`` unchanged if it is a faithful reading of ``content``.

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
