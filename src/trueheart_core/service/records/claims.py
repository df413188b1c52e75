"""Claims and extraction records: rows, digests, and the records rebuilt from verified
rows."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime

from trueheart_core.domain.claims import ClaimRecord, ExtractionRecord, claim_text
from trueheart_core.domain.extraction.model import ClaimProvenance, ExtractionDiagnostic
from trueheart_core.domain.model import (
    MemoryRecord,
    Scope,
)
from trueheart_core.domain.validation import canonical_json
from trueheart_core.errors import ValidationError
from trueheart_core.ports import (
    ClaimRow,
    ExtractionRow,
)
from trueheart_core.service.records.codecs import (
    RowInvalid,
    _check,
    _digest,
    from_us,
    scope_key,
    scope_of,
    to_us,
)


def _optional_us(value: datetime | None) -> int | None:
    return None if value is None else to_us(value)


def _claim_digest(row: ClaimRow) -> str:
    return _digest(
        "claim",
        row.scope,
        row.claim_id,
        row.subject,
        row.predicate,
        row.value,
        row.valid_from,
        row.valid_to,
        row.confidence,
        row.authority,
        row.supersedes,
    )


def claim_row(record: ClaimRecord) -> ClaimRow:
    """The stored form of a claim's fields, with its digest."""
    row = ClaimRow(
        scope_key(record.scope),
        record.claim_id,
        record.subject,
        record.predicate,
        record.value,
        _optional_us(record.valid_from),
        _optional_us(record.valid_to),
        record.confidence,
        record.authority,
        record.supersedes,
        "",
    )
    return replace(row, digest=_claim_digest(row))


def claim_from_row(row: ClaimRow, memory: MemoryRecord) -> ClaimRecord:
    """Verify a claim row and rebuild the record around its (verified) memory, whose
    content must be the claim's canonical text."""
    _check(row.digest, _claim_digest(row))
    if row.claim_id != memory.memory_id or row.scope != scope_key(memory.scope):
        raise RowInvalid("invalid_row")
    if type(row.confidence) is not float:
        raise RowInvalid("invalid_row")
    try:
        record = ClaimRecord(
            row.claim_id,
            row.subject,
            row.predicate,
            row.value,
            None if row.valid_from is None else from_us(row.valid_from),
            None if row.valid_to is None else from_us(row.valid_to),
            row.confidence,
            row.authority,
            row.supersedes,
            memory,
        )
    except (ValidationError, TypeError):
        raise RowInvalid("invalid_row") from None
    if memory.content != claim_text(record.subject, record.predicate, record.value):
        raise RowInvalid("claim_text_mismatch")
    return record


def extraction_row(record: ExtractionRecord) -> ExtractionRow:
    """The stored form of an extraction record, with its digest."""
    row = ExtractionRow(
        scope_key(record.scope),
        record.event_id,
        record.extractor,
        canonical_json(list(record.claim_ids)),
        canonical_json([[s.start, s.end] for s in record.spans]),
        canonical_json([[d.code, d.start, d.end] for d in record.diagnostics]),
        "",
    )
    return replace(row, digest=_extraction_digest(row))


def _extraction_digest(row: ExtractionRow) -> str:
    return _digest(
        "extraction",
        row.scope,
        row.event_id,
        row.extractor,
        row.claim_ids,
        row.spans,
        row.diagnostics,
    )


def extraction_from_row(row: ExtractionRow, known: Scope | None = None) -> ExtractionRecord:
    """Verify an extraction row and rebuild the record."""
    _check(row.digest, _extraction_digest(row))
    try:
        ids = json.loads(row.claim_ids)
        spans = json.loads(row.spans)
        diagnostics = json.loads(row.diagnostics)
        return ExtractionRecord(
            row.event_id,
            scope_of(row.scope, known),
            row.extractor,
            tuple(ids),
            tuple(ClaimProvenance(start, end) for start, end in spans),
            tuple(ExtractionDiagnostic(code, start, end) for code, start, end in diagnostics),
        )
    except (ValidationError, TypeError, ValueError, RecursionError):
        raise RowInvalid("invalid_row") from None
