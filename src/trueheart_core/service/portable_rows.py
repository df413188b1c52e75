"""The lines of the portable export format, kind by kind: a stored row to its JSON
object, and a JSON object of an import back to its row, checked and stored.

Service-layer functions (see :mod:`trueheart_core.service.portable`, which orders and
chains the lines). A stored row is exported with its stored row digest (``row_digest``),
and an imported row is stored with it, once its digest, its validation (the same checks a
read applies) and its relations to the rows stored before it have passed. A failure
raises :class:`Problem`, or an error of the checks that the caller turns into a refusal
of the line.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from trueheart_core.domain import policy
from trueheart_core.domain import portable as fmt
from trueheart_core.domain.claims import CLAIM_KIND
from trueheart_core.domain.model import EntityType, Scope
from trueheart_core.domain.validation import canonical_json
from trueheart_core.ports import (
    AuditRow,
    BodyRow,
    ClaimRow,
    EdgeRow,
    EventRow,
    ExtractionRow,
    MemoryRow,
    ScopeKey,
    TombstoneRow,
    UnitOfWork,
)
from trueheart_core.service import integrity, records
from trueheart_core.service.records import RowInvalid, scope_key

Row = dict[str, Any]

INVALID_ROW = "invalid row"


class Problem(Exception):
    """A refusal of the line at hand; the caller adds the line number."""

    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem


# --- export -----------------------------------------------------------------------------


def scope_json(key: ScopeKey) -> dict[str, str]:
    return {"tenant_id": key[0], "owner_id": key[1], "subject_id": key[2]}


def _value(text: object) -> Any:
    """The JSON value of a verified stored canonical JSON text."""
    assert isinstance(text, str)
    return json.loads(text)


def event_line(row: EventRow) -> Row:
    return {
        "kind": "event",
        "scope": scope_json(row.scope),
        "event_id": row.event_id,
        "source_id": row.source_id,
        "source_type": row.source_type,
        "source_occurred_at": fmt.iso(row.source_occurred_at),
        "trust": row.trust,
        "source_metadata": _value(row.source_metadata),
        "content_hash": row.content_hash,
        "ingested_at": fmt.iso(row.ingested_at),
        "raw_expires_at": fmt.iso(row.raw_expires_at),
        "clear_for": row.clear_for,
        "recall_for": row.recall_for,
        "status": row.status,
        "metadata": _value(row.metadata),
        "row_digest": row.digest,
    }


def body_line(row: BodyRow) -> Row:
    return {
        "kind": "body",
        "scope": scope_json(row.scope),
        "event_id": row.event_id,
        "content": row.content,
        "row_digest": row.digest,
    }


def _edge(edge: EdgeRow) -> Row:
    return {
        "event_id": edge.event_id,
        "trust": edge.trust,
        "clear_for": edge.clear_for,
        "recall_for": edge.recall_for,
        "row_digest": edge.digest,
    }


def memory_line(row: MemoryRow, edges: list[EdgeRow]) -> Row:
    return {
        "kind": "memory",
        "scope": scope_json(row.scope),
        "memory_id": row.memory_id,
        "content": row.content,
        "lineage": [_edge(e) for e in sorted(edges, key=lambda e: e.event_id)],
        "dependency_fingerprint": row.dependency_fingerprint,
        "memory_kind": row.kind,
        "trust": row.trust,
        "created_at": fmt.iso(row.created_at),
        "clear_until": fmt.iso(row.clear_until),
        "recall_until": fmt.iso(row.recall_until),
        "status": row.status,
        "metadata": _value(row.metadata),
        "row_digest": row.digest,
    }


def _optional_iso(value: int | None) -> str | None:
    return None if value is None else fmt.iso(value)


def claim_line(row: ClaimRow) -> Row:
    return {
        "kind": "claim",
        "scope": scope_json(row.scope),
        "claim_id": row.claim_id,
        "subject": row.subject,
        "predicate": row.predicate,
        "value": row.value,
        "valid_from": _optional_iso(row.valid_from),
        "valid_to": _optional_iso(row.valid_to),
        "confidence": row.confidence,
        "authority": row.authority,
        "supersedes": row.supersedes,
        "row_digest": row.digest,
    }


def extraction_line(row: ExtractionRow) -> Row:
    return {
        "kind": "extraction",
        "scope": scope_json(row.scope),
        "event_id": row.event_id,
        "extractor": row.extractor,
        "claim_ids": _value(row.claim_ids),
        "spans": _value(row.spans),
        "diagnostics": _value(row.diagnostics),
        "row_digest": row.digest,
    }


def tombstone_line(row: TombstoneRow) -> Row:
    return {
        "kind": "tombstone",
        "scope": scope_json(row.scope),
        "entity_type": row.entity_type,
        "entity_id": row.entity_id,
        "fingerprint": row.fingerprint,
        "deleted_at": fmt.iso(row.deleted_at),
        "reason": row.reason,
        "row_digest": row.digest,
    }


def audit_line(row: AuditRow) -> Row:
    return {
        "kind": "audit",
        "scope": scope_json(row.scope),
        "audit_id": row.audit_id,
        "action": row.action,
        "entity_type": row.entity_type,
        "entity_id": row.entity_id,
        "occurred_at": fmt.iso(row.occurred_at),
        "reason": row.reason,
        "metadata": _value(row.metadata),
        "row_digest": row.digest,
    }


# --- import -----------------------------------------------------------------------------


def _fields(obj: Row, names: tuple[str, ...]) -> None:
    if set(obj) != {"kind", "scope", "row_digest", *names}:
        raise Problem("unexpected or missing fields")


def scope_key_of(value: object) -> ScopeKey:
    if not isinstance(value, dict) or set(value) != {"tenant_id", "owner_id", "subject_id"}:
        raise ValueError("scope")
    return scope_key(Scope(value["tenant_id"], value["owner_id"], value["subject_id"]))


def _optional_us(value: object) -> int | None:
    return None if value is None else fmt.microseconds(value)


def _json_text(value: object) -> str:
    return canonical_json(value)


def _store_event(uow: UnitOfWork, key: ScopeKey, o: Row) -> None:
    _fields(o, _EVENT_FIELDS)
    row = EventRow(
        key,
        o["event_id"],
        o["source_id"],
        o["source_type"],
        fmt.microseconds(o["source_occurred_at"]),
        o["trust"],
        _json_text(o["source_metadata"]),
        o["content_hash"],
        fmt.microseconds(o["ingested_at"]),
        fmt.microseconds(o["raw_expires_at"]),
        o["clear_for"],
        o["recall_for"],
        o["status"],
        _json_text(o["metadata"]),
        o["row_digest"],
        o["status"] == records.EVENT_ACTIVE,
    )
    records.receipt_from_row(row)
    if uow.events.get(key, (row.event_id,)):
        raise Problem("duplicate row")
    uow.events.insert(row, None)


_EVENT_FIELDS = (
    "event_id",
    "source_id",
    "source_type",
    "source_occurred_at",
    "trust",
    "source_metadata",
    "content_hash",
    "ingested_at",
    "raw_expires_at",
    "clear_for",
    "recall_for",
    "status",
    "metadata",
)


def _store_body(uow: UnitOfWork, key: ScopeKey, o: Row) -> None:
    _fields(o, ("event_id", "content"))
    body = BodyRow(key, o["event_id"], o["content"], o["row_digest"])
    if not isinstance(body.event_id, str):
        raise ValueError("event_id")
    receipt = uow.events.get(key, (body.event_id,)).get(body.event_id)
    if receipt is None or receipt.status != records.EVENT_ACTIVE:
        raise Problem("body without an active event")
    if receipt.has_body:
        raise Problem("duplicate row")
    records.check_body(body, receipt.content_hash)
    uow.events.insert_body(body)


def _import_edge(key: ScopeKey, memory_id: object, o: object) -> EdgeRow:
    if not isinstance(o, dict) or set(o) != {
        "event_id",
        "trust",
        "clear_for",
        "recall_for",
        "row_digest",
    }:
        raise Problem("unexpected or missing fields")
    return EdgeRow(
        key,
        memory_id,  # type: ignore[arg-type]  # checked with the memory
        o["event_id"],
        o["trust"],
        o["clear_for"],
        o["recall_for"],
        o["row_digest"],
    )


def _store_memory(uow: UnitOfWork, key: ScopeKey, o: Row) -> None:
    _fields(o, _MEMORY_FIELDS)
    lineage = o["lineage"]
    if not isinstance(lineage, list):
        raise ValueError("lineage")
    edges = [_import_edge(key, o["memory_id"], e) for e in lineage]
    ids = [e.event_id for e in edges]
    if not all(isinstance(i, str) for i in ids) or ids != sorted(set(ids)):
        raise Problem("lineage out of order")
    row = MemoryRow(
        key,
        o["memory_id"],
        o["content"],
        o["dependency_fingerprint"],
        o["memory_kind"],
        o["trust"],
        fmt.microseconds(o["created_at"]),
        fmt.microseconds(o["clear_until"]),
        fmt.microseconds(o["recall_until"]),
        o["status"],
        _json_text(o["metadata"]),
        o["row_digest"],
    )
    records.memory_from_row(row, edges)
    if uow.memories.get(key, row.memory_id) is not None:
        raise Problem("duplicate row")
    sources = uow.events.get(key, ids)
    if len(sources) != len(ids):
        raise Problem("memory without its source events")
    integrity.check_memory(row, edges, sources)
    uow.memories.insert(row, edges)


_MEMORY_FIELDS = (
    "memory_id",
    "content",
    "lineage",
    "dependency_fingerprint",
    "memory_kind",
    "trust",
    "created_at",
    "clear_until",
    "recall_until",
    "status",
    "metadata",
)


def _store_claim(uow: UnitOfWork, key: ScopeKey, o: Row) -> None:
    _fields(o, _CLAIM_FIELDS)
    row = ClaimRow(
        key,
        o["claim_id"],
        o["subject"],
        o["predicate"],
        o["value"],
        _optional_us(o["valid_from"]),
        _optional_us(o["valid_to"]),
        o["confidence"],
        o["authority"],
        o["supersedes"],
        o["row_digest"],
    )
    if not isinstance(row.claim_id, str):
        raise ValueError("claim_id")
    memory = uow.memories.get(key, row.claim_id)
    if memory is None or memory.kind != CLAIM_KIND:
        raise Problem("claim without its memory")
    edges = uow.memories.edges(key, (row.claim_id,))
    records.claim_from_row(row, records.memory_from_row(memory, edges))
    if uow.claims.get(key, (row.claim_id,)):
        raise Problem("duplicate row")
    uow.claims.insert(row)


_CLAIM_FIELDS = (
    "claim_id",
    "subject",
    "predicate",
    "value",
    "valid_from",
    "valid_to",
    "confidence",
    "authority",
    "supersedes",
)


def _store_extraction(uow: UnitOfWork, key: ScopeKey, o: Row) -> None:
    _fields(o, ("event_id", "extractor", "claim_ids", "spans", "diagnostics"))
    row = ExtractionRow(
        key,
        o["event_id"],
        o["extractor"],
        _json_text(o["claim_ids"]),
        _json_text(o["spans"]),
        _json_text(o["diagnostics"]),
        o["row_digest"],
    )
    records.extraction_from_row(row)
    if not uow.events.get(key, (row.event_id,)):
        raise Problem("extraction without its event")
    if uow.claims.get_extraction(key, row.event_id) is not None:
        raise Problem("duplicate row")
    uow.claims.insert_extraction(row)


def _store_tombstone(uow: UnitOfWork, key: ScopeKey, o: Row) -> None:
    _fields(o, ("entity_type", "entity_id", "fingerprint", "deleted_at", "reason"))
    row = TombstoneRow(
        key,
        o["entity_type"],
        o["entity_id"],
        o["fingerprint"],
        fmt.microseconds(o["deleted_at"]),
        o["reason"],
        o["row_digest"],
    )
    entity_type = records.check_tombstone(row)
    # A store tombstones a row once, as it removes it: never twice the same entity.
    if any(t.entity_type == row.entity_type for t in uow.tombstones.get(key, row.entity_id)):
        raise Problem("duplicate row")
    if entity_type is EntityType.RAW_EVENT:
        live = bool(uow.events.get(key, (row.entity_id,)))
    else:
        live = uow.memories.get(key, row.entity_id) is not None
    if live:
        raise Problem("a tombstone forbids a row of the file")
    uow.tombstones.insert(row)


def _store_audit(uow: UnitOfWork, key: ScopeKey, o: Row) -> None:
    _fields(
        o, ("audit_id", "action", "entity_type", "entity_id", "occurred_at", "reason", "metadata")
    )
    row = AuditRow(
        o["audit_id"],
        key,
        o["action"],
        o["entity_type"],
        o["entity_id"],
        fmt.microseconds(o["occurred_at"]),
        o["reason"],
        _json_text(o["metadata"]),
        o["row_digest"],
    )
    records.audit_from_row(row)
    if not policy.audit_row_allowed(row.action, row.entity_type, row.reason):
        raise RowInvalid("audit_policy_violation")
    uow.audit.insert(row)


STORES: dict[str, Callable[[UnitOfWork, ScopeKey, Row], None]] = {
    "event": _store_event,
    "body": _store_body,
    "memory": _store_memory,
    "claim": _store_claim,
    "extraction": _store_extraction,
    "tombstone": _store_tombstone,
    "audit": _store_audit,
}
