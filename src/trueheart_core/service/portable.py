"""Export of a store (or one scope) as portable JSON Lines, and its import into an
empty store (see ``docs/export-format.md``).

Service-layer functions over one unit of work; the caller opens it (a reading one for
an export, a writing one for an import, which the caller commits). An export streams the
port's row iterators and writes each line as it is made: memory use does not grow with
the store. Every row is verified as it is read, so a damaged store is never exported.
An import checks each line (its digest, the chain, the order of kinds, the row itself)
as it stores it, refuses a row that a tombstone of the file forbids, builds the search
index the normal way, and finally verifies the whole store it built; any failure raises
``ImportRefused`` and the caller's unit rolls back.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from trueheart_core.domain import policy
from trueheart_core.domain import portable as fmt
from trueheart_core.domain.claims import CLAIM_KIND
from trueheart_core.domain.model import EntityType, Scope
from trueheart_core.domain.portable import ExportReceipt, ImportReceipt
from trueheart_core.domain.validation import canonical_json
from trueheart_core.errors import ImportRefused, ValidationError
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
from trueheart_core.service import integrity, loading, records
from trueheart_core.service import search as searching
from trueheart_core.service.records import RowInvalid, scope_key

Write = Callable[[str], None]
Row = dict[str, Any]

_INVALID_ROW = "invalid row"


class _Problem(Exception):
    """A refusal of the line at hand; the caller adds the line number."""

    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem


# --- export -----------------------------------------------------------------------------


def _scope_json(key: ScopeKey) -> dict[str, str]:
    return {"tenant_id": key[0], "owner_id": key[1], "subject_id": key[2]}


def _value(text: object) -> Any:
    """The JSON value of a verified stored canonical JSON text."""
    assert isinstance(text, str)
    return json.loads(text)


def _event(row: EventRow) -> Row:
    return {
        "kind": "event",
        "scope": _scope_json(row.scope),
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


def _body(row: BodyRow) -> Row:
    return {
        "kind": "body",
        "scope": _scope_json(row.scope),
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


def _memory(row: MemoryRow, edges: list[EdgeRow]) -> Row:
    return {
        "kind": "memory",
        "scope": _scope_json(row.scope),
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


def _claim(row: ClaimRow) -> Row:
    return {
        "kind": "claim",
        "scope": _scope_json(row.scope),
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


def _extraction(row: ExtractionRow) -> Row:
    return {
        "kind": "extraction",
        "scope": _scope_json(row.scope),
        "event_id": row.event_id,
        "extractor": row.extractor,
        "claim_ids": _value(row.claim_ids),
        "spans": _value(row.spans),
        "diagnostics": _value(row.diagnostics),
        "row_digest": row.digest,
    }


def _tombstone(row: TombstoneRow) -> Row:
    return {
        "kind": "tombstone",
        "scope": _scope_json(row.scope),
        "entity_type": row.entity_type,
        "entity_id": row.entity_id,
        "fingerprint": row.fingerprint,
        "deleted_at": fmt.iso(row.deleted_at),
        "reason": row.reason,
        "row_digest": row.digest,
    }


def _audit(row: AuditRow) -> Row:
    return {
        "kind": "audit",
        "scope": _scope_json(row.scope),
        "audit_id": row.audit_id,
        "action": row.action,
        "entity_type": row.entity_type,
        "entity_id": row.entity_id,
        "occurred_at": fmt.iso(row.occurred_at),
        "reason": row.reason,
        "metadata": _value(row.metadata),
        "row_digest": row.digest,
    }


def _verified(diagnostic: str, check: Callable[..., object], *args: Any) -> None:
    try:
        check(*args)
    except (RowInvalid, ValueError, TypeError, OverflowError):
        loading.corrupt(diagnostic)


def _events(uow: UnitOfWork, key: ScopeKey | None) -> Iterator[Row]:
    for row in uow.events.iter(key):
        _verified("invalid raw event record", records.receipt_from_row, row)
        yield _event(row)


def _bodies(uow: UnitOfWork, key: ScopeKey | None) -> Iterator[Row]:
    for body in uow.events.iter_bodies(key):
        receipt = uow.events.get(body.scope, (body.event_id,)).get(body.event_id)
        if receipt is None:
            loading.corrupt("invalid raw body record")
        _verified("invalid raw body record", records.check_body, body, receipt.content_hash)
        yield _body(body)


def _memory_row(uow: UnitOfWork, row: MemoryRow) -> list[EdgeRow]:
    edges = uow.memories.edges(row.scope, (row.memory_id,))
    _verified("invalid memory record", records.memory_from_row, row, edges)
    return edges


def _memories(uow: UnitOfWork, key: ScopeKey | None) -> Iterator[Row]:
    for row in uow.memories.iter(key):
        yield _memory(row, _memory_row(uow, row))


def _claims(uow: UnitOfWork, key: ScopeKey | None) -> Iterator[Row]:
    for row in uow.claims.iter(key):
        memory = uow.memories.get(row.scope, row.claim_id)
        if memory is None:
            loading.corrupt("invalid claim record")
        edges = _memory_row(uow, memory)
        _verified("invalid claim record", _claim_of, row, memory, edges)
        yield _claim(row)


def _claim_of(row: ClaimRow, memory: MemoryRow, edges: list[EdgeRow]) -> None:
    records.claim_from_row(row, records.memory_from_row(memory, edges))


def _extractions(uow: UnitOfWork, key: ScopeKey | None) -> Iterator[Row]:
    for row in uow.claims.iter_extractions(key):
        _verified("invalid extraction record", records.extraction_from_row, row)
        yield _extraction(row)


def _tombstones(uow: UnitOfWork, key: ScopeKey | None) -> Iterator[Row]:
    for row in uow.tombstones.iter(key):
        _verified("invalid tombstone", records.check_tombstone, row)
        yield _tombstone(row)


def _audits(uow: UnitOfWork, key: ScopeKey | None) -> Iterator[Row]:
    for row in uow.audit.iter(key):
        _verified("invalid audit record", records.audit_from_row, row)
        yield _audit(row)


_EXPORTERS: tuple[Callable[[UnitOfWork, ScopeKey | None], Iterator[Row]], ...] = (
    _events,
    _bodies,
    _memories,
    _claims,
    _extractions,
    _tombstones,
    _audits,
)


def export(
    uow: UnitOfWork, scope: Scope | None, exported_at: datetime, write: Write
) -> ExportReceipt:
    """Write the header, every row of the scope (or the store) kind by kind, and the
    trailer, one line per ``write`` call, each line as soon as its row is read."""
    key = None if scope is None else scope_key(scope)
    header = fmt.canonical(
        {
            "format": fmt.FORMAT,
            "version": fmt.VERSION,
            "schema": fmt.SCHEMA,
            "scope": fmt.scope_object(scope),
            "exported_at": fmt.iso(records.to_us(exported_at)),
        }
    )
    write(header + "\n")
    chain = fmt.chain_start(header)
    counts: dict[str, int] = {}
    for kind, rows in zip(fmt.KINDS, _EXPORTERS, strict=True):
        for obj in rows(uow, key):
            digest = fmt.line_digest(obj)
            obj["digest"] = digest
            write(fmt.canonical(obj) + "\n")
            chain = fmt.chain_next(chain, digest)
            counts[kind] = counts.get(kind, 0) + 1
    total = sum(counts.values())
    write(fmt.canonical({"kind": fmt.END, "rows": total, "digest": chain}) + "\n")
    return ExportReceipt(scope, exported_at, total, fmt.kind_counts(counts), chain)


# --- import -----------------------------------------------------------------------------


def _fields(obj: Row, names: tuple[str, ...]) -> None:
    if set(obj) != {"kind", "scope", "row_digest", *names}:
        raise _Problem("unexpected or missing fields")


def _scope_key(value: object) -> ScopeKey:
    if not isinstance(value, dict) or set(value) != {"tenant_id", "owner_id", "subject_id"}:
        raise ValueError("scope")
    return scope_key(Scope(value["tenant_id"], value["owner_id"], value["subject_id"]))


def _optional_us(value: object) -> int | None:
    return None if value is None else fmt.microseconds(value)


def _json_text(value: object) -> str:
    return canonical_json(value)


def _import_event(uow: UnitOfWork, key: ScopeKey, o: Row) -> None:
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
        raise _Problem("duplicate row")
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


def _import_body(uow: UnitOfWork, key: ScopeKey, o: Row) -> None:
    _fields(o, ("event_id", "content"))
    body = BodyRow(key, o["event_id"], o["content"], o["row_digest"])
    if not isinstance(body.event_id, str):
        raise ValueError("event_id")
    receipt = uow.events.get(key, (body.event_id,)).get(body.event_id)
    if receipt is None or receipt.status != records.EVENT_ACTIVE:
        raise _Problem("body without an active event")
    if receipt.has_body:
        raise _Problem("duplicate row")
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
        raise _Problem("unexpected or missing fields")
    return EdgeRow(
        key,
        memory_id,  # type: ignore[arg-type]  # checked with the memory
        o["event_id"],
        o["trust"],
        o["clear_for"],
        o["recall_for"],
        o["row_digest"],
    )


def _import_memory(uow: UnitOfWork, key: ScopeKey, o: Row) -> None:
    _fields(o, _MEMORY_FIELDS)
    lineage = o["lineage"]
    if not isinstance(lineage, list):
        raise ValueError("lineage")
    edges = [_import_edge(key, o["memory_id"], e) for e in lineage]
    ids = [e.event_id for e in edges]
    if not all(isinstance(i, str) for i in ids) or ids != sorted(set(ids)):
        raise _Problem("lineage out of order")
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
        raise _Problem("duplicate row")
    sources = uow.events.get(key, ids)
    if len(sources) != len(ids):
        raise _Problem("memory without its source events")
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


def _import_claim(uow: UnitOfWork, key: ScopeKey, o: Row) -> None:
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
        raise _Problem("claim without its memory")
    edges = uow.memories.edges(key, (row.claim_id,))
    records.claim_from_row(row, records.memory_from_row(memory, edges))
    if uow.claims.get(key, (row.claim_id,)):
        raise _Problem("duplicate row")
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


def _import_extraction(uow: UnitOfWork, key: ScopeKey, o: Row) -> None:
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
        raise _Problem("extraction without its event")
    if uow.claims.get_extraction(key, row.event_id) is not None:
        raise _Problem("duplicate row")
    uow.claims.insert_extraction(row)


def _import_tombstone(uow: UnitOfWork, key: ScopeKey, o: Row) -> None:
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
    if not isinstance(row.entity_id, str):
        raise ValueError("entity_id")
    if entity_type is EntityType.RAW_EVENT:
        live = bool(uow.events.get(key, (row.entity_id,)))
    else:
        live = uow.memories.get(key, row.entity_id) is not None
    if live:
        raise _Problem("a tombstone forbids a row of the file")
    uow.tombstones.insert(row)


def _import_audit(uow: UnitOfWork, key: ScopeKey, o: Row) -> None:
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


_IMPORTERS: dict[str, Callable[[UnitOfWork, ScopeKey, Row], None]] = {
    "event": _import_event,
    "body": _import_body,
    "memory": _import_memory,
    "claim": _import_claim,
    "extraction": _import_extraction,
    "tombstone": _import_tombstone,
    "audit": _import_audit,
}


@dataclass(slots=True)
class _Lines:
    """The lines of a file, numbered from 1, each checked to be one canonical JSON
    object ending with a newline."""

    source: Iterator[object]
    number: int = 0

    def next(self) -> tuple[str, Row] | None:
        self.number += 1
        try:
            raw = next(self.source)
        except StopIteration:
            return None
        except (UnicodeError, ValueError):
            raise ImportRefused("not UTF-8 text", self.number) from None
        if isinstance(raw, bytes | bytearray):
            try:
                raw = bytes(raw).decode("utf-8")
            except UnicodeError:
                raise ImportRefused("not UTF-8 text", self.number) from None
        if not isinstance(raw, str):
            raise ValidationError("lines", "must yield str or bytes lines")
        if not raw.endswith("\n"):
            raise ImportRefused("incomplete line (the file is truncated)", self.number)
        text = raw[:-1]
        try:
            obj = json.loads(text)
            if not isinstance(obj, dict) or fmt.canonical(obj) != text:
                raise ValueError("not canonical")
        except (ValueError, TypeError, RecursionError):
            raise ImportRefused("not a line of canonical JSON", self.number) from None
        return text, obj


def _header(lines: _Lines) -> tuple[str, Scope | None]:
    found = lines.next()
    if found is None:
        raise ImportRefused("empty file", 1)
    text, obj = found
    if set(obj) != {"format", "version", "schema", "scope", "exported_at"} or (
        obj["format"] != fmt.FORMAT
    ):
        raise ImportRefused("not a TrueHeart export header", 1)
    if type(obj["version"]) is not int or obj["version"] != fmt.VERSION:
        raise ImportRefused("unsupported format version", 1)
    if type(obj["schema"]) is not int or obj["schema"] != fmt.SCHEMA:
        raise ImportRefused("unsupported schema version", 1)
    try:
        fmt.microseconds(obj["exported_at"])
        scope = None if obj["scope"] is None else records.scope_of(_scope_key(obj["scope"]))
    except (ValueError, ValidationError, RowInvalid):
        raise ImportRefused("invalid header", 1) from None
    return text, scope


def _require_empty(uow: UnitOfWork) -> None:
    counts = uow.operations.count_rows(None)
    if any(value != 0 for value in counts.values()):
        raise ImportRefused("the target store is not empty")


def _store_line(uow: UnitOfWork, obj: Row, scope: Scope | None) -> None:
    try:
        key = _scope_key(obj["scope"])
        if scope is not None and key != scope_key(scope):
            raise _Problem("row outside the exported scope")
        _IMPORTERS[obj["kind"]](uow, key, obj)
    except (RowInvalid, ValidationError, ValueError, TypeError, KeyError, OverflowError):
        raise _Problem(_INVALID_ROW) from None


def import_lines(uow: UnitOfWork, source: Iterable[object]) -> ImportReceipt:
    """Store every row of an export into the empty store of ``uow``, then build the
    search index and verify the store; raise ``ImportRefused`` at the first fault."""
    _require_empty(uow)
    lines = _Lines(iter(source))
    header, scope = _header(lines)
    chain = fmt.chain_start(header)
    counts: dict[str, int] = {}
    position = 0
    while True:
        found = lines.next()
        if found is None:
            raise ImportRefused("no trailer (the file is truncated)", lines.number)
        _, obj = found
        kind = obj.get("kind")
        if kind == fmt.END:
            _trailer(obj, chain, sum(counts.values()), lines.number)
            break
        if not isinstance(kind, str) or kind not in fmt.KINDS:
            raise ImportRefused("unknown kind", lines.number)
        if fmt.KINDS.index(kind) < position:
            raise ImportRefused("rows out of order", lines.number)
        position = fmt.KINDS.index(kind)
        digest = obj.get("digest")
        if not isinstance(digest, str) or digest != fmt.line_digest(obj):
            raise ImportRefused("line digest mismatch", lines.number)
        chain = fmt.chain_next(chain, digest)
        del obj["digest"]
        try:
            _store_line(uow, obj, scope)
        except _Problem as problem:
            raise ImportRefused(problem.problem, lines.number) from None
        counts[kind] = counts.get(kind, 0) + 1
    if lines.next() is not None:
        raise ImportRefused("lines after the trailer", lines.number)
    indexed = searching.rebuild(uow)
    report = integrity.verify(uow, None)
    if report.problems:
        raise ImportRefused(f"the imported store does not verify ({report.problems[0].code})")
    total = sum(counts.values())
    return ImportReceipt(scope, total, fmt.kind_counts(counts), chain, indexed)


def _trailer(obj: Row, chain: str, rows: int, number: int) -> None:
    if set(obj) != {"kind", "rows", "digest"}:
        raise ImportRefused("invalid trailer", number)
    if type(obj["rows"]) is not int or obj["rows"] != rows:
        raise ImportRefused("row count mismatch (the file is truncated or edited)", number)
    if obj["digest"] != chain:
        raise ImportRefused("file digest mismatch (rows reordered, removed or edited)", number)
