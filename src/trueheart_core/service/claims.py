"""Claims: materialising them, answering bi-temporal questions, extraction.

Service-layer functions over one unit of work. A claim is a memory (kind ``"claim"``,
content its canonical text) plus a row of structured fields, written in the same unit,
so every memory rule and every governance path applies to it unchanged.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Mapping, Sequence
from datetime import datetime

from trueheart_core.domain import validation as v
from trueheart_core.domain.claims import (
    CLAIM_KIND,
    ClaimDraft,
    ClaimQuery,
    ClaimRecord,
    ClaimSet,
    ClaimView,
    ExtractionRecord,
    conflicts,
    is_known,
    status_at,
    supersedes_at,
    view_order,
)
from trueheart_core.domain.extraction.model import ClaimExtraction, ClaimExtractor
from trueheart_core.domain.extraction.spans import check_extraction
from trueheart_core.domain.model import EntityType, MemoryDraft, RawEventDraft, Scope
from trueheart_core.domain.validation import canonical_json
from trueheart_core.errors import (
    IdempotencyConflict,
    ProviderError,
    TrueHeartError,
    ValidationError,
)
from trueheart_core.ports import ClaimRow, UnitOfWork
from trueheart_core.service import loading, records, writing
from trueheart_core.service.records import RowInvalid, scope_key

_INVALID_CLAIM = "invalid claim record"


def memory_draft(draft: ClaimDraft) -> MemoryDraft:
    """The memory that carries a claim."""
    return MemoryDraft(
        draft.claim_id,
        draft.scope,
        draft.content,
        draft.source_event_ids,
        CLAIM_KIND,
        draft.trust,
        draft.created_at,
        draft.metadata,
    )


def _same_fields(record: ClaimRecord, draft: ClaimDraft) -> bool:
    return (
        record.subject == draft.subject
        and record.predicate == draft.predicate
        and record.value == draft.value
        and record.valid_from == draft.valid_from
        and record.valid_to == draft.valid_to
        and record.confidence == draft.confidence
        and record.authority == draft.authority
        and record.supersedes == draft.supersedes
    )


def load(uow: UnitOfWork, scope: Scope, rows: Sequence[ClaimRow]) -> list[ClaimRecord]:
    """Verified claims for these rows, each with its verified memory."""
    key = scope_key(scope)
    ids = [row.claim_id for row in rows]
    memories = {m.memory_id: m for m in uow.memories.get_many(key, ids)}
    edges = loading.edges_by_memory(uow.memories.edges(key, ids))
    loaded = []
    for row in rows:
        memory_row = memories.get(row.claim_id)
        if memory_row is None or memory_row.kind != CLAIM_KIND:
            loading.corrupt(_INVALID_CLAIM)
        memory = loading.memory(memory_row, edges[row.claim_id], scope, "invalid memory record")
        try:
            loaded.append(records.claim_from_row(row, memory))
        except RowInvalid:
            loading.corrupt(_INVALID_CLAIM)
    return loaded


def materialize(uow: UnitOfWork, draft: ClaimDraft) -> ClaimRecord:
    """Store a claim exactly once: the memory rules first (tombstones, replay, sources,
    trust ceiling, deadlines), then the claim's own: an identical replay returns the
    stored claim, and ``supersedes`` must name a claim of the same scope."""
    key = scope_key(draft.scope)
    existing = uow.claims.get(key, (draft.claim_id,))
    existed = uow.memories.get(key, draft.claim_id) is not None
    memory = writing.materialize(uow, memory_draft(draft))
    if existing:
        (stored,) = load(uow, draft.scope, existing)
        if not _same_fields(stored, draft):
            raise IdempotencyConflict(draft.claim_id)
        return stored
    if existed:
        # A memory that is not a claim already holds this ID.
        raise IdempotencyConflict(draft.claim_id)
    if draft.supersedes is not None and not uow.claims.get(key, (draft.supersedes,)):
        if uow.memories.get(key, draft.supersedes) is not None:
            raise ValidationError("supersedes", "must name a claim")
        loading.diagnose(uow, key, EntityType.MEMORY, draft.supersedes)
    record = ClaimRecord(
        draft.claim_id,
        draft.subject,
        draft.predicate,
        draft.value,
        draft.valid_from,
        draft.valid_to,
        draft.confidence,
        draft.authority,
        draft.supersedes,
        memory,
    )
    uow.claims.insert(records.claim_row(record))
    return record


def answer(uow: UnitOfWork, query: ClaimQuery) -> ClaimSet:
    """The claims known at ``query.known_at`` with their status at ``query.as_of``."""
    scope, key = query.scope, scope_key(query.scope)
    known_at = query.known_at
    assert known_at is not None
    rows = uow.claims.about(key, query.subject, query.predicate)
    if query.subject is not None and any(r.subject != query.subject for r in rows):
        loading.corrupt(_INVALID_CLAIM)
    claims = [c for c in load(uow, scope, rows) if is_known(c, known_at)]
    views = known_views(uow, scope, claims, query.as_of, known_at)
    views.sort(key=view_order)
    shown = [v for v in views if not query.statuses or v.status in query.statuses]
    return ClaimSet(query.as_of, known_at, tuple(shown), conflicts(views))


def known_views(
    uow: UnitOfWork,
    scope: Scope,
    claims: Sequence[ClaimRecord],
    as_of: datetime,
    known_at: datetime,
) -> list[ClaimView]:
    """Each claim's view: its status at ``as_of`` and the claims known at ``known_at``
    that supersede it."""
    key = scope_key(scope)
    superseders = load(uow, scope, uow.claims.superseders_of(key, [c.claim_id for c in claims]))
    by_target: defaultdict[str, list[str]] = defaultdict(list)
    for superseder in superseders:
        memory = superseder.memory
        if superseder.supersedes is not None and supersedes_at(
            memory.status, memory.created_at, known_at
        ):
            by_target[superseder.supersedes].append(superseder.claim_id)
    return [
        ClaimView(
            claim,
            status_at(claim, bool(by_target[claim.claim_id]), as_of),
            tuple(sorted(by_target[claim.claim_id])),
        )
        for claim in claims
    ]


def claim_id_for(scope: Scope, event_id: str, index: int) -> str:
    """The deterministic ID of the ``index``-th claim extracted from an event."""
    text = canonical_json([list(scope_key(scope)), event_id, index])
    return "claim-" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def drafts_from(
    draft: RawEventDraft,
    extraction: ClaimExtraction,
    claim_ids_by_source: Mapping[str, str],
) -> list[ClaimDraft]:
    """The claim drafts of a checked extraction: made when the event occurred, as
    trusted as its source, citing it alone. Supersession targets named by the
    extractor are mapped only through ``claim_ids_by_source``."""
    drafts = []
    for index, claim in enumerate(extraction.claims):
        supersedes = None
        if claim.supersedes_source is not None:
            supersedes = claim_ids_by_source.get(claim.supersedes_source)
            if supersedes is None:
                raise ValidationError(
                    "claim_ids_by_source", "must map every source the extractor names"
                )
        drafts.append(
            ClaimDraft(
                claim_id_for(draft.scope, draft.event_id, index),
                draft.scope,
                claim.subject,
                claim.predicate,
                claim.value,
                (draft.event_id,),
                draft.source.trust,
                draft.source.occurred_at,
                claim.valid_from,
                claim.valid_to,
                claim.confidence,
                claim.authority,
                supersedes,
            )
        )
    return drafts


def extract(draft: RawEventDraft, extractor: object) -> tuple[str, ClaimExtraction]:
    """Run the extractor and check everything it returned, before any transaction."""
    try:
        # The protocol check and the identity read run the host's code.
        fits = not isinstance(extractor, type) and isinstance(extractor, ClaimExtractor)
        identity = extractor.identity if isinstance(extractor, ClaimExtractor) and fits else None
    except TrueHeartError:
        raise
    except Exception as error:
        raise ProviderError("the extractor failed") from error
    if not isinstance(extractor, ClaimExtractor) or not isinstance(identity, str):
        raise ValidationError("extractor", "must be a ClaimExtractor")
    identity = v.text("extractor", identity)
    # The answer is the host's object too: what its reading raises is the extractor
    # failing, as what ``extract`` raises is.
    try:
        answer = extractor.extract(draft.content)
        return identity, check_extraction(draft.content, answer)
    except TrueHeartError:
        raise
    except Exception as error:
        raise ProviderError("the extractor failed") from error


def record_extraction(uow: UnitOfWork, record: ExtractionRecord) -> ExtractionRecord:
    """Store an extraction record once; a replay must be identical."""
    key = scope_key(record.scope)
    stored = uow.claims.get_extraction(key, record.event_id)
    if stored is None:
        uow.claims.insert_extraction(records.extraction_row(record))
        return record
    try:
        existing = records.extraction_from_row(stored, record.scope)
    except RowInvalid:
        loading.corrupt("invalid extraction record")
    if existing != record:
        raise IdempotencyConflict(record.event_id)
    return existing


def get_extraction(uow: UnitOfWork, scope: Scope, event_id: str) -> ExtractionRecord:
    """The extraction record of an event of the exact scope."""
    key = scope_key(scope)
    row = uow.claims.get_extraction(key, event_id)
    if row is None:
        if uow.events.get(key, (event_id,)):
            raise ValidationError("event_id", "has no extraction record")
        loading.diagnose(uow, key, EntityType.RAW_EVENT, event_id)
    try:
        return records.extraction_from_row(row, scope)
    except RowInvalid:
        loading.corrupt("invalid extraction record")


def views_for(
    uow: UnitOfWork, scope: Scope, memory_ids: Sequence[str], as_of: datetime
) -> dict[str, ClaimView]:
    """The views, known and valid at ``as_of``, of those of these memories that are
    claims (the others are absent)."""
    claims = load(uow, scope, uow.claims.get(scope_key(scope), memory_ids))
    return {view.claim.claim_id: view for view in known_views(uow, scope, claims, as_of, as_of)}
