"""The built-in extractor: claims written out in one exact canonical sentence.

::

    Canonical claim: subject=<v>; predicate=<v>; value=<v>[; valid_from=<iso>]
    [; valid_to=<iso>][; confidence=<decimal>][; authority=<v>][; supersedes=<source key>].

(one line in the body). The marker ``Canonical claim:`` is matched case-sensitively,
anywhere in the body and any number of times. Fields are ``key=value``, separated by a
semicolon and optional whitespace; a value cannot contain ``;`` and is stripped of
surrounding whitespace. ``subject``, ``predicate`` and ``value`` come first, in that
order; the optional fields follow in any order, each at most once. Times are ISO 8601
with a timezone (``Z`` is accepted) and are normalised to UTC; ``confidence`` is a plain
decimal from 0 through 1. The sentence ends at the first ``.`` followed by whitespace or
the end of the body, on the marker's line.

A sentence that breaks any rule yields no claim but one ``canonical_claim_malformed``
diagnostic covering it (up to the end of its line when no terminator is found). Nothing
is guessed: this extractor understands only this grammar and reads no free text.
"""

from __future__ import annotations

import re
from datetime import datetime
from decimal import Decimal

from trueheart_core.domain.extraction.model import (
    ClaimExtraction,
    ClaimProvenance,
    ExtractedClaim,
    ExtractionDiagnostic,
)
from trueheart_core.errors import ValidationError

__all__ = ["CANONICAL_CLAIM_MALFORMED", "CanonicalClaimExtractor"]

CANONICAL_CLAIM_MALFORMED = "canonical_claim_malformed"
"""The diagnostic code of a canonical sentence that yields no claim."""

_MARKER = "Canonical claim:"
_REQUIRED = ("subject", "predicate", "value")
_OPTIONAL = frozenset({"valid_from", "valid_to", "confidence", "authority", "supersedes"})
# The characters str.splitlines() breaks on: a canonical sentence lies on one line.
_LINE_BREAK = re.compile("[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]")
_TERMINATOR = re.compile(r"\.(?=\s|\Z)")
_DECIMAL = re.compile(r"[0-9]+(?:\.[0-9]+)?")


class _Malformed(Exception):
    """The sentence breaks the grammar (internal; becomes a diagnostic)."""


def _fields(body: str) -> dict[str, str]:
    fields: dict[str, str] = {}
    for index, part in enumerate(body.split(";")):
        key, equals, value = part.lstrip().partition("=")
        value = value.strip()
        if not equals or not value:
            raise _Malformed
        if index < len(_REQUIRED):
            if key != _REQUIRED[index]:
                raise _Malformed
        elif key not in _OPTIONAL or key in fields:
            raise _Malformed
        fields[key] = value
    if len(fields) < len(_REQUIRED):
        raise _Malformed
    return fields


def _time(value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise _Malformed from None
    if parsed.tzinfo is None or parsed.utcoffset() is None:
        raise _Malformed
    return parsed


def _confidence(value: str | None) -> float:
    if value is None:
        return 1.0
    if _DECIMAL.fullmatch(value) is None or Decimal(value) > 1:
        raise _Malformed
    return float(value)


def _claim(body: str, start: int, end: int) -> ExtractedClaim:
    fields = _fields(body)
    try:
        return ExtractedClaim(
            subject=fields["subject"],
            predicate=fields["predicate"],
            value=fields["value"],
            provenance=ClaimProvenance(start, end),
            valid_from=_time(fields.get("valid_from")),
            valid_to=_time(fields.get("valid_to")),
            confidence=_confidence(fields.get("confidence")),
            authority=fields.get("authority", "application"),
            supersedes_source=fields.get("supersedes"),
        )
    except ValidationError:
        # Too long, not UTF-8, an unrepresentable time, valid_to not after valid_from.
        raise _Malformed from None


class CanonicalClaimExtractor:
    """Extracts claims written in the canonical sentence grammar, and nothing else.

    Deterministic and stateless: the same body always gives the same extraction.
    Each claim's provenance spans its whole sentence, from the ``C`` of the marker to
    the terminating ``.`` inclusive.
    """

    __slots__ = ()

    @property
    def identity(self) -> str:
        """``"trueheart.canonical-claim/1"``."""
        return "trueheart.canonical-claim/1"

    def extract(self, content: str) -> ClaimExtraction:
        """Every canonical sentence in ``content``: a claim if well formed, else a
        ``canonical_claim_malformed`` diagnostic over the sentence."""
        if not isinstance(content, str):
            raise ValidationError("content", "must be a string")
        claims: list[ExtractedClaim] = []
        diagnostics: list[ExtractionDiagnostic] = []
        line_end = -1  # the end of the line holding the current marker
        position = content.find(_MARKER)
        while position >= 0:
            body_start = position + len(_MARKER)
            if position > line_end:  # searched once per line: linear on one long line
                line_break = _LINE_BREAK.search(content, body_start)
                line_end = len(content) if line_break is None else line_break.start()
            terminator = _TERMINATOR.search(content, body_start, line_end)
            if terminator is None:
                end = line_end
                diagnostics.append(ExtractionDiagnostic(CANONICAL_CLAIM_MALFORMED, position, end))
            else:
                end = terminator.end()
                try:
                    claims.append(_claim(content[body_start : terminator.start()], position, end))
                except _Malformed:
                    diagnostics.append(
                        ExtractionDiagnostic(CANONICAL_CLAIM_MALFORMED, position, end)
                    )
            position = content.find(_MARKER, end)
        return ClaimExtraction(tuple(claims), tuple(diagnostics))
