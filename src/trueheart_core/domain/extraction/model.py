"""Frozen DTOs of claim extraction, and the protocol an extractor implements.

An extractor reads the body of a source event and proposes structured claims, each with
the exact span of the body it was read from. Like the other DTOs they validate every
field in declaration order in ``__post_init__`` (the first invalid field wins), with
fixed, body-free messages, normalise times to UTC and survive ``pickle``,
``copy.deepcopy`` and ``dataclasses.replace``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol, runtime_checkable

from trueheart_core.domain import validation as v
from trueheart_core.domain.model import _Reducible
from trueheart_core.domain.reprs import body_free_repr
from trueheart_core.errors import ValidationError

__all__ = [
    "MAX_EXTRACTED_CLAIMS",
    "MAX_VALUE_CHARS",
    "ClaimExtraction",
    "ClaimExtractor",
    "ClaimProvenance",
    "ExtractedClaim",
    "ExtractionDiagnostic",
]

MAX_EXTRACTED_CLAIMS = 100
"""The most claims one extraction may propose for one body."""

MAX_VALUE_CHARS = v.MAX_CLAIM_VALUE_CHARS
"""The longest claim value, in code points."""


_set: Callable[[object, str, object], None] = object.__setattr__
"""Set a field of a frozen DTO (during ``__post_init__``)."""


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True, slots=True)
class ClaimProvenance(_Reducible):
    """The span of the body a claim was read from: ``content[start:end]``.

    Positions index the Python string (code points), not its UTF-8 bytes. The span is
    never empty: ``0 <= start < end``.
    """

    start: int
    end: int

    def __post_init__(self) -> None:
        # Plain ints: a subclass's own comparisons are never asked (a span checked by
        # them could reach past the body).
        if not _is_int(self.start) or int.__int__(self.start) < 0:
            raise ValidationError("start", "must be a non-negative int")
        _set(self, "start", int.__int__(self.start))
        if not _is_int(self.end) or int.__int__(self.end) <= self.start:
            raise ValidationError("end", "must be greater than start")
        _set(self, "end", int.__int__(self.end))


@dataclass(frozen=True, slots=True)
class ExtractionDiagnostic(_Reducible):
    """Something an extractor noticed but could not turn into a claim.

    ``code`` is a fixed code such as ``"canonical_claim_malformed"``, never text of the
    body, so diagnostics can be stored and logged as freely as IDs. ``start`` and
    ``end`` optionally locate the passage concerned (both or neither; ``start <= end``,
    code-point positions).
    """

    code: str
    start: int | None = None
    end: int | None = None

    def __post_init__(self) -> None:
        _set(self, "code", v.text("code", self.code))
        # Plain ints: a subclass's own comparisons are never asked.
        if self.start is not None:
            if not _is_int(self.start) or int.__int__(self.start) < 0:
                raise ValidationError("start", "must be a non-negative int or None")
            _set(self, "start", int.__int__(self.start))
        if (self.start is None) != (self.end is None):
            raise ValidationError("end", "must be given exactly when start is")
        if self.start is not None:
            end = self.end
            if not isinstance(end, int) or isinstance(end, bool) or int.__int__(end) < self.start:
                raise ValidationError("end", "must be at least start")
            _set(self, "end", int.__int__(end))


@dataclass(frozen=True, slots=True, repr=False)
class ExtractedClaim(_Reducible):
    """A claim proposed by an extractor: ``subject`` ``predicate`` ``value``, with its span.

    ``valid_from`` and ``valid_to`` bound the valid time (``None``: open ended; when
    both are given ``valid_to`` is later). ``confidence`` is 0 through 1, ``authority``
    names who asserts the claim, and ``supersedes_source`` is the key, as written in
    the body, of an earlier claim this one revises; the extractor never resolves it.
    """

    subject: str
    predicate: str
    value: str
    provenance: ClaimProvenance
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    confidence: float = 1.0
    authority: str = "application"
    supersedes_source: str | None = None

    __repr__ = body_free_repr("subject", "predicate", "value", "supersedes_source")

    def __post_init__(self) -> None:
        _set(self, "subject", v.text("subject", self.subject))
        _set(self, "predicate", v.text("predicate", self.predicate))
        _set(self, "value", v.claim_value(self.value))
        if not isinstance(self.provenance, ClaimProvenance):
            raise ValidationError("provenance", "must be a ClaimProvenance")
        if self.valid_from is not None:
            _set(self, "valid_from", v.utc("valid_from", self.valid_from))
        if self.valid_to is not None:
            valid_to = v.utc("valid_to", self.valid_to)
            if self.valid_from is not None and valid_to <= self.valid_from:
                raise ValidationError("valid_to", "must be later than valid_from")
            _set(self, "valid_to", valid_to)
        _set(self, "confidence", v.confidence(self.confidence))
        _set(self, "authority", v.text("authority", self.authority))
        if self.supersedes_source is not None:
            _set(self, "supersedes_source", v.text("supersedes_source", self.supersedes_source))


@dataclass(frozen=True, slots=True)
class ClaimExtraction(_Reducible):
    """What an extractor returns for one body: its claims and its diagnostics."""

    claims: tuple[ExtractedClaim, ...] = ()
    diagnostics: tuple[ExtractionDiagnostic, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.claims, tuple) or not all(
            isinstance(claim, ExtractedClaim) for claim in self.claims
        ):
            raise ValidationError("claims", "must be a tuple of ExtractedClaim")
        if not isinstance(self.diagnostics, tuple) or not all(
            isinstance(diagnostic, ExtractionDiagnostic) for diagnostic in self.diagnostics
        ):
            raise ValidationError("diagnostics", "must be a tuple of ExtractionDiagnostic")


@runtime_checkable
class ClaimExtractor(Protocol):
    """Reads structured claims out of a source event's body.

    Extraction is the one step that interprets a body, so it is pluggable: a host can
    use the built-in canonical grammar, a rule set of its own or a model. Whatever it
    returns is checked (:func:`~trueheart_core.domain.extraction.check_extraction`) before
    anything is stored, so a faulty extractor is refused rather than trusted.
    """

    @property
    def identity(self) -> str:
        """A stable name and version, e.g. ``"trueheart.canonical-claim/1"``.

        It is recorded with what was extracted, so it must change whenever the
        extractor's output for the same body can change.
        """
        ...

    def extract(self, content: str) -> ClaimExtraction:
        """The claims found in ``content``, each with its exact span, and diagnostics.

        The same identity should give the same result for the same body. Diagnostics
        carry fixed codes, never text of the body.
        """
        ...
